//! The equivalence cache (spec `plugins-core.md` §6.5): the stable filters' result per pod
//! template and node, for one session; and the stable filters' verdicts per scheduling class
//! and node, which give the same statuses as running the filters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use engine::model::SchedClass;
use k8s_openapi::api::core::v1::Pod;

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

/// How the stable filters (NodeUnschedulable, NodeAffinity, TaintToleration) judged one node
/// for one scheduling class: not yet known, passed, or which filter refused it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Unknown,
    Fits,
    Unschedulable,
    Affinity,
    Taint,
}

impl Verdict {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => Verdict::Fits,
            2 => Verdict::Unschedulable,
            3 => Verdict::Affinity,
            4 => Verdict::Taint,
            _ => Verdict::Unknown,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            Verdict::Unknown => 0,
            Verdict::Fits => 1,
            Verdict::Unschedulable => 2,
            Verdict::Affinity => 3,
            Verdict::Taint => 4,
        }
    }
}

/// One class's verdicts, a slot per node, filled by the parallel search without locks.
#[derive(Debug)]
pub(super) struct ClassVerdicts(Box<[AtomicU8]>);

impl ClassVerdicts {
    pub(super) fn get(&self, node: usize) -> Verdict {
        self.0.get(node).map_or(Verdict::Unknown, |s| {
            Verdict::from_u8(s.load(Ordering::Relaxed))
        })
    }

    pub(super) fn set(&self, node: usize, verdict: Verdict) {
        if let Some(s) = self.0.get(node) {
            s.store(verdict.to_u8(), Ordering::Relaxed);
        }
    }
}

/// The stable filters read only the pod's node selector, node affinity and tolerations, and the
/// node, none of which changes in a session, so their verdict holds for every pod that asks the
/// same of those: a node is judged once per such group rather than once per pod each time
/// something is placed on it.
#[derive(Debug, Default)]
pub(super) struct StableVerdicts {
    nodes: usize,
    tables: Mutex<Tables>,
}

#[derive(Debug, Default)]
struct Tables {
    /// The verdicts by what the stable filters read of the pod (its JSON).
    by_key: HashMap<String, Arc<ClassVerdicts>>,
    /// The same tables by scheduling class, which fixes the key: looked up first, so the key
    /// is written once per class.
    by_class: HashMap<SchedClass, Arc<ClassVerdicts>>,
}

impl StableVerdicts {
    pub(super) fn new(nodes: usize) -> Self {
        Self {
            nodes,
            tables: Mutex::new(Tables::default()),
        }
    }

    /// The verdicts for the pod, whose class is `class`.
    pub(super) fn of(&self, class: SchedClass, pod: &Pod) -> Arc<ClassVerdicts> {
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = tables.by_class.get(&class) {
            return v.clone();
        }
        let spec = pod.spec.as_ref();
        let read = (
            spec.and_then(|s| s.node_selector.as_ref()),
            spec.and_then(|s| s.affinity.as_ref())
                .and_then(|a| a.node_affinity.as_ref()),
            spec.and_then(|s| s.tolerations.as_ref()),
        );
        // Serialising these API types cannot fail; were it to, the class keeps a table alone.
        let key = serde_json::to_string(&read).unwrap_or_else(|_| format!("class {class:?}"));
        let nodes = self.nodes;
        let verdicts = tables
            .by_key
            .entry(key)
            .or_insert_with(|| {
                Arc::new(ClassVerdicts(
                    (0..nodes).map(|_| AtomicU8::new(0)).collect(),
                ))
            })
            .clone();
        tables.by_class.insert(class, verdicts.clone());
        verdicts
    }
}
