//! The session's view of the network topology (spec/framework.md §2.4–§2.5 items 4–7): the
//! HyperNode tree of the snapshot over the session's nodes, under one virtual root HyperNode
//! that holds every node, and each job's network-topology constraint as the session uses it.
//!
//! HyperNodes are numbered ([`HyperNodeId`]) so that the actions and plugins compare and index
//! them without strings; the root is the last one. "No HyperNode yet" (Volcano's empty name) is
//! `None`.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::hypernode::HyperNodeTree;
use super::{NodeId, Resource};

/// The name Volcano gives the virtual root HyperNode.
pub const CLUSTER_TOP_HYPER_NODE: &str = "<cluster-top-hypernode>";

/// A HyperNode of the session.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HyperNodeId(u32);

impl HyperNodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a gradient search is for (Volcano's `SearchPurpose`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SearchPurpose {
    Allocate,
    Evict,
}

/// What a gradient search is asked for: the job, the HyperNode to search under, where the job
/// (or its sub-job) already runs, what it needs at least, and what for.
#[derive(Clone, Copy, Debug)]
pub struct GradientQuery<'a> {
    pub job: super::JobId,
    /// The highest tier the job's (or sub-job's) hard constraint allows; `None`: no hard
    /// constraint, so the start HyperNode alone.
    pub hard_tier: Option<i64>,
    pub start: HyperNodeId,
    pub allocated: Option<HyperNodeId>,
    pub min_resource: &'a Resource,
    pub purpose: SearchPurpose,
}

/// A job's network-topology constraint after the session's normalisation (§2.5 item 6): a
/// tier name is turned into its tier, and soft mode into hard mode up to the root's tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyConstraint {
    /// The mode as the session uses it: `hard`, or (only when no root exists, never in a
    /// session) `soft`, or whatever else the PodGroup says (Volcano then treats it as neither).
    pub mode: String,
    pub highest_tier_allowed: Option<i64>,
    /// A tier name that names no tier (left untranslated, with a warning).
    pub untranslated_tier_name: Option<String>,
}

impl TopologyConstraint {
    /// `IsHardTopologyMode`: hard mode with a highest allowed tier, and that tier.
    pub fn hard_tier(&self) -> Option<i64> {
        (self.mode == apis::network_topology_mode::HARD)
            .then_some(self.highest_tier_allowed)
            .flatten()
    }
}

#[derive(Clone, Debug)]
struct Entry {
    name: String,
    tier: i32,
    parent: Option<HyperNodeId>,
    children: Vec<HyperNodeId>,
    /// The session nodes under it, in node order.
    nodes: Vec<NodeId>,
}

/// See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct SessionTopology {
    entries: Vec<Entry>,
    by_name: FxHashMap<String, HyperNodeId>,
    /// Tiers ascending, the root's included.
    tiers: Vec<i32>,
    by_tier: BTreeMap<i32, Vec<HyperNodeId>>,
    tier_names: BTreeMap<String, i32>,
    /// Per node index: the HyperNodes holding it, one per tier (the first of the tier's list),
    /// lowest tier first; filled only when real HyperNodes exist (else the root alone holds
    /// every node).
    holding: Vec<Vec<HyperNodeId>>,
    ready: bool,
}

impl SessionTopology {
    /// The tree over the session's nodes (`node_names[i]` is node `i`), plus the root.
    pub fn build(tree: &HyperNodeTree, node_names: &[&str]) -> SessionTopology {
        // Without HyperNodes (most clusters) no node needs looking up by name.
        let index_of: FxHashMap<&str, NodeId> = if tree.hyper_nodes().next().is_none() {
            FxHashMap::default()
        } else {
            node_names
                .iter()
                .enumerate()
                .map(|(i, n)| (*n, NodeId::from_index(i)))
                .collect()
        };
        let mut topo = SessionTopology {
            ready: tree.is_ready(),
            ..SessionTopology::default()
        };
        // Placeholders (named as members, no object) take no part: nothing is placed by them.
        let real: Vec<_> = tree.hyper_nodes().filter(|h| !h.placeholder).collect();
        for h in &real {
            let id = HyperNodeId(topo.entries.len() as u32);
            topo.by_name.insert(h.name.clone(), id);
            let mut nodes: Vec<NodeId> = h
                .nodes
                .iter()
                .filter_map(|n| index_of.get(n.as_str()).copied())
                .collect();
            nodes.sort_unstable();
            topo.entries.push(Entry {
                name: h.name.clone(),
                tier: h.tier,
                parent: None,
                children: Vec::new(),
                nodes,
            });
            if !h.tier_name.is_empty() {
                topo.tier_names.insert(h.tier_name.clone(), h.tier);
            }
        }
        let top_tier = real.iter().map(|h| h.tier + 1).max().unwrap_or(1).max(1);
        let root = HyperNodeId(topo.entries.len() as u32);
        for h in &real {
            let id = topo.by_name[&h.name];
            let parent = h
                .parent
                .as_deref()
                .and_then(|p| topo.by_name.get(p).copied())
                .unwrap_or(root);
            topo.entries[id.index()].parent = Some(parent);
            if parent != root {
                topo.entries[parent.index()].children.push(id);
            }
        }
        let top_level: Vec<HyperNodeId> = topo
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.parent == Some(root))
            .map(|(i, _)| HyperNodeId(i as u32))
            .collect();
        topo.by_name
            .insert(CLUSTER_TOP_HYPER_NODE.to_string(), root);
        topo.entries.push(Entry {
            name: CLUSTER_TOP_HYPER_NODE.to_string(),
            tier: top_tier,
            parent: None,
            children: top_level,
            nodes: (0..node_names.len()).map(NodeId::from_index).collect(),
        });
        for (i, e) in topo.entries.iter_mut().enumerate() {
            e.children.sort_unstable();
            topo.by_tier
                .entry(e.tier)
                .or_default()
                .push(HyperNodeId(i as u32));
        }
        topo.tiers = topo.by_tier.keys().copied().collect();
        if topo.entries.len() == 1 {
            // The root alone: it holds every node (`holding_in_tier`).
            return topo;
        }
        topo.holding = vec![Vec::new(); node_names.len()];
        for (&tier, ids) in &topo.by_tier {
            for &id in ids {
                for &n in &topo.entries[id.index()].nodes {
                    let held = &mut topo.holding[n.index()];
                    if held
                        .last()
                        .is_none_or(|&h| topo.entries[h.index()].tier != tier)
                    {
                        held.push(id);
                    }
                }
            }
        }
        topo
    }

    /// Whether the HyperNodes describe a tree (`HyperNodesReadyToSchedule`).
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// True when there is at least one real HyperNode.
    pub fn has_hyper_nodes(&self) -> bool {
        self.entries.len() > 1
    }

    pub fn root(&self) -> HyperNodeId {
        HyperNodeId(self.entries.len().saturating_sub(1) as u32)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn ids(&self) -> impl Iterator<Item = HyperNodeId> {
        (0..self.entries.len() as u32).map(HyperNodeId)
    }

    pub fn id(&self, name: &str) -> Option<HyperNodeId> {
        self.by_name.get(name).copied()
    }

    pub fn name(&self, id: HyperNodeId) -> &str {
        &self.entries[id.index()].name
    }

    pub fn tier(&self, id: HyperNodeId) -> i32 {
        self.entries[id.index()].tier
    }

    pub fn children(&self, id: HyperNodeId) -> &[HyperNodeId] {
        &self.entries[id.index()].children
    }

    /// The session nodes under `id`, in node order (`RealNodesList`).
    pub fn nodes(&self, id: HyperNodeId) -> &[NodeId] {
        &self.entries[id.index()].nodes
    }

    pub fn contains(&self, id: HyperNodeId, node: NodeId) -> bool {
        self.entries[id.index()].nodes.binary_search(&node).is_ok()
    }

    /// Tiers ascending, the root's last (`HyperNodesTiers`).
    pub fn tiers(&self) -> &[i32] {
        &self.tiers
    }

    /// Tier name → tier (`HyperNodeTierNameMap`).
    pub fn tier_of_name(&self, name: &str) -> Option<i32> {
        self.tier_names.get(name).copied()
    }

    /// The HyperNode of the lowest tier holding `node` (the root when no other does;
    /// `FindHyperNodeForNode`).
    pub fn lowest_of_node(&self, node: NodeId) -> Option<HyperNodeId> {
        if self.entries.len() == 1 {
            return (node.index() < self.entries[0].nodes.len()).then(|| self.root());
        }
        self.holding.get(node.index())?.first().copied()
    }

    /// The HyperNode of `tier` holding `node`, if any.
    pub fn holding_in_tier(&self, node: NodeId, tier: i32) -> Option<HyperNodeId> {
        if self.entries.len() == 1 {
            let root = self.root();
            return (self.tier(root) == tier && node.index() < self.entries[0].nodes.len())
                .then_some(root);
        }
        self.holding
            .get(node.index())?
            .iter()
            .copied()
            .find(|&h| self.tier(h) == tier)
    }

    /// `id`, its parent, … up to the root (`GetAncestors`).
    pub fn ancestors(&self, id: HyperNodeId) -> Vec<HyperNodeId> {
        let mut chain = vec![id];
        let mut at = id;
        while let Some(p) = self.entries[at.index()].parent {
            if chain.contains(&p) {
                break;
            }
            chain.push(p);
            at = p;
        }
        chain
    }

    /// `GetLCAHyperNode`: `None` stands for "none yet", so the other one is the answer.
    pub fn lca(&self, a: Option<HyperNodeId>, b: Option<HyperNodeId>) -> Option<HyperNodeId> {
        let (Some(a), Some(b)) = (a, b) else {
            return a.or(b);
        };
        // Walked without collecting: this runs per task and node while scoring.
        let mut at = Some(b);
        // At most one step per HyperNode: a tree that is not ready may have a cycle.
        for _ in 0..=self.entries.len() {
            let x = at?;
            if self.is_ancestor_or_self(x, a) {
                return Some(x);
            }
            at = self.entries[x.index()].parent;
        }
        None
    }

    /// Whether `anc` is `id` or one of its ancestors.
    fn is_ancestor_or_self(&self, anc: HyperNodeId, id: HyperNodeId) -> bool {
        let mut at = Some(id);
        let mut steps = 0;
        while let Some(x) = at {
            if x == anc {
                return true;
            }
            steps += 1;
            if steps > self.entries.len() {
                return false;
            }
            at = self.entries[x.index()].parent;
        }
        false
    }

    /// Normalises a PodGroup's constraint (§2.5 item 6): a tier name becomes its tier, and
    /// soft mode becomes hard mode up to the root's tier.
    pub fn constraint_of(&self, spec: &apis::NetworkTopologySpec) -> TopologyConstraint {
        let root_tier = i64::from(self.tier(self.root()));
        self.normalise(spec, root_tier)
    }

    /// A sub-group policy's constraint: as [`Self::constraint_of`], except that soft mode
    /// becomes hard up to the job's highest allowed tier (once normalised), or the root's.
    pub fn constraint_of_sub_job(
        &self,
        spec: &apis::NetworkTopologySpec,
        job: Option<&TopologyConstraint>,
    ) -> TopologyConstraint {
        let cap = job
            .and_then(|j| j.highest_tier_allowed)
            .unwrap_or_else(|| i64::from(self.tier(self.root())));
        self.normalise(spec, cap)
    }

    fn normalise(&self, spec: &apis::NetworkTopologySpec, soft_cap: i64) -> TopologyConstraint {
        let mut c = TopologyConstraint {
            mode: spec.mode.clone(),
            highest_tier_allowed: spec.highest_tier_allowed,
            untranslated_tier_name: None,
        };
        if c.highest_tier_allowed.is_none() && !spec.highest_tier_name.is_empty() {
            match self.tier_of_name(&spec.highest_tier_name) {
                Some(t) => c.highest_tier_allowed = Some(i64::from(t)),
                None => c.untranslated_tier_name = Some(spec.highest_tier_name.clone()),
            }
        }
        if c.mode == apis::network_topology_mode::SOFT && !self.entries.is_empty() {
            c.mode = apis::network_topology_mode::HARD.to_string();
            c.highest_tier_allowed = Some(soft_cap);
            c.untranslated_tier_name = None;
        }
        c
    }
}

#[cfg(test)]
mod tests;
