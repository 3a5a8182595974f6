//! Shared machinery of the actions (spec/framework.md §6.0): how many feasible nodes to look
//! for, the feasible-node search with its error cache, and scoring and choosing a node.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use crate::framework::Session;
use crate::model::fit::{FitError, FitErrors, FitStatus, StatusCode};
use crate::model::{NodeId, TaskId};

use super::search_memo::{ClassMemo, Remembered};

/// `CalculateNumOfFeasibleNodesToFind` (§6.0.1), integer arithmetic as Volcano.
pub fn num_feasible_nodes_to_find(ssn: &Session, n: usize) -> usize {
    let o = ssn.state.options();
    let min_nodes = o.minimum_feasible_nodes;
    if n <= min_nodes || o.percentage_nodes_to_find >= 100 {
        return n;
    }
    let mut p = o.percentage_nodes_to_find as i64;
    if p <= 0 {
        p = 50 - (n as i64) / 125;
        if p < o.minimum_percentage_nodes_to_find as i64 {
            p = o.minimum_percentage_nodes_to_find as i64;
        }
    }
    let k = (n as i64 * p / 100) as usize;
    k.max(min_nodes)
}

/// Resource check the actions run before plugin predicates: the request must fit the node's
/// future idle resources ("Insufficient <resource>").
pub fn resource_fit(ssn: &Session, task: TaskId, node: NodeId) -> Result<(), FitError> {
    let n = ssn.state.node(node);
    ssn.state
        .task(task)
        .resreq()
        .fits_future_idle(&n.idle, &n.releasing, &n.pipelined)
        .map_err(|name| {
            FitError::new(FitStatus::new(
                StatusCode::Unschedulable,
                format!("Insufficient {name}"),
                "allocate",
            ))
        })
}

/// `allocPredicate`: resources first, then the plugins (`PredicateForAllocateAction`).
pub fn allocate_predicate(ssn: &Session, task: TaskId, node: NodeId) -> Result<(), FitError> {
    resource_fit(ssn, task, node)?;
    predicate_for_allocate(ssn, task, node)
}

/// `PredicateForAllocateAction`: a fit error with no failing code counts as fitting.
pub fn predicate_for_allocate(ssn: &Session, task: TaskId, node: NodeId) -> Result<(), FitError> {
    match ssn.predicate(task, node) {
        Err(e) if e.blocks_allocation() => Err(e),
        _ => Ok(()),
    }
}

/// What a search found so far.
struct Found {
    want: usize,
    feasible: Vec<NodeId>,
    /// Nodes that failed, why, and whether that is new to the role's error cache.
    failures: Vec<(NodeId, Arc<FitError>, bool)>,
}

impl Found {
    fn done(&self) -> bool {
        self.feasible.len() >= self.want
    }

    #[inline]
    fn take(&mut self, node: NodeId, outcome: Result<(), (Arc<FitError>, bool)>) {
        match outcome {
            Ok(()) => self.feasible.push(node),
            Err((err, fresh)) => self.failures.push((node, err, fresh)),
        }
    }
}

/// The feasible-node search with Volcano's per-(job, role) error cache (§6.0.2).
pub struct PredicateHelper {
    cache_enabled: bool,
    error_cache: HashMap<String, HashMap<NodeId, Arc<FitError>>>,
}

/// Nodes evaluated per parallel batch: large enough to keep both cores busy, small enough not
/// to overshoot the number of feasible nodes wanted by much.
const SEARCH_BATCH: usize = 256;

/// Clusters smaller than this are searched and scored on the session's own thread: waking the
/// pool's other threads costs more CPU than the work they would share (in steady state a
/// session places a pod or two).
const PARALLEL_MIN_NODES: usize = 1024;

impl PredicateHelper {
    pub fn new(cache_enabled: bool) -> Self {
        Self {
            cache_enabled,
            error_cache: HashMap::new(),
        }
    }

    /// Finds up to `numFeasibleNodesToFind` nodes that pass `check`, scanning `nodes` from the
    /// session's rotating start index. Batches are evaluated in parallel; results are taken in
    /// node order, so the outcome is deterministic (Volcano's is not).
    ///
    /// With a class memo, a node's remembered result under its current stamp stands for
    /// `check` (the caller vouches that the task's answers are node-local), and fresh results
    /// are remembered.
    ///
    /// The fit errors are filled only when no node is feasible, the one case callers read
    /// them: building them for every search would copy a reason per failing node.
    pub fn predicate_nodes(
        &mut self,
        ssn: &mut Session,
        task: TaskId,
        nodes: &[NodeId],
        check: &(dyn Fn(&Session, TaskId, NodeId) -> Result<(), FitError> + Sync),
        memo: Option<&mut ClassMemo>,
    ) -> (Vec<NodeId>, FitErrors) {
        let n = nodes.len();
        if n == 0 {
            return (Vec::new(), FitErrors::default());
        }
        let want = num_feasible_nodes_to_find(ssn, n);
        let t = ssn.state.task(task);
        // Tasks of one role share failures, except when they use claims: their volumes differ
        // per pod (Volcano shares them anyway, so a pod whose volume lives on a node another
        // pod of its role failed on would never be tried there).
        let cache_on = self.cache_enabled
            && !t.spec.role.is_empty()
            && !crate::model::claim::pod_uses_claims(&t.spec.pod);
        let group = if cache_on {
            t.job
                .map(|j| format!("{}/{}", ssn.state.job(j).spec.uid, t.spec.role))
                .unwrap_or_default()
        } else {
            String::new()
        };
        // Borrowed, not cloned: this runs for every task, and a role that keeps failing can
        // have an entry for most nodes.
        let cached = if cache_on {
            self.error_cache.get(&group)
        } else {
            None
        };
        let start = ssn.state.node_search_start() % n;

        let mut found = Found {
            want,
            feasible: Vec::with_capacity(want.min(n)),
            failures: Vec::new(),
        };
        let mut processed = 0;
        let session: &Session = ssn;
        let from_error_cache = |node: NodeId| cached.as_ref().and_then(|c| c.get(&node)).cloned();
        if let Some(memo) = memo {
            // Remembered answers cost a lookup, so the nodes are taken one by one; the few
            // that must be checked are checked here too.
            let stamps = session.state.search_stamps();
            let mut at = start;
            while processed < n && !found.done() {
                let node = nodes[at];
                processed += 1;
                at = if at + 1 == n { 0 } else { at + 1 };
                if let Some(err) = from_error_cache(node) {
                    found.failures.push((node, err, false));
                    continue;
                }
                let stamp = stamps.of(node);
                match memo.check(node, stamp) {
                    Some(Remembered::Fits) => found.feasible.push(node),
                    Some(Remembered::Fails(e)) => found.failures.push((node, e.clone(), true)),
                    None => {
                        let result = check(session, task, node).map_err(Arc::new);
                        memo.remember_check(node, stamp, &result);
                        found.take(node, result.map_err(|e| (e, true)));
                    }
                }
            }
        }
        while processed < n && !found.done() {
            let end = (processed + SEARCH_BATCH.max(want)).min(n);
            let batch: Vec<NodeId> = (processed..end).map(|i| nodes[(start + i) % n]).collect();
            let eval = |&node: &NodeId| match from_error_cache(node) {
                Some(err) => Err((err, false)),
                None => check(session, task, node).map_err(|e| (Arc::new(e), true)),
            };
            let results: Vec<Result<(), (Arc<FitError>, bool)>> = if n >= PARALLEL_MIN_NODES {
                batch.par_iter().map(eval).collect()
            } else {
                batch.iter().map(eval).collect()
            };
            for (&node, outcome) in batch.iter().zip(results) {
                processed += 1;
                found.take(node, outcome);
                if found.done() {
                    break;
                }
            }
        }
        let Found {
            feasible, failures, ..
        } = found;
        let mut fit_errors = FitErrors::default();
        if feasible.is_empty() {
            for (node, err, _) in &failures {
                fit_errors.set_node_error(ssn.state.node(*node).name(), FitError::clone(err));
            }
        }
        if cache_on {
            let fresh = failures
                .into_iter()
                .filter(|(_, _, fresh)| *fresh)
                .map(|(node, err, _)| (node, err));
            self.error_cache.entry(group).or_default().extend(fresh);
        }
        ssn.state.set_node_search_start((start + processed) % n);
        (feasible, fit_errors)
    }
}

/// `PrioritizeNodes` (§6.0.3): Σ per-node order scores + Σ batch scores for each node, in the
/// input order. `None` when scoring failed (Volcano then returns empty buckets).
pub fn prioritize_nodes(ssn: &Session, task: TaskId, nodes: &[NodeId]) -> Option<Vec<f64>> {
    let mut scores: Vec<f64> = if ssn.has_node_order() {
        let score = |&n: &NodeId| match ssn.node_order(task, n) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "node order failed; node gets no per-node score");
                0.0
            }
        };
        if ssn.state.nodes().len() >= PARALLEL_MIN_NODES {
            nodes.par_iter().map(score).collect()
        } else {
            nodes.iter().map(score).collect()
        }
    } else {
        vec![0.0; nodes.len()]
    };
    match ssn.batch_node_order(task, nodes) {
        Ok(batch) => {
            for (s, b) in scores.iter_mut().zip(batch) {
                *s += b;
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "batch node order failed");
            return None;
        }
    }
    Some(scores)
}

/// [`choose_node`] through a class memo, in one pass without building the groups: each node's
/// idle fit and score come from the memo under the node's stamp; the nodes without a score are
/// scored together first (the caller vouches that the task's scores are node-local, so each
/// gets the score it would get in its group) and remembered. The best node that fits `Idle`,
/// else the best of the rest, is what the groups give, since a group of one needs no score
/// and a remembered score cannot fail. `None` when scoring failed: the caller then takes the
/// groups' path, which fails over as Volcano does.
fn choose_node_memo(
    ssn: &Session,
    task: TaskId,
    feasible: &[NodeId],
    memo: &mut ClassMemo,
) -> Option<Option<NodeId>> {
    let stamps = ssn.state.search_stamps();
    let missing: Vec<NodeId> = feasible
        .iter()
        .copied()
        .filter(|&n| memo.score(n, stamps.of(n)).is_none())
        .collect();
    if !missing.is_empty() {
        let scores = prioritize_nodes(ssn, task, &missing)?;
        for (&n, score) in missing.iter().zip(scores) {
            memo.remember_score(n, stamps.of(n), score);
        }
    }
    let req = ssn.state.task(task).resreq();
    let mut best_idle: Option<(NodeId, f64)> = None;
    let mut best_future: Option<(NodeId, f64)> = None;
    for &n in feasible {
        let stamp = stamps.of(n);
        let score = memo.score(n, stamp)?;
        let fits = memo.fits_idle(n, stamp, || {
            req.less_equal(
                &ssn.state.node(n).idle,
                crate::model::DimensionDefault::Zero,
            )
        });
        let best = if fits {
            &mut best_idle
        } else {
            &mut best_future
        };
        if best.is_none_or(|(_, b)| score > b) {
            *best = Some((n, score));
        }
    }
    Some(best_idle.or(best_future).map(|(n, _)| n))
}

/// `SelectBestNodeAndScore`: the highest score; among equal scores the first node in the
/// given order (Volcano picks one at random — we stay deterministic).
pub fn select_best_node(nodes: &[NodeId], scores: &[f64]) -> Option<NodeId> {
    let mut best: Option<(NodeId, f64)> = None;
    for (&n, &s) in nodes.iter().zip(scores) {
        if best.is_none_or(|(_, b)| s > b) {
            best = Some((n, s));
        }
    }
    best.map(|(n, _)| n)
}

/// Chooses a node among feasible ones (§6.0.3): nodes where the request fits `Idle` first,
/// then nodes where it fits only the future idle resources. Every feasible node already passed
/// the future-idle check of [`allocate_predicate`], so that check is not repeated here.
pub fn choose_node(
    ssn: &Session,
    task: TaskId,
    feasible: &[NodeId],
    memo: Option<&mut ClassMemo>,
) -> Option<NodeId> {
    if let Some(memo) = memo
        && let Some(best) = choose_node_memo(ssn, task, feasible, memo)
    {
        return best;
    }
    let req = ssn.state.task(task).resreq();
    let (idle_fit, future_fit): (Vec<NodeId>, Vec<NodeId>) = feasible.iter().partition(|&&n| {
        req.less_equal(
            &ssn.state.node(n).idle,
            crate::model::DimensionDefault::Zero,
        )
    });
    for group in [idle_fit, future_fit] {
        match group.len() {
            0 => continue,
            1 => return Some(group[0]),
            _ => {
                if let Some(scores) = prioritize_nodes(ssn, task, &group)
                    && let Some(best) = select_best_node(&group, &scores)
                {
                    return Some(best);
                }
            }
        }
    }
    None
}
