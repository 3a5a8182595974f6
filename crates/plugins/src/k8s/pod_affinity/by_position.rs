//! [`AffinityFilterState`]'s counts by node position: the filter runs on thousands of nodes
//! per search, and finding a node's domain through its labels costs a reach into the node
//! object and a label-map search per topology key; through the key's [`LabelColumn`] it is a
//! vector read. The answers are the filter's own: the counts are the same, looked up by the
//! id of the node's value instead of the value.

use rustc_hash::FxHashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::{AffinityFailure, AffinityFilterState, TopologyCounts};
use crate::k8s::node_columns::LabelColumn;

/// The state's three counts, per topology key in the order the filter reads them.
#[derive(Debug, Clone)]
pub(super) struct PositionCounts {
    affinity: Vec<Keyed>,
    anti_affinity: Vec<Keyed>,
    existing: Vec<Keyed>,
}

/// One key's counts by value id.
#[derive(Debug, Clone)]
struct Keyed {
    column: Arc<LabelColumn>,
    counts: FxHashMap<u32, i64>,
}

impl Keyed {
    fn new(column: Arc<LabelColumn>, key: &str, counts: &TopologyCounts) -> Self {
        // A value no node carries is never looked up, so it is left out.
        let counts = (counts.0.get(key).into_iter().flatten())
            .filter_map(|(value, &n)| column.id(value).map(|id| (id, n)))
            .collect();
        Self { column, counts }
    }

    /// [`TopologyCounts::for_node`] for the node at `position`.
    #[inline]
    fn for_node(&self, position: usize) -> Option<i64> {
        (self.column.at(position)).map(|id| self.counts.get(&id).copied().unwrap_or(0))
    }
}

impl AffinityFilterState {
    /// Indexes the counts by node position; `column` gives a topology key's column over the
    /// nodes, positions as the caller's. Left unindexed when a key has no column.
    pub fn index_by_position(&mut self, column: &mut dyn FnMut(&str) -> Option<Arc<LabelColumn>>) {
        let mut keyed =
            |key: &str, counts: &TopologyCounts| column(key).map(|c| Keyed::new(c, key, counts));
        let affinity: Option<Vec<Keyed>> = (self.affinity_keys.iter())
            .map(|k| keyed(k, &self.affinity_counts))
            .collect();
        let anti_affinity: Option<Vec<Keyed>> = (self.anti_affinity_keys.iter())
            .map(|k| keyed(k, &self.anti_affinity_counts))
            .collect();
        let existing: Option<Vec<Keyed>> = (self.existing_anti_affinity_counts.0.keys())
            .map(|k| keyed(k, &self.existing_anti_affinity_counts))
            .collect();
        self.by_position = match (affinity, anti_affinity, existing) {
            (Some(affinity), Some(anti_affinity), Some(existing)) => Some(PositionCounts {
                affinity,
                anti_affinity,
                existing,
            }),
            _ => None,
        };
    }

    /// [`AffinityFilterState::filter`] for the node at `position` (as given to
    /// [`AffinityFilterState::index_by_position`]); `node` is reached only when the counts
    /// are not indexed.
    pub fn filter_at<'n>(
        &self,
        pod: &Pod,
        position: usize,
        node: impl FnOnce() -> &'n Node,
    ) -> Result<(), AffinityFailure> {
        let Some(p) = &self.by_position else {
            return self.filter(pod, node());
        };
        let mut pods_exist = true;
        for k in &p.affinity {
            match k.for_node(position) {
                None => return Err(AffinityFailure::AffinityRulesNotMatch),
                Some(count) if count <= 0 => pods_exist = false,
                Some(_) => {}
            }
        }
        if !(pods_exist || (self.affinity_counts.is_empty() && self.matches_own_affinity)) {
            return Err(AffinityFailure::AffinityRulesNotMatch);
        }
        if (p.anti_affinity.iter()).any(|k| k.for_node(position).unwrap_or(0) > 0) {
            return Err(AffinityFailure::AntiAffinityRulesNotMatch);
        }
        if (p.existing.iter()).any(|k| k.for_node(position).is_some_and(|n| n > 0)) {
            return Err(AffinityFailure::ExistingAntiAffinityRulesNotMatch);
        }
        Ok(())
    }
}
