//! Volcano's gpushare tests (`device_info_test.go`, `share_test.go`) and the plugin's own:
//! the node filter, the cards chosen, what the bind carries, and undoing a placement.

use engine::conf::ArgValue;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::gpushare::{self, Cards};
use super::*;
use crate::testutil::{StateLookup, TestCluster, allocate, pod};

fn pod_with(limits: &[(&str, &str)], init: &[(&str, &str)]) -> Pod {
    let limits_of = |l: &[(&str, &str)]| -> Value {
        l.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
    };
    serde_json::from_value(json!({
        "metadata": {"name": "p", "uid": "pod-uid"},
        "spec": {
            "containers": limits.iter().map(|l| json!({"name": "c", "resources": {"limits": limits_of(&[*l])}})).collect::<Vec<_>>(),
            "initContainers": init.iter().map(|l| json!({"name": "i", "resources": {"limits": limits_of(&[*l])}})).collect::<Vec<_>>(),
        }
    }))
    .expect("pod")
}

#[test]
fn memory_and_cards_asked_take_the_larger_of_containers_and_the_init_peak() {
    let m = GPU_MEMORY;
    assert_eq!(
        gpushare::memory_of_pod(&pod_with(&[(m, "1"), (m, "3")], &[])),
        4
    );
    assert_eq!(
        gpushare::memory_of_pod(&pod_with(&[(m, "2")], &[(m, "1"), (m, "3")])),
        3
    );
    let n = GPU_NUMBER;
    assert_eq!(
        gpushare::number_of_pod(&pod_with(&[(n, "1"), (n, "3")], &[])),
        4
    );
    assert_eq!(
        gpushare::number_of_pod(&pod_with(&[(n, "2")], &[(n, "1"), (n, "3")])),
        3
    );
}

#[test]
fn an_over_subscribed_card_is_full_not_negative() {
    let mut cards = Cards::default();
    cards.cards.insert(
        0,
        gpushare::Card {
            memory: 1000,
            pods: [("p1".to_string(), 3000)].into(),
        },
    );
    assert!(cards.cards_with_memory(500).is_empty());
}

#[test]
fn releasing_a_pod_frees_its_cards() {
    let mut p = pod_with(&[(GPU_MEMORY, "100")], &[]);
    p.metadata.annotations = Some([(GPU_INDEX.to_string(), "0".to_string())].into());
    let mut cards = Cards::default();
    cards.cards.insert(
        0,
        gpushare::Card {
            memory: 1000,
            pods: Default::default(),
        },
    );
    cards.add_pod(&p);
    assert!(cards.cards[&0].pods.contains_key("pod-uid"));
    cards.remove_pod("pod-uid");
    assert!(cards.cards[&0].pods.is_empty());
}

fn sharing() -> Arguments {
    Arguments::from_pairs(&[(SHARING_KEY, ArgValue::Bool(true))])
}

/// Node `n1`: two cards of 1000 (card 0 unhealthy when asked).
fn gpu_cluster(unhealthy: bool) -> TestCluster {
    let mut c = TestCluster::new();
    let resources =
        json!({"cpu": "8", "memory": "16Gi", "pods": "110", GPU_MEMORY: "2000", GPU_NUMBER: "2"});
    let annotations = if unhealthy {
        json!({UNHEALTHY_IDS: "0"})
    } else {
        json!({})
    };
    let node = json!({
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}, "annotations": annotations},
        "status": {
            "allocatable": resources.clone(),
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    });
    c.state
        .upsert_node(serde_json::from_value(node).expect("node"));
    c
}

fn gpu_pod(name: &str, resource: &str, amount: &str, index: Option<&str>) -> Value {
    let node = index.map(|_| "n1");
    let phase = if node.is_some() { "Running" } else { "Pending" };
    let mut p = pod("ns", name, None, phase, node, json!({"cpu": "1"}));
    p["spec"]["containers"][0]["resources"]["limits"] = json!({resource: amount});
    if let Some(i) = index {
        p["metadata"]["annotations"][GPU_INDEX] = json!(i);
    }
    p
}

fn session_with(c: &TestCluster, args: Arguments) -> engine::framework::Session {
    let mut option = engine::conf::PluginOption::new(NAME);
    option.arguments = args;
    c.session_with(vec![vec![option]])
}

#[test]
fn a_pod_fits_where_one_card_has_the_memory_idle() {
    let mut c = gpu_cluster(false);
    c.pod(gpu_pod("running", GPU_MEMORY, "800", Some("0")));
    c.pod(gpu_pod("small", GPU_MEMORY, "500", None));
    c.pod(gpu_pod("large", GPU_MEMORY, "1200", None));
    let ssn = session_with(&c, sharing());
    let n1 = ssn.state.node_by_key("n1");
    assert!(ssn.predicate(ssn.state.task_by_key("ns/small"), n1).is_ok());
    let err = ssn
        .predicate(ssn.state.task_by_key("ns/large"), n1)
        .expect_err("no card has 1200 idle");
    assert!(
        err.reasons()
            .any(|r| r == "GpuShare no enough gpu memory on node n1")
    );
}

#[test]
fn the_placed_pod_gets_the_first_card_with_room_and_its_bind_carries_it() {
    let mut c = gpu_cluster(false);
    c.pod(gpu_pod("running", GPU_MEMORY, "800", Some("0")));
    c.pod(gpu_pod("small", GPU_MEMORY, "500", None));
    let mut ssn = session_with(&c, sharing());
    allocate(&mut ssn, "ns/small", "n1");
    let task = ssn.state.task_by_key("ns/small");
    let writes = ssn.pre_bind_writes(task);
    assert_eq!(
        writes.annotations.get(GPU_INDEX).map(String::as_str),
        Some("1")
    );
    assert!(writes.annotations.contains_key(PREDICATE_TIME));
}

#[test]
fn unhealthy_cards_are_left_out() {
    let mut c = gpu_cluster(true);
    c.pod(gpu_pod("p", GPU_MEMORY, "1500", None));
    c.pod(gpu_pod("q", GPU_MEMORY, "900", None));
    let ssn = session_with(&c, sharing());
    let n1 = ssn.state.node_by_key("n1");
    assert!(ssn.predicate(ssn.state.task_by_key("ns/p"), n1).is_err());
    assert!(ssn.predicate(ssn.state.task_by_key("ns/q"), n1).is_ok());
}

#[test]
fn whole_cards_by_number_need_cards_no_pod_uses() {
    let mut c = gpu_cluster(false);
    c.pod(gpu_pod("running", GPU_NUMBER, "1", Some("1")));
    c.pod(gpu_pod("two", GPU_NUMBER, "2", None));
    c.pod(gpu_pod("one", GPU_NUMBER, "1", None));
    let args = Arguments::from_pairs(&[(NUMBER_KEY, ArgValue::Bool(true))]);
    let mut ssn = session_with(&c, args);
    let n1 = ssn.state.node_by_key("n1");
    let err = ssn
        .predicate(ssn.state.task_by_key("ns/two"), n1)
        .expect_err("one card is in use");
    assert!(
        err.reasons()
            .any(|r| r == "GpuNumber no enough gpu number on node n1")
    );
    allocate(&mut ssn, "ns/one", "n1");
    let writes = ssn.pre_bind_writes(ssn.state.task_by_key("ns/one"));
    assert_eq!(
        writes.annotations.get(GPU_INDEX).map(String::as_str),
        Some("0")
    );
}

#[test]
fn switches_that_conflict_or_are_not_provided_are_reported() {
    let both = Arguments::from_pairs(&[
        (SHARING_KEY, ArgValue::Bool(true)),
        (NUMBER_KEY, ArgValue::Bool(true)),
        ("deviceshare.VGPUEnable", ArgValue::Bool(true)),
    ]);
    let mut warnings = Vec::new();
    let c = Config::read(&both, &mut warnings);
    assert!(c.gpu_sharing && !c.gpu_number);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let off = new(&Arguments::new());
    assert_eq!(off.extension_points(), ExtensionPoints::NONE);
}

// --- vGPU -------------------------------------------------------------------------------------

fn vgpu_args(policy: &str, weight: i64) -> Arguments {
    Arguments::from_pairs(&[
        (VGPU_KEY, ArgValue::Bool(true)),
        (POLICY_KEY, ArgValue::Str(policy.to_string())),
        (WEIGHT_KEY, ArgValue::Int(weight)),
    ])
}

/// Node `n1` registering one card of 16000 MiB shareable by 10 (and `n2` registering none).
fn vgpu_cluster() -> TestCluster {
    let mut c = TestCluster::new();
    let resources = json!({"cpu": "8", "memory": "16Gi", "pods": "110",
        "volcano.sh/vgpu-number": "10", "volcano.sh/vgpu-memory": "16000", "volcano.sh/vgpu-cores": "100"});
    for (name, register) in [
        ("n1", Some("GPU-1,10,16000,NVIDIA-A10,true,hami-core:")),
        ("n2", None),
    ] {
        let annotations = match register {
            Some(r) => json!({vgpu::REGISTER: r}),
            None => json!({}),
        };
        let node = json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}, "annotations": annotations},
            "status": {
                "allocatable": resources.clone(),
                "capacity": resources.clone(),
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        });
        c.state
            .upsert_node(serde_json::from_value(node).expect("node"));
    }
    c
}

fn vgpu_pod(name: &str, memory: &str) -> Value {
    let mut p = pod("ns", name, None, "Pending", None, json!({"cpu": "1"}));
    p["spec"]["containers"][0]["resources"]["limits"] =
        json!({"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": memory});
    p
}

#[test]
fn vgpu_arguments_are_read_as_volcano_reads_them() {
    // Volcano's TestArguments.
    let c = Config::read(&vgpu_args("binpack", 10), &mut Vec::new());
    assert!(c.vgpu);
    assert_eq!(c.schedule_policy, "binpack");
    assert_eq!(c.schedule_weight, 10);
    let plugin = new(&vgpu_args("binpack", 10));
    assert!(
        plugin
            .extension_points()
            .contains(ExtensionPoints::NODE_ORDER)
    );
    // Weight 0: every node scores 0, so no node order at all.
    let plugin = new(&vgpu_args("binpack", 0));
    assert!(
        !plugin
            .extension_points()
            .contains(ExtensionPoints::NODE_ORDER)
    );
}

#[test]
fn vgpu_node_score_is_rounded_half_up_then_weighted() {
    // 6000 of 16000 MiB in use after the pod: 37.5, rounded to 38, times 2.
    let mut c = vgpu_cluster();
    c.pod(vgpu_pod("p", "6000"));
    let ssn = session_with(&c, vgpu_args("binpack", 2));
    let task = ssn.state.task_by_key("ns/p");
    let n1 = ssn.state.node_by_key("n1");
    assert_eq!(ssn.node_order(task, n1), Ok(76.0));
}

#[test]
fn a_pod_asking_no_vgpu_or_on_a_node_without_cards_passes_the_device() {
    let mut c = vgpu_cluster();
    c.pod(pod("ns", "cpu", None, "Pending", None, json!({"cpu": "1"})));
    c.pod(vgpu_pod("big", "20000"));
    let ssn = session_with(&c, vgpu_args("", 0));
    let (n1, n2) = (ssn.state.node_by_key("n1"), ssn.state.node_by_key("n2"));
    assert!(ssn.predicate(ssn.state.task_by_key("ns/cpu"), n1).is_ok());
    let big = ssn.state.task_by_key("ns/big");
    let err = ssn.predicate(big, n1).expect_err("no card has 20000 MiB");
    assert!(
        err.reasons()
            .any(|r| r == "hami-vgpuDeviceSharing error: not enough gpu fitted on this node"),
        "{err:?}"
    );
    // n2 registered no cards: the device has nothing to say there.
    assert!(ssn.predicate(big, n2).is_ok());
}

#[test]
fn a_placed_vgpu_pod_holds_its_card_until_the_placement_is_undone() {
    let mut c = vgpu_cluster();
    c.pod(vgpu_pod("a", "10000"));
    c.pod(vgpu_pod("b", "10000"));
    let mut ssn = session_with(&c, vgpu_args("", 0));
    let n1 = ssn.state.node_by_key("n1");
    let (a, b) = (ssn.state.task_by_key("ns/a"), ssn.state.task_by_key("ns/b"));
    let mut stmt = engine::framework::Statement::new();
    ssn.allocate(&mut stmt, a, n1).expect("a fits");
    let writes = ssn.pre_bind_writes(a);
    assert_eq!(
        writes.annotations.get(vgpu::IDS_NEW).map(String::as_str),
        Some("GPU-1,NVIDIA,10000,0:")
    );
    assert_eq!(
        writes.annotations.get(vgpu::BIND_PHASE).map(String::as_str),
        Some("allocating")
    );
    assert!(ssn.predicate(b, n1).is_err(), "6000 MiB left");
    ssn.discard(stmt);
    assert!(ssn.pre_bind_writes(a).annotations.is_empty());
    assert!(ssn.predicate(b, n1).is_ok(), "the card is free again");
}

#[test]
fn gpu_sharing_and_vgpu_together_keep_gpu_sharing() {
    let both = Arguments::from_pairs(&[
        (SHARING_KEY, ArgValue::Bool(true)),
        (VGPU_KEY, ArgValue::Bool(true)),
    ]);
    let mut warnings = Vec::new();
    let c = Config::read(&both, &mut warnings);
    assert!(c.gpu_sharing && !c.vgpu);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].key, VGPU_KEY);
}

// --- node lock --------------------------------------------------------------------------------

fn locking(lock: Option<&str>) -> (TestCluster, Arguments) {
    let mut c = vgpu_cluster();
    if let Some(value) = lock {
        let mut node = c.state.node("n1").expect("n1").node.as_ref().clone();
        node.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(VGPU_LOCK.to_string(), value.to_string());
        c.state.upsert_node(node);
    }
    c.pod(vgpu_pod("a", "1000"));
    c.pod(vgpu_pod("b", "1000"));
    let args = Arguments::from_pairs(&[
        (VGPU_KEY, ArgValue::Bool(true)),
        (NODE_LOCK_KEY, ArgValue::Bool(true)),
    ]);
    (c, args)
}

fn minutes_ago(m: i64) -> String {
    let at = crate::testutil::test_now() - k8s_openapi::jiff::SignedDuration::from_mins(m);
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[test]
fn a_locked_node_takes_one_device_pod_per_session_and_its_bind_takes_the_lock() {
    let (c, args) = locking(None);
    let mut ssn = session_with(&c, args);
    let n1 = ssn.state.node_by_key("n1");
    let (a, b) = (ssn.state.task_by_key("ns/a"), ssn.state.task_by_key("ns/b"));
    let mut stmt = engine::framework::Statement::new();
    ssn.allocate(&mut stmt, a, n1).expect("a takes the lock");
    assert_eq!(ssn.pre_bind_writes(a).node_lock.as_deref(), Some(VGPU_LOCK));
    let err = ssn
        .allocate(&mut engine::framework::Statement::new(), b, n1)
        .expect_err("the node is locked for a");
    assert!(err.contains("has been locked within 5 minutes"), "{err}");
    // Undoing a's placement gives the lock back.
    ssn.discard(stmt);
    assert_eq!(ssn.pre_bind_writes(a).node_lock, None);
    ssn.allocate(&mut engine::framework::Statement::new(), b, n1)
        .expect("b takes the lock");
}

#[test]
fn a_lock_annotation_holds_five_minutes() {
    for (value, free) in [
        (minutes_ago(1), false),
        (minutes_ago(6), true),
        ("not a time".to_string(), false),
    ] {
        let (c, args) = locking(Some(&value));
        let mut ssn = session_with(&c, args);
        let n1 = ssn.state.node_by_key("n1");
        let a = ssn.state.task_by_key("ns/a");
        let got = ssn.allocate(&mut engine::framework::Statement::new(), a, n1);
        assert_eq!(got.is_ok(), free, "lock {value}: {got:?}");
    }
}
