use super::*;
use serde_json::{Value, json};

fn node(name: &str, labels: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("node")
}

fn pod(v: Value) -> Pod {
    serde_json::from_value(v).expect("pod")
}

/// A pod in `ns` with `labels` and the given `spec.affinity`.
fn pod_with(ns: &str, labels: Value, affinity: Value) -> Pod {
    pod(json!({
        "metadata": {"name": "p", "namespace": ns, "labels": labels},
        "spec": {"containers": [], "affinity": affinity}
    }))
}

fn term(selector: Value, key: &str) -> Value {
    json!({"labelSelector": selector, "topologyKey": key})
}

fn required(kind: &str, terms: Value) -> Value {
    json!({kind: {"requiredDuringSchedulingIgnoredDuringExecution": terms}})
}

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

/// n1, n2 in zone a, n3 in zone b, n4 without zone.
fn cluster() -> Vec<Node> {
    vec![
        node("n1", json!({ZONE: "a", HOST: "n1"})),
        node("n2", json!({ZONE: "a", HOST: "n2"})),
        node("n3", json!({ZONE: "b", HOST: "n3"})),
        node("n4", json!({HOST: "n4"})),
    ]
}

fn no_namespaces(_: &str) -> Option<BTreeMap<String, String>> {
    None
}

/// Runs compute + filter on every node of `cluster()`.
fn run(
    incoming: &Pod,
    existing: &[(Pod, usize)],
    namespaces: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
) -> Option<Vec<Result<(), AffinityFailure>>> {
    let nodes = cluster();
    let placed = existing.iter().map(|(p, n)| PlacedPod {
        pod: p,
        node: &nodes[*n],
    });
    let state = AffinityFilterState::compute(incoming, placed, namespaces)?;
    Some(nodes.iter().map(|n| state.filter(incoming, n)).collect())
}

use AffinityFailure::*;
const OK: Result<(), AffinityFailure> = Ok(());

/// For each existing pod: the state computed over every pod, updated by the pod's removal,
/// filters as a state computed without it (no state: every node passes); updated by its
/// return, as the original.
fn assert_update_matches_compute(incoming: &Pod, existing: &[(Pod, usize)]) {
    let nodes = cluster();
    let placed = |skip: Option<usize>| {
        existing
            .iter()
            .enumerate()
            .filter(move |(i, _)| Some(*i) != skip)
            .map(|(_, (p, n))| PlacedPod {
                pod: p,
                node: &nodes[*n],
            })
            .collect::<Vec<_>>()
    };
    let results = |state: &AffinityFilterState| -> Vec<Result<(), AffinityFailure>> {
        nodes.iter().map(|n| state.filter(incoming, n)).collect()
    };
    let full = AffinityFilterState::compute(incoming, placed(None).into_iter(), &no_namespaces)
        .expect("a state");
    for (i, (pod, n)) in existing.iter().enumerate() {
        let without =
            AffinityFilterState::compute(incoming, placed(Some(i)).into_iter(), &no_namespaces)
                .map_or_else(|| vec![OK; nodes.len()], |s| results(&s));
        let mut state = full.clone();
        let pp = PlacedPod {
            pod,
            node: &nodes[*n],
        };
        state.update(incoming, pp, -1, &no_namespaces);
        assert_eq!(results(&state), without, "without existing pod {i}");
        state.update(incoming, pp, 1, &no_namespaces);
        assert_eq!(results(&state), results(&full), "existing pod {i} back");
    }
}

#[test]
fn updates_follow_removed_and_returned_pods() {
    let db = || pod_with("default", json!({"app": "db"}), json!(null));
    let web_anti_db = |key: &str| {
        pod_with(
            "default",
            json!({"app": "web"}),
            required(
                "podAntiAffinity",
                json!([term(json!({"matchLabels": {"app": "db"}}), key)]),
            ),
        )
    };
    // The incoming pod's own anti-affinity, per host and per zone.
    assert_update_matches_compute(&web_anti_db(HOST), &[(db(), 0), (db(), 2)]);
    assert_update_matches_compute(&web_anti_db(ZONE), &[(db(), 0), (db(), 1)]);
    // An existing pod's anti-affinity to the incoming pod.
    let web = pod_with("default", json!({"app": "web"}), json!(null));
    let db_anti_web = || {
        pod_with(
            "default",
            json!({"app": "db"}),
            required(
                "podAntiAffinity",
                json!([term(json!({"matchLabels": {"app": "web"}}), ZONE)]),
            ),
        )
    };
    assert_update_matches_compute(&web, &[(db_anti_web(), 1), (db(), 0)]);
    assert_update_matches_compute(&web, &[(db_anti_web(), 0), (db_anti_web(), 3)]);
    // Affinity to its own kind: once the only match leaves, the first-pod rule applies
    // again (the emptied count must be gone, not 0).
    let db_with_affinity = pod_with(
        "default",
        json!({"app": "db"}),
        required(
            "podAffinity",
            json!([term(json!({"matchLabels": {"app": "db"}}), ZONE)]),
        ),
    );
    assert_update_matches_compute(&db_with_affinity, &[(db(), 2)]);
}

/// Existing pods with the index of their node in `cluster()`.
type Existing = Vec<(Pod, usize)>;
type FilterCase = (
    &'static str,
    Pod,
    Existing,
    Option<Vec<Result<(), AffinityFailure>>>,
);
type ScoreCase = (&'static str, Pod, Existing, Option<Vec<i64>>);

#[test]
fn filter_table() {
    let db = || pod_with("default", json!({"app": "db"}), json!(null));
    let web = || pod_with("default", json!({"app": "web"}), json!(null));
    let affinity_to_db = |key: &str| {
        required(
            "podAffinity",
            json!([term(json!({"matchLabels": {"app": "db"}}), key)]),
        )
    };
    let anti_to_web = |key: &str| {
        required(
            "podAntiAffinity",
            json!([term(json!({"matchLabels": {"app": "web"}}), key)]),
        )
    };
    let cases: Vec<FilterCase> = vec![
        (
            "affinity satisfied in zone a only; n4 lacks the key",
            pod_with("default", json!({"app": "web"}), affinity_to_db(ZONE)),
            vec![(db(), 0)],
            Some(vec![
                OK,
                OK,
                Err(AffinityRulesNotMatch),
                Err(AffinityRulesNotMatch),
            ]),
        ),
        (
            "affinity by hostname",
            pod_with("default", json!({"app": "web"}), affinity_to_db(HOST)),
            vec![(db(), 1)],
            Some(vec![
                Err(AffinityRulesNotMatch),
                OK,
                Err(AffinityRulesNotMatch),
                Err(AffinityRulesNotMatch),
            ]),
        ),
        (
            "no db pod anywhere and the pod is not a db itself",
            pod_with("default", json!({"app": "web"}), affinity_to_db(ZONE)),
            vec![(web(), 0)],
            Some(vec![Err(AffinityRulesNotMatch); 4]),
        ),
        (
            "first pod of a self-affine group: allowed where the key exists",
            pod_with("default", json!({"app": "db"}), affinity_to_db(ZONE)),
            vec![(web(), 0)],
            Some(vec![OK, OK, OK, Err(AffinityRulesNotMatch)]),
        ),
        (
            "self-affine, but a matching pod exists: only its zone",
            pod_with("default", json!({"app": "db"}), affinity_to_db(ZONE)),
            vec![(db(), 2)],
            Some(vec![
                Err(AffinityRulesNotMatch),
                Err(AffinityRulesNotMatch),
                OK,
                Err(AffinityRulesNotMatch),
            ]),
        ),
        (
            "anti-affinity by zone; a node without the key passes",
            pod_with("default", json!({"app": "web"}), anti_to_web(ZONE)),
            vec![(web(), 0)],
            Some(vec![
                Err(AntiAffinityRulesNotMatch),
                Err(AntiAffinityRulesNotMatch),
                OK,
                OK,
            ]),
        ),
        (
            "anti-affinity by hostname",
            pod_with("default", json!({"app": "web"}), anti_to_web(HOST)),
            vec![(web(), 0)],
            Some(vec![Err(AntiAffinityRulesNotMatch), OK, OK, OK]),
        ),
        (
            "anti-affinity against another namespace's pod does not apply",
            pod_with("default", json!({"app": "web"}), anti_to_web(ZONE)),
            vec![(pod_with("other", json!({"app": "web"}), json!(null)), 0)],
            Some(vec![OK; 4]),
        ),
        (
            "existing pod's anti-affinity is symmetric",
            web(),
            vec![(
                pod_with("default", json!({"app": "x"}), anti_to_web(HOST)),
                0,
            )],
            Some(vec![Err(ExistingAntiAffinityRulesNotMatch), OK, OK, OK]),
        ),
        (
            "existing pod's anti-affinity by zone",
            web(),
            vec![(
                pod_with("default", json!({"app": "x"}), anti_to_web(ZONE)),
                2,
            )],
            Some(vec![OK, OK, Err(ExistingAntiAffinityRulesNotMatch), OK]),
        ),
        (
            "existing anti-affinity defaults to its own namespace",
            web(),
            vec![(pod_with("other", json!({"app": "x"}), anti_to_web(HOST)), 0)],
            None,
        ),
        ("nothing to check: skip", web(), vec![(db(), 0)], None),
        (
            "affinity checked before anti-affinity",
            pod_with(
                "default",
                json!({"app": "web"}),
                json!({
                    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        [term(json!({"matchLabels": {"app": "db"}}), ZONE)]},
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        [term(json!({"matchLabels": {"app": "web"}}), HOST)]}
                }),
            ),
            vec![(db(), 0), (web(), 1), (web(), 2)],
            Some(vec![
                OK,
                Err(AntiAffinityRulesNotMatch),
                Err(AffinityRulesNotMatch),
                Err(AffinityRulesNotMatch),
            ]),
        ),
    ];
    for (name, incoming, existing, want) in cases {
        assert_eq!(run(&incoming, &existing, &no_namespaces), want, "{name}");
    }
}

#[test]
fn affinity_needs_one_pod_matching_all_terms() {
    // Two terms: a pod must match both; one pod per term is not enough.
    let incoming = pod_with(
        "default",
        json!({}),
        required(
            "podAffinity",
            json!([
                term(json!({"matchLabels": {"app": "db"}}), ZONE),
                term(json!({"matchLabels": {"tier": "cache"}}), ZONE)
            ]),
        ),
    );
    let db = pod_with("default", json!({"app": "db"}), json!(null));
    let cache = pod_with("default", json!({"tier": "cache"}), json!(null));
    let both = pod_with(
        "default",
        json!({"app": "db", "tier": "cache"}),
        json!(null),
    );
    assert_eq!(
        run(&incoming, &[(db.clone(), 0), (cache, 0)], &no_namespaces),
        Some(vec![Err(AffinityRulesNotMatch); 4])
    );
    assert_eq!(
        run(&incoming, &[(db, 0), (both, 2)], &no_namespaces),
        Some(vec![
            Err(AffinityRulesNotMatch),
            Err(AffinityRulesNotMatch),
            OK,
            Err(AffinityRulesNotMatch)
        ])
    );
}

#[test]
fn namespace_selection() {
    let namespaces = |ns: &str| match ns {
        "team-a" => Some(BTreeMap::from([("team".to_owned(), "a".to_owned())])),
        "default" | "team-b" => Some(BTreeMap::new()),
        _ => None,
    };
    let anti = |extra: Value| {
        let mut t = term(json!({"matchLabels": {"app": "web"}}), HOST);
        if let (Some(t), Some(extra)) = (t.as_object_mut(), extra.as_object()) {
            t.extend(extra.clone());
        }
        pod_with(
            "default",
            json!({}),
            required("podAntiAffinity", json!([t])),
        )
    };
    let web_in = |ns: &str| pod_with(ns, json!({"app": "web"}), json!(null));
    let blocked = Some(vec![Err(AntiAffinityRulesNotMatch), OK, OK, OK]);
    let free = Some(vec![OK; 4]);
    let cases = [
        ("default namespace only", json!({}), "team-a", free.clone()),
        (
            "listed",
            json!({"namespaces": ["team-a"]}),
            "team-a",
            blocked.clone(),
        ),
        (
            "listed, other",
            json!({"namespaces": ["team-b"]}),
            "team-a",
            free.clone(),
        ),
        (
            "empty selector = all",
            json!({"namespaceSelector": {}}),
            "unknown",
            blocked.clone(),
        ),
        (
            "selector by labels",
            json!({"namespaceSelector": {"matchLabels": {"team": "a"}}}),
            "team-a",
            blocked.clone(),
        ),
        (
            "selector by labels, no match",
            json!({"namespaceSelector": {"matchLabels": {"team": "a"}}}),
            "team-b",
            free.clone(),
        ),
        (
            "selector never picks an unknown namespace",
            json!({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}}),
            "unknown",
            free.clone(),
        ),
        (
            "list and selector are OR-ed",
            json!({"namespaces": ["team-b"], "namespaceSelector": {"matchLabels": {"team": "a"}}}),
            "team-a",
            blocked.clone(),
        ),
    ];
    for (name, extra, existing_ns, want) in cases {
        assert_eq!(
            run(&anti(extra), &[(web_in(existing_ns), 0)], &namespaces),
            want,
            "{name}"
        );
    }

    // Existing pods' selectors see the incoming pod's namespace labels (empty if unknown).
    let existing = pod_with(
        "team-b",
        json!({}),
        required(
            "podAntiAffinity",
            json!([{
                "labelSelector": {"matchLabels": {"app": "web"}},
                "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]},
                "topologyKey": HOST
            }]),
        ),
    );
    assert_eq!(
        run(&web_in("unknown"), &[(existing.clone(), 0)], &namespaces),
        Some(vec![Err(ExistingAntiAffinityRulesNotMatch), OK, OK, OK])
    );
    assert_eq!(run(&web_in("team-a"), &[(existing, 0)], &namespaces), None);
}

#[test]
fn failure_reasons() {
    assert_eq!(
        AffinityRulesNotMatch.reason(),
        "node(s) didn't match pod affinity rules"
    );
    assert_eq!(
        AntiAffinityRulesNotMatch.reason(),
        "node(s) didn't match pod anti-affinity rules"
    );
    assert_eq!(
        ExistingAntiAffinityRulesNotMatch.reason(),
        "node(s) didn't satisfy existing pods anti-affinity rules"
    );
    assert!(AffinityRulesNotMatch.unresolvable());
    assert!(!AntiAffinityRulesNotMatch.unresolvable());
    assert!(!ExistingAntiAffinityRulesNotMatch.unresolvable());
}

fn preferred(kind: &str, terms: Value) -> Value {
    json!({kind: {"preferredDuringSchedulingIgnoredDuringExecution": terms}})
}

fn weighted(weight: i32, selector: Value, key: &str) -> Value {
    json!({"weight": weight, "podAffinityTerm": term(selector, key)})
}

#[test]
fn preferred_scores_table() {
    let db = || pod_with("default", json!({"app": "db"}), json!(null));
    let web = || pod_with("default", json!({"app": "web"}), json!(null));
    let cases: Vec<ScoreCase> = vec![
        (
            "preferred affinity to zone a",
            pod_with(
                "default",
                json!({}),
                preferred(
                    "podAffinity",
                    json!([weighted(10, json!({"matchLabels": {"app": "db"}}), ZONE)]),
                ),
            ),
            vec![(db(), 0)],
            Some(vec![100, 100, 0, 0]),
        ),
        (
            "preferred anti-affinity by hostname",
            pod_with(
                "default",
                json!({}),
                preferred(
                    "podAntiAffinity",
                    json!([weighted(5, json!({"matchLabels": {"app": "web"}}), HOST)]),
                ),
            ),
            vec![(web(), 0)],
            Some(vec![0, 100, 100, 100]),
        ),
        (
            "affinity and anti-affinity combine per domain",
            pod_with(
                "default",
                json!({}),
                json!({
                    "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
                        [weighted(10, json!({"matchLabels": {"app": "db"}}), ZONE)]},
                    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
                        [weighted(4, json!({"matchLabels": {"app": "web"}}), HOST)]}
                }),
            ),
            // raw: n1 = 10 − 4 = 6, n2 = 10, n3 = 0, n4 = 0 → min 0, max 10
            vec![(db(), 1), (web(), 0)],
            Some(vec![60, 100, 0, 0]),
        ),
        (
            "existing pod's preferred affinity is symmetric",
            web(),
            vec![(
                pod_with(
                    "default",
                    json!({}),
                    preferred(
                        "podAffinity",
                        json!([weighted(20, json!({"matchLabels": {"app": "web"}}), ZONE)]),
                    ),
                ),
                2,
            )],
            Some(vec![0, 0, 100, 0]),
        ),
        (
            "existing pod's preferred anti-affinity is symmetric",
            web(),
            vec![(
                pod_with(
                    "default",
                    json!({}),
                    preferred(
                        "podAntiAffinity",
                        json!([weighted(20, json!({"matchLabels": {"app": "web"}}), ZONE)]),
                    ),
                ),
                2,
            )],
            Some(vec![100, 100, 0, 100]),
        ),
        (
            "existing pod's required affinity counts with weight 1",
            web(),
            vec![(
                pod_with(
                    "default",
                    json!({}),
                    required(
                        "podAffinity",
                        json!([term(json!({"matchLabels": {"app": "web"}}), HOST)]),
                    ),
                ),
                3,
            )],
            Some(vec![0, 0, 0, 100]),
        ),
        (
            "nothing matches: skip",
            pod_with(
                "default",
                json!({}),
                preferred(
                    "podAffinity",
                    json!([weighted(10, json!({"matchLabels": {"app": "none"}}), ZONE)]),
                ),
            ),
            vec![(db(), 0), (web(), 1)],
            None,
        ),
        ("no terms anywhere: skip", web(), vec![(db(), 0)], None),
    ];
    let nodes = cluster();
    let candidates: Vec<&Node> = nodes.iter().collect();
    for (name, incoming, existing, want) in cases {
        let placed: Vec<PlacedPod<'_>> = existing
            .iter()
            .map(|(p, n)| PlacedPod {
                pod: p,
                node: &nodes[*n],
            })
            .collect();
        assert_eq!(
            preferred_affinity_scores(&incoming, &placed, &candidates, &no_namespaces),
            want,
            "{name}"
        );
    }
}

#[test]
fn preferred_scores_equal_raw_scores_normalise_to_zero() {
    let nodes = cluster();
    let incoming = pod_with(
        "default",
        json!({}),
        preferred(
            "podAffinity",
            json!([weighted(10, json!({"matchLabels": {"app": "db"}}), ZONE)]),
        ),
    );
    let db = pod_with("default", json!({"app": "db"}), json!(null));
    let placed = [PlacedPod {
        pod: &db,
        node: &nodes[0],
    }];
    // Only zone-a candidates: every raw score is 10.
    let candidates = [&nodes[0], &nodes[1]];
    assert_eq!(
        preferred_affinity_scores(&incoming, &placed, &candidates, &no_namespaces),
        Some(vec![0, 0])
    );
    assert_eq!(
        preferred_affinity_scores(&incoming, &placed, &[], &no_namespaces),
        None
    );
}
