//! `usage`: load-aware filtering and scoring from measured node load (spec/plugins-more.md §4).
//!
//! The load comes from outside the cluster objects: the daemon's metrics collector
//! (`cluster::node_metrics`, the `metrics:` section of the configuration) or the simulator's
//! `NodeUsage` documents put it on each node ([`engine::model::NodeUsage`]); this plugin only
//! reads it. A sample older than five minutes, or none, counts as unavailable: the node passes
//! the filter and scores 0.
//!
//! * Predicate (§4.4): measured CPU above `thresholds.cpu`, or memory above `thresholds.mem`
//!   (percent, strict `>`), is unschedulable and unresolvable.
//! * Node order (§4.5): `((1 − cpuC)·cw + (1 − memC)·mw) / (cw + mw) · 100 · usage.weight`, where
//!   each composite adds to the measured load the *shadow* estimate of the tasks the metrics
//!   cannot show yet (§4.6): those placed in this session, bound but not running, or running for
//!   less than the metrics interval.
//! * Event handlers: an allocation adds its estimate to the shadow cache, a deallocation
//!   removes exactly what was added.

mod estimator;
#[cfg(test)]
mod tests;

use engine::conf::{ArgValue, ArgWarning, Arguments};
use engine::framework::{ExtensionPoints, Plugin, SessionState};
use engine::model::task::pod_resource_limit;
use engine::model::{FitError, FitStatus, NodeId, NodeInfo, StatusCode, TaskId, TaskStatus};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

pub use estimator::{
    ShadowCache, applied_risk_factor, composite_utilization, estimate_best_effort, estimate_pod,
    load_composite, node_score,
};

/// Registered plugin name.
pub const NAME: &str = "usage";

/// Reason when the node's CPU load is over the threshold (Volcano's `NodeUsageCPUExtend`).
pub const CPU_OVER_THRESHOLD: &str = "the CPU load of the node exceeds the upper limit.";
/// Reason when the node's memory load is over the threshold (`NodeUsageMemoryExtend`).
pub const MEMORY_OVER_THRESHOLD: &str = "the memory load of the node exceeds the upper limit.";

/// A sample older than this is not used (`MetricsActiveTime`).
pub const METRICS_ACTIVE_TIME: SignedDuration = SignedDuration::from_secs(5 * 60);
/// The metrics interval when the configuration gives none (`metrics.interval`).
pub const DEFAULT_METRICS_INTERVAL: SignedDuration = SignedDuration::from_secs(30);

/// The plugin's arguments (§4.2), defaults included.
#[derive(Clone, Debug, PartialEq)]
pub struct UsageArgs {
    pub usage_weight: i64,
    pub cpu_weight: i64,
    pub memory_weight: i64,
    /// Percent.
    pub cpu_threshold: f64,
    pub mem_threshold: f64,
    pub request_ratio: f64,
    pub burst_ratio: f64,
    pub risk_threshold: f64,
    pub risk_factor: f64,
    /// Best-effort estimate, millicores.
    pub be_cpu: f64,
    /// Best-effort estimate, bytes.
    pub be_mem: f64,
}

impl Default for UsageArgs {
    fn default() -> Self {
        UsageArgs {
            usage_weight: 5,
            cpu_weight: 1,
            memory_weight: 1,
            cpu_threshold: 80.0,
            mem_threshold: 80.0,
            request_ratio: 0.7,
            burst_ratio: 0.0,
            risk_threshold: 0.6,
            risk_factor: 1.2,
            be_cpu: 250.0,
            be_mem: 200.0 * 1024.0 * 1024.0,
        }
    }
}

/// The problems [`UsageArgs::read`] finds, for the configuration parser.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    UsageArgs::read(args, &mut warnings);
    warnings
}

/// A nested section (`thresholds`, `estimator`) as arguments; `None` (and the whole section
/// ignored, as in Volcano) when it is not a mapping with string keys.
fn section(args: &Arguments, key: &str, warnings: &mut Vec<ArgWarning>) -> Option<Arguments> {
    let value = args.get(key)?;
    let entries = value
        .as_map()
        .filter(|entries| entries.iter().all(|(k, _)| matches!(k, ArgValue::Str(_))));
    let Some(entries) = entries else {
        warnings.push(ArgWarning::new(
            key,
            format!(
                "expected a mapping with string keys, found {}; the section is ignored",
                value.describe()
            ),
        ));
        return None;
    };
    Some(
        entries
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.clone())))
            .collect(),
    )
}

/// Reads an integer weight; a negative one keeps the default (reported).
fn weight(args: &Arguments, key: &str, default: i64, warnings: &mut Vec<ArgWarning>) -> i64 {
    let mut v = default;
    if args.get_weight(key, &mut v, warnings) && v < 0 {
        warnings.push(ArgWarning::new(
            key,
            format!("negative weight {v}; the default {default} is used, as in Volcano"),
        ));
        v = default;
    }
    v
}

/// Reads a number and keeps it only when `valid`; otherwise the default stays (reported).
fn bounded(
    args: &Arguments,
    path: &str,
    key: &str,
    int_only: bool,
    default: f64,
    valid: impl Fn(f64) -> bool,
    warnings: &mut Vec<ArgWarning>,
) -> f64 {
    let read = if int_only {
        let mut v = 0;
        args.get_int(key, &mut v).map(|set| set.then_some(v as f64))
    } else {
        let mut v = 0.0;
        args.get_float(key, &mut v).map(|set| set.then_some(v))
    };
    match read {
        Ok(Some(v)) if valid(v) => v,
        Ok(Some(v)) => {
            warnings.push(ArgWarning::new(
                format!("{path}.{key}"),
                format!("{v} is out of range; the default {default} is used"),
            ));
            default
        }
        Ok(None) => default,
        Err(e) => {
            warnings.push(ArgWarning::new(
                format!("{path}.{key}"),
                format!("{}; the default {default} is used", e.message),
            ));
            default
        }
    }
}

/// `be_cpu` / `be_mem`: an integer in `int_unit`s (millicores; MiB), or a quantity string
/// (millicores; bytes). Negative, unparsable or another type keeps the default.
fn best_effort(
    est: &Arguments,
    key: &str,
    int_unit: f64,
    milli: bool,
    default: f64,
    warnings: &mut Vec<ArgWarning>,
) -> f64 {
    let parsed = match est.get(key) {
        None => return default,
        Some(ArgValue::Int(i)) => (*i >= 0).then_some(*i as f64 * int_unit),
        Some(ArgValue::Str(s)) => {
            let q = if milli {
                engine::model::quantity::parse_milli(s)
            } else {
                engine::model::quantity::parse_value(s)
            };
            q.ok().filter(|v| *v >= 0).map(|v| v as f64)
        }
        Some(_) => None,
    };
    parsed.unwrap_or_else(|| {
        warnings.push(ArgWarning::new(
            format!("estimator.{key}"),
            format!(
                "{} is not a non-negative integer or quantity; the default is used",
                est.get(key).map(ArgValue::describe).unwrap_or_default()
            ),
        ));
        default
    })
}

impl UsageArgs {
    /// Reads the arguments, adding what is wrong with them to `warnings`.
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Self {
        let d = UsageArgs::default();
        let mut a = UsageArgs {
            usage_weight: weight(args, "usage.weight", d.usage_weight, warnings),
            cpu_weight: weight(args, "cpu.weight", d.cpu_weight, warnings),
            memory_weight: weight(args, "memory.weight", d.memory_weight, warnings),
            ..d.clone()
        };
        let percent = |v: f64| (0.0..=100.0).contains(&v);
        if let Some(t) = section(args, "thresholds", warnings) {
            let path = "thresholds";
            a.cpu_threshold = bounded(&t, path, "cpu", true, d.cpu_threshold, percent, warnings);
            a.mem_threshold = bounded(&t, path, "mem", true, d.mem_threshold, percent, warnings);
        }
        let unit = |v: f64| (0.0..=1.0).contains(&v);
        if let Some(e) = section(args, "estimator", warnings) {
            let path = "estimator";
            a.request_ratio = bounded(
                &e,
                path,
                "request_ratio",
                false,
                d.request_ratio,
                unit,
                warnings,
            );
            a.burst_ratio = bounded(
                &e,
                path,
                "burst_ratio",
                false,
                d.burst_ratio,
                unit,
                warnings,
            );
            a.risk_threshold = bounded(
                &e,
                path,
                "risk_threshold",
                false,
                d.risk_threshold,
                unit,
                warnings,
            );
            a.risk_factor = bounded(
                &e,
                path,
                "risk_factor",
                false,
                d.risk_factor,
                |v| v >= 1.0,
                warnings,
            );
            a.be_cpu = best_effort(&e, "be_cpu", 1.0, true, d.be_cpu, warnings);
            a.be_mem = best_effort(&e, "be_mem", 1024.0 * 1024.0, false, d.be_mem, warnings);
        }
        a
    }
}

pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(UsagePlugin {
        args: UsageArgs::read(args, &mut Vec::new()),
        metrics_interval: DEFAULT_METRICS_INTERVAL,
        shadow: ShadowCache::default(),
    })
}

pub struct UsagePlugin {
    args: UsageArgs,
    /// How long a started pod stays invisible to the metrics (`metrics.interval`).
    metrics_interval: SignedDuration,
    shadow: ShadowCache,
}

/// The node's sample, if fresh at `now`.
fn fresh_usage(node: &NodeInfo, now: Timestamp) -> Option<engine::model::NodeUsage> {
    node.usage
        .filter(|u| now.duration_since(u.metrics_time) <= METRICS_ACTIVE_TIME)
}

impl UsagePlugin {
    /// Measured plus shadow load of a node, as two composites (§4.5).
    fn composites(&self, node: &NodeInfo) -> (f64, f64) {
        let (cpu_est, mem_est) = self.shadow.node(node.name());
        let (cpu_real, mem_real) = node
            .usage
            .map(|u| (u.cpu_percent, u.memory_percent))
            .unwrap_or_default();
        let cap = &node.spec.capacity;
        (
            composite_utilization(cpu_real, cpu_est, cap.milli_cpu),
            composite_utilization(mem_real, mem_est, cap.memory),
        )
    }

    fn risk_factor(&self, node: &NodeInfo) -> f64 {
        let (cpu, mem) = self.composites(node);
        let load = load_composite(cpu, mem, self.args.cpu_weight, self.args.memory_weight);
        applied_risk_factor(load, self.args.risk_threshold, self.args.risk_factor)
    }

    /// What the task is expected to add to its node (millicores, bytes).
    fn estimate(&self, ssn: &SessionState, task: TaskId, rf: f64) -> (f64, f64) {
        let spec = &ssn.task(task).spec;
        let a = &self.args;
        if spec.best_effort {
            return (
                estimate_best_effort(a.be_cpu, rf),
                estimate_best_effort(a.be_mem, rf),
            );
        }
        let req = &spec.resreq;
        let lim = pod_resource_limit(&spec.pod);
        (
            estimate_pod(
                req.milli_cpu,
                lim.milli_cpu,
                a.request_ratio,
                a.burst_ratio,
                rf,
            ),
            estimate_pod(req.memory, lim.memory, a.request_ratio, a.burst_ratio, rf),
        )
    }

    /// Adds the task's estimate to the node it is placed on.
    fn add_estimate(&mut self, ssn: &SessionState, task: TaskId, node: NodeId) {
        let node = ssn.node(node);
        let rf = self.risk_factor(node);
        let (cpu, mem) = self.estimate(ssn, task, rf);
        let name = node.name().to_string();
        self.shadow.add(&name, &ssn.task(task).spec.uid, cpu, mem);
    }

    /// Placed, or running for less than the metrics interval: the metrics do not show it yet.
    fn invisible_to_metrics(&self, ssn: &SessionState, task: TaskId) -> bool {
        let t = ssn.task(task);
        if t.node.is_none() {
            return false;
        }
        match t.status {
            TaskStatus::Allocated | TaskStatus::Binding | TaskStatus::Bound => true,
            TaskStatus::Running => {
                let started = t
                    .spec
                    .pod
                    .status
                    .as_ref()
                    .and_then(|s| s.start_time.as_ref());
                match started {
                    None => true,
                    Some(start) => ssn.now().duration_since(start.0) < self.metrics_interval,
                }
            }
            _ => false,
        }
    }
}

impl Plugin for UsagePlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.shadow.clear();
        if let Some(interval) = ssn.conf().metrics.get("interval")
            && let Some(nanos) = engine::conf::parse_go_duration(interval)
            && nanos > 0
        {
            self.metrics_interval = SignedDuration::from_nanos(nanos);
        }
        // Warm-up: tasks already on nodes that the metrics do not show yet.
        for node in ssn.node_ids() {
            let tasks: Vec<TaskId> = ssn.node(node).tasks.iter().map(|(t, _)| *t).collect();
            for task in tasks {
                if self.invisible_to_metrics(ssn, task) {
                    self.add_estimate(ssn, task, node);
                }
            }
        }
    }

    fn on_session_close(&mut self, _ssn: &mut SessionState) {
        self.shadow.clear();
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREDICATE | ExtensionPoints::NODE_ORDER | ExtensionPoints::EVENT_HANDLER
    }

    fn predicate(&self, ssn: &SessionState, _task: TaskId, node: NodeId) -> Result<(), FitError> {
        let Some(usage) = fresh_usage(ssn.node(node), ssn.now()) else {
            return Ok(());
        };
        let reason = if usage.cpu_percent > self.args.cpu_threshold {
            CPU_OVER_THRESHOLD
        } else if usage.memory_percent > self.args.mem_threshold {
            MEMORY_OVER_THRESHOLD
        } else {
            return Ok(());
        };
        Err(FitError::new(FitStatus::new(
            StatusCode::UnschedulableAndUnresolvable,
            reason,
            NAME,
        )))
    }

    fn node_order(&self, ssn: &SessionState, _task: TaskId, node: NodeId) -> Result<f64, String> {
        let node = ssn.node(node);
        if fresh_usage(node, ssn.now()).is_none() {
            return Ok(0.0);
        }
        let (cpu, mem) = self.composites(node);
        let a = &self.args;
        Ok(node_score(
            cpu,
            mem,
            a.cpu_weight,
            a.memory_weight,
            a.usage_weight,
        ))
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        if let Some(node) = ssn.task(task).node {
            self.add_estimate(ssn, task, node);
        }
        Ok(())
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        self.shadow.sub(&ssn.task(task).spec.uid);
    }
}
