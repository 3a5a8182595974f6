//! The equivalence cache (spec `plugins-core.md` §6.5): the stable filters' result per pod
//! template and node, for one session; and the stable filters' verdicts per scheduling class
//! and node, which give the same statuses as running the filters.

use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use engine::framework::SessionState;
use engine::model::{FitStatus, NodeId, SchedClass, StatusCode};
use k8s_openapi::api::core::v1::{Node, Pod};

use super::{Filter, Predicates, SkipSet, TaskFilters, status};
use crate::k8s::node_affinity::{CompiledAffinity, NODE_AFFINITY_MISMATCH};
use crate::k8s::pod_view::all_nodes;
use crate::k8s::taints::has_scheduling_taint;
use crate::k8s::unschedulable::cordoned;

pub(super) const CACHE_UNKNOWN: u8 = 0;
pub(super) const CACHE_FIT: u8 = 1;
pub(super) const CACHE_NOT_FIT_MARK: u8 = 2;

/// Result of the stable filters per (pod template, node), for one session (§6.5). One atomic
/// slot per node, so the parallel node search reads and fills it without locking per node.
#[derive(Debug, Default)]
pub(super) struct EquivalenceCache {
    nodes: usize,
    by_template: RwLock<FxHashMap<String, Arc<[AtomicU8]>>>,
}

impl EquivalenceCache {
    pub(super) fn new(nodes: usize) -> Self {
        Self {
            nodes,
            by_template: RwLock::new(FxHashMap::default()),
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
pub(super) struct ClassVerdicts {
    slots: Box<[AtomicU8]>,
    /// The node affinity the verdicts judge, by node position (see
    /// [`Predicates::run_stable_at`]); `None` inside when it cannot be compiled.
    compiled: OnceLock<Option<CompiledAffinity>>,
}

impl ClassVerdicts {
    fn new(nodes: usize) -> Self {
        Self {
            slots: (0..nodes).map(|_| AtomicU8::new(0)).collect(),
            compiled: OnceLock::new(),
        }
    }

    pub(super) fn get(&self, node: usize) -> Verdict {
        self.slots.get(node).map_or(Verdict::Unknown, |s| {
            Verdict::from_u8(s.load(Ordering::Relaxed))
        })
    }

    pub(super) fn set(&self, node: usize, verdict: Verdict) {
        if let Some(s) = self.slots.get(node) {
            s.store(verdict.to_u8(), Ordering::Relaxed);
        }
    }
}

/// The stable filters read only the pod's node selector, node affinity and tolerations, and the
/// node, none of which changes in a session, so their verdict holds for every pod that asks the
/// same of those: a node is judged once per such group rather than once per pod each time
/// something is placed on it.
///
/// Once a session has two tables (several groups to judge, so most nodes are judged several
/// times), the nodes that no NodeUnschedulable or TaintToleration filter can refuse are noted
/// in one pass, and the node affinity is matched through label columns: a verdict then rarely
/// reaches the node object.
#[derive(Debug, Default)]
pub(super) struct StableVerdicts {
    nodes: usize,
    tables: Mutex<Tables>,
    /// Per node position: neither cordoned nor with a `NoSchedule`/`NoExecute` taint.
    plain: OnceLock<Vec<bool>>,
}

#[derive(Debug, Default)]
struct Tables {
    /// The verdicts by what the stable filters read of the pod (its JSON).
    by_key: FxHashMap<String, Arc<ClassVerdicts>>,
    /// The same tables by scheduling class, which fixes the key: looked up first, so the key
    /// is written once per class.
    by_class: FxHashMap<SchedClass, Arc<ClassVerdicts>>,
}

impl StableVerdicts {
    pub(super) fn new(nodes: usize) -> Self {
        Self {
            nodes,
            tables: Mutex::new(Tables::default()),
            plain: OnceLock::new(),
        }
    }

    /// Which nodes are plain (see [`StableVerdicts::plain`]), once noted.
    pub(super) fn plain(&self) -> Option<&[bool]> {
        self.plain.get().map(Vec::as_slice)
    }

    /// The verdicts for the pod, whose class is `class`; `nodes` lists the session's nodes in
    /// position order, read when the second table is made.
    pub(super) fn of<'n>(
        &self,
        class: SchedClass,
        pod: &Pod,
        nodes: impl FnOnce() -> Vec<&'n Node>,
    ) -> Arc<ClassVerdicts> {
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
        let count = self.nodes;
        let verdicts = tables
            .by_key
            .entry(key)
            .or_insert_with(|| Arc::new(ClassVerdicts::new(count)))
            .clone();
        tables.by_class.insert(class, verdicts.clone());
        if tables.by_key.len() >= 2 {
            self.plain.get_or_init(|| {
                (nodes().iter())
                    .map(|n| !cordoned(n) && !has_scheduling_taint(n))
                    .collect()
            });
        }
        verdicts
    }
}

impl Predicates {
    /// [`Predicates::run_stable`] for the node at `position` with the nodes' plain flags
    /// noted: a plain node passes NodeUnschedulable and TaintToleration whatever the pod, so
    /// those run only on the others, and the node affinity is matched through label columns
    /// when it compiles. Gives the statuses `run_stable` gives.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_stable_at(
        &self,
        verdicts: &ClassVerdicts,
        plain: &[bool],
        ssn: &SessionState,
        pod: &Pod,
        position: NodeId,
        skip: SkipSet,
        f: &TaskFilters,
        statuses: &mut Vec<FitStatus>,
    ) -> bool {
        let node = || ssn.node(position).spec.node.as_ref();
        let plain = plain.get(position.index()).copied().unwrap_or(false);
        let affinity = || {
            if !self.enabled.node_affinity || skip.contains(Filter::NodeAffinity) {
                return None;
            }
            let compiled = verdicts.compiled.get_or_init(|| {
                let nodes = || all_nodes(ssn);
                (f.node_affinity.as_ref())?.compile(&mut |key| self.columns.built(key, nodes))
            });
            match compiled {
                Some(c) => (!c.matches(position.index())).then(|| {
                    status(
                        StatusCode::UnschedulableAndUnresolvable,
                        NODE_AFFINITY_MISMATCH,
                        Filter::NodeAffinity,
                    )
                }),
                None => self.node_affinity_filter(pod, node(), skip, f),
            }
        };
        let checks: [&dyn Fn() -> Option<FitStatus>; 3] = [
            &|| (!plain).then(|| self.unschedulable_filter(pod, node(), skip))?,
            &affinity,
            &|| (!plain).then(|| self.taint_filter(pod, node(), skip))?,
        ];
        super::run_checks(&checks, statuses)
    }
}
