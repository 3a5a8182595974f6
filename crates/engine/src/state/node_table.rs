//! The nodes as every session's node table starts from them: in first-seen order, with the
//! index of their names, their summed allocatable and their last load sample.
//!
//! Nodes change far less often than pods, so the state builds this once after the nodes (or
//! their load samples) changed and every snapshot shares it, instead of each session sorting
//! the nodes and indexing their names again.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::model::NodeId;
use crate::model::node::{NodeSpec, NodeUsage};
use crate::model::resource::Resource;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct NodeTable {
    /// In the order the nodes were first seen (a session's `NodeId` order).
    pub specs: Vec<Arc<NodeSpec>>,
    /// The load sample of each node of `specs`, at the same position.
    pub usage: Vec<Option<NodeUsage>>,
    /// Node name → position in `specs`.
    pub by_name: Arc<FxHashMap<String, NodeId>>,
    /// Σ allocatable of `specs`.
    pub total_allocatable: Resource,
}

impl NodeTable {
    pub(super) fn build(
        specs: Vec<Arc<NodeSpec>>,
        usage_of: impl Fn(&str) -> Option<NodeUsage>,
    ) -> NodeTable {
        let mut by_name = FxHashMap::default();
        by_name.reserve(specs.len());
        let mut total_allocatable = Resource::empty();
        let mut usage = Vec::with_capacity(specs.len());
        for (i, n) in specs.iter().enumerate() {
            by_name.insert(n.name.clone(), NodeId::from_index(i));
            total_allocatable.add(&n.allocatable);
            usage.push(usage_of(&n.name));
        }
        NodeTable {
            specs,
            usage,
            by_name: Arc::new(by_name),
            total_allocatable,
        }
    }
}
