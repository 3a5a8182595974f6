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
    /// `previous` is the table this one replaces: when the nodes kept their names and order
    /// (a status update, a heartbeat), its name index is shared rather than built again, so
    /// that whoever resolved names against it can tell (by pointer) that they still hold.
    pub(super) fn build(
        specs: Vec<Arc<NodeSpec>>,
        usage_of: impl Fn(&str) -> Option<NodeUsage>,
        previous: Option<&NodeTable>,
    ) -> NodeTable {
        let same_names = previous.filter(|p| {
            p.specs.len() == specs.len()
                && p.specs
                    .iter()
                    .zip(&specs)
                    .all(|(a, b)| Arc::ptr_eq(a, b) || a.name == b.name)
        });
        let mut total_allocatable = Resource::empty();
        let mut usage = Vec::with_capacity(specs.len());
        for n in &specs {
            total_allocatable.add(&n.allocatable);
            usage.push(usage_of(&n.name));
        }
        let by_name = match same_names {
            Some(p) => Arc::clone(&p.by_name),
            None => Arc::new(
                specs
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.name.clone(), NodeId::from_index(i)))
                    .collect(),
            ),
        };
        NodeTable {
            specs,
            usage,
            by_name,
            total_allocatable,
        }
    }
}
