//! The equivalence cache (spec `plugins-core.md` §6.5): the stable filters' result per pod
//! template and node, for one session.

use std::collections::HashMap;
use std::sync::atomic::AtomicU8;
use std::sync::{Arc, PoisonError, RwLock};

pub(super) const CACHE_UNKNOWN: u8 = 0;
pub(super) const CACHE_FIT: u8 = 1;
pub(super) const CACHE_NOT_FIT_MARK: u8 = 2;

/// Result of the stable filters per (pod template, node), for one session (§6.5). One atomic
/// slot per node, so the parallel node search reads and fills it without locking per node.
#[derive(Debug, Default)]
pub(super) struct EquivalenceCache {
    nodes: usize,
    by_template: RwLock<HashMap<String, Arc<[AtomicU8]>>>,
}

impl EquivalenceCache {
    pub(super) fn new(nodes: usize) -> Self {
        Self {
            nodes,
            by_template: RwLock::new(HashMap::new()),
        }
    }

    pub(super) fn slots(&self, template: &str) -> Arc<[AtomicU8]> {
        // A poisoned lock only means another thread panicked between whole-entry inserts.
        if let Some(slots) = self
            .by_template
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(template)
        {
            return slots.clone();
        }
        self.by_template
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(template.to_string())
            .or_insert_with(|| {
                (0..self.nodes)
                    .map(|_| AtomicU8::new(CACHE_UNKNOWN))
                    .collect()
            })
            .clone()
    }
}
