//! What a session decided. A session performs no I/O: the daemon's executor turns these into
//! API calls, the simulator applies them to its in-memory cluster.

use crate::model::job::JobStatus;
use crate::model::resource::Resource;

/// Bind a pod to a node (`pods/binding`).
#[derive(Clone, Debug, PartialEq)]
pub struct Bind {
    /// `<namespace>/<name>`
    pub pod: String,
    pub pod_uid: String,
    pub node: String,
    /// What must be written before the bind: the pod's volumes (Volcano's pre-bind).
    pub volumes: Vec<VolumeWrite>,
    /// How long the bind may wait for the volume controller to complete `volumes`.
    pub volume_bind_timeout: std::time::Duration,
    /// Pod annotations the binding carries (the API server copies them onto the pod with the
    /// node): what a device plugin needs to know, e.g. the GPU cards chosen.
    pub annotations: std::collections::BTreeMap<String, String>,
    /// The node annotation to take as a lock before the bind (a device's node lock), if any.
    pub node_lock: Option<String>,
}

/// A plugin's pre-bind answer: the writes, and how long their completion may be waited for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreBindWrites {
    pub writes: Vec<VolumeWrite>,
    pub timeout: std::time::Duration,
    /// Pod annotations the binding carries.
    pub annotations: std::collections::BTreeMap<String, String>,
    /// The node lock to take before the bind ([`Bind::node_lock`]).
    pub node_lock: Option<String>,
}

/// A volume write that must land before a pod's bind (spec `kubernetes.md` §7.9.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VolumeWrite {
    /// Bind a static volume to a claim (`namespace/name`): the volume's `spec.claimRef`, which
    /// the volume controller completes on both sides.
    BindVolume { volume: String, claim: String },
    /// Have the claim's volume provisioned for the node: the claim's
    /// `volume.kubernetes.io/selected-node` annotation.
    SelectNode { claim: String, node: String },
}

/// A pod reserved on a node whose resources are still being released (session-only).
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub pod: String,
    pub node: String,
}

/// Evict a pod (condition, then delete).
#[derive(Clone, Debug, PartialEq)]
pub struct Eviction {
    pub pod: String,
    pub pod_uid: String,
    pub node: String,
    /// The action that decided it (`preempt`, `reclaim`, …).
    pub action: String,
    pub reason: String,
    /// `namespace/name` of the pod the eviction makes room for (preempt, reclaim), if any.
    pub preemptor: Option<String>,
}

/// A PodGroup whose status changed during the session.
#[derive(Clone, Debug, PartialEq)]
pub struct PodGroupStatusUpdate {
    /// `<namespace>/<name>`
    pub pod_group: String,
    pub status: JobStatus,
    /// The job is placed, but only by binds not yet seen to land, so its phase is not
    /// Running yet: the first session that sees them landed writes its status again, as
    /// Running. A writer that sends binds and statuses to an API server may leave this one
    /// unwritten (the daemon does: docs/architecture.md, "Differences from Volcano").
    pub awaiting_binds: bool,
}

/// A pod whose `PodScheduled=False` condition must be (re)written.
#[derive(Clone, Debug, PartialEq)]
pub struct PodConditionUpdate {
    pub pod: String,
    pub reason: String,
    pub message: String,
    /// Written into `status.nominatedNodeName` when set.
    pub nominated_node: Option<String>,
}

/// A queue whose `status.allocated` changed.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueAllocation {
    pub queue: String,
    pub allocated: Resource,
}

/// The object an event is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    pub kind: &'static str,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// A Kubernetes event to record.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub object: ObjectRef,
    pub type_: EventType,
    pub reason: String,
    pub message: String,
}

/// Per-queue figures for the `volcano_queue_*` metrics and the simulator's queue table,
/// filled by the fairness plugins at close.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueMetrics {
    pub weight: i32,
    pub allocated: Resource,
    pub request: Resource,
    pub deserved: Option<Resource>,
    pub capability: Option<Resource>,
    pub real_capability: Option<Resource>,
    pub inqueue: Option<Resource>,
    pub share: Option<f64>,
    pub overused: Option<bool>,
}

/// A plugin's figures for one job in a session (`SessionState::job_metrics_mut`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobFigures {
    /// `minMember − schedulable` for a job that is not ready, 0 for a ready one.
    pub unschedule_task_count: Option<i32>,
    /// The job was unready this session (counts one retry).
    pub retried: bool,
    /// DRF dominant share.
    pub share: Option<f64>,
    /// Tasks this session bound or pipelined.
    pub placed: usize,
}

impl JobFigures {
    /// No plugin reported anything.
    pub fn is_empty(&self) -> bool {
        *self == JobFigures::default()
    }
}

/// Per-job figures for the job metrics (`volcano_unschedule_task_count`,
/// `volcano_job_retry_counts`, `volcano_job_share`), filled by plugins at close. The labels
/// come from the job's shared spec, so a session reports every job without copying names.
#[derive(Clone, Debug, Default)]
pub struct JobMetrics {
    /// The job: its namespace, PodGroup name, queue and creation time label the series.
    pub job: std::sync::Arc<crate::model::JobSpec>,
    pub figures: JobFigures,
}

impl JobMetrics {
    /// Figures for a job known only by its labels (tests, and callers outside a session).
    pub fn labelled(
        namespace: &str,
        name: &str,
        queue: &str,
        creation: Option<k8s_openapi::jiff::Timestamp>,
        figures: JobFigures,
    ) -> JobMetrics {
        let mut spec = crate::model::JobSpec::new(
            format!("{namespace}/{name}"),
            name.to_string(),
            namespace.to_string(),
            queue.to_string(),
            0,
        );
        spec.creation = creation;
        JobMetrics {
            job: std::sync::Arc::new(spec),
            figures,
        }
    }
    /// The job's uid (`namespace/name`).
    pub fn uid(&self) -> &str {
        &self.job.uid
    }
    pub fn namespace(&self) -> &str {
        &self.job.namespace
    }
    /// PodGroup name (Volcano labels job metrics with it).
    pub fn name(&self) -> &str {
        &self.job.name
    }
    pub fn queue(&self) -> &str {
        &self.job.queue_name
    }
    /// PodGroup creation time.
    pub fn creation(&self) -> Option<k8s_openapi::jiff::Timestamp> {
        self.job.creation
    }
}

impl PartialEq for JobMetrics {
    fn eq(&self, other: &Self) -> bool {
        self.figures == other.figures
            && (std::sync::Arc::ptr_eq(&self.job, &other.job)
                || (self.namespace(), self.name(), self.queue(), self.creation())
                    == (
                        other.namespace(),
                        other.name(),
                        other.queue(),
                        other.creation(),
                    ))
    }
}

/// How long one plugin hook took (`volcano_plugin_scheduling_latency_milliseconds`).
#[derive(Clone, Debug, PartialEq)]
pub struct PluginTiming {
    pub plugin: String,
    /// `OnSessionOpen` or `OnSessionClose`.
    pub on_session: &'static str,
    pub duration: std::time::Duration,
}

/// Everything a session decided, in decision order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decisions {
    pub binds: Vec<Bind>,
    pub evictions: Vec<Eviction>,
    pub pipelined: Vec<Pipeline>,
    pub pod_group_statuses: Vec<PodGroupStatusUpdate>,
    pub pod_conditions: Vec<PodConditionUpdate>,
    pub queue_allocations: Vec<QueueAllocation>,
    pub events: Vec<Event>,
    /// queue name → figures, for every queue of the session.
    pub queue_metrics: std::collections::BTreeMap<String, QueueMetrics>,
    /// Figures of the jobs a plugin reported on, in the session's job order (each names its
    /// job: [`JobMetrics::uid`]). A list, not a map by uid: the session reports every job, and
    /// copying every uid into a map cost a steady session a tenth of its time.
    pub job_metrics: Vec<JobMetrics>,
    /// Pending tasks left with a `PodScheduled=False` reason at close.
    pub unschedulable_tasks: usize,
    /// Jobs the gang plugin found not ready (`volcano_unschedule_job_count`); `None` when gang
    /// did not run.
    pub unschedulable_jobs: Option<usize>,
    /// Time spent per action and plugin callbacks is measured by the caller; the engine only
    /// reports what it decided.
    pub actions_run: Vec<String>,
    /// Plugin hook durations, when the session was given a clock.
    pub plugin_timings: Vec<PluginTiming>,
    /// Nodes the preempt action tried for a preemptor (`volcano_total_preemption_attempts`).
    pub preemption_attempts: usize,
    /// Victims the plugins proposed on the last node tried (`volcano_pod_preemption_victims`).
    pub preemption_victims: Option<usize>,
    /// The NUMA resources `numa-aware` gave pods this session binds, which the state keeps
    /// until the nodes report them (`AddUnassignedNumaPods`).
    pub numa_assignments: Vec<NumaAssignment>,
    /// The vGPU cards `deviceshare` saw at session open, for Volcano's `volcano_vgpu_device_*`
    /// gauges; `None` when the vGPU device is off.
    pub vgpu_cards: Option<Vec<VgpuCard>>,
}

/// One registered vGPU card and what the pods on it hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VgpuCard {
    pub node: String,
    pub uuid: String,
    /// Memory in MiB.
    pub memory: u64,
    /// Containers sharing it.
    pub shared: u64,
    pub used_memory: u64,
    /// Compute in percent.
    pub used_cores: u64,
    /// Pod name (as Volcano labels it, without namespace) → (memory, cores).
    pub pods: Vec<(String, u64, u64)>,
}

/// The NUMA resources given to one bound pod: resource name → CPU list.
#[derive(Clone, Debug, PartialEq)]
pub struct NumaAssignment {
    pub pod: String,
    pub pod_uid: String,
    pub node: String,
    pub resources: std::collections::BTreeMap<String, String>,
}
