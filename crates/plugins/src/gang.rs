//! `gang`: all-or-nothing scheduling by the PodGroup's `minMember`, `minTaskMember` and
//! sub-group policies (spec/plugins-core.md §1; framework.md §5.5.4, §5.5.5, §5.5.7).
//!
//! * `JobValid`: enough valid pods per role, enough sub-groups per policy, enough valid tasks.
//! * `JobReady` / `JobPipelined`: the role, sub-group and job minimums are met by ready
//!   (respectively ready or pipelined) tasks. `JobStarving` only looks at the job minimum.
//! * `JobOrder`: jobs that are not ready yet go before ready ones, so that more jobs reach their
//!   minimum.
//! * `Preemptable` / `Reclaimable`: a victim job keeps at least `minMember` ready tasks.
//! * Close: every job with tasks gets the PodGroup condition `Unschedulable` (not ready) or
//!   `Scheduled` (ready), stamped with the session time and UID (§1.4). Volcano records no event
//!   here: the PodGroup `Unschedulable` event comes from the framework's job updater.
//!
//! The metrics of §1.5 (`volcano_job_retry_counts`, `volcano_unschedule_task_count`,
//! `volcano_unschedule_job_count`) are reported through `SessionState::job_metrics` and
//! `Decisions::unschedulable_jobs`; the daemon exports them.
//!
//! * `SubJobReady` / `SubJobPipelined`: a sub-job (`subGroupPolicy`) has its `subGroupSize`
//!   ready (or ready and pipelined) tasks; `SubJobOrder`: not-ready sub-jobs first. The
//!   sub-jobs are the session's (`engine::model::sub_job`).

use std::cmp::Ordering;
use std::collections::HashMap;

use apis::{condition_reason, condition_status, condition_type};
use engine::conf::Arguments;
use engine::framework::{ExtensionPoints, PERMIT, Plugin, REJECT, SessionState, ValidateResult};
use engine::model::job::JobCondition;
use engine::model::{JobId, SubJobId, TaskId, TaskStatus};

/// Registered plugin name.
pub const NAME: &str = "gang";

/// Reason of the `Scheduled` condition (Volcano writes this sentence as the reason).
const SCHEDULED_REASON: &str = apis::condition_reason::TASKS_READY;

/// Builds the plugin; gang reads no arguments (§1.1).
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(GangPlugin)
}

#[derive(Default)]
struct GangPlugin;

impl Plugin for GangPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::JOB_VALID
            | ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::RECLAIMABLE
            | ExtensionPoints::JOB_ORDER
            | ExtensionPoints::JOB_READY
            | ExtensionPoints::JOB_PIPELINED
            | ExtensionPoints::JOB_STARVING
            | ExtensionPoints::UNIFIED_EVICTABLE
            | ExtensionPoints::SUB_JOB_READY
            | ExtensionPoints::SUB_JOB_PIPELINED
            | ExtensionPoints::SUB_JOB_ORDER
    }

    /// §1.3 SubJobReady.
    fn sub_job_ready(&self, ssn: &SessionState, job: JobId, sub_job: SubJobId) -> bool {
        sub_job_counts_as(ssn, job, sub_job, false)
    }

    /// §1.3 SubJobPipelined.
    fn sub_job_pipelined(&self, ssn: &SessionState, job: JobId, sub_job: SubJobId) -> i32 {
        if sub_job_counts_as(ssn, job, sub_job, true) {
            PERMIT
        } else {
            REJECT
        }
    }

    /// §1.3 SubJobOrder: not-ready sub-jobs first.
    fn sub_job_order(&self, ssn: &SessionState, job: JobId, l: SubJobId, r: SubJobId) -> Ordering {
        let ready = |sj| sub_job_counts_as(ssn, job, sj, false);
        match (ready(l), ready(r)) {
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => Ordering::Equal,
        }
    }

    /// The gang actions' bundles already keep gangs whole or leave them broken knowingly:
    /// every candidate (Volcano's gang answers the same).
    fn unified_evictable(
        &self,
        _ssn: &SessionState,
        _ctx: &engine::framework::EvictionContext,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        (candidates.to_vec(), engine::framework::PERMIT)
    }

    /// §1.3 JobValid.
    fn job_valid(&self, ssn: &SessionState, job: JobId) -> Option<ValidateResult> {
        let j = ssn.job(job);
        if !j.check_task_valid(ssn.tasks()) {
            return Some(ValidateResult {
                reason: condition_reason::NOT_ENOUGH_PODS_OF_TASK.to_string(),
                message: "Not enough valid pods of each task for gang-scheduling".to_string(),
            });
        }
        if !j.check_sub_job_valid() {
            return Some(ValidateResult {
                reason: condition_reason::NOT_ENOUGH_PODS_OF_TASK.to_string(),
                message: "Not enough valid subGroups of each task for gang-scheduling".to_string(),
            });
        }
        let valid = j.valid_task_num();
        if valid < j.spec.min_available {
            return Some(ValidateResult {
                reason: condition_reason::NOT_ENOUGH_TASKS.to_string(),
                message: format!(
                    "Not enough valid tasks for gang-scheduling, valid: {valid}, min: {}",
                    j.spec.min_available
                ),
            });
        }
        None
    }

    /// §1.3 Preemptable.
    fn preemptable(
        &self,
        ssn: &SessionState,
        _preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        keep_min_available(ssn, candidates)
    }

    /// §1.3 Reclaimable: the same rule as preemption.
    fn reclaimable(
        &self,
        ssn: &SessionState,
        _reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        keep_min_available(ssn, candidates)
    }

    /// §1.3 JobOrder: not-ready jobs first; no opinion between two jobs in the same state.
    fn job_order(&self, ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
        match (ssn.job(l).is_ready(), ssn.job(r).is_ready()) {
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => Ordering::Equal,
        }
    }

    /// §1.3 JobReady.
    fn job_ready(&self, ssn: &SessionState, job: JobId) -> bool {
        let j = ssn.job(job);
        j.check_task_ready(ssn.tasks()) && j.check_sub_job_ready(ssn.tasks()) && j.is_ready()
    }

    /// §1.3 JobPipelined.
    fn job_pipelined(&self, ssn: &SessionState, job: JobId) -> i32 {
        let j = ssn.job(job);
        let pipelined = j.check_task_pipelined(ssn.tasks())
            && j.check_sub_job_pipelined(ssn.tasks())
            && j.is_pipelined();
        if pipelined { PERMIT } else { REJECT }
    }

    /// §1.3 JobStarving: role minimums are deliberately ignored.
    fn job_starving(&self, ssn: &SessionState, job: JobId) -> bool {
        ssn.job(job).is_starving()
    }

    /// §1.4.
    fn on_session_close(&mut self, ssn: &mut SessionState) {
        let mut unschedulable_jobs = 0usize;
        for job in 0..ssn.jobs().len() {
            let job = JobId::from_index(job);
            let j = ssn.job(job);
            if j.tasks.is_empty() {
                continue;
            }
            let condition = if j.is_ready() {
                ssn.job_metrics_mut(job).unschedule_task_count = Some(0);
                let (ty, status) = (condition_type::SCHEDULED, condition_status::TRUE);
                if ssn.renew_job_condition(job, ty, status, SCHEDULED_REASON) {
                    continue;
                }
                JobCondition {
                    type_: condition_type::SCHEDULED.to_string(),
                    status: condition_status::TRUE.to_string(),
                    transition_id: ssn.uid().to_owned(),
                    last_transition_time: Some(ssn.now()),
                    reason: SCHEDULED_REASON.to_string(),
                    message: String::new(),
                }
            } else {
                if releasing_tasks_fill_the_gang(ssn, job) {
                    continue;
                }
                let missing = j.spec.min_available - schedulable_task_num(ssn, job);
                unschedulable_jobs += 1;
                let message = format!(
                    "{missing}/{} tasks in gang unschedulable: {}",
                    j.tasks.len(),
                    ssn.job_fit_error(job)
                );
                let m = ssn.job_metrics_mut(job);
                m.unschedule_task_count = Some(missing);
                m.retried = true;
                JobCondition {
                    type_: condition_type::UNSCHEDULABLE.to_string(),
                    status: condition_status::TRUE.to_string(),
                    transition_id: ssn.uid().to_owned(),
                    last_transition_time: Some(ssn.now()),
                    reason: condition_reason::NOT_ENOUGH_RESOURCES.to_string(),
                    message,
                }
            };
            ssn.set_job_condition(job, condition);
        }
        ssn.record_unschedulable_jobs(unschedulable_jobs);
    }
}

/// The shared victim rule of preemption and reclaim: walking the candidates in order, a task is a
/// victim while its job still has more than `minMember` ready tasks left. Candidates without a
/// job in the session are skipped. Always votes Permit.
fn keep_min_available(ssn: &SessionState, candidates: &[TaskId]) -> (Vec<TaskId>, i32) {
    let mut occupied: HashMap<JobId, i32> = HashMap::new();
    let mut victims = Vec::new();
    for &t in candidates {
        let Some(job) = ssn.job_of(t) else {
            tracing::warn!(
                task = ssn.task(t).key(),
                "gang: skipping a victim candidate without a job"
            );
            continue;
        };
        let j = ssn.job(job);
        let left = occupied.entry(job).or_insert_with(|| j.ready_task_num());
        if *left > j.spec.min_available {
            *left -= 1;
            victims.push(t);
        }
    }
    (victims, PERMIT)
}

/// Ready tasks plus Pending tasks whose last placement attempt in this session reached an
/// allocated status (they would have been placed had the gang fit).
fn schedulable_task_num(ssn: &SessionState, job: JobId) -> i32 {
    let tentative = ssn
        .job_tasks_in(job, TaskStatus::Pending)
        .filter(|&t| {
            let task = ssn.task(t);
            let status = task
                .last_transaction
                .as_ref()
                .map_or(task.status, |c| c.status);
            status.is_allocated()
        })
        .count();
    ssn.job(job).ready_task_num() + i32::try_from(tentative).unwrap_or(i32::MAX)
}

/// `shouldSkipUnschedulableForReleasing` (§1.4): pods still being deleted keep their gang slots,
/// so a job with nothing left to schedule is not reported as unschedulable while they go away.
fn releasing_tasks_fill_the_gang(ssn: &SessionState, job: JobId) -> bool {
    let releasing = ssn
        .job_tasks_in(job, TaskStatus::Releasing)
        .filter(|&t| ssn.task(t).has_node())
        .count();
    if releasing == 0 {
        return false;
    }
    let j = ssn.job(job);
    if j.count(TaskStatus::Pending) > 0 || j.count(TaskStatus::Pipelined) > 0 {
        return false;
    }
    j.scheduled_task_num() + i32::try_from(releasing).unwrap_or(i32::MAX) >= j.min_available()
}

/// Whether a sub-job passes `pred` (the whole job of a job without policies: its own check).
fn sub_job_counts_as(ssn: &SessionState, job: JobId, sub_job: SubJobId, pipelined: bool) -> bool {
    let j = ssn.job(job);
    match (j.sub_job(sub_job), pipelined) {
        (Some(s), false) => s.is_ready(ssn.tasks()),
        (Some(s), true) => s.is_pipelined(ssn.tasks()),
        (None, false) => j.is_ready(),
        (None, true) => j.is_pipelined(),
    }
}

#[cfg(test)]
mod tests;
