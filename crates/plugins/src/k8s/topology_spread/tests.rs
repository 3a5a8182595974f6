use super::*;
use serde_json::{Value, json};

const ZONE: &str = "topology.kubernetes.io/zone";

fn node(name: &str, labels: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("node")
}

fn pod(ns: &str, labels: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": ns, "labels": labels},
        "spec": {"containers": []}
    }))
    .expect("pod")
}

/// An incoming `app=web` pod with the given constraints.
fn incoming(labels: Value, constraints: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "in", "namespace": "default", "labels": labels},
        "spec": {"containers": [], "topologySpreadConstraints": constraints}
    }))
    .expect("pod")
}

fn constraint(skew: i32, key: &str, when: &str, extra: Value) -> Value {
    let mut c = json!({
        "maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": "web"}}
    });
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(extra.clone());
    }
    c
}

fn web() -> Pod {
    pod("default", json!({"app": "web"}))
}

fn all(_: &Node) -> bool {
    true
}

/// Filter result for every node.
fn filter_all(
    pod: &Pod,
    nodes: &[Node],
    existing: &[(Pod, usize)],
    eligible: &dyn Fn(&Node) -> bool,
) -> Option<Vec<Result<(), SpreadFailure>>> {
    let refs: Vec<&Node> = nodes.iter().collect();
    let placed = existing.iter().map(|(p, n)| PlacedPod {
        pod: p,
        node: &nodes[*n],
    });
    let state = SpreadFilterState::compute(pod, placed, &refs, eligible)?;
    let by_labels: Vec<_> = nodes.iter().map(|n| state.filter(pod, n)).collect();
    // Found by position, each node gets the answer its labels give.
    let by_position: Vec<_> = (nodes.iter().enumerate())
        .map(|(i, n)| state.filter_at(pod, i, || n))
        .collect();
    assert_eq!(by_labels, by_position);
    Some(by_labels)
}

use SpreadFailure::*;
const OK: Result<(), SpreadFailure> = Ok(());

#[test]
fn skew_over_two_zones() {
    let nodes = [
        node("a1", json!({ZONE: "a"})),
        node("b1", json!({ZONE: "b"})),
    ];
    let p = incoming(
        json!({"app": "web"}),
        json!([constraint(1, ZONE, DO_NOT_SCHEDULE, json!({}))]),
    );
    // 2 in a, 0 in b: a → 2 + 1 − 0 = 3 > 1, b → 0 + 1 − 0 = 1.
    let existing = [(web(), 0), (web(), 0)];
    assert_eq!(
        filter_all(&p, &nodes, &existing, &all),
        Some(vec![Err(SkewTooLarge), OK])
    );
    // 1 in a, 0 in b: a → 1 + 1 − 0 = 2 > 1 still fails.
    assert_eq!(
        filter_all(&p, &nodes, &existing[..1], &all),
        Some(vec![Err(SkewTooLarge), OK])
    );
    // 1 and 1: both fine.
    let balanced = [(web(), 0), (web(), 1)];
    assert_eq!(filter_all(&p, &nodes, &balanced, &all), Some(vec![OK, OK]));
}

#[test]
fn filter_table() {
    let nodes = [
        node("a1", json!({ZONE: "a"})),
        node("b1", json!({ZONE: "b"})),
        node("c1", json!({ZONE: "c"})),
        node("x", json!({})),
    ];
    let c_ineligible = |n: &Node| node_name(n) != "c1";
    let terminating: Pod = serde_json::from_value(json!({
        "metadata": {"name": "t", "namespace": "default", "labels": {"app": "web"},
                     "deletionTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"containers": []}
    }))
    .expect("pod");
    let dns = |extra: Value| json!([constraint(1, ZONE, DO_NOT_SCHEDULE, extra)]);
    type Case<'c> = (
        &'c str,
        Pod,
        Vec<(Pod, usize)>,
        &'c dyn Fn(&Node) -> bool,
        Option<Vec<Result<(), SpreadFailure>>>,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            "missing topology key is unresolvable; empty zone c sets the minimum",
            incoming(json!({"app": "web"}), dns(json!({}))),
            vec![(web(), 0), (web(), 1)],
            &all,
            Some(vec![
                Err(SkewTooLarge),
                Err(SkewTooLarge),
                OK,
                Err(MissingTopologyKey),
            ]),
        ),
        (
            "ineligible zone c is not a domain",
            incoming(json!({"app": "web"}), dns(json!({}))),
            vec![(web(), 0), (web(), 1)],
            &c_ineligible,
            Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
        ),
        (
            "nodeAffinityPolicy Ignore counts zone c again",
            incoming(
                json!({"app": "web"}),
                dns(json!({"nodeAffinityPolicy": "Ignore"})),
            ),
            vec![(web(), 0), (web(), 1)],
            &c_ineligible,
            Some(vec![
                Err(SkewTooLarge),
                Err(SkewTooLarge),
                OK,
                Err(MissingTopologyKey),
            ]),
        ),
        (
            "minDomains above the domain count makes the minimum 0",
            incoming(json!({"app": "web"}), dns(json!({"minDomains": 3}))),
            vec![(web(), 0), (web(), 1)],
            &c_ineligible,
            // c1 is not a domain, so it counts 0 pods: 0 + 1 − 0 passes.
            Some(vec![
                Err(SkewTooLarge),
                Err(SkewTooLarge),
                OK,
                Err(MissingTopologyKey),
            ]),
        ),
        (
            "minDomains met",
            incoming(json!({"app": "web"}), dns(json!({"minDomains": 2}))),
            vec![(web(), 0), (web(), 1)],
            &c_ineligible,
            Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
        ),
        (
            "other namespaces and terminating pods do not count",
            incoming(json!({"app": "web"}), dns(json!({}))),
            vec![
                (pod("other", json!({"app": "web"})), 0),
                (terminating.clone(), 0),
            ],
            &all,
            Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
        ),
        (
            "a pod not matching its own selector adds nothing (compare the first case)",
            incoming(json!({"app": "db"}), dns(json!({}))),
            vec![(web(), 0), (web(), 1)],
            &all,
            Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
        ),
        (
            "matchLabelKeys restricts counting to the pod's own version",
            incoming(
                json!({"app": "web", "v": "2"}),
                dns(json!({"matchLabelKeys": ["v"]})),
            ),
            vec![
                (pod("default", json!({"app": "web", "v": "1"})), 0),
                (pod("default", json!({"app": "web", "v": "1"})), 0),
            ],
            &all,
            Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
        ),
        (
            "empty selector counts nothing",
            incoming(
                json!({"app": "web"}),
                json!([{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DO_NOT_SCHEDULE, "labelSelector": {}}]),
            ),
            vec![(web(), 0), (web(), 0), (web(), 0)],
            &all,
            Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
        ),
        (
            "ScheduleAnyway only: skip",
            incoming(
                json!({"app": "web"}),
                json!([constraint(1, ZONE, SCHEDULE_ANYWAY, json!({}))]),
            ),
            vec![(web(), 0)],
            &all,
            None,
        ),
        ("no constraints: skip", web(), vec![(web(), 0)], &all, None),
    ];
    for (name, p, existing, eligible, want) in cases {
        assert_eq!(filter_all(&p, &nodes, &existing, eligible), want, "{name}");
    }
}

#[test]
fn node_taints_policy() {
    let nodes: Vec<Node> = vec![
        node("a1", json!({ZONE: "a"})),
        node("b1", json!({ZONE: "b"})),
        serde_json::from_value(json!({
            "metadata": {"name": "c1", "labels": {ZONE: "c"}},
            "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        }))
        .expect("node"),
    ];
    let existing = [(web(), 0), (web(), 1)];
    let honor = incoming(
        json!({"app": "web"}),
        json!([constraint(
            1,
            ZONE,
            DO_NOT_SCHEDULE,
            json!({"nodeTaintsPolicy": "Honor"})
        )]),
    );
    // Tainted zone c is dropped: minimum 1 → a and b pass.
    assert_eq!(
        filter_all(&honor, &nodes, &existing, &all),
        Some(vec![OK, OK, OK])
    );
    // Default Ignore keeps zone c with 0 pods.
    let ignore = incoming(
        json!({"app": "web"}),
        json!([constraint(1, ZONE, DO_NOT_SCHEDULE, json!({}))]),
    );
    assert_eq!(
        filter_all(&ignore, &nodes, &existing, &all),
        Some(vec![Err(SkewTooLarge), Err(SkewTooLarge), OK])
    );
    // A tolerating pod keeps zone c even under Honor.
    let mut tolerant = honor.clone();
    if let Some(spec) = tolerant.spec.as_mut() {
        spec.tolerations = Some(vec![
            serde_json::from_value(json!({"key": "dedicated", "operator": "Exists"}))
                .expect("toleration"),
        ]);
    }
    assert_eq!(
        filter_all(&tolerant, &nodes, &existing, &all),
        Some(vec![Err(SkewTooLarge), Err(SkewTooLarge), OK])
    );
}

#[test]
fn failure_reasons() {
    assert_eq!(
        MissingTopologyKey.reason(),
        "node(s) didn't match pod topology spread constraints (missing required label)"
    );
    assert_eq!(
        SkewTooLarge.reason(),
        "node(s) didn't match pod topology spread constraints"
    );
    assert!(MissingTopologyKey.unresolvable());
    assert!(!SkewTooLarge.unresolvable());
}

#[test]
fn scores() {
    let nodes = [
        node("a1", json!({ZONE: "a", LABEL_HOSTNAME: "a1"})),
        node("a2", json!({ZONE: "a", LABEL_HOSTNAME: "a2"})),
        node("b1", json!({ZONE: "b", LABEL_HOSTNAME: "b1"})),
        node("x", json!({LABEL_HOSTNAME: "x"})),
    ];
    let refs: Vec<&Node> = nodes.iter().collect();
    let pods = [web(), web(), web()];
    let placed = |at: &[usize]| -> Vec<PlacedPod<'_>> {
        at.iter()
            .zip(&pods)
            .map(|(&n, p)| PlacedPod {
                pod: p,
                node: &nodes[n],
            })
            .collect()
    };
    let zone = incoming(
        json!({"app": "web"}),
        json!([constraint(1, ZONE, SCHEDULE_ANYWAY, json!({}))]),
    );
    // Zone a holds 2 pods, b none; 2 domains → weight ln 4 ≈ 1.386.
    // raw a = round(2 × 1.386) = 3, b = 0; x lacks the key → 0.
    // normalised: a = 100 × (3 + 0 − 3) / 3 = 0, b = 100 × 3 / 3 = 100.
    assert_eq!(
        spread_scores(&zone, &placed(&[0, 1]), &refs, &refs, &all),
        Some(vec![0, 0, 100, 0])
    );
    // No pods anywhere: every raw score is 0 → 100 for nodes with the key.
    assert_eq!(
        spread_scores(&zone, &[], &refs, &refs, &all),
        Some(vec![100, 100, 100, 0])
    );

    // maxSkew 3 adds 2 everywhere: raw a = round(2.77 + 2) = 5, b = 2 → a = 100 × 2 / 5 = 40.
    let loose = incoming(
        json!({"app": "web"}),
        json!([constraint(3, ZONE, SCHEDULE_ANYWAY, json!({}))]),
    );
    assert_eq!(
        spread_scores(&loose, &placed(&[0, 1]), &refs, &refs, &all),
        Some(vec![40, 40, 100, 0])
    );

    // Hostname: counts the candidate's own pods; 4 scored candidates → weight ln 6 ≈ 1.792.
    // raw a1 = round(2 × 1.792) = 4, a2 = round(1.792) = 2, others 0 → a1 = 0, a2 = 50.
    let host = incoming(
        json!({"app": "web"}),
        json!([constraint(1, LABEL_HOSTNAME, SCHEDULE_ANYWAY, json!({}))]),
    );
    assert_eq!(
        spread_scores(&host, &placed(&[0, 0, 1]), &refs, &refs, &all),
        Some(vec![0, 50, 100, 100])
    );

    // Only domains of scored candidates are counted: scoring b1 and x alone.
    let subset = [&nodes[2], &nodes[3]];
    assert_eq!(
        spread_scores(&zone, &placed(&[0, 1]), &subset, &refs, &all),
        Some(vec![100, 0])
    );

    // Skips.
    let hard = incoming(
        json!({"app": "web"}),
        json!([constraint(1, ZONE, DO_NOT_SCHEDULE, json!({}))]),
    );
    assert_eq!(
        spread_scores(&hard, &placed(&[0]), &refs, &refs, &all),
        None
    );
    assert_eq!(spread_scores(&zone, &placed(&[0]), &refs, &[], &all), None);
}

#[test]
fn normalisation_edge_cases() {
    assert_eq!(normalize_spread(&[None, None]), vec![0, 0]);
    assert_eq!(
        normalize_spread(&[Some(0), None, Some(0)]),
        vec![100, 0, 100]
    );
    assert_eq!(
        normalize_spread(&[Some(2), Some(4), Some(6)]),
        vec![100, 66, 33]
    );
    assert_eq!(normalize_spread(&[]), Vec::<i64>::new());
}
