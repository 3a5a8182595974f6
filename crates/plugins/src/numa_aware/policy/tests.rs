//! Volcano's `policy_*_test.go` cases (same inputs, same expected best hint, on NUMA nodes
//! `[0, 1]`), plus the admission results and the nil / empty hint semantics.

use super::*;

/// A hint on the given NUMA ids.
fn h(nodes: &[u32], preferred: bool) -> TopologyHint {
    TopologyHint {
        affinity: Some(NumaMask::of(nodes)),
        preferred,
    }
}

/// A provider reporting `hints` for one resource.
fn provider(
    resource: &str,
    hints: Option<Vec<TopologyHint>>,
) -> BTreeMap<String, Option<Vec<TopologyHint>>> {
    BTreeMap::from([(resource.to_string(), hints)])
}

/// The usual two providers of the Go tests: `cpu` then `gpu`.
fn cpu_gpu(
    cpu: Vec<TopologyHint>,
    gpu: Vec<TopologyHint>,
) -> Vec<BTreeMap<String, Option<Vec<TopologyHint>>>> {
    vec![provider("cpu", Some(cpu)), provider("gpu", Some(gpu))]
}

/// The six shared cases of the best-effort / restricted tests (test-1 … test-6), and for
/// single-numa-node the first five.
fn go_cases() -> Vec<Vec<BTreeMap<String, Option<Vec<TopologyHint>>>>> {
    vec![
        cpu_gpu(
            vec![h(&[0, 1], false), h(&[0], true)],
            vec![h(&[0, 1], false), h(&[0], true)],
        ),
        cpu_gpu(
            vec![h(&[0, 1], false), h(&[1], true)],
            vec![h(&[0, 1], false), h(&[1], true)],
        ),
        cpu_gpu(
            vec![h(&[0, 1], false), h(&[0], true), h(&[1], true)],
            vec![h(&[0, 1], false), h(&[0], true), h(&[1], true)],
        ),
        cpu_gpu(
            vec![h(&[0, 1], false), h(&[0], true)],
            vec![h(&[0, 1], false), h(&[1], true)],
        ),
        cpu_gpu(
            vec![h(&[0, 1], false), h(&[0], true)],
            vec![h(&[0, 1], true)],
        ),
        cpu_gpu(vec![h(&[0, 1], true)], vec![h(&[0, 1], true)]),
    ]
}

fn check(policy: Policy, expected: &[(TopologyHint, bool)]) {
    for (i, (hints, want)) in go_cases().iter().zip(expected).enumerate() {
        assert_eq!(
            predicate(policy, &[0, 1], hints),
            *want,
            "{policy:?} test-{}",
            i + 1
        );
    }
}

#[test]
fn none_go_test() {
    // Test_none_predicate: no providers → the zero hint; none always admits.
    let none = TopologyHint {
        affinity: None,
        preferred: false,
    };
    assert_eq!(predicate(Policy::None, &[0, 1], &[]), (none, true));
    for hints in go_cases() {
        assert_eq!(predicate(Policy::None, &[0, 1], &hints), (none, true));
    }
}

#[test]
fn best_effort_go_test() {
    check(
        Policy::BestEffort,
        &[
            (h(&[0], true), true),
            (h(&[1], true), true),
            (h(&[0], true), true),
            (h(&[0], false), true),
            (h(&[0], true), true),
            (h(&[0, 1], true), true),
        ],
    );
}

#[test]
fn restricted_go_test() {
    check(
        Policy::Restricted,
        &[
            (h(&[0], true), true),
            (h(&[1], true), true),
            (h(&[0], true), true),
            (h(&[0], false), false),
            (h(&[0], true), true),
            (h(&[0, 1], true), true),
        ],
    );
}

#[test]
fn single_numa_node_go_test() {
    check(
        Policy::SingleNumaNode,
        &[
            (h(&[0], true), true),
            (h(&[1], true), true),
            (h(&[0], true), true),
            (h(&[0, 1], false), false),
            (h(&[0, 1], false), false),
        ],
    );
}

#[test]
fn single_numa_node_keeps_only_single_or_any() {
    // The two-NUMA preferred hint is dropped; the any-NUMA one stays.
    let hints = vec![
        provider("cpu", Some(vec![h(&[0, 1], true), h(&[1], true)])),
        provider("gpu", None),
    ];
    assert_eq!(
        predicate(Policy::SingleNumaNode, &[0, 1], &hints),
        (h(&[1], true), true)
    );
    assert_eq!(
        predicate(Policy::Restricted, &[0, 1], &hints),
        (h(&[1], true), true)
    );
    let wide_only = vec![provider("cpu", Some(vec![h(&[0, 1], true)]))];
    assert_eq!(
        predicate(Policy::SingleNumaNode, &[0, 1], &wide_only),
        (h(&[0, 1], false), false)
    );
}

#[test]
fn no_preference_gives_all_numa_nodes_preferred() {
    // An empty provider map, a nil resource, or no provider at all: any-NUMA, preferred.
    for hints in [vec![BTreeMap::new()], vec![provider("cpu", None)], vec![]] {
        for policy in [
            Policy::BestEffort,
            Policy::Restricted,
            Policy::SingleNumaNode,
        ] {
            assert_eq!(
                predicate(policy, &[0, 1, 3], &hints),
                (h(&[0, 1, 3], true), true),
                "{policy:?} {hints:?}"
            );
        }
    }
}

#[test]
fn no_possible_affinity_is_not_preferred() {
    // `Some(empty)`: a non-preferred any-NUMA hint; restricted rejects, best-effort admits.
    let hints = vec![provider("cpu", Some(vec![]))];
    assert_eq!(
        predicate(Policy::BestEffort, &[0, 1], &hints),
        (h(&[0, 1], false), true)
    );
    assert_eq!(
        predicate(Policy::Restricted, &[0, 1], &hints),
        (h(&[0, 1], false), false)
    );
    assert_eq!(
        predicate(Policy::SingleNumaNode, &[0, 1], &hints),
        (h(&[0, 1], false), false)
    );
}

#[test]
fn disjoint_hints_and_narrowest_preferred() {
    // Only the cross choices overlap; the narrowest preferred merge wins, lower ids first.
    let hints = cpu_gpu(
        vec![h(&[0], true), h(&[1, 2], true), h(&[0, 1, 2], false)],
        vec![h(&[2], true), h(&[1], true), h(&[0, 1, 2], false)],
    );
    assert_eq!(
        predicate(Policy::Restricted, &[0, 1, 2], &hints),
        (h(&[1], true), true)
    );
    // Nothing overlaps at all: the default non-preferred hint over every NUMA node.
    let hints = cpu_gpu(vec![h(&[0], true)], vec![h(&[1], true)]);
    assert_eq!(
        predicate(Policy::BestEffort, &[0, 1], &hints),
        (h(&[0, 1], false), true)
    );
}

#[test]
fn hints_outside_the_node_are_masked() {
    // Affinities are ANDed with the node's NUMA ids.
    let hints = vec![provider("cpu", Some(vec![h(&[1, 5], true)]))];
    assert_eq!(
        predicate(Policy::BestEffort, &[0, 1], &hints),
        (h(&[1], true), true)
    );
    // No NUMA ids at all: every merge is empty, so the (empty) default stays.
    assert_eq!(
        predicate(Policy::Restricted, &[], &[BTreeMap::new()]),
        (h(&[], false), false)
    );
}

#[test]
fn policy_names() {
    for p in [
        Policy::None,
        Policy::BestEffort,
        Policy::Restricted,
        Policy::SingleNumaNode,
    ] {
        assert_eq!(Policy::parse(p.as_str()), Some(p));
    }
    assert_eq!(Policy::parse(""), None);
    assert_eq!(Policy::parse("Restricted"), None);
    assert_eq!(Policy::parse("single-numa"), None);
}
