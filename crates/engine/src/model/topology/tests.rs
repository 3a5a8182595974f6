use std::collections::BTreeMap;

use apis::topology::HyperNode;

use super::*;
use crate::model::hypernode::HyperNodeTree;

fn hyper_node(name: &str, tier: i32, nodes: &[&str], children: &[&str]) -> HyperNode {
    let mut members: Vec<serde_json::Value> = nodes
        .iter()
        .map(|n| serde_json::json!({"type": "Node", "selector": {"exactMatch": {"name": n}}}))
        .collect();
    members.extend(children.iter().map(
        |c| serde_json::json!({"type": "HyperNode", "selector": {"exactMatch": {"name": c}}}),
    ));
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"tier": tier, "tierName": format!("t{tier}"), "members": members},
    }))
    .expect("hypernode")
}

/// s2 (tier 2) over s0 {n1, n2} and s1 {n3, n4}; n5 belongs to no HyperNode.
fn two_tiers() -> SessionTopology {
    let objects = [
        hyper_node("s0", 1, &["n1", "n2"], &[]),
        hyper_node("s1", 1, &["n3", "n4"], &[]),
        hyper_node("s2", 2, &[], &["s0", "s1"]),
    ];
    let labels = BTreeMap::new();
    let names = ["n1", "n2", "n3", "n4", "n5"];
    let nodes: Vec<_> = names.iter().map(|n| (*n, &labels)).collect();
    let tree = HyperNodeTree::build(objects.iter(), &nodes);
    SessionTopology::build(&tree, &names)
}

#[test]
fn the_root_sits_above_the_highest_tier_and_holds_every_node() {
    let t = two_tiers();
    let root = t.root();
    assert_eq!(t.name(root), CLUSTER_TOP_HYPER_NODE);
    assert_eq!(t.tier(root), 3);
    assert_eq!(t.tiers(), &[1, 2, 3]);
    assert_eq!(t.nodes(root).len(), 5);
    assert_eq!(t.children(root), &[t.id("s2").unwrap()]);
    assert!(t.is_ready());
}

#[test]
fn lowest_hyper_node_of_a_node_and_common_ancestors() {
    let t = two_tiers();
    let id = |n: &str| t.id(n).unwrap();
    assert_eq!(t.lowest_of_node(NodeId::from_index(0)), Some(id("s0")));
    assert_eq!(t.lowest_of_node(NodeId::from_index(3)), Some(id("s1")));
    assert_eq!(t.lowest_of_node(NodeId::from_index(4)), Some(t.root()));
    assert_eq!(t.lca(Some(id("s0")), Some(id("s1"))), Some(id("s2")));
    assert_eq!(t.lca(None, Some(id("s1"))), Some(id("s1")));
    assert_eq!(t.lca(Some(id("s0")), None), Some(id("s0")));
    assert_eq!(t.lca(Some(id("s0")), Some(t.root())), Some(t.root()));
    assert_eq!(t.ancestors(id("s0")), vec![id("s0"), id("s2"), t.root()]);
}

#[test]
fn soft_becomes_hard_up_to_the_root_and_tier_names_are_translated() {
    let t = two_tiers();
    let soft = apis::NetworkTopologySpec {
        mode: "soft".into(),
        highest_tier_allowed: Some(1),
        highest_tier_name: String::new(),
    };
    let c = t.constraint_of(&soft);
    assert_eq!(c.hard_tier(), Some(3));
    let named = apis::NetworkTopologySpec {
        mode: "hard".into(),
        highest_tier_allowed: None,
        highest_tier_name: "t2".into(),
    };
    assert_eq!(t.constraint_of(&named).hard_tier(), Some(2));
    let unknown = apis::NetworkTopologySpec {
        mode: "hard".into(),
        highest_tier_allowed: None,
        highest_tier_name: "spine".into(),
    };
    let c = t.constraint_of(&unknown);
    assert_eq!(c.hard_tier(), None);
    assert_eq!(c.untranslated_tier_name.as_deref(), Some("spine"));
    // A mode other than hard or soft (an object written without the API server's default) is
    // neither: no hard constraint.
    let blank = apis::NetworkTopologySpec {
        mode: String::new(),
        highest_tier_allowed: Some(1),
        highest_tier_name: String::new(),
    };
    assert_eq!(t.constraint_of(&blank).hard_tier(), None);
}

#[test]
fn without_hyper_nodes_the_root_alone_has_tier_one() {
    let names = ["n1"];
    let t = SessionTopology::build(&HyperNodeTree::default(), &names);
    assert_eq!(t.tiers(), &[1]);
    assert!(!t.has_hyper_nodes());
    assert_eq!(t.lowest_of_node(NodeId::from_index(0)), Some(t.root()));
}
