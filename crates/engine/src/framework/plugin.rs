//! The plugin interface (spec/framework.md §3, §8.1).
//!
//! A plugin is built fresh for every session from its configured arguments, opened in tier
//! order, and says which extension points it registers for this session through
//! [`Plugin::extension_points`] (some register conditionally, e.g. DRF's queue order only in
//! hierarchy mode). The session only calls a method whose point is registered, so the default
//! bodies below are never the answer of a plugin that did not register; they are neutral values.

use std::cmp::Ordering;

use crate::conf::Arguments;
use crate::model::topology::GradientQuery;
use crate::model::{FitError, HyperNodeId, JobId, NodeId, QueueId, SubJobId, TaskId};

use super::session_state::SessionState;

/// Extension points a plugin may register (a bit set).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtensionPoints(u32);

impl ExtensionPoints {
    pub const NONE: Self = Self(0);
    pub const JOB_ORDER: Self = Self(1 << 0);
    pub const QUEUE_ORDER: Self = Self(1 << 1);
    pub const TASK_ORDER: Self = Self(1 << 2);
    pub const VICTIM_QUEUE_ORDER: Self = Self(1 << 3);
    pub const PREDICATE: Self = Self(1 << 4);
    pub const PRE_PREDICATE: Self = Self(1 << 5);
    pub const NODE_ORDER: Self = Self(1 << 6);
    pub const BATCH_NODE_ORDER: Self = Self(1 << 7);
    pub const PREEMPTABLE: Self = Self(1 << 8);
    pub const RECLAIMABLE: Self = Self(1 << 9);
    pub const VICTIM_TASKS: Self = Self(1 << 10);
    pub const OVERUSED: Self = Self(1 << 11);
    pub const ALLOCATABLE: Self = Self(1 << 12);
    pub const PREEMPTIVE: Self = Self(1 << 13);
    pub const JOB_VALID: Self = Self(1 << 14);
    pub const JOB_READY: Self = Self(1 << 15);
    pub const JOB_PIPELINED: Self = Self(1 << 16);
    pub const JOB_ENQUEUEABLE: Self = Self(1 << 17);
    pub const JOB_ENQUEUED: Self = Self(1 << 18);
    pub const JOB_STARVING: Self = Self(1 << 19);
    pub const EVENT_HANDLER: Self = Self(1 << 20);
    /// volcano-rs's own: which candidates may be evicted with no preemptor (shuffle).
    pub const EVICTION_GUARD: Self = Self(1 << 21);
    /// Gang-aware victim filtering (`UnifiedEvictable`, gangpreempt and gangreclaim).
    pub const UNIFIED_EVICTABLE: Self = Self(1 << 22);
    /// Volcano's `PreBinder`: writes that must land before a pod's bind.
    pub const PRE_BIND: Self = Self(1 << 23);
    /// `HyperNodeOrderFn`: scores of candidate HyperNodes for a job.
    pub const HYPER_NODE_ORDER: Self = Self(1 << 24);
    /// `HyperNodeGradientForJobFn` / `ForSubJobFn`: the HyperNodes to try, by tier.
    pub const HYPER_NODE_GRADIENT: Self = Self(1 << 25);
    /// `SubJobReadyFn`, `SubJobPipelinedFn`, `SubJobOrderFn`.
    pub const SUB_JOB_READY: Self = Self(1 << 26);
    pub const SUB_JOB_PIPELINED: Self = Self(1 << 27);
    pub const SUB_JOB_ORDER: Self = Self(1 << 28);

    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    pub fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }
}

impl std::ops::BitOr for ExtensionPoints {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

/// Which gang action asks [`Plugin::unified_evictable`] (Volcano's `EvictionContext`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EvictionKind {
    GangPreempt,
    GangReclaim,
}

/// What a gang action is evicting for.
#[derive(Copy, Clone, Debug)]
pub struct EvictionContext {
    pub kind: EvictionKind,
    /// The preempting or reclaiming job.
    pub job: JobId,
}

thread_local! {
    static DEFAULTS_RUN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Records that a trait method's default body ran: the plugin does not implement that point.
fn default_ran(point: ExtensionPoints) {
    DEFAULTS_RUN.with(|c| c.set(c.get() | point.0));
}

/// The points whose default bodies ran on this thread since the last call, and resets them.
/// Lets a test tell which points a plugin really implements (an override never records).
pub fn take_defaults_run() -> ExtensionPoints {
    DEFAULTS_RUN.with(|c| ExtensionPoints(c.replace(0)))
}

/// Vote values of `JobPipelined` / `JobEnqueueable` (§3.1).
pub const PERMIT: i32 = 1;
pub const ABSTAIN: i32 = 0;
pub const REJECT: i32 = -1;

/// What [`Plugin::predicate_outcome`] tells: whether `predicate` returns `Ok`, and if not,
/// whether its error blocks allocation ([`FitError::blocks_allocation`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PredicateOutcome {
    Passes,
    Fails { blocks_allocation: bool },
}

impl PredicateOutcome {
    /// The outcome of a `predicate` answer.
    pub fn of(result: &Result<(), FitError>) -> Self {
        match result {
            Ok(()) => PredicateOutcome::Passes,
            Err(e) => PredicateOutcome::Fails {
                blocks_allocation: e.blocks_allocation(),
            },
        }
    }
}

/// Result of `JobValid` when the job fails validation.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidateResult {
    pub reason: String,
    pub message: String,
}

/// A scheduler plugin. Every method takes the session state read-only except the open/close
/// hooks and the event handlers, which may update the plugin's own state.
pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// Called once, in tier order, when the session opens.
    fn on_session_open(&mut self, _ssn: &mut SessionState) {}

    /// Called once when the session closes (in tier order; Volcano's order is unspecified).
    fn on_session_close(&mut self, _ssn: &mut SessionState) {}

    /// What this plugin keeps for its successor: the instance at the same place in the next
    /// session of the same configuration, when that session takes the rows of this one over
    /// ([`SessionState::node_row_carried`]). Asked once, after close. Whatever it holds about a
    /// row may be used again only where the row was carried: the receiver checks. The default
    /// keeps nothing, which is always correct.
    fn hand_over(&mut self) -> Option<Box<dyn std::any::Any + Send + Sync>> {
        None
    }

    /// Receives what the instance before this one handed over ([`Plugin::hand_over`]); called
    /// before [`Plugin::on_session_open`], and only when the configuration is the same.
    fn take_over(&mut self, _previous: Box<dyn std::any::Any + Send + Sync>) {}

    /// The points this plugin registered for this session; asked after `on_session_open`.
    fn extension_points(&self) -> ExtensionPoints;

    /// Every point this plugin may register in some session (its arguments, the cluster or the
    /// clock decide which); by default exactly [`Plugin::extension_points`]. The registry test
    /// checks that a plugin implements what it declares and declares nothing beyond this.
    fn possible_extension_points(&self) -> ExtensionPoints {
        self.extension_points()
    }

    fn job_order(&self, _ssn: &SessionState, _l: JobId, _r: JobId) -> Ordering {
        default_ran(ExtensionPoints::JOB_ORDER);
        Ordering::Equal
    }
    fn queue_order(&self, _ssn: &SessionState, _l: QueueId, _r: QueueId) -> Ordering {
        default_ran(ExtensionPoints::QUEUE_ORDER);
        Ordering::Equal
    }
    fn task_order(&self, _ssn: &SessionState, _l: TaskId, _r: TaskId) -> Ordering {
        default_ran(ExtensionPoints::TASK_ORDER);
        Ordering::Equal
    }
    /// `Less` means `l` gives up resources first.
    fn victim_queue_order(
        &self,
        _ssn: &SessionState,
        _l: QueueId,
        _r: QueueId,
        _preemptor: QueueId,
    ) -> Ordering {
        default_ran(ExtensionPoints::VICTIM_QUEUE_ORDER);
        Ordering::Equal
    }

    /// Runs once per task before its node search; may prepare per-task state for `predicate`.
    fn pre_predicate(&mut self, _ssn: &SessionState, _task: TaskId) -> Result<(), String> {
        default_ran(ExtensionPoints::PRE_PREDICATE);
        Ok(())
    }
    /// Node feasibility. Called in parallel across nodes.
    fn predicate(&self, _ssn: &SessionState, _task: TaskId, _node: NodeId) -> Result<(), FitError> {
        default_ran(ExtensionPoints::PREDICATE);
        Ok(())
    }
    /// [`Plugin::predicate`]'s outcome without its reasons, for searches that read the
    /// reasons only when every node fails (they then ask `predicate`). A plugin whose reasons
    /// cost more than its checks answers this itself; the default asks `predicate`.
    fn predicate_outcome(
        &self,
        ssn: &SessionState,
        task: TaskId,
        node: NodeId,
    ) -> PredicateOutcome {
        PredicateOutcome::of(&self.predicate(ssn, task, node))
    }
    /// Per-node score. Called in parallel across nodes.
    fn node_order(&self, _ssn: &SessionState, _task: TaskId, _node: NodeId) -> Result<f64, String> {
        default_ran(ExtensionPoints::NODE_ORDER);
        Ok(0.0)
    }
    /// Scores for all candidate nodes at once, aligned with `nodes`.
    fn batch_node_order(
        &self,
        _ssn: &SessionState,
        _task: TaskId,
        _nodes: &[NodeId],
    ) -> Result<Vec<f64>, String> {
        default_ran(ExtensionPoints::BATCH_NODE_ORDER);
        Ok(Vec::new())
    }

    /// `HyperNodeOrderFn`: a score per candidate HyperNode for placing the job's pending
    /// tasks there, aligned with `candidates`.
    fn hyper_node_order(
        &self,
        _ssn: &SessionState,
        _job: JobId,
        _sub_job: SubJobId,
        _candidates: &[HyperNodeId],
    ) -> Vec<f64> {
        default_ran(ExtensionPoints::HYPER_NODE_ORDER);
        Vec::new()
    }
    /// `SubJobReadyFn`: whether the sub-job has its minimum.
    fn sub_job_ready(&self, _ssn: &SessionState, _job: JobId, _sub_job: SubJobId) -> bool {
        default_ran(ExtensionPoints::SUB_JOB_READY);
        true
    }
    /// `SubJobPipelinedFn`: a vote, as `job_pipelined`.
    fn sub_job_pipelined(&self, _ssn: &SessionState, _job: JobId, _sub_job: SubJobId) -> i32 {
        default_ran(ExtensionPoints::SUB_JOB_PIPELINED);
        ABSTAIN
    }
    /// `SubJobOrderFn`: `Less` means `l` is placed first.
    fn sub_job_order(
        &self,
        _ssn: &SessionState,
        _job: JobId,
        _l: SubJobId,
        _r: SubJobId,
    ) -> Ordering {
        default_ran(ExtensionPoints::SUB_JOB_ORDER);
        Ordering::Equal
    }
    /// `HyperNodeGradientForJobFn`: the HyperNodes under the query's start to try for the
    /// job, grouped by tier in the order to try them. An empty answer means nowhere.
    fn hyper_node_gradient(
        &self,
        _ssn: &SessionState,
        query: &GradientQuery<'_>,
    ) -> Vec<Vec<HyperNodeId>> {
        default_ran(ExtensionPoints::HYPER_NODE_GRADIENT);
        vec![vec![query.start]]
    }

    /// For the allocate search memo (`actions::search_memo`): whether this plugin's predicate,
    /// node score and batch score for `task` on a node depend only on the task's
    /// [`SchedClass`](crate::model::SchedClass) and that node's state (its object, the tasks on
    /// it, its idle, releasing and pipelined resources), each node's score regardless of the
    /// other candidates, and on nothing that changes while the session's placements stay off
    /// other nodes (see [`Plugin::placement_is_node_local`]). Asked after the task's
    /// PrePredicate. The default, `false`, turns the memo off for every task the plugin
    /// answers for, which is always correct.
    fn search_is_node_local(&self, _ssn: &SessionState, _task: TaskId) -> bool {
        false
    }
    /// For allocate's reuse of a failed search (`actions::allocate`): whether this plugin's
    /// predicate, reasons included, answers `task` on every node as it answered `other`, a task
    /// of the same [`SchedClass`](crate::model::SchedClass), when no node and no placement
    /// changed in between. Asked after `task`'s PrePredicate. The default holds for a plugin
    /// whose answers for both are node-local (which rest on the class and the node alone).
    fn predicate_answers_alike(&self, ssn: &SessionState, task: TaskId, other: TaskId) -> bool {
        self.search_is_node_local(ssn, task) && self.search_is_node_local(ssn, other)
    }
    /// For the class index (`actions::search_index`): whether a node this plugin's predicate
    /// refuses `task` on stays refused while tasks are only put on it (allocated or pipelined;
    /// none taken off, none changing status), so that the index need not work the node out
    /// again after such a placement. Asked only where [`Plugin::search_is_node_local`] holds
    /// for the task. The default, `false`, is always correct.
    fn refusal_survives_placements(&self, _ssn: &SessionState, _task: TaskId) -> bool {
        false
    }
    /// For the search memo: whether placing `task` on a node, or taking it off, changes this
    /// plugin's predicates and scores for other tasks on that node only. `false` (the
    /// default) makes the session forget every remembered answer when the task moves.
    fn placement_is_node_local(&self, _ssn: &SessionState, _task: TaskId) -> bool {
        false
    }

    /// Victim filter for preemption: `(victims, vote)`; vote 0 = abstain.
    fn preemptable(
        &self,
        _ssn: &SessionState,
        _preemptor: TaskId,
        _candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        default_ran(ExtensionPoints::PREEMPTABLE);
        (Vec::new(), ABSTAIN)
    }
    /// Victim filter for reclaim: `(victims, vote)`; vote 0 = abstain.
    fn reclaimable(
        &self,
        _ssn: &SessionState,
        _reclaimer: TaskId,
        _candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        default_ran(ExtensionPoints::RECLAIMABLE);
        (Vec::new(), ABSTAIN)
    }
    fn victim_tasks(&self, _ssn: &SessionState, _tasks: &[TaskId]) -> Vec<TaskId> {
        default_ran(ExtensionPoints::VICTIM_TASKS);
        Vec::new()
    }
    /// `UnifiedEvictable`: which of a gang action's candidates may go (answers combine as
    /// `Preemptable`'s, tier by tier; abstain with `ABSTAIN`).
    fn unified_evictable(
        &self,
        _ssn: &SessionState,
        _ctx: &EvictionContext,
        _candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        default_ran(ExtensionPoints::UNIFIED_EVICTABLE);
        (Vec::new(), ABSTAIN)
    }
    /// `PreBind`: what must be written before the task's pod is bound (its volumes), asked
    /// when the bind is decided.
    fn pre_bind(&self, _ssn: &SessionState, _task: TaskId) -> super::decisions::PreBindWrites {
        default_ran(ExtensionPoints::PRE_BIND);
        super::decisions::PreBindWrites::default()
    }
    /// The candidates this plugin lets go when nothing takes their place (shuffle's victims):
    /// the protections of `conformance`, `pdb` and `cdp`, applied without a preemptor.
    fn eviction_guard(&self, _ssn: &SessionState, candidates: &[TaskId]) -> Vec<TaskId> {
        default_ran(ExtensionPoints::EVICTION_GUARD);
        candidates.to_vec()
    }

    fn overused(&self, _ssn: &SessionState, _queue: QueueId) -> bool {
        default_ran(ExtensionPoints::OVERUSED);
        false
    }
    fn allocatable(&self, _ssn: &SessionState, _queue: QueueId, _task: TaskId) -> bool {
        default_ran(ExtensionPoints::ALLOCATABLE);
        true
    }
    /// Whether `queue` may reclaim for this much more (a task's request, or a whole gang's).
    fn preemptive(
        &self,
        _ssn: &SessionState,
        _queue: QueueId,
        _request: &crate::model::Resource,
    ) -> bool {
        default_ran(ExtensionPoints::PREEMPTIVE);
        true
    }

    fn job_valid(&self, _ssn: &SessionState, _job: JobId) -> Option<ValidateResult> {
        default_ran(ExtensionPoints::JOB_VALID);
        None
    }
    fn job_ready(&self, _ssn: &SessionState, _job: JobId) -> bool {
        default_ran(ExtensionPoints::JOB_READY);
        true
    }
    fn job_pipelined(&self, _ssn: &SessionState, _job: JobId) -> i32 {
        default_ran(ExtensionPoints::JOB_PIPELINED);
        ABSTAIN
    }
    fn job_enqueueable(&self, _ssn: &SessionState, _job: JobId) -> i32 {
        default_ran(ExtensionPoints::JOB_ENQUEUEABLE);
        ABSTAIN
    }
    /// Why this plugin's `job_enqueueable` rejected the job in this session, if it did. The
    /// enqueue action keeps it as the job's fit error, so the PodGroup's Unschedulable
    /// condition and the pods' `PodScheduled` message say why the job is not admitted.
    fn enqueue_rejection(&self, _ssn: &SessionState, _job: JobId) -> Option<String> {
        None
    }
    fn job_enqueued(&mut self, _ssn: &SessionState, _job: JobId) {
        default_ran(ExtensionPoints::JOB_ENQUEUED);
    }
    fn job_starving(&self, _ssn: &SessionState, _job: JobId) -> bool {
        default_ran(ExtensionPoints::JOB_STARVING);
        false
    }

    /// Event handler: a task was allocated or pipelined (or an eviction was undone).
    /// An error makes the statement roll the operation back.
    fn on_allocate(&mut self, _ssn: &SessionState, _task: TaskId) -> Result<(), String> {
        default_ran(ExtensionPoints::EVENT_HANDLER);
        Ok(())
    }
    /// Event handler: a task was evicted, or an allocation/pipeline was undone.
    fn on_deallocate(&mut self, _ssn: &SessionState, _task: TaskId) {
        default_ran(ExtensionPoints::EVENT_HANDLER);
    }
}

/// Builds a plugin for one session from its arguments.
pub type PluginBuilder = fn(&Arguments) -> Box<dyn Plugin>;

/// The plugins this build knows, by registered name.
#[derive(Clone, Default)]
pub struct PluginRegistry {
    builders: Vec<(&'static str, PluginBuilder)>,
}

impl PluginRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, name: &'static str, builder: PluginBuilder) {
        self.builders.retain(|(n, _)| *n != name);
        self.builders.push((name, builder));
    }

    pub fn get(&self, name: &str) -> Option<PluginBuilder> {
        self.builders
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, b)| *b)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.builders.iter().map(|(n, _)| *n).collect()
    }
}
