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
//! * Our own series: `volcano_pods_bound_total`, `volcano_bind_errors_total`,
//!   `volcano_pods_evicted_total{action}`, `volcano_config_reloads_total{result}`,
//!   `volcano_config_skipped_plugins{plugin}`, `volcano_invariant_violations_total{kind}`,
//!   `volcano_api_writes_total{write}`, `volcano_api_writes_fenced_total{write}` and
//!   `volcano_leader`, plus the `promhttp_metric_handler_*` pair that Go's instrumented handler
//!   adds to every scrape.
//! * Go's runtime/process collectors and client-go's REST metrics have no equivalent.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use engine::framework::{Decisions, JobMetrics, QueueMetrics};
use engine::model::Resource;
use k8s_openapi::jiff::Timestamp;
use prometheus::core::Collector;
use prometheus::{
    GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TEXT_FORMAT, TextEncoder,
};

/// Prometheus subsystem of every Volcano metric: names read `volcano_<name>`.
pub const SUBSYSTEM: &str = "volcano";

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
    fn new(registry: &Registry, kind: &str, what: &str) -> Self {
        QueueResourceGauges {
            milli_cpu: register(
                registry,
                gauge_vec(
                    &format!("queue_{kind}_milli_cpu"),
                    &format!("{what} CPU of one queue, in milli-cores"),
                    &["queue_name"],
                ),
            ),
            memory: register(
                registry,
                gauge_vec(
                    &format!("queue_{kind}_memory_bytes"),
                    &format!("{what} memory of one queue, in bytes"),
                    &["queue_name"],
                ),
            ),
            scalars: register(
                registry,
                gauge_vec(
                    &format!("queue_{kind}_scalar_resources"),
                    &format!("{what} scalar resources of one queue (milli-units; pods as a count)"),
                    &["queue_name", "resource"],
                ),
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

/// Registers `c` and hands it back. The definitions are static and their names distinct, so a
/// failure is a bug in this file (caught by the tests), not a runtime condition.
fn register<C: Collector + Clone + 'static>(registry: &Registry, c: C) -> C {
    registry
        .register(Box::new(c.clone()))
        .expect("static metric definitions are valid and distinct");
    c
}

fn opts(name: &str, help: &str) -> Opts {
    Opts::new(name, help).subsystem(SUBSYSTEM)
}

fn histogram(name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    Histogram::with_opts(
        HistogramOpts::new(name, help)
            .subsystem(SUBSYSTEM)
            .buckets(buckets),
    )
    .expect("static histogram definition")
}

fn histogram_vec(name: &str, help: &str, buckets: Vec<f64>, labels: &[&str]) -> HistogramVec {
    HistogramVec::new(
        HistogramOpts::new(name, help)
            .subsystem(SUBSYSTEM)
            .buckets(buckets),
        labels,
    )
    .expect("static histogram definition")
}

fn gauge_vec(name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    GaugeVec::new(opts(name, help), labels).expect("static gauge definition")
}

fn int_gauge(name: &str, help: &str) -> IntGauge {
    IntGauge::with_opts(opts(name, help)).expect("static gauge definition")
}

fn int_counter(name: &str, help: &str) -> IntCounter {
    IntCounter::with_opts(opts(name, help)).expect("static counter definition")
}

fn int_counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(opts(name, help), labels).expect("static counter definition")
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

    // ours
    pods_bound: IntCounter,
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
        let r = &registry;
        let session_buckets = || exponential_buckets_range(1.0, 5000.0, 20);

        let schedule_attempts = register(
            r,
            int_counter_vec(
                "schedule_attempts_total",
                "Pods attempted, by result: 'scheduled' (bound), 'unschedulable' (left pending by \
                 a session), 'error' (binding failed or the session failed)",
                &["result"],
            ),
        );
        for result in [ATTEMPT_SCHEDULED, ATTEMPT_UNSCHEDULABLE, ATTEMPT_ERROR] {
            schedule_attempts.with_label_values(&[result]);
        }
        let config_reloads = register(
            r,
            int_counter_vec(
                "config_reloads_total",
                "Scheduler configuration reloads, by result",
                &["result"],
            ),
        );
        for result in ["success", "failure"] {
            config_reloads.with_label_values(&[result]);
        }
        let invariant_violations = register(
            r,
            int_counter_vec(
                "invariant_violations_total",
                "Runtime invariant violations found in the scheduler's state, by kind (each \
                 counted once while it lasts); should stay 0",
                &["kind"],
            ),
        );
        for kind in engine::state::invariants::ViolationKind::ALL {
            invariant_violations.with_label_values(&[kind.as_str()]);
        }
        // Go's promhttp pre-creates these three codes.
        let scrape_requests = register(
            r,
            IntCounterVec::new(
                Opts::new(
                    "promhttp_metric_handler_requests_total",
                    "Total number of scrapes by HTTP status code",
                ),
                &["code"],
            )
            .expect("static counter definition"),
        );
        for code in ["200", "500", "503"] {
            scrape_requests.with_label_values(&[code]);
        }
        // The process_* series Go's client exports for every Volcano binary (memory, CPU, open
        // file descriptors, threads, start time).
        #[cfg(target_os = "linux")]
        {
            let process = prometheus::process_collector::ProcessCollector::for_self();
            registry
                .register(Box::new(process))
                .expect("the process collector registers once");
        }
        // Volcano defines these and no code path of its sets them: the families exist (for
        // dashboards), without series.
        for (name, help) in [
            ("namespace_share", "Share for one namespace"),
            ("namespace_weight", "Weight for one namespace"),
            (
                "namespace_weighted_share",
                "Weighted share for one namespace",
            ),
        ] {
            register(r, gauge_vec(name, help, &["namespace_name"]));
        }

        Arc::new(Metrics {
            e2e_scheduling_latency: register(
                r,
                histogram(
                    "e2e_scheduling_latency_milliseconds",
                    "Duration of one scheduling session in milliseconds: open, actions and close",
                    session_buckets(),
                ),
            ),
            open_session_duration: register(
                r,
                histogram(
                    "open_session_duration_milliseconds",
                    "Duration of opening a scheduling session in milliseconds: snapshot and \
                     plugin initialisation",
                    session_buckets(),
                ),
            ),
            action_latency: register(
                r,
                histogram_vec(
                    "action_scheduling_latency_milliseconds",
                    "Action scheduling latency in milliseconds",
                    exponential_buckets_range(1.0, 2000.0, 20),
                    &["action"],
                ),
            ),
            plugin_latency: register(
                r,
                histogram_vec(
                    "plugin_scheduling_latency_milliseconds",
                    "Plugin session open/close latency in milliseconds",
                    exponential_buckets_range(0.1, 100.0, 15),
                    &["plugin", "OnSession"],
                ),
            ),
            task_latency: register(
                r,
                histogram_vec(
                    "task_scheduling_latency_milliseconds",
                    "Time from pod creation to each scheduling stage, in milliseconds",
                    exponential_buckets_range(50.0, 60000.0, 30),
                    &["stage"],
                ),
            ),
            stage_duration: register(
                r,
                histogram_vec(
                    "scheduling_stage_duration_milliseconds",
                    "Duration of per-task scheduling steps (Predicate, Scoring, PreBind, Bind) \
                     in milliseconds",
                    exponential_buckets_range(0.1, 500.0, 20),
                    &["stage"],
                ),
            ),
            e2e_job_latency: register(
                r,
                histogram(
                    "e2e_job_scheduling_latency_milliseconds",
                    "Time from PodGroup creation to each task allocation of the job, in \
                     milliseconds",
                    exponential_buckets_range(100.0, 120000.0, 30),
                ),
            ),
            e2e_job_duration: register(
                r,
                gauge_vec(
                    "e2e_job_scheduling_duration",
                    "Per job: milliseconds from PodGroup creation to its latest task allocation",
                    &JOB_LABELS,
                ),
            ),
            e2e_job_start_time: register(
                r,
                gauge_vec(
                    "e2e_job_scheduling_start_time",
                    "Per job: PodGroup creation time (Unix seconds)",
                    &JOB_LABELS,
                ),
            ),
            e2e_job_last_time: register(
                r,
                gauge_vec(
                    "e2e_job_scheduling_last_time",
                    "Per job: time of its latest task allocation (Unix seconds)",
                    &JOB_LABELS,
                ),
            ),
            schedule_attempts,
            preemption_victims: register(
                r,
                int_gauge(
                    "pod_preemption_victims",
                    "Number of preemption victims selected on the latest node considered",
                ),
            ),
            preemption_attempts: register(
                r,
                int_counter(
                    "total_preemption_attempts",
                    "Total preemption attempts since start",
                ),
            ),
            eviction_transactions: register(
                r,
                int_counter_vec(
                    "eviction_transactions_total",
                    "Committed statements that evicted at least one pod, by action",
                    &["action"],
                ),
            ),
            unschedule_task_count: register(
                r,
                IntGaugeVec::new(
                    opts(
                        "unschedule_task_count",
                        "Per job: tasks missing to reach the gang minimum",
                    ),
                    &["job_id"],
                )
                .expect("static gauge definition"),
            ),
            unschedule_job_count: register(
                r,
                int_gauge(
                    "unschedule_job_count",
                    "Jobs that could not be scheduled in the latest session",
                ),
            ),

            queue_allocated: QueueResourceGauges::new(r, "allocated", "Allocated"),
            queue_request: QueueResourceGauges::new(r, "request", "Requested"),
            queue_inqueue: QueueResourceGauges::new(r, "inqueue", "Reserved (inqueue)"),
            queue_deserved: QueueResourceGauges::new(r, "deserved", "Deserved"),
            queue_capacity: QueueResourceGauges::new(r, "capacity", "Capability"),
            queue_real_capacity: QueueResourceGauges::new(r, "real_capacity", "Real capability"),
            queue_share: register(
                r,
                gauge_vec("queue_share", "Share of one queue", &["queue_name"]),
            ),
            queue_weight: register(
                r,
                gauge_vec("queue_weight", "Weight of one queue", &["queue_name"]),
            ),
            queue_overused: register(
                r,
                gauge_vec(
                    "queue_overused",
                    "1 if the queue is overused, else 0",
                    &["queue_name"],
                ),
            ),
            known_scalars: Mutex::new(HashMap::new()),

            job_share: register(
                r,
                gauge_vec(
                    "job_share",
                    "Dominant resource share of one job",
                    &["job_ns", "job_id"],
                ),
            ),
            job_retry_counts: register(
                r,
                int_counter_vec(
                    "job_retry_counts",
                    "Sessions that left the job below its gang minimum",
                    &["job_id"],
                ),
            ),

            pods_bound: register(
                r,
                int_counter("pods_bound_total", "Pods bound to a node by this scheduler"),
            ),
            bind_errors: register(
                r,
                int_counter("bind_errors_total", "Binding calls that failed"),
            ),
            pods_evicted: register(
                r,
                int_counter_vec(
                    "pods_evicted_total",
                    "Pods evicted by this scheduler, by action",
                    &["action"],
                ),
            ),
            config_reloads,
            invariant_violations,
            writes_sent: register(
                r,
                int_counter_vec(
                    "api_writes_total",
                    "Write requests sent to the API server, by write (bind, pod status, pod \
                     delete, podgroup status, queue status, queue create, event); retries count",
                    &["write"],
                ),
            ),
            writes_fenced: register(
                r,
                int_counter_vec(
                    "api_writes_fenced_total",
                    "Writes dropped unsent because this replica no longer held a fresh lease, by \
                     write",
                    &["write"],
                ),
            ),
            node_metrics_runs: register(
                r,
                int_counter_vec(
                    "node_metrics_collections_total",
                    "Collections of node load from the metrics source of the `metrics:` section, \
                     by result (ok, error: unknown type, unreachable or refused source)",
                    &["result"],
                ),
            ),
            node_metrics_nodes: register(
                r,
                int_gauge(
                    "node_metrics_nodes",
                    "Nodes whose load the last successful collection reported",
                ),
            ),
            skipped_plugins: register(
                r,
                gauge_vec(
                    "config_skipped_plugins",
                    "1 for each plugin the configuration in force names but this build does not \
                     provide (skipped; the rest of the configuration runs)",
                    &["plugin"],
                ),
            ),
            leader: register(
                r,
                int_gauge(
                    "leader",
                    "1 while this replica holds the leader lease (or runs without election)",
                ),
            ),
            scrape_requests,
            scrape_in_flight: register(
                r,
                IntGauge::with_opts(Opts::new(
                    "promhttp_metric_handler_requests_in_flight",
                    "Current number of scrapes being served",
                ))
                .expect("static gauge definition"),
            ),
            registry,
        })
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
        for (queue, m) in &d.queue_metrics {
            self.record_queue(queue, m);
        }
        for m in d.job_metrics.values() {
            self.record_job(m);
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
        if let Some(missing) = m.unschedule_task_count {
            self.unschedule_task_count
                .with_label_values(&[m.name.as_str()])
                .set(i64::from(missing));
        }
        if m.retried {
            self.job_retry_counts
                .with_label_values(&[m.name.as_str()])
                .inc();
        }
        if let Some(share) = m.share {
            self.job_share
                .with_label_values(&[m.namespace.as_str(), m.name.as_str()])
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
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Boundaries of §10.1, as printed there (rounded to 4 significant digits).
    const BUCKET_TABLE: &[(f64, f64, usize, &[f64])] = &[
        (
            1.0,
            5000.0,
            20,
            &[
                1.0, 1.566, 2.451, 3.837, 6.008, 9.406, 14.73, 23.06, 36.1, 56.51, 88.48, 138.5,
                216.9, 339.5, 531.6, 832.2, 1303.0, 2040.0, 3194.0, 5000.0,
            ],
        ),
        (
            1.0,
            2000.0,
            20,
            &[
                1.0, 1.492, 2.226, 3.321, 4.954, 7.391, 11.03, 16.45, 24.54, 36.61, 54.62, 81.49,
                121.6, 181.4, 270.6, 403.7, 602.3, 898.6, 1341.0, 2000.0,
            ],
        ),
        (
            0.1,
            100.0,
            15,
            &[
                0.1, 0.1638, 0.2683, 0.4394, 0.7197, 1.179, 1.931, 3.162, 5.179, 8.483, 13.89,
                22.76, 37.28, 61.05, 100.0,
            ],
        ),
        (
            0.1,
            500.0,
            20,
            &[
                0.1, 0.1566, 0.2451, 0.3837, 0.6008, 0.9406, 1.473, 2.306, 3.61, 5.651, 8.848,
                13.85, 21.69, 33.95, 53.16, 83.22, 130.3, 204.0, 319.4, 500.0,
            ],
        ),
        (
            50.0,
            60000.0,
            30,
            &[
                50.0, 63.85, 81.53, 104.1, 132.9, 169.8, 216.8, 276.8, 353.5, 451.4, 576.4, 736.1,
                940.0, 1200.0, 1533.0, 1957.0, 2499.0, 3192.0, 4076.0, 5204.0, 6646.0, 8486.0,
                10840.0, 13840.0, 17670.0, 22570.0, 28810.0, 36800.0, 46990.0, 60000.0,
            ],
        ),
        (
            100.0,
            120000.0,
            30,
            &[
                100.0, 127.7, 163.1, 208.2, 265.9, 339.5, 433.6, 553.7, 707.0, 902.8, 1153.0,
                1472.0, 1880.0, 2401.0, 3065.0, 3915.0, 4999.0, 6383.0, 8151.0, 10410.0, 13290.0,
                16970.0, 21670.0, 27680.0, 35340.0, 45130.0, 57630.0, 73590.0, 93970.0, 120000.0,
            ],
        ),
    ];

    #[test]
    fn bucket_boundaries_match_the_spec_table() {
        for &(min, max, n, expected) in BUCKET_TABLE {
            let got = exponential_buckets_range(min, max, n);
            assert_eq!(got.len(), expected.len(), "({min}, {max}, {n})");
            for (i, (g, e)) in got.iter().zip(expected).enumerate() {
                let rel = (g - e).abs() / e;
                assert!(rel < 0.005, "({min}, {max}, {n}) b_{i}: got {g}, table {e}");
            }
            // The ends are exact up to rounding of the growth factor.
            assert!((got[0] - min).abs() < 1e-12);
            assert!((got[n - 1] - max).abs() / max < 1e-9);
        }
    }

    #[test]
    fn bucket_range_degenerate_counts() {
        assert!(exponential_buckets_range(1.0, 10.0, 0).is_empty());
        assert_eq!(exponential_buckets_range(1.0, 10.0, 1), vec![1.0]);
        assert_eq!(
            exponential_buckets_range(1.0, 100.0, 3),
            vec![1.0, 10.0, 100.0]
        );
    }

    /// One sample line of the exposition: metric name and labels.
    #[derive(Debug)]
    struct Sample {
        name: String,
        labels: BTreeMap<String, String>,
        value: f64,
    }

    /// Parses the sample lines of a text exposition (enough for the values used here: label
    /// values without escaped quotes).
    fn samples(text: &str) -> Vec<Sample> {
        text.lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|line| {
                let (series, value) = line.rsplit_once(' ').expect("sample has a value");
                let value = value.parse().expect("numeric value");
                let (name, labels) = match series.split_once('{') {
                    None => (series, BTreeMap::new()),
                    Some((name, rest)) => {
                        let body = rest.strip_suffix('}').expect("closing brace");
                        let labels = body
                            .split("\",")
                            .filter(|kv| !kv.is_empty())
                            .map(|kv| {
                                let (k, v) = kv.split_once("=\"").expect("label pair");
                                (k.to_owned(), v.trim_end_matches('"').to_owned())
                            })
                            .collect();
                        (name, labels)
                    }
                };
                Sample {
                    name: name.to_owned(),
                    labels,
                    value,
                }
            })
            .collect()
    }

    fn find<'a>(all: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Option<&'a Sample> {
        all.iter().find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }

    fn value(all: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
        find(all, name, labels)
            .unwrap_or_else(|| panic!("no sample {name} {labels:?}"))
            .value
    }

    fn gpu_queue_metrics() -> QueueMetrics {
        QueueMetrics {
            weight: 3,
            allocated: Resource::from_pairs(
                2000.0,
                4e9,
                &[("nvidia.com/gpu", 1000.0), ("pods", 2.0)],
            ),
            request: Resource::from_pairs(3000.0, 6e9, &[("nvidia.com/gpu", 2000.0)]),
            deserved: Some(Resource::from_pairs(2500.0, 5e9, &[])),
            capability: Some(Resource::from_pairs(8000.0, 16e9, &[])),
            real_capability: Some(Resource::from_pairs(6000.0, 12e9, &[])),
            inqueue: Some(Resource::from_pairs(1000.0, 1e9, &[])),
            share: Some(0.8),
            overused: Some(true),
        }
    }

    fn sample_decisions() -> Decisions {
        let mut d = Decisions {
            unschedulable_tasks: 4,
            unschedulable_jobs: Some(2),
            ..Decisions::default()
        };
        d.job_metrics.insert(
            "ns/pg".to_owned(),
            JobMetrics {
                namespace: "ns".to_owned(),
                name: "pg".to_owned(),
                queue: "q1".to_owned(),
                unschedule_task_count: Some(3),
                retried: true,
                share: Some(0.25),
                ..JobMetrics::default()
            },
        );
        d.job_metrics.insert(
            "ns/ready".to_owned(),
            JobMetrics {
                namespace: "ns".to_owned(),
                name: "ready".to_owned(),
                queue: "q1".to_owned(),
                unschedule_task_count: Some(0),
                retried: false,
                share: None,
                ..JobMetrics::default()
            },
        );
        d.queue_metrics.insert("q1".to_owned(), gpu_queue_metrics());
        d.queue_metrics.insert(
            "q2".to_owned(),
            QueueMetrics {
                weight: 1,
                ..QueueMetrics::default()
            },
        );
        d
    }

    /// Every exported family: name, type, label names of its samples (without `le`).
    const FAMILIES: &[(&str, &str, &[&str])] = &[
        (
            "volcano_e2e_scheduling_latency_milliseconds",
            "histogram",
            &[],
        ),
        (
            "volcano_open_session_duration_milliseconds",
            "histogram",
            &[],
        ),
        (
            "volcano_action_scheduling_latency_milliseconds",
            "histogram",
            &["action"],
        ),
        (
            "volcano_plugin_scheduling_latency_milliseconds",
            "histogram",
            &["plugin", "OnSession"],
        ),
        (
            "volcano_task_scheduling_latency_milliseconds",
            "histogram",
            &["stage"],
        ),
        (
            "volcano_scheduling_stage_duration_milliseconds",
            "histogram",
            &["stage"],
        ),
        (
            "volcano_e2e_job_scheduling_latency_milliseconds",
            "histogram",
            &[],
        ),
        (
            "volcano_e2e_job_scheduling_duration",
            "gauge",
            &["job_name", "queue", "job_namespace"],
        ),
        (
            "volcano_e2e_job_scheduling_start_time",
            "gauge",
            &["job_name", "queue", "job_namespace"],
        ),
        (
            "volcano_e2e_job_scheduling_last_time",
            "gauge",
            &["job_name", "queue", "job_namespace"],
        ),
        ("volcano_schedule_attempts_total", "counter", &["result"]),
        ("volcano_pod_preemption_victims", "gauge", &[]),
        ("volcano_total_preemption_attempts", "counter", &[]),
        (
            "volcano_eviction_transactions_total",
            "counter",
            &["action"],
        ),
        ("volcano_unschedule_task_count", "gauge", &["job_id"]),
        ("volcano_unschedule_job_count", "gauge", &[]),
        (
            "volcano_queue_allocated_milli_cpu",
            "gauge",
            &["queue_name"],
        ),
        (
            "volcano_queue_allocated_memory_bytes",
            "gauge",
            &["queue_name"],
        ),
        (
            "volcano_queue_allocated_scalar_resources",
            "gauge",
            &["queue_name", "resource"],
        ),
        ("volcano_queue_request_milli_cpu", "gauge", &["queue_name"]),
        (
            "volcano_queue_request_memory_bytes",
            "gauge",
            &["queue_name"],
        ),
        (
            "volcano_queue_request_scalar_resources",
            "gauge",
            &["queue_name", "resource"],
        ),
        ("volcano_queue_inqueue_milli_cpu", "gauge", &["queue_name"]),
        (
            "volcano_queue_inqueue_memory_bytes",
            "gauge",
            &["queue_name"],
        ),
        (
            "volcano_queue_inqueue_scalar_resources",
            "gauge",
            &["queue_name", "resource"],
        ),
        ("volcano_queue_deserved_milli_cpu", "gauge", &["queue_name"]),
        (
            "volcano_queue_deserved_memory_bytes",
            "gauge",
            &["queue_name"],
        ),
        (
            "volcano_queue_deserved_scalar_resources",
            "gauge",
            &["queue_name", "resource"],
        ),
        ("volcano_queue_capacity_milli_cpu", "gauge", &["queue_name"]),
        (
            "volcano_queue_capacity_memory_bytes",
            "gauge",
            &["queue_name"],
        ),
        (
            "volcano_queue_capacity_scalar_resources",
            "gauge",
            &["queue_name", "resource"],
        ),
        (
            "volcano_queue_real_capacity_milli_cpu",
            "gauge",
            &["queue_name"],
        ),
        (
            "volcano_queue_real_capacity_memory_bytes",
            "gauge",
            &["queue_name"],
        ),
        (
            "volcano_queue_real_capacity_scalar_resources",
            "gauge",
            &["queue_name", "resource"],
        ),
        ("volcano_queue_share", "gauge", &["queue_name"]),
        ("volcano_queue_weight", "gauge", &["queue_name"]),
        ("volcano_queue_overused", "gauge", &["queue_name"]),
        ("volcano_job_share", "gauge", &["job_ns", "job_id"]),
        ("volcano_job_retry_counts", "counter", &["job_id"]),
        ("volcano_pods_bound_total", "counter", &[]),
        ("volcano_bind_errors_total", "counter", &[]),
        ("volcano_pods_evicted_total", "counter", &["action"]),
        ("volcano_config_reloads_total", "counter", &["result"]),
        ("volcano_config_skipped_plugins", "gauge", &["plugin"]),
        ("volcano_invariant_violations_total", "counter", &["kind"]),
        ("volcano_api_writes_total", "counter", &["write"]),
        ("volcano_api_writes_fenced_total", "counter", &["write"]),
        (
            "volcano_node_metrics_collections_total",
            "counter",
            &["result"],
        ),
        ("volcano_node_metrics_nodes", "gauge", &[]),
        ("volcano_leader", "gauge", &[]),
        ("process_cpu_seconds_total", "counter", &[]),
        ("process_open_fds", "gauge", &[]),
        ("process_max_fds", "gauge", &[]),
        ("process_virtual_memory_bytes", "gauge", &[]),
        ("process_resident_memory_bytes", "gauge", &[]),
        ("process_start_time_seconds", "gauge", &[]),
        ("process_threads", "gauge", &[]),
        (
            "promhttp_metric_handler_requests_total",
            "counter",
            &["code"],
        ),
        ("promhttp_metric_handler_requests_in_flight", "gauge", &[]),
    ];

    /// Exercises every recording method once.
    fn record_everything(m: &Metrics) {
        let ms = Duration::from_millis;
        m.observe_session(ms(3), &[("allocate".to_owned(), ms(7))], ms(12));
        m.observe_plugin("gang", ON_SESSION_OPEN, Duration::from_micros(300));
        m.record_decisions(&sample_decisions());
        m.observe_task_stage(TaskStage::Watched, ms(60));
        m.observe_scheduling_stage(SchedulingStage::Predicate, ms(1));
        m.pod_bound(ms(4), Some(ms(900)));
        m.bind_failed();
        m.set_skipped_plugins(&["usage".to_string()]);
        m.invariant_violation("double_bind");
        m.write_sent("bind");
        m.write_fenced("event");
        m.node_metrics_collected(Ok(3));
        m.node_metrics_collected(Err(()));
        m.session_failed();
        m.evictions("preempt", 2);
        m.preemption_attempt();
        m.set_preemption_victims(2);
        let job = JobLabels {
            namespace: "ns",
            name: "pg",
            queue: "q1",
        };
        let created = Timestamp::from_second(1_700_000_000).expect("valid");
        let now = Timestamp::from_second(1_700_000_090).expect("valid");
        m.set_job_start_time(job, created);
        m.job_task_allocated(job, ms(90_000), now);
        m.config_reload(true);
        m.set_leader(true);
    }

    #[test]
    fn every_family_is_exported_with_its_type_and_labels() {
        let m = Metrics::new();
        record_everything(&m);
        let text = m.encode_text();
        let all = samples(&text);
        for &(name, kind, labels) in FAMILIES {
            assert!(
                text.contains(&format!("# TYPE {name} {kind}\n")),
                "missing `# TYPE {name} {kind}`"
            );
            let series: Vec<&Sample> = all
                .iter()
                .filter(|s| {
                    s.name == name
                        || (kind == "histogram"
                            && [
                                format!("{name}_bucket"),
                                format!("{name}_sum"),
                                format!("{name}_count"),
                            ]
                            .contains(&s.name))
                })
                .collect();
            assert!(!series.is_empty(), "no sample of {name}");
            for s in series {
                let mut got: Vec<&str> = s
                    .labels
                    .keys()
                    .map(String::as_str)
                    .filter(|k| *k != "le")
                    .collect();
                got.sort_unstable();
                let mut want = labels.to_vec();
                want.sort_unstable();
                assert_eq!(got, want, "labels of {}", s.name);
            }
        }
        // No family we do not know of.
        let types = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
        assert_eq!(types, FAMILIES.len());
    }

    #[test]
    fn docs_list_every_family() {
        let docs = include_str!("../../../docs/metrics.md");
        for &(name, _, _) in FAMILIES {
            assert!(
                docs.contains(&format!("`{name}")),
                "docs/metrics.md lacks {name}"
            );
        }
    }

    #[test]
    fn histograms_use_volcanos_buckets() {
        let m = Metrics::new();
        m.observe_session(Duration::from_millis(2), &[], Duration::from_millis(10));
        let all = samples(&m.encode_text());
        let buckets: Vec<(f64, f64)> = all
            .iter()
            .filter(|s| s.name == "volcano_e2e_scheduling_latency_milliseconds_bucket")
            .map(|s| (s.labels["le"].parse().expect("numeric le"), s.value))
            .collect();
        // 20 finite boundaries, then +Inf.
        assert_eq!(buckets.len(), 21);
        let expected = exponential_buckets_range(1.0, 5000.0, 20);
        for (i, (le, _)) in buckets.iter().take(20).enumerate() {
            assert_eq!(*le, expected[i]);
        }
        assert_eq!(buckets[20].0, f64::INFINITY);
        // Cumulative counts: 10 ms falls into (9.406, 14.73].
        for &(le, n) in &buckets {
            assert_eq!(n, if le < 10.0 { 0.0 } else { 1.0 }, "le={le}");
        }
        let open_count = value(
            &all,
            "volcano_open_session_duration_milliseconds_count",
            &[],
        );
        assert_eq!(open_count, 1.0);
        let open_sum = value(&all, "volcano_open_session_duration_milliseconds_sum", &[]);
        assert!((open_sum - 2.0).abs() < 1e-9);
        let e2e_sum = value(&all, "volcano_e2e_scheduling_latency_milliseconds_sum", &[]);
        assert!((e2e_sum - 10.0).abs() < 1e-9);
    }

    #[test]
    fn queue_gauges_carry_the_decisions_values() {
        let m = Metrics::new();
        m.record_decisions(&sample_decisions());
        let all = samples(&m.encode_text());
        let q1 = [("queue_name", "q1")];
        assert_eq!(
            value(&all, "volcano_queue_allocated_milli_cpu", &q1),
            2000.0
        );
        assert_eq!(
            value(&all, "volcano_queue_allocated_memory_bytes", &q1),
            4e9
        );
        let gpu = [("queue_name", "q1"), ("resource", "nvidia.com/gpu")];
        let pods = [("queue_name", "q1"), ("resource", "pods")];
        assert_eq!(
            value(&all, "volcano_queue_allocated_scalar_resources", &gpu),
            1000.0
        );
        assert_eq!(
            value(&all, "volcano_queue_allocated_scalar_resources", &pods),
            2.0
        );
        assert_eq!(
            value(&all, "volcano_queue_request_scalar_resources", &gpu),
            2000.0
        );
        // Seen in this update for the queue, so reported as 0 where absent.
        assert_eq!(
            value(&all, "volcano_queue_request_scalar_resources", &pods),
            0.0
        );
        assert_eq!(
            value(&all, "volcano_queue_deserved_scalar_resources", &gpu),
            0.0
        );
        assert_eq!(value(&all, "volcano_queue_deserved_milli_cpu", &q1), 2500.0);
        assert_eq!(
            value(&all, "volcano_queue_capacity_memory_bytes", &q1),
            16e9
        );
        assert_eq!(
            value(&all, "volcano_queue_real_capacity_milli_cpu", &q1),
            6000.0
        );
        assert_eq!(value(&all, "volcano_queue_inqueue_milli_cpu", &q1), 1000.0);
        assert_eq!(value(&all, "volcano_queue_share", &q1), 0.8);
        assert_eq!(value(&all, "volcano_queue_weight", &q1), 3.0);
        assert_eq!(value(&all, "volcano_queue_overused", &q1), 1.0);
        assert_eq!(value(&all, "volcano_unschedule_job_count", &[]), 2.0);
        let unsched = [("result", "unschedulable")];
        assert_eq!(
            value(&all, "volcano_schedule_attempts_total", &unsched),
            4.0
        );

        // Only what a plugin set is reported: q2 has no deserved, share or overused series.
        let q2 = [("queue_name", "q2")];
        assert_eq!(value(&all, "volcano_queue_weight", &q2), 1.0);
        assert_eq!(value(&all, "volcano_queue_allocated_milli_cpu", &q2), 0.0);
        for absent in [
            "volcano_queue_deserved_milli_cpu",
            "volcano_queue_capacity_milli_cpu",
            "volcano_queue_real_capacity_milli_cpu",
            "volcano_queue_inqueue_milli_cpu",
            "volcano_queue_share",
            "volcano_queue_overused",
        ] {
            assert!(find(&all, absent, &q2).is_none(), "{absent} for q2");
        }
        assert!(find(&all, "volcano_queue_allocated_scalar_resources", &q2).is_none());
    }

    #[test]
    fn scalar_gauge_reports_zero_once_seen() {
        let m = Metrics::new();
        m.record_decisions(&sample_decisions());
        // Next session: the gpu job finished, the queue reports cpu only.
        let mut d = Decisions::default();
        d.queue_metrics.insert(
            "q1".to_owned(),
            QueueMetrics {
                weight: 3,
                allocated: Resource::from_pairs(500.0, 0.0, &[]),
                ..QueueMetrics::default()
            },
        );
        m.record_decisions(&d);
        let all = samples(&m.encode_text());
        let gpu = [("queue_name", "q1"), ("resource", "nvidia.com/gpu")];
        assert_eq!(
            value(&all, "volcano_queue_allocated_scalar_resources", &gpu),
            0.0
        );
        assert_eq!(
            value(&all, "volcano_queue_request_scalar_resources", &gpu),
            0.0
        );
        assert_eq!(
            value(
                &all,
                "volcano_queue_allocated_milli_cpu",
                &[("queue_name", "q1")]
            ),
            500.0
        );
        // Vectors not updated this time keep their last value (Volcano updates them the same way).
        assert_eq!(
            value(&all, "volcano_queue_share", &[("queue_name", "q1")]),
            0.8
        );
    }

    #[test]
    fn removing_a_queue_drops_all_its_series() {
        let m = Metrics::new();
        m.record_decisions(&sample_decisions());
        m.remove_queue("q1");
        let text = m.encode_text();
        assert!(!text.contains("queue_name=\"q1\""), "{text}");
        // The other queue is untouched.
        assert!(text.contains("volcano_queue_weight{queue_name=\"q2\"} 1"));
        // A queue that comes back starts afresh: no zeroed scalars from its previous life.
        let mut d = Decisions::default();
        d.queue_metrics
            .insert("q1".to_owned(), QueueMetrics::default());
        m.record_decisions(&d);
        let all = samples(&m.encode_text());
        assert!(
            find(
                &all,
                "volcano_queue_allocated_scalar_resources",
                &[("queue_name", "q1")]
            )
            .is_none()
        );
        // Removing an unknown queue is harmless.
        m.remove_queue("never-seen");
    }

    #[test]
    fn bind_eviction_and_attempt_counters() {
        let m = Metrics::new();
        let all = samples(&m.encode_text());
        for result in ["scheduled", "unschedulable", "error"] {
            assert_eq!(
                value(
                    &all,
                    "volcano_schedule_attempts_total",
                    &[("result", result)]
                ),
                0.0
            );
        }
        assert_eq!(value(&all, "volcano_leader", &[]), 0.0);

        m.pod_bound(Duration::from_millis(5), None);
        m.pod_bound(Duration::from_millis(5), Some(Duration::from_secs(2)));
        m.bind_failed();
        m.evictions("reclaim", 3);
        m.evictions("reclaim", 0);
        m.evictions("preempt", 1);
        m.set_leader(true);
        let all = samples(&m.encode_text());
        assert_eq!(value(&all, "volcano_pods_bound_total", &[]), 2.0);
        assert_eq!(value(&all, "volcano_bind_errors_total", &[]), 1.0);
        assert_eq!(
            value(
                &all,
                "volcano_schedule_attempts_total",
                &[("result", "scheduled")]
            ),
            2.0
        );
        assert_eq!(
            value(
                &all,
                "volcano_schedule_attempts_total",
                &[("result", "error")]
            ),
            1.0
        );
        let bind = [("stage", "Bind")];
        assert_eq!(
            value(
                &all,
                "volcano_scheduling_stage_duration_milliseconds_count",
                &bind
            ),
            2.0
        );
        let bound = [("stage", "Bound")];
        assert_eq!(
            value(
                &all,
                "volcano_task_scheduling_latency_milliseconds_count",
                &bound
            ),
            1.0
        );
        let reclaim = [("action", "reclaim")];
        assert_eq!(
            value(&all, "volcano_eviction_transactions_total", &reclaim),
            1.0
        );
        assert_eq!(value(&all, "volcano_pods_evicted_total", &reclaim), 3.0);
        let preempt = [("action", "preempt")];
        assert_eq!(
            value(&all, "volcano_eviction_transactions_total", &preempt),
            1.0
        );
        assert_eq!(value(&all, "volcano_leader", &[]), 1.0);
        m.set_leader(false);
        assert_eq!(
            value(&samples(&m.encode_text()), "volcano_leader", &[]),
            0.0
        );
    }

    #[test]
    fn job_series_and_their_removal() {
        let m = Metrics::new();
        record_everything(&m);
        let all = samples(&m.encode_text());
        let job = [("job_name", "pg"), ("queue", "q1"), ("job_namespace", "ns")];
        assert_eq!(
            value(&all, "volcano_e2e_job_scheduling_start_time", &job),
            1.7e9
        );
        assert_eq!(
            value(&all, "volcano_e2e_job_scheduling_last_time", &job),
            1_700_000_090.0
        );
        assert_eq!(
            value(&all, "volcano_e2e_job_scheduling_duration", &job),
            90_000.0
        );
        assert_eq!(
            value(&all, "volcano_unschedule_task_count", &[("job_id", "pg")]),
            3.0
        );
        assert_eq!(
            value(&all, "volcano_job_retry_counts", &[("job_id", "pg")]),
            1.0
        );
        assert_eq!(
            value(
                &all,
                "volcano_job_share",
                &[("job_ns", "ns"), ("job_id", "pg")]
            ),
            0.25
        );

        m.remove_job(JobLabels {
            namespace: "ns",
            name: "pg",
            queue: "q1",
        });
        let text = m.encode_text();
        assert!(!text.contains("\"pg\""), "{text}");
        // The histogram keeps its observation: it has no per-job series.
        let all = samples(&text);
        assert_eq!(
            value(
                &all,
                "volcano_e2e_job_scheduling_latency_milliseconds_count",
                &[]
            ),
            1.0
        );
    }

    #[test]
    fn scrape_counts_itself_like_promhttp() {
        let m = Metrics::new();
        let first = samples(&m.scrape().expect("encodes"));
        assert_eq!(
            value(&first, "promhttp_metric_handler_requests_in_flight", &[]),
            1.0
        );
        assert_eq!(
            value(
                &first,
                "promhttp_metric_handler_requests_total",
                &[("code", "200")]
            ),
            0.0
        );
        let second = samples(&m.scrape().expect("encodes"));
        assert_eq!(
            value(
                &second,
                "promhttp_metric_handler_requests_total",
                &[("code", "200")]
            ),
            1.0
        );
        assert_eq!(m.content_type(), "text/plain; version=0.0.4");
    }

    #[test]
    fn job_figures_follow_the_sessions() {
        let m = Metrics::new();
        m.record_decisions(&sample_decisions());
        m.record_decisions(&sample_decisions());
        let all = samples(&m.encode_text());
        // One retry per session the job stayed unready; none for the ready job.
        assert_eq!(
            value(&all, "volcano_job_retry_counts", &[("job_id", "pg")]),
            2.0
        );
        assert!(find(&all, "volcano_job_retry_counts", &[("job_id", "ready")]).is_none());
        assert_eq!(
            value(
                &all,
                "volcano_unschedule_task_count",
                &[("job_id", "ready")]
            ),
            0.0
        );
        assert!(find(&all, "volcano_job_share", &[("job_id", "ready")]).is_none());
        assert_eq!(value(&all, "volcano_unschedule_job_count", &[]), 2.0);
        assert_eq!(
            value(
                &all,
                "volcano_schedule_attempts_total",
                &[("result", "unschedulable")]
            ),
            8.0
        );

        // A session without gang leaves the job count as it was.
        let mut d = Decisions {
            unschedulable_jobs: None,
            ..Decisions::default()
        };
        m.record_decisions(&d);
        let all = samples(&m.encode_text());
        assert_eq!(value(&all, "volcano_unschedule_job_count", &[]), 2.0);
        d.unschedulable_jobs = Some(0);
        m.record_decisions(&d);
        let all = samples(&m.encode_text());
        assert_eq!(value(&all, "volcano_unschedule_job_count", &[]), 0.0);
    }

    #[test]
    fn config_reload_results() {
        let m = Metrics::new();
        m.config_reload(true);
        m.config_reload(false);
        m.config_reload(false);
        let all = samples(&m.encode_text());
        assert_eq!(
            value(
                &all,
                "volcano_config_reloads_total",
                &[("result", "success")]
            ),
            1.0
        );
        assert_eq!(
            value(
                &all,
                "volcano_config_reloads_total",
                &[("result", "failure")]
            ),
            2.0
        );
    }
}
