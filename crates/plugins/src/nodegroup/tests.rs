//! Unit tests: Volcano's `nodegroup_test.go` cases (per-node status codes and scores), the
//! spec's vectors N1–N14 (spec/plugins-more.md §16), and the corners of §3.

use super::*;
use crate::testutil::{StateLookup, TestCluster, allocate, pod, pod_group};
use engine::conf::{ArgValue, PluginOption};
use engine::framework::{Session, Statement};
use serde_json::{Value, json};

const GROUP_LABEL: &str = keys::NODE_GROUP_NAME;

/// Adds a ready node, in node group `group` when given.
fn node(c: &mut TestCluster, name: &str, group: Option<&str>, cpu: &str, memory: &str) {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if let Some(g) = group {
        labels[GROUP_LABEL] = json!(g);
    }
    let alloc = json!({"cpu": cpu, "memory": memory, "pods": "110"});
    let n = json!({
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": alloc.clone(),
            "capacity": alloc,
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    });
    c.state
        .upsert_node(serde_json::from_value(n).expect("valid node"));
}

/// Adds queue `name`; `spec` is merged into a weight-1 spec, `annotations` set as given.
fn queue(c: &mut TestCluster, name: &str, spec: Value, annotations: Value) {
    let mut s = json!({"weight": 1});
    if let (Some(dst), Some(src)) = (s.as_object_mut(), spec.as_object()) {
        dst.extend(src.clone());
    }
    c.queue(json!({
        "metadata": {"name": name, "annotations": annotations},
        "spec": s
    }));
}

/// `spec.affinity` with the four lists (empty lists are left out).
fn affinity(req: &[&str], pref: &[&str], anti_req: &[&str], anti_pref: &[&str]) -> Value {
    json!({
        "nodeGroupAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": req,
            "preferredDuringSchedulingIgnoredDuringExecution": pref
        },
        "nodeGroupAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": anti_req,
            "preferredDuringSchedulingIgnoredDuringExecution": anti_pref
        }
    })
}

/// A PodGroup `ns/pg` in `queue` with one pod `ns/name` (`node` set for a Running pod).
fn job(c: &mut TestCluster, ns: &str, pg: &str, queue: &str, name: &str, node: Option<&str>) {
    job_with(
        c,
        ns,
        pg,
        queue,
        name,
        node,
        json!({"cpu": "2", "memory": "4Gi"}),
    );
}

fn job_with(
    c: &mut TestCluster,
    ns: &str,
    pg: &str,
    queue: &str,
    name: &str,
    node: Option<&str>,
    requests: Value,
) {
    let mut group = pod_group(ns, pg, 0);
    group["spec"]["queue"] = json!(queue);
    c.pod_group(group);
    let phase = if node.is_some() { "Running" } else { "Pending" };
    c.pod(pod(ns, name, Some(pg), phase, node, requests));
}

fn open(c: &TestCluster, args: &[(&str, ArgValue)], hierarchy: bool) -> Session {
    let mut option = PluginOption::new(NAME).with_arguments(Arguments::from_pairs(args));
    option.enable_hierarchy = hierarchy;
    c.session_with(vec![vec![option]])
}

/// The status code of the predicate (`Success` when it passes) and the reason.
fn status(ssn: &Session, pod: &str, node: &str) -> (StatusCode, String) {
    let (t, n) = (ssn.state.task_by_key(pod), ssn.state.node_by_key(node));
    match ssn.predicate(t, n) {
        Ok(()) => (StatusCode::Success, String::new()),
        Err(e) => {
            assert_eq!(e.statuses.len(), 1, "one status per failure");
            (e.statuses[0].code, e.statuses[0].reason.to_string())
        }
    }
}

fn score(ssn: &Session, pod: &str, node: &str) -> f64 {
    let (t, n) = (ssn.state.task_by_key(pod), ssn.state.node_by_key(node));
    ssn.node_order(t, n).expect("scoring never fails")
}

use StatusCode::{Success as OK, UnschedulableAndUnresolvable as UU};

/// Checks every node's code and score for `pod`: `(node, code, score)`.
fn expect_all(ssn: &Session, pod: &str, want: &[(&str, StatusCode, f64)]) {
    for &(node, code, sc) in want {
        assert_eq!(status(ssn, pod, node).0, code, "{pod} on {node}: code");
        assert!(
            (score(ssn, pod, node) - sc).abs() < 1e-9,
            "{pod} on {node}: score {} != {sc}",
            score(ssn, pod, node)
        );
    }
}

// ---- TestNodeGroup --------------------------------------------------------------------------

/// Nodes n1–n5 of `TestNodeGroup`: n1..n4 in group1..group4, n5 unlabelled.
fn go_nodes(c: &mut TestCluster) {
    node(c, "n1", Some("group1"), "2", "4Gi");
    node(c, "n2", Some("group2"), "4", "16Gi");
    node(c, "n3", Some("group3"), "4", "16Gi");
    node(c, "n4", Some("group4"), "4", "16Gi");
    node(c, "n5", None, "4", "16Gi");
}

/// The affinity of `root` and `q1` in `TestNodeGroup`.
fn q1_affinity() -> Value {
    affinity(
        &["group1", "group3"],
        &["group3"],
        &["group2", "group4"],
        &["group4"],
    )
}

fn go_queue(c: &mut TestCluster, name: &str) {
    match name {
        "root" => queue(c, "root", json!({"affinity": q1_affinity()}), json!({})),
        "q1" => queue(
            c,
            "q1",
            json!({"affinity": q1_affinity(), "parent": "root"}),
            json!({}),
        ),
        "q2" => queue(
            c,
            "q2",
            json!({"affinity": affinity(&["group1"], &["group3"], &["group2"], &["group4"]),
                   "parent": "root"}),
            json!({}),
        ),
        "q3" => queue(
            c,
            "q3",
            json!({"affinity": {"nodeGroupAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": ["group1", "group3"]}}}),
            json!({}),
        ),
        "root-no-affinity" => queue(c, name, json!({}), json!({})),
        "q-no-affinity" => queue(c, name, json!({"parent": "root"}), json!({})),
        "q1-child" => queue(c, name, json!({"parent": "q1"}), json!({})),
        "q-no-affinity-child" => queue(c, name, json!({"parent": "q-no-affinity"}), json!({})),
        other => panic!("unknown queue {other}"),
    }
}

fn go_case(queues: &[&str], pg: &str, queue_name: &str, pod_name: &str) -> TestCluster {
    let mut c = TestCluster::new();
    go_nodes(&mut c);
    for q in queues {
        go_queue(&mut c, q);
    }
    job(&mut c, "c1", pg, queue_name, pod_name, None);
    c
}

#[test]
fn go_soft_constraints_subset_of_hard() {
    let c = go_case(&["q1"], "pg1", "q1", "p1");
    let ssn = open(&c, &[], false);
    expect_all(
        &ssn,
        "c1/p1",
        &[
            ("n1", OK, 100.0),
            ("n2", UU, 0.0),
            ("n3", OK, 150.0),
            ("n4", OK, -1.0),
            ("n5", UU, 0.0),
        ],
    );
}

#[test]
fn go_soft_constraints_not_subset_of_hard() {
    let c = go_case(&["q2"], "pg2", "q2", "p2");
    let ssn = open(&c, &[], false);
    expect_all(
        &ssn,
        "c1/p2",
        &[
            ("n1", OK, 100.0),
            ("n2", UU, 0.0),
            ("n3", OK, 50.0),
            ("n4", OK, -1.0),
            ("n5", UU, 0.0),
        ],
    );
}

#[test]
fn go_no_affinity_non_strict_only_unlabelled_nodes() {
    let c = go_case(&["root-no-affinity"], "pg5", "root-no-affinity", "p5");
    let ssn = open(&c, &[(STRICT_KEY, ArgValue::Bool(false))], false);
    expect_all(
        &ssn,
        "c1/p5",
        &[
            ("n1", UU, 0.0),
            ("n2", UU, 0.0),
            ("n3", UU, 0.0),
            ("n4", UU, 0.0),
            ("n5", OK, 0.0),
        ],
    );
}

/// The codes and scores of q1's affinity, for the inheritance cases.
const Q1_EXPECTED: [(&str, StatusCode, f64); 5] = [
    ("n1", OK, 100.0),
    ("n2", UU, 0.0),
    ("n3", OK, 150.0),
    ("n4", OK, -1.0),
    ("n5", UU, 0.0),
];

#[test]
fn go_affinity_inherited_from_parent() {
    let c = go_case(&["root", "q1", "q1-child"], "pg3", "q1-child", "p3");
    let ssn = open(&c, &[], true);
    expect_all(&ssn, "c1/p3", &Q1_EXPECTED);
}

#[test]
fn go_affinity_inherited_from_grandparent() {
    let c = go_case(
        &["root", "q-no-affinity", "q-no-affinity-child"],
        "pg4",
        "q-no-affinity-child",
        "p4",
    );
    let ssn = open(&c, &[], true);
    expect_all(&ssn, "c1/p4", &Q1_EXPECTED);
}

#[test]
fn go_queue_without_affinity() {
    let c = go_case(&["q-no-affinity"], "pg4", "q-no-affinity", "p4");
    let ssn = open(&c, &[], false);
    expect_all(
        &ssn,
        "c1/p4",
        &[
            ("n1", UU, 0.0),
            ("n2", UU, 0.0),
            ("n3", UU, 0.0),
            ("n4", UU, 0.0),
            ("n5", UU, 0.0),
        ],
    );
}

#[test]
fn go_preferred_nodegroup_priority_ordering() {
    let c = go_case(&["q3"], "pg6", "q3", "p6");
    let ssn = open(&c, &[(PREFERRED_ORDER_KEY, ArgValue::Bool(true))], false);
    expect_all(
        &ssn,
        "c1/p6",
        &[
            ("n1", OK, 50.0),
            ("n2", UU, 0.0),
            ("n3", OK, 25.0),
            ("n4", UU, 0.0),
            ("n5", UU, 0.0),
        ],
    );
}

// ---- TestNodeGroupResourceLimits / TestNodeGroupResourceLimitAllocationEvent ----------------

/// Nodes n1 (group1) and n2 (group2) of 16 cpu / 64Gi, and a queue requiring either group and
/// preferring group1, with the limits annotation `limits` when given.
fn limit_case(queue_name: &str, limits: Option<&str>) -> TestCluster {
    let mut c = TestCluster::new();
    node(&mut c, "n1", Some("group1"), "16", "64Gi");
    node(&mut c, "n2", Some("group2"), "16", "64Gi");
    let annotations = match limits {
        Some(l) => json!({ (keys::NODE_GROUP_RESOURCE_LIMITS): l }),
        None => json!({}),
    };
    queue(
        &mut c,
        queue_name,
        json!({"affinity": {"nodeGroupAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": ["group1", "group2"],
            "preferredDuringSchedulingIgnoredDuringExecution": ["group1"]}}}),
        annotations,
    );
    job(&mut c, "limit", "pg-pending", queue_name, "pending", None);
    c
}

fn limit_codes(c: &TestCluster) -> (StatusCode, StatusCode) {
    let ssn = open(c, &[], false);
    (
        status(&ssn, "limit/pending", "n1").0,
        status(&ssn, "limit/pending", "n2").0,
    )
}

#[test]
fn go_limits_no_annotation_keeps_behaviour() {
    assert_eq!(limit_codes(&limit_case("q-no-limit", None)), (OK, OK));
}

#[test]
fn go_limits_under_limit_permits_preferred_group() {
    let c = limit_case(
        "q-under-limit",
        Some(r#"{"group1":{"cpu":"3","memory":"8Gi"}}"#),
    );
    assert_eq!(limit_codes(&c), (OK, OK));
}

#[test]
fn go_limits_omitted_dimension_unlimited() {
    let c = limit_case("q-cpu-only-limit", Some(r#"{"group1":{"cpu":"3"}}"#));
    assert_eq!(limit_codes(&c), (OK, OK));
}

#[test]
fn go_limits_specified_dimension_enforced() {
    let c = limit_case("q-cpu-only-over-limit", Some(r#"{"group1":{"cpu":"1"}}"#));
    assert_eq!(limit_codes(&c), (UU, OK));
    let ssn = open(&c, &[], false);
    assert_eq!(status(&ssn, "limit/pending", "n1").1, ERR_LIMIT_EXCEEDED);
}

#[test]
fn go_limits_over_limit_rejects_preferred_and_permits_fallback() {
    let mut c = limit_case(
        "q-over-limit",
        Some(r#"{"group1":{"cpu":"3","memory":"8Gi"}}"#),
    );
    job(
        &mut c,
        "limit",
        "pg-used",
        "q-over-limit",
        "used",
        Some("n1"),
    );
    assert_eq!(limit_codes(&c), (UU, OK));
}

#[test]
fn go_limits_invalid_annotation_rejects_queue_tasks() {
    let c = limit_case("q-invalid-limit", Some(r#"{"group1":{"cpu":"#));
    assert_eq!(limit_codes(&c), (UU, UU));
    let ssn = open(&c, &[], false);
    assert_eq!(status(&ssn, "limit/pending", "n2").1, ERR_LIMIT_INVALID);
}

#[test]
fn go_allocation_event_updates_group_usage() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", Some("group1"), "16", "64Gi");
    queue(
        &mut c,
        "q-event-limit",
        json!({"affinity": {"nodeGroupAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": ["group1"]}}}),
        json!({ (keys::NODE_GROUP_RESOURCE_LIMITS): r#"{"group1":{"cpu":"3","memory":"8Gi"}}"# }),
    );
    job(&mut c, "limit", "pg-1", "q-event-limit", "pending-1", None);
    job(&mut c, "limit", "pg-2", "q-event-limit", "pending-2", None);
    let mut ssn = open(&c, &[], false);
    assert_eq!(status(&ssn, "limit/pending-1", "n1").0, OK);
    allocate(&mut ssn, "limit/pending-1", "n1");
    assert_eq!(
        status(&ssn, "limit/pending-2", "n1"),
        (UU, ERR_LIMIT_EXCEEDED.to_string())
    );
}

// ---- spec vectors N1–N14 ----------------------------------------------------------------------

/// One queue `q` with the given spec and annotations, nodes `a`, `b`, `c`, `d` in the groups of
/// the same name plus an unlabelled `none`, and a pending 1-cpu pod `ns/p`.
fn vector_case(spec: Value, annotations: Value) -> TestCluster {
    let mut c = TestCluster::new();
    for g in ["a", "b", "c", "d"] {
        node(&mut c, g, Some(g), "8", "16Gi");
    }
    node(&mut c, "none", None, "8", "16Gi");
    queue(&mut c, "q", spec, annotations);
    job_with(&mut c, "ns", "pg", "q", "p", None, json!({"cpu": "1"}));
    c
}

fn vector(spec: Value, args: &[(&str, ArgValue)]) -> Session {
    open(&vector_case(spec, json!({})), args, false)
}

fn check(ssn: &Session, node: &str, code: StatusCode, reason: &str, sc: f64) {
    assert_eq!(
        status(ssn, "ns/p", node),
        (code, reason.to_string()),
        "predicate on {node}"
    );
    let got = score(ssn, "ns/p", node);
    assert!((got - sc).abs() < 1e-9, "score on {node}: {got} != {sc}");
}

#[test]
fn n1_no_affinity_strict_refuses_unlabelled_node() {
    let ssn = vector(json!({}), &[]);
    check(&ssn, "none", UU, ERR_LABEL_NOT_FOUND, 0.0);
}

#[test]
fn n2_no_affinity_non_strict_accepts_unlabelled_node() {
    let ssn = vector(json!({}), &[(STRICT_KEY, ArgValue::Bool(false))]);
    check(&ssn, "none", OK, "", 0.0);
}

#[test]
fn n3_rules_refuse_unlabelled_node_even_non_strict() {
    let spec = json!({"affinity": affinity(&["a"], &[], &[], &[])});
    let ssn = vector(spec, &[(STRICT_KEY, ArgValue::Bool(false))]);
    check(&ssn, "none", UU, ERR_LABEL_NOT_FOUND, 0.0);
}

#[test]
fn n4_no_affinity_refuses_labelled_node() {
    for strict in [true, false] {
        let ssn = vector(json!({}), &[(STRICT_KEY, ArgValue::Bool(strict))]);
        check(&ssn, "a", UU, ERR_AFFINITY_NOT_FOUND, 0.0);
    }
    // An affinity object with every list empty counts as no rules.
    let ssn = vector(json!({"affinity": {}}), &[]);
    check(&ssn, "a", UU, ERR_AFFINITY_NOT_FOUND, 0.0);
}

#[test]
fn n5_required_and_preferred() {
    let ssn = vector(json!({"affinity": affinity(&["a"], &["b"], &[], &[])}), &[]);
    check(&ssn, "a", OK, "", 100.0);
    check(&ssn, "b", OK, "", 50.0);
    check(&ssn, "c", UU, ERR_NODE_UNSATISFIED, 0.0);
}

#[test]
fn n6_anti_required_overrides_required() {
    let ssn = vector(json!({"affinity": affinity(&["a"], &[], &["a"], &[])}), &[]);
    check(&ssn, "a", UU, ERR_NODE_UNSATISFIED, 100.0);
}

#[test]
fn n7_anti_preferred_only() {
    let ssn = vector(json!({"affinity": affinity(&[], &[], &[], &["c"])}), &[]);
    check(&ssn, "c", OK, "", -1.0);
    check(&ssn, "d", UU, ERR_NODE_UNSATISFIED, 0.0);
}

#[test]
fn n8_required_and_preferred_add_up() {
    let ssn = vector(json!({"affinity": affinity(&["a"], &["a"], &[], &[])}), &[]);
    check(&ssn, "a", OK, "", 150.0);
}

#[test]
fn n9_anti_preferred_overrides_score() {
    let ssn = vector(
        json!({"affinity": affinity(&["a"], &["a"], &[], &["a"])}),
        &[],
    );
    check(&ssn, "a", OK, "", -1.0);
    // Anti-preferred accepts a group even when it is also anti-required.
    let ssn = vector(json!({"affinity": affinity(&[], &[], &["a"], &["a"])}), &[]);
    check(&ssn, "a", OK, "", -1.0);
}

#[test]
fn n10_preferred_order() {
    let mut c = TestCluster::new();
    for g in ["x", "y", "z"] {
        node(&mut c, g, Some(g), "8", "16Gi");
    }
    queue(
        &mut c,
        "q",
        json!({"affinity": affinity(&[], &["x", "y", "z"], &[], &[])}),
        json!({}),
    );
    job_with(&mut c, "ns", "pg", "q", "p", None, json!({"cpu": "1"}));
    let ssn = open(&c, &[(PREFERRED_ORDER_KEY, ArgValue::Bool(true))], false);
    check(&ssn, "x", OK, "", 50.0);
    check(&ssn, "y", OK, "", 100.0 / 3.0);
    check(&ssn, "z", OK, "", 50.0 / 3.0);
    // Without the argument every preferred group gets 50.
    let ssn = open(&c, &[], false);
    check(&ssn, "z", OK, "", 50.0);
}

#[test]
fn preferred_order_with_repeated_name() {
    // [x, y, x]: two distinct names, x keeps index 2 -> 50·(2−2)/2 = 0; y -> 50·(2−1)/2 = 25.
    let mut c = TestCluster::new();
    node(&mut c, "x", Some("x"), "8", "16Gi");
    node(&mut c, "y", Some("y"), "8", "16Gi");
    queue(
        &mut c,
        "q",
        json!({"affinity": affinity(&[], &["x", "y", "x"], &[], &[])}),
        json!({}),
    );
    job_with(&mut c, "ns", "pg", "q", "p", None, json!({"cpu": "1"}));
    let ssn = open(&c, &[(PREFERRED_ORDER_KEY, ArgValue::Bool(true))], false);
    check(&ssn, "x", OK, "", 0.0);
    check(&ssn, "y", OK, "", 25.0);
}

/// N11's cluster: queue `q` requires group `a` and caps it at 4 cpu; `used` holds 3 cpu there.
fn n11_session(requests: Value) -> Session {
    let mut c = vector_case(
        json!({"affinity": affinity(&["a"], &[], &[], &[])}),
        json!({ (keys::NODE_GROUP_RESOURCE_LIMITS): r#"{"a":{"cpu":"4"}}"# }),
    );
    job_with(
        &mut c,
        "ns",
        "pg-used",
        "q",
        "used",
        Some("a"),
        json!({"cpu": "3"}),
    );
    job_with(&mut c, "ns", "pg-new", "q", "new", None, requests);
    open(&c, &[], false)
}

#[test]
fn n11_resource_limit() {
    let ssn = n11_session(json!({"cpu": "1"}));
    assert_eq!(status(&ssn, "ns/new", "a"), (OK, String::new()));
    let ssn = n11_session(json!({"cpu": "1500m"}));
    assert_eq!(
        status(&ssn, "ns/new", "a"),
        (UU, ERR_LIMIT_EXCEEDED.to_string())
    );
    let ssn = n11_session(json!({"memory": "1Gi"}));
    assert_eq!(status(&ssn, "ns/new", "a"), (OK, String::new()));
}

#[test]
fn n12_invalid_annotation() {
    let c = vector_case(
        json!({"affinity": affinity(&["a"], &[], &[], &[])}),
        json!({ (keys::NODE_GROUP_RESOURCE_LIMITS): "not-json" }),
    );
    let ssn = open(&c, &[], false);
    for n in ["a", "b", "none"] {
        assert_eq!(status(&ssn, "ns/p", n), (UU, ERR_LIMIT_INVALID.to_string()));
    }
}

/// `root` requires `a`; `q1` (parent root) has no affinity and holds the pending pod.
fn n13_cluster() -> TestCluster {
    let mut c = TestCluster::new();
    node(&mut c, "a", Some("a"), "8", "16Gi");
    queue(
        &mut c,
        "root",
        json!({"affinity": affinity(&["a"], &[], &[], &[])}),
        json!({}),
    );
    queue(&mut c, "q1", json!({"parent": "root"}), json!({}));
    job_with(&mut c, "ns", "pg", "q1", "p", None, json!({"cpu": "1"}));
    c
}

#[test]
fn n13_hierarchy_inherits_from_root() {
    let ssn = open(&n13_cluster(), &[], true);
    check(&ssn, "a", OK, "", 100.0);
}

#[test]
fn n14_without_hierarchy_no_inheritance() {
    let ssn = open(&n13_cluster(), &[], false);
    check(&ssn, "a", UU, ERR_AFFINITY_NOT_FOUND, 0.0);
}

// ---- further corners --------------------------------------------------------------------------

#[test]
fn empty_parent_means_root_and_empty_affinity_does_not_inherit() {
    let mut c = n13_cluster();
    queue(&mut c, "q2", json!({}), json!({}));
    queue(&mut c, "q3", json!({"affinity": {}}), json!({}));
    job_with(&mut c, "ns", "pg2", "q2", "p2", None, json!({"cpu": "1"}));
    job_with(&mut c, "ns", "pg3", "q3", "p3", None, json!({"cpu": "1"}));
    let ssn = open(&c, &[], true);
    assert_eq!(status(&ssn, "ns/p2", "a").0, OK);
    assert_eq!(
        status(&ssn, "ns/p3", "a"),
        (UU, ERR_AFFINITY_NOT_FOUND.to_string())
    );
}

#[test]
fn limits_are_not_inherited() {
    let mut c = TestCluster::new();
    node(&mut c, "a", Some("a"), "8", "16Gi");
    queue(
        &mut c,
        "root",
        json!({"affinity": affinity(&["a"], &[], &[], &[])}),
        json!({ (keys::NODE_GROUP_RESOURCE_LIMITS): r#"{"a":{"cpu":"1"}}"# }),
    );
    queue(&mut c, "q1", json!({"parent": "root"}), json!({}));
    job_with(&mut c, "ns", "pg", "q1", "p", None, json!({"cpu": "2"}));
    let ssn = open(&c, &[], true);
    assert_eq!(status(&ssn, "ns/p", "a").0, OK);
}

#[test]
fn hierarchy_cycle_and_missing_parent_inherit_nothing() {
    let mut c = TestCluster::new();
    node(&mut c, "a", Some("a"), "8", "16Gi");
    // c1 -> c2 -> c3 -> c2: c1 inherits c3's affinity, the walk ends at the cycle.
    queue(&mut c, "c1", json!({"parent": "c2"}), json!({}));
    queue(&mut c, "c2", json!({"parent": "c3"}), json!({}));
    queue(
        &mut c,
        "c3",
        json!({"parent": "c2", "affinity": affinity(&["a"], &[], &[], &[])}),
        json!({}),
    );
    // d1 <-> d2 without any affinity, and an orphan whose parent does not exist.
    queue(&mut c, "d1", json!({"parent": "d2"}), json!({}));
    queue(&mut c, "d2", json!({"parent": "d1"}), json!({}));
    queue(&mut c, "orphan", json!({"parent": "nowhere"}), json!({}));
    for q in ["c1", "d1", "orphan"] {
        job_with(
            &mut c,
            "ns",
            &format!("pg-{q}"),
            q,
            &format!("p-{q}"),
            None,
            json!({"cpu": "1"}),
        );
    }
    let ssn = open(&c, &[], true);
    assert_eq!(status(&ssn, "ns/p-c1", "a").0, OK);
    assert!((score(&ssn, "ns/p-c1", "a") - 100.0).abs() < 1e-9);
    for p in ["ns/p-d1", "ns/p-orphan"] {
        assert_eq!(
            status(&ssn, p, "a"),
            (UU, ERR_AFFINITY_NOT_FOUND.to_string())
        );
    }
}

#[test]
fn eviction_releases_group_usage() {
    let mut c = vector_case(
        json!({"affinity": affinity(&["a"], &[], &[], &[])}),
        json!({ (keys::NODE_GROUP_RESOURCE_LIMITS): r#"{"a":{"cpu":"4"}}"# }),
    );
    job_with(
        &mut c,
        "ns",
        "pg-used",
        "q",
        "used",
        Some("a"),
        json!({"cpu": "3"}),
    );
    job_with(
        &mut c,
        "ns",
        "pg-new",
        "q",
        "new",
        None,
        json!({"cpu": "2"}),
    );
    let mut ssn = open(&c, &[], false);
    assert_eq!(status(&ssn, "ns/new", "a").0, UU);
    let used = ssn.state.task_by_key("ns/used");
    ssn.evict(&mut Statement::new(), used, "test");
    assert_eq!(status(&ssn, "ns/new", "a").0, OK);
}

#[test]
fn limits_annotation_parsing() {
    let parse = |raw: &str| {
        let a = BTreeMap::from([(
            keys::NODE_GROUP_RESOURCE_LIMITS.to_string(),
            raw.to_string(),
        )]);
        parse_limits(Some(&a))
    };
    assert!(parse("").expect("empty is no limits").is_empty());
    assert!(parse("null").expect("null is no limits").is_empty());
    assert!(parse("[]").is_err());
    assert!(parse(r#"{"a":{"cpu":"lots"}}"#).is_err());
    assert!(parse(r#"{"a":{"cpu":true}}"#).is_err());
    let limits = parse(r#"{"a":{"cpu":2,"memory":" 1Gi ","nvidia.com/gpu":"8"},"b":null}"#)
        .expect("valid limits");
    let a = &limits["a"];
    assert_eq!(a.resource.milli_cpu, 2000.0);
    assert_eq!(a.resource.memory, 1024.0 * 1024.0 * 1024.0);
    assert_eq!(a.resource.get("nvidia.com/gpu"), 8000.0);
    assert_eq!(a.names, ["cpu", "memory", "nvidia.com/gpu"]);
    assert!(limits["b"].names.is_empty());
    assert_eq!(parse_limits(None), Ok(BTreeMap::new()));
}

#[test]
fn limit_comparison_tolerance() {
    let limit = GroupLimit {
        resource: Resource::from_pairs(1000.0, 0.0, &[("pods", 2.0)]),
        names: vec!["cpu".into(), "pods".into()],
    };
    // Over by less than 0.1 (stored units) is not over.
    assert!(exceeded_names(&Resource::from_pairs(1000.05, 0.0, &[]), &limit).is_empty());
    assert_eq!(
        exceeded_names(&Resource::from_pairs(1001.0, 0.0, &[("pods", 3.0)]), &limit),
        ["cpu", "pods"]
    );
}

#[test]
fn bad_arguments_keep_defaults() {
    let ssn = vector(json!({}), &[(STRICT_KEY, ArgValue::Str("maybe".into()))]);
    check(&ssn, "none", UU, ERR_LABEL_NOT_FOUND, 0.0);
    // Go's ParseBool spelling is accepted.
    let ssn = vector(json!({}), &[(STRICT_KEY, ArgValue::Str("F".into()))]);
    check(&ssn, "none", OK, "", 0.0);
}

#[test]
fn reasons_reach_the_aggregated_fit_message() {
    let c = go_case(&["q-no-affinity"], "pg4", "q-no-affinity", "p4");
    let ssn = open(&c, &[], false);
    let t = ssn.state.task_by_key("c1/p4");
    let mut errors = engine::model::FitErrors::default();
    for n in ssn.state.node_ids() {
        if let Err(e) = ssn.predicate(t, n) {
            errors.set_node_error(n, &e);
        }
    }
    assert_eq!(
        errors.to_string(),
        "0/5 nodes are unavailable: 1 node group label not found, \
         4 node group affinity not specified."
    );
}
