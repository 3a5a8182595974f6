//! `backfill`: place best-effort tasks, those without resource requests
//! (spec/framework.md §6.3).

use std::collections::BTreeMap;

use crate::framework::{PriorityQueue, Session};
use crate::model::fit::{FitError, FitErrors};
use crate::model::{JobId, QueueId, TaskId, TaskStatus};

use super::helper::{PredicateHelper, predicate_for_allocate, prioritize_nodes, select_best_node};

fn pick_up_pending_tasks(ssn: &mut Session) -> Vec<TaskId> {
    let mut queues: PriorityQueue<QueueId> = PriorityQueue::new();
    let mut jobs_by_queue: BTreeMap<QueueId, PriorityQueue<JobId>> = BTreeMap::new();
    let mut tasks_by_job: BTreeMap<JobId, PriorityQueue<TaskId>> = BTreeMap::new();

    let job_ids: Vec<JobId> = ssn.state.job_ids().collect();
    for job in job_ids {
        let j = ssn.state.job(job);
        let Some(q) = j.queue else { continue };
        // Only pending and pipelined tasks are backfilled: a job without any (every running
        // job) is passed over before its validity, which changes nothing, is asked.
        if j.count(TaskStatus::Pending) == 0 && j.count(TaskStatus::Pipelined) == 0 {
            continue;
        }
        if j.is_pending() || ssn.job_valid(job).is_some() {
            continue;
        }
        let mut heap = PriorityQueue::new();
        let ids = ssn.state.job(job).tasks.clone();
        for t in ids {
            let task = ssn.state.task(t);
            if !task.spec.best_effort {
                continue;
            }
            match task.status {
                TaskStatus::Pending if !task.spec.sch_gated => {
                    heap.push(t, |a, b| ssn.task_order(a, b))
                }
                TaskStatus::Pipelined => {
                    ssn.un_pipeline(t);
                    heap.push(t, |a, b| ssn.task_order(a, b));
                }
                _ => {}
            }
        }
        if heap.is_empty() {
            continue;
        }
        tasks_by_job.insert(job, heap);
        let first = !jobs_by_queue.contains_key(&q);
        jobs_by_queue
            .entry(q)
            .or_default()
            .push(job, |a, b| ssn.job_order(a, b));
        if first {
            queues.push(q, |a, b| ssn.queue_order(a, b));
        }
    }

    let mut list = Vec::new();
    while let Some(q) = queues.pop(|a, b| ssn.queue_order(a, b)) {
        let Some(mut jobs) = jobs_by_queue.remove(&q) else {
            continue;
        };
        while let Some(job) = jobs.pop(|a, b| ssn.job_order(a, b)) {
            let Some(mut tasks) = tasks_by_job.remove(&job) else {
                continue;
            };
            while let Some(t) = tasks.pop(|a, b| ssn.task_order(a, b)) {
                list.push(t);
            }
        }
    }
    list
}

pub fn execute(ssn: &mut Session) {
    let tasks = pick_up_pending_tasks(ssn);
    let all_nodes: Vec<_> = ssn.state.node_ids().collect();
    for task in tasks {
        let Some(job) = ssn.state.task(task).job else {
            continue;
        };
        if let Err(e) = ssn.pre_predicate(task) {
            let mut fe = FitErrors::default();
            fe.add_nodes(
                &FitError::error(e, "prePredicate"),
                all_nodes.iter().copied(),
            );
            ssn.state.record_task_fit_errors(job, task, fe);
            continue;
        }
        // A fresh helper per task, as Volcano does (so its error cache never hits).
        let mut helper = PredicateHelper::new(true);
        let (feasible, fit_errors) = helper.predicate_nodes(
            ssn,
            task,
            &all_nodes,
            &|s, t, n| predicate_for_allocate(s, t, n),
            None,
            None,
        );
        if feasible.is_empty() {
            ssn.state.record_task_fit_errors(job, task, fit_errors);
            continue;
        }
        let node = if feasible.len() == 1 {
            Some(feasible[0])
        } else {
            prioritize_nodes(ssn, task, &feasible)
                .and_then(|scores| select_best_node(&feasible, &scores))
        };
        let Some(node) = node else { continue };
        if let Err(e) = ssn.allocate_and_dispatch(task, node) {
            let mut fe = FitErrors::default();
            fe.set_node_error(node, &FitError::error(e, "backfill"));
            ssn.state.record_task_fit_errors(job, task, fe);
        }
    }
}
