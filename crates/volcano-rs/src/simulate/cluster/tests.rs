use super::*;
use engine::framework::decisions::{
    Bind, Eviction, PodConditionUpdate, PodGroupStatusUpdate, QueueAllocation,
};
use engine::model::job::JobStatus;
use engine::model::{Resource, TaskStatus};
use serde_json::json;

fn now() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().expect("valid timestamp")
}

fn input(text: &str) -> SimInput {
    let mut input = SimInput::default();
    input.add_str("test.yaml", text).expect("valid input");
    input
}

fn options() -> StateOptions {
    StateOptions {
        scheduler_names: vec!["volcano-rs".into(), "volcano".into()],
        ..StateOptions::default()
    }
}

const CLUSTER: &str = r#"
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
kind: Pod
metadata: {name: a, namespace: ns, uid: ua}
spec: {schedulerName: volcano-rs, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
---
kind: Pod
metadata: {name: b, namespace: ns, uid: ub}
spec: {schedulerName: volcano, nodeName: n1, containers: [{name: c}]}
status: {phase: Running}
---
kind: Pod
metadata: {name: other, namespace: ns}
spec: {containers: [{name: c}]}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec: {minMember: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
"#;

#[test]
fn unusable_queue_values_are_warned_about() {
    let text = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: q1
  annotations: {volcano.sh/hierarchy: root/a/b, volcano.sh/hierarchy-weights: 1/x}
spec: {weight: -2, capability: {cpu: "-4"}, guarantee: {resource: {memory: "-1Gi"}}}
"#;
    let (cluster, warnings) = SimCluster::new(&input(text), options(), now());
    let expected = [
        "Queue q1 spec.weight: -2 is below 1",
        "Queue q1 spec.capability.cpu: \"-4\" is negative",
        "Queue q1 spec.guarantee.resource.memory: \"-1Gi\" is negative",
        "Queue q1 metadata.annotations[volcano.sh/hierarchy-weights]: \"1/x\" weight \"x\" at path level 1 is not a number",
        "Queue q1 metadata.annotations[volcano.sh/hierarchy-weights]: \"1/x\" has no weight for path level 2",
    ];
    assert_eq!(warnings.len(), expected.len(), "{warnings:#?}");
    for (warning, start) in warnings.iter().zip(expected) {
        assert!(warning.starts_with(start), "{warning}");
    }
    let state = cluster.state();
    let q = state.queue("q1").expect("q1");
    assert_eq!(q.weight, 1);
    assert_eq!(q.capability, None);
    assert_eq!(q.guarantee, None);
}

#[test]
fn creation_defaults_and_the_default_queue() {
    let (cluster, warnings) = SimCluster::new(&input(CLUSTER), options(), now());
    assert!(warnings.is_empty(), "{warnings:?}");
    // Pods start Pending; a pod that already has a phase keeps it.
    assert_eq!(
        cluster.pods()["ns/a"]
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref()),
        Some("Pending")
    );
    assert_eq!(
        cluster.pods()["ns/b"]
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref()),
        Some("Running")
    );
    // The default queue is created (weight 1, reclaimable); q1 gets the CRD's weight 1.
    let default = &cluster.queues()["default"];
    assert_eq!(default.spec.weight, 1);
    assert_eq!(default.spec.reclaimable, Some(true));
    assert_eq!(cluster.queues()["q1"].spec.weight, 1);
    assert!(cluster.state().queue("default").is_some());
    // Ours: both scheduler names; a pod without one belongs to default-scheduler.
    assert!(cluster.is_ours(&cluster.pods()["ns/a"]));
    assert!(cluster.is_ours(&cluster.pods()["ns/b"]));
    assert!(!cluster.is_ours(&cluster.pods()["ns/other"]));
    assert!(cluster.state().pod("ns/other").is_none());
}

#[test]
fn an_existing_default_queue_is_kept() {
    let text = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 5, reclaimable: false}\n";
    let (cluster, _) = SimCluster::new(&input(text), options(), now());
    assert_eq!(cluster.queues().len(), 1);
    assert_eq!(cluster.queues()["default"].spec.weight, 5);
    assert_eq!(cluster.queues()["default"].spec.reclaimable, Some(false));
}

fn pod(v: serde_json::Value) -> Pod {
    serde_json::from_value(v).expect("valid pod")
}

fn class(name: &str, value: i32, global: bool, policy: Option<&str>) -> PriorityClass {
    serde_json::from_value(json!({
            "metadata": {"name": name}, "value": value, "globalDefault": global, "preemptionPolicy": policy
        }))
        .expect("valid class")
}

#[test]
fn priority_admission() {
    let classes = [
        class("high", 1000, false, Some("Never")),
        class("normal", 10, true, None),
    ];
    // Named class: value and preemption policy.
    let mut p = pod(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [], "priorityClassName": "high"}}),
    );
    assert_eq!(admit_pod(&mut p, &classes), None);
    let spec = p.spec.as_ref().expect("spec");
    assert_eq!(spec.priority, Some(1000));
    assert_eq!(spec.preemption_policy.as_deref(), Some("Never"));
    // No class: the global default, whose name is recorded.
    let mut p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
    assert_eq!(admit_pod(&mut p, &classes), None);
    let spec = p.spec.as_ref().expect("spec");
    assert_eq!(
        (spec.priority, spec.priority_class_name.as_deref()),
        (Some(10), Some("normal"))
    );
    // An explicit priority (a dump) wins.
    let mut p = pod(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [], "priorityClassName": "high", "priority": 5}}),
    );
    admit_pod(&mut p, &classes);
    assert_eq!(p.spec.as_ref().and_then(|s| s.priority), Some(5));
    // Unknown class: warning, priority unset.
    let mut p = pod(
        json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [], "priorityClassName": "nope"}}),
    );
    let warning = admit_pod(&mut p, &classes).expect("warning");
    assert!(
        warning.contains("ns/p") && warning.contains("\"nope\""),
        "{warning}"
    );
    assert_eq!(p.spec.as_ref().and_then(|s| s.priority), None);
    // No class and no global default: unset.
    let mut p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
    assert_eq!(admit_pod(&mut p, &classes[..1]), None);
    assert_eq!(p.spec.as_ref().and_then(|s| s.priority), None);
}

fn condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == POD_SCHEDULED)
}

#[test]
fn reaction_to_decisions() {
    let (mut cluster, _) = SimCluster::new(&input(CLUSTER), options(), now());
    let mut d = Decisions::default();
    d.pod_conditions.push(PodConditionUpdate {
        pod: "ns/a".into(),
        reason: "Unschedulable".into(),
        message: "0/1 nodes are unavailable: 1 Insufficient cpu.".into(),
        nominated_node: Some("n1".into()),
    });
    d.evictions.push(Eviction {
        pod: "ns/b".into(),
        pod_uid: "ub".into(),
        node: "n1".into(),
        action: "preempt".into(),
        reason: "preempt".into(),
        preemptor: Some("ns/a".into()),
    });
    d.pod_group_statuses.push(PodGroupStatusUpdate {
        pod_group: "ns/pg".into(),
        status: JobStatus {
            phase: "Inqueue".into(),
            ..JobStatus::default()
        },
        awaiting_binds: false,
    });
    d.queue_allocations.push(QueueAllocation {
        queue: "q1".into(),
        allocated: Resource::from_pairs(1500.0, 1024.0 * 1024.0 * 1024.0, &[("pods", 2.0)]),
    });
    assert!(changes_anything(&d));
    cluster.apply(&d);

    let a = &cluster.pods()["ns/a"];
    let c = condition(a).expect("condition written");
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("False", Some("Unschedulable"))
    );
    assert_eq!(
        a.status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref()),
        Some("n1")
    );
    // The engine sees the condition, so it will not write it again.
    let state = cluster.state();
    let task = state.pod("ns/a").expect("task");
    assert_eq!(
        task.pod_scheduled_condition().map(|c| c.1),
        Some("Unschedulable")
    );
    drop(state);

    assert!(!cluster.pods().contains_key("ns/b"));
    assert!(cluster.state().pod("ns/b").is_none());

    let pg = cluster.pod_groups()["ns/pg"]
        .status
        .as_ref()
        .expect("status");
    assert_eq!(pg.phase, "Inqueue");
    assert_eq!(
        cluster
            .state()
            .pod_group("ns/pg")
            .map(|p| p.phase().to_string()),
        Some("Inqueue".into())
    );

    let q = cluster.queues()["q1"].status.as_ref().expect("status");
    assert_eq!(q.allocated["cpu"].0, "1500m");
    assert_eq!(q.allocated["memory"].0, "1Gi");
    assert_eq!(q.allocated["pods"].0, "2");
    assert!(
        cluster
            .state()
            .queue("q1")
            .and_then(|q| q.status_allocated.as_ref())
            .is_some()
    );

    // Now the pod is bound: it runs on the node with PodScheduled=True.
    let mut d = Decisions::default();
    d.binds.push(Bind {
        pod: "ns/a".into(),
        pod_uid: "ua".into(),
        node: "n1".into(),
        volumes: Vec::new(),
        volume_bind_timeout: std::time::Duration::ZERO,
        annotations: Default::default(),
        node_lock: None,
    });
    cluster.apply(&d);
    let a = &cluster.pods()["ns/a"];
    assert_eq!(
        a.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some("n1")
    );
    assert_eq!(
        a.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Running")
    );
    let c = condition(a).expect("condition");
    assert_eq!((c.status.as_str(), c.reason.as_deref()), ("True", None));
    let state = cluster.state();
    let task = state.pod("ns/a").expect("task");
    assert_eq!(task.status, TaskStatus::Running);
    assert_eq!(task.node_name.as_deref(), Some("n1"));
}

#[test]
fn quiet_sessions_change_nothing() {
    let mut d = Decisions::default();
    assert!(!changes_anything(&d));
    d.pipelined.push(engine::framework::decisions::Pipeline {
        pod: "ns/a".into(),
        node: "n1".into(),
    });
    assert!(!changes_anything(&d), "pipelining is session-only");
    d.binds.push(Bind {
        pod: "ns/a".into(),
        pod_uid: String::new(),
        node: "n1".into(),
        volumes: Vec::new(),
        volume_bind_timeout: std::time::Duration::ZERO,
        annotations: Default::default(),
        node_lock: None,
    });
    assert!(changes_anything(&d));
}

#[test]
fn condition_transition_time_moves_only_on_status_change() {
    let later: Timestamp = "2026-01-02T00:00:00Z".parse().expect("timestamp");
    let mut status = PodStatus::default();
    let cond = |s: &str, r: &str| PodCondition {
        type_: POD_SCHEDULED.into(),
        status: s.into(),
        reason: Some(r.into()),
        ..PodCondition::default()
    };
    set_pod_condition(&mut status, cond("False", "a"), now());
    set_pod_condition(&mut status, cond("False", "b"), later);
    let c = &status.conditions.as_ref().expect("conditions")[0];
    assert_eq!(c.last_transition_time, Some(Time(now())));
    assert_eq!(c.reason.as_deref(), Some("b"));
    set_pod_condition(&mut status, cond("True", "c"), later);
    let conditions = status.conditions.as_ref().expect("conditions");
    assert_eq!(conditions.len(), 1);
    assert_eq!(conditions[0].last_transition_time, Some(Time(later)));
}
