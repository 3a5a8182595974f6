//! The session's tables and outputs (spec/framework.md §2.4): what plugins and actions read,
//! and what only the framework changes.
//!
//! [`SessionState`] holds the jobs, tasks, nodes and queues built from a snapshot, the
//! configuration and options, and the session's outputs (decisions, events, metrics). Its fields
//! are private to the framework: plugins and actions read through accessors and change the outputs
//! through the methods below, so that every write has one place where it happens.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use k8s_openapi::jiff::Timestamp;

use crate::conf::SchedulerConf;
use crate::model::job::JobCondition;
use crate::model::node::NodeInfo;
use crate::model::queue::QueueInfo;
use crate::model::resource::Resource;
use crate::model::task::TaskInfo;
use crate::model::{JobId, JobInfo, NodeId, QueueId, TaskId, TaskStatus};
use crate::state::Snapshot;

use super::decisions::{Decisions, QueueMetrics};

/// Scheduler-wide knobs that are command-line flags in Volcano (§1.10, §6.0.1), and the
/// services outside the cluster a session may call.
#[derive(Clone)]
pub struct SessionOptions {
    pub minimum_feasible_nodes: usize,
    pub minimum_percentage_nodes_to_find: usize,
    pub percentage_nodes_to_find: usize,
    /// Name written into eviction messages ("<scheduler>: preempting to accommodate …").
    pub scheduler_name: String,
    /// How plugins reach HTTP services (the `extender`); `None` where nothing may be called.
    pub http: Option<std::sync::Arc<dyn super::outside::HttpCaller>>,
    /// What plugins remember between sessions; one per scheduler (clones share it).
    pub memory: std::sync::Arc<super::memory::PluginMemory>,
    /// The zone daily time windows are read in (`tdm`): the daemon's local zone, as Volcano's
    /// process reads them; UTC in the simulator, so that results do not depend on the machine.
    pub time_zone: k8s_openapi::jiff::tz::TimeZone,
    /// Whether allocate remembers node-local predicate results and scores per scheduling class
    /// (`actions::search_memo`); off only to prove that it changes no decision.
    pub search_memo: bool,
    /// The links the last session's tables were built with (`framework::table_build`); one
    /// per scheduler (clones share it).
    pub tables: std::sync::Arc<super::table_build::TableMemo>,
    /// Whether a session hands its rows to `tables` as it ends, for the next build to take
    /// over the unchanged ones; off only to prove that it changes no decision.
    pub carry_rows: bool,
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("minimum_feasible_nodes", &self.minimum_feasible_nodes)
            .field(
                "minimum_percentage_nodes_to_find",
                &self.minimum_percentage_nodes_to_find,
            )
            .field("percentage_nodes_to_find", &self.percentage_nodes_to_find)
            .field("scheduler_name", &self.scheduler_name)
            .field("http", &self.http.is_some())
            .field("memory", &self.memory)
            .field("time_zone", &self.time_zone.iana_name())
            .field("search_memo", &self.search_memo)
            .field("carry_rows", &self.carry_rows)
            .field("tables", &self.tables)
            .finish()
    }
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            minimum_feasible_nodes: 100,
            minimum_percentage_nodes_to_find: 5,
            percentage_nodes_to_find: 0,
            scheduler_name: "volcano-rs".to_string(),
            http: None,
            memory: std::sync::Arc::default(),
            time_zone: k8s_openapi::jiff::tz::TimeZone::UTC,
            search_memo: true,
            tables: std::sync::Arc::default(),
            carry_rows: true,
        }
    }
}

/// The search memo's stamps of the nodes at one moment ([`SessionState::search_stamps`]).
pub struct SearchStamps<'a> {
    epoch: u64,
    versions: &'a [u32],
}

impl SearchStamps<'_> {
    /// The high half every stamp shares now; it moves for every node at once.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    #[inline]
    pub fn of(&self, node: NodeId) -> u64 {
        self.epoch | u64::from(self.versions.get(node.index()).copied().unwrap_or(0))
    }
}

/// One move of a node's stamp in the session's log: the node, and whether the move only put a
/// task on it (allocated or pipelined), which can only take room away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchTouch(u32);

/// The top bit of a [`SearchTouch`]: something was taken off the node or changed on it.
const TOUCH_NOT_ONLY_ADDED: u32 = 1 << 31;

impl SearchTouch {
    /// A touch of node `index` (below 2³¹); `only_added` when a task was only put on it.
    pub(super) fn new(index: usize, only_added: bool) -> Option<SearchTouch> {
        let index = u32::try_from(index)
            .ok()
            .filter(|&i| i < TOUCH_NOT_ONLY_ADDED)?;
        Some(SearchTouch(if only_added {
            index
        } else {
            index | TOUCH_NOT_ONLY_ADDED
        }))
    }

    /// The node's position in the session's node table.
    #[inline]
    pub fn node_index(self) -> usize {
        (self.0 & !TOUCH_NOT_ONLY_ADDED) as usize
    }

    /// Whether the move only put a task on the node.
    #[inline]
    pub fn only_added(self) -> bool {
        self.0 & TOUCH_NOT_ONLY_ADDED == 0
    }
}

/// Everything plugins and actions read, and what the framework mutates.
pub struct SessionState {
    pub(super) uid: String,
    pub(super) now: Timestamp,
    /// The build that made the tables ([`super::table_build::TableMemo::keep`]).
    pub(super) built: u64,
    pub(super) tasks: super::rows::Rows<TaskInfo>,
    pub(super) jobs: super::rows::Rows<JobInfo>,
    pub(super) nodes: super::rows::Rows<NodeInfo>,
    pub(super) queues: Vec<QueueInfo>,
    // Fx hashing: these are rebuilt and probed for every object in every session, and their
    // keys are names from the cluster state, not input an attacker picks to collide per session.
    /// Shared with the snapshot's node table while the nodes do not change.
    pub(super) node_by_name: Arc<FxHashMap<String, NodeId>>,
    pub(super) queue_by_name: FxHashMap<String, QueueId>,
    /// Σ allocatable of the session's nodes.
    pub(super) total_resource: Resource,
    pub(super) snapshot: Snapshot,
    pub(super) conf: Arc<SchedulerConf>,
    pub(super) options: SessionOptions,
    /// Names of the configured actions (allocate asks whether `enqueue` runs).
    pub(super) configured_actions: Vec<String>,
    /// The action currently running (recorded on evictions).
    pub(super) current_action: String,
    /// Filled by fairness plugins at close.
    pub(super) queue_metrics: BTreeMap<QueueId, QueueMetrics>,
    /// Filled by plugins (gang, drf) for the job metrics.
    pub(super) job_metrics: Vec<super::decisions::JobFigures>,
    /// Events recorded by plugins and actions during the session.
    pub(super) events: Vec<super::decisions::Event>,
    /// What the session decided so far.
    pub(super) decisions: Decisions,
    /// Where the next feasible-node search starts (Volcano's rotating `lastProcessedNodeIndex`,
    /// so that successive searches spread over the cluster).
    pub(super) last_processed_node_index: usize,
    /// Per node, how often the session changed what is on it (the search memo's clock).
    pub(super) node_versions: Vec<u32>,
    /// Bumped whenever a task whose placement reaches beyond its node moves.
    pub(super) search_epoch: u32,
    /// Per node, whether its row was made afresh rather than taken over from the session
    /// before ([`SessionState::node_row_carried`]).
    pub(super) fresh_nodes: Vec<bool>,
    /// What the last session's plugins handed over, until the plugins of this one take it.
    pub(super) handed_over: Option<super::table_build::HandedOver>,
    /// The tasks on a node, as the session opened, whose pods have inter-pod affinity or
    /// anti-affinity terms (`TaskSpec::inter_pod_affinity`), in `TaskId` order.
    pub(super) placed_with_pod_affinity: Vec<TaskId>,
    /// Likewise the tasks on a node whose pods ask for host ports.
    pub(super) placed_with_host_ports: Vec<TaskId>,
    /// Every node whose version moved, in order (with repeats): the class indexes
    /// (`actions::search_index`) bring what changed since they last looked up to date.
    pub(super) search_touches: Vec<SearchTouch>,
    /// The HyperNode tree over the session's nodes, under the virtual root.
    pub(super) topology: crate::model::SessionTopology,
    /// Per task being placed by the HyperNode-aware path: the job's HyperNode so far
    /// (`TaskInfo.JobAllocatedHyperNode`), which network-topology-aware scoring reads.
    pub(super) task_job_hyper_node: FxHashMap<TaskId, crate::model::HyperNodeId>,
}

/// A session hands its rows to the scheduler's memo as it ends, for the next build to take
/// over the ones nothing changed.
impl Drop for SessionState {
    fn drop(&mut self) {
        if !self.options.carry_rows {
            return;
        }
        let rows = super::table_build::KeptRows {
            tasks: std::mem::take(&mut self.tasks).into_parts(),
            jobs: std::mem::take(&mut self.jobs).into_parts(),
            nodes: std::mem::take(&mut self.nodes).into_parts(),
        };
        self.options.tables.keep(self.built, rows);
    }
}

impl SessionState {
    pub fn task(&self, id: TaskId) -> &TaskInfo {
        &self.tasks[id.index()]
    }
    pub fn job(&self, id: JobId) -> &JobInfo {
        &self.jobs[id.index()]
    }
    pub fn node(&self, id: NodeId) -> &NodeInfo {
        &self.nodes[id.index()]
    }
    pub fn queue(&self, id: QueueId) -> &QueueInfo {
        &self.queues[id.index()]
    }

    pub fn tasks(&self) -> &[TaskInfo] {
        &self.tasks
    }
    pub fn jobs(&self) -> &[JobInfo] {
        &self.jobs
    }
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }
    pub fn queues(&self) -> &[QueueInfo] {
        &self.queues
    }

    /// The session's id (Volcano's session UID; written into conditions).
    pub fn uid(&self) -> &str {
        &self.uid
    }
    /// The session's time: the only clock plugins and actions may read.
    pub fn now(&self) -> Timestamp {
        self.now
    }
    /// Σ allocatable of the session's nodes.
    pub fn total_resource(&self) -> &Resource {
        &self.total_resource
    }
    /// The cluster snapshot the session was built from.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
    pub fn conf(&self) -> &SchedulerConf {
        &self.conf
    }
    pub fn options(&self) -> &SessionOptions {
        &self.options
    }
    /// Names of the configured actions (allocate asks whether `enqueue` runs).
    pub fn configured_actions(&self) -> &[String] {
        &self.configured_actions
    }
    /// The action running now (empty outside actions).
    pub fn current_action(&self) -> &str {
        &self.current_action
    }
    /// Queue metrics filled by the fairness plugins so far.
    pub fn queue_metrics(&self) -> &BTreeMap<QueueId, QueueMetrics> {
        &self.queue_metrics
    }
    /// Job metrics filled by plugins so far.
    pub fn job_metrics(&self, job: JobId) -> Option<&super::decisions::JobFigures> {
        self.job_metrics.get(job.index()).filter(|f| !f.is_empty())
    }
    /// Events recorded so far.
    pub fn events(&self) -> &[super::decisions::Event] {
        &self.events
    }

    /// What the session decided so far, for the engine's tests (nothing reads it mid-session).
    #[cfg(test)]
    pub(crate) fn decisions(&self) -> &Decisions {
        &self.decisions
    }

    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.node_by_name.get(name).copied()
    }
    pub fn queue_id(&self, name: &str) -> Option<QueueId> {
        self.queue_by_name.get(name).copied()
    }
    /// A job by its uid (`namespace/name` of its PodGroup). A scan: only tests ask, and a
    /// session-long index would cost every session a copy of every uid.
    pub fn job_id(&self, uid: &str) -> Option<JobId> {
        self.jobs
            .iter()
            .rposition(|j| j.spec.uid == uid)
            .map(JobId::from_index)
    }

    pub fn job_of(&self, task: TaskId) -> Option<JobId> {
        self.tasks[task.index()].job
    }

    /// The queue of a task's job.
    pub fn queue_of_task(&self, task: TaskId) -> Option<QueueId> {
        self.job_of(task).and_then(|j| self.jobs[j.index()].queue)
    }

    pub fn hierarchy_enabled(&self, plugin: &str) -> bool {
        self.conf.hierarchy_enabled(plugin)
    }

    pub fn job_ids(&self) -> impl Iterator<Item = JobId> + '_ {
        (0..self.jobs.len()).map(JobId::from_index)
    }
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len()).map(NodeId::from_index)
    }
    pub fn queue_ids(&self) -> impl Iterator<Item = QueueId> + '_ {
        (0..self.queues.len()).map(QueueId::from_index)
    }

    /// Tasks of a job in the given status.
    pub fn job_tasks_in(
        &self,
        job: JobId,
        status: TaskStatus,
    ) -> impl Iterator<Item = TaskId> + '_ {
        self.jobs[job.index()]
            .tasks
            .iter()
            .copied()
            .filter(move |t| self.tasks[t.index()].status == status)
    }

    /// `TaskSchedulingReason` (§5.5.6): (reason, message, nominated node).
    pub fn task_scheduling_reason(&self, task: TaskId) -> (String, String, Option<String>) {
        let t = &self.tasks[task.index()];
        let (status, node, eviction_occurred) = match &t.last_transaction {
            Some(ctx) => (ctx.status, ctx.node, ctx.eviction_occurred),
            None => (t.status, t.node, t.eviction_occurred),
        };
        let node_name = node
            .map(|n| self.nodes[n.index()].name().to_string())
            .unwrap_or_default();
        let job = t.job.map(|j| &self.jobs[j.index()]);
        match status {
            TaskStatus::Allocated => (
                "Schedulable".to_string(),
                format!(
                    "Pod {} can possibly be assigned to {node_name}, once minAvailable is satisfied",
                    t.key()
                ),
                None,
            ),
            TaskStatus::Pipelined => (
                "Unschedulable".to_string(),
                format!(
                    "Pod {} can possibly be assigned to {node_name}, once resource is released and minAvailable is satisfied",
                    t.key()
                ),
                eviction_occurred.then_some(node_name),
            ),
            TaskStatus::Pending => {
                let msg = job
                    .and_then(|j| j.nodes_fit_errors.get(&task))
                    .map(|fe| fe.to_string())
                    .unwrap_or_else(|| job.map(|j| j.job_fit_errors.clone()).unwrap_or_default());
                ("Unschedulable".to_string(), msg, None)
            }
            other => (
                other.as_str().to_string(),
                job.map(|j| j.job_fit_errors.clone()).unwrap_or_default(),
                None,
            ),
        }
    }

    /// `JobInfo.FitError()` with the pending-task reason histogram.
    pub fn job_fit_error(&self, job: JobId) -> String {
        let j = &self.jobs[job.index()];
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for t in self.job_tasks_in(job, TaskStatus::Pending) {
            *reasons.entry(self.task_scheduling_reason(t).0).or_default() += 1;
        }
        j.fit_error(&self.tasks, &reasons)
    }

    /// Records an event on a PodGroup (or, for a standalone pod's implicit job, on the pod).
    pub fn record_job_event(
        &mut self,
        job: JobId,
        type_: super::decisions::EventType,
        reason: &str,
        message: String,
    ) {
        let j = &self.jobs[job.index()];
        let object = if j.spec.implicit {
            let t = &self.tasks[j.tasks[0].index()];
            super::decisions::ObjectRef {
                kind: "Pod",
                namespace: Some(t.spec.namespace.clone()),
                name: t.spec.name.clone(),
                uid: t.spec.uid.clone(),
            }
        } else {
            super::decisions::ObjectRef {
                kind: "PodGroup",
                namespace: Some(j.spec.namespace.clone()),
                name: j.spec.name.clone(),
                uid: j.spec.pg_uid.clone(),
            }
        };
        self.events.push(super::decisions::Event {
            object,
            type_,
            reason: reason.to_string(),
            message,
        });
    }

    pub fn set_job_condition(&mut self, job: JobId, cond: JobCondition) {
        let j = &mut self.jobs[job.index()];
        if j.renewed_condition == Some(cond.type_.as_str()) {
            j.renewed_condition = None;
        }
        j.status_mut().set_condition(cond);
    }

    /// When the job holds a condition of this type, status, reason and an empty message,
    /// renews it with this session (transition ID and time) as
    /// [`set_job_condition`](Self::set_job_condition) of the same condition would, and returns
    /// true. Every session renews every running gang's condition; the stamp changes nothing
    /// the status comparison looks at, so it is put on the status only if the status is
    /// written ([`SessionState::written_job_status`]).
    pub fn renew_job_condition(
        &mut self,
        job: JobId,
        type_: &'static str,
        status: &str,
        reason: &str,
    ) -> bool {
        let j = &self.jobs[job.index()];
        let gangs_ready_condition = (type_, status, reason)
            == (
                apis::condition_type::SCHEDULED,
                apis::condition_status::TRUE,
                apis::condition_reason::TASKS_READY,
            );
        let renewable = match j.observed_figures() {
            Some(observed) if gangs_ready_condition => observed.gang_ready,
            _ => j.status().renewable(type_, status, reason),
        };
        // A note for this session only, which leaves the row unchanged for the next build
        // (it resets the note on every row it takes over): every session renews every running
        // gang's condition.
        if renewable && let Some(j) = self.jobs.get_unmarked_mut(job.index()) {
            j.renewed_condition = Some(type_);
        }
        renewable
    }

    /// The job's status as it is written: with the renewal of
    /// [`renew_job_condition`](Self::renew_job_condition) stamped on.
    pub(super) fn written_job_status(&self, job: JobId) -> crate::model::job::JobStatus {
        let j = &self.jobs[job.index()];
        let mut status = j.status().clone();
        if let Some(type_) = j.renewed_condition
            && let Some(c) = status.conditions.iter_mut().find(|c| c.type_ == type_)
        {
            self.uid.clone_into(&mut c.transition_id);
            c.last_transition_time = Some(self.now);
        }
        status
    }

    /// Records an event.
    pub fn record_event(&mut self, event: super::decisions::Event) {
        self.events.push(event);
    }

    /// Sets a PodGroup's phase (the close compares it with the phase it had).
    pub fn set_job_phase(&mut self, job: JobId, phase: &str) {
        let j = &mut self.jobs[job.index()];
        if j.phase() != phase {
            phase.clone_into(&mut j.status_mut().phase);
        }
    }

    /// Why a task found no node this session (`nodes_fit_errors`, read by the close).
    pub fn record_task_fit_errors(
        &mut self,
        job: JobId,
        task: TaskId,
        errors: crate::model::FitErrors,
    ) {
        self.jobs[job.index()].nodes_fit_errors.insert(task, errors);
    }

    /// Records the NUMA resources a plugin gave a pod this session binds.
    pub fn record_numa_assignment(&mut self, assignment: super::decisions::NumaAssignment) {
        self.decisions.numa_assignments.push(assignment);
    }

    /// Records the vGPU cards a device plugin saw (`volcano_vgpu_device_*`).
    pub fn record_vgpu_cards(&mut self, cards: Vec<super::decisions::VgpuCard>) {
        self.decisions.vgpu_cards = Some(cards);
    }

    /// Why the job as a whole waits (`job_fit_errors`).
    /// Forgets where the job's pending tasks would have gone in discarded placements, so that
    /// their `PodScheduled` message gives why they wait instead of a dry run's node.
    pub fn forget_dry_runs(&mut self, job: JobId) {
        for &t in &self.jobs[job.index()].tasks {
            let task = &mut self.tasks[t.index()];
            if task.status == TaskStatus::Pending {
                task.last_transaction = None;
            }
        }
    }

    pub fn set_job_fit_error(&mut self, job: JobId, message: String) {
        self.jobs[job.index()].job_fit_errors = message;
    }

    /// A plugin's figures for a queue, shown in the queue metrics.
    pub fn queue_metrics_mut(&mut self, queue: QueueId) -> &mut QueueMetrics {
        self.queue_metrics.entry(queue).or_default()
    }

    /// A plugin's figures for a job, shown in the job metrics.
    pub fn job_metrics_mut(&mut self, job: JobId) -> &mut super::decisions::JobFigures {
        if self.job_metrics.len() <= job.index() {
            self.job_metrics
                .resize_with(self.jobs.len().max(job.index() + 1), Default::default);
        }
        &mut self.job_metrics[job.index()]
    }

    /// Where the next feasible-node search starts (Volcano's rotating
    /// `lastProcessedNodeIndex`, so that successive searches spread over the cluster).
    pub fn node_search_start(&self) -> usize {
        self.last_processed_node_index
    }
    pub fn set_node_search_start(&mut self, index: usize) {
        self.last_processed_node_index = index;
    }

    /// The tasks on a node as the session opened whose pods have inter-pod affinity or
    /// anti-affinity terms, in `TaskId` order: what a view of the placed pods indexes, found
    /// without reading every pod.
    pub fn placed_with_pod_affinity(&self) -> &[TaskId] {
        &self.placed_with_pod_affinity
    }

    /// The tasks on a node as the session opened whose pods ask for host ports, in `TaskId`
    /// order.
    pub fn placed_with_host_ports(&self) -> &[TaskId] {
        &self.placed_with_host_ports
    }

    /// Whether the node's row was taken over from the session before, as that session left
    /// it: the same node object and load sample, the same tasks (renumbered) in the same
    /// state. What a plugin handed over about the node then still holds
    /// ([`super::Plugin::hand_over`]).
    pub fn node_row_carried(&self, node: NodeId) -> bool {
        self.fresh_nodes.get(node.index()) == Some(&false)
    }

    /// What the last session's plugins handed over, by instance, when it was made under this
    /// configuration.
    pub(super) fn take_handed_over(
        &mut self,
        conf: &Arc<SchedulerConf>,
    ) -> Vec<Option<Box<dyn std::any::Any + Send + Sync>>> {
        match self.handed_over.take() {
            Some(h) if Arc::ptr_eq(&h.conf, conf) => h.states,
            _ => Vec::new(),
        }
    }

    /// The search memo's stamp of a node: it changes whenever the session changes what is on
    /// the node, and for every node when a task whose placement reaches beyond its node moves.
    /// Never 0, so 0 can mean "nothing remembered".
    pub fn search_stamp(&self, node: NodeId) -> u64 {
        self.search_stamps().of(node)
    }

    /// [`SessionState::search_stamp`] for many nodes while nothing moves.
    pub fn search_stamps(&self) -> SearchStamps<'_> {
        SearchStamps {
            epoch: (u64::from(self.search_epoch) + 1) << 32,
            versions: &self.node_versions,
        }
    }

    /// The nodes whose stamps moved, in the order they moved (a node once per move).
    pub fn search_touches(&self) -> &[SearchTouch] {
        &self.search_touches
    }

    /// How many jobs could not be scheduled (`volcano_unschedule_job_count`; gang counts them).
    pub fn record_unschedulable_jobs(&mut self, jobs: usize) {
        self.decisions.unschedulable_jobs = Some(jobs);
    }

    /// One node tried for a preemptor (`volcano_total_preemption_attempts`).
    pub fn record_preemption_attempt(&mut self) {
        self.decisions.preemption_attempts += 1;
    }
    /// The victims proposed on the last node tried (`volcano_pod_preemption_victims`).
    pub fn record_preemption_victims(&mut self, victims: usize) {
        self.decisions.preemption_victims = Some(victims);
    }

    /// Marks the start of an action (its name goes on the evictions it makes).
    pub fn begin_action(&mut self, name: &str) {
        name.clone_into(&mut self.current_action);
    }
    /// Marks the end of the running action, which joins the list of actions run.
    pub fn end_action(&mut self) {
        let name = std::mem::take(&mut self.current_action);
        self.decisions.actions_run.push(name);
    }
}
