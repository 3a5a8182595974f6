//! Cases of Volcano's `hyper_node_info_test.go` and `member_selector_test.go`, on the whole-tree
//! build: where Volcano applies events one by one, the same objects are given at once.

use super::*;
use serde_json::{Value, json};

fn hyper_node(name: &str, tier: i32, members: &[(&str, &str)]) -> HyperNode {
    let members: Vec<Value> = members
        .iter()
        .map(|(member, ty)| json!({"type": ty, "selector": {"exactMatch": {"name": member}}}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name}, "spec": {"tier": tier, "members": members}
    }))
    .expect("hypernode")
}

fn nodes_of(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn parent(tree: &HyperNodeTree, name: &str) -> Option<String> {
    tree.get(name).and_then(|h| h.parent.clone())
}

const N: &str = member_type::NODE;
const H: &str = member_type::HYPER_NODE;

#[test]
fn two_leaves_under_one_spine() {
    let s0 = hyper_node("s0", 1, &[("node-0", N), ("node-1", N)]);
    let s1 = hyper_node("s1", 1, &[("node-2", N), ("node-3", N)]);
    let s2 = hyper_node("s2", 2, &[("s1", H), ("s0", H)]);
    let tree = HyperNodeTree::build([&s2, &s0, &s1], &[]);
    assert!(tree.is_ready(), "{:?}", tree.problems());
    assert_eq!(parent(&tree, "s0").as_deref(), Some("s2"));
    assert_eq!(parent(&tree, "s1").as_deref(), Some("s2"));
    assert_eq!(parent(&tree, "s2"), None);
    assert_eq!(
        tree.get("s0").map(|h| &h.nodes),
        Some(&nodes_of(&["node-0", "node-1"]))
    );
    assert_eq!(
        tree.get("s1").map(|h| &h.nodes),
        Some(&nodes_of(&["node-2", "node-3"]))
    );
    assert_eq!(
        tree.get("s2").map(|h| &h.nodes),
        Some(&nodes_of(&["node-0", "node-1", "node-2", "node-3"]))
    );
    assert_eq!(tree.tiers(), vec![1, 2]);
    assert_eq!(tree.of_tier(1).collect::<Vec<_>>(), vec!["s0", "s1"]);
    assert_eq!(tree.of_tier(2).collect::<Vec<_>>(), vec!["s2"]);
}

#[test]
fn a_cycle_is_not_a_tree_until_it_is_corrected() {
    let s0 = hyper_node("s0", 1, &[("node-0", N), ("node-1", N)]);
    let s1 = hyper_node("s1", 2, &[("s0", H), ("s3", H)]);
    let s2 = hyper_node("s2", 3, &[("s1", H)]);
    let s3 = hyper_node("s3", 4, &[("s2", H)]);
    let tree = HyperNodeTree::build([&s2, &s0, &s1, &s3], &[]);
    assert!(!tree.is_ready());
    assert!(
        tree.problems()[0].contains("cycle"),
        "{:?}",
        tree.problems()
    );

    let s1 = hyper_node("s1", 2, &[("s0", H)]);
    let tree = HyperNodeTree::build([&s2, &s0, &s1, &s3], &[]);
    assert!(tree.is_ready(), "{:?}", tree.problems());
    for (child, want) in [
        ("s0", Some("s1")),
        ("s1", Some("s2")),
        ("s2", Some("s3")),
        ("s3", None),
    ] {
        assert_eq!(parent(&tree, child).as_deref(), want, "parent of {child}");
        assert_eq!(
            tree.get(child).map(|h| &h.nodes),
            Some(&nodes_of(&["node-0", "node-1"]))
        );
    }
}

#[test]
fn a_hypernode_with_two_parents_is_not_a_tree_until_one_lets_go() {
    let s0 = hyper_node("s0", 1, &[("node-0", N), ("node-1", N)]);
    let s1 = hyper_node("s1", 2, &[("s0", H)]);
    let s2 = hyper_node("s2", 3, &[("s0", H)]);
    let tree = HyperNodeTree::build([&s0, &s1, &s2], &[]);
    assert!(!tree.is_ready());
    assert!(tree.problems()[0].contains("s0"), "{:?}", tree.problems());

    let s2 = hyper_node("s2", 3, &[("s1", H)]);
    let tree = HyperNodeTree::build([&s0, &s1, &s2], &[]);
    assert!(tree.is_ready(), "{:?}", tree.problems());
    assert_eq!(parent(&tree, "s0").as_deref(), Some("s1"));
    assert_eq!(parent(&tree, "s1").as_deref(), Some("s2"));
    assert_eq!(
        tree.get("s2").map(|h| &h.nodes),
        Some(&nodes_of(&["node-0", "node-1"]))
    );
}

#[test]
fn leaves_ancestors_and_lowest_common_ancestors() {
    let s0 = hyper_node("s0", 1, &[("node-0", N), ("node-1", N)]);
    let s1 = hyper_node("s1", 1, &[("node-0", N), ("node-1", N)]);
    let s2 = hyper_node("s2", 2, &[("s0", H), ("s1", H)]);
    let s3 = hyper_node("s3", 3, &[("s2", H)]);
    let s4 = hyper_node("s4", 4, &[("s3", H)]);
    let tree = HyperNodeTree::build([&s0, &s4, &s1, &s2, &s3], &[]);
    assert_eq!(tree.ancestors("s0"), vec!["s0", "s2", "s3", "s4"]);
    assert_eq!(tree.ancestors("s2"), vec!["s2", "s3", "s4"]);
    assert_eq!(tree.ancestors("s4"), vec!["s4"]);
    assert_eq!(tree.leaves("s3"), BTreeSet::from(["s0", "s1"]));

    // Volcano's LCA cases: siblings, no common ancestor, one above the other, the same name,
    // and "none yet" on either side.
    let hn = |name: &str, tier, members: &[(&str, &str)]| hyper_node(name, tier, members);
    let objects = [
        hn("s0", 1, &[("node-0", N), ("node-1", N)]),
        hn("s1", 1, &[("node-2", N), ("node-3", N)]),
        hn("s2", 1, &[("node-4", N), ("node-5", N)]),
        hn("s3", 1, &[("node-6", N), ("node-7", N)]),
        hn("s4", 2, &[("s0", H), ("s1", H)]),
        hn("s5", 2, &[("s2", H), ("s3", H)]),
        hn("s6", 3, &[("s4", H), ("s5", H)]),
        hn("s-orphan", 1, &[("node-8", N), ("node-9", N)]),
    ];
    let tree = HyperNodeTree::build(&objects, &[]);
    assert_eq!(tree.lowest_common_ancestor("s0", "s1"), Some("s4"));
    assert_eq!(tree.lowest_common_ancestor("s0", "s2"), Some("s6"));
    assert_eq!(tree.lowest_common_ancestor("s0", "s-orphan"), None);
    assert_eq!(tree.lowest_common_ancestor("s4", "s0"), Some("s4"));
    assert_eq!(tree.lowest_common_ancestor("node6", "node6"), Some("node6"));
    assert_eq!(tree.lowest_common_ancestor("", "s3"), Some("s3"));
    assert_eq!(tree.lowest_common_ancestor("s3", ""), Some("s3"));
}

#[test]
fn a_member_named_before_its_object_exists_is_a_child_without_nodes() {
    let s2 = hyper_node("s2", 2, &[("s0", H), ("s1", H)]);
    let s0 = hyper_node("s0", 1, &[("node-0", N)]);
    let tree = HyperNodeTree::build([&s2, &s0], &[]);
    assert!(tree.is_ready());
    let s1 = tree.get("s1").expect("placeholder");
    assert!(s1.placeholder && s1.nodes.is_empty());
    assert_eq!(s1.parent.as_deref(), Some("s2"));
    assert_eq!(tree.of_tier(1).collect::<Vec<_>>(), vec!["s0"]);
    assert_eq!(
        tree.get("s2").map(|h| &h.nodes),
        Some(&nodes_of(&["node-0"]))
    );
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn selector(v: Value) -> MemberSelector {
    serde_json::from_value(v).expect("selector")
}

#[test]
fn node_members_by_name_pattern_and_labels() {
    let worker = labels(&[("role", "worker")]);
    let master = labels(&[("role", "master")]);
    let nodes: Vec<NodeLabels<'_>> = vec![("node1", &worker), ("node2", &master)];
    let members = |v: Value| node_members(&selector(v), &nodes);
    let set = |names: &[&str]| nodes_of(names);
    // Volcano's GetMembers cases.
    assert_eq!(
        members(json!({"labelMatch": {"matchLabels": {"role": "worker"}}})),
        set(&["node1"])
    );
    assert_eq!(
        members(json!({"labelMatch": {"matchLabels": {"role": "invalid-role"}}})),
        set(&[])
    );
    assert_eq!(members(json!({})), set(&[]));
    assert_eq!(
        members(json!({"labelMatch": {}})),
        set(&[]),
        "an empty label selector selects nothing"
    );
    let expr = |op: &str, values: Value| json!({"labelMatch": {"matchExpressions": [{"key": "role", "operator": op, "values": values}]}});
    assert_eq!(members(expr("In", json!(["worker"]))), set(&["node1"]));
    assert_eq!(members(expr("In", json!(["other"]))), set(&[]));
    assert_eq!(members(expr("NotIn", json!(["worker"]))), set(&["node2"]));
    assert_eq!(
        members(expr("Exists", json!(null))),
        set(&["node1", "node2"])
    );
    assert_eq!(members(expr("DoesNotExist", json!(null))), set(&[]));
    // A pattern matches anywhere in the name; one that does not compile selects nothing.
    assert_eq!(
        members(json!({"regexMatch": {"pattern": "2$"}})),
        set(&["node2"])
    );
    assert_eq!(
        members(json!({"regexMatch": {"pattern": "node"}})),
        set(&["node1", "node2"])
    );
    assert_eq!(
        members(json!({"regexMatch": {"pattern": "node[("}})),
        set(&[])
    );
    // An exact name counts whether or not the node exists; an empty one selects nothing.
    assert_eq!(
        members(json!({"exactMatch": {"name": "node9"}})),
        set(&["node9"])
    );
    assert_eq!(members(json!({"exactMatch": {"name": ""}})), set(&[]));
}

#[test]
fn regex_and_label_members_follow_the_nodes_of_the_moment() {
    let rack_a = labels(&[("rack", "a")]);
    let rack_b = labels(&[("rack", "b")]);
    let leaf = |name: &str, sel: Value| -> HyperNode {
        serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": sel}]}}))
        .expect("hypernode")
    };
    let by_name = leaf("by-name", json!({"regexMatch": {"pattern": "^gpu-"}}));
    let by_rack = leaf(
        "by-rack",
        json!({"labelMatch": {"matchLabels": {"rack": "a"}}}),
    );
    let spine = hyper_node("spine", 2, &[("by-name", H), ("by-rack", H)]);
    let nodes = [("gpu-0", &rack_b), ("cpu-0", &rack_a)];
    let tree = HyperNodeTree::build([&by_name, &by_rack, &spine], &nodes);
    assert_eq!(
        tree.get("by-name").map(|h| &h.nodes),
        Some(&nodes_of(&["gpu-0"]))
    );
    assert_eq!(
        tree.get("by-rack").map(|h| &h.nodes),
        Some(&nodes_of(&["cpu-0"]))
    );
    let more = [("gpu-0", &rack_b), ("cpu-0", &rack_a), ("gpu-1", &rack_a)];
    let tree = HyperNodeTree::build([&by_name, &by_rack, &spine], &more);
    assert_eq!(
        tree.get("spine").map(|h| &h.nodes),
        Some(&nodes_of(&["cpu-0", "gpu-0", "gpu-1"]))
    );
}

#[test]
fn tier_names_map_to_tiers() {
    let mut s0 = hyper_node("s0", 1, &[("node-0", N)]);
    s0.spec.tier_name = "leaf".into();
    let mut s1 = hyper_node("s1", 2, &[("s0", H)]);
    s1.spec.tier_name = "spine".into();
    let tree = HyperNodeTree::build([&s0, &s1], &[]);
    assert_eq!(
        tree.tier_names(),
        BTreeMap::from([("leaf", 1), ("spine", 2)])
    );
}

#[test]
fn members_the_tree_cannot_use_are_named() {
    let hn: HyperNode = serde_json::from_value(json!({
        "metadata": {"name": "s0"},
        "spec": {"tier": 2, "members": [
            {"type": "Node", "selector": {"regexMatch": {"pattern": "node[("}}},
            {"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[0-9]+$"}}},
            {"type": "HyperNode", "selector": {"regexMatch": {"pattern": "^s"}}},
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "s1"}}}
        ]}
    }))
    .expect("hypernode");
    let problems = value_problems(&hn);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with(
            "spec.members[0].selector.regexMatch.pattern: \"node[(\" does not compile"
        )
    );
    assert!(
        problems[1].starts_with(
            "spec.members[2].selector: a HyperNode member is chosen by exactMatch only"
        )
    );
}
