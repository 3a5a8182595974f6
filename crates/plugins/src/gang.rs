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
            if j.implicit {
                continue;
            }
            if let Some(pg) = ssn.snapshot().pod_group(&j.uid)
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
        if valid < j.min_available {
            return Some(ValidateResult {
                reason: condition_reason::NOT_ENOUGH_TASKS.to_string(),
                message: format!(
                    "Not enough valid tasks for gang-scheduling, valid: {valid}, min: {}",
                    j.min_available
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
                let missing = j.min_available - schedulable_task_num(ssn, job);
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
        if *left > j.min_available {
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
    j.scheduled_task_num() + i32::try_from(releasing).unwrap_or(i32::MAX) >= j.min_available
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
mod tests {
    use super::*;
    use crate::testutil::{
        SESSION_UID, StateLookup, TestCluster, allocate, pipeline, pod, pod_group, test_now,
    };
    use engine::framework::Session;
    use engine::model::task::TransactionContext;
    use serde_json::{Value, json};

    fn plugin(ssn: &mut Session) -> Box<dyn Plugin> {
        let mut p = new(&Arguments::new());
        p.on_session_open(&mut ssn.state);
        p
    }

    fn cluster() -> TestCluster {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "16", "memory": "32Gi", "pods": "110"}));
        c
    }

    /// Adds pods `<group>-<i>` of PodGroup `group` with the given phases (Running pods on n1).
    fn add_pods(c: &mut TestCluster, group: &str, phases: &[&str]) {
        for (i, phase) in phases.iter().enumerate() {
            let node = (*phase == "Running").then_some("n1");
            c.pod(pod(
                "ns",
                &format!("{group}-{i}"),
                Some(group),
                phase,
                node,
                json!({"cpu": "1"}),
            ));
        }
    }

    fn role_pod(name: &str, group: &str, role: &str) -> Value {
        let mut p = pod(
            "ns",
            name,
            Some(group),
            "Pending",
            None,
            json!({"cpu": "1"}),
        );
        p["metadata"]["labels"]["volcano.sh/task-spec"] = json!(role);
        p
    }

    #[test]
    fn g1_not_enough_valid_tasks() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 3));
        add_pods(&mut c, "pg", &["Running", "Pending"]);
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let job = ssn.state.job_by_key("ns/pg");
        let expected = ValidateResult {
            reason: "NotEnoughTasks".to_string(),
            message: "Not enough valid tasks for gang-scheduling, valid: 2, min: 3".to_string(),
        };
        assert_eq!(p.job_valid(&ssn.state, job), Some(expected.clone()));
        assert_eq!(ssn.job_valid(job), Some(expected));
    }

    #[test]
    fn failed_tasks_are_not_valid_but_succeeded_ones_are() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 2));
        add_pods(&mut c, "pg", &["Succeeded", "Failed", "Pending"]);
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        assert_eq!(p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg")), None);
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 3));
        add_pods(&mut c, "pg", &["Succeeded", "Failed", "Pending"]);
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let result = p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg"));
        assert_eq!(result.map(|r| r.reason), Some("NotEnoughTasks".to_string()));
    }

    #[test]
    fn g2_role_minimum_not_met() {
        let mut c = cluster();
        let mut pg = pod_group("ns", "pg", 4);
        pg["spec"]["minTaskMember"] = json!({"ps": 1, "worker": 3});
        c.pod_group(pg);
        c.pod(role_pod("ps-0", "pg", "ps"));
        c.pod(role_pod("worker-0", "pg", "worker"));
        c.pod(role_pod("worker-1", "pg", "worker"));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let result = p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg"));
        assert_eq!(
            result,
            Some(ValidateResult {
                reason: "NotEnoughPodsOfTask".to_string(),
                message: "Not enough valid pods of each task for gang-scheduling".to_string(),
            })
        );
    }

    #[test]
    fn g3_elastic_job_skips_role_checks() {
        let mut c = cluster();
        let mut pg = pod_group("ns", "pg", 3);
        pg["spec"]["minTaskMember"] = json!({"task1": 2, "task2": 3});
        c.pod_group(pg);
        c.pod(role_pod("a-0", "pg", "task1"));
        c.pod(role_pod("b-0", "pg", "task2"));
        c.pod(role_pod("b-1", "pg", "task2"));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        assert_eq!(p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg")), None);
    }

    #[test]
    fn g4_victims_keep_min_member_ready_tasks() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "j", 2));
        add_pods(&mut c, "j", &["Running", "Running", "Running"]);
        c.pod_group(pod_group("ns", "k", 2));
        add_pods(&mut c, "k", &["Running", "Running"]);
        c.pod_group(pod_group("ns", "hungry", 1));
        add_pods(&mut c, "hungry", &["Pending"]);
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let s = &ssn.state;
        let preemptor = s.task_by_key("ns/hungry-0");
        let j: Vec<TaskId> = (0..3)
            .map(|i| s.task_by_key(&format!("ns/j-{i}")))
            .collect();
        assert_eq!(p.preemptable(s, preemptor, &j), (vec![j[0]], PERMIT));
        assert_eq!(p.reclaimable(s, preemptor, &j), (vec![j[0]], PERMIT));
        // Given in another order, the first candidate is still the one taken.
        assert_eq!(
            p.preemptable(s, preemptor, &[j[2], j[1]]),
            (vec![j[2]], PERMIT)
        );
        let k: Vec<TaskId> = (0..2)
            .map(|i| s.task_by_key(&format!("ns/k-{i}")))
            .collect();
        assert_eq!(p.preemptable(s, preemptor, &k), (vec![], PERMIT));
        // Budgets are per job.
        let mixed = [k[0], j[0], k[1], j[1]];
        assert_eq!(p.preemptable(s, preemptor, &mixed), (vec![j[0]], PERMIT));
    }

    #[test]
    fn victims_of_a_zero_minimum_job_and_orphans() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "zero", 0));
        add_pods(&mut c, "zero", &["Running", "Running"]);
        c.pod(pod(
            "ns",
            "orphan",
            Some("gone"),
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        ));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let s = &ssn.state;
        let (z0, z1, orphan) = (
            s.task_by_key("ns/zero-0"),
            s.task_by_key("ns/zero-1"),
            s.task_by_key("ns/orphan"),
        );
        assert_eq!(
            p.preemptable(s, z0, &[z0, orphan, z1]),
            (vec![z0, z1], PERMIT)
        );
    }

    #[test]
    fn g5_job_order_puts_unready_jobs_first() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "ready-a", 1));
        add_pods(&mut c, "ready-a", &["Running"]);
        c.pod_group(pod_group("ns", "ready-b", 1));
        add_pods(&mut c, "ready-b", &["Running"]);
        c.pod_group(pod_group("ns", "waiting-a", 2));
        add_pods(&mut c, "waiting-a", &["Running", "Pending"]);
        c.pod_group(pod_group("ns", "waiting-b", 1));
        add_pods(&mut c, "waiting-b", &["Pending"]);
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let s = &ssn.state;
        let j = |k: &str| s.job_by_key(k);
        assert_eq!(
            p.job_order(s, j("ns/ready-a"), j("ns/waiting-a")),
            Ordering::Greater
        );
        assert_eq!(
            p.job_order(s, j("ns/waiting-a"), j("ns/ready-a")),
            Ordering::Less
        );
        assert_eq!(
            p.job_order(s, j("ns/ready-a"), j("ns/ready-b")),
            Ordering::Equal
        );
        assert_eq!(
            p.job_order(s, j("ns/waiting-a"), j("ns/waiting-b")),
            Ordering::Equal
        );
    }

    #[test]
    fn g6_pending_best_effort_tasks_count_as_ready() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 2));
        c.pod(pod(
            "ns",
            "pg-0",
            Some("pg"),
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        ));
        c.pod(pod("ns", "pg-1", Some("pg"), "Pending", None, json!({})));
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let job = ssn.state.job_by_key("ns/pg");
        assert!(p.job_ready(&ssn.state, job));
        assert!(ssn.job_ready(job));
    }

    #[test]
    fn job_ready_needs_every_role_minimum() {
        let mut c = cluster();
        let mut pg = pod_group("ns", "pg", 3);
        pg["spec"]["minTaskMember"] = json!({"ps": 1, "worker": 2});
        c.pod_group(pg);
        c.pod(role_pod("ps-0", "pg", "ps"));
        for i in 0..3 {
            c.pod(role_pod(&format!("worker-{i}"), "pg", "worker"));
        }
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let job = ssn.state.job_by_key("ns/pg");
        for w in ["ns/worker-0", "ns/worker-1", "ns/worker-2"] {
            allocate(&mut ssn, w, "n1");
        }
        // Three ready tasks meet minMember, but the ps role has none.
        assert!(ssn.state.job(job).is_ready());
        assert!(!p.job_ready(&ssn.state, job));
        assert_eq!(p.job_pipelined(&ssn.state, job), REJECT);
        pipeline(&mut ssn, "ns/ps-0", "n1");
        assert!(!p.job_ready(&ssn.state, job));
        assert_eq!(p.job_pipelined(&ssn.state, job), PERMIT);
    }

    #[test]
    fn g7_job_starving() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 3));
        add_pods(&mut c, "pg", &["Running", "Pending", "Pending"]);
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let job = ssn.state.job_by_key("ns/pg");
        pipeline(&mut ssn, "ns/pg-1", "n1");
        assert!(p.job_starving(&ssn.state, job));
        allocate(&mut ssn, "ns/pg-2", "n1");
        assert!(!p.job_starving(&ssn.state, job));
    }

    #[test]
    fn f4_starving_with_priority_in_the_same_tier_is_the_and_of_both() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 2));
        add_pods(&mut c, "pg", &["Running", "Pending", "Pending"]);
        let mut ssn = c.session(&[&[crate::priority::NAME, NAME]]);
        pipeline(&mut ssn, "ns/pg-1", "n1");
        let job = ssn.state.job_by_key("ns/pg");
        // priority: 1 + 1 < 3 tasks ⇒ starving; gang: 1 + 1 < 2 is false ⇒ not starving.
        assert!(!ssn.job_starving(job));
        // In separate tiers the first tier (priority) decides alone.
        let mut tiered = c.session(&[&[crate::priority::NAME], &[NAME]]);
        pipeline(&mut tiered, "ns/pg-1", "n1");
        assert!(tiered.job_starving(tiered.state.job_by_key("ns/pg")));
    }

    #[test]
    fn g8_job_pipelined() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 3));
        add_pods(&mut c, "pg", &["Running", "Pending", "Pending"]);
        let mut ssn = c.session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let job = ssn.state.job_by_key("ns/pg");
        pipeline(&mut ssn, "ns/pg-1", "n1");
        assert_eq!(p.job_pipelined(&ssn.state, job), REJECT);
        assert!(!ssn.job_pipelined(job));
        pipeline(&mut ssn, "ns/pg-2", "n1");
        assert_eq!(p.job_pipelined(&ssn.state, job), PERMIT);
        assert!(ssn.job_pipelined(job));
    }

    fn condition<'a>(ssn: &'a Session, job: &str, type_: &str) -> Option<&'a JobCondition> {
        let j = ssn.state.job(ssn.state.job_by_key(job));
        j.status.conditions.iter().find(|c| c.type_ == type_)
    }

    #[test]
    fn g9_close_hook_writes_unschedulable_condition() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 3));
        add_pods(&mut c, "pg", &["Running", "Pending", "Pending"]);
        let mut ssn = c.session(&[&[NAME]]);
        let mut p = plugin(&mut ssn);
        let tried = ssn.state.task_by_key("ns/pg-1");
        let n1 = ssn.state.node_by_key("n1");
        // Allocated in a statement that was then discarded: the task remembers where it would
        // have gone.
        let mut stmt = engine::framework::Statement::new();
        ssn.allocate(&mut stmt, tried, n1).expect("fits");
        ssn.discard(stmt);
        assert_eq!(
            ssn.state.task(tried).last_transaction,
            Some(TransactionContext {
                node: Some(n1),
                eviction_occurred: false,
                status: TaskStatus::Allocated,
            })
        );
        p.on_session_close(&mut ssn.state);
        let job = ssn.state.job_by_key("ns/pg");
        let cond = condition(&ssn, "ns/pg", "Unschedulable").expect("condition written");
        assert_eq!(cond.status, "True");
        assert_eq!(cond.reason, "NotEnoughResources");
        assert_eq!(cond.transition_id, SESSION_UID);
        assert_eq!(cond.last_transition_time, Some(test_now()));
        assert!(
            cond.message
                .starts_with("1/3 tasks in gang unschedulable: "),
            "{}",
            cond.message
        );
        assert_eq!(
            cond.message,
            format!(
                "1/3 tasks in gang unschedulable: {}",
                ssn.state.job_fit_error(job)
            )
        );
        assert_eq!(
            cond.message,
            "1/3 tasks in gang unschedulable: pod group is not ready, 1 Running, 2 Pending, \
             3 minAvailable; Pending: 1 Schedulable, 1 Unschedulable"
        );
        assert!(condition(&ssn, "ns/pg", "Scheduled").is_none());
    }

    /// A standalone pod that does not fit counts in `unschedule_job_count` and has its
    /// `unschedule_task_count` series under its implicit PodGroup's name, so the two agree.
    #[test]
    fn standalone_pods_count_in_both_unschedulable_metrics() {
        let mut c = cluster();
        c.pod(pod(
            "ns",
            "big",
            None,
            "Pending",
            None,
            json!({"cpu": "64"}),
        ));
        let decisions = c.session(&[&[NAME]]).close();
        assert_eq!(decisions.unschedulable_jobs, Some(1));
        let m = decisions
            .job_metrics
            .values()
            .find(|m| m.name == "podgroup-uid-ns-big")
            .expect("a series for the standalone pod's job");
        assert_eq!(m.unschedule_task_count, Some(1));
    }

    /// A gang placed in this session is still Inqueue at close (its binds have not landed):
    /// its event is the Normal "Scheduled", not a Warning "…unschedulable: pod group is ready"
    /// (a difference from Volcano, on purpose: Warnings are for real problems).
    #[test]
    fn a_gang_placed_this_session_gets_no_warning_event() {
        let mut c = cluster();
        let mut pg = pod_group("ns", "pg", 2);
        pg["status"] = json!({"phase": "Inqueue"});
        c.pod_group(pg);
        add_pods(&mut c, "pg", &["Pending", "Pending"]);
        let mut ssn = c.session(&[&[NAME]]);
        allocate(&mut ssn, "ns/pg-0", "n1");
        allocate(&mut ssn, "ns/pg-1", "n1");
        let decisions = ssn.close();
        use engine::framework::EventType;
        let events: Vec<(EventType, &str)> = decisions
            .events
            .iter()
            .filter(|e| e.object.name == "pg")
            .map(|e| (e.type_, e.reason.as_str()))
            .collect();
        assert_eq!(
            events,
            [(EventType::Normal, "Scheduled")],
            "{:?}",
            decisions.events
        );
    }

    #[test]
    fn close_hook_marks_ready_jobs_scheduled_and_replaces_the_old_condition() {
        let mut c = cluster();
        let mut pg = pod_group("ns", "pg", 1);
        pg["status"] = json!({"phase": "Running", "conditions": [
            {"type": "Scheduled", "status": "True", "transitionID": "old", "reason": "old reason"}
        ]});
        c.pod_group(pg);
        add_pods(&mut c, "pg", &["Running"]);
        c.pod_group(pod_group("ns", "empty", 1));
        let mut ssn = c.session(&[&[NAME]]);
        let mut p = plugin(&mut ssn);
        p.on_session_close(&mut ssn.state);
        let j = ssn.state.job(ssn.state.job_by_key("ns/pg"));
        assert_eq!(j.status.conditions.len(), 1);
        let cond = &j.status.conditions[0];
        assert_eq!(cond.type_, "Scheduled");
        assert_eq!(cond.reason, "tasks in gang are ready to be scheduled");
        assert_eq!(cond.message, "");
        assert_eq!(cond.transition_id, SESSION_UID);
        // A job without tasks gets no condition.
        assert!(
            ssn.state
                .job(ssn.state.job_by_key("ns/empty"))
                .status
                .conditions
                .is_empty()
        );
    }

    #[test]
    fn close_through_the_session_writes_the_pod_group_status() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 2));
        add_pods(&mut c, "pg", &["Running", "Pending"]);
        let decisions = c.session(&[&[NAME]]).close();
        let update = decisions
            .pod_group_statuses
            .iter()
            .find(|u| u.pod_group == "ns/pg")
            .expect("status written");
        // One Running task and an Unschedulable condition of this session: phase Unknown.
        assert_eq!(update.status.phase, "Unknown");
        let cond = &update.status.conditions[0];
        assert_eq!(cond.type_, "Unschedulable");
        assert!(
            cond.message
                .starts_with("1/2 tasks in gang unschedulable: pod group is not ready")
        );
    }

    #[test]
    fn g10_releasing_pods_keep_their_gang_slots() {
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 2));
        c.pod(pod(
            "ns",
            "pg-0",
            Some("pg"),
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        ));
        let mut leaving = pod(
            "ns",
            "pg-1",
            Some("pg"),
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        );
        leaving["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        c.pod(leaving);
        let mut ssn = c.session(&[&[NAME]]);
        let mut p = plugin(&mut ssn);
        p.on_session_close(&mut ssn.state);
        assert!(
            ssn.state
                .job(ssn.state.job_by_key("ns/pg"))
                .status
                .conditions
                .is_empty()
        );

        // Without a releasing pod the shortcut does not apply, even when the scheduled pods
        // (here one Running, one Failed) reach minMember.
        let mut c2 = cluster();
        c2.pod_group(pod_group("ns", "pg", 2));
        add_pods(&mut c2, "pg", &["Running", "Failed"]);
        let mut ssn = c2.session(&[&[NAME]]);
        let mut p = plugin(&mut ssn);
        p.on_session_close(&mut ssn.state);
        assert!(condition(&ssn, "ns/pg", "Unschedulable").is_some());

        // With a Pending task left to schedule, the job is reported.
        c.pod(pod(
            "ns",
            "pg-2",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1"}),
        ));
        let mut ssn = c.session(&[&[NAME]]);
        let mut p = plugin(&mut ssn);
        p.on_session_close(&mut ssn.state);
        assert!(condition(&ssn, "ns/pg", "Unschedulable").is_some());
    }

    /// A job with a policy `workers`: sub-groups of 2 pods keyed by label `group`, at least 2
    /// sub-groups; pods `w-<group>-<i>` and one `ps` pod outside the policy.
    fn sub_group_cluster(min_member: i32, groups: &[(&str, usize)]) -> TestCluster {
        let mut c = cluster();
        let mut pg = pod_group("ns", "pg", min_member);
        pg["spec"]["subGroupPolicy"] = json!([{
            "name": "workers",
            "subGroupSize": 2,
            "minSubGroups": 2,
            "labelSelector": {"matchLabels": {"role": "worker"}},
            "matchLabelKeys": ["group"]
        }]);
        c.pod_group(pg);
        for (group, size) in groups {
            for i in 0..*size {
                let mut p = pod(
                    "ns",
                    &format!("w-{group}-{i}"),
                    Some("pg"),
                    "Pending",
                    None,
                    json!({"cpu": "1"}),
                );
                p["metadata"]["labels"] = json!({"role": "worker", "group": group});
                c.pod(p);
            }
        }
        // Has a `group` label but not the selected role: default sub-group.
        let mut ps = pod("ns", "ps", Some("pg"), "Pending", None, json!({"cpu": "1"}));
        ps["metadata"]["labels"] = json!({"role": "ps", "group": "z"});
        c.pod(ps);
        c
    }

    #[test]
    fn sub_group_policy_counts_for_validity() {
        let mut ssn = sub_group_cluster(1, &[("a", 2)]).session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let result = p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg"));
        assert_eq!(
            result,
            Some(ValidateResult {
                reason: "NotEnoughPodsOfTask".to_string(),
                message: "Not enough valid subGroups of each task for gang-scheduling".to_string(),
            })
        );
        let mut ssn = sub_group_cluster(1, &[("a", 2), ("b", 1)]).session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        assert_eq!(p.job_valid(&ssn.state, ssn.state.job_by_key("ns/pg")), None);
    }

    #[test]
    fn sub_group_policy_counts_for_readiness_and_pipelining() {
        let mut ssn = sub_group_cluster(3, &[("a", 2), ("b", 2)]).session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        let job = ssn.state.job_by_key("ns/pg");
        for key in ["ns/w-a-0", "ns/w-a-1", "ns/w-b-0"] {
            allocate(&mut ssn, key, "n1");
        }
        // minMember 3 is met, but only sub-group `a` has its 2 pods.
        assert!(ssn.state.job(job).is_ready());
        assert!(!p.job_ready(&ssn.state, job));
        assert_eq!(p.job_pipelined(&ssn.state, job), REJECT);
        pipeline(&mut ssn, "ns/w-b-1", "n1");
        assert!(!p.job_ready(&ssn.state, job));
        assert_eq!(p.job_pipelined(&ssn.state, job), PERMIT);
        let mut ssn = sub_group_cluster(3, &[("a", 2), ("b", 2)]).session(&[&[NAME]]);
        let p = plugin(&mut ssn);
        for key in ["ns/w-a-0", "ns/w-a-1", "ns/w-b-0", "ns/w-b-1"] {
            allocate(&mut ssn, key, "n1");
        }
        assert!(p.job_ready(&ssn.state, ssn.state.job_by_key("ns/pg")));
    }

    #[test]
    fn match_values_need_the_selector_and_every_key() {
        let policy: SubGroupPolicySpec = serde_json::from_value(json!({
            "name": "p",
            "labelSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]},
            "matchLabelKeys": ["rack", "slot"]
        }))
        .expect("policy");
        let no_keys: SubGroupPolicySpec =
            serde_json::from_value(json!({"name": "q"})).expect("policy");
        let mut c = cluster();
        c.pod_group(pod_group("ns", "pg", 1));
        for (name, labels) in [
            ("full", json!({"role": "worker", "rack": "r1", "slot": "3"})),
            (
                "empty-value",
                json!({"role": "worker", "rack": "r1", "slot": ""}),
            ),
            ("missing", json!({"role": "worker", "rack": "r1"})),
            (
                "other-role",
                json!({"role": "ps", "rack": "r1", "slot": "3"}),
            ),
        ] {
            let mut p = pod("ns", name, Some("pg"), "Pending", None, json!({"cpu": "1"}));
            p["metadata"]["labels"] = labels;
            c.pod(p);
        }
        let ssn = c.session(&[&[NAME]]);
        let s = &ssn.state;
        let task = |name: &str| s.task(s.task_by_key(&format!("ns/{name}")));
        assert_eq!(match_values(&policy, task("full")), Some(vec!["r1", "3"]));
        assert_eq!(match_values(&policy, task("empty-value")), None);
        assert_eq!(match_values(&policy, task("missing")), None);
        assert_eq!(match_values(&policy, task("other-role")), None);
        // Without matchLabelKeys a policy forms no sub-group.
        assert_eq!(match_values(&no_keys, task("full")), None);
    }
}
