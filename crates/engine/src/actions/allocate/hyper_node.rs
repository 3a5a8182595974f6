//! The HyperNode-aware path of `allocate` (spec/framework.md §6.2.5) for a job with a hard
//! network-topology constraint: try the HyperNodes the gradient gives, tier by tier from the
//! lowest; in a tier, place the job in each HyperNode as a dry run and keep the best placement
//! that makes the job ready (or pipelined); a tier with none hands over to the next.
//!
//! The job has one sub-job here (sub-group policies are not placed one by one yet), and the
//! search runs on two levels as in Volcano: the job's gradient from the root, then within each
//! of its HyperNodes the sub-job's gradient, whose placements the HyperNode order scores.
//!
//! Where Volcano picks among equal scores by map order or at random, the first candidate in
//! gradient order wins (docs/architecture.md, "Differences from Volcano, on purpose").

use crate::framework::{OpKind, PriorityQueue, Session, Statement};
use crate::model::topology::{GradientQuery, SearchPurpose};
use crate::model::{HyperNodeId, JobId, NodeId, QueueId, Resource, TaskId};

use super::super::search_memo::SearchMemo;
use super::{Search, allocate_resources_for_tasks};

/// Whether the job takes this path: its constraint is hard with a highest tier
/// (`ContainsHardTopology`).
pub(super) fn takes_hyper_node_path(ssn: &Session, job: JobId) -> bool {
    ssn.state
        .job(job)
        .topology
        .as_ref()
        .is_some_and(|c| c.hard_tier().is_some())
}

/// A dry run's placements, to apply again (`SaveOperations`).
type SavedOps = Vec<(OpKind, TaskId, NodeId)>;

/// A placement chosen for a job: its statement (applied, not committed), the HyperNode the
/// job's search chose and where the sub-job now runs.
pub(super) struct Placed {
    pub stmt: Statement,
    job_hyper_node: HyperNodeId,
    sub_job_hyper_node: Option<HyperNodeId>,
}

/// `allocateForJob`: the job's gradient from the root; the first tier with a placement wins,
/// and in it the placement with the highest score.
pub(super) fn allocate_for_job(
    ssn: &mut Session,
    job: JobId,
    queue: QueueId,
    tasks: &mut PriorityQueue<TaskId>,
    cache_enabled: bool,
) -> Option<Placed> {
    if tasks.is_empty() {
        return None;
    }
    let root = ssn.state.topology().root();
    let j = ssn.state.job(job);
    let (job_allocated, sub_job_start) = (j.allocated_hyper_node, j.sub_job_allocated_hyper_node);
    let min_resources = j.spec.min_resources.clone().unwrap_or_else(Resource::empty);
    let gradients = ssn.hyper_node_gradient(&GradientQuery {
        job,
        start: root,
        allocated: job_allocated,
        min_resource: &min_resources,
        purpose: SearchPurpose::Allocate,
    });
    for gradient in gradients {
        // (HyperNode, placements, tasks left, score, where the sub-job then runs)
        let mut candidates = Vec::new();
        for hn in gradient {
            ssn.state.reset_job_fit_errors(job);
            let mut left = tasks.clone();
            let mut sub_job_at = sub_job_start;
            let mut stmts = Vec::new();
            let mut score = 0.0;
            while !left.is_empty() {
                let Some(sub) =
                    allocate_for_sub_job(ssn, job, queue, &mut left, hn, sub_job_at, cache_enabled)
                else {
                    break;
                };
                stmts.push(sub.stmt);
                score += sub.score;
                sub_job_at = sub.sub_job_hyper_node;
                if ssn.job_ready(job) {
                    break;
                }
            }
            let saved = save_operations(ssn, &stmts);
            if !saved.is_empty() && (ssn.job_ready(job) || ssn.job_pipelined(job)) {
                candidates.push((hn, saved, left, score, sub_job_at));
            }
            for stmt in stmts {
                ssn.discard(stmt);
            }
        }
        let mut best: Option<usize> = None;
        for (i, c) in candidates.iter().enumerate() {
            if best.is_none_or(|b| c.3 > candidates[b].3) {
                best = Some(i);
            }
        }
        let Some(best) = best else { continue };
        let (hn, saved, left, _, sub_job_at) = candidates.swap_remove(best);
        let stmt = recover_operations(ssn, &saved)?;
        *tasks = left;
        return Some(Placed {
            stmt,
            job_hyper_node: hn,
            sub_job_hyper_node: sub_job_at,
        });
    }
    None
}

/// What the sub-job's search placed within one of the job's HyperNodes.
struct SubPlaced {
    stmt: Statement,
    score: f64,
    sub_job_hyper_node: Option<HyperNodeId>,
}

/// `allocateForSubJob`: the sub-job's gradient within `hn_for_job`; the first tier with a
/// placement wins, and in it the HyperNode the HyperNode order scores highest.
fn allocate_for_sub_job(
    ssn: &mut Session,
    job: JobId,
    queue: QueueId,
    tasks: &mut PriorityQueue<TaskId>,
    hn_for_job: HyperNodeId,
    allocated: Option<HyperNodeId>,
    cache_enabled: bool,
) -> Option<SubPlaced> {
    let min_resources = ssn.state.pending_min_resources(job);
    let gradients = ssn.hyper_node_gradient(&GradientQuery {
        job,
        start: hn_for_job,
        allocated,
        min_resource: &min_resources,
        purpose: SearchPurpose::Allocate,
    });
    for gradient in gradients {
        let mut placed: Vec<(HyperNodeId, SavedOps, PriorityQueue<TaskId>)> = Vec::new();
        for hn in gradient {
            // Volcano clears the sub-job's task errors; the job has one sub-job here.
            ssn.state.reset_job_fit_errors(job);
            let mut left = tasks.clone();
            let nodes: Vec<NodeId> = ssn.state.topology().nodes(hn).to_vec();
            let root = ssn.state.topology().root();
            let mut memo = SearchMemo::default();
            let search = Search {
                nodes: &nodes,
                hyper_node: (hn != root).then_some(hn),
                cache_enabled,
                memo: &mut memo,
            };
            let stmt = allocate_resources_for_tasks(ssn, job, queue, &mut left, search, allocated);
            if let Some(stmt) = stmt
                && !stmt.is_empty()
            {
                let saved = save_operations(ssn, std::slice::from_ref(&stmt));
                ssn.discard(stmt);
                placed.push((hn, saved, left));
            }
        }
        if placed.is_empty() {
            continue;
        }
        let candidates: Vec<HyperNodeId> = placed.iter().map(|p| p.0).collect();
        let scores = ssn.hyper_node_order(job, &candidates);
        let mut best = 0;
        for (i, s) in scores.iter().enumerate() {
            if *s > scores[best] {
                best = i;
            }
        }
        let score = scores.get(best).copied().unwrap_or(0.0);
        let (hn, saved, left) = placed.swap_remove(best);
        let stmt = recover_operations(ssn, &saved)?;
        *tasks = left;
        let topology = ssn.state.topology();
        return Some(SubPlaced {
            stmt,
            score,
            sub_job_hyper_node: topology.lca(allocated, Some(hn)),
        });
    }
    None
}

/// The placements of applied statements, in order, with the node each task is on.
fn save_operations(ssn: &Session, stmts: &[Statement]) -> SavedOps {
    stmts
        .iter()
        .flat_map(|s| s.ops.iter())
        .filter_map(|op| {
            let node = ssn.state.task(op.task).node?;
            Some((op.kind, op.task, node))
        })
        .collect()
}

/// Applies saved placements again (`RecoverOperations`); on a failure what was applied is
/// undone and the job gets nothing.
fn recover_operations(ssn: &mut Session, saved: &SavedOps) -> Option<Statement> {
    let mut stmt = Statement::new();
    for &(kind, task, node) in saved {
        let result = match kind {
            OpKind::Allocate => ssn.allocate(&mut stmt, task, node),
            OpKind::Pipeline => ssn.pipeline(&mut stmt, task, node, false),
            OpKind::Evict => Ok(()),
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, task = ssn.state.task(task).key(), "placement could not be applied again");
            ssn.discard(stmt);
            return None;
        }
    }
    Some(stmt)
}

/// After a commit: the job and its sub-job now run in the lowest HyperNode holding where they
/// ran and what was chosen (`UpdateDecisionToJob`).
pub(super) fn record_decision(ssn: &mut Session, job: JobId, placed: &Placed) {
    let j = ssn.state.job(job);
    let topology = ssn.state.topology();
    let job_hn = topology.lca(j.allocated_hyper_node, Some(placed.job_hyper_node));
    let sub_hn = topology.lca(j.sub_job_allocated_hyper_node, placed.sub_job_hyper_node);
    ssn.state.set_job_allocated_hyper_node(job, job_hn, sub_hn);
}

/// A job whose hard constraint (as written on the PodGroup) found no HyperNode: say so, with
/// the tier, in the job's fit error (the PodGroup's Unschedulable condition and the pods'
/// `PodScheduled` message carry it). A soft constraint may span the whole cluster, so its
/// failure is the flat path's and keeps the flat path's text.
pub(super) fn explain_unplaced(ssn: &mut Session, job: JobId) {
    let j = ssn.state.job(job);
    let written_hard = j
        .spec
        .network_topology
        .as_ref()
        .is_some_and(|t| t.mode == apis::network_topology_mode::HARD);
    let Some(tier) = j.topology.as_ref().and_then(|c| c.hard_tier()) else {
        return;
    };
    if !written_hard {
        return;
    }
    let mut message = format!(
        "network topology: the job fits in no HyperNode of tier {tier} or below (mode hard, highestTierAllowed {tier})"
    );
    match j.tasks.iter().find_map(|t| j.nodes_fit_errors.get(t)) {
        Some(fe) => message.push_str(&format!("; {fe}")),
        None => message.push_str("; none of them has idle resources for what the job needs"),
    }
    ssn.state.set_job_fit_error(job, message);
}
