//! The scheduler's Prometheus metrics (spec/kubernetes.md §10.1–§10.3), exported under Volcano's
//! names so that existing dashboards and alerts keep working; docs/metrics.md lists every series.
//!
//! Volcano registers its metrics in the process-wide default registry; here they live in a
//! [`Registry`] owned by [`Metrics`], so tests (and several schedulers in one process) do not
//! share state. The exposition is the same.
//!
//! Differences from Volcano, all additive or documented in docs/metrics.md:
//!
//! * `volcano_schedule_attempts_total{result}` is defined but never incremented by Volcano; here
//!   every pod attempt counts once by its outcome: `scheduled` when its binding succeeds,
//!   `unschedulable` when a session leaves it pending, `error` when its binding fails or the
//!   session itself fails. The three series exist from start-up, at 0.
//! * Our own series: `volcano_pods_bound_total`, `volcano_sessions_total{outcome}`,
//!   `volcano_bind_errors_total`,
//!   `volcano_pods_evicted_total{action}`, `volcano_config_reloads_total{result}`,
//!   `volcano_config_skipped_plugins{plugin}`, `volcano_invariant_violations_total{kind}`,
//!   `volcano_api_writes_total{write}`, `volcano_api_writes_fenced_total{write}` and
//!   `volcano_leader`, plus the `promhttp_metric_handler_*` pair that Go's instrumented handler
//!   adds to every scrape.
//! * Go's runtime/process collectors and client-go's REST metrics have no equivalent.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use engine::framework::{Decisions, JobMetrics, QueueMetrics, VgpuCard};
use engine::model::Resource;
use k8s_openapi::jiff::Timestamp;
use prometheus::{
    GaugeVec, Histogram, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Registry,
    TEXT_FORMAT, TextEncoder,
};

/// `volcano_sessions_total{outcome}`: a session that bound, pipelined or evicted a pod.
const SESSION_DECIDED: &str = "decided";
/// `volcano_sessions_total{outcome}`: a session that decided nothing.
const SESSION_EMPTY: &str = "empty";

/// Prometheus subsystem of every Volcano metric: names read `volcano_<name>`.
pub const SUBSYSTEM: &str = "volcano";

mod families;
mod vgpu;
use families::{Registrar, SCRAPE_IN_FLIGHT, SCRAPE_REQUESTS};
use vgpu::VgpuGauges;

/// `OnSession` label value of a plugin's session-open callback.
pub const ON_SESSION_OPEN: &str = "OnSessionOpen";
/// `OnSession` label value of a plugin's session-close callback.
pub const ON_SESSION_CLOSE: &str = "OnSessionClose";

/// `ExponentialBucketsRange(min, max, count)` of the Go client: `count` boundaries growing by a
/// constant factor from `min` to `max`, `b_i = min · (max/min)^(i/(count−1))`.
///
/// Computed as Go does (one growth factor raised to `i`), so the `le` labels match Volcano's.
/// Degenerate arguments, where Go panics, give a usable answer instead: `count == 0` → no
/// boundaries, `count == 1` → `[min]`.
pub fn exponential_buckets_range(min: f64, max: f64, count: usize) -> Vec<f64> {
    match count {
        0 => Vec::new(),
        1 => vec![min],
        _ => {
            let growth = (max / min).powf(1.0 / (count - 1) as f64);
            (0..count).map(|i| min * growth.powf(i as f64)).collect()
        }
    }
}

/// Moments of a task's life observed by `volcano_task_scheduling_latency_milliseconds`, each as
/// the time since the pod was created.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TaskStage {
    /// The watcher saw the pod unbound for the first time.
    Watched,
    /// A session committed an allocation of the pod.
    Assumed,
    /// A pre-binder finished for the pod.
    PreBound,
    /// The binding call succeeded.
    Bound,
}

impl TaskStage {
    /// The `stage` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStage::Watched => "Watched",
            TaskStage::Assumed => "Assumed",
            TaskStage::PreBound => "PreBound",
            TaskStage::Bound => "Bound",
        }
    }
}

/// Steps timed by `volcano_scheduling_stage_duration_milliseconds`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SchedulingStage {
    /// One predicate pass over a node list.
    Predicate,
    /// One node-scoring pass.
    Scoring,
    /// One pre-binder run.
    PreBind,
    /// One binding API call.
    Bind,
}

impl SchedulingStage {
    /// The `stage` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulingStage::Predicate => "Predicate",
            SchedulingStage::Scoring => "Scoring",
            SchedulingStage::PreBind => "PreBind",
            SchedulingStage::Bind => "Bind",
        }
    }
}

/// The labels of the per-job e2e gauges: PodGroup namespace and name, and its queue.
#[derive(Copy, Clone, Debug)]
pub struct JobLabels<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub queue: &'a str,
}

impl JobLabels<'_> {
    /// Label values in the order `job_name`, `queue`, `job_namespace`.
    fn values(&self) -> [&str; 3] {
        [self.name, self.queue, self.namespace]
    }
}

/// `result` values of `volcano_schedule_attempts_total`.
const ATTEMPT_SCHEDULED: &str = "scheduled";
const ATTEMPT_UNSCHEDULABLE: &str = "unschedulable";
const ATTEMPT_ERROR: &str = "error";

/// Label names shared by the per-job e2e gauges.
const JOB_LABELS: [&str; 3] = ["job_name", "queue", "job_namespace"];

/// Milliseconds as a float, the unit of every Volcano duration metric.
fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Saturating conversion of a count into a gauge value.
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The three gauges (`_milli_cpu`, `_memory_bytes`, `_scalar_resources{resource}`) that report
/// one resource vector of a queue.
struct QueueResourceGauges {
    milli_cpu: GaugeVec,
    memory: GaugeVec,
    scalars: GaugeVec,
}

impl QueueResourceGauges {
    fn new(f: &Registrar<'_>, kind: &str, what: &str) -> Self {
        QueueResourceGauges {
            milli_cpu: f.dynamic_gauge_vec(
                &format!("queue_{kind}_milli_cpu"),
                &format!("{what} CPU of one queue, in milli-cores"),
                &["queue_name"],
            ),
            memory: f.dynamic_gauge_vec(
                &format!("queue_{kind}_memory_bytes"),
                &format!("{what} memory of one queue, in bytes"),
                &["queue_name"],
            ),
            scalars: f.dynamic_gauge_vec(
                &format!("queue_{kind}_scalar_resources"),
                &format!("{what} scalar resources of one queue (milli-units; pods as a count)"),
                &["queue_name", "resource"],
            ),
        }
    }

    /// Sets the queue's series from `r`; every name in `known` that `r` lacks reports 0, so a
    /// resource that disappears from a queue reads 0 rather than its last value.
    fn set(&self, queue: &str, r: &Resource, known: &BTreeSet<String>) {
        self.milli_cpu.with_label_values(&[queue]).set(r.milli_cpu);
        self.memory.with_label_values(&[queue]).set(r.memory);
        for name in known {
            let value = r
                .scalars
                .iter()
                .find(|(n, _)| n.as_str() == name)
                .map_or(0.0, |(_, v)| v);
            self.scalars.with_label_values(&[queue, name]).set(value);
        }
    }

    fn remove(&self, queue: &str, known: &BTreeSet<String>) {
        // A queue may never have reported this vector (e.g. no capacity plugin): absent series
        // are not an error.
        let _ = self.milli_cpu.remove_label_values(&[queue]);
        let _ = self.memory.remove_label_values(&[queue]);
        for name in known {
            let _ = self.scalars.remove_label_values(&[queue, name]);
        }
    }
}

/// Every metric of the scheduler, in its own registry.
pub struct Metrics {
    registry: Registry,

    // §10.1 scheduling latency and activity
    e2e_scheduling_latency: Histogram,
    open_session_duration: Histogram,
    action_latency: HistogramVec,
    plugin_latency: HistogramVec,
    task_latency: HistogramVec,
    stage_duration: HistogramVec,
    e2e_job_latency: Histogram,
    e2e_job_duration: GaugeVec,
    e2e_job_start_time: GaugeVec,
    e2e_job_last_time: GaugeVec,
    schedule_attempts: IntCounterVec,
    preemption_victims: IntGauge,
    preemption_attempts: IntCounter,
    eviction_transactions: IntCounterVec,
    unschedule_task_count: IntGaugeVec,
    unschedule_job_count: IntGauge,

    // §10.2 queues
    queue_allocated: QueueResourceGauges,
    queue_request: QueueResourceGauges,
    queue_inqueue: QueueResourceGauges,
    queue_deserved: QueueResourceGauges,
    queue_capacity: QueueResourceGauges,
    queue_real_capacity: QueueResourceGauges,
    queue_share: GaugeVec,
    queue_weight: GaugeVec,
    queue_overused: GaugeVec,
    /// Scalar resource names ever reported per queue, across all six scalar vectors (as
    /// Volcano's `knownScalarResources`): they keep reporting 0 once absent, and name the
    /// series to delete with the queue.
    known_scalars: Mutex<HashMap<String, BTreeSet<String>>>,

    // §10.3 jobs
    job_share: GaugeVec,
    job_retry_counts: IntCounterVec,

    // vGPU cards
    vgpu: VgpuGauges,

    // ours
    pods_bound: IntCounter,
    sessions: IntCounterVec,
    bind_errors: IntCounter,
    pods_evicted: IntCounterVec,
    config_reloads: IntCounterVec,
    skipped_plugins: GaugeVec,
    invariant_violations: IntCounterVec,
    writes_sent: IntCounterVec,
    writes_fenced: IntCounterVec,
    node_metrics_runs: IntCounterVec,
    node_metrics_nodes: IntGauge,
    leader: IntGauge,
    scrape_requests: IntCounterVec,
    scrape_in_flight: IntGauge,
}

impl Metrics {
    /// Creates and registers every metric. Unlabelled series and the counters with a fixed set
    /// of label values are present, at 0, from the first scrape.
    pub fn new() -> Arc<Metrics> {
        let registry = Registry::new();
        let f = Registrar {
            registry: &registry,
        };
        // Counters whose label values are known are present at 0 from the first scrape.
        let schedule_attempts = f.int_counter_vec("schedule_attempts_total");
        for result in [ATTEMPT_SCHEDULED, ATTEMPT_UNSCHEDULABLE, ATTEMPT_ERROR] {
            schedule_attempts.with_label_values(&[result]);
        }
        let config_reloads = f.int_counter_vec("config_reloads_total");
        for result in ["success", "failure"] {
            config_reloads.with_label_values(&[result]);
        }
        let invariant_violations = f.int_counter_vec("invariant_violations_total");
        for kind in engine::state::invariants::ViolationKind::ALL {
            invariant_violations.with_label_values(&[kind.as_str()]);
        }
        // Go's promhttp pre-creates these three codes.
        let scrape_requests = f.unprefixed_int_counter_vec(SCRAPE_REQUESTS, &["code"]);
        for code in ["200", "500", "503"] {
            scrape_requests.with_label_values(&[code]);
        }
        // The process_* series Go's client exports for every Volcano binary (memory, CPU, open
        // file descriptors, threads, start time).
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("the process collector registers once");
        for name in [
            "namespace_share",
            "namespace_weight",
            "namespace_weighted_share",
        ] {
            f.gauge_vec(name);
        }

        Arc::new(Metrics {
            e2e_scheduling_latency: f.histogram("e2e_scheduling_latency_milliseconds"),
            open_session_duration: f.histogram("open_session_duration_milliseconds"),
            action_latency: f.histogram_vec("action_scheduling_latency_milliseconds"),
            plugin_latency: f.histogram_vec("plugin_scheduling_latency_milliseconds"),
            task_latency: f.histogram_vec("task_scheduling_latency_milliseconds"),
            stage_duration: f.histogram_vec("scheduling_stage_duration_milliseconds"),
            e2e_job_latency: f.histogram("e2e_job_scheduling_latency_milliseconds"),
            e2e_job_duration: f.gauge_vec("e2e_job_scheduling_duration"),
            e2e_job_start_time: f.gauge_vec("e2e_job_scheduling_start_time"),
            e2e_job_last_time: f.gauge_vec("e2e_job_scheduling_last_time"),
            schedule_attempts,
            preemption_victims: f.int_gauge("pod_preemption_victims"),
            preemption_attempts: f.int_counter("total_preemption_attempts"),
            eviction_transactions: f.int_counter_vec("eviction_transactions_total"),
            unschedule_task_count: f.int_gauge_vec("unschedule_task_count"),
            unschedule_job_count: f.int_gauge("unschedule_job_count"),

            queue_allocated: QueueResourceGauges::new(&f, "allocated", "Allocated"),
            queue_request: QueueResourceGauges::new(&f, "request", "Requested"),
            queue_inqueue: QueueResourceGauges::new(&f, "inqueue", "Reserved (inqueue)"),
            queue_deserved: QueueResourceGauges::new(&f, "deserved", "Deserved"),
            queue_capacity: QueueResourceGauges::new(&f, "capacity", "Capability"),
            queue_real_capacity: QueueResourceGauges::new(&f, "real_capacity", "Real capability"),
            queue_share: f.gauge_vec("queue_share"),
            queue_weight: f.gauge_vec("queue_weight"),
            queue_overused: f.gauge_vec("queue_overused"),
            known_scalars: Mutex::new(HashMap::new()),

            job_share: f.gauge_vec("job_share"),
            job_retry_counts: f.int_counter_vec("job_retry_counts"),

            vgpu: VgpuGauges::new(&f),

            pods_bound: f.int_counter("pods_bound_total"),
            sessions: {
                let sessions = f.int_counter_vec("sessions_total");
                for outcome in [SESSION_DECIDED, SESSION_EMPTY] {
                    sessions.with_label_values(&[outcome]);
                }
                sessions
            },
            bind_errors: f.int_counter("bind_errors_total"),
            pods_evicted: f.int_counter_vec("pods_evicted_total"),
            config_reloads,
            invariant_violations,
            writes_sent: f.int_counter_vec("api_writes_total"),
            writes_fenced: f.int_counter_vec("api_writes_fenced_total"),
            node_metrics_runs: f.int_counter_vec("node_metrics_collections_total"),
            node_metrics_nodes: f.int_gauge("node_metrics_nodes"),
            skipped_plugins: f.gauge_vec("config_skipped_plugins"),
            leader: f.int_gauge("leader"),
            scrape_requests,
            scrape_in_flight: f.unprefixed_int_gauge(SCRAPE_IN_FLIGHT),
            registry,
        })
    }

    /// The vGPU cards of the last session (`volcano_vgpu_device_*`); series of cards and pods
    /// no longer seen are deleted, all of them when the device is off.
    pub fn record_vgpu_cards(&self, cards: Option<&[VgpuCard]>) {
        self.vgpu.record(cards.unwrap_or_default());
    }

    /// One scheduling cycle: time to open the session, each action run (name, duration) and
    /// the whole cycle from open to close.
    pub fn observe_session(&self, open: Duration, actions: &[(String, Duration)], total: Duration) {
        self.open_session_duration.observe(millis(open));
        for (action, d) in actions {
            self.action_latency
                .with_label_values(&[action.as_str()])
                .observe(millis(*d));
        }
        self.e2e_scheduling_latency.observe(millis(total));
    }

    /// One plugin callback: `on_session` is [`ON_SESSION_OPEN`] or [`ON_SESSION_CLOSE`].
    pub fn observe_plugin(&self, plugin: &str, on_session: &str, d: Duration) {
        self.plugin_latency
            .with_label_values(&[plugin, on_session])
            .observe(millis(d));
    }

    /// A task reached `stage`, `since_creation` after its pod was created.
    pub fn observe_task_stage(&self, stage: TaskStage, since_creation: Duration) {
        self.task_latency
            .with_label_values(&[stage.as_str()])
            .observe(millis(since_creation));
    }

    /// One run of a per-task scheduling step.
    pub fn observe_scheduling_stage(&self, stage: SchedulingStage, d: Duration) {
        self.stage_duration
            .with_label_values(&[stage.as_str()])
            .observe(millis(d));
    }

    /// What a closed session reports: the queue gauges from `d.queue_metrics` and the job
    /// series from `d.job_metrics` (optional figures only when a plugin set them), the
    /// unschedulable job count (when gang ran), and one `unschedulable` attempt per task left
    /// pending.
    pub fn record_decisions(&self, d: &Decisions) {
        self.record_decisions_with(d, |_| false);
    }

    /// [`record_decisions`](Self::record_decisions), leaving alone the gauges of the jobs
    /// `unchanged` says were reported with the same figures before (their retries still
    /// count): in steady state most jobs' figures stay the same from one session to the next.
    /// `unchanged` gets each job's position in `d.job_metrics`' order.
    pub fn record_decisions_with(&self, d: &Decisions, unchanged: impl Fn(usize) -> bool) {
        let decided = !d.binds.is_empty() || !d.pipelined.is_empty() || !d.evictions.is_empty();
        self.sessions
            .with_label_values(&[if decided {
                SESSION_DECIDED
            } else {
                SESSION_EMPTY
            }])
            .inc();
        for (queue, m) in &d.queue_metrics {
            self.record_queue(queue, m);
        }
        for (i, m) in d.job_metrics.iter().enumerate() {
            if unchanged(i) {
                if m.figures.retried {
                    self.job_retry_counts.with_label_values(&[m.name()]).inc();
                }
            } else {
                self.record_job(m);
            }
        }
        if let Some(jobs) = d.unschedulable_jobs {
            self.unschedule_job_count.set(count(jobs));
        }
        self.preemption_attempts
            .inc_by(d.preemption_attempts as u64);
        if let Some(victims) = d.preemption_victims {
            self.preemption_victims.set(count(victims));
        }
        self.schedule_attempts
            .with_label_values(&[ATTEMPT_UNSCHEDULABLE])
            .inc_by(d.unschedulable_tasks as u64);
    }

    /// Gang and drf figures of one job. Volcano labels `unschedule_task_count` and
    /// `job_retry_counts` by PodGroup name only, so same-named jobs of two namespaces share
    /// those series.
    fn record_job(&self, m: &JobMetrics) {
        if let Some(missing) = m.figures.unschedule_task_count {
            self.unschedule_task_count
                .with_label_values(&[m.name()])
                .set(i64::from(missing));
        }
        if m.figures.retried {
            self.job_retry_counts.with_label_values(&[m.name()]).inc();
        }
        if let Some(share) = m.figures.share {
            self.job_share
                .with_label_values(&[m.namespace(), m.name()])
                .set(share);
        }
    }

    fn record_queue(&self, queue: &str, m: &QueueMetrics) {
        let vectors: [(&QueueResourceGauges, Option<&Resource>); 6] = [
            (&self.queue_allocated, Some(&m.allocated)),
            (&self.queue_request, Some(&m.request)),
            (&self.queue_inqueue, m.inqueue.as_ref()),
            (&self.queue_deserved, m.deserved.as_ref()),
            (&self.queue_capacity, m.capability.as_ref()),
            (&self.queue_real_capacity, m.real_capability.as_ref()),
        ];
        {
            let mut known = self
                .known_scalars
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let names = known.entry(queue.to_owned()).or_default();
            // Learn every name of this update first, so that all vectors updated together agree
            // on which resources the queue reports (Volcano's result depends on update order).
            for (_, r) in &vectors {
                if let Some(r) = r {
                    names.extend(r.scalars.iter().map(|(n, _)| n.as_str().to_owned()));
                }
            }
            for (gauges, r) in &vectors {
                if let Some(r) = r {
                    gauges.set(queue, r, names);
                }
            }
        }
        self.queue_weight
            .with_label_values(&[queue])
            .set(f64::from(m.weight));
        if let Some(share) = m.share {
            self.queue_share.with_label_values(&[queue]).set(share);
        }
        if let Some(overused) = m.overused {
            self.queue_overused
                .with_label_values(&[queue])
                .set(if overused { 1.0 } else { 0.0 });
        }
    }

    /// Deletes every series of a deleted queue.
    pub fn remove_queue(&self, queue: &str) {
        let names = self
            .known_scalars
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(queue)
            .unwrap_or_default();
        for gauges in [
            &self.queue_allocated,
            &self.queue_request,
            &self.queue_inqueue,
            &self.queue_deserved,
            &self.queue_capacity,
            &self.queue_real_capacity,
        ] {
            gauges.remove(queue, &names);
        }
        for gauge in [&self.queue_share, &self.queue_weight, &self.queue_overused] {
            let _ = gauge.remove_label_values(&[queue]);
        }
    }

    /// A binding succeeded: `bind_latency` is the API call's duration, `since_creation` the
    /// pod's age when known.
    pub fn pod_bound(&self, bind_latency: Duration, since_creation: Option<Duration>) {
        self.pods_bound.inc();
        self.schedule_attempts
            .with_label_values(&[ATTEMPT_SCHEDULED])
            .inc();
        self.observe_scheduling_stage(SchedulingStage::Bind, bind_latency);
        if let Some(age) = since_creation {
            self.observe_task_stage(TaskStage::Bound, age);
        }
    }

    /// A binding call failed (the pod goes back to pending).
    pub fn bind_failed(&self) {
        self.bind_errors.inc();
        self.schedule_attempts
            .with_label_values(&[ATTEMPT_ERROR])
            .inc();
    }

    /// A session could not run or complete; counts one `error` attempt.
    pub fn session_failed(&self) {
        self.schedule_attempts
            .with_label_values(&[ATTEMPT_ERROR])
            .inc();
    }

    /// One committed eviction transaction of `action` (`preempt`, `reclaim`, …) with `victims`
    /// evicted pods; a transaction without victims is not counted, as in Volcano.
    pub fn evictions(&self, action: &str, victims: usize) {
        if victims == 0 {
            return;
        }
        self.eviction_transactions
            .with_label_values(&[action])
            .inc();
        self.pods_evicted
            .with_label_values(&[action])
            .inc_by(victims as u64);
    }

    /// The preempt action tried one node (or prepared one candidate).
    pub fn preemption_attempt(&self) {
        self.preemption_attempts.inc();
    }

    /// Victims proposed by the plugins for the latest node the preempt action considered.
    pub fn set_preemption_victims(&self, victims: usize) {
        self.preemption_victims.set(count(victims));
    }

    /// A PodGroup was added or updated: its creation time starts the job's e2e clock.
    pub fn set_job_start_time(&self, job: JobLabels<'_>, created: Timestamp) {
        self.e2e_job_start_time
            .with_label_values(&job.values())
            .set(created.as_second() as f64);
    }

    /// A task of the job was allocated (or pipelined) at `now`, `since_creation` after the
    /// PodGroup was created.
    pub fn job_task_allocated(&self, job: JobLabels<'_>, since_creation: Duration, now: Timestamp) {
        let ms = millis(since_creation);
        self.e2e_job_duration
            .with_label_values(&job.values())
            .set(ms);
        self.e2e_job_latency.observe(ms);
        self.e2e_job_last_time
            .with_label_values(&job.values())
            .set(now.as_second() as f64);
    }

    /// The job left the cache: delete its series (§10.3).
    pub fn remove_job(&self, job: JobLabels<'_>) {
        for gauge in [
            &self.e2e_job_duration,
            &self.e2e_job_start_time,
            &self.e2e_job_last_time,
        ] {
            let _ = gauge.remove_label_values(&job.values());
        }
        let _ = self.unschedule_task_count.remove_label_values(&[job.name]);
        let _ = self
            .job_share
            .remove_label_values(&[job.namespace, job.name]);
        let _ = self.job_retry_counts.remove_label_values(&[job.name]);
    }

    /// A configuration reload was attempted.
    pub fn config_reload(&self, ok: bool) {
        let result = if ok { "success" } else { "failure" };
        self.config_reloads.with_label_values(&[result]).inc();
    }

    /// A write request is about to be sent.
    pub fn write_sent(&self, write: &str) {
        self.writes_sent.with_label_values(&[write]).inc();
    }

    /// A node-metrics collection ended: `nodes` reported on when it succeeded.
    pub fn node_metrics_collected(&self, result: Result<usize, ()>) {
        match result {
            Ok(nodes) => {
                self.node_metrics_runs.with_label_values(&["ok"]).inc();
                self.node_metrics_nodes.set(nodes as i64);
            }
            Err(()) => self.node_metrics_runs.with_label_values(&["error"]).inc(),
        }
    }

    /// A write was dropped by the fence.
    pub fn write_fenced(&self, write: &str) {
        self.writes_fenced.with_label_values(&[write]).inc();
    }

    /// A runtime invariant violation was found.
    pub fn invariant_violation(&self, kind: &str) {
        self.invariant_violations.with_label_values(&[kind]).inc();
    }

    /// The plugins skipped by the configuration in force (replaces the previous set).
    pub fn set_skipped_plugins(&self, names: &[String]) {
        self.skipped_plugins.reset();
        for name in names {
            self.skipped_plugins.with_label_values(&[name]).set(1.0);
        }
    }

    /// This replica gained (`true`) or lost the leadership.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// The Prometheus text exposition of every series; an encoding failure is logged and gives
    /// what was encoded before it.
    pub fn encode_text(&self) -> String {
        self.try_encode_text().unwrap_or_else(|e| {
            tracing::error!(error = %e, "encoding metrics failed");
            String::new()
        })
    }

    fn try_encode_text(&self) -> prometheus::Result<String> {
        let mut out = String::new();
        TextEncoder::new().encode_utf8(&self.registry.gather(), &mut out)?;
        Ok(out)
    }

    /// One `/metrics` request: the exposition, with the scrape itself counted the way Go's
    /// instrumented handler does (in flight while encoding, by status code afterwards).
    pub fn scrape(&self) -> prometheus::Result<String> {
        self.scrape_in_flight.inc();
        let out = self.try_encode_text();
        self.scrape_in_flight.dec();
        let code = if out.is_ok() { "200" } else { "500" };
        self.scrape_requests.with_label_values(&[code]).inc();
        out
    }

    /// The content type of [`Metrics::encode_text`]'s output.
    pub fn content_type(&self) -> &'static str {
        TEXT_FORMAT
    }

    /// The registry holding every metric, for callers that add their own collectors.
    pub fn registry(&self) -> &prometheus::Registry {
        &self.registry
    }
}

#[cfg(test)]
mod tests;
