//! `rescheduling`: names running pods to move off overloaded nodes, for the `shuffle` action
//! to evict (spec/plugins-more.md, rescheduling; Volcano's `plugins/rescheduling`).
//!
//! Every `interval` (default 5m, counted from the first session) the plugin registers a
//! victim function for each configured strategy; Volcano has one, `lowNodeUtilization`
//! ([`low_node_utilization`]). Between those sessions it registers nothing, so `shuffle` finds
//! no victims through it.
//!
//! Node load is the measured load the usage collector (or the simulator's `NodeUsage`
//! documents) puts on each node, as Volcano reads its metrics cache. Volcano keeps that load
//! under the period `10m` only, so a `metricsPeriod` other than `10m` (the default is `5m`)
//! reads no load at all and the plugin finds nothing to do — as in Volcano; the configuration
//! check says so.
//!
//! Differences from Volcano, on purpose (docs/architecture.md): the timer lives in the
//! scheduler's plugin memory instead of a process-wide variable (it starts at the first
//! session, not at process start); the arguments are this tier entry's own; victims are matched
//! to the pods on the node by identity (Volcano matches by pod name only, across namespaces);
//! the low nodes' budget stops evicting once it is used up (Volcano stops only at exactly zero
//! and overdraws otherwise); values Volcano's Go code would panic on are refused with a warning
//! and the default is used.

mod low_node_utilization;
#[cfg(test)]
mod tests;

use engine::conf::{ArgValue, ArgWarning, Arguments, parse_go_duration};
use engine::framework::{ExtensionPoints, Plugin, SessionState};
use engine::model::TaskId;
use k8s_openapi::jiff::SignedDuration;

pub use low_node_utilization::Thresholds;

/// Registered plugin name.
pub const NAME: &str = "rescheduling";
/// The only strategy Volcano implements.
pub const LOW_NODE_UTILIZATION: &str = "lowNodeUtilization";
/// The only metrics period the load is kept under.
pub const LOAD_PERIOD: &str = "10m";
/// Plugin-memory key of the interval timer.
const TIMER: &str = "rescheduling/interval";

/// The plugin's arguments, defaults included.
#[derive(Clone, Debug, PartialEq)]
pub struct ReschedulingArgs {
    pub interval: SignedDuration,
    pub metrics_period: String,
    /// `lowNodeUtilization`'s thresholds, when that strategy is configured (it is by default).
    pub low_node_utilization: Option<Thresholds>,
}

impl Default for ReschedulingArgs {
    fn default() -> Self {
        ReschedulingArgs {
            interval: SignedDuration::from_mins(5),
            metrics_period: "5m".to_string(),
            low_node_utilization: Some(Thresholds::default()),
        }
    }
}

/// Reads the arguments; what cannot be used is reported and replaced by the default.
pub fn parse_args(args: &Arguments) -> (ReschedulingArgs, Vec<ArgWarning>) {
    let mut out = ReschedulingArgs::default();
    let mut warnings = Vec::new();
    match args.get("interval") {
        None | Some(ArgValue::Null) => {}
        Some(ArgValue::Str(s)) => match parse_go_duration(s) {
            Some(nanos) => out.interval = SignedDuration::from_nanos(nanos),
            None => warnings.push(ArgWarning::new(
                "interval",
                format!("{s:?} is not a duration such as 5m; 5m is used"),
            )),
        },
        Some(other) => warnings.push(ArgWarning::new(
            "interval",
            format!("{other:?} is not a string duration such as \"5m\"; 5m is used"),
        )),
    }
    match args.get("metricsPeriod") {
        None | Some(ArgValue::Null) => {}
        Some(ArgValue::Str(s)) if s.is_empty() => {}
        Some(ArgValue::Str(s)) => out.metrics_period = s.clone(),
        Some(other) => warnings.push(ArgWarning::new(
            "metricsPeriod",
            format!("{other:?} is not a string; 5m is used"),
        )),
    }
    if out.metrics_period != LOAD_PERIOD {
        warnings.push(ArgWarning::new(
            "metricsPeriod",
            format!(
                "node load is kept for the period {LOAD_PERIOD} only; with {:?} every node reads \
                 no load and rescheduling finds no victims (as in Volcano)",
                out.metrics_period
            ),
        ));
    }
    if let Some(value) = args.get("strategies") {
        out.low_node_utilization = parse_strategies(value, &mut warnings);
    }
    (out, warnings)
}

/// `strategies`: a non-empty list replaces the default one; only `lowNodeUtilization` has an
/// implementation, other names are warned about and ignored.
fn parse_strategies(value: &ArgValue, warnings: &mut Vec<ArgWarning>) -> Option<Thresholds> {
    let items = match value {
        ArgValue::List(items) if !items.is_empty() => items,
        ArgValue::List(_) | ArgValue::Null => return Some(Thresholds::default()),
        other => {
            warnings.push(ArgWarning::new(
                "strategies",
                format!("{other:?} is not a list; the default strategy is used"),
            ));
            return Some(Thresholds::default());
        }
    };
    let mut found = None;
    for (i, item) in items.iter().enumerate() {
        let key = format!("strategies[{i}]");
        let Some(entries) = item.as_map() else {
            warnings.push(ArgWarning::new(
                key,
                "is not a map with name and params; ignored",
            ));
            continue;
        };
        let field = |name: &str| {
            entries
                .iter()
                .find(|(k, _)| k.as_str().is_some_and(|k| k.eq_ignore_ascii_case(name)))
                .map(|(_, v)| v)
        };
        let Some(name) = field("name").and_then(ArgValue::as_str) else {
            warnings.push(ArgWarning::new(key, "has no string name; ignored"));
            continue;
        };
        if name != LOW_NODE_UTILIZATION {
            warnings.push(ArgWarning::new(
                format!("{key}.name"),
                format!("{name:?} is not a strategy Volcano implements; ignored"),
            ));
            continue;
        }
        found = Some(Thresholds::parse(field("params"), &key, warnings));
    }
    found
}

/// Reported once per configuration load.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    parse_args(args).1
}

pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(Rescheduling {
        args: parse_args(args).0,
        due: false,
    })
}

struct Rescheduling {
    args: ReschedulingArgs,
    /// The interval has passed: the victim function is registered this session.
    due: bool,
}

impl Plugin for Rescheduling {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.due = ssn
            .options()
            .memory
            .interval_elapsed(TIMER, ssn.now(), self.args.interval);
    }

    fn extension_points(&self) -> ExtensionPoints {
        if self.due && self.args.low_node_utilization.is_some() {
            ExtensionPoints::VICTIM_TASKS
        } else {
            ExtensionPoints::NONE
        }
    }

    /// The victim function, in the sessions where the interval has passed.
    fn possible_extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::VICTIM_TASKS
    }

    fn victim_tasks(&self, ssn: &SessionState, tasks: &[TaskId]) -> Vec<TaskId> {
        let Some(thresholds) = &self.args.low_node_utilization else {
            return Vec::new();
        };
        let read_load = self.args.metrics_period == LOAD_PERIOD;
        low_node_utilization::victims(ssn, tasks, thresholds, read_load)
    }
}
