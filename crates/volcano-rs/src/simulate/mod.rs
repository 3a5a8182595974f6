//! `volcano-rs simulate`: the scheduling engine on an in-memory cluster read from ordinary
//! Kubernetes YAML (DESIGN.md "What users get").
//!
//! [`SimInput`] holds the objects ([`load`]); [`run`] plays scheduling sessions on them, one
//! after the other, exactly as the daemon would drive the engine, and between sessions lets the
//! simulated cluster react as Kubernetes would ([`cluster`]): bound pods run, evicted pods go
//! away, statuses and conditions are written. It stops after a session that changed nothing,
//! or at the cycle limit. The [`Report`] ([`report`]) tells what happened.
//!
//! Every session sees the same clock (`now`): simulated sessions take no time, and a fixed
//! clock keeps the output a pure function of the input. With a cycle period the clock moves on
//! by that much before each later session (time windows, cool-downs), still deterministically;
//! the run then goes on to the cycle limit, since the passing of time alone can change what a
//! session decides. With `recreate_evicted` an evicted pod comes back Pending under a new name,
//! as its controller would recreate it, so that what the next sessions do with it shows.

mod cluster;
mod decode;
pub mod filter;
pub mod load;
pub mod report;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ::cluster::conf_watch::ConfSource;
use ::cluster::scheduler::{CycleOutcome, LeaderSignal, Scheduler, SchedulerParts, WriteSink};
use engine::conf::{KnownNames, SchedulerConf};
use engine::framework::{Decisions, Event, ObjectRef, SessionOptions};
use engine::state::StateOptions;
use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;

pub use load::SimInput;
pub use report::Report;

use cluster::{SimCluster, changes_anything};
use report::CycleReport;

/// Sessions run at most, unless told otherwise.
pub const DEFAULT_MAX_CYCLES: usize = 100;

/// Scheduler names whose pods are ours by default: ours, and Volcano's, so that a dump of a
/// Volcano cluster simulates as it is.
pub const DEFAULT_SCHEDULER_NAMES: [&str; 2] = ["volcano-rs", "volcano"];

/// A scheduler configuration file's name (for messages) and text.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfFile {
    pub name: String,
    pub text: String,
}

/// How to simulate.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// `None`: Volcano's embedded default configuration.
    pub scheduler_conf: Option<ConfFile>,
    /// Sessions run at most; the run stops earlier after a session that changed nothing.
    pub max_cycles: usize,
    /// The clock every session sees.
    pub now: Timestamp,
    /// Pods whose `spec.schedulerName` is one of these are scheduled.
    pub scheduler_names: Vec<String>,
    /// Refuse unknown plugin names instead of skipping them ([`KnownNames::strict`]).
    pub strict_config: bool,
    /// How far the clock moves before each session after the first (zero: it stands still).
    pub cycle_period: std::time::Duration,
    /// Recreate each evicted pod as a new Pending pod (a controller's stand-in).
    pub recreate_evicted: bool,
    /// Allocate's search memo (on by default; off to compare decisions without it).
    pub search_memo: bool,
    /// Builds take over the last session's unchanged rows (on by default; off to compare
    /// decisions without it).
    pub carry_rows: bool,
}

impl SimOptions {
    /// The defaults: embedded configuration, [`DEFAULT_MAX_CYCLES`],
    /// [`DEFAULT_SCHEDULER_NAMES`].
    pub fn new(now: Timestamp) -> SimOptions {
        SimOptions {
            scheduler_conf: None,
            max_cycles: DEFAULT_MAX_CYCLES,
            now,
            scheduler_names: DEFAULT_SCHEDULER_NAMES.map(String::from).to_vec(),
            strict_config: false,
            cycle_period: std::time::Duration::ZERO,
            recreate_evicted: false,
            search_memo: true,
            carry_rows: true,
        }
    }
}

/// Why a simulation could not run. Every variant is bad input: the command exits with 2.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// A file could not be read.
    Io { file: String, message: String },
    /// A file is not YAML/JSON, or holds a malformed object. `location` is the document (and
    /// list item) and, when known, the object: `document 2 (Pod ns/p1)`; `message` starts with
    /// the offending field.
    Input {
        file: String,
        location: String,
        message: String,
    },
    /// The scheduler configuration was refused; `message` is `<field path>: <problem>`.
    Config { file: String, message: String },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Io { file, message } | SimError::Config { file, message } => {
                write!(f, "{file}: {message}")
            }
            SimError::Input {
                file,
                location,
                message,
            } => write!(f, "{file}: {location}: {message}"),
        }
    }
}

impl std::error::Error for SimError {}

/// Parses a scheduler configuration against the actions and plugins this build provides.
/// Returns it with its warnings, each prefixed with the file name.
pub fn parse_conf(file: &ConfFile, strict: bool) -> Result<(SchedulerConf, Vec<String>), SimError> {
    let plugins = plugins::known_plugins();
    let known = KnownNames {
        actions: engine::actions::KNOWN_ACTIONS,
        plugins: &plugins,
        strict,
        check_arguments: Some(plugins::check_arguments),
    };
    let parsed = engine::conf::parse(&file.text, &known).map_err(|e| SimError::Config {
        file: file.name.clone(),
        message: e.to_string(),
    })?;
    let warnings = parsed
        .warnings
        .iter()
        .map(|w| format!("{}: {w}", file.name))
        .collect();
    Ok((parsed.conf, warnings))
}

/// Runs the simulation: sessions until one changes nothing, at most `opts.max_cycles`.
/// The device configuration the configuration's vGPU device reads, from the input's ConfigMap
/// of that namespace and name (as the daemon reads it from the API server); Volcano's defaults,
/// with a warning, when it is absent or unreadable. `None` when no vGPU device runs.
fn device_config(
    input: &SimInput,
    conf: &SchedulerConf,
    warnings: &mut Vec<String>,
) -> Option<apis::DeviceConfig> {
    let (namespace, name) = plugins::deviceshare::device_config_source(conf)?;
    let found = input.config_maps.iter().rev().find(|cm| {
        cm.metadata.name.as_deref() == Some(name.as_str())
            && cm.metadata.namespace.as_deref() == Some(namespace.as_str())
    });
    match ::cluster::device_config::from_config_map(Ok(found.cloned())) {
        Ok(config) => Some(config),
        Err(why) => {
            warnings.push(format!(
                "device configuration ConfigMap {namespace}/{name}: {why}; Volcano's defaults apply"
            ));
            Some(apis::DeviceConfig::defaults())
        }
    }
}

pub fn run(input: &SimInput, opts: &SimOptions) -> Result<Report, SimError> {
    let mut warnings = Vec::new();
    if input.nodes.is_empty() && input.pods.is_empty() {
        warnings.push(
            "the input holds no Node and no Pod: nothing to schedule (is it the right file, \
             e.g. a `kubectl get nodes,pods,podgroups,queues -A -o yaml` dump?)"
                .to_string(),
        );
    } else if input.nodes.is_empty() {
        warnings.push("the input holds no Node: no pod can be placed".to_string());
    }
    // An explicit file wins over the configuration a state dump carries.
    let dumped = input.scheduler_conf.as_ref().map(|(name, text)| ConfFile {
        name: name.clone(),
        text: text.clone(),
    });
    if opts.scheduler_conf.is_some()
        && let Some(d) = &dumped
    {
        warnings.push(format!(
            "{}: the input's scheduler configuration is not used (--scheduler-conf is given)",
            d.name
        ));
    }
    let conf = match opts.scheduler_conf.as_ref().or(dumped.as_ref()) {
        Some(file) => {
            let (conf, conf_warnings) = parse_conf(file, opts.strict_config)?;
            warnings.extend(conf_warnings);
            conf
        }
        None => SchedulerConf::embedded_default(),
    };
    let conf = Arc::new(conf);
    let registry = plugins::registry();

    let state_options = StateOptions {
        scheduler_names: opts.scheduler_names.clone(),
        ..StateOptions::default()
    };
    // The sessions' runtime: I/O and timers on, for the calls the `extender` plugin makes.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| SimError::Io {
            file: "<simulator>".into(),
            message: format!("cannot start the session runtime: {e}"),
        })?;
    let http = {
        let _entered = runtime.enter();
        ::cluster::http_caller::ReqwestCaller::new()
    };
    let http: Option<Arc<dyn engine::framework::HttpCaller>> = match http {
        Ok(caller) => Some(Arc::new(caller)),
        Err(e) => {
            warnings.push(format!("no HTTP client for the extender plugin: {e}"));
            None
        }
    };
    let session_options = SessionOptions {
        http,
        scheduler_name: opts
            .scheduler_names
            .first()
            .cloned()
            .unwrap_or_else(|| DEFAULT_SCHEDULER_NAMES[0].to_string()),
        search_memo: opts.search_memo,
        carry_rows: opts.carry_rows,
        ..SessionOptions::default()
    };
    let (mut cluster, admission_warnings) = SimCluster::new(input, state_options, opts.now);
    cluster.recreate_evicted = opts.recreate_evicted;
    warnings.extend(admission_warnings);
    if let Some(config) = device_config(input, &conf, &mut warnings) {
        cluster.shared().lock().set_device_config(config);
    }
    let clock = SimClock::new(opts.now, opts.cycle_period);

    let sink = Arc::new(SimSink {
        cluster: Mutex::new(cluster),
        written: Mutex::new(Written::default()),
    });
    let mut scheduler = Scheduler::new(SchedulerParts {
        shared: sink.lock_cluster().shared().clone(),
        sink: sink.clone(),
        conf: ConfSource::fixed((*conf).clone()),
        registry: Arc::new(registry),
        session_options,
        leader: Box::new(AlwaysLeader),
        metrics: ::cluster::metrics::Metrics::new(),
        clock: {
            let clock = clock.clone();
            Arc::new(move || clock.now())
        },
        identity: "sim".into(),
        default_queue: StateOptions::default().default_queue,
        self_ref: ObjectRef {
            kind: "Pod",
            namespace: None,
            name: "volcano-rs-simulate".into(),
            uid: String::new(),
        },
        period: std::time::Duration::ZERO,
    });
    let mut converged = false;
    runtime.block_on(async {
        for cycle in 0..opts.max_cycles {
            if cycle > 0 && clock.advance() {
                let now = clock.now();
                sink.lock_cluster().set_now(now);
            }
            let outcome = scheduler.run_cycle().await;
            if !matches!(outcome, CycleOutcome::Ran(_)) {
                // Nothing else can happen to an always-leading scheduler on a cluster without
                // watches but a panicking session: stop there.
                tracing::error!(?outcome, "simulated cycle did not run");
                break;
            }
            if !sink.lock_written().last_changed && opts.cycle_period.is_zero() {
                converged = true;
                break;
            }
        }
    });
    let written = std::mem::take(&mut *sink.lock_written());
    let cluster = sink.lock_cluster();
    let mut report = Report::build(
        written.cycles,
        &cluster,
        written.last_metrics.as_ref(),
        converged,
        warnings,
    );
    report.skipped_plugins = conf.skipped_plugins.clone();
    Ok(report)
}

/// A cycle period: a Go duration (`30s`, `10m`, `1h30m`), zero or more.
pub fn parse_cycle_period(text: &str) -> Result<std::time::Duration, String> {
    match engine::conf::parse_go_duration(text) {
        Some(nanos) if nanos >= 0 => Ok(std::time::Duration::from_nanos(nanos.unsigned_abs())),
        Some(_) => Err(format!(
            "{text:?} is negative; the clock only moves forward"
        )),
        None => Err(format!("{text:?} is not a duration such as 30s or 10m")),
    }
}

/// The simulated clock: `start`, moved on by `period` at each [`SimClock::advance`].
#[derive(Clone)]
struct SimClock {
    now: Arc<Mutex<Timestamp>>,
    period: Option<k8s_openapi::jiff::SignedDuration>,
}

impl SimClock {
    fn new(start: Timestamp, period: std::time::Duration) -> SimClock {
        let period = (!period.is_zero())
            .then(|| k8s_openapi::jiff::SignedDuration::try_from(period).ok())
            .flatten();
        SimClock {
            now: Arc::new(Mutex::new(start)),
            period,
        }
    }

    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves the clock on by one period; whether it moved (a period that would leave the
    /// representable range stops it).
    fn advance(&self) -> bool {
        let Some(period) = self.period else {
            return false;
        };
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        match now.checked_add(period) {
            Ok(next) => {
                *now = next;
                true
            }
            Err(_) => false,
        }
    }
}

/// The simulator's leadership: it always leads.
struct AlwaysLeader;

impl LeaderSignal for AlwaysLeader {
    fn leading(&self) -> bool {
        true
    }

    fn changed(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::pending())
    }
}

/// What the simulated API server was asked to write, cycle by cycle.
#[derive(Default)]
struct Written {
    cycles: Vec<CycleReport>,
    /// Whether the last session changed anything (the run stops after one that did not).
    last_changed: bool,
    last_metrics: Option<std::collections::BTreeMap<String, engine::framework::QueueMetrics>>,
}

/// The simulator's write sink: every write lands in the simulated cluster at once, before the
/// next session (so there is nothing to assume ahead of it), and is recorded for the report.
struct SimSink {
    cluster: Mutex<SimCluster>,
    written: Mutex<Written>,
}

impl SimSink {
    fn lock_cluster(&self) -> MutexGuard<'_, SimCluster> {
        self.cluster.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_written(&self) -> MutexGuard<'_, Written> {
        self.written.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl WriteSink for SimSink {
    fn assume(&self, _decisions: &Decisions) {}

    fn write(&self, decisions: Decisions) -> BoxFuture<'static, ()> {
        self.lock_cluster().apply(&decisions);
        let mut written = self.lock_written();
        let cycle = written.cycles.len() + 1;
        written
            .cycles
            .push(CycleReport::from_decisions(cycle, &decisions));
        written.last_changed = changes_anything(&decisions);
        written.last_metrics = Some(decisions.queue_metrics);
        Box::pin(async {})
    }

    fn publish(&self, _event: Event) -> BoxFuture<'static, ()> {
        // The report says what events would say (skipped plugins, pod conditions).
        Box::pin(async {})
    }

    fn ensure_queue(
        &self,
        name: &str,
        reclaimable: bool,
    ) -> BoxFuture<'static, Result<(), String>> {
        self.lock_cluster().ensure_queue(name, reclaimable);
        Box::pin(async { Ok(()) })
    }

    fn drain(&self, _within: std::time::Duration) -> BoxFuture<'static, bool> {
        Box::pin(async { true })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().expect("timestamp")
    }

    #[test]
    fn config_errors_name_the_file_and_field() {
        let mut opts = SimOptions::new(now());
        opts.scheduler_conf = Some(ConfFile {
            name: "sched.conf".into(),
            text: "actions: \"enqueue, allocate, nosuchaction\"\ntiers: []\n".into(),
        });
        let err = run(&SimInput::default(), &opts).expect_err("unknown action");
        let text = err.to_string();
        assert!(matches!(err, SimError::Config { .. }));
        assert!(text.starts_with("sched.conf: actions"), "{text}");
        assert!(text.contains("nosuchaction"), "{text}");
    }

    #[test]
    fn a_missing_device_configuration_is_a_warning_and_defaults_apply() {
        let mut opts = SimOptions::new(now());
        opts.scheduler_conf = Some(ConfFile {
            name: "sched.conf".into(),
            text: "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: deviceshare\n    \
                   arguments: {deviceshare.VGPUEnable: true, \
                   deviceshare.KnownGeometriesCMNamespace: gpu}\n"
                .into(),
        });
        let report = run(&SimInput::default(), &opts).expect("valid configuration");
        assert!(
            report.warnings.iter().any(|w| w
                == "device configuration ConfigMap gpu/volcano-vgpu-device-config: no such \
                    ConfigMap; Volcano's defaults apply"),
            "{:?}",
            report.warnings
        );
    }

    #[test]
    fn config_warnings_are_reported() {
        let mut opts = SimOptions::new(now());
        opts.scheduler_conf = Some(ConfFile {
            name: "sched.conf".into(),
            text: "actions: \"allocate\"\ntiers: []\nsurprise: 1\n".into(),
        });
        let report = run(&SimInput::default(), &opts).expect("valid configuration");
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.starts_with("sched.conf: ") && w.contains("surprise")),
            "{:?}",
            report.warnings
        );
    }

    /// A `/debug/state` dump leads with the daemon's configuration; the simulator uses it
    /// unless `--scheduler-conf` is given.
    #[test]
    fn a_dump_carries_its_configuration() {
        let cluster = "apiVersion: volcano-rs/v1\nkind: SchedulerConfiguration\n\
                       conf: |\n  actions: enqueue\n  tiers: []\n---\n\
                       apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n\
                       status: {allocatable: {cpu: '2', memory: 2Gi, pods: '10'}}\n---\n\
                       apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, uid: u}\n\
                       spec: {schedulerName: volcano-rs, containers: [{name: c}]}\n\
                       status: {phase: Pending}\n";
        let mut input = SimInput::default();
        input.add_str("dump.yaml", cluster).expect("loads");
        assert!(input.scheduler_conf.is_some());
        // Only `enqueue` runs: nothing is bound.
        let report = run(&input, &SimOptions::new(now())).expect("runs");
        assert!(
            report.cycles.iter().all(|c| c.binds.is_empty()),
            "{:?}",
            report.cycles
        );
        // An explicit configuration wins, with a warning.
        let mut opts = SimOptions::new(now());
        opts.scheduler_conf = Some(ConfFile {
            name: "sched.conf".into(),
            text: engine::conf::DEFAULT_SCHEDULER_CONF.into(),
        });
        let report = run(&input, &opts).expect("runs");
        assert_eq!(report.cycles[0].binds.len(), 1, "{:?}", report.cycles);
        assert!(
            report.warnings.iter().any(|w| w.contains("is not used")),
            "{:?}",
            report.warnings
        );
    }

    #[test]
    fn an_empty_cluster_converges_at_once() {
        let report = run(&SimInput::default(), &SimOptions::new(now())).expect("runs");
        // The default queue is created; its allocation is written in the first session
        // (the queue had no status), so the second one is the quiet one.
        assert!(report.converged);
        assert!(report.cycles.len() <= 2, "{:?}", report.cycles);
        assert!(report.pods.is_empty());
        assert_eq!(report.queues["default"].weight, 1);
        assert_eq!(report.queues["default"].state, "Open");
    }

    #[test]
    fn the_cycle_limit_is_respected() {
        let mut opts = SimOptions::new(now());
        opts.max_cycles = 1;
        let report = run(&SimInput::default(), &opts).expect("runs");
        assert_eq!(report.cycles.len(), 1);
        opts.max_cycles = 0;
        let report = run(&SimInput::default(), &opts).expect("runs");
        assert!(report.cycles.is_empty());
        assert!(!report.converged);
        assert!(report.queues["default"].allocated.0.is_empty());
    }

    /// A tiny cluster through the whole loop, with no plugins so that only the engine and the
    /// simulator decide: node n1 (4 cpu) already runs 1 cpu of another scheduler's pod; the
    /// gang ns/pg (two 1-cpu pods) fits, the 3-cpu standalone pod then does not.
    const TINY: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: ns, uid: u-web}
spec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
status: {phase: Running}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns, uid: u-pg, creationTimestamp: "2025-12-31T00:00:00Z"}
spec: {minMember: 2}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: w0
    namespace: ns
    uid: u-w0
    creationTimestamp: "2025-12-31T00:00:00Z"
    annotations: {scheduling.k8s.io/group-name: pg}
  spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: w1
    namespace: ns
    uid: u-w1
    creationTimestamp: "2025-12-31T00:00:00Z"
    annotations: {scheduling.k8s.io/group-name: pg}
  spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: big, namespace: ns, uid: u-big, creationTimestamp: "2025-12-31T00:00:01Z"}
  spec: {schedulerName: volcano-rs, containers: [{name: c, resources: {requests: {cpu: "3"}}}]}
"#;

    const GOLDEN: &str = concat!(
        r#"{"cycles":["#,
        r#"{"cycle":1,"binds":[{"pod":"ns/w0","node":"n1"},{"pod":"ns/w1","node":"n1"}],"pipelined":[],"evictions":[]},"#,
        // The bound pods are seen running: the PodGroup becomes Running.
        r#"{"cycle":2,"binds":[],"pipelined":[],"evictions":[]},"#,
        // Nothing left to change.
        r#"{"cycle":3,"binds":[],"pipelined":[],"evictions":[]}],"#,
        r#""pods":{"ns/big":{"node":null,"phase":"Pending","reason":"0/1 nodes are unavailable: 1 Insufficient cpu."},"#,
        r#""ns/w0":{"node":"n1","phase":"Running"},"ns/w1":{"node":"n1","phase":"Running"}},"#,
        r#""podGroups":{"ns/pg":{"phase":"Running","conditions":[]}},"#,
        r#""queues":{"default":{"state":"Open","weight":1,"allocated":{"cpu":2000,"memory":2147483648,"pods":2}}}}"#
    );

    #[test]
    fn golden_report_of_a_tiny_cluster() {
        let mut input = SimInput::default();
        input.add_str("tiny.yaml", TINY).expect("valid input");
        let mut opts = SimOptions::new(now());
        opts.scheduler_conf = Some(ConfFile {
            name: "none.conf".into(),
            text: "actions: \"enqueue, allocate\"\ntiers: []\n".into(),
        });
        let report = run(&input, &opts).expect("runs");
        let json = serde_json::to_string(&report).expect("json");
        assert_eq!(json, GOLDEN);
        assert!(report.converged);
    }
}
