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
//! Not wired yet: `SubJobOrderFn`, `SubJobReadyFn`, `SubJobPipelinedFn` and `UnifiedEvictableFn`
//! (§1.2), because the engine has no sub-job or gang-aware eviction extension points. The
//! job-level sub-group checks are done here from the PodGroup's `subGroupPolicy`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use apis::{PodGroup, SubGroupPolicySpec, condition_reason, condition_status, condition_type};
use engine::conf::Arguments;
use engine::framework::{ExtensionPoints, PERMIT, Plugin, REJECT, SessionState, ValidateResult};
use engine::model::job::JobCondition;
use engine::model::{JobId, JobInfo, TaskId, TaskInfo, TaskStatus};

use crate::k8s::labels::{pod_labels, selector_matches};

/// Registered plugin name.
pub const NAME: &str = "gang";

/// Reason of the `Scheduled` condition (Volcano writes this sentence as the reason).
const SCHEDULED_REASON: &str = "tasks in gang are ready to be scheduled";

/// Builds the plugin; gang reads no arguments (§1.1).
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(GangPlugin::default())
}

#[derive(Default)]
struct GangPlugin {
    /// Sub-groups of the jobs whose PodGroup has a `subGroupPolicy`; other jobs have none.
    sub_groups: HashMap<JobId, SubGroups>,
}

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

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        for job in ssn.job_ids() {
            let j = ssn.job(job);
            // The flag spares a PodGroup lookup for every job of every session.
            if j.spec.implicit || !j.spec.has_sub_group_policy {
                continue;
            }
            if let Some(pg) = ssn.snapshot().pod_group(&j.spec.uid)
                && !pg.spec.sub_group_policy.is_empty()
            {
                self.sub_groups
                    .insert(job, SubGroups::build(pg, j, ssn.tasks()));
            }
        }
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
        if self.sub_groups.get(&job).is_some_and(|g| !g.valid()) {
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
        j.check_task_ready(ssn.tasks())
            && self
                .sub_groups
                .get(&job)
                .is_none_or(|g| g.enough(|s| s.is_ready(ssn.tasks())))
            && j.is_ready()
    }

    /// §1.3 JobPipelined.
    fn job_pipelined(&self, ssn: &SessionState, job: JobId) -> i32 {
        let j = ssn.job(job);
        let pipelined = j.check_task_pipelined(ssn.tasks())
            && self
                .sub_groups
                .get(&job)
                .is_none_or(|g| g.enough(|s| s.is_pipelined(ssn.tasks())))
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
    j.scheduled_task_num() + i32::try_from(releasing).unwrap_or(i32::MAX) >= j.spec.min_available
}

/// The sub-groups of one job (framework.md §5.5.7): a task belongs to the first policy whose
/// `labelSelector` matches it and for which it has a non-empty value for every `matchLabelKeys`
/// key; tasks with equal values form one sub-group. A policy without `matchLabelKeys` never
/// forms sub-groups. Tasks matched by no policy are in the job's default sub-group, which no
/// policy minimum counts, so it is not kept here.
struct SubGroups {
    /// Policy name → `minSubGroups` (0 when unset); for a repeated name the last policy wins.
    min_per_policy: BTreeMap<String, i32>,
    groups: Vec<SubGroup>,
}

struct SubGroup {
    policy: String,
    /// `subGroupSize` of the policy that created the sub-group (1 when unset).
    min_available: i32,
    tasks: Vec<TaskId>,
}

impl SubGroups {
    fn build(pg: &PodGroup, job: &JobInfo, tasks: &[TaskInfo]) -> SubGroups {
        let policies = &pg.spec.sub_group_policy;
        let mut groups: Vec<SubGroup> = Vec::new();
        // Volcano identifies a sub-group by "<policy>-<values joined by '-'>".
        let mut by_id: HashMap<String, usize> = HashMap::new();
        for &t in &job.tasks {
            let matched = policies
                .iter()
                .find_map(|p| match_values(p, &tasks[t.index()]).map(|values| (p, values)));
            let Some((policy, values)) = matched else {
                continue;
            };
            let id = format!("{}-{}", policy.name, values.join("-"));
            let index = *by_id.entry(id).or_insert_with(|| {
                groups.push(SubGroup {
                    policy: policy.name.clone(),
                    min_available: policy.sub_group_size.unwrap_or(1),
                    tasks: Vec::new(),
                });
                groups.len() - 1
            });
            groups[index].tasks.push(t);
        }
        let min_per_policy = policies
            .iter()
            .map(|p| (p.name.clone(), p.min_sub_groups.unwrap_or(0)))
            .collect();
        SubGroups {
            min_per_policy,
            groups,
        }
    }

    /// Number of sub-groups of `policy` accepted by `pred`.
    fn count(&self, policy: &str, pred: impl Fn(&SubGroup) -> bool) -> i32 {
        let n = self
            .groups
            .iter()
            .filter(|g| g.policy == policy && pred(g))
            .count();
        i32::try_from(n).unwrap_or(i32::MAX)
    }

    /// `CheckSubJobValid`: every policy has at least `minSubGroups` sub-groups.
    fn valid(&self) -> bool {
        self.min_per_policy
            .iter()
            .all(|(policy, &min)| self.count(policy, |_| true) >= min)
    }

    /// `checkSubJobCondition`: every policy with a non-zero minimum has that many sub-groups
    /// accepted by `pred`.
    fn enough(&self, pred: impl Fn(&SubGroup) -> bool) -> bool {
        self.min_per_policy
            .iter()
            .filter(|(_, min)| **min != 0)
            .all(|(policy, &min)| self.count(policy, &pred) >= min)
    }
}

impl SubGroup {
    /// (ready, pipelined, pending best-effort) task counts, as the job-level counters.
    fn counts(&self, tasks: &[TaskInfo]) -> (i32, i32, i32) {
        let (mut ready, mut waiting, mut best_effort) = (0, 0, 0);
        for &t in &self.tasks {
            let task = &tasks[t.index()];
            match task.status {
                TaskStatus::Bound
                | TaskStatus::Binding
                | TaskStatus::Running
                | TaskStatus::Allocated
                | TaskStatus::Succeeded => ready += 1,
                TaskStatus::Pipelined => waiting += 1,
                TaskStatus::Pending if task.spec.best_effort => best_effort += 1,
                _ => {}
            }
        }
        (ready, waiting, best_effort)
    }

    fn is_ready(&self, tasks: &[TaskInfo]) -> bool {
        let (ready, _, best_effort) = self.counts(tasks);
        ready + best_effort >= self.min_available
    }

    fn is_pipelined(&self, tasks: &[TaskInfo]) -> bool {
        let (ready, waiting, best_effort) = self.counts(tasks);
        ready + waiting + best_effort >= self.min_available
    }
}

/// `getSubJobMatchValues`: the task's values for the policy's `matchLabelKeys`, or `None` when
/// the policy does not take the task.
fn match_values<'a>(policy: &SubGroupPolicySpec, task: &'a TaskInfo) -> Option<Vec<&'a str>> {
    let labels = pod_labels(&task.spec.pod);
    if let Some(selector) = &policy.label_selector
        && !selector_matches(selector, labels)
    {
        return None;
    }
    if policy.match_label_keys.is_empty() {
        return None;
    }
    policy
        .match_label_keys
        .iter()
        .map(|key| {
            labels
                .get(key)
                .map(String::as_str)
                .filter(|v| !v.is_empty())
        })
        .collect()
}

#[cfg(test)]
mod tests;
