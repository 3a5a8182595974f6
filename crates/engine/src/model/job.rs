//! A job is one PodGroup and its tasks (spec/framework.md §5.5).
//!
//! Counters per task status and the resource sums are kept current by the session on every
//! status change, so the readiness predicates are O(1). Role-level checks (`minTaskMember`) walk
//! the job's tasks and only run for jobs that set `minTaskMember`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;

use super::fit::FitErrors;
use super::ids::{QueueId, TaskId};
use super::job_spec::JobSpec;
use super::resource::Resource;
use super::status::TaskStatus;
use super::task::TaskInfo;

/// A job's tasks in the order they were added.
pub type TaskList = smallvec::SmallVec<[TaskId; 4]>;

/// PodGroup phases (spec/kubernetes.md §5.3).
pub mod phase {
    pub const PENDING: &str = "Pending";
    pub const RUNNING: &str = "Running";
    pub const UNKNOWN: &str = "Unknown";
    pub const INQUEUE: &str = "Inqueue";
    pub const COMPLETED: &str = "Completed";
}

/// One PodGroup condition as the session holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobCondition {
    pub type_: String,
    pub status: String,
    pub transition_id: String,
    pub last_transition_time: Option<Timestamp>,
    pub reason: String,
    pub message: String,
}

/// The PodGroup status as the session holds it; written back when it changed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobStatus {
    pub phase: String,
    pub conditions: Vec<JobCondition>,
    pub running: i32,
    pub succeeded: i32,
    pub failed: i32,
}

impl JobStatus {
    /// Its first condition of `type_` has this status and reason and no message: a session
    /// that would set the same condition only renews it (§1.4 of plugins-core).
    pub fn renewable(&self, type_: &str, status: &str, reason: &str) -> bool {
        let found = self.conditions.iter().find(|c| c.type_ == type_);
        found.is_some_and(|c| c.status == status && c.reason == reason && c.message.is_empty())
    }

    /// §2.7.2: everything but conditions compared exactly; conditions pairwise by index,
    /// ignoring `lastTransitionTime` and `transitionID`.
    pub fn differs_from(&self, old: &JobStatus) -> bool {
        if self.phase != old.phase
            || self.running != old.running
            || self.succeeded != old.succeeded
            || self.failed != old.failed
            || self.conditions.len() != old.conditions.len()
        {
            return true;
        }
        self.conditions.iter().zip(&old.conditions).any(|(a, b)| {
            a.type_ != b.type_
                || a.status != b.status
                || a.reason != b.reason
                || a.message != b.message
        })
    }

    /// Replaces the condition of the same type, or appends it (`UpdatePodGroupCondition`).
    pub fn set_condition(&mut self, cond: JobCondition) {
        match self.conditions.iter_mut().find(|c| c.type_ == cond.type_) {
            Some(c) => *c = cond,
            None => self.conditions.push(cond),
        }
    }
}

/// The session's view of one job: the shared [`JobSpec`] and what the session derives and
/// changes.
#[derive(Clone, Debug)]
pub struct JobInfo {
    pub spec: Arc<JobSpec>,
    /// Some pod of the job is ours, or the job has no pod yet. Only such jobs get their
    /// PodGroup status and events written: Volcano writes every PodGroup it sees, so two
    /// schedulers sharing a cluster would overwrite each other's statuses.
    pub owned: bool,
    pub queue: Option<QueueId>,
    /// From the PriorityClass the spec names, as the session's snapshot holds it.
    pub priority: i32,
    /// Inline up to four: most jobs are small, and a table of them is built every session.
    pub tasks: TaskList,
    counts: [u32; 10],
    pending_best_effort: u32,
    /// Tasks whose pods wait on a scheduling gate other than Volcano's own
    /// ([`JobInfo::deduct_sch_gated_resources`] walks the tasks only when there are some).
    gated_tasks: u32,
    pub allocated: Resource,
    pub total_request: Resource,
    /// The status once the session changed it ([`JobInfo::status_mut`]); until then the
    /// spec's observed status stands for it ([`JobInfo::status`]), so a job with nothing new
    /// costs neither a copy nor a reference count on another allocation.
    changed_status: Option<Arc<JobStatus>>,
    /// A condition type whose unchanged condition this session renewed: its transition ID
    /// and time are stamped only on a status that is written (`renew_job_condition`), since
    /// the change check ignores them and nothing else reads them.
    pub renewed_condition: Option<&'static str>,
    pub nodes_fit_errors: HashMap<TaskId, FitErrors>,
    pub job_fit_errors: String,
    /// The PodGroup's network-topology constraint as the session uses it (§2.5 item 6).
    pub topology: Option<super::TopologyConstraint>,
    /// The HyperNode the job runs in (`JobInfo.AllocatedHyperNode`).
    pub allocated_hyper_node: Option<super::HyperNodeId>,
    /// The same for the job's default sub-job (`SubJobInfo.AllocatedHyperNode`); the two part
    /// only within a session, when the job's and the sub-job's searches settle on different
    /// tiers.
    pub sub_job_allocated_hyper_node: Option<super::HyperNodeId>,
    /// The sub-jobs of a job with sub-group policies; empty otherwise (the job is then its own
    /// one sub-job, [`super::SubJobId::WHOLE_JOB`]).
    pub sub_jobs: Vec<super::SubJob>,
    /// The PodGroup has sub-group policies (kept here: the checks that ask it run for every job
    /// in every action, and the spec lives in another allocation).
    pub has_policies: bool,
    /// The same for what the passes over every job read of the spec.
    spec_copy: SpecCopy,
}

/// What the session's passes over every job (enqueue, allocate, the plugins' opens, close) read
/// of its spec, copied into the row: the spec and its observed status are allocations of their
/// own, and reading them in every pass over thousands of jobs cost a cache miss per job and pass.
#[derive(Clone, Copy, Debug)]
struct SpecCopy {
    min_available: i32,
    implicit: bool,
    /// The spec has an observed status.
    observed: bool,
    figures: super::job_spec::ObservedFigures,
}

impl SpecCopy {
    fn of(spec: &JobSpec) -> SpecCopy {
        SpecCopy {
            min_available: spec.min_available,
            implicit: spec.implicit,
            observed: spec.baseline.is_some(),
            figures: spec.baseline_figures,
        }
    }
}

impl JobInfo {
    pub fn new(
        uid: String,
        name: String,
        namespace: String,
        queue_name: String,
        min_available: i32,
    ) -> Self {
        let spec = JobSpec::new(uid, name, namespace, queue_name, min_available);
        JobInfo::from_spec(Arc::new(spec))
    }

    /// A job without tasks yet, in the status its spec was observed with.
    pub fn from_spec(spec: Arc<JobSpec>) -> Self {
        let has_policies = spec.has_sub_group_policy;
        let spec_copy = SpecCopy::of(&spec);
        JobInfo {
            changed_status: None,
            renewed_condition: None,
            spec,
            owned: true,
            queue: None,
            priority: 0,
            tasks: TaskList::new(),
            counts: [0; 10],
            pending_best_effort: 0,
            gated_tasks: 0,
            allocated: Resource::empty(),
            total_request: Resource::empty(),
            nodes_fit_errors: HashMap::new(),
            job_fit_errors: String::new(),
            topology: None,
            allocated_hyper_node: None,
            sub_job_allocated_hyper_node: None,
            sub_jobs: Vec::new(),
            has_policies,
            spec_copy,
        }
    }

    /// The status is still the observed one, the spec's (nothing changed it yet).
    #[inline]
    pub fn shows_observed_status(&self) -> bool {
        self.spec_copy.observed && self.changed_status.is_none()
    }

    /// The job's status: the spec's observed one (or none's default) until the session
    /// changes it.
    #[inline]
    pub fn status(&self) -> &JobStatus {
        static NONE_OBSERVED: JobStatus = JobStatus {
            phase: String::new(),
            conditions: Vec::new(),
            running: 0,
            succeeded: 0,
            failed: 0,
        };
        match &self.changed_status {
            Some(s) => s,
            None => self.spec.baseline.as_deref().unwrap_or(&NONE_OBSERVED),
        }
    }

    /// The observed status's figures while the status is still the observed one.
    #[inline]
    pub fn observed_figures(&self) -> Option<&super::job_spec::ObservedFigures> {
        self.shows_observed_status()
            .then_some(&self.spec_copy.figures)
    }

    /// The spec's [`JobSpec::implicit`]: the job of a standalone pod.
    #[inline]
    pub fn is_implicit(&self) -> bool {
        self.spec_copy.implicit
    }

    /// The spec's `minAvailable`.
    #[inline]
    pub fn min_available(&self) -> i32 {
        self.spec_copy.min_available
    }

    /// The status's phase, without reading the status while it is the observed one: every
    /// action and several plugins ask it of every job each session.
    #[inline]
    pub fn phase(&self) -> &str {
        match self.observed_figures().and_then(|f| f.phase) {
            Some(phase) => phase,
            None => &self.status().phase,
        }
    }

    /// The status to change, copied first if the observed status still shares it.
    pub fn status_mut(&mut self) -> &mut JobStatus {
        let spec = &self.spec;
        let status = self
            .changed_status
            .get_or_insert_with(|| spec.baseline.clone().unwrap_or_default());
        Arc::make_mut(status)
    }

    /// Changes the spec, copied first if another session shares it (for jobs built by hand:
    /// tests, and the implicit job of a standalone pod), and what the row copies of it.
    pub fn change_spec(&mut self, change: impl FnOnce(&mut JobSpec)) {
        change(Arc::make_mut(&mut self.spec));
        self.has_policies = self.spec.has_sub_group_policy;
        self.spec_copy = SpecCopy::of(&self.spec);
    }

    /// Adds a task's contribution to the counters (`AddTaskInfo`).
    pub fn add_task(&mut self, id: TaskId, task: &TaskInfo) {
        self.tasks.push(id);
        if task.spec.sch_gated && !task.spec.only_volcano_gate {
            self.gated_tasks += 1;
        }
        self.count_in(task, task.status);
        self.total_request.add(task.resreq());
    }

    fn count_in(&mut self, task: &TaskInfo, status: TaskStatus) {
        self.counts[status.index()] += 1;
        if status == TaskStatus::Pending && task.spec.best_effort {
            self.pending_best_effort += 1;
        }
        if status.is_allocated() {
            self.allocated.add(task.resreq());
        }
    }

    fn count_out(&mut self, task: &TaskInfo, status: TaskStatus) {
        self.counts[status.index()] = self.counts[status.index()].saturating_sub(1);
        if status == TaskStatus::Pending && task.spec.best_effort {
            self.pending_best_effort = self.pending_best_effort.saturating_sub(1);
        }
        if status.is_allocated() {
            self.allocated.sub(task.resreq());
        }
    }

    /// Moves a task between status buckets (`UpdateTaskStatus`).
    pub fn update_task_status(&mut self, task: &TaskInfo, old: TaskStatus, new: TaskStatus) {
        if old != new {
            self.count_out(task, old);
            self.count_in(task, new);
        }
    }

    pub fn count(&self, status: TaskStatus) -> u32 {
        self.counts[status.index()]
    }

    pub fn ready_task_num(&self) -> i32 {
        use TaskStatus::*;
        (self.count(Bound)
            + self.count(Binding)
            + self.count(Running)
            + self.count(Allocated)
            + self.count(Succeeded)) as i32
    }

    pub fn waiting_task_num(&self) -> i32 {
        self.count(TaskStatus::Pipelined) as i32
    }

    pub fn pending_best_effort_task_num(&self) -> i32 {
        self.pending_best_effort as i32
    }

    pub fn valid_task_num(&self) -> i32 {
        use TaskStatus::*;
        (self.count(Bound)
            + self.count(Binding)
            + self.count(Running)
            + self.count(Allocated)
            + self.count(Succeeded)
            + self.count(Pipelined)
            + self.count(Pending)) as i32
    }

    pub fn allocated_task_num(&self) -> i32 {
        use TaskStatus::*;
        (self.count(Bound) + self.count(Binding) + self.count(Running) + self.count(Allocated))
            as i32
    }

    pub fn scheduled_task_num(&self) -> i32 {
        use TaskStatus::*;
        (self.count(Running) + self.count(Bound) + self.count(Failed) + self.count(Succeeded))
            as i32
    }

    pub fn is_ready(&self) -> bool {
        self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available()
    }

    pub fn is_pipelined(&self) -> bool {
        self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
            >= self.min_available()
    }

    pub fn is_starving(&self) -> bool {
        self.waiting_task_num() + self.ready_task_num() < self.min_available()
    }

    /// PodGroup phase Pending or empty.
    pub fn is_pending(&self) -> bool {
        let phase = self.phase();
        phase.is_empty() || phase == phase::PENDING
    }

    pub fn has_pending_tasks(&self) -> bool {
        self.count(TaskStatus::Pending) > 0
    }

    /// Per-role counts of tasks accepted by `include`.
    fn role_counts<'a>(
        &self,
        tasks: &'a [TaskInfo],
        include: impl Fn(&TaskInfo) -> bool,
    ) -> BTreeMap<&'a str, i32> {
        let mut counts = BTreeMap::new();
        for &id in &self.tasks {
            let t = &tasks[id.index()];
            if include(t) {
                *counts.entry(t.spec.role.as_str()).or_insert(0) += 1;
            }
        }
        counts
    }

    /// Role checks are disabled when the job minimum is below the sum of role minimums (§5.5.5).
    fn role_checks_disabled(&self) -> bool {
        self.spec.task_min_available.is_empty()
            || self.spec.min_available < self.spec.task_min_available_total
    }

    /// `CheckTaskValid`.
    pub fn check_task_valid(&self, tasks: &[TaskInfo]) -> bool {
        if self.role_checks_disabled() {
            return true;
        }
        let counts = self.role_counts(tasks, |t| {
            t.status.is_allocated()
                || matches!(
                    t.status,
                    TaskStatus::Succeeded | TaskStatus::Pipelined | TaskStatus::Pending
                )
        });
        self.spec
            .task_min_available
            .iter()
            .filter(|(_, min)| **min > 0)
            .all(|(role, min)| counts.get(role.as_str()).copied().unwrap_or(0) >= *min)
    }

    fn ready_like(t: &TaskInfo) -> bool {
        t.status.is_allocated()
            || t.status == TaskStatus::Succeeded
            || (t.status == TaskStatus::Pending && t.spec.resreq.is_empty())
    }

    /// `CheckTaskReady`.
    pub fn check_task_ready(&self, tasks: &[TaskInfo]) -> bool {
        if self.role_checks_disabled() {
            return true;
        }
        let counts = self.role_counts(tasks, Self::ready_like);
        self.spec
            .task_min_available
            .iter()
            .all(|(role, min)| counts.get(role.as_str()).copied().unwrap_or(0) >= *min)
    }

    /// `CheckTaskPipelined`.
    pub fn check_task_pipelined(&self, tasks: &[TaskInfo]) -> bool {
        if self.role_checks_disabled() {
            return true;
        }
        let counts = self.role_counts(tasks, |t| {
            Self::ready_like(t) || t.status == TaskStatus::Pipelined
        });
        self.spec
            .task_min_available
            .iter()
            .all(|(role, min)| counts.get(role.as_str()).copied().unwrap_or(0) >= *min)
    }

    /// `CheckTaskStarving`: true when some role is below its minimum.
    pub fn check_task_starving(&self, tasks: &[TaskInfo]) -> bool {
        if self.role_checks_disabled() {
            return true;
        }
        let counts = self.role_counts(tasks, |t| {
            t.status.is_allocated()
                || matches!(t.status, TaskStatus::Succeeded | TaskStatus::Pipelined)
        });
        self.spec
            .task_min_available
            .iter()
            .any(|(role, min)| counts.get(role.as_str()).copied().unwrap_or(0) < *min)
    }

    /// `TaskHasFitErrors`: another task of the same role already failed this session.
    pub fn task_has_fit_errors(&self, tasks: &[TaskInfo], task: TaskId) -> bool {
        let role = &tasks[task.index()].spec.role;
        if role.is_empty() {
            return false;
        }
        self.nodes_fit_errors
            .keys()
            .any(|id| *id != task && tasks[id.index()].spec.role == *role)
    }

    /// `NeedContinueAllocating` for the default sub-job (§5.5.9).
    pub fn need_continue_allocating(&self, tasks: &[TaskInfo]) -> bool {
        if self.spec.min_available as usize == self.tasks.len() {
            return false;
        }
        let failed_roles: std::collections::BTreeSet<&str> = self
            .nodes_fit_errors
            .keys()
            .filter(|id| self.tasks.contains(id))
            .map(|id| tasks[id.index()].spec.role.as_str())
            .collect();
        if self.spec.min_available < self.spec.task_min_available_total {
            let left: i32 = self
                .tasks
                .iter()
                .map(|id| &tasks[id.index()])
                .filter(|t| {
                    t.status == TaskStatus::Pending && !failed_roles.contains(t.spec.role.as_str())
                })
                .count() as i32;
            return self.ready_task_num() + left >= self.spec.min_available;
        }
        let occupied = self.role_counts(tasks, Self::ready_like);
        for role in failed_roles {
            let min = self.spec.task_min_available.get(role).copied().unwrap_or(0);
            if min > 0 && occupied.get(role).copied().unwrap_or(0) < min {
                return false;
            }
        }
        true
    }

    /// `util.GetInqueueResource` (spec/plugins-core.md §0.7): what the job's `minResources`
    /// still reserves beyond what it holds. cpu, memory and `pods` keep only a positive
    /// remainder; another scalar keeps its full minimum while the job holds none of it. Names
    /// that are not scalar resources (`count/…`, `ephemeral-storage`) reserve nothing.
    pub fn inqueue_resource(&self) -> Resource {
        use super::resource::{ResourceName, is_count_quota, is_scalar_resource_name};
        let mut inqueue = Resource::empty();
        let Some(min) = &self.spec.min_resources else {
            return inqueue;
        };
        let allocated = &self.allocated;
        if min.milli_cpu - allocated.milli_cpu > 0.0 {
            inqueue.milli_cpu = min.milli_cpu - allocated.milli_cpu;
        }
        if min.memory - allocated.memory > 0.0 {
            inqueue.memory = min.memory - allocated.memory;
        }
        for (name, wanted) in min.scalars.iter() {
            if name == ResourceName::PODS {
                let rest = wanted - allocated.scalar(name);
                if rest > 0.0 {
                    inqueue.set_scalar(name, rest);
                }
                continue;
            }
            if is_count_quota(name.as_str()) || !is_scalar_resource_name(name.as_str()) {
                continue;
            }
            match allocated.scalars.get(name) {
                None => inqueue.set_scalar(name, wanted),
                Some(held) if wanted - held > 0.0 => inqueue.set_scalar(name, wanted - held),
                Some(_) => {}
            }
        }
        inqueue
    }

    /// `DeductSchGatedResources` (spec/framework.md §5.5.8): `res` minus the requests of the
    /// job's scheduling-gated tasks (tasks held only by Volcano's queue-allocation gate still
    /// count), each dimension floored at 0; scalars `res` lacks are ignored.
    pub fn deduct_sch_gated_resources(&self, tasks: &[TaskInfo], res: &Resource) -> Resource {
        if self.gated_tasks == 0 {
            return res.clone();
        }
        let mut gated = Resource::empty();
        for &t in &self.tasks {
            let spec = &tasks[t.index()].spec;
            if spec.sch_gated && !spec.only_volcano_gate {
                gated.add(&spec.resreq);
            }
        }
        // Most jobs have no gated pods; a gated request of only `pods` also counts as none.
        if gated.is_empty() {
            return res.clone();
        }
        let mut result = res.clone();
        result.milli_cpu = (res.milli_cpu - gated.milli_cpu).max(0.0);
        result.memory = (res.memory - gated.memory).max(0.0);
        for (name, v) in res.scalars.iter() {
            if let Some(g) = gated.scalars.get(name) {
                result.set_scalar(name, (v - g).max(0.0));
            }
        }
        result
    }

    /// `JobInfo.FitError()` (§5.5.6): the job-level text used in events and conditions.
    pub fn fit_error(
        &self,
        tasks: &[TaskInfo],
        pending_reasons: &BTreeMap<String, usize>,
    ) -> String {
        let mut histogram: BTreeMap<&str, u32> = BTreeMap::new();
        for status in TaskStatus::ALL {
            let n = self.count(status);
            if n > 0 {
                histogram.insert(status.as_str(), n);
            }
        }
        let mut parts: Vec<String> = histogram.iter().map(|(s, n)| format!("{n} {s}")).collect();
        parts.push(format!("{} minAvailable", self.spec.min_available));
        parts.sort();
        let head = if self.is_ready() {
            apis::POD_GROUP_READY
        } else {
            apis::POD_GROUP_NOT_READY
        };
        let mut msg = format!("{head}, {}", parts.join(", "));
        if !pending_reasons.is_empty() {
            let mut reasons: Vec<String> = pending_reasons
                .iter()
                .map(|(r, n)| format!("{n} {r}"))
                .collect();
            reasons.sort();
            msg.push_str("; Pending: ");
            msg.push_str(&reasons.join(", "));
        }
        if !self.job_fit_errors.is_empty() {
            msg.push_str(". Origin reason is: ");
            msg.push_str(&self.job_fit_errors);
        } else if let Some((id, fe)) = self
            .tasks
            .iter()
            .filter_map(|id| self.nodes_fit_errors.get(id).map(|fe| (id, fe)))
            .next()
        {
            // Volcano takes the first task in map order; we take the first in job order.
            msg.push_str(&format!(
                ". Origin reason is {}: {fe}",
                tasks[id.index()].spec.name
            ));
        }
        msg
    }
}

/// The API PodGroup status as the session holds it.
pub fn job_status_from_api(s: &apis::PodGroupStatus) -> JobStatus {
    JobStatus {
        phase: s.phase.clone(),
        conditions: s
            .conditions
            .iter()
            .map(|c| JobCondition {
                type_: c.type_.clone(),
                status: c.status.clone(),
                transition_id: c.transition_id.clone(),
                last_transition_time: c.last_transition_time.as_ref().map(|t| t.0),
                reason: c.reason.clone(),
                message: c.message.clone(),
            })
            .collect(),
        running: s.running,
        succeeded: s.succeeded,
        failed: s.failed,
    }
}

/// The session's PodGroup status in API form.
pub fn job_status_to_api(s: &JobStatus) -> apis::PodGroupStatus {
    apis::PodGroupStatus {
        phase: s.phase.clone(),
        conditions: s
            .conditions
            .iter()
            .map(|c| apis::PodGroupCondition {
                type_: c.type_.clone(),
                status: c.status.clone(),
                transition_id: c.transition_id.clone(),
                last_transition_time: c
                    .last_transition_time
                    .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time),
                reason: c.reason.clone(),
                message: c.message.clone(),
            })
            .collect(),
        running: s.running,
        succeeded: s.succeeded,
        failed: s.failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ResourceName;

    #[test]
    fn inqueue_resource_rules() {
        let min = Resource::from_pairs(
            3_000.0,
            100.0,
            &[
                ("pods", 3.0),
                ("nvidia.com/gpu", 2_000.0),
                ("example.com/fpga", 1_000.0),
                ("ephemeral-storage", 5.0),
            ],
        );
        let allocated =
            Resource::from_pairs(1_000.0, 200.0, &[("pods", 1.0), ("nvidia.com/gpu", 500.0)]);
        let mut job = JobInfo::new("ns/j".into(), "j".into(), "ns".into(), "q".into(), 1);
        job.change_spec(|s| s.min_resources = Some(min));
        job.allocated = allocated;
        let r = job.inqueue_resource();
        assert_eq!(r.milli_cpu, 2_000.0);
        assert_eq!(r.memory, 0.0, "only positive remainders are reserved");
        assert_eq!(r.scalar(ResourceName::PODS), 2.0);
        assert_eq!(r.scalar(ResourceName::new("nvidia.com/gpu")), 1_500.0);
        // Not held at all: the full minimum.
        assert_eq!(r.scalar(ResourceName::new("example.com/fpga")), 1_000.0);
        // Not a scalar resource name: never reserved.
        assert_eq!(r.scalars.get(ResourceName::new("ephemeral-storage")), None);
    }

    #[test]
    fn no_minimum_reserves_nothing() {
        let job = JobInfo::new("ns/j".into(), "j".into(), "ns".into(), "q".into(), 1);
        assert!(job.inqueue_resource().is_empty());
    }
}
