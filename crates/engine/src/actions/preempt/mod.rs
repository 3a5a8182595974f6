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
//! Jobs with network topology, which Volcano never lets preempt, do not exist here (no
//! hyperNodes are modelled), and there are no scheduler shards, so every node is in one
//! candidate group.

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
        if j.is_pending() || ssn.job_valid(job).is_some() || !ssn.job_starving(job) {
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
    let (feasible, _) = helper.predicate_nodes(ssn, task, &candidates, &|s, t, n| {
        s.predicate_for_preempt_action(t, n)
    });
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
mod tests {
    use serde_json::json;

    use crate::actions::victims::testkit::*;
    use crate::model::TaskStatus;

    /// One node of 4 cpu full of low-priority work, a pending high-priority pod.
    fn priority_cluster() -> Cluster {
        let mut c = Cluster::new();
        c.priority_class("low", 10).priority_class("high", 100);
        c.node("n1", "4", json!({}));
        c.job("low", "q1", 1, "low");
        c.pod("low-a-0", "low", "2", Some("n1"));
        c.pod("low-a-1", "low", "2", Some("n1"));
        c.job("high", "q1", 1, "high");
        c.pod("high-a-0", "high", "2", None);
        c
    }

    #[test]
    fn higher_priority_job_evicts_one_victim_and_is_pipelined() {
        let mut ssn = priority_cluster().session(&conf("preempt"));
        run(&mut ssn, "preempt");
        // Same job: reverse task order, so the later pod gives way first.
        assert_eq!(
            evictions(&ssn),
            vec![("low-a-1".to_string(), "preempt".to_string())]
        );
        assert_eq!(status(&ssn, "low-a-1"), TaskStatus::Releasing);
        assert_eq!(status(&ssn, "low-a-0"), TaskStatus::Running);
        assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n1"));
        assert!(ssn.state.task(task(&ssn, "high-a-0")).eviction_occurred);
    }

    #[test]
    fn no_starving_registrant_means_no_preemption() {
        // §8.2 item 7: without a JobStarving registrant nothing is starving.
        let conf = "actions: \"preempt\"\ntiers:\n- plugins:\n  - name: prio\n  - name: quota\n";
        let mut ssn = priority_cluster().session(conf);
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
        assert_eq!(status(&ssn, "high-a-0"), TaskStatus::Pending);
    }

    #[test]
    fn job_no_longer_starving_stops_preempting() {
        // minMember 1 with two pending pods: once one is pipelined the job is not starving.
        let mut c = priority_cluster();
        c.pod("high-a-1", "high", "2", None);
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert_eq!(evictions(&ssn).len(), 1);
        assert_eq!(status(&ssn, "high-a-1"), TaskStatus::Pending);
    }

    #[test]
    fn gang_that_cannot_be_pipelined_evicts_nothing() {
        // The high job needs 3 pods of 2 cpu on a 4-cpu node: two victims make room for two
        // pods only, the job is not pipelined, and the statement is discarded.
        let mut c = Cluster::new();
        c.priority_class("low", 10).priority_class("high", 100);
        c.node("n1", "4", json!({}));
        c.job("low", "q1", 1, "low");
        c.pod("low-a-0", "low", "2", Some("n1"));
        c.pod("low-a-1", "low", "2", Some("n1"));
        c.job("high", "q1", 3, "high");
        for i in 0..3 {
            c.pod(&format!("high-a-{i}"), "high", "2", None);
        }
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
        for name in ["low-a-0", "low-a-1"] {
            assert_eq!(status(&ssn, name), TaskStatus::Running);
        }
        for i in 0..3 {
            assert_eq!(status(&ssn, &format!("high-a-{i}")), TaskStatus::Pending);
        }
        let node = ssn.state.node(node(&ssn, "n1"));
        assert_eq!(node.idle.milli_cpu, 0.0);
        assert_eq!(node.pipelined.milli_cpu, 0.0);
        assert_eq!(node.releasing.milli_cpu, 0.0);
    }

    #[test]
    fn no_eviction_when_a_predicate_still_fails_after_it() {
        // `test/unschedulable` is Unschedulable: the node stays a candidate, but evicting the
        // victim never makes the pod fit, so nothing is evicted.
        let mut c = Cluster::new();
        c.priority_class("low", 10).priority_class("high", 100);
        c.node("n1", "4", json!({"test/unschedulable": "true"}));
        c.job("low", "q1", 1, "low");
        c.pod("low-a-0", "low", "4", Some("n1"));
        c.job("high", "q1", 1, "high");
        c.pod("high-a-0", "high", "2", None);
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
        assert_eq!(status(&ssn, "low-a-0"), TaskStatus::Running);
    }

    #[test]
    fn eviction_that_fixes_a_predicate_is_made() {
        // `test/max-pods: 2`: the node is full by pod count, not by cpu.
        let mut c = Cluster::new();
        c.priority_class("low", 10).priority_class("high", 100);
        c.node("n1", "8", json!({"test/max-pods": "2"}));
        c.job("low", "q1", 1, "low");
        c.pod("low-a-0", "low", "1", Some("n1"));
        c.pod("low-a-1", "low", "1", Some("n1"));
        c.job("high", "q1", 1, "high");
        c.pod("high-a-0", "high", "1", None);
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert_eq!(evictions(&ssn).len(), 1);
        assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n1"));
    }

    #[test]
    fn unneeded_victims_are_spared() {
        // Victim order: the 1-cpu pod (created last) first, then the 3-cpu pod. The preemptor
        // needs 3 cpu: Volcano evicts both; the 1-cpu pod is not needed and is spared.
        let mut c = Cluster::new();
        c.priority_class("low", 10).priority_class("high", 100);
        c.node("n1", "4", json!({}));
        c.job("big", "q1", 1, "low");
        c.pod("big-a-0", "big", "3", Some("n1"));
        c.job("small", "q1", 1, "low");
        c.pod("small-a-0", "small", "1", Some("n1"));
        c.job("high", "q1", 1, "high");
        c.pod("high-a-0", "high", "3", None);
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert_eq!(
            evictions(&ssn),
            vec![("big-a-0".to_string(), "preempt".to_string())]
        );
        assert_eq!(status(&ssn, "small-a-0"), TaskStatus::Running);
        assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n1"));
        let n = ssn.state.node(node(&ssn, "n1"));
        assert_eq!(n.releasing.milli_cpu, 3000.0);
        assert_eq!(n.idle.milli_cpu, 0.0);
    }

    #[test]
    fn a_node_that_needs_no_eviction_is_preferred() {
        // n1 (scanned first) is full of victims, n2 has room: nothing is evicted.
        let mut c = priority_cluster();
        c.node("n2", "2", json!({}));
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
        assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n2"));
        assert!(!ssn.state.task(task(&ssn, "high-a-0")).eviction_occurred);
    }

    #[test]
    fn preemption_policy_never_does_not_preempt() {
        let mut c = priority_cluster();
        c.pod_with(
            "high-a-1",
            "high",
            "2",
            None,
            json!({"spec": {"preemptionPolicy": "Never"}}),
        );
        // Only the Never pod is pending in its job.
        c.state.delete_pod("ns", "high-a-0");
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
    }

    /// A preemptor nominated to n1, where a lower-priority pod is terminating.
    fn nominated_cluster(condition_reason: &str, annotations: serde_json::Value) -> Cluster {
        let mut c = Cluster::new();
        c.priority_class("low", 10).priority_class("high", 100);
        c.node("n1", "4", annotations);
        c.job("low", "q1", 1, "low");
        c.pod_with(
            "low-a-0",
            "low",
            "2",
            Some("n1"),
            json!({
                "metadata": {"deletionTimestamp": "2024-01-01T00:01:00Z"},
                "spec": {"priority": 10},
                "status": {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": condition_reason}]}
            }),
        );
        c.pod("low-a-1", "low", "2", Some("n1"));
        c.job("high", "q1", 1, "high");
        c.pod_with(
            "high-a-0",
            "high",
            "4",
            None,
            json!({"spec": {"priority": 100}, "status": {"nominatedNodeName": "n1"}}),
        );
        c
    }

    #[test]
    fn waits_for_a_pod_preempted_on_its_nominated_node() {
        // n1 fails the predicates (pod count), and a lower-priority pod preempted there is
        // still terminating: the preemptor waits instead of evicting more.
        let c = nominated_cluster("PreemptionByScheduler", json!({"test/max-pods": "1"}));
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
        assert_eq!(status(&ssn, "high-a-0"), TaskStatus::Pending);
    }

    #[test]
    fn preempts_again_when_the_terminating_pod_was_not_preempted() {
        let c = nominated_cluster("DeletionByTaintManager", json!({"test/max-pods": "1"}));
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert_eq!(
            evictions(&ssn),
            vec![("low-a-1".to_string(), "preempt".to_string())]
        );
        assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n1"));
    }

    #[test]
    fn nominated_node_that_passes_the_predicates_means_no_preemption() {
        // Nothing fails on n1 but resources: Volcano considers the pod schedulable there.
        let c = nominated_cluster("PreemptionByScheduler", json!({}));
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
    }

    #[test]
    fn unresolvable_nominated_node_lets_the_pod_preempt_elsewhere() {
        let mut c = nominated_cluster("PreemptionByScheduler", json!({"test/unresolvable": "x"}));
        c.node("n2", "4", json!({}));
        c.pod("low-b-0", "low", "4", Some("n2"));
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert_eq!(
            evictions(&ssn),
            vec![("low-b-0".to_string(), "preempt".to_string())]
        );
        assert_eq!(pipelined_on(&ssn, "high-a-0").as_deref(), Some("n2"));
    }

    #[test]
    fn within_a_job_a_higher_priority_task_preempts_a_lower_one() {
        // Phase 2: one job, a running task of priority 1 and a pending one of priority 5.
        let mut c = Cluster::new();
        c.node("n1", "2", json!({}));
        c.job("j", "q1", 2, "");
        c.pod_with(
            "j-a-0",
            "j",
            "2",
            Some("n1"),
            json!({"spec": {"priority": 1}}),
        );
        c.pod_with("j-b-0", "j", "2", None, json!({"spec": {"priority": 5}}));
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert_eq!(
            evictions(&ssn),
            vec![("j-a-0".to_string(), "preempt".to_string())]
        );
        assert_eq!(pipelined_on(&ssn, "j-b-0").as_deref(), Some("n1"));
    }

    #[test]
    fn other_queues_are_not_preempted() {
        let mut c = Cluster::new();
        c.priority_class("low", 10).priority_class("high", 100);
        c.node("n1", "2", json!({}));
        c.job("low", "q2", 1, "low");
        c.pod("low-a-0", "low", "2", Some("n1"));
        c.job("high", "q1", 1, "high");
        c.pod("high-a-0", "high", "2", None);
        let mut ssn = c.session(&conf("preempt"));
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
    }

    #[test]
    fn eviction_the_victim_job_would_take_back_is_refused() {
        // With `lowfirst` ordering jobs, the low job would be served first next cycle and
        // retake the node: the eviction is refused and the preemptor is not nominated.
        let c = priority_cluster();
        let conf = "actions: \"preempt\"\ntiers:\n- plugins:\n  - name: lowfirst\n  - name: prio\n  - name: gangish\n  - name: quota\n";
        let mut ssn = c.session(conf);
        run(&mut ssn, "preempt");
        assert!(evictions(&ssn).is_empty());
        let t = ssn.state.task(task(&ssn, "high-a-0"));
        assert_eq!(t.status, TaskStatus::Pending);
        assert!(t.last_transaction.is_none());
        assert_eq!(
            ssn.state.task_scheduling_reason(task(&ssn, "high-a-0")).2,
            None
        );
    }

    #[test]
    fn topology_aware_mode_evicts_one_victim() {
        let conf = format!(
            "{}configurations:\n- name: preempt\n  arguments:\n    enableTopologyAwarePreemption: true\n",
            conf("preempt")
        );
        let mut ssn = priority_cluster().session(&conf);
        run(&mut ssn, "preempt");
        assert_eq!(evictions(&ssn).len(), 1);
    }
}
