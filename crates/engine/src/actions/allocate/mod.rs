//! `allocate`: place pending tasks on nodes with idle resources (bind) or on nodes whose
//! resources are being released (pipeline), respecting gangs (spec/framework.md §6.2).
//!
//! Jobs with a hard network-topology constraint (soft ones become hard up to the root's tier
//! when the session opens) or with sub-group policies take Volcano's HyperNode-aware path
//! (§6.2.5, [`hyper_node`]), sub-group by sub-group; the others take the flat path over every
//! node.

mod hyper_node;
mod sub_job;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::fit::{FitError, FitErrors};
use crate::model::job::phase;
use crate::model::{HyperNodeId, JobId, NodeId, QueueId, SubJobId, TaskId, TaskStatus};

use super::helper::{
    PredicateHelper, allocate_fits, allocate_predicate, choose_node, fits_idle_now,
    num_feasible_nodes_to_find,
};
use super::search_memo::{ClassMemo, SearchMemo};

/// Argument `predicateErrorCacheEnable` (default true).
fn predicate_cache_enabled(ssn: &Session) -> bool {
    let mut on = true;
    if let Some(args) = ssn.state.conf().action_arguments("allocate")
        && let Err(e) = args.get_bool("predicateErrorCacheEnable", &mut on)
    {
        tracing::warn!(error = %e, "allocate argument ignored");
    }
    on
}

/// Pending tasks of a job (or of one of its sub-jobs) that allocate handles: not gated (other
/// than by Volcano's own queue-allocation gate alone) and not best-effort.
fn pending_task_heap(ssn: &Session, job: JobId, sub_job: SubJobId) -> PriorityQueue<TaskId> {
    let mut heap = PriorityQueue::new();
    let mut offer = |t: TaskId| {
        let spec = &ssn.state.task(t).spec;
        if (spec.sch_gated && !spec.only_volcano_gate) || spec.resreq.is_empty() {
            return;
        }
        heap.push(t, |a, b| ssn.task_order(a, b));
    };
    if sub_job == SubJobId::WHOLE_JOB {
        ssn.state
            .job_tasks_in(job, TaskStatus::Pending)
            .for_each(&mut offer);
    } else {
        ssn.state
            .job(job)
            .sub_job_tasks(sub_job)
            .iter()
            .copied()
            .filter(|&t| ssn.state.task(t).status == TaskStatus::Pending)
            .for_each(&mut offer);
    }
    heap
}

/// What allocate holds for a job between its turns: the pending tasks of the flat path, or
/// the worksheet of the HyperNode-aware one.
enum Work {
    Flat(PriorityQueue<TaskId>),
    ByHyperNode(hyper_node::Worksheet),
}

impl Work {
    fn is_empty(&self) -> bool {
        match self {
            Work::Flat(tasks) => tasks.is_empty(),
            Work::ByHyperNode(ws) => ws.is_empty(),
        }
    }
}

pub fn execute(ssn: &mut Session) {
    let cache_enabled = predicate_cache_enabled(ssn);
    let enqueue_configured = ssn
        .state
        .configured_actions()
        .iter()
        .any(|a| a == "enqueue");

    let mut queues: PriorityQueue<QueueId> = PriorityQueue::new();
    let mut jobs_by_queue: BTreeMap<QueueId, PriorityQueue<JobId>> = BTreeMap::new();
    let mut work: BTreeMap<JobId, Work> = BTreeMap::new();

    let job_ids: Vec<JobId> = ssn.state.job_ids().collect();
    for job in job_ids {
        if ssn.state.job(job).is_pending() {
            if enqueue_configured {
                continue;
            }
            ssn.state.set_job_phase(job, phase::INQUEUE);
        }
        // Only pending tasks are allocated (both paths below offer those alone), and the
        // validity check is a pure read: a job without any, such as every running job, is
        // passed over before it is asked.
        if ssn.state.job(job).count(TaskStatus::Pending) == 0 {
            continue;
        }
        if let Some(invalid) = ssn.job_valid(job) {
            tracing::debug!(job = %ssn.state.job(job).spec.uid, reason = %invalid.reason, "job not valid");
            continue;
        }
        let Some(q) = ssn.state.job(job).queue else {
            continue;
        };
        if ssn.state.job(job).contains_network_topology() && !ssn.state.topology().is_ready() {
            tracing::debug!(job = %ssn.state.job(job).spec.uid, "HyperNodes are not ready; job skipped");
            continue;
        }
        let todo = if hyper_node::takes_hyper_node_path(ssn, job) {
            Work::ByHyperNode(hyper_node::Worksheet::organize(ssn, job))
        } else {
            Work::Flat(pending_task_heap(ssn, job, SubJobId::WHOLE_JOB))
        };
        if todo.is_empty() {
            continue;
        }
        work.insert(job, todo);
        let first = !jobs_by_queue.contains_key(&q);
        jobs_by_queue
            .entry(q)
            .or_default()
            .push(job, |a, b| ssn.job_order(a, b));
        if first {
            queues.push(q, |a, b| ssn.queue_order(a, b));
        }
    }

    let all_nodes: Vec<NodeId> = ssn.state.node_ids().collect();
    let mut memo = SearchMemo::default();
    while let Some(q) = queues.pop(|a, b| ssn.queue_order(a, b)) {
        if ssn.overused(q) {
            continue;
        }
        let Some(mut jobs) = jobs_by_queue.remove(&q) else {
            continue;
        };
        let Some(job) = jobs.pop(|a, b| ssn.job_order(a, b)) else {
            continue;
        };
        let Some(mut todo) = work.remove(&job) else {
            jobs_by_queue.insert(q, jobs);
            continue;
        };
        match &mut todo {
            Work::ByHyperNode(ws) => {
                let placed = hyper_node::allocate_for_job(ssn, job, q, ws, cache_enabled);
                match placed {
                    Some(placed) if ssn.job_ready(job) => {
                        hyper_node::record_decision(ssn, job, &placed);
                        ssn.commit(placed.stmt);
                        if !ws.is_empty() {
                            jobs.push(job, |a, b| ssn.job_order(a, b));
                        }
                    }
                    Some(_) => {}
                    None => hyper_node::explain_unplaced(ssn, job),
                }
            }
            Work::Flat(tasks) => {
                let search = Search {
                    nodes: &all_nodes,
                    hyper_node: None,
                    every_node_in_order: true,
                    cache_enabled,
                    memo: &mut memo,
                };
                let target = Target {
                    job,
                    sub_job: SubJobId::WHOLE_JOB,
                    queue: q,
                };
                let allocated = ssn.state.job(job).sub_job_allocated_hyper_node;
                let stmt = allocate_resources_for_tasks(ssn, target, tasks, search, allocated);
                if let Some(stmt) = stmt
                    && ssn.job_ready(job)
                {
                    ssn.commit(stmt);
                    if !tasks.is_empty() {
                        jobs.push(job, |a, b| ssn.job_order(a, b));
                    }
                }
            }
        }
        // A pipelined-but-not-ready statement stays applied, neither committed nor discarded
        // (§6.2.6): it reserves the resources for the rest of the cycle.
        work.insert(job, todo);
        jobs_by_queue.insert(q, jobs);
        queues.push(q, |a, b| ssn.queue_order(a, b));
    }
}

/// How many sweeps of the cluster a class's searches must promise before it gets an index:
/// building one costs about a sweep.
const SWEEPS_FOR_INDEX: usize = 4;

/// What a job's node searches share: the nodes (those of `hyper_node`, or every node when
/// `None`), whether they are every node of the session in node order (only then can a class
/// index, which is kept by node position, answer), whether the role error cache is on, and a
/// search memo for these nodes.
struct Search<'a> {
    nodes: &'a [NodeId],
    hyper_node: Option<HyperNodeId>,
    every_node_in_order: bool,
    cache_enabled: bool,
    memo: &'a mut SearchMemo,
}

/// Whose tasks a search places: a sub-job of a job, in the job's queue.
#[derive(Copy, Clone)]
struct Target {
    job: JobId,
    sub_job: SubJobId,
    queue: QueueId,
}

/// `allocateResourcesForTasks` (§6.2.3) for one sub-job, which runs in `allocated` so far.
fn allocate_resources_for_tasks(
    ssn: &mut Session,
    target: Target,
    tasks: &mut PriorityQueue<TaskId>,
    search: Search<'_>,
    mut allocated: Option<HyperNodeId>,
) -> Option<Statement> {
    let Target {
        job,
        sub_job,
        queue,
    } = target;
    let nodes = search.nodes;
    if nodes.is_empty() {
        return None;
    }
    let with_topology = ssn.state.job(job).sub_job_topology(sub_job).is_some();
    let hyper_node_name = search
        .hyper_node
        .map(|h| ssn.state.topology().name(h).to_string());
    let mut stmt = Statement::new();
    let mut helper = PredicateHelper::new(search.cache_enabled);
    let mut failed: Option<FailedSearch> = None;
    while let Some(task) = tasks.pop(|a, b| ssn.task_order(a, b)) {
        if !ssn.allocatable(queue, task) {
            continue;
        }
        if ssn.state.task(task).spec.sch_gated {
            continue;
        }
        if sub_job::task_has_fit_errors(ssn, job, sub_job, task) {
            let t = &ssn.state.task(task).spec;
            let fe = FitErrors::with_message(format!(
                "Task {} with role spec {} has already predicated failed, skip",
                t.name, t.role
            ));
            ssn.state.record_task_fit_errors(job, task, fe);
            continue;
        }
        if let Err(e) = ssn.pre_predicate(task) {
            let mut fe = FitErrors::default();
            fe.add_nodes(&FitError::error(e, "prePredicate"), nodes.iter().copied());
            if !record_and_go_on(ssn, target, task, fe) {
                break;
            }
            continue;
        }

        if let Some(fit_errors) = failed.as_ref().and_then(|f| f.answers(ssn, task)) {
            if !record_and_go_on(ssn, target, task, fit_errors) {
                break;
            }
            continue;
        }

        // After PrePredicate, as the plugins' answer may rest on what it found.
        // A task of a job with a network topology is scored by where its job is placed so far,
        // which the index does not follow.
        let tasks_left = tasks.len() + 1;
        let indexable = search.every_node_in_order && !with_topology;
        let mut memo = ssn.search_is_node_local(task).then(|| {
            class_memo(
                ssn,
                search.memo,
                task,
                nodes.len(),
                indexable.then_some(tasks_left),
            )
        });
        let mut feasible = Vec::new();
        if let Some(nominated) = ssn.state.task(task).spec.nominated_node_name.clone()
            && let Some(nn) = ssn.state.node_id(&nominated)
        {
            let node = ssn.state.node(nn);
            if ssn
                .state
                .task(task)
                .resreq()
                .fits_future_idle(&node.idle, &node.releasing, &node.pipelined)
                .is_ok()
            {
                feasible = helper
                    .predicate_nodes(
                        ssn,
                        task,
                        &[nn],
                        &|s, t, n| allocate_predicate(s, t, n),
                        Some(&allocate_fits),
                        memo.as_deref_mut(),
                    )
                    .0;
            }
        }
        if feasible.is_empty()
            && indexable
            && let Some(m) = memo.as_deref_mut()
            && let Some(best) =
                helper.choose_indexed(ssn, task, nodes, &allocate_fits, m, tasks_left)
        {
            place(ssn, &mut stmt, task, best);
            if ssn.sub_job_ready(job, sub_job) {
                break;
            }
            continue;
        }
        if feasible.is_empty() {
            let (found, fit_errors) = helper.predicate_nodes(
                ssn,
                task,
                nodes,
                &|s, t, n| allocate_predicate(s, t, n),
                Some(&allocate_fits),
                memo.as_deref_mut(),
            );
            if found.is_empty() {
                let mut fit_errors = fit_errors;
                fit_errors.hyper_node = hyper_node_name.clone();
                failed = Some(FailedSearch::of(ssn, task, &fit_errors));
                if !record_and_go_on(ssn, target, task, fit_errors) {
                    break;
                }
                continue;
            }
            feasible = found;
        }

        // Scores that are node-local are remembered even when the predicates are not (pods
        // with anti-affinity or spread constraints score the same nodes again and again).
        if memo.is_none() && ssn.scores_are_node_local(task) {
            memo = Some(
                search
                    .memo
                    .class(ssn.state.task(task).spec.sched_class(), nodes.len()),
            );
        }
        if with_topology {
            ssn.state.set_task_job_hyper_node(task, allocated);
        }
        let Some(best) = choose_node(ssn, task, &feasible, memo) else {
            continue;
        };
        place(ssn, &mut stmt, task, best);
        if with_topology {
            let topology = ssn.state.topology();
            if let Some(h) = topology.lowest_of_node(best) {
                allocated = topology.lca(Some(h), allocated);
            }
        }
        if ssn.sub_job_ready(job, sub_job) {
            break;
        }
    }
    if ssn.sub_job_ready(job, sub_job) || ssn.sub_job_pipelined(job, sub_job) {
        return Some(stmt);
    }
    ssn.discard(stmt);
    None
}

/// A search of this job's that found no node, and the state it was done in. A job that may go
/// on after a task fits nowhere (`minMember` below its size) would otherwise search every node
/// again for each of its tasks of the same kind, with nothing changed, and fail again.
/// Volcano skips such searches only for tasks with a role (`TaskHasFitErrors`); this skips
/// them for any task the plugins answer alike ([`Session::predicates_alike`]), with the same
/// reasons recorded.
struct FailedSearch {
    task: TaskId,
    /// The session's touch log length and epoch then: while both stand, no node's state and
    /// no placement changed.
    touches: usize,
    epoch: u64,
    fit_errors: FitErrors,
}

impl FailedSearch {
    fn of(ssn: &Session, task: TaskId, fit_errors: &FitErrors) -> Self {
        FailedSearch {
            task,
            touches: ssn.state.search_touches().len(),
            epoch: ssn.state.search_stamps().epoch(),
            fit_errors: fit_errors.clone(),
        }
    }

    /// The reasons `task` fits nowhere, when its search would be this one again. A task with
    /// a nominated node is searched (its node is tried first).
    fn answers(&self, ssn: &Session, task: TaskId) -> Option<FitErrors> {
        let unchanged = self.touches == ssn.state.search_touches().len()
            && self.epoch == ssn.state.search_stamps().epoch();
        (unchanged
            && ssn.state.task(task).spec.nominated_node_name.is_none()
            && ssn.predicates_alike(task, self.task))
        .then(|| self.fit_errors.clone())
    }
}

/// The task's class memo. A class whose searches over all `nodes` will sweep them several
/// times (`tasks_left` of its job times the nodes each search wants) gets an index over every
/// node (`search_index`).
fn class_memo<'m>(
    ssn: &Session,
    memo: &'m mut SearchMemo,
    task: TaskId,
    nodes: usize,
    tasks_left: Option<usize>,
) -> &'m mut ClassMemo {
    let class = ssn.state.task(task).spec.sched_class();
    let sweeps = tasks_left.is_some_and(|t| {
        t.saturating_mul(num_feasible_nodes_to_find(ssn, nodes))
            >= SWEEPS_FOR_INDEX.saturating_mul(nodes)
    });
    if sweeps {
        memo.class_indexed(class, nodes)
    } else {
        memo.class(class, nodes)
    }
}

/// Records why the task fits nowhere, and tells whether the job's other tasks are still worth
/// trying (`NeedContinueAllocating`).
fn record_and_go_on(
    ssn: &mut Session,
    target: Target,
    task: TaskId,
    fit_errors: FitErrors,
) -> bool {
    ssn.state
        .record_task_fit_errors(target.job, task, fit_errors);
    sub_job::need_continue_allocating(ssn, target.job, target.sub_job)
}

/// `allocateResourcesForTask` (§6.2.4): allocate onto idle resources, else pipeline onto
/// resources being released.
fn place(ssn: &mut Session, stmt: &mut Statement, task: TaskId, node: NodeId) {
    let n = ssn.state.node(node);
    let req = ssn.state.task(task).resreq();
    let result = if fits_idle_now(ssn, task, node) {
        ssn.allocate(stmt, task, node)
    } else if req
        .fits_future_idle(&n.idle, &n.releasing, &n.pipelined)
        .is_ok()
    {
        ssn.pipeline(stmt, task, node, false)
    } else {
        Ok(())
    };
    if let Err(e) = result {
        tracing::warn!(error = %e, task = ssn.state.task(task).key(), "placement failed");
        // Volcano only logs it; here the pod's condition says why it waits (a device's node
        // lock, say), unless a reason was recorded already.
        if let Some(job) = ssn.state.job_of(task)
            && !ssn.state.job(job).nodes_fit_errors.contains_key(&task)
        {
            ssn.state
                .record_task_fit_errors(job, task, FitErrors::with_message(e));
        }
    }
}
