//! `reclaim`: a starving job takes resources back from other queues, evicting their running,
//! reclaimable tasks so that its pending tasks can be pipelined onto the freed resources
//! (spec/framework.md §6.5; victim order §3.3.1; victim filter §3.3.4; statements §4).
//!
//! Differences from Volcano, each to stop evictions that achieve nothing (see
//! [`super::victims`] and docs/fairness.md, "Preemption and reclaim without storms"): evicting
//! stops only once the task really fits, predicates included (Volcano compares resources only,
//! #4925); a task that fits somewhere without evicting is left to allocate, as in Volcano (whose
//! reclaim only looks at nodes that hold reclaimees), and nothing is evicted for it elsewhere
//! (Volcano would still evict on a node with reclaimees); evicted victims the task turns out not
//! to need are spared again;
//! an eviction whose resources the victim's queue would take straight back in the next cycle is
//! refused (#4947, #4949).
//!
//! As in Volcano, network-topology jobs are not skipped, and there is no best-effort rule.

use std::collections::{BTreeMap, BTreeSet};

use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::{JobId, QueueId, TaskId, TaskStatus};

use super::helper::PredicateHelper;
use super::victims::{
    Contest, EvictionArgs, Rules, fits, pending_tasks, preempt_on_first_node, sanitize_victims,
};

/// The action's name, as configured and as recorded on its evictions.
pub const NAME: &str = "reclaim";

pub fn execute(ssn: &mut Session) {
    let args = EvictionArgs::read(ssn, NAME);

    let mut queues: PriorityQueue<QueueId> = PriorityQueue::new();
    let mut seen: BTreeSet<QueueId> = BTreeSet::new();
    let mut reclaimers: BTreeMap<QueueId, PriorityQueue<JobId>> = BTreeMap::new();
    let mut tasks: BTreeMap<JobId, PriorityQueue<TaskId>> = BTreeMap::new();
    let job_ids: Vec<JobId> = ssn.state.job_ids().collect();
    for job in job_ids {
        let j = ssn.state.job(job);
        let Some(queue) = j.queue else { continue };
        if j.is_pending() || ssn.job_valid(job).is_some() {
            continue;
        }
        // Every queue with a job takes part (its Overused check runs), starving or not.
        if seen.insert(queue) {
            queues.push(queue, |a, b| ssn.queue_order(a, b));
        }
        if ssn.job_starving(job) {
            reclaimers
                .entry(queue)
                .or_default()
                .push(job, |a, b| ssn.job_order(a, b));
            tasks.insert(job, pending_tasks(ssn, job));
        }
    }

    while let Some(queue) = queues.pop(|a, b| ssn.queue_order(a, b)) {
        if ssn.overused(queue) {
            tracing::debug!(
                queue = ssn.state.queue(queue).name(),
                "queue overused, no reclaim"
            );
            continue;
        }
        while let Some(job) = reclaimers
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
                if ssn.state.task(task).spec.preemption_never
                    || !ssn.preemptive(queue, task)
                    || ssn.pre_predicate(task).is_err()
                {
                    continue;
                }
                if let Err(reason) = reclaim_for_task(ssn, &mut stmt, task, queue, args) {
                    tracing::debug!(task = ssn.state.task(task).key(), %reason, "no reclaim");
                }
            }
            if ssn.job_pipelined(job) {
                ssn.commit(stmt);
            } else {
                ssn.discard(stmt);
            }
            // Volcano pushes the queue back while it has reclaimers left; the inner loop drains
            // them anyway, so a later pop only re-checks Overused.
            if reclaimers.get(&queue).is_some_and(|jobs| !jobs.is_empty()) {
                queues.push(queue, |a, b| ssn.queue_order(a, b));
            }
        }
    }
}

/// `reclaimForTask` (§6.5) for a task of a job in `queue`.
fn reclaim_for_task(
    ssn: &mut Session,
    stmt: &mut Statement,
    task: TaskId,
    queue: QueueId,
    args: EvictionArgs,
) -> Result<(), String> {
    // A helper per task, as Volcano does.
    let mut helper = PredicateHelper::new(args.predicate_cache);
    let candidates = ssn.filter_out_unschedulable_and_unresolvable_nodes(task);
    let (feasible, _) = helper.predicate_nodes(
        ssn,
        task,
        &candidates,
        &|s, t, n| s.predicate_for_preempt_action(t, n),
        None,
        None,
    );
    if feasible.is_empty() {
        return Err("no candidate node".to_string());
    }
    // A task that fits as things are needs no reclaim: allocate places it in this session or
    // the next (Volcano's reclaim only looks at nodes holding reclaimees, "No reclaimees on
    // Node", and neither evicts nor pipelines for such a task on a node without them).
    if feasible.iter().any(|&n| fits(ssn, task, n, None)) {
        return Err("fits without evicting anything; left to allocate".to_string());
    }
    let rules = Rules {
        reason: NAME,
        allocatable_in: None,
        contest: Contest::Queues,
        refuse_take_back: args.refuse_take_back,
    };
    preempt_on_first_node(ssn, stmt, task, feasible, rules, &|ssn, node| {
        let reclaimees: Vec<TaskId> = ssn
            .state
            .node(node)
            .tasks
            .iter()
            .map(|&(t, _)| t)
            .filter(|&t| reclaimable_from(ssn, t, queue))
            .collect();
        if reclaimees.is_empty() {
            return Vec::new();
        }
        // Hand the candidates over in eviction order: Volcano's capacity plugin sorts them
        // itself (its running totals depend on the order); other plugins do not care.
        let mut heap = ssn.build_victims_priority_queue(&reclaimees, task);
        let mut ordered = Vec::with_capacity(reclaimees.len());
        while let Some(t) = heap.pop(|a, b| ssn.victim_before(a, b, task)) {
            ordered.push(t);
        }
        sanitize_victims(ssn.reclaimable(task, &ordered), &ordered)
    })
}

/// The reclaimee filter of §6.5: a `Running` (only), preemptable task of a session job in
/// another queue, one that lets its resources be reclaimed (`reclaimable` ≠ false).
fn reclaimable_from(ssn: &Session, victim: TaskId, reclaimer_queue: QueueId) -> bool {
    let v = ssn.state.task(victim);
    if v.status != TaskStatus::Running || !v.spec.preemptable {
        return false;
    }
    let Some(vq) = v.job.and_then(|j| ssn.state.job(j).queue) else {
        return false;
    };
    vq != reclaimer_queue && ssn.state.queue(vq).spec.reclaimable
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::victims::testkit::*;
    use crate::model::TaskStatus;

    /// q1 (deserved 4) runs 6 cpu on one 6-cpu node; q2 (deserved 4) has a pending 2-cpu pod.
    fn overused_cluster(q1_reclaimable: bool) -> Cluster {
        let mut c = Cluster::new();
        c.queue("q1", json!({"deserved": {"cpu": "4"}}), q1_reclaimable)
            .queue("q2", json!({"deserved": {"cpu": "4"}}), true);
        c.node("n1", "6", json!({}));
        c.job("a", "q1", 1, "");
        for i in 0..3 {
            c.pod(&format!("a-x-{i}"), "a", "2", Some("n1"));
        }
        c.job("b", "q2", 1, "");
        c.pod("b-x-0", "b", "2", None);
        c
    }

    #[test]
    fn reclaims_from_an_overused_queue() {
        let mut ssn = overused_cluster(true).session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        // Candidates arrive in victim order (highest pod index first); the quota plugin permits
        // the first only: q1 is then at its deserved.
        assert_eq!(
            evictions(&ssn),
            vec![("a-x-2".to_string(), "reclaim".to_string())]
        );
        assert_eq!(pipelined_on(&ssn, "b-x-0").as_deref(), Some("n1"));
        assert!(ssn.state.task(task(&ssn, "b-x-0")).eviction_occurred);
    }

    #[test]
    fn no_reclaim_from_a_queue_marked_not_reclaimable() {
        let mut ssn = overused_cluster(false).session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert!(evictions(&ssn).is_empty());
        assert_eq!(status(&ssn, "b-x-0"), TaskStatus::Pending);
    }

    #[test]
    fn no_reclaim_from_a_queue_within_its_deserved() {
        let mut c = overused_cluster(true);
        c.queue("q1", json!({"deserved": {"cpu": "6"}}), true);
        let mut ssn = c.session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert!(evictions(&ssn).is_empty());
    }

    #[test]
    fn an_overused_reclaimer_queue_does_not_reclaim() {
        // q2 already holds its 4 deserved cpu elsewhere.
        let mut c = overused_cluster(true);
        c.node("n2", "4", json!({}));
        c.job("b2", "q2", 1, "");
        c.pod("b2-x-0", "b2", "4", Some("n2"));
        let mut ssn = c.session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert!(evictions(&ssn).is_empty());
    }

    #[test]
    fn a_task_its_queue_may_not_take_does_not_reclaim() {
        // Preemptive: q2 would exceed its deserved 1 cpu with a 2-cpu pod.
        let mut c = overused_cluster(true);
        c.queue("q2", json!({"deserved": {"cpu": "1"}}), true);
        let mut ssn = c.session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert!(evictions(&ssn).is_empty());
    }

    #[test]
    fn no_eviction_when_a_predicate_still_fails_after_it() {
        // Volcano #4925: resources would fit after the eviction, a predicate would not.
        let mut c = overused_cluster(true);
        c.node("n1", "6", json!({"test/unschedulable": "true"}));
        let mut ssn = c.session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert!(evictions(&ssn).is_empty());
        for i in 0..3 {
            assert_eq!(status(&ssn, &format!("a-x-{i}")), TaskStatus::Running);
        }
    }

    #[test]
    fn reclaim_stops_at_the_first_fit_then_spares_what_is_not_needed() {
        // q1 holds 3 + 1 cpu over a deserved of 0: both are victims, the 1-cpu pod (last in
        // task order) first. The 3-cpu reclaimer needs only the 3-cpu pod gone.
        let mut c = Cluster::new();
        c.queue("q1", json!({"deserved": {"cpu": "0"}}), true)
            .queue("q2", json!({"deserved": {"cpu": "4"}}), true);
        c.node("n1", "4", json!({}));
        c.job("a", "q1", 1, "");
        c.pod("a-x-0", "a", "3", Some("n1"));
        c.pod("a-x-1", "a", "1", Some("n1"));
        c.job("b", "q2", 1, "");
        c.pod("b-x-0", "b", "3", None);
        let mut ssn = c.session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert_eq!(
            evictions(&ssn),
            vec![("a-x-0".to_string(), "reclaim".to_string())]
        );
        assert_eq!(status(&ssn, "a-x-1"), TaskStatus::Running);
    }

    #[test]
    fn eviction_the_victim_queue_would_take_back_is_refused() {
        // Volcano #4947: q1 (deserved 3) runs one 4-cpu pod; q2 (deserved 5) runs 1 cpu and
        // wants 4 more. Evicting the pod leaves q1 at share 0, ahead of q2 at share 0.2, and
        // free to admit the pod again: the next allocate would give it the node back. Refused.
        let mut c = Cluster::new();
        c.queue("q1", json!({"deserved": {"cpu": "3"}}), true)
            .queue("q2", json!({"deserved": {"cpu": "5"}}), true);
        c.node("n1", "5", json!({}));
        c.job("a", "q1", 1, "");
        c.pod("a-x-0", "a", "4", Some("n1"));
        c.job("b", "q2", 1, "");
        c.pod("b-x-0", "b", "1", Some("n1"));
        c.job("c", "q2", 1, "");
        c.pod("c-x-0", "c", "4", None);
        let mut ssn = c.session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert!(evictions(&ssn).is_empty());
        assert_eq!(status(&ssn, "a-x-0"), TaskStatus::Running);
        let t = ssn.state.task(task(&ssn, "c-x-0"));
        assert_eq!(t.status, TaskStatus::Pending);
        assert_eq!(
            ssn.state.task_scheduling_reason(task(&ssn, "c-x-0")).2,
            None
        );
    }

    #[test]
    fn eviction_is_allowed_when_the_victim_queue_could_not_readmit_it() {
        // Same as above, but q1's capability (3) stops it from admitting the 4-cpu pod again.
        let mut c = Cluster::new();
        c.queue(
            "q1",
            json!({"deserved": {"cpu": "3"}, "capability": {"cpu": "3"}}),
            true,
        )
        .queue("q2", json!({"deserved": {"cpu": "5"}}), true);
        c.node("n1", "5", json!({}));
        c.job("a", "q1", 1, "");
        c.pod("a-x-0", "a", "4", Some("n1"));
        c.job("b", "q2", 1, "");
        c.pod("b-x-0", "b", "1", Some("n1"));
        c.job("c", "q2", 1, "");
        c.pod("c-x-0", "c", "4", None);
        let mut ssn = c.session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert_eq!(
            evictions(&ssn),
            vec![("a-x-0".to_string(), "reclaim".to_string())]
        );
        assert_eq!(pipelined_on(&ssn, "c-x-0").as_deref(), Some("n1"));
    }

    #[test]
    fn the_victim_queue_that_would_not_take_back_is_chosen() {
        // Two nodes: on n1 the only victim would come back (as above); on n2 q3, still at its
        // deserved after losing a pod, is overused and admits nothing: reclaim goes there.
        let mut c = Cluster::new();
        c.queue("q1", json!({"deserved": {"cpu": "3"}}), true)
            .queue("q2", json!({"deserved": {"cpu": "5"}}), true)
            .queue("q3", json!({"deserved": {"cpu": "2"}}), true);
        c.node("n1", "4", json!({})).node("n2", "4", json!({}));
        c.job("a", "q1", 1, "");
        c.pod("a-x-0", "a", "4", Some("n1"));
        c.job("d", "q3", 1, "");
        c.pod("d-x-0", "d", "2", Some("n2"));
        c.pod("d-x-1", "d", "2", Some("n2"));
        c.job("c", "q2", 1, "");
        c.pod("c-x-0", "c", "2", None);
        let mut ssn = c.session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert_eq!(
            evictions(&ssn),
            vec![("d-x-1".to_string(), "reclaim".to_string())]
        );
        assert_eq!(pipelined_on(&ssn, "c-x-0").as_deref(), Some("n2"));
    }

    /// Volcano's "No reclaimees on Node": a task that fits on a node with room is neither
    /// pipelined nor a reason to evict; allocate binds it.
    #[test]
    fn a_task_that_fits_somewhere_is_left_to_allocate() {
        let mut c = overused_cluster(true);
        c.node("n2", "2", json!({}));
        let mut ssn = c.session(&conf("reclaim"));
        run(&mut ssn, "reclaim");
        assert!(evictions(&ssn).is_empty());
        assert_eq!(pipelined_on(&ssn, "b-x-0"), None);
        run(&mut ssn, "allocate");
        assert!(evictions(&ssn).is_empty());
    }

    #[test]
    fn no_starving_registrant_means_no_reclaim() {
        let conf = "actions: \"reclaim\"\ntiers:\n- plugins:\n  - name: prio\n  - name: quota\n";
        let mut ssn = overused_cluster(true).session(conf);
        run(&mut ssn, "reclaim");
        assert!(evictions(&ssn).is_empty());
    }
}
