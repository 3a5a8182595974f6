//! The scheduler configuration file (spec `framework.md` §1.1–§1.10, `plugins-core.md` §0.3–§0.4).
//!
//! volcano-rs reads Volcano's own configuration format, usually mounted from a `ConfigMap`:
//!
//! ```yaml
//! actions: "enqueue, allocate, backfill"   # comma-separated, run in this order every cycle
//! tiers:                                   # plugins, grouped in ordered tiers
//! - plugins:
//!   - name: priority
//!   - name: gang
//!     enablePreemptable: false             # switch off one extension point of this plugin
//! - plugins:
//!   - name: drf
//!   - name: predicates
//!     arguments:                           # plugin-specific, typed as YAML 1.1 scalars
//!       predicate.CacheEnable: true
//!   - name: proportion
//!   - name: nodeorder
//! configurations:                          # optional per-action arguments
//! - name: preempt
//!   arguments:
//!     enableTopologyAwarePreemption: true
//! metrics:                                 # optional node-usage metrics source (flat strings)
//!   type: prometheus
//!   address: http://prometheus.example:9090
//! ```
//!
//! * `actions` must be a string; every comma-separated element, trimmed, must name a known action.
//!   An empty element (a trailing comma, `a,,b`, a missing or empty `actions`) is an error.
//!   Duplicates are allowed: the action runs twice per cycle.
//! * Each plugin option has a `name`, optional `arguments` and optional enable flags, one per
//!   extension-point [`Gate`] (note the mixed `enable…`/`enabled…` spelling, see
//!   [`Gate::yaml_key`]). Every flag defaults to `true` except `enabledClusterOrder`; the
//!   non-gate flag `enableHierarchy` defaults to `false`. Flags take YAML 1.1 booleans:
//!   `true/false`, `yes/no`, `on/off`, `y/n`, in lower, Capitalised or UPPER case.
//! * A tier that contains both `drf` with `enableHierarchy: true` and `proportion` is rejected.
//! * Argument values keep their YAML type; see [`arguments`] for the typing rules and accessors.
//! * `metrics` values are taken as their literal text.
//!
//! Where volcano-rs is deliberately stricter or different than Volcano:
//!
//! * An unknown name in `actions` is an error that names it, lists the known names and suggests
//!   the closest one (Volcano's loader refuses such a file too).
//! * An unknown plugin name is skipped, as Volcano's session skips a plugin it has no builder
//!   for, but loudly: a warning naming it (with the closest known name), and the name in
//!   [`SchedulerConf::skipped_plugins`] for the daemon's event and metric. An unknown action in
//!   `configurations` is ignored with a warning (Volcano ignores it silently). With
//!   [`KnownNames::strict`] (`--strict-config`) both are errors, since a typo silently switches a
//!   policy such as fairness off.
//! * Unknown keys are still accepted, but reported as warnings, with a suggestion when a known key
//!   is close (a misspelt enable flag is otherwise silently ignored).
//! * Every error names the field path (`tiers[0].plugins[2].enableJobOrder: expected a boolean,
//!   found "maybe"`).
//! * A plugin option needs a non-empty `name`, and a `configurations` entry an action `name`.
//! * Each configuration stands alone. Volcano's action objects keep an argument from an earlier
//!   configuration after a reload that removed it (`framework.md` §1.6, "stickiness"); volcano-rs
//!   reads every action argument from the configuration in force, falling back to the default.
//! * Duplicate mapping keys are rejected, and the input must be a single YAML document.
//! * A quoted boolean word (`enableJobOrder: "false"`) is accepted for an enable flag; Volcano's
//!   decoder refuses the whole file for it.
//! * Nesting deeper than [`MAX_DEPTH`] levels is refused (Volcano's own files need 7).

pub mod arguments;
pub mod duration;
pub mod go_decode;
mod parse;
pub mod values;
mod yaml;

use std::collections::BTreeMap;
use std::fmt;

pub use arguments::{ArgError, ArgValue, Arguments};
pub use duration::parse_go_duration;
pub use parse::parse;
pub use values::{ArgWarning, ArgumentCheck, MAX_WEIGHT, clamp_weight, quoted, shorten};

/// The deepest nesting a configuration document may have. Volcano's own files need 7 levels; the
/// parser's stack use grows with each one.
pub const MAX_DEPTH: usize = 32;

/// Volcano's embedded configuration, used when no file is given (§1.8).
///
/// Volcano's copy starts with a newline; the loader trims surrounding whitespace (§1.1), so the
/// text here (and in `config/default.conf`) omits it.
pub const DEFAULT_SCHEDULER_CONF: &str = r#"actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"#;

/// Every plugin name Volcano registers (`pkg/scheduler/plugins/factory.go`), so that a warning
/// can tell a plugin this build lacks from a typo.
pub const VOLCANO_PLUGIN_NAMES: &[&str] = &[
    "binpack",
    "capacity",
    "cdp",
    "conformance",
    "deviceshare",
    "drf",
    "extender",
    "gang",
    "network-topology-aware",
    "nodegroup",
    "nodeorder",
    "numa-aware",
    "overcommit",
    "pdb",
    "predicates",
    "priority",
    "proportion",
    "rescheduling",
    "resource-strategy-fit",
    "resourcequota",
    "sla",
    "task-topology",
    "tdm",
    "usage",
];

/// A parsed, defaulted and validated scheduler configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerConf {
    /// Action names in execution order (duplicates allowed).
    pub actions: Vec<String>,
    pub tiers: Vec<Tier>,
    pub configurations: Vec<ActionConfiguration>,
    pub metrics: BTreeMap<String, String>,
    /// Plugins the file names but this build does not provide, in file order; they are not in
    /// `tiers` and do not run (empty in strict mode, where they are an error). Each is shortened
    /// as in messages ([`shorten`]), since it is only ever reported.
    pub skipped_plugins: Vec<String>,
}

/// One tier: an ordered list of plugin options.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Tier {
    pub plugins: Vec<PluginOption>,
}

/// Per-action arguments from the `configurations` section (§1.6).
#[derive(Clone, Debug, PartialEq)]
pub struct ActionConfiguration {
    pub name: String,
    pub arguments: Arguments,
}

/// The action and plugin names the caller can run, and what [`parse`] does with other names.
#[derive(Clone, Copy, Debug)]
pub struct KnownNames<'a> {
    pub actions: &'a [&'a str],
    pub plugins: &'a [&'a str],
    /// `false` (Volcano's behaviour): an unknown plugin is skipped with a warning and recorded
    /// in [`SchedulerConf::skipped_plugins`], and a `configurations` entry for an unknown action
    /// is ignored with a warning. `true` (`--strict-config`): both are errors. An unknown name
    /// in `actions` is an error either way, as in Volcano's loader.
    pub strict: bool,
    /// Checks the arguments of each known plugin option; its findings become warnings under
    /// `…arguments.<key>`. `None` checks nothing (tests, tools without the plugins).
    pub check_arguments: Option<ArgumentCheck>,
}

/// A successfully parsed configuration and the non-fatal problems found in it.
#[derive(Clone, Debug)]
pub struct Parsed {
    pub conf: SchedulerConf,
    /// One line per problem, each starting with the field path, e.g.
    /// `tiers[1].plugins[0]: unknown key "enablePreemtable" (did you mean "enablePreemptable"?)`.
    pub warnings: Vec<String>,
}

/// A configuration that cannot be used. `path` is the offending field (`tiers[0].plugins[2].name`),
/// or empty when the problem concerns the whole document, such as a YAML syntax error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{message}", PathPrefix(path))]
pub struct ConfError {
    pub path: String,
    pub message: String,
}

impl ConfError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Renders `"<path>: "`, or nothing for whole-document errors.
struct PathPrefix<'a>(&'a str);

impl fmt::Display for PathPrefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "{}: ", self.0)
        }
    }
}

/// An extension-point gate of a plugin option (§1.4): when a gate is off, the dispatcher skips
/// this plugin option for the extension points the gate covers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Gate {
    JobOrder,
    JobReady,
    JobPipelined,
    TaskOrder,
    Preemptable,
    Reclaimable,
    Preemptive,
    QueueOrder,
    ClusterOrder,
    Predicate,
    BestNode,
    NodeOrder,
    TargetJob,
    ReservedNodes,
    JobEnqueued,
    Victim,
    JobStarving,
    Overused,
    Allocatable,
    HyperNodeOrder,
    SubJobReady,
    SubJobPipelined,
    SubJobOrder,
    HyperNodeGradient,
}

impl Gate {
    pub const ALL: [Gate; 24] = [
        Gate::JobOrder,
        Gate::JobReady,
        Gate::JobPipelined,
        Gate::TaskOrder,
        Gate::Preemptable,
        Gate::Reclaimable,
        Gate::Preemptive,
        Gate::QueueOrder,
        Gate::ClusterOrder,
        Gate::Predicate,
        Gate::BestNode,
        Gate::NodeOrder,
        Gate::TargetJob,
        Gate::ReservedNodes,
        Gate::JobEnqueued,
        Gate::Victim,
        Gate::JobStarving,
        Gate::Overused,
        Gate::Allocatable,
        Gate::HyperNodeOrder,
        Gate::SubJobReady,
        Gate::SubJobPipelined,
        Gate::SubJobOrder,
        Gate::HyperNodeGradient,
    ];

    /// The exact YAML key of the flag; Volcano mixes `enable…` and `enabled…`.
    pub const fn yaml_key(self) -> &'static str {
        match self {
            Gate::JobOrder => "enableJobOrder",
            Gate::JobReady => "enableJobReady",
            Gate::JobPipelined => "enableJobPipelined",
            Gate::TaskOrder => "enableTaskOrder",
            Gate::Preemptable => "enablePreemptable",
            Gate::Reclaimable => "enableReclaimable",
            Gate::Preemptive => "enablePreemptive",
            Gate::QueueOrder => "enableQueueOrder",
            Gate::ClusterOrder => "enabledClusterOrder",
            Gate::Predicate => "enablePredicate",
            Gate::BestNode => "enableBestNode",
            Gate::NodeOrder => "enableNodeOrder",
            Gate::TargetJob => "enableTargetJob",
            Gate::ReservedNodes => "enableReservedNodes",
            Gate::JobEnqueued => "enableJobEnqueued",
            Gate::Victim => "enabledVictim",
            Gate::JobStarving => "enableJobStarving",
            Gate::Overused => "enabledOverused",
            Gate::Allocatable => "enabledAllocatable",
            Gate::HyperNodeOrder => "enabledHyperNodeOrder",
            Gate::SubJobReady => "enabledSubJobReady",
            Gate::SubJobPipelined => "enabledSubJobPipelined",
            Gate::SubJobOrder => "enabledSubJobOrder",
            Gate::HyperNodeGradient => "enabledHyperNodeGradient",
        }
    }

    pub fn from_yaml_key(key: &str) -> Option<Gate> {
        Gate::ALL.into_iter().find(|gate| gate.yaml_key() == key)
    }

    /// The value an absent flag takes: Volcano's defaulting skips only `enabledClusterOrder`.
    pub const fn default_enabled(self) -> bool {
        !matches!(self, Gate::ClusterOrder)
    }

    const fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// The state of every gate except [`Gate::ClusterOrder`], which lives in the public
/// `enabled_cluster_order` field so that there is a single source of truth for it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct GateSet(u32);

impl GateSet {
    fn defaults() -> Self {
        GateSet(
            Gate::ALL
                .into_iter()
                .filter(|g| *g != Gate::ClusterOrder && g.default_enabled())
                .fold(0, |bits, g| bits | g.bit()),
        )
    }

    fn contains(self, gate: Gate) -> bool {
        self.0 & gate.bit() != 0
    }

    fn set(&mut self, gate: Gate, on: bool) {
        if on {
            self.0 |= gate.bit();
        } else {
            self.0 &= !gate.bit();
        }
    }
}

impl fmt::Debug for GateSet {
    /// Lists only the gates that differ from their default, which is what a reader looks for.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_set();
        for gate in Gate::ALL {
            if gate != Gate::ClusterOrder && self.contains(gate) != gate.default_enabled() {
                list.entry(&format_args!(
                    "{}: {}",
                    gate.yaml_key(),
                    self.contains(gate)
                ));
            }
        }
        list.finish()
    }
}

/// One plugin entry of a tier (§1.4), after defaulting.
#[derive(Clone, Debug, PartialEq)]
pub struct PluginOption {
    pub name: String,
    /// Not a dispatch gate: drf, capacity and nodegroup read it via
    /// [`SchedulerConf::hierarchy_enabled`].
    pub enable_hierarchy: bool,
    /// Same value as `is_enabled(Gate::ClusterOrder)`.
    pub enabled_cluster_order: bool,
    gates: GateSet,
    pub arguments: Arguments,
}

impl PluginOption {
    /// An option with every flag at its default and no arguments.
    pub fn new(name: &str) -> Self {
        PluginOption {
            name: name.to_owned(),
            enable_hierarchy: false,
            enabled_cluster_order: Gate::ClusterOrder.default_enabled(),
            gates: GateSet::defaults(),
            arguments: Arguments::default(),
        }
    }

    pub fn is_enabled(&self, gate: Gate) -> bool {
        match gate {
            Gate::ClusterOrder => self.enabled_cluster_order,
            other => self.gates.contains(other),
        }
    }

    pub fn set_enabled(&mut self, gate: Gate, on: bool) {
        match gate {
            Gate::ClusterOrder => self.enabled_cluster_order = on,
            other => self.gates.set(other, on),
        }
    }

    /// Builder-style [`PluginOption::set_enabled`].
    pub fn with_gate(mut self, gate: Gate, on: bool) -> Self {
        self.set_enabled(gate, on);
        self
    }

    /// Builder-style replacement of the arguments.
    pub fn with_arguments(mut self, arguments: Arguments) -> Self {
        self.arguments = arguments;
        self
    }

    fn to_value(&self) -> ArgValue {
        let mut map = vec![entry("name", self.name.as_str().into())];
        if self.enable_hierarchy {
            map.push(entry("enableHierarchy", true.into()));
        }
        // Only flags that differ from their default, so the output reads like a hand-written file.
        for gate in Gate::ALL {
            let on = self.is_enabled(gate);
            if on != gate.default_enabled() {
                map.push(entry(gate.yaml_key(), on.into()));
            }
        }
        if !self.arguments.is_empty() {
            map.push(entry("arguments", self.arguments.to_value()));
        }
        ArgValue::Map(map)
    }
}

fn entry(key: &str, value: ArgValue) -> (ArgValue, ArgValue) {
    (ArgValue::Str(key.to_owned()), value)
}

impl SchedulerConf {
    /// Volcano's embedded default (§1.8), the result of parsing [`DEFAULT_SCHEDULER_CONF`].
    pub fn embedded_default() -> Self {
        let tier = |names: &[&str]| Tier {
            plugins: names.iter().map(|n| PluginOption::new(n)).collect(),
        };
        SchedulerConf {
            actions: ["enqueue", "allocate", "backfill"]
                .map(String::from)
                .to_vec(),
            tiers: vec![
                tier(&["priority", "gang", "conformance"]),
                tier(&["overcommit", "drf", "predicates", "proportion", "nodeorder"]),
            ],
            configurations: Vec::new(),
            metrics: BTreeMap::new(),
            skipped_plugins: Vec::new(),
        }
    }

    /// The arguments of the first `configurations` entry named `action` (Volcano's
    /// `GetArgOfActionFromConf`); `None` behaves as "every key missing".
    pub fn action_arguments(&self, action: &str) -> Option<&Arguments> {
        self.configurations
            .iter()
            .find(|c| c.name == action)
            .map(|c| &c.arguments)
    }

    /// `enableHierarchy` of the first plugin option named `plugin`, in tier order (§1.4).
    pub fn hierarchy_enabled(&self, plugin: &str) -> bool {
        self.plugin_options()
            .find(|p| p.name == plugin)
            .is_some_and(|p| p.enable_hierarchy)
    }

    /// Every plugin option in dispatch order (tier by tier).
    pub fn plugin_options(&self) -> impl Iterator<Item = &PluginOption> {
        self.tiers.iter().flat_map(|t| t.plugins.iter())
    }

    /// Every plugin name in dispatch order, duplicates included.
    pub fn plugin_names(&self) -> impl Iterator<Item = &str> {
        self.plugin_options().map(|p| p.name.as_str())
    }

    /// Renders the configuration in the file format. Flags equal to their default are left out.
    /// For any configuration produced by [`parse`], parsing the output gives it back unchanged.
    pub fn to_yaml(&self) -> String {
        let mut root = vec![entry("actions", self.actions.join(", ").into())];
        let tiers = self
            .tiers
            .iter()
            .map(|tier| {
                let plugins = tier.plugins.iter().map(PluginOption::to_value).collect();
                ArgValue::Map(vec![entry("plugins", ArgValue::List(plugins))])
            })
            .collect();
        root.push(entry("tiers", ArgValue::List(tiers)));
        if !self.configurations.is_empty() {
            let confs = self
                .configurations
                .iter()
                .map(|c| {
                    let mut map = vec![entry("name", c.name.as_str().into())];
                    if !c.arguments.is_empty() {
                        map.push(entry("arguments", c.arguments.to_value()));
                    }
                    ArgValue::Map(map)
                })
                .collect();
            root.push(entry("configurations", ArgValue::List(confs)));
        }
        if !self.metrics.is_empty() {
            let metrics = self
                .metrics
                .iter()
                .map(|(k, v)| entry(k, v.as_str().into()))
                .collect();
            root.push(entry("metrics", ArgValue::Map(metrics)));
        }
        yaml::render(&ArgValue::Map(root))
    }
}

#[cfg(test)]
mod tests;
