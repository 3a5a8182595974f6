//! Unit tests: the cases of Volcano's `network_topology_aware_test.go` (argument parsing, node
//! scores for jobs with and without a constraint, HyperNode scores, the resource cache, the
//! gradient's pre-filtering and eviction capping) and the spec's vectors W2, W4 and W5
//! (spec/plugins-more.md §14; W1 is Volcano's two- and one-tier node-score cases).
//!
//! Volcano's tests set the session tiers by hand; here they come from HyperNode objects, and
//! the session always adds the virtual root one tier above the highest real HyperNode. Where a
//! Volcano case relies on a hand-set highest tier holding every node, the root plays that part.

use super::*;
use crate::testutil::{StateLookup, TestCluster, pod, pod_group};
use engine::conf::{ArgValue, PluginOption};
use engine::framework::Session;
use engine::model::topology::CLUSTER_TOP_HYPER_NODE;
use engine::model::{ResourceName, SubJobId};
use serde_json::{Value, json};

/// Volcano's tolerance on scores.
const EPS: f64 = 0.1;
const GI: f64 = 1024.0 * 1024.0 * 1024.0;

// ---- Builders ----

fn member(kind: &str, name: &str) -> Value {
    json!({"type": kind, "selector": {"exactMatch": {"name": name}}})
}

fn hyper_node(c: &mut TestCluster, name: &str, tier: i32, members: Vec<Value>) {
    c.hyper_node(json!({
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members}
    }));
}

/// A HyperNode over nodes `<name>-n1` and `<name>-n2`, which are added with `alloc(node)`.
fn leaf(c: &mut TestCluster, name: &str, alloc: &dyn Fn(&str) -> Value) {
    let nodes = [format!("{name}-n1"), format!("{name}-n2")];
    for n in &nodes {
        c.node(n, alloc(n));
    }
    let members = nodes.iter().map(|n| member("Node", n)).collect();
    hyper_node(c, name, 1, members);
}

fn parent(c: &mut TestCluster, name: &str, tier: i32, children: &[&str]) {
    let members = children.iter().map(|h| member("HyperNode", h)).collect();
    hyper_node(c, name, tier, members);
}

/// Volcano's three-tier tree: leaves s3..s6, s1 = {s3, s4} and s2 = {s5, s6} at tier 2, and
/// s0 over `s0_children` at tier 3 (the root is then tier 4).
fn three_tiers(c: &mut TestCluster, s0_children: &[&str], alloc: &dyn Fn(&str) -> Value) {
    for l in ["s3", "s4", "s5", "s6"] {
        leaf(c, l, alloc);
    }
    parent(c, "s1", 2, &["s3", "s4"]);
    parent(c, "s2", 2, &["s5", "s6"]);
    parent(c, "s0", 3, s0_children);
}

/// The nodes of Volcano's node-score cases: 2 cpu, 4Gi, 10 pods each.
fn small_node(_: &str) -> Value {
    json!({"cpu": "2", "memory": "4Gi", "pods": "10"})
}

/// The nodes of Volcano's binpack cases: 2 or 4 cpu (s4, s6), 4G or 8G (s5, s6), and
/// `example.com/foo` when `foo` gives an amount for the node.
fn mixed_node(node: &str, foo: &dyn Fn(&str) -> Option<&'static str>) -> Value {
    let (cpu, memory) = match &node[..2] {
        "s3" => ("2", "4G"),
        "s4" => ("4", "4G"),
        "s5" => ("2", "8G"),
        _ => ("4", "8G"),
    };
    let mut alloc = json!({"cpu": cpu, "memory": memory, "pods": "10"});
    if let Some(amount) = foo(node) {
        alloc["example.com/foo"] = json!(amount);
    }
    alloc
}

fn no_foo(_: &str) -> Option<&'static str> {
    None
}

/// 8 foo on the nodes of s3 and s4, 16 on those of s5 and s6.
fn foo_by_leaf(node: &str) -> Option<&'static str> {
    Some(if matches!(&node[..2], "s3" | "s4") {
        "8"
    } else {
        "16"
    })
}

/// A PodGroup with a network-topology constraint.
fn topology_group(ns: &str, name: &str, min: i32, mode: &str, highest_tier: i64) -> Value {
    let mut pg = pod_group(ns, name, min);
    pg["spec"]["networkTopology"] = json!({"mode": mode, "highestTierAllowed": highest_tier});
    pg
}

/// A pod of `ns/pg1` with role label `worker`: Running on `node`, or Pending.
fn group_pod(c: &mut TestCluster, ns: &str, name: &str, node: Option<&str>, requests: Value) {
    let phase = if node.is_some() { "Running" } else { "Pending" };
    let mut p = pod(ns, name, Some("pg1"), phase, node, requests);
    p["metadata"]["labels"]["volcano.sh/task-spec"] = json!("worker");
    c.pod(p);
}

/// Arguments written as a JSON object (integers, floats, booleans and strings).
fn args(v: Value) -> Arguments {
    let value = |v: &Value| match v {
        Value::Bool(b) => ArgValue::Bool(*b),
        Value::String(s) => ArgValue::Str(s.clone()),
        Value::Number(n) => n
            .as_i64()
            .map_or(ArgValue::Float(n.as_f64().unwrap()), ArgValue::Int),
        other => panic!("unsupported argument {other}"),
    };
    let map = v.as_object().expect("an object");
    map.iter().map(|(k, v)| (k.clone(), value(v))).collect()
}

/// The customised arguments of Volcano's binpack cases, with the given cpu weight.
fn custom_args(cpu: i64) -> Arguments {
    args(json!({
        "weight": 10,
        "hypernode.binpack.cpu": cpu,
        "hypernode.binpack.memory": 4,
        "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
        "hypernode.binpack.resources.nvidia.com/gpu": 2,
        "hypernode.binpack.resources.example.com/foo": 3,
        "hypernode.binpack.normal-pod.enable": true,
        "hypernode.binpack.normal-pod.fading": 0
    }))
}

fn open(c: &TestCluster, arguments: Arguments) -> Session {
    let mut option = PluginOption::new(NAME);
    option.arguments = arguments;
    c.session_with(vec![vec![option]])
}

/// The plugin built from `arguments`, opened over the session.
fn opened_plugin(ssn: &mut Session, arguments: &Arguments) -> NetworkTopologyAware {
    let mut plugin = NetworkTopologyAware {
        config: Config::read(arguments, &mut Vec::new()),
        min_tier: 0,
        max_tier: 0,
        resources: Vec::new(),
    };
    plugin.on_session_open(&mut ssn.state);
    plugin
}

fn hn(ssn: &Session, name: &str) -> HyperNodeId {
    ssn.state.topology().id(name).expect("a hypernode")
}

fn gradient_names(ssn: &Session, gradients: &[Vec<HyperNodeId>]) -> Vec<Vec<String>> {
    let topology = ssn.state.topology();
    gradients
        .iter()
        .map(|g| g.iter().map(|&h| topology.name(h).to_string()).collect())
        .collect()
}

fn assert_close(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= EPS,
        "{what}: expected {want}, got {got}"
    );
}

/// Batch node scores of `task` over every node, checked against `expected(node name)`.
fn check_node_scores(ssn: &Session, task: TaskId, expected: &dyn Fn(&str) -> f64) {
    let nodes: Vec<NodeId> = (0..ssn.state.nodes().len())
        .map(NodeId::from_index)
        .collect();
    let scores = ssn.batch_node_order(task, &nodes).expect("scores");
    for (&n, got) in nodes.iter().zip(scores) {
        let name = ssn.state.node(n).name();
        assert_close(name, got, expected(name));
    }
}

/// The expected score of a node by its leaf HyperNode (the first two letters of its name).
fn by_leaf(table: &'static [(&'static str, f64)]) -> impl Fn(&str) -> f64 {
    move |node| {
        table
            .iter()
            .find(|(l, _)| node.starts_with(l))
            .map_or_else(|| panic!("no expectation for {node}"), |&(_, s)| s)
    }
}

// ---- TestNew ----

fn weights(weight: i64, cpu: i64, memory: i64, scalars: &[(&str, i64)]) -> Weights {
    let scalars = scalars.iter().map(|&(n, w)| (ResourceName::new(n), w));
    let scalars = scalars.collect();
    Weights {
        weight,
        cpu,
        memory,
        scalars,
    }
}

#[test]
fn new_without_arguments_takes_the_defaults() {
    let config = Config::read(&Arguments::new(), &mut Vec::new());
    let expected = Config {
        weights: weights(1, 1, 1, &[]),
        normal_pod_enable: true,
        normal_pod_fading: 0.8,
        max_hyper_nodes_for_eviction: 8,
    };
    assert_eq!(config, expected);
    assert!(check_arguments(&Arguments::new()).is_empty());
    assert_eq!(new(&Arguments::new()).name(), NAME);
}

#[test]
fn new_with_valid_custom_arguments() {
    let a = args(json!({
        "weight": 2,
        "hypernode.binpack.cpu": 3,
        "hypernode.binpack.memory": 4,
        "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
        // Not the listed name: the gpu keeps weight 1.
        "hypernode.binpack.resources.nvidia.com/gpuxxx": 5,
        "hypernode.binpack.resources.example.com/foo": 6,
        "hypernode.binpack.normal-pod.enable": false,
        "hypernode.binpack.normal-pod.fading": 0
    }));
    let config = Config::read(&a, &mut Vec::new());
    let scalars = [("nvidia.com/gpu", 1), ("example.com/foo", 6)];
    assert_eq!(config.weights, weights(2, 3, 4, &scalars));
    assert!(!config.normal_pod_enable);
    assert_eq!(config.normal_pod_fading, 0.0);
    assert_eq!(config.max_hyper_nodes_for_eviction, 8);
}

#[test]
fn new_with_invalid_arguments_falls_back_to_the_defaults() {
    let a = args(json!({
        "weight": -1,
        "hypernode.binpack.cpu": -1,
        "hypernode.binpack.memory": -1,
        "hypernode.binpack.resources": "nvidia.com/gpuxxx, example.com/foo",
        "hypernode.binpack.resources.nvidia.com/gpu": -1,
        "hypernode.binpack.resources.example.com/foo": -1,
        "hypernode.binpack.normal-pod.enable": "a",
        "hypernode.binpack.normal-pod.fading": -1,
        "hypernode.gradient.evict.max-hypernodes": 0
    }));
    let config = Config::read(&a, &mut Vec::new());
    let scalars = [("nvidia.com/gpuxxx", 1), ("example.com/foo", 1)];
    assert_eq!(config.weights, weights(1, 1, 1, &scalars));
    assert!(config.normal_pod_enable);
    assert_eq!(config.normal_pod_fading, 0.8);
    assert_eq!(config.max_hyper_nodes_for_eviction, 8);
    let warned: Vec<String> = check_arguments(&a).into_iter().map(|w| w.key).collect();
    for key in [
        "weight",
        "hypernode.binpack.cpu",
        "hypernode.binpack.memory",
        "hypernode.binpack.resources.example.com/foo",
        NORMAL_POD_ENABLE_KEY,
        NORMAL_POD_FADING_KEY,
        EVICT_MAX_KEY,
    ] {
        assert!(
            warned.iter().any(|k| k == key),
            "{key} not warned: {warned:?}"
        );
    }
}

// ---- TestReverseAndCapEvictionGradients (+ spec W5) ----

/// A session with tier-1 HyperNodes a..f of one node each, and the plugin capped at `max`.
fn capping(max: usize) -> (Session, NetworkTopologyAware) {
    let mut c = TestCluster::new();
    for h in ["a", "b", "c", "d", "e", "f"] {
        let node = format!("n-{h}");
        c.node(&node, json!({"cpu": "1", "pods": "10"}));
        hyper_node(&mut c, h, 1, vec![member("Node", &node)]);
    }
    let mut ssn = c.session(&[]);
    let mut plugin = opened_plugin(&mut ssn, &Arguments::new());
    plugin.config.max_hyper_nodes_for_eviction = max;
    (ssn, plugin)
}

fn ids(ssn: &Session, gradients: &[&[&str]]) -> Vec<Vec<HyperNodeId>> {
    gradients
        .iter()
        .map(|g| g.iter().map(|n| hn(ssn, n)).collect())
        .collect()
}

#[test]
fn eviction_gradients_are_reversed_and_capped() {
    let (ssn, plugin) = capping(3);
    let out = plugin.reverse_and_cap(ids(&ssn, &[&["a", "b"], &["c", "d"]]));
    assert_eq!(gradient_names(&ssn, &out), [vec!["c", "d"], vec!["b"]]);
    // spec W5
    let w5: &[&[&str]] = &[&["a", "b"], &["c", "d", "e"], &["f"]];
    let (ssn, plugin) = capping(4);
    let out = plugin.reverse_and_cap(ids(&ssn, w5));
    assert_eq!(gradient_names(&ssn, &out), [vec!["f"], vec!["c", "d", "e"]]);
    let (ssn, plugin) = capping(2);
    let out = plugin.reverse_and_cap(ids(&ssn, w5));
    assert_eq!(gradient_names(&ssn, &out), [vec!["f"], vec!["e"]]);
}

#[test]
fn eviction_gradients_without_a_cap_are_left_alone() {
    let (ssn, plugin) = capping(0);
    let gradients = ids(&ssn, &[&["a", "b"], &["c", "d"]]);
    assert_eq!(plugin.reverse_and_cap(gradients.clone()), gradients);
}

// ---- TestNetworkTopologyAwareNodeScore_Hard / _Soft ----

#[derive(Clone, Copy)]
enum Layout {
    /// s0 over s1 and s2.
    ThreeTiers,
    /// s0 over s1 only; s2 hangs under the root.
    ThreeTiersS2Apart,
    /// s0 (tier 2) over leaves s1, s2.
    TwoTiers,
    /// Leaves s1, s2 only.
    OneTier,
}

struct LcaCase {
    layout: Layout,
    min_member: i32,
    /// Running pods of the job and their nodes.
    running: &'static [(&'static str, &'static str)],
    /// The Pending pod that is scored.
    pending: &'static str,
    /// The job's HyperNode when the pending task is scored (Volcano's PodGroup annotation).
    allocated: Option<&'static str>,
    weight: i64,
    expected: &'static [(&'static str, f64)],
}

/// Runs the case once with a hard constraint and once with a soft one (Volcano's `_Hard` and
/// `_Soft` tests differ only there), scoring the listed nodes.
fn check_lca_case(case: &LcaCase) {
    for mode in ["hard", "soft"] {
        let mut c = TestCluster::new();
        match case.layout {
            Layout::ThreeTiers => three_tiers(&mut c, &["s1", "s2"], &small_node),
            Layout::ThreeTiersS2Apart => three_tiers(&mut c, &["s1"], &small_node),
            Layout::TwoTiers | Layout::OneTier => {
                leaf(&mut c, "s1", &small_node);
                leaf(&mut c, "s2", &small_node);
                if matches!(case.layout, Layout::TwoTiers) {
                    parent(&mut c, "s0", 2, &["s1", "s2"]);
                }
            }
        }
        c.pod_group(topology_group("c1", "pg1", case.min_member, mode, 0));
        let request = json!({"cpu": "2", "memory": "4G"});
        for &(p, n) in case.running {
            group_pod(&mut c, "c1", p, Some(n), request.clone());
        }
        group_pod(&mut c, "c1", case.pending, None, request);
        let mut ssn = open(&c, args(json!({"weight": case.weight})));
        let task = ssn.state.task_by_key(&format!("c1/{}", case.pending));
        let allocated = case.allocated.map(|h| hn(&ssn, h));
        ssn.state.set_task_job_hyper_node(task, allocated);
        let nodes: Vec<NodeId> = case
            .expected
            .iter()
            .map(|(n, _)| ssn.state.node_by_key(n))
            .collect();
        let scores = ssn.batch_node_order(task, &nodes).expect("scores");
        for (&(n, want), got) in case.expected.iter().zip(scores) {
            assert_close(&format!("{mode} {n}"), got, want);
        }
    }
}

/// Volcano's usual case: the job runs p1, p2 on s3's nodes, reached s3, and p3 is scored.
const ON_S3: LcaCase = LcaCase {
    layout: Layout::ThreeTiers,
    min_member: 1,
    running: &[("p1", "s3-n1"), ("p2", "s3-n2")],
    pending: "p3",
    allocated: Some("s3"),
    weight: 1,
    expected: &[],
};

/// The two-tier and one-tier cases: p1 on s1-n1, the job reached s1, p2 is scored.
const ON_S1: LcaCase = LcaCase {
    running: &[("p1", "s1-n1")],
    pending: "p2",
    allocated: Some("s1"),
    ..ON_S3
};

#[test]
fn node_score_is_zero_before_the_job_has_a_hyper_node() {
    check_lca_case(&LcaCase {
        running: &[],
        pending: "p4",
        allocated: None,
        expected: &[("s3-n1", 0.0), ("s4-n1", 0.0), ("s5-n1", 0.0)],
        ..ON_S3
    });
}

#[test]
fn node_score_is_zero_when_the_common_hyper_node_is_the_root() {
    check_lca_case(&LcaCase {
        layout: Layout::ThreeTiersS2Apart,
        expected: &[("s5-n1", 0.0), ("s6-n1", 0.0)],
        ..ON_S3
    });
}

#[test]
fn node_score_follows_the_tier_of_the_common_hyper_node() {
    check_lca_case(&LcaCase {
        expected: &[("s3-n1", 100.0), ("s4-n1", 66.6), ("s5-n1", 33.3)],
        ..ON_S3
    });
}

#[test]
fn node_score_with_two_tiers() {
    check_lca_case(&LcaCase {
        layout: Layout::TwoTiers,
        expected: &[("s1-n1", 100.0), ("s2-n1", 50.0)],
        ..ON_S1
    });
}

#[test]
fn node_score_with_one_tier() {
    check_lca_case(&LcaCase {
        layout: Layout::OneTier,
        expected: &[("s1-n1", 100.0), ("s2-n1", 0.0)],
        ..ON_S1
    });
}

#[test]
fn node_score_is_scaled_by_the_plugin_weight() {
    check_lca_case(&LcaCase {
        weight: 2,
        expected: &[("s3-n1", 200.0), ("s4-n1", 133.3), ("s5-n1", 66.6)],
        ..ON_S3
    });
}

#[test]
fn node_score_ties_are_broken_by_the_job_tasks_in_the_hyper_node() {
    check_lca_case(&LcaCase {
        min_member: 3,
        running: &[("p1", "s3-n1"), ("p2", "s3-n2"), ("p3", "s4-n1")],
        pending: "p4",
        allocated: Some("s1"),
        expected: &[("s3-n1", 116.6), ("s4-n1", 91.6), ("s5-n1", 33.3)],
        ..ON_S3
    });
}

// ---- TestBatchNodeOrderFn ----

/// Volcano's binpack cluster: the three-tier tree over mixed nodes and a PodGroup `ns1/pg1`
/// without a constraint whose Pending pod `p1` asks for 2 cpu, 4G and `foo` of
/// `example.com/foo`.
fn binpack_cluster(foo_alloc: fn(&str) -> Option<&'static str>, foo: Option<&str>) -> TestCluster {
    let mut c = TestCluster::new();
    three_tiers(&mut c, &["s1", "s2"], &|n| mixed_node(n, &foo_alloc));
    c.pod_group(pod_group("ns1", "pg1", 1));
    let mut request = json!({"cpu": "2", "memory": "4G"});
    if let Some(f) = foo {
        request["example.com/foo"] = json!(f);
    }
    group_pod(&mut c, "ns1", "p1", None, request);
    c
}

fn foo_request() -> Value {
    json!({"cpu": "2", "memory": "4G", "example.com/foo": "8"})
}

#[test]
fn batch_scores_of_a_normal_pod_are_zero_when_hypernode_binpack_is_off() {
    let c = binpack_cluster(no_foo, None);
    let off = args(json!({"hypernode.binpack.normal-pod.enable": false}));
    let ssn = open(&c, off);
    check_node_scores(&ssn, ssn.state.task_by_key("ns1/p1"), &|_| 0.0);
}

#[test]
fn batch_scores_of_a_normal_pod_with_default_arguments() {
    let c = binpack_cluster(no_foo, None);
    let ssn = open(&c, Arguments::new());
    let expected = by_leaf(&[("s3", 25.8), ("s4", 21.6), ("s5", 19.9), ("s6", 15.7)]);
    check_node_scores(&ssn, ssn.state.task_by_key("ns1/p1"), &expected);
}

#[test]
fn batch_scores_of_a_normal_pod_with_custom_arguments() {
    let c = binpack_cluster(foo_by_leaf, Some("8"));
    let ssn = open(&c, custom_args(1));
    let expected = by_leaf(&[("s3", 500.0), ("s4", 468.75), ("s5", 281.3), ("s6", 250.0)]);
    check_node_scores(&ssn, ssn.state.task_by_key("ns1/p1"), &expected);
}

#[test]
fn batch_scores_of_a_normal_pod_on_partly_used_nodes() {
    let mut c = binpack_cluster(foo_by_leaf, Some("8"));
    group_pod(&mut c, "ns1", "p2", Some("s3-n1"), foo_request());
    group_pod(&mut c, "ns1", "p3", Some("s3-n2"), foo_request());
    let ssn = open(&c, custom_args(1));
    let expected = by_leaf(&[("s3", 0.0), ("s4", 468.8), ("s5", 281.3), ("s6", 250.0)]);
    check_node_scores(&ssn, ssn.state.task_by_key("ns1/p1"), &expected);
}

/// The sub-group policy of Volcano's sub-job cases: one sub-group per role, with `topology`.
fn sub_grouped(pg: &mut Value, topology: Option<Value>) {
    let mut policy = json!({
        "name": "task1",
        "matchLabelKeys": ["volcano.sh/task-spec"],
        "subGroupSize": 1,
        "minSubGroups": 0
    });
    if let Some(t) = topology {
        policy["networkTopology"] = t;
    }
    pg["spec"]["subGroupPolicy"] = json!([policy]);
}

#[test]
fn batch_scores_of_a_pod_with_a_constraint() {
    let mut c = TestCluster::new();
    three_tiers(&mut c, &["s1", "s2"], &|n| mixed_node(n, &no_foo));
    let mut pg = topology_group("ns1", "pg1", 2, "hard", 2);
    sub_grouped(
        &mut pg,
        Some(json!({"mode": "hard", "highestTierAllowed": 2})),
    );
    c.pod_group(pg);
    let request = json!({"cpu": "2", "memory": "4G"});
    group_pod(&mut c, "ns1", "p1", None, request.clone());
    group_pod(&mut c, "ns1", "p2", Some("s4-n1"), request);
    let mut ssn = open(&c, Arguments::new());
    let task = ssn.state.task_by_key("ns1/p1");
    let s1 = hn(&ssn, "s1");
    ssn.state.set_task_job_hyper_node(task, Some(s1));
    let expected = by_leaf(&[("s3", 66.7), ("s4", 116.7), ("s5", 33.3), ("s6", 33.3)]);
    check_node_scores(&ssn, task, &expected);
}

// ---- TestHyperNodeOrderFn ----

/// The HyperNodes of Volcano's HyperNode-order cases, in the order of the expected scores.
const SCORED: [&str; 8] = [
    "s0",
    "s1",
    "s2",
    "s3",
    "s4",
    "s5",
    "s6",
    CLUSTER_TOP_HYPER_NODE,
];

/// HyperNode scores of `ns1/pg1` over every HyperNode, checked against `expected` (by
/// [`SCORED`]).
fn check_hyper_node_scores(ssn: &Session, expected: [f64; 8]) {
    let job = ssn.state.job_by_key("ns1/pg1");
    let topology = ssn.state.topology();
    let candidates: Vec<HyperNodeId> = topology.ids().collect();
    assert_eq!(candidates.len(), expected.len());
    let scores = ssn.hyper_node_order(job, SubJobId::WHOLE_JOB, &candidates);
    for (&h, got) in candidates.iter().zip(scores) {
        let name = topology.name(h);
        let i = SCORED
            .iter()
            .position(|&n| n == name)
            .expect("a scored hypernode");
        assert_close(name, got, expected[i]);
    }
}

/// Two Pending workers of 4 cpu, 4G (and `foo`) in a sub-grouped job hard up to tier 2.
fn hyper_node_order_cluster(foo_alloc: fn(&str) -> Option<&'static str>, foo: bool) -> Session {
    let mut c = TestCluster::new();
    three_tiers(&mut c, &["s1", "s2"], &|n| mixed_node(n, &foo_alloc));
    let mut pg = topology_group("ns1", "pg1", 2, "hard", 2);
    sub_grouped(&mut pg, None);
    c.pod_group(pg);
    let mut request = json!({"cpu": "4", "memory": "4G"});
    if foo {
        request["example.com/foo"] = json!("8");
    }
    for p in ["p1", "p2"] {
        group_pod(&mut c, "ns1", p, None, request.clone());
    }
    let arguments = if foo {
        custom_args(3)
    } else {
        Arguments::new()
    };
    open(&c, arguments)
}

#[test]
fn hyper_node_scores_with_default_arguments() {
    let ssn = hyper_node_order_cluster(no_foo, false);
    check_hyper_node_scores(&ssn, [25.0, 58.3, 45.8, 0.0, 100.0, 0.0, 75.0, 25.0]);
}

#[test]
fn hyper_node_scores_with_custom_arguments() {
    // 8 or 16 foo on the first node of each leaf, none on the second.
    fn foo_on_first(node: &str) -> Option<&'static str> {
        let amount = foo_by_leaf(node)?;
        Some(if node.ends_with("-n1") { amount } else { "0" })
    }
    let ssn = hyper_node_order_cluster(foo_on_first, true);
    check_hyper_node_scores(&ssn, [266.7, 700.0, 450.0, 0.0, 0.0, 0.0, 800.0, 266.7]);
}

// ---- spec W2 / W4 ----

#[test]
fn spec_w2_normal_pod_score_fades_with_the_tier() {
    // A tier-1 HyperNode over n1; n2 is in none; the root (tier 2) holds both.
    let mut c = TestCluster::new();
    for n in ["n1", "n2"] {
        c.node(n, json!({"cpu": "4", "pods": "10"}));
    }
    hyper_node(&mut c, "h", 1, vec![member("Node", "n1")]);
    c.pod_group(pod_group("ns", "pg1", 1));
    group_pod(&mut c, "ns", "p1", None, json!({"cpu": "2"}));
    let ssn = open(&c, Arguments::new());
    // n1: h is half full, the root a quarter: (0.5 + 0.8 × 0.25) / 1.8. n2 is in no tier-1
    // HyperNode, which counts as full: (1 + 0.8 × 0.25) / 1.8.
    let expected = |n: &str| if n == "n1" { 38.89 } else { 66.67 };
    check_node_scores(&ssn, ssn.state.task_by_key("ns/p1"), &expected);
}

#[test]
fn spec_w4_hyper_node_score_with_the_cpu_weight_only() {
    // 100 cpu in the HyperNode, 40 used by another job, 20 asked for.
    let mut c = TestCluster::new();
    let (big, asked) = (
        json!({"cpu": "100", "memory": "100Gi"}),
        json!({"cpu": "20"}),
    );
    c.node("n1", big);
    hyper_node(&mut c, "h", 1, vec![member("Node", "n1")]);
    c.pod_group(pod_group("ns", "other", 1));
    c.pod(pod(
        "ns",
        "busy",
        Some("other"),
        "Running",
        Some("n1"),
        json!({"cpu": "40"}),
    ));
    c.pod_group(pod_group("ns", "pg1", 1));
    group_pod(&mut c, "ns", "p1", None, asked);
    let ssn = open(&c, args(json!({"hypernode.binpack.memory": 0})));
    let job = ssn.state.job_by_key("ns/pg1");
    let scores = ssn.hyper_node_order(job, SubJobId::WHOLE_JOB, &[hn(&ssn, "h")]);
    assert_close("h", scores[0], 60.0);
}

// ---- Test_initHyperNodeResourceCache / Test_batchNodeOrderFnForNormalPods (large scale) ----

const LARGE_NODES: usize = 2000;

fn large_name(tier: usize, index: usize) -> String {
    format!("hypernode-tier-{tier}-index-{index}")
}

/// Volcano's large layout: nodes `node-<i>` of 100 cpu, 8000 bytes and 10 `example.com/foo`,
/// each half used by a Running pod of `ns/pg1`; `counts[t - 1]` HyperNodes of tier t, node i in index
/// `i % count` of every tier (which nests, as each count divides the one below).
fn large_cluster(counts: &[usize]) -> TestCluster {
    let mut c = TestCluster::new();
    let alloc = json!({"cpu": "100", "memory": "8000", "example.com/foo": "10", "pods": "110"});
    let half = json!({"cpu": "50", "memory": "4000", "example.com/foo": "5"});
    c.pod_group(pod_group("ns", "pg1", 1));
    for i in 0..LARGE_NODES {
        let node = format!("node-{i}");
        c.node(&node, alloc.clone());
        group_pod(
            &mut c,
            "ns",
            &format!("busy-{i}"),
            Some(&node),
            half.clone(),
        );
    }
    for (t, &count) in counts.iter().enumerate() {
        let tier = t + 1;
        for j in 0..count {
            let members = if tier == 1 {
                (j..LARGE_NODES)
                    .step_by(count)
                    .map(|i| member("Node", &format!("node-{i}")))
                    .collect()
            } else {
                (j..counts[t - 1])
                    .step_by(count)
                    .map(|k| member("HyperNode", &large_name(tier - 1, k)))
                    .collect()
            };
            hyper_node(&mut c, &large_name(tier, j), tier as i32, members);
        }
    }
    c
}

fn large_arguments(fading: Value) -> Arguments {
    args(json!({
        "weight": 10,
        "hypernode.binpack.cpu": 5,
        "hypernode.binpack.memory": 5,
        "hypernode.binpack.resources": "example.com/foo",
        "hypernode.binpack.resources.example.com/foo": 5,
        "hypernode.binpack.normal-pod.enable": true,
        "hypernode.binpack.normal-pod.fading": fading
    }))
}

#[test]
fn resource_cache_sums_the_nodes_of_each_hyper_node() {
    let counts = [200, 40, 5, 1];
    let c = large_cluster(&counts);
    let a = large_arguments(json!(0.8));
    let mut ssn = c.session(&[]);
    let plugin = opened_plugin(&mut ssn, &a);
    let node = ssn.state.node(NodeId::from_index(0));
    let (alloc, used) = (node.allocatable().clone(), node.used.clone());
    let topology = ssn.state.topology();
    assert_eq!(plugin.resources.len(), 246 + 1);
    let mut expected: Vec<(String, usize)> = counts
        .iter()
        .enumerate()
        .flat_map(|(t, &count)| {
            (0..count).map(move |j| (large_name(t + 1, j), LARGE_NODES / count))
        })
        .collect();
    expected.push((CLUSTER_TOP_HYPER_NODE.to_string(), LARGE_NODES));
    for (name, n) in expected {
        let r = &plugin.resources[hn(&ssn, &name).index()];
        let n = n as f64;
        assert_eq!(r.allocatable.get("cpu"), n * 100_000.0, "{name}");
        assert_eq!(r.allocatable.get("memory"), n * 8000.0, "{name}");
        for res in ["cpu", "memory", "example.com/foo"] {
            assert_eq!(r.allocatable.get(res), n * alloc.get(res), "{name} {res}");
            assert_eq!(r.used.get(res), n * used.get(res), "{name} {res}");
        }
    }
    assert_eq!(topology.tiers(), &[1, 2, 3, 4, 5]);
}

#[test]
fn normal_pod_scores_at_large_scale() {
    // Volcano's tier-4 HyperNode holds every node and is the highest tier: the session's
    // root is exactly that, so the real tiers stop at 3 and tiers 1..4 are scored.
    let mut c = large_cluster(&[200, 40, 5]);
    let request = json!({"cpu": "50", "memory": "4000", "example.com/foo": "5"});
    group_pod(&mut c, "ns", "p1", None, request);
    let ssn = open(&c, large_arguments(json!(1)));
    assert_eq!(ssn.state.topology().tiers(), &[1, 2, 3, 4]);
    // Volcano's 0.515375, unscaled there; × 100 × weight 10 through the session.
    check_node_scores(&ssn, ssn.state.task_by_key("ns/p1"), &|_| 515.375);
}

// ---- TestHyperNodeGradientPreFiltering ----

fn cores_gib((cpu, gib): (f64, f64)) -> Resource {
    Resource::from_pairs(cpu * 1000.0, gib * GI, &[])
}

#[test]
fn gradient_pre_filters_hyper_nodes_by_resources() {
    use SearchPurpose::{Allocate, Evict};
    // (purpose, highest tier, min, idle, future idle in (cores, GiB), hn-1-0 selected)
    let case = |p: SearchPurpose, t: i64, m, i, f, sel: bool| (p, t, m, i, f, sel);
    let cases = [
        // Job: highest tier 2.
        case(Allocate, 2, (20., 40.), (30., 60.), (35., 70.), true),
        case(Allocate, 2, (20., 40.), (30., 60.), (15., 30.), true),
        case(Allocate, 2, (20., 40.), (15., 30.), (30., 60.), true),
        case(Allocate, 2, (20., 40.), (15., 30.), (15., 30.), false),
        // Sub-job: highest tier 1.
        case(Allocate, 1, (10., 20.), (20., 40.), (25., 50.), true),
        case(Allocate, 1, (10., 20.), (20., 40.), (5., 10.), true),
        case(Allocate, 1, (10., 20.), (5., 10.), (20., 40.), true),
        case(Allocate, 1, (10., 20.), (5., 10.), (5., 10.), false),
        // Eviction looks at allocatable only (10 nodes of 4 cpu, 8Gi).
        case(Evict, 2, (20., 40.), (15., 30.), (15., 30.), true),
        case(Evict, 2, (50., 100.), (15., 30.), (15., 30.), false),
    ];
    // 100 tier-1 HyperNodes of 10 nodes (4 cpu, 8Gi) under one tier-2 HyperNode.
    let mut c = TestCluster::new();
    for i in 0..100 {
        let nodes: Vec<String> = (0..10).map(|j| format!("node-{}", i * 10 + j)).collect();
        for n in &nodes {
            c.node(n, json!({"cpu": "4", "memory": "8Gi"}));
        }
        let members = nodes.iter().map(|n| member("Node", n)).collect();
        hyper_node(&mut c, &format!("hn-1-{i}"), 1, members);
    }
    let children: Vec<String> = (0..100).map(|i| format!("hn-1-{i}")).collect();
    let refs: Vec<&str> = children.iter().map(String::as_str).collect();
    parent(&mut c, "hn-2-0", 2, &refs);
    let mut ssn = c.session(&[]);
    let (tested, start) = (hn(&ssn, "hn-1-0"), hn(&ssn, "hn-2-0"));
    for (i, &(purpose, tier, min, idle, future_idle, selected)) in cases.iter().enumerate() {
        let mut plugin = opened_plugin(&mut ssn, &Arguments::new());
        plugin.resources[tested.index()].idle = cores_gib(idle);
        plugin.resources[tested.index()].future_idle = cores_gib(future_idle);
        let min = cores_gib(min);
        let result = plugin
            .gradient(&ssn.state, start, tier, None, &min, purpose)
            .expect("a search root");
        let found = result.iter().flatten().any(|&h| h == tested);
        assert_eq!(found, selected, "case {i}");
        let tiers: Vec<i32> = result
            .iter()
            .map(|g| ssn.state.topology().tier(g[0]))
            .collect();
        assert!(
            tiers.windows(2).all(|w| w[0] <= w[1]),
            "case {i}: {tiers:?}"
        );
    }
}

// ---- TestHyperNodeGradientForSubJobFn_NoSubJobPolicyRespectsHardTopology ----

#[test]
fn hard_gradient_does_not_fall_back_to_the_root_when_no_domain_fits() {
    let mut c = TestCluster::new();
    for zone in ["a", "d"] {
        let nodes = [format!("node-{zone}-1"), format!("node-{zone}-2")];
        for n in &nodes {
            c.node(n, json!({"cpu": "8"}));
        }
        let members = nodes.iter().map(|n| member("Node", n)).collect();
        hyper_node(&mut c, &format!("zone-{zone}"), 1, members);
    }
    parent(&mut c, "region", 2, &["zone-a", "zone-d"]);
    c.pod_group(topology_group("ns", "pg1", 1, "hard", 1));
    group_pod(&mut c, "ns", "pending-task", None, json!({"cpu": "20"}));
    let ssn = c.session(&[&[NAME]]);
    assert_eq!(ssn.state.topology().tiers(), &[1, 2, 3]);
    let job = ssn.state.job_by_key("ns/pg1");
    let min = ssn.state.pending_min_resources(job, SubJobId::WHOLE_JOB);
    let gradients = ssn.hyper_node_gradient(&GradientQuery {
        job,
        hard_tier: Some(1),
        start: ssn.state.topology().root(),
        allocated: None,
        min_resource: &min,
        purpose: SearchPurpose::Evict,
    });
    assert!(
        gradients.is_empty(),
        "{:?}",
        gradient_names(&ssn, &gradients)
    );
}
