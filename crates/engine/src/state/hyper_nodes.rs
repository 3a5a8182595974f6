//! HyperNodes in the cluster state: the objects as last observed, and the network topology
//! tree built from them and the nodes ([`HyperNodeTree`]), once after either changed and shared
//! by the snapshots taken since.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use apis::topology::HyperNode;

use super::ClusterState;
use crate::model::hypernode::{HyperNodeTree, NodeLabels};

#[derive(Clone, Debug, Default)]
pub(super) struct HyperNodeTables {
    objects: Arc<BTreeMap<String, Arc<HyperNode>>>,
    tree: OnceLock<Arc<HyperNodeTree>>,
}

impl HyperNodeTables {
    /// A node came, went or was relabelled: members chosen by pattern or labels may change.
    pub(super) fn nodes_changed(&mut self) {
        if !self.objects.is_empty() {
            self.tree = OnceLock::new();
        }
    }
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl ClusterState {
    /// Adds or replaces a HyperNode; true when it is new or its spec changed (the topology a
    /// gang may be placed in changed).
    pub fn upsert_hyper_node(&mut self, hn: HyperNode) -> bool {
        let name = hn.metadata.name.clone().unwrap_or_default();
        let t = &mut self.hyper_nodes;
        let changed = t.objects.get(&name).is_none_or(|old| old.spec != hn.spec);
        Arc::make_mut(&mut t.objects).insert(name, Arc::new(hn));
        if changed {
            t.tree = OnceLock::new();
        }
        changed
    }

    /// Removes a HyperNode; true when it was there.
    pub fn delete_hyper_node(&mut self, name: &str) -> bool {
        let t = &mut self.hyper_nodes;
        if !t.objects.contains_key(name) {
            return false;
        }
        Arc::make_mut(&mut t.objects).remove(name);
        t.tree = OnceLock::new();
        true
    }

    pub fn hyper_node_objects(&self) -> impl Iterator<Item = &Arc<HyperNode>> {
        self.hyper_nodes.objects.values()
    }

    /// The network topology tree of the HyperNodes over the state's nodes.
    pub fn hyper_node_tree(&self) -> &Arc<HyperNodeTree> {
        self.hyper_nodes.tree.get_or_init(|| {
            let objects = &self.hyper_nodes.objects;
            if objects.is_empty() {
                return Arc::new(HyperNodeTree::default());
            }
            let nodes: Vec<NodeLabels<'_>> = self
                .nodes_in_order()
                .into_iter()
                .map(|n| {
                    let labels = n.node.metadata.labels.as_ref().unwrap_or(&NO_LABELS);
                    (n.name.as_str(), labels)
                })
                .collect();
            Arc::new(HyperNodeTree::build(
                objects.values().map(|h| h.as_ref()),
                &nodes,
            ))
        })
    }
}
