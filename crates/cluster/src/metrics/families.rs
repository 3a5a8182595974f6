//! Every metric family the scheduler exports, as a table: name (under the `volcano_`
//! subsystem), help text, kind and labels. [`Registrar`] builds and registers a family by
//! name, checking that the table gives it the kind the caller expects.

use prometheus::core::Collector;
use prometheus::{
    GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry,
};

use super::{JOB_LABELS, SUBSYSTEM};

/// Exponential buckets from `start` to `end` in `count` steps.
#[derive(Copy, Clone, Debug)]
pub(super) struct Buckets(pub f64, pub f64, pub usize);

#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) enum Kind {
    Histogram,
    HistogramVec,
    GaugeVec,
    IntGauge,
    IntGaugeVec,
    IntCounter,
    IntCounterVec,
}

pub(super) struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub labels: &'static [&'static str],
    pub buckets: Option<Buckets>,
}

const fn family(
    name: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    help: &'static str,
) -> Family {
    Family {
        name,
        help,
        kind,
        labels,
        buckets: None,
    }
}

const fn timing(
    name: &'static str,
    buckets: Buckets,
    labels: &'static [&'static str],
    help: &'static str,
) -> Family {
    Family {
        name,
        help,
        kind: if labels.is_empty() {
            Kind::Histogram
        } else {
            Kind::HistogramVec
        },
        labels,
        buckets: Some(buckets),
    }
}

const SESSION: Buckets = Buckets(1.0, 5000.0, 20);
const NONE: &[&str] = &[];
/// Labels of a vGPU card series, as Volcano names them.
const CARD: &[&str] = &["devID", "NodeName"];
const CARD_POD: &[&str] = &["devID", "NodeName", "podName"];

use Kind::*;

/// The families, in the order `/metrics` groups them in docs/metrics.md.
pub(super) const FAMILIES: &[Family] = &[
    // Scheduling latency and activity.
    timing(
        "e2e_scheduling_latency_milliseconds",
        SESSION,
        NONE,
        "Duration of one scheduling session in milliseconds: open, actions and close",
    ),
    timing(
        "open_session_duration_milliseconds",
        SESSION,
        NONE,
        "Duration of opening a scheduling session in milliseconds: snapshot and plugin \
         initialisation",
    ),
    timing(
        "action_scheduling_latency_milliseconds",
        Buckets(1.0, 2000.0, 20),
        &["action"],
        "Action scheduling latency in milliseconds",
    ),
    timing(
        "plugin_scheduling_latency_milliseconds",
        Buckets(0.1, 100.0, 15),
        &["plugin", "OnSession"],
        "Plugin session open/close latency in milliseconds",
    ),
    timing(
        "task_scheduling_latency_milliseconds",
        Buckets(50.0, 60000.0, 30),
        &["stage"],
        "Time from pod creation to each scheduling stage, in milliseconds",
    ),
    timing(
        "scheduling_stage_duration_milliseconds",
        Buckets(0.1, 500.0, 20),
        &["stage"],
        "Duration of per-task scheduling steps (Predicate, Scoring, PreBind, Bind) in \
         milliseconds",
    ),
    timing(
        "e2e_job_scheduling_latency_milliseconds",
        Buckets(100.0, 120000.0, 30),
        NONE,
        "Time from PodGroup creation to each task allocation of the job, in milliseconds",
    ),
    family(
        "e2e_job_scheduling_duration",
        GaugeVec,
        &JOB_LABELS,
        "Per job: milliseconds from PodGroup creation to its latest task allocation",
    ),
    family(
        "e2e_job_scheduling_start_time",
        GaugeVec,
        &JOB_LABELS,
        "Per job: PodGroup creation time (Unix seconds)",
    ),
    family(
        "e2e_job_scheduling_last_time",
        GaugeVec,
        &JOB_LABELS,
        "Per job: time of its latest task allocation (Unix seconds)",
    ),
    family(
        "schedule_attempts_total",
        IntCounterVec,
        &["result"],
        "Pods attempted, by result: 'scheduled' (bound), 'unschedulable' (left pending by a \
         session), 'error' (binding failed or the session failed)",
    ),
    family(
        "pod_preemption_victims",
        IntGauge,
        NONE,
        "Number of preemption victims selected on the latest node considered",
    ),
    family(
        "total_preemption_attempts",
        IntCounter,
        NONE,
        "Total preemption attempts since start",
    ),
    family(
        "eviction_transactions_total",
        IntCounterVec,
        &["action"],
        "Committed statements that evicted at least one pod, by action",
    ),
    family(
        "unschedule_task_count",
        IntGaugeVec,
        &["job_id"],
        "Per job: tasks missing to reach the gang minimum",
    ),
    family(
        "unschedule_job_count",
        IntGauge,
        NONE,
        "Jobs that could not be scheduled in the latest session",
    ),
    // Queues (the resource gauges are built per kind by `QueueResourceGauges`).
    family(
        "queue_share",
        GaugeVec,
        &["queue_name"],
        "Share of one queue",
    ),
    family(
        "queue_weight",
        GaugeVec,
        &["queue_name"],
        "Weight of one queue",
    ),
    family(
        "queue_overused",
        GaugeVec,
        &["queue_name"],
        "1 if the queue is overused, else 0",
    ),
    // Namespaces: Volcano defines these and no code path of its sets them (families without
    // series, for dashboards).
    family(
        "namespace_share",
        GaugeVec,
        &["namespace_name"],
        "Share for one namespace",
    ),
    family(
        "namespace_weight",
        GaugeVec,
        &["namespace_name"],
        "Weight for one namespace",
    ),
    family(
        "namespace_weighted_share",
        GaugeVec,
        &["namespace_name"],
        "Weighted share for one namespace",
    ),
    // Jobs.
    family(
        "job_share",
        GaugeVec,
        &["job_ns", "job_id"],
        "Dominant resource share of one job",
    ),
    family(
        "job_retry_counts",
        IntCounterVec,
        &["job_id"],
        "Sessions that left the job below its gang minimum",
    ),
    // vGPU cards (deviceshare with VGPUEnable).
    family(
        "vgpu_device_memory_limit",
        GaugeVec,
        CARD,
        "Memory of one vGPU card, MiB",
    ),
    family(
        "vgpu_device_shared_number",
        GaugeVec,
        CARD,
        "Containers sharing one vGPU card",
    ),
    family(
        "vgpu_device_allocated_memory",
        GaugeVec,
        CARD,
        "Memory of one vGPU card held by pods, MiB",
    ),
    family(
        "vgpu_device_allocated_cores",
        GaugeVec,
        CARD,
        "Compute of one vGPU card held by pods, percent",
    ),
    family(
        "vgpu_device_memory_allocation_for_a_certain_pod",
        GaugeVec,
        CARD_POD,
        "Memory of one vGPU card one pod holds, MiB",
    ),
    family(
        "vgpu_device_core_allocation_for_a_certain_pod",
        GaugeVec,
        CARD_POD,
        "Compute of one vGPU card one pod holds, percent",
    ),
    // volcano-rs's own.
    family(
        "pods_bound_total",
        IntCounter,
        NONE,
        "Pods bound to a node by this scheduler",
    ),
    family(
        "bind_errors_total",
        IntCounter,
        NONE,
        "Binding calls that failed",
    ),
    family(
        "sessions_total",
        IntCounterVec,
        &["outcome"],
        "Scheduling sessions, by outcome: decided (it bound, pipelined or evicted a pod) or \
         empty (it decided nothing)",
    ),
    family(
        "pods_evicted_total",
        IntCounterVec,
        &["action"],
        "Pods evicted by this scheduler, by action",
    ),
    family(
        "config_reloads_total",
        IntCounterVec,
        &["result"],
        "Scheduler configuration reloads, by result",
    ),
    family(
        "invariant_violations_total",
        IntCounterVec,
        &["kind"],
        "Runtime invariant violations found in the scheduler's state, by kind (each counted \
         once while it lasts); should stay 0",
    ),
    family(
        "api_writes_total",
        IntCounterVec,
        &["write"],
        "Write requests sent to the API server, by write (bind, pod status, pod delete, \
         podgroup status, queue status, queue create, event); retries count",
    ),
    family(
        "api_writes_fenced_total",
        IntCounterVec,
        &["write"],
        "Writes dropped unsent because this replica no longer held a fresh lease, by write",
    ),
    family(
        "node_metrics_collections_total",
        IntCounterVec,
        &["result"],
        "Collections of node load from the metrics source of the `metrics:` section, by result \
         (ok, error: unknown type, unreachable or refused source)",
    ),
    family(
        "node_metrics_nodes",
        IntGauge,
        NONE,
        "Nodes whose load the last successful collection reported",
    ),
    family(
        "config_skipped_plugins",
        GaugeVec,
        &["plugin"],
        "1 for each plugin the configuration in force names but this build does not provide \
         (skipped; the rest of the configuration runs)",
    ),
    family(
        "leader",
        IntGauge,
        NONE,
        "1 while this replica holds the leader lease (or runs without election)",
    ),
];

/// Families Go's promhttp handler exports without the `volcano_` prefix.
pub(super) const SCRAPE_REQUESTS: (&str, &str) = (
    "promhttp_metric_handler_requests_total",
    "Total number of scrapes by HTTP status code",
);
pub(super) const SCRAPE_IN_FLIGHT: (&str, &str) = (
    "promhttp_metric_handler_requests_in_flight",
    "Current number of scrapes being served",
);

/// Builds the families of [`FAMILIES`] by name and registers them.
pub(super) struct Registrar<'r> {
    pub registry: &'r Registry,
}

impl Registrar<'_> {
    fn row(&self, name: &str, kind: Kind) -> &'static Family {
        let row = FAMILIES
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("metric family {name} is not in the table"));
        assert_eq!(row.kind, kind, "metric family {name}");
        row
    }

    fn register<C: Collector + Clone + 'static>(&self, c: C) -> C {
        self.registry
            .register(Box::new(c.clone()))
            .expect("static metric definitions are valid and distinct");
        c
    }

    fn opts(row: &Family) -> Opts {
        Opts::new(row.name, row.help).subsystem(SUBSYSTEM)
    }

    fn histogram_opts(row: &Family) -> HistogramOpts {
        let Buckets(start, end, count) = row.buckets.unwrap_or(SESSION);
        HistogramOpts::new(row.name, row.help)
            .subsystem(SUBSYSTEM)
            .buckets(super::exponential_buckets_range(start, end, count))
    }

    pub fn histogram(&self, name: &str) -> Histogram {
        let row = self.row(name, Histogram);
        self.register(
            prometheus::Histogram::with_opts(Self::histogram_opts(row))
                .expect("static histogram definition"),
        )
    }

    pub fn histogram_vec(&self, name: &str) -> HistogramVec {
        let row = self.row(name, HistogramVec);
        self.register(
            prometheus::HistogramVec::new(Self::histogram_opts(row), row.labels)
                .expect("static histogram definition"),
        )
    }

    pub fn gauge_vec(&self, name: &str) -> GaugeVec {
        let row = self.row(name, GaugeVec);
        self.register(prometheus::GaugeVec::new(Self::opts(row), row.labels).expect("static gauge"))
    }

    pub fn int_gauge(&self, name: &str) -> IntGauge {
        let row = self.row(name, IntGauge);
        self.register(prometheus::IntGauge::with_opts(Self::opts(row)).expect("static gauge"))
    }

    pub fn int_gauge_vec(&self, name: &str) -> IntGaugeVec {
        let row = self.row(name, IntGaugeVec);
        self.register(
            prometheus::IntGaugeVec::new(Self::opts(row), row.labels).expect("static gauge"),
        )
    }

    pub fn int_counter(&self, name: &str) -> IntCounter {
        let row = self.row(name, IntCounter);
        self.register(prometheus::IntCounter::with_opts(Self::opts(row)).expect("static counter"))
    }

    pub fn int_counter_vec(&self, name: &str) -> IntCounterVec {
        let row = self.row(name, IntCounterVec);
        self.register(
            prometheus::IntCounterVec::new(Self::opts(row), row.labels).expect("static counter"),
        )
    }

    /// A family outside the `volcano_` subsystem (Go's promhttp ones).
    pub fn unprefixed_int_counter_vec(
        &self,
        (name, help): (&str, &str),
        labels: &[&str],
    ) -> IntCounterVec {
        self.register(
            prometheus::IntCounterVec::new(Opts::new(name, help), labels).expect("static counter"),
        )
    }

    pub fn unprefixed_int_gauge(&self, (name, help): (&str, &str)) -> IntGauge {
        self.register(prometheus::IntGauge::with_opts(Opts::new(name, help)).expect("static gauge"))
    }

    /// A gauge family whose name and help are built at run time (the queue resource gauges).
    pub fn dynamic_gauge_vec(&self, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
        self.register(
            prometheus::GaugeVec::new(Opts::new(name, help).subsystem(SUBSYSTEM), labels)
                .expect("static gauge"),
        )
    }
}
