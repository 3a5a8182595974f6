//! `binpack`: prefer the nodes that will be fullest once the task is placed (best fit), so that
//! scarce resources stay in large unfragmented pieces (spec/plugins-core.md §8).
//!
//! Arguments (§8.1): `binpack.weight` (overall multiplier, default 1; 0 registers nothing),
//! `binpack.cpu` / `binpack.memory` (default 1, a negative value means 1),
//! `binpack.resources` (a comma-separated string of extra resource names) and
//! `binpack.resources.<name>` (default 1, a negative value means 1). A negative `binpack.weight`
//! is accepted, as in Volcano (the plugin then spreads). Every weight beyond ±[`MAX_WEIGHT`](engine::conf::MAX_WEIGHT) is
//! clamped to it. [`check_arguments`] reports all of these when the configuration is parsed.
//!
//! Score (§8.3), per task and node, over the dimensions the task requests that carry a weight:
//! `Σ (request + used) × w / allocatable  /  Σ w  × 100 × binpack.weight`. A requested dimension
//! the node does not offer scores 0 but still counts in `Σ w`; a dimension that would overflow
//! makes the whole node score 0.

use engine::conf::{ArgWarning, Arguments};
use engine::framework::{ExtensionPoints, Plugin, SessionState};
use engine::model::resource::{CPU, MEMORY, MIN_RESOURCE};
use engine::model::{NodeId, Resource, ResourceName, TaskId};

/// Registered plugin name.
pub const NAME: &str = "binpack";

const WEIGHT_KEY: &str = "binpack.weight";

/// Kubernetes' `MaxNodeScore`.
const MAX_NODE_SCORE: f64 = 100.0;

/// The weight table of §8.1.
#[derive(Clone, Debug, PartialEq)]
pub struct BinpackWeights {
    /// `binpack.weight`: multiplies the final score.
    pub weight: i64,
    pub cpu: i64,
    pub memory: i64,
    /// Extra weighted resources (never cpu or memory, which the two fields above own).
    pub scalars: Vec<(ResourceName, i64)>,
}

impl Default for BinpackWeights {
    fn default() -> Self {
        Self {
            weight: 1,
            cpu: 1,
            memory: 1,
            scalars: Vec::new(),
        }
    }
}

/// The problems [`BinpackWeights::read`] finds, for the configuration parser.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    BinpackWeights::read(args, &mut warnings);
    warnings
}

/// A resource weight: negative means 1 (Volcano's rule), reported.
pub(crate) fn read_resource_weight(
    args: &Arguments,
    key: &str,
    warnings: &mut Vec<ArgWarning>,
) -> i64 {
    let mut weight = 1;
    if args.get_weight(key, &mut weight, warnings) && weight < 0 {
        warnings.push(ArgWarning::new(
            key,
            format!("negative weight {weight}; 1 is used, as in Volcano"),
        ));
        weight = 1;
    }
    weight
}

/// The per-resource weights under a key prefix (`<prefix>cpu`, `<prefix>memory`,
/// `<prefix>resources` listing extra names, `<prefix>resources.<name>`): cpu, memory and the
/// extra resources (never cpu or memory). Shared with `network-topology-aware`, which reads
/// the same keys under `hypernode.binpack.`.
pub(crate) fn read_resource_weights(
    args: &Arguments,
    prefix: &str,
    warnings: &mut Vec<ArgWarning>,
) -> (i64, i64, Vec<(ResourceName, i64)>) {
    let cpu = read_resource_weight(args, &format!("{prefix}cpu"), warnings);
    let memory = read_resource_weight(args, &format!("{prefix}memory"), warnings);
    let mut scalars: Vec<(ResourceName, i64)> = Vec::new();
    // Volcano reads the list with a plain type assertion: anything but a string is "no list".
    let list = args
        .get(&format!("{prefix}resources"))
        .and_then(|v| v.as_str())
        .unwrap_or("");
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let weight = read_resource_weight(args, &format!("{prefix}resources.{name}"), warnings);
        // cpu and memory keep the weights of their own keys.
        if name == CPU || name == MEMORY {
            continue;
        }
        let rn = ResourceName::new(name);
        match scalars.iter_mut().find(|(n, _)| *n == rn) {
            Some(entry) => entry.1 = weight,
            None => scalars.push((rn, weight)),
        }
    }
    (cpu, memory, scalars)
}

impl BinpackWeights {
    /// Reads the arguments; a value of the wrong type keeps the default.
    pub fn from_arguments(args: &Arguments) -> Self {
        Self::read(args, &mut Vec::new())
    }

    /// Reads the arguments, adding what is wrong with them to `warnings`.
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Self {
        let mut w = Self::default();
        if args.get_weight(WEIGHT_KEY, &mut w.weight, warnings) && w.weight < 0 {
            warnings.push(ArgWarning::new(
                WEIGHT_KEY,
                format!(
                    "negative weight {}: binpack then prefers the emptiest nodes (accepted, as \
                     in Volcano)",
                    w.weight
                ),
            ));
        }
        (w.cpu, w.memory, w.scalars) = read_resource_weights(args, "binpack.", warnings);
        w
    }

    fn scalar_weight(&self, name: ResourceName) -> Option<i64> {
        self.scalars
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, w)| w)
    }

    /// Names of weighted resources that no node offers (reported once at open, for operators).
    fn unoffered<'a>(
        &self,
        nodes: impl Iterator<Item = &'a Resource> + Clone,
    ) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if !nodes.clone().any(|a| a.milli_cpu > 0.0) {
            missing.push(CPU);
        }
        if !nodes.clone().any(|a| a.memory > 0.0) {
            missing.push(MEMORY);
        }
        for &(name, _) in &self.scalars {
            if !nodes.clone().any(|a| a.scalar(name) > 0.0) {
                missing.push(name.as_str());
            }
        }
        missing
    }
}

/// `ResourceBinPackingScore`: one dimension's weighted fill ratio; `None` when the task would
/// overflow the node in this dimension.
pub fn resource_score(request: f64, allocatable: f64, used: f64, weight: i64) -> Option<f64> {
    if allocatable == 0.0 || weight == 0 {
        return Some(0.0);
    }
    let used_finally = request + used;
    if used_finally > allocatable {
        return None;
    }
    Some(used_finally * weight as f64 / allocatable)
}

/// `BinPackingScore` (§8.3) of a request on a node with the given allocatable and used
/// resources.
pub fn binpack_score(
    weights: &BinpackWeights,
    request: &Resource,
    allocatable: &Resource,
    used: &Resource,
) -> f64 {
    let mut score = 0.0;
    let mut weight_sum: i64 = 0;
    // Only dimensions the task requests (at least the resource threshold) and that are
    // weighted take part; `pods` is weighted only when listed explicitly.
    let cpu = (request.milli_cpu >= MIN_RESOURCE).then_some((
        request.milli_cpu,
        allocatable.milli_cpu,
        used.milli_cpu,
        weights.cpu,
    ));
    let memory = (request.memory >= MIN_RESOURCE).then_some((
        request.memory,
        allocatable.memory,
        used.memory,
        weights.memory,
    ));
    let scalars = request
        .scalars
        .iter()
        .filter(|&(_, v)| v >= MIN_RESOURCE)
        .filter_map(|(name, v)| {
            let w = weights.scalar_weight(name)?;
            Some((v, allocatable.scalar(name), used.scalar(name), w))
        });
    for (req, cap, used, w) in cpu.into_iter().chain(memory).chain(scalars) {
        let Some(s) = resource_score(req, cap, used, w) else {
            return 0.0;
        };
        score += s;
        // Each weight is at most MAX_WEIGHT; saturating guards a sum of very many anyway.
        weight_sum = weight_sum.saturating_add(w);
    }
    if weight_sum > 0 {
        score /= weight_sum as f64;
    }
    score * MAX_NODE_SCORE * weights.weight as f64
}

/// The plugin instance of one session.
pub struct Binpack {
    weights: BinpackWeights,
}

/// Builds the plugin from its arguments.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(Binpack {
        weights: BinpackWeights::from_arguments(args),
    })
}

impl Plugin for Binpack {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        if tracing::enabled!(tracing::Level::DEBUG) {
            let missing = self
                .weights
                .unoffered(ssn.nodes().iter().map(|n| n.allocatable()));
            if !missing.is_empty() {
                tracing::debug!(plugin = NAME, resources = ?missing, "weighted resources not offered by any node");
            }
        }
        if self.weights.weight == 0 {
            tracing::info!(
                plugin = NAME,
                "binpack weight is zero, node order function not registered"
            );
        }
    }

    fn extension_points(&self) -> ExtensionPoints {
        if self.weights.weight == 0 {
            ExtensionPoints::NONE
        } else {
            ExtensionPoints::NODE_ORDER
        }
    }

    /// The score reads the task's request (its class's) and the node's allocatable and used
    /// resources, nothing else: node-local for every task. Without it the search memo was off
    /// for every task under Volcano's chart configuration, which enables binpack.
    fn search_is_node_local(&self, _ssn: &SessionState, _task: TaskId) -> bool {
        true
    }

    /// Placing a task changes only its own node's used resources, so only that node's scores.
    fn placement_is_node_local(&self, _ssn: &SessionState, _task: TaskId) -> bool {
        true
    }

    fn node_order(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<f64, String> {
        let n = ssn.node(node);
        Ok(binpack_score(
            &self.weights,
            ssn.task(task).resreq(),
            n.allocatable(),
            &n.used,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::conf::{ArgValue, MAX_WEIGHT};

    const CPU_KEY: &str = "binpack.cpu";
    const MEMORY_KEY: &str = "binpack.memory";
    const RESOURCES_KEY: &str = "binpack.resources";

    const GI: f64 = 1024.0 * 1024.0 * 1024.0;

    fn res(cpu: f64, mem: f64, scalars: &[(&str, f64)]) -> Resource {
        Resource::from_pairs(cpu, mem, scalars)
    }

    /// A task request as Volcano builds it: always `pods: 1`.
    fn task(cpu: f64, mem: f64, scalars: &[(&str, f64)]) -> Resource {
        let mut r = res(cpu, mem, scalars);
        r.add_scalar(ResourceName::PODS, 1.0);
        r
    }

    fn args(pairs: &[(&str, ArgValue)]) -> Arguments {
        Arguments::from_pairs(pairs)
    }

    #[test]
    fn resource_score_formula() {
        // Seed 002 `ResourceBinPackingScore`: (requested + used) × weight / capacity.
        assert_eq!(resource_score(1000.0, 4000.0, 2000.0, 1), Some(0.75));
        assert_eq!(resource_score(2000.0, 8000.0, 2000.0, 2), Some(1.0));
        // Capacity 0 or weight 0 scores 0 without error.
        assert_eq!(resource_score(1000.0, 0.0, 0.0, 3), Some(0.0));
        assert_eq!(resource_score(1000.0, 4000.0, 0.0, 0), Some(0.0));
        // Exactly full is fine, one more unit is "not enough".
        assert_eq!(resource_score(2000.0, 4000.0, 2000.0, 1), Some(1.0));
        assert_eq!(resource_score(2001.0, 4000.0, 2000.0, 1), None);
    }

    #[test]
    fn b1_defaults_and_weight() {
        let node = res(4000.0, 8.0 * GI, &[("pods", 110.0)]);
        let used = res(2000.0, 4.0 * GI, &[("pods", 3.0)]);
        let t = task(1000.0, 2.0 * GI, &[]);
        let w = BinpackWeights::from_arguments(&Arguments::new());
        assert_eq!(binpack_score(&w, &t, &node, &used), 75.0);
        let w = BinpackWeights::from_arguments(&args(&[(WEIGHT_KEY, ArgValue::Int(10))]));
        assert_eq!(binpack_score(&w, &t, &node, &used), 750.0);
    }

    fn gpu_weights() -> BinpackWeights {
        BinpackWeights::from_arguments(&args(&[
            (RESOURCES_KEY, ArgValue::Str("nvidia.com/gpu".into())),
            ("binpack.resources.nvidia.com/gpu", ArgValue::Int(2)),
        ]))
    }

    #[test]
    fn b2_weighted_gpu() {
        let node = res(
            4000.0,
            8.0 * GI,
            &[("nvidia.com/gpu", 8000.0), ("pods", 110.0)],
        );
        let used = res(2000.0, 4.0 * GI, &[("nvidia.com/gpu", 2000.0)]);
        let t = task(1000.0, 2.0 * GI, &[("nvidia.com/gpu", 2000.0)]);
        assert_eq!(binpack_score(&gpu_weights(), &t, &node, &used), 62.5);
    }

    #[test]
    fn b3_node_without_gpu_dilutes() {
        let node = res(4000.0, 8.0 * GI, &[("pods", 110.0)]);
        let used = res(2000.0, 4.0 * GI, &[]);
        let t = task(1000.0, 2.0 * GI, &[("nvidia.com/gpu", 2000.0)]);
        assert_eq!(binpack_score(&gpu_weights(), &t, &node, &used), 37.5);
    }

    #[test]
    fn b4_overflow_zeroes_the_node() {
        let node = res(4000.0, 8.0 * GI, &[]);
        let used = res(3500.0, 0.0, &[]);
        let t = task(1000.0, 2.0 * GI, &[]);
        assert_eq!(
            binpack_score(&BinpackWeights::default(), &t, &node, &used),
            0.0
        );
    }

    #[test]
    fn b5_best_effort_and_argument_validation() {
        let node = res(4000.0, 8.0 * GI, &[("pods", 110.0)]);
        let used = res(2000.0, 4.0 * GI, &[("pods", 5.0)]);
        // Only `pods` is requested and it is not weighted: weightSum 0, score 0.
        let best_effort = task(0.0, 0.0, &[]);
        assert_eq!(
            binpack_score(&BinpackWeights::default(), &best_effort, &node, &used),
            0.0
        );

        let w = BinpackWeights::from_arguments(&args(&[(CPU_KEY, ArgValue::Int(-3))]));
        assert_eq!(w.cpu, 1);
        let w = BinpackWeights::from_arguments(&args(&[
            (MEMORY_KEY, ArgValue::Int(-1)),
            (CPU_KEY, ArgValue::Int(0)),
        ]));
        assert_eq!((w.cpu, w.memory), (0, 1));
        // A float is not an integer: ignored, default kept.
        let w = BinpackWeights::from_arguments(&args(&[(WEIGHT_KEY, ArgValue::Float(2.0))]));
        assert_eq!(w.weight, 1);
    }

    /// `int64`-max weights are clamped: the weight sum cannot overflow (a debug-build panic
    /// before), the score stays finite and ordered; negative weights are reported.
    #[test]
    fn extreme_and_negative_weights() {
        let node = res(4000.0, 8.0 * GI, &[("pods", 110.0)]);
        let used = res(2000.0, 4.0 * GI, &[("pods", 3.0)]);
        let t = task(1000.0, 2.0 * GI, &[]);
        let max = ArgValue::Int(i64::MAX);
        let extreme = args(&[
            (WEIGHT_KEY, max.clone()),
            (CPU_KEY, max.clone()),
            (MEMORY_KEY, max),
        ]);
        let mut warnings = Vec::new();
        let w = BinpackWeights::read(&extreme, &mut warnings);
        assert_eq!(
            (w.weight, w.cpu, w.memory),
            (MAX_WEIGHT, MAX_WEIGHT, MAX_WEIGHT)
        );
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        // Both dimensions at 0.75 of the node: the same 75 as with unit weights, × MAX_WEIGHT.
        assert_eq!(
            binpack_score(&w, &t, &node, &used),
            75.0 * MAX_WEIGHT as f64
        );

        let negative = args(&[
            (WEIGHT_KEY, ArgValue::Int(-5)),
            (CPU_KEY, ArgValue::Int(-3)),
        ]);
        let warnings = check_arguments(&negative);
        let keys: Vec<&str> = warnings.iter().map(|w| w.key.as_str()).collect();
        assert_eq!(keys, [WEIGHT_KEY, CPU_KEY]);
        assert!(warnings[0].message.contains("accepted, as in Volcano"));
        assert!(warnings[1].message.contains("1 is used"));
        // Volcano's decision stands: a negative overall weight negates the score.
        let w = BinpackWeights::from_arguments(&negative);
        assert_eq!(binpack_score(&w, &t, &node, &used), -375.0);
    }

    #[test]
    fn weight_zero_registers_nothing() {
        let p = new(&args(&[(WEIGHT_KEY, ArgValue::Int(0))]));
        assert_eq!(p.extension_points(), ExtensionPoints::NONE);
        let p = new(&Arguments::new());
        assert!(p.extension_points().contains(ExtensionPoints::NODE_ORDER));
    }

    #[test]
    fn resource_list_parsing() {
        let w = BinpackWeights::from_arguments(&args(&[
            (
                RESOURCES_KEY,
                ArgValue::Str(" nvidia.com/gpu , ,example.com/foo,cpu".into()),
            ),
            ("binpack.resources.nvidia.com/gpu", ArgValue::Int(-2)),
            ("binpack.resources.example.com/foo", ArgValue::Int(3)),
            ("binpack.resources.cpu", ArgValue::Int(7)),
            (CPU_KEY, ArgValue::Int(5)),
        ]));
        // `binpack.cpu` wins over a listed cpu; a negative listed weight means 1.
        assert_eq!(w.cpu, 5);
        assert_eq!(
            w.scalar_weight(ResourceName::new("nvidia.com/gpu")),
            Some(1)
        );
        assert_eq!(
            w.scalar_weight(ResourceName::new("example.com/foo")),
            Some(3)
        );
        assert_eq!(w.scalars.len(), 2);
        // A non-string list is treated as empty.
        let w = BinpackWeights::from_arguments(&args(&[(RESOURCES_KEY, ArgValue::Int(1))]));
        assert!(w.scalars.is_empty());
    }

    #[test]
    fn weighted_pods_and_zero_weight_dimension() {
        let w = BinpackWeights::from_arguments(&args(&[
            (RESOURCES_KEY, ArgValue::Str("pods".into())),
            (MEMORY_KEY, ArgValue::Int(0)),
        ]));
        let node = res(4000.0, 8.0 * GI, &[("pods", 10.0)]);
        let used = res(1000.0, 4.0 * GI, &[("pods", 4.0)]);
        let t = task(1000.0, 2.0 * GI, &[]);
        // cpu 2000/4000 × 1, memory weight 0 contributes 0 and 0 weight, pods 5/10 × 1.
        assert_eq!(
            binpack_score(&w, &t, &node, &used),
            (0.5 + 0.5) / 2.0 * 100.0
        );
    }

    #[test]
    fn unoffered_resources() {
        let w = gpu_weights();
        let nodes = [res(4000.0, 0.0, &[])];
        assert_eq!(w.unoffered(nodes.iter()), vec!["memory", "nvidia.com/gpu"]);
    }

    #[test]
    fn node_order_reads_the_session_node() {
        use crate::testutil::{StateLookup, TestCluster, allocate, pod, pod_group};
        use serde_json::json;

        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "4", "memory": "8Gi", "pods": "110"}));
        c.pod(pod(
            "ns",
            "old",
            None,
            "Running",
            Some("n1"),
            json!({"cpu": "2", "memory": "4Gi"}),
        ));
        c.pod_group(pod_group("ns", "pg", 1));
        c.pod(pod(
            "ns",
            "placed",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1", "memory": "2Gi"}),
        ));
        c.pod(pod(
            "ns",
            "new",
            None,
            "Pending",
            None,
            json!({"cpu": "1", "memory": "2Gi"}),
        ));
        let mut ssn = c.session(&[&[NAME]]);
        let (t, n) = (ssn.state.task_by_key("ns/new"), ssn.state.node_by_key("n1"));
        assert!(ssn.has_node_order());
        assert_eq!(ssn.node_order(t, n), Ok(75.0));
        // An allocation earlier in the session fills the node further.
        allocate(&mut ssn, "ns/placed", "n1");
        assert_eq!(ssn.node_order(t, n), Ok(100.0));
    }
}
