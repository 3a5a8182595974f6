//! `shuffle`: evicts the running tasks that victim-selecting plugins (`rescheduling`, `tdm`,
//! `pdb`) name, so that their controllers recreate them and the next sessions place them
//! better (spec/framework.md §6.6).
//!
//! As in Volcano: the candidates are the `Running` tasks of the session's jobs, the victims are
//! `VictimTasks(candidates)` (union within a tier, first non-empty tier), and each victim is
//! evicted at once with reason `shuffle`, nothing pipelined in its place. Volcano walks maps, so
//! its candidate and eviction orders are random; here the candidates come in job order, then
//! task order within the job, and the victims are evicted in the order the plugins name them.
//!
//! Difference on purpose: Volcano's shuffle evicts whatever the victim functions return. Here
//! every victim must also pass the eviction guards of the configured plugins — `conformance`
//! (no kube-system or system-critical pods), `pdb` (PodDisruptionBudgets) and `cdp` (pods still
//! in their cool-down) — as it would for preempt and reclaim (docs/architecture.md).

use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::{JobId, TaskId, TaskStatus};

/// The action's name, as configured and as recorded on its evictions.
pub const NAME: &str = "shuffle";

pub fn execute(ssn: &mut Session) {
    let mut jobs = PriorityQueue::new();
    for job in ssn.state.job_ids() {
        if ssn.state.job(job).queue.is_some() {
            jobs.push(job, |a, b| ssn.job_order(a, b));
        }
    }
    let mut candidates: Vec<TaskId> = Vec::new();
    while let Some(job) = jobs.pop(|a, b| ssn.job_order(a, b)) {
        candidates.extend(running_in_task_order(ssn, job));
    }
    if candidates.is_empty() {
        return;
    }
    let chosen = ssn.victim_tasks(&candidates);
    if chosen.is_empty() {
        return;
    }
    let victims = ssn.eviction_guard(&chosen);
    for &refused in chosen.iter().filter(|t| !victims.contains(t)) {
        tracing::info!(
            task = ssn.state.task(refused).key(),
            "shuffle victim kept: a PodDisruptionBudget, cool-down or system-pod protection holds it"
        );
    }
    for victim in victims {
        // Each eviction is its own committed statement, as Volcano's immediate `Evict`.
        let mut stmt = Statement::new();
        ssn.evict(&mut stmt, victim, NAME);
        ssn.commit(stmt);
    }
}

fn running_in_task_order(ssn: &Session, job: JobId) -> Vec<TaskId> {
    let mut heap = PriorityQueue::new();
    for t in ssn.state.job_tasks_in(job, TaskStatus::Running) {
        heap.push(t, |a, b| ssn.task_order(a, b));
    }
    let mut out = Vec::new();
    while let Some(t) = heap.pop(|a, b| ssn.task_order(a, b)) {
        out.push(t);
    }
    out
}
