//! The HyperNode-aware path of `allocate` (spec/framework.md §6.2.5) for a job with a hard
//! network-topology constraint (on the job or a sub-job) or with sub-group policies.
//!
//! The search runs on two levels, as in Volcano. The job's gradient (from the root, tier by
//! tier from the lowest) gives the HyperNodes to try for the whole job; in each, the job's
//! sub-jobs are placed in turn, each by its own gradient within that HyperNode, whose
//! placements the HyperNode order scores. Every placement is a dry run until the best one of a
//! tier is applied again; a tier with none hands over to the next.
//!
//! Where Volcano picks among equal scores by map order or at random, the first candidate in
//! gradient order wins (docs/architecture.md, "Differences from Volcano, on purpose").

use std::collections::{BTreeMap, BTreeSet};

use crate::framework::{OpKind, PriorityQueue, Session, Statement};
use crate::model::topology::{GradientQuery, SearchPurpose};
use crate::model::{HyperNodeId, JobId, NodeId, QueueId, Resource, SubJobId, TaskId};

use super::super::search_memo::SearchMemo;
use super::{Search, Target, allocate_resources_for_tasks, pending_task_heap};

/// Whether the job takes this path (`ContainsHardTopology || ContainsSubJobPolicy`).
pub(super) fn takes_hyper_node_path(ssn: &Session, job: JobId) -> bool {
    let j = ssn.state.job(job);
    j.contains_hard_topology() || j.has_sub_job_policy()
}

/// A job's worksheet (`JobWorksheet`): its sub-jobs with pending tasks, in the order to place
/// them, and each one's pending tasks.
#[derive(Clone)]
pub(super) struct Worksheet {
    sub_jobs: PriorityQueue<SubJobId>,
    /// The fewest not-ready sub-jobs that make each policy's `minSubGroups`: placed first.
    required: BTreeSet<SubJobId>,
    tasks: BTreeMap<SubJobId, PriorityQueue<TaskId>>,
}

impl Worksheet {
    /// `organizeJobWorksheet`.
    pub(super) fn organize(ssn: &Session, job: JobId) -> Worksheet {
        let j = ssn.state.job(job);
        let ids = j.sub_job_ids();
        let mut ready_count: BTreeMap<Option<&str>, i32> = BTreeMap::new();
        let mut not_ready = Vec::new();
        for &sj in &ids {
            if ssn.sub_job_ready(job, sj) {
                *ready_count.entry(j.sub_job_policy_name(sj)).or_default() += 1;
            } else {
                not_ready.push(sj);
            }
        }
        // Asked both ways, so that equal sub-jobs compare equal (a sort may panic on an order
        // that is not total).
        not_ready.sort_by(|&l, &r| {
            if ssn.sub_job_order(job, l, r) {
                std::cmp::Ordering::Less
            } else if ssn.sub_job_order(job, r, l) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        let mut required = BTreeSet::new();
        for sj in not_ready {
            let count = ready_count.entry(j.sub_job_policy_name(sj)).or_default();
            if *count < j.min_sub_jobs_of(sj) {
                required.insert(sj);
                *count += 1;
            }
        }
        let mut ws = Worksheet {
            sub_jobs: PriorityQueue::new(),
            required,
            tasks: BTreeMap::new(),
        };
        for sj in ids {
            let heap = pending_task_heap(ssn, job, sj);
            if !heap.is_empty() {
                ws.tasks.insert(sj, heap);
                ws.push(ssn, job, sj);
            }
        }
        ws
    }

    pub(super) fn is_empty(&self) -> bool {
        self.sub_jobs.is_empty()
    }

    fn push(&mut self, ssn: &Session, job: JobId, sj: SubJobId) {
        let required = &self.required;
        self.sub_jobs
            .push(sj, |l, r| sub_job_first(ssn, job, required, l, r));
    }

    fn pop(&mut self, ssn: &Session, job: JobId) -> Option<SubJobId> {
        let required = &self.required;
        self.sub_jobs
            .pop(|l, r| sub_job_first(ssn, job, required, l, r))
    }
}

/// The worksheet's order: required sub-jobs first, then `SubJobOrderFn`.
fn sub_job_first(
    ssn: &Session,
    job: JobId,
    required: &BTreeSet<SubJobId>,
    l: SubJobId,
    r: SubJobId,
) -> bool {
    let (lr, rr) = (required.contains(&l), required.contains(&r));
    if lr != rr {
        return lr;
    }
    ssn.sub_job_order(job, l, r)
}

/// A dry run's placements, to apply again (`SaveOperations`).
type SavedOps = Vec<(OpKind, TaskId, NodeId)>;

/// A placement chosen for a job: its statement (applied, not committed), the HyperNode the
/// job's search chose, and where each sub-job placed then runs.
pub(super) struct Placed {
    pub stmt: Statement,
    job_hyper_node: HyperNodeId,
    sub_jobs: BTreeMap<SubJobId, Option<HyperNodeId>>,
}

/// One HyperNode's dry run for the whole job.
struct Candidate {
    hyper_node: HyperNodeId,
    saved: SavedOps,
    left: Worksheet,
    score: f64,
    sub_jobs: BTreeMap<SubJobId, Option<HyperNodeId>>,
}

/// `allocateForJob`: the job's gradient from the root; the first tier with a placement wins,
/// and in it the placement with the highest score.
pub(super) fn allocate_for_job(
    ssn: &mut Session,
    job: JobId,
    queue: QueueId,
    ws: &mut Worksheet,
    cache_enabled: bool,
) -> Option<Placed> {
    if ws.is_empty() {
        return None;
    }
    let root = ssn.state.topology().root();
    let j = ssn.state.job(job);
    let before: Vec<(SubJobId, Option<HyperNodeId>)> = ws
        .tasks
        .keys()
        .map(|&sj| (sj, j.sub_job_allocated_hyper_node(sj)))
        .collect();
    let min_resources = j.spec.min_resources.clone().unwrap_or_else(Resource::empty);
    let gradients = ssn.hyper_node_gradient(&GradientQuery {
        job,
        hard_tier: j.topology.as_ref().and_then(|c| c.hard_tier()),
        start: root,
        allocated: j.allocated_hyper_node,
        min_resource: &min_resources,
        purpose: SearchPurpose::Allocate,
    });
    for gradient in gradients {
        let mut candidates: Vec<Candidate> = Vec::new();
        for hn in gradient {
            ssn.state.reset_job_fit_errors(job);
            let mut left = ws.clone();
            let mut stmts = Vec::new();
            let mut score = 0.0;
            let mut decided = BTreeMap::new();
            while let Some(sj) = left.pop(ssn, job) {
                let Some(tasks) = left.tasks.get_mut(&sj) else {
                    continue;
                };
                let target = Target {
                    job,
                    sub_job: sj,
                    queue,
                };
                let Some(sub) = allocate_for_sub_job(ssn, target, tasks, hn, cache_enabled) else {
                    continue;
                };
                let more = !tasks.is_empty();
                stmts.push(sub.stmt);
                score += sub.score;
                decided.insert(sj, sub.sub_job_hyper_node);
                if more {
                    left.push(ssn, job, sj);
                }
                if ssn.job_ready(job) {
                    break;
                }
            }
            for &(sj, hn) in &before {
                ssn.state.set_sub_job_allocated_hyper_node(job, sj, hn);
            }
            let saved = save_operations(ssn, &stmts);
            if !saved.is_empty() && (ssn.job_ready(job) || ssn.job_pipelined(job)) {
                candidates.push(Candidate {
                    hyper_node: hn,
                    saved,
                    left,
                    score,
                    sub_jobs: decided,
                });
            }
            for stmt in stmts {
                ssn.discard(stmt);
            }
        }
        let mut best: Option<usize> = None;
        for (i, c) in candidates.iter().enumerate() {
            if best.is_none_or(|b| c.score > candidates[b].score) {
                best = Some(i);
            }
        }
        let Some(best) = best else { continue };
        let chosen = candidates.swap_remove(best);
        let stmt = recover_operations(ssn, &chosen.saved)?;
        *ws = chosen.left;
        return Some(Placed {
            stmt,
            job_hyper_node: chosen.hyper_node,
            sub_jobs: chosen.sub_jobs,
        });
    }
    None
}

/// What a sub-job's search placed within one of the job's HyperNodes.
struct SubPlaced {
    stmt: Statement,
    score: f64,
    sub_job_hyper_node: Option<HyperNodeId>,
}

/// `allocateForSubJob`: the sub-job's gradient within `hn_for_job`; the first tier with a
/// placement wins, and in it the HyperNode the HyperNode order scores highest. The sub-job
/// then runs in the common ancestor of where it ran and that HyperNode.
fn allocate_for_sub_job(
    ssn: &mut Session,
    target: Target,
    tasks: &mut PriorityQueue<TaskId>,
    hn_for_job: HyperNodeId,
    cache_enabled: bool,
) -> Option<SubPlaced> {
    let Target { job, sub_job, .. } = target;
    let j = ssn.state.job(job);
    let allocated = j.sub_job_allocated_hyper_node(sub_job);
    let hard_tier = j.sub_job_topology(sub_job).and_then(|c| c.hard_tier());
    let min_resources = ssn.state.pending_min_resources(job, sub_job);
    let gradients = ssn.hyper_node_gradient(&GradientQuery {
        job,
        hard_tier,
        start: hn_for_job,
        allocated,
        min_resource: &min_resources,
        purpose: SearchPurpose::Allocate,
    });
    for gradient in gradients {
        let mut placed: Vec<(HyperNodeId, SavedOps, PriorityQueue<TaskId>)> = Vec::new();
        for hn in gradient {
            ssn.state.reset_sub_job_fit_errors(job, sub_job);
            let mut left = tasks.clone();
            let nodes: Vec<NodeId> = ssn.state.topology().nodes(hn).to_vec();
            let root = ssn.state.topology().root();
            let mut memo = SearchMemo::default();
            let search = Search {
                nodes: &nodes,
                hyper_node: (hn != root).then_some(hn),
                every_node_in_order: false,
                cache_enabled,
                memo: &mut memo,
            };
            let stmt = allocate_resources_for_tasks(ssn, target, &mut left, search, allocated);
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
        let scores = ssn.hyper_node_order(job, sub_job, &candidates);
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
        let now_in = ssn.state.topology().lca(allocated, Some(hn));
        ssn.state
            .set_sub_job_allocated_hyper_node(job, sub_job, now_in);
        return Some(SubPlaced {
            stmt,
            score,
            sub_job_hyper_node: now_in,
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

/// After a commit: the job and each sub-job placed now run in the lowest HyperNode holding
/// where they ran and what was chosen (`UpdateDecisionToJob`).
pub(super) fn record_decision(ssn: &mut Session, job: JobId, placed: &Placed) {
    let j = ssn.state.job(job);
    let topology = ssn.state.topology();
    let job_hn = topology.lca(j.allocated_hyper_node, Some(placed.job_hyper_node));
    let sub_jobs: Vec<(SubJobId, Option<HyperNodeId>)> = placed
        .sub_jobs
        .iter()
        .map(|(&sj, &hn)| (sj, topology.lca(j.sub_job_allocated_hyper_node(sj), hn)))
        .collect();
    ssn.state.set_job_allocated_hyper_node(job, job_hn);
    for (sj, hn) in sub_jobs {
        ssn.state.set_sub_job_allocated_hyper_node(job, sj, hn);
    }
}

/// A job whose hard constraint (as written) found no HyperNode: say so, with the tier, in the
/// job's fit error (the PodGroup's Unschedulable condition and the `PodScheduled` message of
/// the pods without an error of their own carry it). A soft constraint may span the whole cluster, so its failure is the
/// flat path's and keeps the flat path's text.
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
    // The dry runs' nodes ("can possibly be assigned to …") would say the opposite of why the
    // pods wait (Volcano shows them); the pods say this instead.
    ssn.state.forget_dry_runs(job);
}
