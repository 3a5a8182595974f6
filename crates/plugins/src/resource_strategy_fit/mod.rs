//! `resource-strategy-fit`: a node score with a MostAllocated (pack) or LeastAllocated (spread)
//! strategy per resource, plus two optional parts (spec/plugins-more.md §8):
//!
//! * the strategy score (§8.3, here): for each resource the task requests that has a strategy,
//!   `(used + request) × w / allocatable` (MostAllocated) or `(allocatable − used − request) ×
//!   w / allocatable` (LeastAllocated), averaged by weight and scaled by `100 ×
//!   resourceStrategyFitWeight`. A resource that would overflow zeroes the node. Strategies come
//!   from the `resources` argument (exact names or trailing wildcards such as `nvidia.com/*`,
//!   longest prefix wins) or, per pod, from the `volcano.sh/resource-strategy-scoring-type` and
//!   `volcano.sh/resource-strategy-weight` annotations;
//! * SRA (§8.4, [`sra`]): a score keeping tasks off nodes with scarce resources they do not use;
//! * Proportional (§8.5, [`proportional`]): a predicate reserving cpu and memory per idle
//!   scarce unit.
//!
//! Arguments are decoded like Volcano's `framework.Get` (`decode.rs`). Where Volcano exits on an
//! undecodable value, this plugin logs a warning and uses the default of that argument.

pub mod proportional;
pub mod sra;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use engine::conf::{ArgValue, ArgWarning, Arguments, clamp_weight, shorten};
use engine::framework::{ExtensionPoints, Plugin, SessionState};
use engine::model::resource::{CPU, MEMORY, MIN_RESOURCE};
use engine::model::{FitError, FitStatus, NodeId, Resource, ResourceName, StatusCode, TaskId};
use k8s_openapi::api::core::v1::Pod;

use engine::conf::go_decode::{self as decode, DecodeError};
use proportional::Proportional;
use sra::SraWeights;

/// Registered plugin name.
pub const NAME: &str = "resource-strategy-fit";

/// `resourceStrategyFitWeight` when absent, negative or undecodable.
pub const DEFAULT_WEIGHT: i64 = 10;

const WEIGHT_KEY: &str = "resourceStrategyFitWeight";
const RESOURCES_KEY: &str = "resources";
const SRA_KEY: &str = "sra";
const PROPORTIONAL_KEY: &str = "proportional";

/// Kubernetes' `MaxNodeScore`.
const MAX_NODE_SCORE: f64 = 100.0;

/// The two scoring strategies (Kubernetes' `ScoringStrategyType` names, case-sensitive).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ScoringType {
    MostAllocated,
    LeastAllocated,
}

impl ScoringType {
    /// The exact Kubernetes name, or `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "MostAllocated" => Some(Self::MostAllocated),
            "LeastAllocated" => Some(Self::LeastAllocated),
            _ => None,
        }
    }
}

/// Strategy and weight of one configured resource (or wildcard).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ResourceStrategy {
    pub kind: ScoringType,
    pub weight: i64,
}

/// `resourceStrategyFitWeight` and the validated `resources` table (§8.1).
#[derive(Clone, Debug, PartialEq)]
pub struct StrategyConfig {
    /// Multiplies the strategy score; 0 turns it off.
    pub weight: i64,
    /// Configured keys, exact names and valid wildcards alike.
    pub resources: BTreeMap<String, ResourceStrategy>,
    /// The wildcard keys as (prefix, strategy), longest prefix first.
    wildcards: Vec<(String, ResourceStrategy)>,
}

impl StrategyConfig {
    pub fn new(weight: i64, resources: BTreeMap<String, ResourceStrategy>) -> Self {
        let mut wildcards: Vec<(String, ResourceStrategy)> = resources
            .iter()
            .filter_map(|(k, v)| Some((k.strip_suffix('*')?.to_owned(), *v)))
            .collect();
        // Two matching prefixes of equal length are the same string, so ties cannot happen.
        wildcards.sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
        Self {
            weight,
            resources,
            wildcards,
        }
    }

    /// `findResourceConfigWithPrefix`: an exact key first, else the matching wildcard with
    /// the longest prefix.
    pub fn lookup(&self, resource: &str) -> Option<ResourceStrategy> {
        if let Some(s) = self.resources.get(resource) {
            return Some(*s);
        }
        self.wildcards
            .iter()
            .find(|(prefix, _)| resource.starts_with(prefix.as_str()))
            .map(|&(_, s)| s)
    }

    /// Reads `resourceStrategyFitWeight` and `resources` (§8.1).
    pub fn from_arguments(args: &Arguments) -> Self {
        Self::read(args, &mut Vec::new())
    }

    /// [`StrategyConfig::from_arguments`], adding what is wrong with the arguments to
    /// `warnings`. Weights beyond ±`MAX_WEIGHT` are clamped to it.
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Self {
        let weight = read_weight(args, warnings);
        let configured = match args.get(RESOURCES_KEY).map(decode_resources) {
            None | Some(Ok(None)) => Vec::new(),
            Some(Ok(Some(entries))) => entries,
            Some(Err(e)) => {
                warnings.push(ArgWarning::new(
                    RESOURCES_KEY,
                    format!("{e}; the default table is used (Volcano exits on this)"),
                ));
                Vec::new()
            }
        };
        // Later duplicates replace earlier ones, as in a Go map.
        let mut raw: BTreeMap<String, RawStrategy> = configured.into_iter().collect();
        // The default replaces a missing or empty table before validation.
        if raw.is_empty() {
            for name in [CPU, MEMORY] {
                let least = RawStrategy {
                    kind: "LeastAllocated".to_owned(),
                    weight: 1,
                };
                raw.insert(name.to_owned(), least);
            }
        }
        let mut resources = BTreeMap::new();
        for (key, mut entry) in raw {
            let field = format!("{RESOURCES_KEY}[{}]", shorten(&key));
            if !is_valid_wildcard_pattern(&key) {
                let reason = if key == "*" {
                    "a lone '*' cannot be a default strategy"
                } else {
                    "only one trailing '*' is supported"
                };
                warnings.push(ArgWarning::new(
                    field,
                    format!("{reason}; ignored (use a prefix such as 'nvidia.com/*')"),
                ));
                continue;
            }
            let weight_field = format!("{field}.weight");
            warnings.extend(clamp_weight(&weight_field, &mut entry.weight));
            if entry.weight < 0 {
                warnings.push(ArgWarning::new(
                    weight_field,
                    format!("negative weight {}; 1 is used, as in Volcano", entry.weight),
                ));
            }
            let strategy = ResourceStrategy {
                kind: ScoringType::parse(&entry.kind).unwrap_or(ScoringType::LeastAllocated),
                weight: if entry.weight <= 0 { 1 } else { entry.weight },
            };
            resources.insert(key, strategy);
        }
        Self::new(weight, resources)
    }
}

/// `resourceStrategyFitWeight`: missing, negative or undecodable → 10, 0 kept, beyond
/// `MAX_WEIGHT` clamped.
fn read_weight(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> i64 {
    let Some(value) = args.get(WEIGHT_KEY) else {
        return DEFAULT_WEIGHT;
    };
    match decode::int(value, WEIGHT_KEY) {
        Ok(Some(mut w)) if w >= 0 => {
            warnings.extend(clamp_weight(WEIGHT_KEY, &mut w));
            w
        }
        Ok(Some(w)) => {
            warnings.push(ArgWarning::new(
                WEIGHT_KEY,
                format!("negative weight {w}; the default {DEFAULT_WEIGHT} is used, as in Volcano"),
            ));
            DEFAULT_WEIGHT
        }
        // Volcano's decoder leaves the int at 0 for a null value and still reports it found.
        Ok(None) => 0,
        Err(e) => {
            warnings.push(ArgWarning::new(
                WEIGHT_KEY,
                format!("{e}; the default {DEFAULT_WEIGHT} is used (Volcano exits on this)"),
            ));
            DEFAULT_WEIGHT
        }
    }
}

/// A `resources` entry before validation.
#[derive(Clone, Debug, Default, PartialEq)]
struct RawStrategy {
    kind: String,
    weight: i64,
}

fn decode_resources(v: &ArgValue) -> Result<Option<Vec<(String, RawStrategy)>>, DecodeError> {
    decode::map(v, RESOURCES_KEY, |entry, path| {
        let mut out = RawStrategy::default();
        let Some(f) = decode::fields(entry, path)? else {
            return Ok(out);
        };
        if let Some(kind) = f.read("Type", "type", decode::string)? {
            out.kind = kind;
        }
        if let Some(weight) = f.read("Weight", "weight", decode::int)? {
            out.weight = weight;
        }
        Ok(out)
    })
}

/// `isValidWildcardPattern`: no `*`, or exactly one `*` at the end of a longer key.
pub fn is_valid_wildcard_pattern(pattern: &str) -> bool {
    if !pattern.contains('*') {
        return true;
    }
    pattern != "*" && pattern.ends_with('*') && pattern.matches('*').count() == 1
}

/// `mostRequestedScore`: `None` when the request does not fit (`used + request > capacity`).
/// A zero weight or capacity scores 0 without that check.
pub fn most_requested_score(request: f64, used: f64, capacity: f64, weight: i64) -> Option<f64> {
    if weight == 0 || capacity == 0.0 {
        return Some(0.0);
    }
    let used_finally = request + used;
    if used_finally > capacity {
        return None;
    }
    Some(used_finally * weight as f64 / capacity)
}

/// `leastRequestedScore`, with the same rules as [`most_requested_score`].
pub fn least_requested_score(request: f64, used: f64, capacity: f64, weight: i64) -> Option<f64> {
    if weight == 0 || capacity == 0.0 {
        return Some(0.0);
    }
    let used_finally = request + used;
    if used_finally > capacity {
        return None;
    }
    Some((capacity - used_finally) * weight as f64 / capacity)
}

/// A task's own strategy from its pod annotations (§8.3).
#[derive(Clone, Debug, PartialEq)]
pub enum PodStrategy {
    /// No (or an empty) scoring-type annotation: the configured table applies.
    Configured,
    /// A scoring type without a usable weight annotation: the strategy score is 0.
    Invalid,
    /// The pod's type (`None` when it names neither strategy: those resources score 0 but
    /// their weight still counts) and its weights, by exact resource name.
    Own {
        kind: Option<ScoringType>,
        weights: BTreeMap<String, i64>,
    },
}

impl PodStrategy {
    pub fn of(pod: &Pod) -> Self {
        let annotations = pod.metadata.annotations.as_ref();
        let get = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
        let kind = get(apis::keys::RESOURCE_STRATEGY_SCORING_TYPE).unwrap_or("");
        if kind.is_empty() {
            return Self::Configured;
        }
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        let raw = get(apis::keys::RESOURCE_STRATEGY_WEIGHT).unwrap_or("");
        if raw.is_empty() {
            tracing::warn!(
                plugin = NAME,
                pod = pod_name,
                "{} is set but {} is missing or empty; strategy score 0",
                apis::keys::RESOURCE_STRATEGY_SCORING_TYPE,
                apis::keys::RESOURCE_STRATEGY_WEIGHT
            );
            return Self::Invalid;
        }
        // Go's decoder takes `null` as "no map" and rejects fractions and exponents for ints,
        // as serde_json does for i64.
        match serde_json::from_str::<Option<BTreeMap<String, i64>>>(raw) {
            Ok(weights) => Self::Own {
                kind: ScoringType::parse(kind),
                weights: weights.unwrap_or_default(),
            },
            Err(e) => {
                tracing::warn!(
                    plugin = NAME,
                    pod = pod_name,
                    error = %e,
                    "invalid {}; strategy score 0",
                    apis::keys::RESOURCE_STRATEGY_WEIGHT
                );
                Self::Invalid
            }
        }
    }
}

/// One requested dimension: its name and the accessor into a resource vector.
#[derive(Copy, Clone)]
enum Dim {
    Cpu,
    Memory,
    Scalar(ResourceName),
}

impl Dim {
    fn name(self) -> &'static str {
        match self {
            Dim::Cpu => CPU,
            Dim::Memory => MEMORY,
            Dim::Scalar(n) => n.as_str(),
        }
    }

    fn of(self, r: &Resource) -> f64 {
        match self {
            Dim::Cpu => r.milli_cpu,
            Dim::Memory => r.memory,
            Dim::Scalar(n) => r.scalar(n),
        }
    }
}

/// `ResourceNames()`: the dimensions of `r` at or above ε (`pods` included).
fn requested_dims(r: &Resource) -> impl Iterator<Item = Dim> + '_ {
    let cpu = (r.milli_cpu >= MIN_RESOURCE).then_some(Dim::Cpu);
    let memory = (r.memory >= MIN_RESOURCE).then_some(Dim::Memory);
    let scalars = r
        .scalars
        .iter()
        .filter(|&(_, v)| v >= MIN_RESOURCE)
        .map(|(n, _)| Dim::Scalar(n));
    cpu.into_iter().chain(memory).chain(scalars)
}

/// The strategy score `Score` (§8.3) of a request on a node.
pub fn strategy_score(
    config: &StrategyConfig,
    pod: &PodStrategy,
    request: &Resource,
    allocatable: &Resource,
    used: &Resource,
) -> f64 {
    if *pod == PodStrategy::Invalid {
        return 0.0;
    }
    let mut score = 0.0;
    let mut weight_sum: i64 = 0;
    for dim in requested_dims(request) {
        let name = dim.name();
        let (kind, weight) = match pod {
            PodStrategy::Own { kind, weights } => match weights.get(name) {
                Some(&w) => (*kind, w),
                None => continue,
            },
            _ => match config.lookup(name) {
                Some(s) => (Some(s.kind), s.weight),
                None => continue,
            },
        };
        let (req, cap, used) = (dim.of(request), dim.of(allocatable), dim.of(used));
        let s = match kind {
            Some(ScoringType::MostAllocated) => most_requested_score(req, used, cap, weight),
            Some(ScoringType::LeastAllocated) => least_requested_score(req, used, cap, weight),
            None => Some(0.0),
        };
        let Some(s) = s else {
            tracing::trace!(
                plugin = NAME,
                resource = name,
                req,
                used,
                cap,
                "not enough room, strategy score 0"
            );
            return 0.0;
        };
        score += s;
        weight_sum = weight_sum.wrapping_add(weight);
    }
    if weight_sum > 0 {
        score /= weight_sum as f64;
    }
    score * MAX_NODE_SCORE * config.weight as f64
}

/// The plugin instance of one session.
pub struct ResourceStrategyFit {
    pub strategy: StrategyConfig,
    pub sra: SraWeights,
    /// `None` unless `proportional.enable`.
    pub proportional: Option<Proportional>,
    /// The strategies of the session's pods that choose their own (read once per session, not
    /// at every node scored); a pod not here uses the configured table.
    pod_strategies: HashMap<TaskId, PodStrategy>,
}

/// The strategy of a pod without the scoring-type annotation.
static CONFIGURED: PodStrategy = PodStrategy::Configured;

impl ResourceStrategyFit {
    pub fn from_arguments(args: &Arguments) -> Self {
        Self::read(args, &mut Vec::new())
    }

    fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Self {
        Self {
            strategy: StrategyConfig::read(args, warnings),
            sra: SraWeights::read(args.get(SRA_KEY), warnings),
            proportional: Proportional::read(args.get(PROPORTIONAL_KEY), warnings),
            pod_strategies: HashMap::new(),
        }
    }

    /// §8.2: node order unless both the strategy and the SRA weights are ≤ 0.
    fn scores(&self) -> bool {
        self.strategy.weight > 0 || self.sra.weight > 0
    }
}

/// The problems of the arguments, for the configuration parser (reported once per
/// configuration load rather than at every session).
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    ResourceStrategyFit::read(args, &mut warnings);
    warnings
}

/// Builds the plugin from its arguments.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(ResourceStrategyFit::from_arguments(args))
}

impl Plugin for ResourceStrategyFit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        if self.strategy.weight > 0 {
            self.pod_strategies = ssn
                .tasks()
                .iter()
                .enumerate()
                .filter_map(|(i, t)| match PodStrategy::of(&t.spec.pod) {
                    PodStrategy::Configured => None,
                    own => Some((TaskId::from_index(i), own)),
                })
                .collect();
        }
        if self.sra.weight > 0 && tracing::enabled!(tracing::Level::DEBUG) {
            let missing: Vec<&str> = self
                .sra
                .resources
                .keys()
                .filter(|name| !ssn.nodes().iter().any(|n| n.spec.capacity.get(name) > 0.0))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                tracing::debug!(
                    plugin = NAME,
                    resources = ?missing,
                    "sra resources not offered by any node"
                );
            }
        }
        if !self.scores() {
            tracing::debug!(
                plugin = NAME,
                "strategy and sra weights are both zero, node order not registered"
            );
        }
    }

    fn extension_points(&self) -> ExtensionPoints {
        let mut points = ExtensionPoints::NONE;
        if self.proportional.is_some() {
            points = points | ExtensionPoints::PREDICATE;
        }
        if self.scores() {
            points = points | ExtensionPoints::NODE_ORDER;
        }
        points
    }

    /// The proportional check adds the predicate, a scoring strategy the node order.
    fn possible_extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREDICATE | ExtensionPoints::NODE_ORDER
    }

    fn predicate(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<(), FitError> {
        let Some(proportional) = &self.proportional else {
            return Ok(());
        };
        proportional
            .check(ssn.task(task).resreq(), &ssn.node(node).idle)
            .map_err(|resource| {
                FitError::new(FitStatus::new(
                    StatusCode::UnschedulableAndUnresolvable,
                    format!("proportional of resource {resource} check failed"),
                    NAME,
                ))
            })
    }

    fn node_order(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<f64, String> {
        let (t, n) = (ssn.task(task), ssn.node(node));
        let mut score = 0.0;
        if self.strategy.weight > 0 {
            let pod = self.pod_strategies.get(&task).unwrap_or(&CONFIGURED);
            score += strategy_score(&self.strategy, pod, t.resreq(), n.allocatable(), &n.used);
        }
        if self.sra.weight > 0 {
            score += sra::sra_score(t.resreq(), n.allocatable(), &self.sra);
        }
        Ok(score)
    }
}
