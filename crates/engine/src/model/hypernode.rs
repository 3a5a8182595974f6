//! The network topology tree HyperNode objects describe (spec/kubernetes.md §5.5, the
//! `HyperNodes` of a snapshot in spec/framework.md §2.4; Volcano's
//! `pkg/scheduler/api/hyper_node_info.go`): each HyperNode's tier, parent and children, and the
//! real nodes under it.
//!
//! Volcano keeps the tree up to date one HyperNode event at a time, and marks it not ready while
//! the events so far describe something that is not a tree (a HyperNode claimed by two parents,
//! a cycle). Here the tree is built whole from the HyperNodes and nodes of the moment, which is
//! where Volcano's incremental updates end up once the objects describe a tree; while they do
//! not, the tree is not ready and says why ([`HyperNodeTree::problems`]).
//!
//! Members are resolved as Volcano resolves them: a node member by exact name (the name counts
//! whether or not such a node exists), by a regular expression that matches anywhere in the
//! node's name, or by labels (an empty label selector selects nothing); a HyperNode member by
//! exact name only. A HyperNode member that names a HyperNode not (yet) present is still its
//! child, with no nodes under it.

use std::collections::{BTreeMap, BTreeSet};

use apis::topology::{HyperNode, MemberSelector, member_type};

/// One HyperNode in the tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HyperNodeInfo {
    pub name: String,
    /// `spec.tier`; 0 for a name some HyperNode claims as a member but no object carries.
    pub tier: i32,
    pub tier_name: String,
    pub parent: Option<String>,
    pub children: BTreeSet<String>,
    /// The real nodes under it: its own node members and those of its descendants.
    pub nodes: BTreeSet<String>,
    /// Only named as a member: no HyperNode object of that name exists.
    pub placeholder: bool,
}

/// The HyperNode tree of a moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HyperNodeTree {
    hyper_nodes: BTreeMap<String, HyperNodeInfo>,
    /// Names of the existing HyperNodes by tier.
    by_tier: BTreeMap<i32, BTreeSet<String>>,
    problems: Vec<String>,
}

/// A node as member selectors see it: its name and labels.
pub type NodeLabels<'a> = (&'a str, &'a BTreeMap<String, String>);

/// The nodes a node-member selector picks (Volcano's `GetMembers`).
pub fn node_members(selector: &MemberSelector, nodes: &[NodeLabels<'_>]) -> BTreeSet<String> {
    let mut members = BTreeSet::new();
    if let Some(exact) = &selector.exact_match {
        if exact.name.is_empty() {
            return members;
        }
        members.insert(exact.name.clone());
    }
    if let Some(regex) = &selector.regex_match {
        // Go's regexp and the regex crate share RE2's syntax; a pattern that does not compile
        // selects nothing, as in Volcano.
        let Ok(re) = regex::Regex::new(&regex.pattern) else {
            return BTreeSet::new();
        };
        members.extend(
            nodes
                .iter()
                .filter(|(name, _)| re.is_match(name))
                .map(|(name, _)| name.to_string()),
        );
    }
    if let Some(selector) = &selector.label_match {
        if super::labels::selector_is_empty(selector) {
            return members;
        }
        members.extend(
            nodes
                .iter()
                .filter(|(_, labels)| super::labels::selector_matches(selector, labels))
                .map(|(name, _)| name.to_string()),
        );
    }
    members
}

impl HyperNodeTree {
    /// Builds the tree of these HyperNodes over these nodes.
    pub fn build<'a>(
        hyper_nodes: impl IntoIterator<Item = &'a HyperNode>,
        nodes: &[NodeLabels<'_>],
    ) -> HyperNodeTree {
        let mut tree = HyperNodeTree::default();
        let objects: BTreeMap<String, &HyperNode> = hyper_nodes
            .into_iter()
            .map(|hn| (hn.metadata.name.clone().unwrap_or_default(), hn))
            .collect();
        for (name, hn) in &objects {
            tree.hyper_nodes.insert(
                name.clone(),
                HyperNodeInfo {
                    name: name.clone(),
                    tier: hn.spec.tier,
                    tier_name: hn.spec.tier_name.clone(),
                    ..HyperNodeInfo::default()
                },
            );
            tree.by_tier
                .entry(hn.spec.tier)
                .or_default()
                .insert(name.clone());
        }
        for (name, hn) in &objects {
            for child in hyper_node_members(hn) {
                tree.adopt(name, child);
            }
        }
        if tree.problems.is_empty() {
            tree.find_cycles();
        }
        if tree.problems.is_empty() {
            let mut done = BTreeSet::new();
            for name in objects.keys() {
                tree.collect_nodes(name, &objects, nodes, &mut done);
            }
        }
        tree
    }

    /// Makes `child` a child of `parent`, or records why it cannot be.
    fn adopt(&mut self, parent: &str, child: &str) {
        let entry = self
            .hyper_nodes
            .entry(child.to_string())
            .or_insert_with(|| HyperNodeInfo {
                name: child.to_string(),
                placeholder: true,
                ..HyperNodeInfo::default()
            });
        match &entry.parent {
            Some(other) if other != parent => {
                self.problems.push(format!(
                    "HyperNode {child} is a member of both {other} and {parent}; a HyperNode has one parent"
                ));
                return;
            }
            _ => entry.parent = Some(parent.to_string()),
        }
        if let Some(p) = self.hyper_nodes.get_mut(parent) {
            p.children.insert(child.to_string());
        }
    }

    /// Records a cycle of parents, if any (a HyperNode that is its own ancestor).
    fn find_cycles(&mut self) {
        for name in self.hyper_nodes.keys() {
            let mut seen = BTreeSet::from([name.as_str()]);
            let mut at = name.as_str();
            while let Some(parent) = self.hyper_nodes.get(at).and_then(|h| h.parent.as_deref()) {
                if !seen.insert(parent) {
                    self.problems.push(format!(
                        "HyperNodes {} form a cycle",
                        seen.iter().copied().collect::<Vec<_>>().join(", ")
                    ));
                    return;
                }
                at = parent;
            }
        }
    }

    /// Fills `nodes` of `name` and of its descendants (the tree has no cycle here).
    fn collect_nodes(
        &mut self,
        name: &str,
        objects: &BTreeMap<String, &HyperNode>,
        nodes: &[NodeLabels<'_>],
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(name) {
            return;
        }
        let mut under = BTreeSet::new();
        if let Some(hn) = objects.get(name) {
            for member in &hn.spec.members {
                if member.type_ == member_type::NODE {
                    under.extend(node_members(&member.selector, nodes));
                }
            }
        }
        let children: Vec<String> = self
            .hyper_nodes
            .get(name)
            .map(|h| h.children.iter().cloned().collect())
            .unwrap_or_default();
        for child in children {
            self.collect_nodes(&child, objects, nodes, done);
            if let Some(c) = self.hyper_nodes.get(&child) {
                under.extend(c.nodes.iter().cloned());
            }
        }
        if let Some(h) = self.hyper_nodes.get_mut(name) {
            h.nodes = under;
        }
        done.insert(name.to_string());
    }

    /// True when the HyperNodes describe a tree; a tree that is not ready must not be used to
    /// place anything.
    pub fn is_ready(&self) -> bool {
        self.problems.is_empty()
    }

    /// Why the tree is not ready.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    pub fn get(&self, name: &str) -> Option<&HyperNodeInfo> {
        self.hyper_nodes.get(name)
    }

    /// Every HyperNode by name, placeholders included.
    pub fn hyper_nodes(&self) -> impl Iterator<Item = &HyperNodeInfo> {
        self.hyper_nodes.values()
    }

    /// The tiers of the existing HyperNodes, ascending.
    pub fn tiers(&self) -> Vec<i32> {
        self.by_tier.keys().copied().collect()
    }

    /// The existing HyperNodes of a tier.
    pub fn of_tier(&self, tier: i32) -> impl Iterator<Item = &str> {
        self.by_tier
            .get(&tier)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// Tier name → tier, for a PodGroup's `highestTierName`.
    pub fn tier_names(&self) -> BTreeMap<&str, i32> {
        self.hyper_nodes
            .values()
            .filter(|h| !h.placeholder && !h.tier_name.is_empty())
            .map(|h| (h.tier_name.as_str(), h.tier))
            .collect()
    }

    /// `name`, then its parent, grandparent, … up to its root (Volcano's `GetAncestors`).
    pub fn ancestors<'a>(&'a self, name: &'a str) -> Vec<&'a str> {
        let mut chain = vec![name];
        let mut at = name;
        while let Some(parent) = self.hyper_nodes.get(at).and_then(|h| h.parent.as_deref()) {
            if chain.contains(&parent) {
                break;
            }
            chain.push(parent);
            at = parent;
        }
        chain
    }

    /// The lowest HyperNode that has both `a` and `b` under it or is one of them (Volcano's
    /// `GetLCAHyperNode`, where an empty name stands for "none yet": the other one is the
    /// answer). `None` when they are in different trees.
    pub fn lowest_common_ancestor<'a>(&'a self, a: &'a str, b: &'a str) -> Option<&'a str> {
        if a.is_empty() {
            return Some(b);
        }
        if b.is_empty() {
            return Some(a);
        }
        let of_a: BTreeSet<&str> = self.ancestors(a).into_iter().collect();
        self.ancestors(b).into_iter().find(|x| of_a.contains(x))
    }

    /// The HyperNodes without HyperNode members at or below `name` (Volcano's `GetLeafNodes`).
    pub fn leaves(&self, name: &str) -> BTreeSet<&str> {
        let mut leaves = BTreeSet::new();
        let mut stack = vec![name];
        let mut seen = BTreeSet::new();
        while let Some(at) = stack.pop() {
            let Some(h) = self.hyper_nodes.get(at) else {
                continue;
            };
            if !seen.insert(at) {
                continue;
            }
            if h.children.is_empty() {
                leaves.insert(h.name.as_str());
            } else {
                stack.extend(h.children.iter().map(String::as_str));
            }
        }
        leaves
    }
}

/// What of a HyperNode the tree does not use as written, one line per problem starting with
/// the field path (reported as events on the HyperNode, as Volcano only logs them): a name
/// pattern that does not compile selects nothing, and a HyperNode member is chosen by exact
/// name only.
pub fn value_problems(hn: &HyperNode) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, member) in hn.spec.members.iter().enumerate() {
        let at = format!("spec.members[{i}].selector");
        let sel = &member.selector;
        if member.type_ == member_type::HYPER_NODE {
            if sel.regex_match.is_some() || sel.label_match.is_some() {
                problems.push(format!(
                    "{at}: a HyperNode member is chosen by exactMatch only; this member is ignored"
                ));
            }
            continue;
        }
        if let Some(regex) = &sel.regex_match
            && let Err(e) = regex::Regex::new(&regex.pattern)
        {
            let first = e.to_string().lines().last().unwrap_or_default().to_string();
            problems.push(format!(
                "{at}.regexMatch.pattern: {:?} does not compile ({}); it selects no node",
                regex.pattern,
                first.trim()
            ));
        }
    }
    problems
}

/// The HyperNode members of a HyperNode, by exact name (the only selector Volcano honours for
/// them).
fn hyper_node_members(hn: &HyperNode) -> impl Iterator<Item = &str> {
    hn.spec
        .members
        .iter()
        .filter(|m| m.type_ == member_type::HYPER_NODE)
        .filter_map(|m| m.selector.exact_match.as_ref())
        .map(|e| e.name.as_str())
        .filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests;
