//! `preempt`: within a queue, evict running tasks so that a starving job's pending tasks can be
//! pipelined onto the freed resources — first between the jobs of the queue, then inside each
//! starving job (spec/framework.md §6.4, normal mode §6.4.3, topology-aware mode §6.4.4; victim
//! order §3.3.1; victim filter §3.3.4; statements §4; the nominated-node wait rule §7.5).
//!
//! Two ways to choose the node, picked by `enableTopologyAwarePreemption`:
//!
//! * normal mode (the default): the feasible nodes best score first, and the first node where
//!   evicting victims lets the task fit wins;
//! * topology-aware mode (module `topology_aware`): a dry run on up to k feasible nodes
//!   collects the victims each would need, and the node whose victims cost least (lowest
//!   priorities, fewest pods, most recently started) wins. Despite its name the mode knows
//!   nothing of network topology; it is kube-scheduler's default preemption.
//!
//! Differences from Volcano, in both modes, each to stop evictions that achieve nothing (see
//! [`super::victims`] and docs/fairness.md, "Preemption and reclaim without storms"): a node
//! where the task fits without evicting is taken first; evicted victims the task turns out not
//! to need are spared again; an eviction whose resources the victim's job would take straight
//! back in the next cycle is refused.
//!
//! Jobs with network topology (on the job or a sub-group) never preempt, as in Volcano, and
//! there are no scheduler shards, so every node is in one candidate group.

use std::collections::BTreeMap;

use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::{JobId, NodeId, QueueId, TaskId};

use super::helper::{PredicateHelper, prioritize_nodes};
use super::victims::{
    Contest, Rules, pending_tasks, place_without_eviction, preempt_on_first_node, sanitize_victims,
};

mod args;
mod topology_aware;

use args::PreemptArgs;

/// The action's name, as configured and as recorded on its evictions.
pub const NAME: &str = "preempt";

/// Which running tasks a preemptor may look at (§6.4.2 `interJob` / `intraJob`).
#[derive(Copy, Clone, Debug)]
enum Scope {
    /// Tasks of other jobs of the preemptor job's queue.
    OtherJobs(JobId),
    /// Tasks of the preemptor's own job.
    OwnJob,
}

pub fn execute(ssn: &mut Session) {
    let args = PreemptArgs::read(ssn, NAME);

    let mut preemptors: BTreeMap<QueueId, PriorityQueue<JobId>> = BTreeMap::new();
    let mut starving: BTreeMap<QueueId, Vec<JobId>> = BTreeMap::new();
    let mut tasks: BTreeMap<JobId, PriorityQueue<TaskId>> = BTreeMap::new();
    let job_ids: Vec<JobId> = ssn.state.job_ids().collect();
    for job in job_ids {
        let j = ssn.state.job(job);
        let Some(queue) = j.queue else { continue };
        if j.is_pending()
            || j.contains_network_topology()
            || ssn.job_valid(job).is_some()
            || !ssn.job_starving(job)
        {
            continue;
        }
        preemptors
            .entry(queue)
            .or_default()
            .push(job, |a, b| ssn.job_order(a, b));
        starving.entry(queue).or_default().push(job);
        tasks.insert(job, pending_tasks(ssn, job));
    }

    let mut queues = PriorityQueue::new();
    for &q in preemptors.keys() {
        queues.push(q, |a, b| ssn.queue_order(a, b));
    }

    // One helper for the whole action, so its error cache spans every preemptor (§6.0.2).
    let mut helper = PredicateHelper::new(args.eviction.predicate_cache);
    while let Some(queue) = queues.pop(|a, b| ssn.queue_order(a, b)) {
        // Between the jobs of the queue: one statement per preemptor job, committed only if
        // the job ends up pipelined, so a gang never evicts for a part of itself.
        while let Some(job) = preemptors
            .get_mut(&queue)
            .and_then(|jobs| jobs.pop(|a, b| ssn.job_order(a, b)))
        {
            let mut stmt = Statement::new();
            while ssn.job_starving(job) {
                let Some(task) = tasks
                    .get_mut(&job)
                    .and_then(|heap| heap.pop(|a, b| ssn.task_order(a, b)))
                else {
                    break;
                };
                if let Err(reason) = preempt_task(
                    ssn,
                    &mut stmt,
                    task,
                    Scope::OtherJobs(job),
                    &mut helper,
                    args,
                ) {
                    tracing::debug!(task = ssn.state.task(task).key(), %reason, "no preemption");
                }
            }
            if ssn.job_pipelined(job) {
                ssn.commit(stmt);
            } else {
                ssn.discard(stmt);
            }
        }

        // Inside each starving job of the queue, one task at a time; the first task that
        // cannot preempt ends the job's turn.
        for job in starving.get(&queue).cloned().unwrap_or_default() {
            let mut heap = pending_tasks(ssn, job);
            while let Some(task) = heap.pop(|a, b| ssn.task_order(a, b)) {
                let mut stmt = Statement::new();
                match preempt_task(ssn, &mut stmt, task, Scope::OwnJob, &mut helper, args) {
                    Ok(()) => ssn.commit(stmt),
                    Err(reason) => {
                        tracing::debug!(task = ssn.state.task(task).key(), %reason, "no preemption");
                        ssn.discard(stmt);
                        break;
                    }
                }
            }
        }
    }
}

/// `preempt` for one task (§6.4.3): eligibility, pre-predicates, the candidate nodes, then
/// the node attempts of the configured mode.
fn preempt_task(
    ssn: &mut Session,
    stmt: &mut Statement,
    task: TaskId,
    scope: Scope,
    helper: &mut PredicateHelper,
    args: PreemptArgs,
) -> Result<(), String> {
    eligible_to_preempt(ssn, task)?;
    ssn.pre_predicate(task)
        .map_err(|e| format!("pre-predicate failed: {e}"))?;
    let candidates = ssn.filter_out_unschedulable_and_unresolvable_nodes(task);
    let (feasible, _) = helper.predicate_nodes(
        ssn,
        task,
        &candidates,
        &|s, t, n| s.predicate_for_preempt_action(t, n),
        None,
        None,
    );
    let queue = ssn
        .state
        .queue_of_task(task)
        .ok_or_else(|| "the task's job is not in the session".to_string())?;
    let rules = Rules {
        reason: NAME,
        allocatable_in: Some(queue),
        contest: Contest::Jobs,
        refuse_take_back: args.eviction.refuse_take_back,
    };
    if args.topology_aware {
        topology_aware::preempt(ssn, stmt, task, scope, &feasible, rules, args.candidates)
    } else {
        normal_preempt(ssn, stmt, task, scope, &feasible, rules)
    }
}

/// `taskEligibleToPreempt`: `preemptionPolicy: Never` never preempts; a pod already nominated
/// to a node (by an earlier preemption) preempts again only if that node has become
/// unresolvable for it, or if the node still fails the predicates and no lower-priority pod is
/// being deleted there by a preemption (otherwise it waits for that pod to go, §7.5).
fn eligible_to_preempt(ssn: &Session, task: TaskId) -> Result<(), String> {
    let spec = &ssn.state.task(task).spec;
    if spec.preemption_never {
        return Err("preemptionPolicy is Never".to_string());
    }
    let Some(nominated) = &spec.nominated_node_name else {
        return Ok(());
    };
    let Some(node) = ssn.state.node_id(nominated) else {
        return Err(format!("nominated node {nominated} is not in the session"));
    };
    let err = match ssn.predicate(task, node) {
        Ok(()) => return Err(format!("nominated node {nominated} is already schedulable")),
        Err(e) => e,
    };
    if err.is_unresolvable() {
        return Ok(());
    }
    let priority = pod_priority(ssn, task);
    let waiting_for = ssn
        .state
        .node(node)
        .tasks
        .iter()
        .any(|&(t, _)| pod_priority(ssn, t) < priority && terminating_by_preemption(ssn, t));
    if waiting_for {
        return Err(format!(
            "a lower-priority pod preempted on nominated node {nominated} is still terminating"
        ));
    }
    Ok(())
}

/// The pod's `spec.priority`, 0 when unset (Volcano's `PodPriority`; not the task priority,
/// which an annotation may override).
fn pod_priority(ssn: &Session, task: TaskId) -> i32 {
    let pod = &ssn.state.task(task).spec.pod;
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Being deleted, with the first `DisruptionTarget` condition saying the scheduler preempted it.
fn terminating_by_preemption(ssn: &Session, task: TaskId) -> bool {
    let pod = &ssn.state.task(task).spec.pod;
    if pod.metadata.deletion_timestamp.is_none() {
        return false;
    }
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "DisruptionTarget"))
        .is_some_and(|c| c.status == "True" && c.reason.as_deref() == Some("PreemptionByScheduler"))
}

/// `normalPreempt` (§6.4.3) over the feasible nodes, best score first.
fn normal_preempt(
    ssn: &mut Session,
    stmt: &mut Statement,
    task: TaskId,
    scope: Scope,
    feasible: &[NodeId],
    rules: Rules,
) -> Result<(), String> {
    let nodes = by_score(ssn, task, feasible);
    if nodes.is_empty() {
        return Err("no candidate node".to_string());
    }
    if place_without_eviction(ssn, stmt, task, &nodes, rules.allocatable_in) {
        return Ok(());
    }
    preempt_on_first_node(ssn, stmt, task, nodes, rules, &|ssn, node| {
        let victims = node_victims(ssn, task, node, scope);
        if victims.is_empty() {
            return Vec::new();
        }
        // `volcano_pod_preemption_victims` / `volcano_total_preemption_attempts` (Volcano sets
        // them per node considered).
        ssn.state.record_preemption_attempt();
        ssn.state.record_preemption_victims(victims.len());
        victims
    })
}

/// The victims the plugins allow on `node` among the tasks `scope` lets the preemptor look at
/// (`Preemptable` over the filtered tasks of the node), in the plugins' answer order.
fn node_victims(ssn: &Session, task: TaskId, node: NodeId, scope: Scope) -> Vec<TaskId> {
    let preemptees: Vec<TaskId> = ssn
        .state
        .node(node)
        .tasks
        .iter()
        .map(|&(t, _)| t)
        .filter(|&t| may_preempt(ssn, task, t, scope))
        .collect();
    if preemptees.is_empty() {
        return Vec::new();
    }
    sanitize_victims(ssn.preemptable(task, &preemptees), &preemptees)
}

/// `SortNodes(PrioritizeNodes(…))`: best score first, ties in search order. A scoring failure
/// leaves no candidate (Volcano then gets empty score buckets).
fn by_score(ssn: &Session, task: TaskId, nodes: &[NodeId]) -> Vec<NodeId> {
    let Some(scores) = prioritize_nodes(ssn, task, nodes) else {
        return Vec::new();
    };
    let mut scored: Vec<(NodeId, f64)> = nodes.iter().copied().zip(scores).collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.into_iter().map(|(n, _)| n).collect()
}

/// The preemptee filter of §6.4.2: a running (or bound) preemptable task, not best-effort-only
/// for a best-effort preemptor, in the scope's jobs.
fn may_preempt(ssn: &Session, preemptor: TaskId, victim: TaskId, scope: Scope) -> bool {
    let (p, v) = (ssn.state.task(preemptor), ssn.state.task(victim));
    if !v.status.is_preemptable() || !v.spec.preemptable {
        return false;
    }
    if p.spec.best_effort && !v.spec.best_effort {
        return false;
    }
    match scope {
        Scope::OtherJobs(job) => match v.job {
            Some(vj) => vj != job && ssn.state.job(vj).queue == ssn.state.job(job).queue,
            None => false,
        },
        Scope::OwnJob => v.job.is_some() && v.job == p.job,
    }
}

#[cfg(test)]
mod tests;
