use super::*;
use serde_json::json;

fn pod(name: &str, scheduler: &str, node: Option<&str>, phase: &str) -> Pod {
    let mut v = json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": phase}
    });
    if let Some(n) = node {
        v["spec"]["nodeName"] = json!(n);
    }
    serde_json::from_value(v).expect("pod")
}

fn node(name: &str, labels: serde_json::Value) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    }))
    .expect("node")
}

#[test]
fn unassigned_pods_of_other_schedulers_are_invisible_assigned_ones_count() {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_pod(pod("a", "default-scheduler", None, "Pending"));
    s.upsert_pod(pod("b", "default-scheduler", Some("n1"), "Running"));
    s.upsert_pod(pod("c", "volcano-rs", None, "Pending"));
    assert_eq!(s.pod_count(), 2);
    assert!(s.pod("ns/a").is_none());
    // The pod gets bound by the other scheduler: now it counts.
    s.upsert_pod(pod("a", "default-scheduler", Some("n1"), "Running"));
    assert_eq!(s.pod_count(), 3);
    s.delete_pod("ns", "a");
    assert_eq!(s.pod_count(), 2);
}

#[test]
fn snapshot_is_isolated_from_later_updates() {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_node(node("n1", json!({})));
    s.upsert_pod(pod("c", "volcano-rs", None, "Pending"));
    let snap = s.snapshot();
    s.upsert_pod(pod("d", "volcano-rs", None, "Pending"));
    s.delete_node("n1");
    assert_eq!(snap.pod_count(), 1);
    assert_eq!(snap.nodes_in_order().len(), 1);
    assert_eq!(s.pod_count(), 2);
    assert!(s.nodes_in_order().is_empty());
}

#[test]
fn node_order_is_first_seen_order_and_survives_updates() {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_node(node("zeta", json!({})));
    s.upsert_node(node("alpha", json!({})));
    s.upsert_node(node("zeta", json!({"x": "y"})));
    let names: Vec<&str> = s.nodes_in_order().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, vec!["zeta", "alpha"]);
}

#[test]
fn node_selector_filters_nodes() {
    let mut s = ClusterState::new(StateOptions {
        node_selector: vec![("pool".into(), "batch".into())],
        ..StateOptions::default()
    });
    s.upsert_node(node("n1", json!({"pool": "batch"})));
    s.upsert_node(node("n2", json!({"pool": "web"})));
    assert_eq!(s.nodes_in_order().len(), 1);
    // A node that stops matching leaves the state.
    s.upsert_node(node("n1", json!({"pool": "web"})));
    assert!(s.nodes_in_order().is_empty());
}

#[test]
fn job_priority_falls_back_to_global_default() {
    let mut s = ClusterState::new(StateOptions::default());
    let pc = |name: &str, value: i32, global: bool| -> PriorityClass {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "value": value, "globalDefault": global}),
        )
        .expect("pc")
    };
    assert_eq!(s.job_priority("high"), 0);
    s.upsert_priority_class(pc("high", 1000, false));
    s.upsert_priority_class(pc("normal", 10, true));
    assert_eq!(s.job_priority("high"), 1000);
    assert_eq!(s.job_priority("missing"), 10);
    assert_eq!(s.job_priority(""), 10);
}

#[test]
fn assumed_bind_survives_stale_updates_and_rolls_back() {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_node(node("n1", json!({})));
    assert!(s.upsert_pod(pod("c", "volcano-rs", None, "Pending")));
    assert!(s.assume_bind("ns/c", "n1"));
    assert_eq!(
        s.pod("ns/c").and_then(|p| p.node_name.as_deref()),
        Some("n1")
    );
    // A stale update (still unbound) does not undo the assumption.
    assert!(!s.upsert_pod(pod("c", "volcano-rs", None, "Pending")));
    assert_eq!(
        s.pod("ns/c").and_then(|p| p.node_name.as_deref()),
        Some("n1")
    );
    assert_eq!(s.assumed_count(), 1);
    // The bind fails: back to pending.
    s.rollback_bind("ns/c");
    assert_eq!(s.pod("ns/c").and_then(|p| p.node_name.as_deref()), None);
    assert_eq!(s.assumed_count(), 0);
    // Assume again, then the API server shows the binding: confirmed.
    assert!(s.assume_bind("ns/c", "n1"));
    s.upsert_pod(pod("c", "volcano-rs", Some("n1"), "Running"));
    assert_eq!(s.assumed_count(), 0);
    assert_eq!(
        s.pod("ns/c").map(|p| p.status),
        Some(crate::model::TaskStatus::Running)
    );
    // The dump shows the observed objects.
    assert_eq!(s.observed_objects().pods.len(), 1);
}

/// A bind prepared outside the state's guard is recorded as if assumed at once; when the pod
/// changed in between, it is assumed from the pod as it is now; when it is gone, not at all.
#[test]
fn a_prepared_bind_is_assumed_from_the_pod_as_it_is_when_recorded() {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_node(node("n1", json!({})));
    s.upsert_pod(pod("a", "volcano-rs", None, "Pending"));
    s.upsert_pod(pod("b", "volcano-rs", None, "Pending"));
    s.upsert_pod(pod("c", "volcano-rs", None, "Pending"));
    let annotations: BTreeMap<String, String> = [("k".to_string(), "v".to_string())].into();
    let prepare =
        |s: &ClusterState, key: &str| s.bind_source(key).expect("pod").prepare("n1", &annotations);
    let (a, b, c) = (
        prepare(&s, "ns/a"),
        prepare(&s, "ns/b"),
        prepare(&s, "ns/c"),
    );
    // Meanwhile b gains a label and c is deleted.
    let mut changed = pod("b", "volcano-rs", None, "Pending");
    changed.metadata.labels = Some([("new".to_string(), "label".to_string())].into());
    s.upsert_pod(changed);
    s.delete_pod("ns", "c");

    assert!(s.install_assumed_bind("ns/a", a, "n1", &annotations));
    assert!(s.install_assumed_bind("ns/b", b, "n1", &annotations));
    assert!(!s.install_assumed_bind("ns/c", c, "n1", &annotations));
    assert_eq!(s.assumed_count(), 2);
    for key in ["ns/a", "ns/b"] {
        let p = s.pod(key).expect("pod");
        assert_eq!(p.status, crate::model::TaskStatus::Binding, "{key}");
        assert_eq!(p.node_name.as_deref(), Some("n1"), "{key}");
        let meta = &p.pod.metadata;
        assert_eq!(
            meta.annotations
                .as_ref()
                .and_then(|a| a.get("k"))
                .map(String::as_str),
            Some("v")
        );
    }
    let b = s.pod("ns/b").expect("b");
    assert_eq!(
        b.pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("new"))
            .map(String::as_str),
        Some("label"),
        "assumed from the pod as it is now"
    );
    // A failed bind rolls back to the pod as observed, with its label.
    s.rollback_bind("ns/b");
    let b = s.pod("ns/b").expect("b");
    assert_eq!(b.node_name, None);
    assert!(
        b.pod
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("new"))
    );
}

#[test]
fn assumed_eviction_keeps_the_pod_releasing_until_the_deletion_is_seen() {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_pod(pod("v", "volcano-rs", Some("n1"), "Running"));
    let now = k8s_openapi::jiff::Timestamp::UNIX_EPOCH;
    assert!(s.assume_eviction("ns/v", now));
    assert_eq!(
        s.pod("ns/v").map(|p| p.status),
        Some(crate::model::TaskStatus::Releasing)
    );
    // The status update with the eviction conditions arrives before the delete: still Releasing.
    s.upsert_pod(pod("v", "volcano-rs", Some("n1"), "Running"));
    assert_eq!(
        s.pod("ns/v").map(|p| p.status),
        Some(crate::model::TaskStatus::Releasing)
    );
    // The delete failed: back to running.
    s.rollback_eviction("ns/v");
    assert_eq!(
        s.pod("ns/v").map(|p| p.status),
        Some(crate::model::TaskStatus::Running)
    );
    // Evicted again, and this time the API server shows the deletion.
    assert!(s.assume_eviction("ns/v", now));
    let mut deleting = pod("v", "volcano-rs", Some("n1"), "Running");
    deleting.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
    s.upsert_pod(deleting);
    s.rollback_eviction("ns/v"); // nothing left to roll back
    assert_eq!(
        s.pod("ns/v").map(|p| p.status),
        Some(crate::model::TaskStatus::Releasing)
    );
    s.delete_pod("ns", "v");
    assert_eq!(s.pod_count(), 0);
}

/// Only changes that can change a decision start a session early: never a status a session
/// wrote itself.
#[test]
fn early_sessions_start_only_for_work_that_can_change_a_decision() {
    let mut s = ClusterState::new(StateOptions::default());
    // Pods: newly pending yes; the same pod again (say, with the condition a session wrote) no.
    assert!(s.upsert_pod(pod("a", "volcano-rs", None, "Pending")));
    assert!(!s.upsert_pod(pod("a", "volcano-rs", None, "Pending")));
    // Bound and running: nothing new; finished: its node has room again.
    assert!(!s.upsert_pod(pod("a", "volcano-rs", Some("n1"), "Running")));
    assert!(s.upsert_pod(pod("a", "volcano-rs", Some("n1"), "Succeeded")));
    // Another scheduler's pod deleted from a node frees it; a pending pod's deletion does not.
    assert!(!s.upsert_pod(pod("other", "default-scheduler", Some("n1"), "Running")));
    assert!(s.delete_pod("ns", "other"));
    assert!(s.upsert_pod(pod("b", "volcano-rs", None, "Pending")));
    assert!(!s.delete_pod("ns", "b"));
    assert!(!s.delete_pod("ns", "never-seen"));

    // PodGroups: new or re-specified yes; a status update no.
    let pg = |min: i32, phase: &str| -> PodGroup {
        serde_json::from_value(json!({
            "metadata": {"name": "pg", "namespace": "ns"},
            "spec": {"minMember": min},
            "status": {"phase": phase}
        }))
        .expect("pod group")
    };
    assert!(s.upsert_pod_group(pg(2, "Pending")));
    assert!(!s.upsert_pod_group(pg(2, "Inqueue")));
    assert!(s.upsert_pod_group(pg(3, "Inqueue")));

    // Nodes: new yes; the same no; schedulable again or other taints yes.
    assert!(s.upsert_node(node("n1", json!({}))));
    assert!(!s.upsert_node(node("n1", json!({}))));
    let mut cordoned = node("n1", json!({}));
    cordoned
        .spec
        .get_or_insert_with(Default::default)
        .unschedulable = Some(true);
    assert!(!s.upsert_node(cordoned));
    assert!(s.upsert_node(node("n1", json!({}))));
    let mut tainted = node("n1", json!({}));
    tainted.spec.get_or_insert_with(Default::default).taints = Some(vec![
        serde_json::from_value(json!({"key": "k", "effect": "NoSchedule"})).expect("taint"),
    ]);
    assert!(s.upsert_node(tainted));

    // Claims: new or bound to a volume yes; an annotation (the selected node written) no.
    let claim = |annotations: serde_json::Value,
                 volume: Option<&str>|
     -> k8s_openapi::api::core::v1::PersistentVolumeClaim {
        serde_json::from_value(json!({
            "metadata": {"name": "data", "namespace": "ns", "annotations": annotations},
            "spec": {"volumeName": volume}
        }))
        .expect("claim")
    };
    assert!(s.upsert_claim(claim(json!({}), None)));
    assert!(!s.upsert_claim(claim(
        json!({"volume.kubernetes.io/selected-node": "n1"}),
        None
    )));
    assert!(s.upsert_claim(claim(
        json!({"pv.kubernetes.io/bind-completed": "yes"}),
        Some("pv-1")
    )));
}

/// Work waits for a decision while a pod of ours is pending or a PodGroup is not yet Running
/// or Completed; other schedulers' pods and pods of ours on nodes are no such work.
#[test]
fn waiting_work_is_a_pending_pod_of_ours_or_a_pod_group_not_yet_running() {
    let mut s = ClusterState::new(StateOptions::default());
    assert!(!s.has_waiting_work());
    s.upsert_pod(pod("other", "default-scheduler", None, "Pending"));
    s.upsert_pod(pod("placed", "default-scheduler", Some("n1"), "Running"));
    s.upsert_pod(pod("ours", "volcano-rs", Some("n1"), "Running"));
    assert!(!s.has_waiting_work());
    s.upsert_pod(pod("new", "volcano-rs", None, "Pending"));
    assert!(s.has_waiting_work());
    assert!(s.assume_bind("ns/new", "n1"));
    assert!(!s.has_waiting_work(), "an assumed bind waits for nothing");
    s.rollback_bind("ns/new");
    assert!(s.has_waiting_work(), "a failed bind waits again");
    assert!(!s.delete_pod("ns", "new"));
    assert!(!s.has_waiting_work());
    s.upsert_pod(pod("new", "volcano-rs", None, "Pending"));
    s.upsert_pod(pod("new", "volcano-rs", None, "Failed"));
    assert!(
        !s.has_waiting_work(),
        "a pod that failed before it ran waits for nothing"
    );

    let pg = |phase: Option<&str>| -> PodGroup {
        let mut v =
            json!({"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minMember": 1}});
        if let Some(p) = phase {
            v["status"] = json!({"phase": p});
        }
        serde_json::from_value(v).expect("pod group")
    };
    for (phase, waits) in [
        (None, true),
        (Some("Pending"), true),
        (Some("Inqueue"), true),
        (Some("Unknown"), true),
        (Some("Running"), false),
        (Some("Completed"), false),
    ] {
        s.upsert_pod_group(pg(phase));
        assert_eq!(s.has_waiting_work(), waits, "{phase:?}");
    }
    s.delete_pod_group("ns", "pg");
    assert!(!s.has_waiting_work());
}

/// The node table a snapshot shares follows every change of the nodes and their load, and
/// is not rebuilt while nothing changed.
fn sized_node(name: &str, cpu: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}
    }))
    .expect("node")
}

#[test]
fn the_node_table_follows_node_changes() {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_node(sized_node("b", "4"));
    s.upsert_node(sized_node("a", "8"));
    let first = s.snapshot();
    let table = first.node_table();
    let names: Vec<&str> = table.specs.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["b", "a"], "first-seen order");
    assert_eq!(table.by_name.get("a").map(|id| id.index()), Some(1));
    assert_eq!(table.total_allocatable.get("cpu"), 12_000.0);
    assert!(
        Arc::ptr_eq(table, s.snapshot().node_table()),
        "shared while unchanged"
    );

    s.upsert_node(sized_node("a", "16"));
    let table = s.snapshot().node_table().clone();
    assert_eq!(table.total_allocatable.get("cpu"), 20_000.0);
    let sample = NodeUsage {
        cpu_percent: 50.0,
        memory_percent: 20.0,
        metrics_time: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    };
    s.set_node_usage([("b".to_string(), sample)]);
    let table = s.snapshot().node_table().clone();
    assert_eq!(table.usage[0], Some(sample));
    s.delete_node("b");
    let table = s.snapshot().node_table().clone();
    assert_eq!(table.specs.len(), 1);
    assert_eq!(table.by_name.get("a").map(|id| id.index()), Some(0));
    assert_eq!(table.usage, [None]);
}

#[test]
fn the_hyper_node_tree_follows_hyper_node_and_node_changes() {
    let mut s = ClusterState::new(StateOptions::default());
    assert!(s.snapshot().hyper_node_tree().tiers().is_empty());
    s.upsert_node(sized_node("gpu-0", "8"));
    let leaf: apis::topology::HyperNode = serde_json::from_value(json!({
        "metadata": {"name": "leaf"},
        "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^gpu-"}}}]}
    }))
    .expect("hypernode");
    assert!(s.upsert_hyper_node(leaf.clone()), "a new HyperNode");
    assert!(!s.upsert_hyper_node(leaf.clone()), "the same spec again");
    let first = s.snapshot();
    let nodes = |snap: &ClusterState| {
        snap.hyper_node_tree()
            .get("leaf")
            .map(|h| h.nodes.iter().cloned().collect::<Vec<_>>())
    };
    assert_eq!(nodes(&first), Some(vec!["gpu-0".to_string()]));
    assert!(
        Arc::ptr_eq(first.hyper_node_tree(), s.snapshot().hyper_node_tree()),
        "shared while unchanged"
    );
    // A node that matches the pattern joins; the earlier snapshot keeps its tree.
    s.upsert_node(sized_node("gpu-1", "8"));
    assert_eq!(
        nodes(&s.snapshot()),
        Some(vec!["gpu-0".to_string(), "gpu-1".to_string()])
    );
    assert_eq!(nodes(&first), Some(vec!["gpu-0".to_string()]));
    // A node update that keeps its labels (a status, a new size) keeps the tree; a node that
    // goes leaves it.
    let before = s.snapshot().hyper_node_tree().clone();
    s.upsert_node(sized_node("gpu-1", "16"));
    assert!(Arc::ptr_eq(&before, s.snapshot().hyper_node_tree()));
    s.delete_node("gpu-0");
    assert_eq!(nodes(&s.snapshot()), Some(vec!["gpu-1".to_string()]));
    assert!(s.delete_hyper_node("leaf"));
    assert!(s.snapshot().hyper_node_tree().get("leaf").is_none());
}

fn numa_report(node: &str, reported_pods: &[&str]) -> apis::Numatopology {
    let allocations: Vec<serde_json::Value> = reported_pods
        .iter()
        .map(|p| json!({"namespace": "ns", "name": p}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": node},
        "spec": {"numares": {"cpu": {"allocatable": "0-7"}}, "podAllocations": allocations}
    }))
    .expect("numatopology")
}

fn given(cpus: &str) -> NumaGiven {
    NumaGiven {
        uid: String::new(),
        resources: [("cpu".to_string(), cpus.to_string())].into(),
    }
}

#[test]
fn cpus_given_to_bound_pods_are_held_until_the_node_reports_every_one() {
    let mut s = ClusterState::new(StateOptions::default());
    s.upsert_pod(pod("p1", "volcano-rs", Some("n1"), "Running"));
    s.upsert_pod(pod("p2", "volcano-rs", Some("n1"), "Running"));
    s.upsert_numatopology(numa_report("n1", &[]));
    s.assume_numa("n1", "ns/p1", given("0-1"));
    s.assume_numa("n1", "ns/p2", given("2-3"));
    assert_eq!(s.numa_pre_occupied("n1").len(), 2);
    // One reported: both still held (the kubelet may have chosen differently).
    s.upsert_numatopology(numa_report("n1", &["p1"]));
    assert_eq!(s.numa_pre_occupied("n1").len(), 2);
    // Both reported: the report alone counts.
    s.upsert_numatopology(numa_report("n1", &["p1", "p2"]));
    assert!(s.numa_pre_occupied("n1").is_empty());
    // A pod deleted before it was reported holds nothing (and is dropped at the next record).
    s.assume_numa("n1", "ns/gone", given("4-5"));
    assert!(s.numa_pre_occupied("n1").is_empty());
    s.upsert_pod(pod("p3", "volcano-rs", Some("n1"), "Running"));
    s.assume_numa("n1", "ns/p3", given("6-7"));
    assert_eq!(
        s.numa_pre_occupied("n1").len(),
        1,
        "only the live pod holds CPUs"
    );
}

proptest::proptest! {
    /// The count of waiting pods follows any sequence of pod changes: the scan that
    /// `has_waiting_work` checks it against in debug builds agrees after every step.
    #[test]
    fn the_waiting_pod_count_follows_every_pod_change(
        steps in proptest::collection::vec((0..7usize, 0..4usize), 1..60),
    ) {
        let mut s = ClusterState::new(StateOptions::default());
        for (op, i) in steps {
            let name = format!("p{i}");
            let key = format!("ns/{name}");
            match op {
                0 => { s.upsert_pod(pod(&name, "volcano-rs", None, "Pending")); }
                1 => { s.upsert_pod(pod(&name, "volcano-rs", Some("n1"), "Running")); }
                2 => { s.upsert_pod(pod(&name, "default-scheduler", None, "Pending")); }
                3 => { s.upsert_pod(pod(&name, "volcano-rs", None, "Failed")); }
                4 => { s.delete_pod("ns", &name); }
                5 => { s.assume_bind(&key, "n1"); }
                _ => s.rollback_bind(&key),
            }
            let scanned = s.pods().any(|p| p.ours && p.status == crate::model::TaskStatus::Pending);
            proptest::prop_assert_eq!(s.has_waiting_work(), scanned);
        }
    }
}

/// A pod of ours with inter-pod anti-affinity, host ports, both or neither.
fn pod_with_terms(name: &str, node: Option<&str>, affinity: bool, host_port: bool) -> Pod {
    let mut p = pod(
        name,
        "volcano-rs",
        node,
        if node.is_some() { "Running" } else { "Pending" },
    );
    let mut v = serde_json::to_value(&p).expect("pod as json");
    if affinity {
        v["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
        ]}});
    }
    if host_port {
        v["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 8080}]);
    }
    p = serde_json::from_value(v).expect("pod");
    p
}

proptest::proptest! {
    /// The keys of the pods with inter-pod terms and with host ports follow any sequence of
    /// pod changes: they are the pods a scan over every pod finds.
    #[test]
    fn the_pods_with_terms_or_host_ports_follow_every_pod_change(
        steps in proptest::collection::vec((0..6usize, 0..4usize, 0..4u8), 1..60),
    ) {
        let mut s = ClusterState::new(StateOptions::default());
        for (op, i, kind) in steps {
            let name = format!("p{i}");
            let key = format!("ns/{name}");
            let (affinity, ports) = (kind & 1 != 0, kind & 2 != 0);
            match op {
                0 => { s.upsert_pod(pod_with_terms(&name, None, affinity, ports)); }
                1 => { s.upsert_pod(pod_with_terms(&name, Some("n1"), affinity, ports)); }
                2 => { s.upsert_pod(pod(&name, "default-scheduler", None, "Pending")); }
                3 => { s.delete_pod("ns", &name); }
                4 => { s.assume_bind(&key, "n1"); }
                _ => s.rollback_bind(&key),
            }
            let scan = |flag: fn(&TaskSpec) -> bool| -> Vec<String> {
                s.pods().filter(|p| flag(p)).map(|p| p.key.clone()).collect()
            };
            let noted = |keys: Vec<&str>| -> Vec<String> { keys.into_iter().map(str::to_string).collect() };
            proptest::prop_assert_eq!(
                noted(s.pods_with_inter_pod_affinity().collect()),
                scan(|p| p.inter_pod_affinity)
            );
            proptest::prop_assert_eq!(
                noted(s.pods_with_host_ports().collect()),
                scan(|p| p.uses_host_ports)
            );
        }
    }
}
