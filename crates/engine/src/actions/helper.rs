//! Shared machinery of the actions (spec/framework.md §6.0): how many feasible nodes to look
//! for, the feasible-node search with its error cache, and scoring and choosing a node.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::framework::Session;
use crate::model::fit::{FitError, FitErrors, FitStatus, StatusCode};
use crate::model::{NodeId, TaskId};

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

/// Whether the pod mounts a claim (a `persistentVolumeClaim` or generic ephemeral volume).
fn uses_claims(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .any(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some())
}

/// The feasible-node search with Volcano's per-(job, role) error cache (§6.0.2).
pub struct PredicateHelper {
    cache_enabled: bool,
    error_cache: HashMap<String, HashMap<NodeId, FitError>>,
}

/// Nodes evaluated per parallel batch: large enough to keep both cores busy, small enough not
/// to overshoot the number of feasible nodes wanted by much.
const SEARCH_BATCH: usize = 256;

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
    pub fn predicate_nodes(
        &mut self,
        ssn: &mut Session,
        task: TaskId,
        nodes: &[NodeId],
        check: &(dyn Fn(&Session, TaskId, NodeId) -> Result<(), FitError> + Sync),
    ) -> (Vec<NodeId>, FitErrors) {
        let mut fit_errors = FitErrors::default();
        let n = nodes.len();
        if n == 0 {
            return (Vec::new(), fit_errors);
        }
        let want = num_feasible_nodes_to_find(ssn, n);
        let t = ssn.state.task(task);
        // Tasks of one role share failures, except when they use claims: their volumes differ
        // per pod (Volcano shares them anyway, so a pod whose volume lives on a node another
        // pod of its role failed on would never be tried there).
        let cache_on = self.cache_enabled && !t.spec.role.is_empty() && !uses_claims(&t.spec.pod);
        let group = t
            .job
            .map(|j| format!("{}/{}", ssn.state.job(j).uid, t.spec.role))
            .unwrap_or_default();
        // Borrowed, not cloned: this runs for every task, and a role that keeps failing can
        // have an entry for most nodes.
        let cached = if cache_on {
            self.error_cache.get(&group)
        } else {
            None
        };
        let start = ssn.state.node_search_start() % n;

        let mut feasible = Vec::new();
        let mut new_errors: Vec<(NodeId, FitError)> = Vec::new();
        let mut processed = 0;
        let session: &Session = ssn;
        while processed < n && feasible.len() < want {
            let end = (processed + SEARCH_BATCH.max(want)).min(n);
            let batch: Vec<NodeId> = (processed..end).map(|i| nodes[(start + i) % n]).collect();
            let results: Vec<Result<(), (FitError, bool)>> = batch
                .par_iter()
                .map(|&node| {
                    if let Some(err) = cached.as_ref().and_then(|c| c.get(&node)) {
                        return Err((err.clone(), false));
                    }
                    check(session, task, node).map_err(|e| (e, true))
                })
                .collect();
            for (node, result) in batch.iter().zip(results) {
                processed += 1;
                match result {
                    Ok(()) => {
                        feasible.push(*node);
                        if feasible.len() >= want {
                            break;
                        }
                    }
                    Err((err, fresh)) => {
                        fit_errors.set_node_error(session.state.node(*node).name(), err.clone());
                        if fresh {
                            new_errors.push((*node, err));
                        }
                    }
                }
            }
        }
        if cache_on && !new_errors.is_empty() {
            self.error_cache
                .entry(group)
                .or_default()
                .extend(new_errors);
        }
        ssn.state.set_node_search_start((start + processed) % n);
        (feasible, fit_errors)
    }
}

/// `PrioritizeNodes` (§6.0.3): Σ per-node order scores + Σ batch scores for each node, in the
/// input order. `None` when scoring failed (Volcano then returns empty buckets).
pub fn prioritize_nodes(ssn: &Session, task: TaskId, nodes: &[NodeId]) -> Option<Vec<f64>> {
    let mut scores: Vec<f64> = if ssn.has_node_order() {
        nodes
            .par_iter()
            .map(|&n| match ssn.node_order(task, n) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "node order failed; node gets no per-node score");
                    0.0
                }
            })
            .collect()
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
pub fn choose_node(ssn: &Session, task: TaskId, feasible: &[NodeId]) -> Option<NodeId> {
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
