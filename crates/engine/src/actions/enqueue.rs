//! `enqueue`: admit PodGroups from Pending to Inqueue (spec/framework.md §6.1).

use std::collections::BTreeMap;

use crate::framework::{PriorityQueue, Session};
use crate::model::job::phase;
use crate::model::{JobId, QueueId};

pub fn execute(ssn: &mut Session) {
    let mut queues: PriorityQueue<QueueId> = PriorityQueue::new();
    let mut seen: Vec<bool> = vec![false; ssn.state.queues().len()];
    let mut jobs_by_queue: BTreeMap<QueueId, PriorityQueue<JobId>> = BTreeMap::new();

    let job_ids: Vec<JobId> = ssn.state.job_ids().collect();
    for job in job_ids {
        let Some(q) = ssn.state.job(job).queue else {
            continue;
        };
        if !seen[q.index()] {
            seen[q.index()] = true;
            queues.push(q, |a, b| ssn.queue_order(a, b));
        }
        if ssn.state.job(job).is_pending() {
            jobs_by_queue
                .entry(q)
                .or_default()
                .push(job, |a, b| ssn.job_order(a, b));
        }
    }

    while let Some(q) = queues.pop(|a, b| ssn.queue_order(a, b)) {
        let Some(jobs) = jobs_by_queue.get_mut(&q) else {
            continue;
        };
        let Some(job) = jobs.pop(|a, b| ssn.job_order(a, b)) else {
            continue;
        };
        // PodGroups without minResources are admitted without asking the plugins.
        let verdict = if ssn.state.job(job).spec.min_resources.is_none() {
            Ok(())
        } else {
            ssn.job_enqueueable_or_reason(job)
        };
        match verdict {
            Ok(()) => {
                ssn.job_enqueued(job);
                ssn.state.set_job_phase(job, phase::INQUEUE);
            }
            // Not Volcano's: it keeps the reason in an event only. Kept as the job's fit error,
            // it reaches the PodGroup condition and the pods (docs/architecture.md).
            Err(reason) if !reason.is_empty() => {
                ssn.state.set_job_fit_error(job, reason);
            }
            Err(_) => {}
        }
        queues.push(q, |a, b| ssn.queue_order(a, b));
    }
}
