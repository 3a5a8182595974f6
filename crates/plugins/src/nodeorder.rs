//! `nodeorder`: node scoring by the upstream Kubernetes score plugins, each multiplied by a
//! configurable weight (spec/plugins-core.md §7).
//!
//! Arguments (§7.1, all integers; a float or a string is ignored with a warning, a weight of 0
//! turns the sub-plugin off, a negative weight is accepted and subtracts, as in Volcano, with a
//! warning; a weight beyond ±[`MAX_WEIGHT`](engine::conf::MAX_WEIGHT) is clamped to it, since Volcano's `score × weight`
//! wraps around in 64 bits). The warnings come from [`check_arguments`] when the configuration
//! is parsed, not at every session:
//!
//! | key | default | sub-plugin |
//! |---|---|---|
//! | `leastrequested.weight` | 1 | NodeResourcesFit, LeastAllocated, cpu 50 / memory 50 |
//! | `mostrequested.weight` | 0 | NodeResourcesFit, MostAllocated, cpu 1 / memory 1 |
//! | `balancedresource.weight` | 1 | NodeResourcesBalancedAllocation, cpu / memory / `nvidia.com/gpu` |
//! | `nodeaffinity.weight` | 2 | NodeAffinity, preferred terms |
//! | `podaffinity.weight` | 2 | InterPodAffinity, preferred terms |
//! | `tainttoleration.weight` | 3 | TaintToleration, `PreferNoSchedule` taints |
//! | `imagelocality.weight` | 1 | ImageLocality (the only per-node scorer) |
//! | `podtopologyspread.weight` | 2 | PodTopologySpread, `ScheduleAnyway` constraints |
//!
//! `NodeOrderFn` is ImageLocality's raw score × weight. `BatchNodeOrderFn` runs every other
//! enabled sub-plugin with the batch procedure of §7.4: PreScore (Skip ⇒ no contribution),
//! Score per candidate, NormalizeScore, a range check to `[0, 100]` (outside ⇒ the whole batch
//! fails), then × weight, summed per node. Volcano walks the sub-plugins in Go map order; here the
//! order is the table's, which only matters for which error is reported first.
//!
//! Scores see the pods Volcano's shared node infos hold (§6.8, [`PodView`]): the tasks on each
//! node at open plus this session's placements, minus its evictions. The per-node request sums
//! the resource scores need ("non-zero" requests for Least/MostAllocated, actual requests for
//! BalancedAllocation) are kept per node: built from the view the first time the node is scored
//! (a session that scores few nodes pays for few), then kept current by the event handlers, so
//! a score never walks a node's pods again. (Volcano's nodeorder relies on the `predicates` handler to
//! update the shared node infos; here the plugin keeps its own, so the scores are the same
//! whether or not `predicates` is configured.)
//!
//! PodTopologySpread's cluster-level system default constraints are not derived (the model has
//! no Services or ReplicaSets to derive them from), so a pod without explicit `ScheduleAnyway`
//! constraints gets no spread score. ImageLocality counts the nodes holding an image over the
//! session's nodes and takes the image size each node reports.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use engine::conf::{ArgWarning, Arguments};
use engine::framework::{ExtensionPoints, Plugin, SessionState};
use engine::model::{NodeId, Resource, ResourceName, TaskId};
use k8s_openapi::api::core::v1::{Node, Pod};

use crate::k8s::labels::PlacedPod;
use crate::k8s::node_affinity::{PreferredNodeAffinity, RequiredNodeAffinity};
use crate::k8s::pod_affinity::preferred_affinity_scores;
use crate::k8s::resources::{
    MAX_NODE_SCORE, balanced_allocation_score, least_allocated_score, most_allocated_score,
    non_zero_request, normalize_max,
};
use crate::k8s::taints::count_intolerable_prefer_no_schedule;
use crate::k8s::topology_spread::spread_scores;
use crate::predicates::{
    PodView, all_nodes, has_preferred_pod_affinity_terms, has_spread_constraint, namespace_labels,
};

/// Registered plugin name.
pub const NAME: &str = "nodeorder";

const LEAST_REQUESTED_WEIGHT: &str = "leastrequested.weight";
const MOST_REQUESTED_WEIGHT: &str = "mostrequested.weight";
const BALANCED_RESOURCE_WEIGHT: &str = "balancedresource.weight";
const NODE_AFFINITY_WEIGHT: &str = "nodeaffinity.weight";
const POD_AFFINITY_WEIGHT: &str = "podaffinity.weight";
const TAINT_TOLERATION_WEIGHT: &str = "tainttoleration.weight";
const IMAGE_LOCALITY_WEIGHT: &str = "imagelocality.weight";
const POD_TOPOLOGY_SPREAD_WEIGHT: &str = "podtopologyspread.weight";

/// The three node-resource sub-plugins.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ResourceStrategy {
    LeastAllocated,
    MostAllocated,
    BalancedAllocation,
}

impl ResourceStrategy {
    /// The name Volcano keys the sub-plugin by (it appears in error messages).
    fn name(self) -> &'static str {
        match self {
            ResourceStrategy::LeastAllocated => "NodeResourcesFit_LeastAllocated",
            ResourceStrategy::MostAllocated => "NodeResourcesFit_MostAllocated",
            ResourceStrategy::BalancedAllocation => "NodeResourcesBalancedAllocation",
        }
    }
}

/// Other sub-plugin names as Volcano keys them.
const NODE_AFFINITY: &str = "NodeAffinity";
const INTER_POD_AFFINITY: &str = "InterPodAffinity";
const TAINT_TOLERATION: &str = "TaintToleration";
const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";

/// Resource weights of the two NodeResourcesFit strategies (cpu, memory).
const LEAST_ALLOCATED_WEIGHTS: [i64; 2] = [50, 50];
const MOST_ALLOCATED_WEIGHTS: [i64; 2] = [1, 1];

/// The extended resource BalancedAllocation weighs besides cpu and memory.
const GPU: &str = "nvidia.com/gpu";
const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";

const MIB: i64 = 1024 * 1024;
/// ImageLocality: a summed image score below this counts as nothing.
const IMAGE_MIN_THRESHOLD: i64 = 23 * MIB;
/// ImageLocality: the summed image score saturates at this much per container.
const IMAGE_MAX_CONTAINER_THRESHOLD: i64 = 1000 * MIB;

/// The weights of §7.1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeOrderWeights {
    pub least_requested: i64,
    pub most_requested: i64,
    pub balanced_resource: i64,
    pub node_affinity: i64,
    pub pod_affinity: i64,
    pub taint_toleration: i64,
    pub image_locality: i64,
    pub pod_topology_spread: i64,
}

impl Default for NodeOrderWeights {
    fn default() -> Self {
        Self {
            least_requested: 1,
            most_requested: 0,
            balanced_resource: 1,
            node_affinity: 2,
            pod_affinity: 2,
            taint_toleration: 3,
            image_locality: 1,
            pod_topology_spread: 2,
        }
    }
}

/// The problems [`NodeOrderWeights::read`] finds, for the configuration parser.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    NodeOrderWeights::read(args, &mut warnings);
    warnings
}

impl NodeOrderWeights {
    pub fn from_arguments(args: &Arguments) -> Self {
        Self::read(args, &mut Vec::new())
    }

    /// Reads the weights, adding what is wrong with them to `warnings`.
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Self {
        let mut w = Self::default();
        for (key, dst) in [
            (NODE_AFFINITY_WEIGHT, &mut w.node_affinity),
            (POD_AFFINITY_WEIGHT, &mut w.pod_affinity),
            (LEAST_REQUESTED_WEIGHT, &mut w.least_requested),
            (MOST_REQUESTED_WEIGHT, &mut w.most_requested),
            (BALANCED_RESOURCE_WEIGHT, &mut w.balanced_resource),
            (TAINT_TOLERATION_WEIGHT, &mut w.taint_toleration),
            (IMAGE_LOCALITY_WEIGHT, &mut w.image_locality),
            (POD_TOPOLOGY_SPREAD_WEIGHT, &mut w.pod_topology_spread),
        ] {
            if args.get_weight(key, dst, warnings) && *dst < 0 {
                warnings.push(ArgWarning::new(
                    key,
                    format!(
                        "negative weight {dst}: this score counts against the nodes it favours \
                         (accepted, as in Volcano)"
                    ),
                ));
            }
        }
        w
    }

    fn any_batch(&self) -> bool {
        [
            self.least_requested,
            self.most_requested,
            self.balanced_resource,
            self.node_affinity,
            self.pod_affinity,
            self.taint_toleration,
            self.pod_topology_spread,
        ]
        .iter()
        .any(|&w| w != 0)
    }
}

/// Requests of one pod in the units the resource scores use (millicores, bytes, GPU in the
/// engine's milli-units; the scores only use ratios, so the GPU unit cancels out).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct PodRequests {
    /// Upstream `NonZeroRequested`: 100m / 200 MiB for containers that declare none.
    non_zero_cpu: i64,
    non_zero_memory: i64,
    cpu: i64,
    memory: i64,
    gpu: i64,
}

impl PodRequests {
    fn of(ssn: &SessionState, task: TaskId, gpu: ResourceName) -> Self {
        let t = ssn.task(task);
        let (non_zero_cpu, non_zero_memory) = non_zero_request(&t.spec.pod);
        let req = t.resreq();
        // Requests are whole millicores / bytes / milli-units, so the conversion is exact.
        Self {
            non_zero_cpu,
            non_zero_memory,
            cpu: req.milli_cpu as i64,
            memory: req.memory as i64,
            gpu: req.scalar(gpu) as i64,
        }
    }
}

/// What the resource scores need of one node: its allocatable (as the node object states it,
/// like upstream node infos) and the sums of its pods' requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct NodeResources {
    allocatable_cpu: i64,
    allocatable_memory: i64,
    allocatable_gpu: i64,
    requested: PodRequests,
}

impl NodeResources {
    fn new(node: &Node, gpu: ResourceName) -> Self {
        let allocatable = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .map(Resource::from_list)
            .unwrap_or_default();
        Self {
            allocatable_cpu: allocatable.milli_cpu as i64,
            allocatable_memory: allocatable.memory as i64,
            allocatable_gpu: allocatable.scalar(gpu) as i64,
            requested: PodRequests::default(),
        }
    }

    fn apply(&mut self, pod: PodRequests, sign: i64) {
        let r = &mut self.requested;
        r.non_zero_cpu = r.non_zero_cpu.saturating_add(sign * pod.non_zero_cpu);
        r.non_zero_memory = r.non_zero_memory.saturating_add(sign * pod.non_zero_memory);
        r.cpu = r.cpu.saturating_add(sign * pod.cpu);
        r.memory = r.memory.saturating_add(sign * pod.memory);
        r.gpu = r.gpu.saturating_add(sign * pod.gpu);
    }

    /// (requested with the pod, allocatable) for cpu and memory, non-zero requests.
    fn fit_pairs(&self, pod: &PodRequests) -> [(i64, i64); 2] {
        [
            (
                self.requested.non_zero_cpu.saturating_add(pod.non_zero_cpu),
                self.allocatable_cpu,
            ),
            (
                self.requested
                    .non_zero_memory
                    .saturating_add(pod.non_zero_memory),
                self.allocatable_memory,
            ),
        ]
    }

    /// BalancedAllocation fractions: cpu, memory, and GPU only when the pod asks for one;
    /// resources the node does not offer are left out.
    fn balanced_fractions(&self, pod: &PodRequests) -> Vec<f64> {
        let candidates = [
            (self.requested.cpu, pod.cpu, self.allocatable_cpu, true),
            (
                self.requested.memory,
                pod.memory,
                self.allocatable_memory,
                true,
            ),
            (
                self.requested.gpu,
                pod.gpu,
                self.allocatable_gpu,
                pod.gpu != 0,
            ),
        ];
        candidates
            .iter()
            .filter(|&&(_, _, allocatable, wanted)| wanted && allocatable != 0)
            .map(|&(node, pod, allocatable, _)| {
                node.saturating_add(pod) as f64 / allocatable as f64
            })
            .collect()
    }
}

/// ImageLocality's cluster-wide view of one image name.
#[derive(Debug)]
struct ImageSpread {
    /// Nodes listing the image.
    nodes_with_image: usize,
    /// The image's size on each node (by session node index), `None` where it is absent.
    size_on_node: Vec<Option<i64>>,
}

impl ImageSpread {
    fn scan(ssn: &SessionState, name: &str) -> Self {
        let size_on_node: Vec<Option<i64>> = ssn
            .nodes
            .iter()
            .map(|node| {
                let images = node
                    .spec
                    .node
                    .status
                    .as_ref()
                    .and_then(|s| s.images.as_ref())?;
                // Upstream keys a node's image states by every name, the first listing winning.
                images
                    .iter()
                    .find(|image| image.names.iter().flatten().any(|listed| listed == name))
                    .map(|image| image.size_bytes.unwrap_or(0))
            })
            .collect();
        Self {
            nodes_with_image: size_on_node.iter().filter(|s| s.is_some()).count(),
            size_on_node,
        }
    }
}

/// Upstream `normalizedImageName`: an image without a tag is `:latest`.
fn normalized_image_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name.rfind(':') <= name.rfind('/') {
        std::borrow::Cow::Owned(format!("{name}:latest"))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// Upstream ImageLocality `calculatePriority`: clamp the summed image score to
/// `[23 MiB, 1000 MiB × containers]` and map it linearly onto `0..=100`.
fn image_score(sum: i64, containers: usize) -> i64 {
    let max_threshold =
        IMAGE_MAX_CONTAINER_THRESHOLD.saturating_mul(i64::try_from(containers).unwrap_or(i64::MAX));
    let clamped = if sum < IMAGE_MIN_THRESHOLD {
        IMAGE_MIN_THRESHOLD
    } else if sum > max_threshold {
        max_threshold
    } else {
        sum
    };
    let range = i128::from(max_threshold) - i128::from(IMAGE_MIN_THRESHOLD);
    if range == 0 {
        return 0;
    }
    let score = i128::from(MAX_NODE_SCORE)
        * (i128::from(clamped) - i128::from(IMAGE_MIN_THRESHOLD))
        / range;
    i64::try_from(score).unwrap_or(0)
}

/// The plugin instance of one session.
pub struct NodeOrder {
    weights: NodeOrderWeights,
    gpu: ResourceName,
    view: PodView,
    /// Per node, built on first use (see [`NodeOrder::resources`]).
    nodes: Vec<OnceLock<NodeResources>>,
    /// ImageLocality's per-image scans, filled the first time a pod asks for an image.
    images: RwLock<HashMap<String, Arc<ImageSpread>>>,
}

/// Builds the plugin from its arguments.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(NodeOrder::from_arguments(args))
}

/// Checks a normalised sub-plugin score list and adds `score × weight` to `totals` (§7.4).
fn add_weighted(
    ssn: &SessionState,
    plugin: &str,
    scores: &[i64],
    weight: i64,
    nodes: &[NodeId],
    totals: &mut [f64],
) -> Result<(), String> {
    for ((&score, &node), total) in scores.iter().zip(nodes).zip(totals.iter_mut()) {
        if !(0..=MAX_NODE_SCORE).contains(&score) {
            return Err(format!(
                "{plugin} returns an invalid score {score} for node {}",
                ssn.node(node).name()
            ));
        }
        *total += score.saturating_mul(weight) as f64;
    }
    Ok(())
}

impl NodeOrder {
    pub fn from_arguments(args: &Arguments) -> Self {
        NodeOrder {
            weights: NodeOrderWeights::from_arguments(args),
            gpu: ResourceName::new(GPU),
            view: PodView::default(),
            nodes: Vec::new(),
            images: RwLock::new(HashMap::new()),
        }
    }

    /// The node's resource sums, built from the pods in the view the first time the node is
    /// scored.
    fn resources(&self, ssn: &SessionState, node: NodeId) -> Option<&NodeResources> {
        let cell = self.nodes.get(node.index())?;
        Some(cell.get_or_init(|| {
            let n = ssn.node(node);
            let mut resources = NodeResources::new(&n.spec.node, self.gpu);
            for &(task, _) in &n.tasks {
                if self.view.is_visible(task) {
                    resources.apply(PodRequests::of(ssn, task, self.gpu), 1);
                }
            }
            resources
        }))
    }

    /// Keeps built sums current; a node not built yet will read the view when it is.
    fn track_requests(&mut self, ssn: &SessionState, task: TaskId, sign: i64) {
        let Some(node) = ssn.task(task).node else {
            return;
        };
        if let Some(n) = self.nodes.get_mut(node.index()).and_then(OnceLock::get_mut) {
            n.apply(PodRequests::of(ssn, task, self.gpu), sign);
        }
    }

    fn image_spread(&self, ssn: &SessionState, name: &str) -> Arc<ImageSpread> {
        // A poisoned lock only means another thread panicked between whole-entry inserts.
        if let Some(found) = self
            .images
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
        {
            return found.clone();
        }
        let spread = Arc::new(ImageSpread::scan(ssn, name));
        self.images
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.to_string())
            .or_insert(spread)
            .clone()
    }

    /// ImageLocality raw score of the pod on one node (no normalisation upstream).
    fn image_locality(&self, ssn: &SessionState, pod: &Pod, node: NodeId) -> i64 {
        let Some(spec) = pod.spec.as_ref() else {
            return 0;
        };
        let total_nodes = ssn.nodes.len();
        let containers: Vec<_> = spec
            .init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
            .collect();
        let mut sum: i64 = 0;
        for container in &containers {
            let Some(image) = container.image.as_deref() else {
                continue;
            };
            let spread = self.image_spread(ssn, &normalized_image_name(image));
            if let Some(Some(size)) = spread.size_on_node.get(node.index())
                && total_nodes > 0
            {
                let share = spread.nodes_with_image as f64 / total_nodes as f64;
                sum = sum.saturating_add((*size as f64 * share) as i64);
            }
        }
        image_score(sum, containers.len())
    }

    /// Per-candidate raw scores of a resource strategy; `None` when its PreScore skips.
    fn resource_scores(
        &self,
        ssn: &SessionState,
        strategy: ResourceStrategy,
        pod: &PodRequests,
        nodes: &[NodeId],
    ) -> Option<Vec<i64>> {
        let score = |n: &NodeResources| match strategy {
            ResourceStrategy::LeastAllocated => {
                least_allocated_score(&n.fit_pairs(pod), &LEAST_ALLOCATED_WEIGHTS)
            }
            ResourceStrategy::MostAllocated => {
                most_allocated_score(&n.fit_pairs(pod), &MOST_ALLOCATED_WEIGHTS)
            }
            ResourceStrategy::BalancedAllocation => {
                balanced_allocation_score(&n.balanced_fractions(pod))
            }
        };
        // A best-effort pod (no cpu, memory or GPU request) is not balanced-scored.
        if strategy == ResourceStrategy::BalancedAllocation
            && pod.cpu == 0
            && pod.memory == 0
            && pod.gpu == 0
        {
            return None;
        }
        Some(
            nodes
                .iter()
                .map(|&n| self.resources(ssn, n).map_or(0, score))
                .collect(),
        )
    }

    /// The batch sub-plugins of §7.4, in table order, summed into `totals`.
    fn batch(
        &self,
        ssn: &SessionState,
        task: TaskId,
        nodes: &[NodeId],
        totals: &mut [f64],
    ) -> Result<(), String> {
        let w = &self.weights;
        let pod = ssn.task(task).spec.pod.as_ref();
        let candidates: Vec<&Node> = nodes
            .iter()
            .map(|&n| ssn.node(n).spec.node.as_ref())
            .collect();

        let requests = PodRequests::of(ssn, task, self.gpu);
        for (strategy, weight) in [
            (ResourceStrategy::LeastAllocated, w.least_requested),
            (ResourceStrategy::MostAllocated, w.most_requested),
            (ResourceStrategy::BalancedAllocation, w.balanced_resource),
        ] {
            if weight == 0 {
                continue;
            }
            if let Some(scores) = self.resource_scores(ssn, strategy, &requests, nodes) {
                add_weighted(ssn, strategy.name(), &scores, weight, nodes, totals)?;
            }
        }

        if w.node_affinity != 0 {
            let preferred = PreferredNodeAffinity::from_pod(pod).map_err(|e| e.to_string())?;
            if let Some(preferred) = preferred {
                let mut scores: Vec<i64> = candidates.iter().map(|n| preferred.score(n)).collect();
                normalize_max(&mut scores, false);
                add_weighted(ssn, NODE_AFFINITY, &scores, w.node_affinity, nodes, totals)?;
            }
        }

        if w.pod_affinity != 0 && !candidates.is_empty() {
            // Without preferred terms of its own, only placed pods with affinity can score.
            let placed: Vec<PlacedPod<'_>> = if has_preferred_pod_affinity_terms(pod) {
                self.view.placed(ssn).collect()
            } else {
                self.view.placed_with_pod_affinity(ssn).collect()
            };
            if !placed.is_empty() {
                let ns = |name: &str| namespace_labels(ssn, name);
                if let Some(scores) = preferred_affinity_scores(pod, &placed, &candidates, &ns) {
                    add_weighted(
                        ssn,
                        INTER_POD_AFFINITY,
                        &scores,
                        w.pod_affinity,
                        nodes,
                        totals,
                    )?;
                }
            }
        }

        if w.taint_toleration != 0 {
            let mut scores: Vec<i64> = candidates
                .iter()
                .map(|n| count_intolerable_prefer_no_schedule(pod, n))
                .collect();
            normalize_max(&mut scores, true);
            add_weighted(
                ssn,
                TAINT_TOLERATION,
                &scores,
                w.taint_toleration,
                nodes,
                totals,
            )?;
        }

        if w.pod_topology_spread != 0 && has_spread_constraint(pod, SCHEDULE_ANYWAY) {
            let placed: Vec<PlacedPod<'_>> = self.view.placed(ssn).collect();
            let every_node = all_nodes(ssn);
            let required = RequiredNodeAffinity::from_pod(pod);
            if let Some(scores) = spread_scores(pod, &placed, &candidates, &every_node, &|n| {
                required.matches(n)
            }) {
                add_weighted(
                    ssn,
                    POD_TOPOLOGY_SPREAD,
                    &scores,
                    w.pod_topology_spread,
                    nodes,
                    totals,
                )?;
            }
        }
        Ok(())
    }
}

impl Plugin for NodeOrder {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.view = PodView::open(ssn, false, self.weights.pod_affinity != 0);
        self.nodes = ssn.nodes.iter().map(|_| OnceLock::new()).collect();
    }

    fn extension_points(&self) -> ExtensionPoints {
        let mut points = ExtensionPoints::EVENT_HANDLER;
        // A zero weight contributes nothing, so the point is left unregistered (same result,
        // and the engine then skips the per-node loop).
        if self.weights.image_locality != 0 {
            points = points | ExtensionPoints::NODE_ORDER;
        }
        if self.weights.any_batch() {
            points = points | ExtensionPoints::BATCH_NODE_ORDER;
        }
        points
    }

    fn node_order(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<f64, String> {
        let score = self.image_locality(ssn, &ssn.task(task).spec.pod, node);
        Ok(score as f64 * self.weights.image_locality as f64)
    }

    fn batch_node_order(
        &self,
        ssn: &SessionState,
        task: TaskId,
        nodes: &[NodeId],
    ) -> Result<Vec<f64>, String> {
        let mut totals = vec![0.0; nodes.len()];
        self.batch(ssn, task, nodes, &mut totals)?;
        Ok(totals)
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        self.view.added(ssn, task);
        self.track_requests(ssn, task, 1);
        Ok(())
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        self.view.removed(ssn, task);
        self.track_requests(ssn, task, -1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{StateLookup, TestCluster, allocate, pod, pod_group};
    use engine::conf::{ArgValue, MAX_WEIGHT, PluginOption};
    use engine::framework::{Session, Statement};
    use serde_json::{Value, json};

    /// Every weight 0 except the ones given.
    fn only(weights: &[(&str, i64)]) -> Vec<(&'static str, ArgValue)> {
        let mut args: Vec<(&'static str, ArgValue)> = [
            LEAST_REQUESTED_WEIGHT,
            MOST_REQUESTED_WEIGHT,
            BALANCED_RESOURCE_WEIGHT,
            NODE_AFFINITY_WEIGHT,
            POD_AFFINITY_WEIGHT,
            TAINT_TOLERATION_WEIGHT,
            IMAGE_LOCALITY_WEIGHT,
            POD_TOPOLOGY_SPREAD_WEIGHT,
        ]
        .into_iter()
        .map(|k| (k, ArgValue::Int(0)))
        .collect();
        for &(key, w) in weights {
            if let Some(slot) = args.iter_mut().find(|(k, _)| *k == key) {
                slot.1 = ArgValue::Int(w);
            }
        }
        args
    }

    fn session(c: &TestCluster, args: &[(&'static str, ArgValue)]) -> Session {
        let option = PluginOption::new(NAME).with_arguments(Arguments::from_pairs(args));
        c.session_with(vec![vec![option]])
    }

    /// Batch + per-node scores of `pod` on `nodes`, as the engine sums them.
    fn scores(ssn: &Session, pod: &str, nodes: &[&str]) -> Vec<f64> {
        let t = ssn.state.task_by_key(pod);
        let ids: Vec<NodeId> = nodes.iter().map(|n| ssn.state.node_by_key(n)).collect();
        let batch = ssn.batch_node_order(t, &ids).expect("batch scoring");
        ids.iter()
            .zip(batch)
            .map(|(&n, b)| b + ssn.node_order(t, n).expect("node scoring"))
            .collect()
    }

    fn node_with(
        c: &mut TestCluster,
        name: &str,
        allocatable: Value,
        labels: Value,
        spec: Value,
        status: Value,
    ) {
        let mut all_labels = json!({"kubernetes.io/hostname": name});
        if let (Some(all), Some(extra)) = (all_labels.as_object_mut(), labels.as_object()) {
            all.extend(extra.clone());
        }
        let mut st = json!({"allocatable": allocatable, "capacity": allocatable});
        if let (Some(all), Some(extra)) = (st.as_object_mut(), status.as_object()) {
            all.extend(extra.clone());
        }
        let n =
            json!({"metadata": {"name": name, "labels": all_labels}, "spec": spec, "status": st});
        c.state
            .upsert_node(serde_json::from_value(n).expect("valid node"));
    }

    fn standard_node(c: &mut TestCluster, name: &str) {
        c.node(name, json!({"cpu": "4", "memory": "8Gi", "pods": "110"}));
    }

    #[test]
    fn n1_least_allocated() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        c.pod(pod(
            "ns",
            "old",
            None,
            "Running",
            Some("n1"),
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
        let ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 1)]));
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
        let ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 3)]));
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![150.0]);
    }

    #[test]
    fn n2_most_allocated() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        c.pod(pod(
            "ns",
            "old",
            None,
            "Running",
            Some("n1"),
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
        let ssn = session(&c, &only(&[(MOST_REQUESTED_WEIGHT, 1)]));
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
    }

    #[test]
    fn n3_balanced_allocation() {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "4", "memory": "2Gi", "pods": "110"}));
        c.node("n2", json!({"cpu": "2", "memory": "2Gi", "pods": "110"}));
        c.pod(pod(
            "ns",
            "new",
            None,
            "Pending",
            None,
            json!({"cpu": "1", "memory": "1Gi"}),
        ));
        c.pod(pod("ns", "be", None, "Pending", None, json!({})));
        let ssn = session(&c, &only(&[(BALANCED_RESOURCE_WEIGHT, 1)]));
        // Fractions 0.25 / 0.5 ⇒ std 0.125 ⇒ 87; 0.5 / 0.5 ⇒ 100.
        assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![87.0, 100.0]);
        // A best-effort pod is not balanced-scored at all.
        assert_eq!(scores(&ssn, "ns/be", &["n1", "n2"]), vec![0.0, 0.0]);
    }

    #[test]
    fn balanced_allocation_counts_gpu_only_when_requested() {
        let mut c = TestCluster::new();
        c.node(
            "n1",
            json!({"cpu": "4", "memory": "4Gi", "nvidia.com/gpu": "4", "pods": "110"}),
        );
        c.pod(pod(
            "ns",
            "gpu",
            None,
            "Pending",
            None,
            json!({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}),
        ));
        c.pod(pod(
            "ns",
            "cpu",
            None,
            "Pending",
            None,
            json!({"cpu": "1", "memory": "1Gi"}),
        ));
        let ssn = session(&c, &only(&[(BALANCED_RESOURCE_WEIGHT, 1)]));
        // 0.25, 0.25, 1.0: mean 0.5, population std sqrt(0.125) ≈ 0.354 ⇒ 64.
        assert_eq!(scores(&ssn, "ns/gpu", &["n1"]), vec![64.0]);
        assert_eq!(scores(&ssn, "ns/cpu", &["n1"]), vec![100.0]);
    }

    #[test]
    fn n4_taint_toleration() {
        let mut c = TestCluster::new();
        let alloc = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
        node_with(&mut c, "n1", alloc.clone(), json!({}), json!({}), json!({}));
        let taints = json!({"taints": [
            {"key": "a", "effect": "PreferNoSchedule"},
            {"key": "b", "effect": "PreferNoSchedule"}
        ]});
        node_with(&mut c, "n2", alloc, json!({}), taints, json!({}));
        c.pod(pod("ns", "new", None, "Pending", None, json!({"cpu": "1"})));
        let ssn = session(&c, &only(&[(TAINT_TOLERATION_WEIGHT, 3)]));
        assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![300.0, 0.0]);
        // No PreferNoSchedule taint anywhere: every node gets the full score.
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![300.0]);
    }

    #[test]
    fn n5_node_affinity() {
        let mut c = TestCluster::new();
        let alloc = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
        node_with(
            &mut c,
            "n1",
            alloc.clone(),
            json!({"disk": "ssd"}),
            json!({}),
            json!({}),
        );
        node_with(
            &mut c,
            "n2",
            alloc,
            json!({"disk": "hdd"}),
            json!({}),
            json!({}),
        );
        let mut p = pod("ns", "new", None, "Pending", None, json!({"cpu": "1"}));
        p["spec"]["affinity"] = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}
        ]}});
        c.pod(p);
        c.pod(pod(
            "ns",
            "plain",
            None,
            "Pending",
            None,
            json!({"cpu": "1"}),
        ));
        let ssn = session(&c, &only(&[(NODE_AFFINITY_WEIGHT, 2)]));
        assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![200.0, 0.0]);
        // No preferred terms: PreScore skips, nothing is added.
        assert_eq!(scores(&ssn, "ns/plain", &["n1", "n2"]), vec![0.0, 0.0]);
    }

    #[test]
    fn invalid_preferred_node_affinity_aborts_batch_scoring() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        let mut p = pod("ns", "bad", None, "Pending", None, json!({"cpu": "1"}));
        p["spec"]["affinity"] = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "Near", "values": ["x"]}]}}
        ]}});
        c.pod(p);
        let ssn = session(&c, &[]);
        let t = ssn.state.task_by_key("ns/bad");
        let n1 = ssn.state.node_by_key("n1");
        assert!(ssn.batch_node_order(t, &[n1]).is_err());
    }

    #[test]
    fn n6_image_locality() {
        let mut c = TestCluster::new();
        let alloc = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
        let images =
            json!({"images": [{"names": ["registry.example/app:v1"], "sizeBytes": 500 * MIB}]});
        node_with(&mut c, "n1", alloc.clone(), json!({}), json!({}), images);
        node_with(&mut c, "n2", alloc, json!({}), json!({}), json!({}));
        let mut p = pod("ns", "new", None, "Pending", None, json!({"cpu": "1"}));
        p["spec"]["containers"][0]["image"] = json!("registry.example/app:v1");
        c.pod(p);
        let ssn = session(&c, &only(&[(IMAGE_LOCALITY_WEIGHT, 1)]));
        // 500 MiB × 1/2 nodes = 250 MiB ⇒ 100 × (250 − 23) / (1000 − 23) = 23.
        assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![23.0, 0.0]);
        let ssn = session(&c, &only(&[]));
        assert!(
            !ssn.has_node_order(),
            "weight 0 leaves the per-node point unregistered"
        );
    }

    #[test]
    fn image_locality_matches_the_library_formula() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {
                "initContainers": [{"name": "i", "image": "busybox"}],
                "containers": [{"name": "a", "image": "nginx:1.25"}, {"name": "b", "image": "nginx:1.25"}]
            }
        }))
        .expect("pod");
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "status": {"images": [
                {"names": ["busybox:latest"], "sizeBytes": 5 * MIB},
                {"names": ["nginx:1.25", "nginx@sha256:x"], "sizeBytes": 900 * MIB}
            ]}
        }))
        .expect("node");
        let want = crate::k8s::resources::image_locality_score(&pod, &node, &|_| 3, 4);
        // Same inputs through this module's formula: every image on 3 of 4 nodes.
        let sum = (5 * MIB) * 3 / 4 + 2 * ((900 * MIB) as f64 * 0.75) as i64;
        assert_eq!(image_score(sum, 3), want);
        assert_eq!(normalized_image_name("busybox"), "busybox:latest");
        assert_eq!(
            normalized_image_name("host:5000/busybox"),
            "host:5000/busybox:latest"
        );
        assert_eq!(normalized_image_name("nginx:1.25"), "nginx:1.25");
        assert_eq!(image_score(0, 0), 0);
        assert_eq!(image_score(i64::MAX, 1), 100);
    }

    /// An `int64`-max weight is clamped to `MAX_WEIGHT`: scores stay ordered and finite
    /// (Volcano's `score × weight` wraps around), and nothing panics in debug arithmetic.
    #[test]
    fn extreme_weights_are_clamped_and_scored_without_overflow() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "busy");
        standard_node(&mut c, "idle");
        c.pod(pod(
            "ns",
            "old",
            None,
            "Running",
            Some("busy"),
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
        let w = NodeOrderWeights::from_arguments(&Arguments::from_pairs(&[
            (LEAST_REQUESTED_WEIGHT, ArgValue::Int(i64::MAX)),
            (MOST_REQUESTED_WEIGHT, ArgValue::Int(i64::MIN)),
        ]));
        assert_eq!(
            (w.least_requested, w.most_requested),
            (MAX_WEIGHT, -MAX_WEIGHT)
        );

        let ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, i64::MAX)]));
        let got = scores(&ssn, "ns/new", &["busy", "idle"]);
        // LeastAllocated 50 on the busy node, 75 on the idle one, times the clamped weight.
        assert_eq!(
            got,
            vec![50.0 * MAX_WEIGHT as f64, 75.0 * MAX_WEIGHT as f64]
        );
        let ssn = session(
            &c,
            &only(&[
                (LEAST_REQUESTED_WEIGHT, i64::MAX),
                (MOST_REQUESTED_WEIGHT, i64::MAX),
            ]),
        );
        assert!(
            scores(&ssn, "ns/new", &["busy", "idle"])
                .iter()
                .all(|s| s.is_finite())
        );
    }

    /// Negative and out-of-range weights are reported by the parser, under their argument path,
    /// once per configuration load.
    #[test]
    fn bad_weights_are_warned_about_at_parse_time() {
        let text = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n  \
                    - name: nodeorder\n    arguments:\n      leastrequested.weight: -5\n      \
                    mostrequested.weight: 9223372036854775807\n      \
                    tainttoleration.weight: 1.5\n";
        let known = engine::conf::KnownNames {
            actions: &["allocate"],
            plugins: &["gang", NAME],
            strict: true,
            check_arguments: Some(crate::check_arguments),
        };
        let parsed = engine::conf::parse(text, &known).expect("valid configuration");
        let prefix = "tiers[1].plugins[0].arguments.";
        let w = &parsed.warnings;
        assert_eq!(w.len(), 3, "{w:#?}");
        assert!(
            w[0].starts_with(&format!(
                "{prefix}leastrequested.weight: negative weight -5"
            )),
            "{}",
            w[0]
        );
        assert!(
            w[1].starts_with(&format!(
                "{prefix}mostrequested.weight: weight 9223372036854775807 is out of range"
            )),
            "{}",
            w[1]
        );
        assert!(w[1].ends_with("1000000000000 is used"), "{}", w[1]);
        assert!(
            w[2].starts_with(&format!(
                "{prefix}tainttoleration.weight: expected an integer, found 1.5"
            )),
            "{}",
            w[2]
        );
    }

    #[test]
    fn n7_zero_weight_disables_and_float_weight_is_ignored() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        c.pod(pod(
            "ns",
            "new",
            None,
            "Pending",
            None,
            json!({"cpu": "1", "memory": "2Gi"}),
        ));
        let ssn = session(&c, &only(&[]));
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![0.0]);

        let w = NodeOrderWeights::from_arguments(&Arguments::from_pairs(&[(
            LEAST_REQUESTED_WEIGHT,
            ArgValue::Float(1.5),
        )]));
        assert_eq!(w, NodeOrderWeights::default());
        let w = NodeOrderWeights::from_arguments(&Arguments::from_pairs(&[(
            LEAST_REQUESTED_WEIGHT,
            ArgValue::Int(0),
        )]));
        assert_eq!(w.least_requested, 0);

        let mut args = only(&[(LEAST_REQUESTED_WEIGHT, 0)]);
        args.retain(|(k, _)| *k != LEAST_REQUESTED_WEIGHT);
        args.push((LEAST_REQUESTED_WEIGHT, ArgValue::Float(1.5)));
        let ssn = session(&c, &args);
        // The float is ignored, default weight 1 stays: (4−1)/4 and (8−2)/8 ⇒ 75.
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![75.0]);
    }

    #[test]
    fn defaults_sum_every_sub_plugin() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        c.pod(pod(
            "ns",
            "new",
            None,
            "Pending",
            None,
            json!({"cpu": "1", "memory": "2Gi"}),
        ));
        let ssn = session(&c, &[]);
        // least 75 + balanced 100 (0.25 / 0.25) + taint 300; no affinity, spread or image terms.
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![75.0 + 100.0 + 300.0]);
    }

    #[test]
    fn non_zero_requests_for_containers_without_requests() {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "1", "memory": "1000Mi", "pods": "110"}));
        c.pod(pod("ns", "old", None, "Running", Some("n1"), json!({})));
        c.pod(pod("ns", "new", None, "Pending", None, json!({})));
        let ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 1)]));
        // Each pod counts 100m and 200 MiB: cpu (1000−200)/1000 = 80, memory (1000−400)/1000 = 60.
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![70.0]);
    }

    #[test]
    fn request_sums_follow_allocations_and_evictions() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        c.pod_group(pod_group("ns", "pg", 1));
        c.pod(pod(
            "ns",
            "old",
            None,
            "Running",
            Some("n1"),
            json!({"cpu": "1", "memory": "2Gi"}),
        ));
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
        let mut ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 1)]));
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
        allocate(&mut ssn, "ns/placed", "n1");
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![25.0]);
        // An eviction frees the pod's requests at once for scoring.
        let old = ssn.state.task_by_key("ns/old");
        let mut stmt = Statement::new();
        ssn.evict(&mut stmt, old, "test");
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
        ssn.discard(stmt);
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![25.0]);
    }

    #[test]
    fn node_sums_built_after_an_eviction_leave_the_evicted_pod_out() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        c.pod(pod(
            "ns",
            "old",
            None,
            "Running",
            Some("n1"),
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
        let mut ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 1)]));
        let old = ssn.state.task_by_key("ns/old");
        let mut stmt = Statement::new();
        ssn.evict(&mut stmt, old, "test");
        // n1 is scored for the first time now: its sums come from the view, without `old`.
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![75.0]);
        ssn.discard(stmt);
        assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
    }

    #[test]
    fn preferred_pod_affinity_scores() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        standard_node(&mut c, "n2");
        let mut db = pod("ns", "db", None, "Running", Some("n1"), json!({"cpu": "1"}));
        db["metadata"]["labels"] = json!({"app": "db"});
        c.pod(db);
        let mut p = pod("ns", "new", None, "Pending", None, json!({"cpu": "1"}));
        p["spec"]["affinity"] = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}}
        ]}});
        c.pod(p);
        c.pod(pod(
            "ns",
            "plain",
            None,
            "Pending",
            None,
            json!({"cpu": "1"}),
        ));
        let ssn = session(&c, &only(&[(POD_AFFINITY_WEIGHT, 2)]));
        assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![200.0, 0.0]);
        assert_eq!(scores(&ssn, "ns/plain", &["n1", "n2"]), vec![0.0, 0.0]);
    }

    #[test]
    fn existing_pods_preferred_anti_affinity_scores_through_the_index() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        standard_node(&mut c, "n2");
        let mut loner = pod(
            "ns",
            "loner",
            None,
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        );
        loner["spec"]["affinity"] = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}}
        ]}});
        c.pod(loner);
        let mut web = pod("ns", "web", None, "Pending", None, json!({"cpu": "1"}));
        web["metadata"]["labels"] = json!({"app": "web"});
        c.pod(web);
        let ssn = session(&c, &only(&[(POD_AFFINITY_WEIGHT, 1)]));
        // n1 raw −5, n2 raw 0 ⇒ min–max 0 / 100.
        assert_eq!(scores(&ssn, "ns/web", &["n1", "n2"]), vec![0.0, 100.0]);
    }

    #[test]
    fn topology_spread_schedule_anyway() {
        const ZONE: &str = "topology.kubernetes.io/zone";
        let mut c = TestCluster::new();
        let alloc = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
        node_with(
            &mut c,
            "a1",
            alloc.clone(),
            json!({ZONE: "a"}),
            json!({}),
            json!({}),
        );
        node_with(
            &mut c,
            "b1",
            alloc,
            json!({ZONE: "b"}),
            json!({}),
            json!({}),
        );
        for name in ["w1", "w2"] {
            let mut w = pod(
                "ns",
                name,
                None,
                "Running",
                Some("a1"),
                json!({"cpu": "100m"}),
            );
            w["metadata"]["labels"] = json!({"app": "web"});
            c.pod(w);
        }
        let mut p = pod("ns", "new", None, "Pending", None, json!({"cpu": "100m"}));
        p["metadata"]["labels"] = json!({"app": "web"});
        p["spec"]["topologySpreadConstraints"] = json!([{
            "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}}
        }]);
        c.pod(p);
        let ssn = session(&c, &only(&[(POD_TOPOLOGY_SPREAD_WEIGHT, 2)]));
        let s = scores(&ssn, "ns/new", &["a1", "b1"]);
        // The empty zone scores the maximum; the crowded one less.
        assert_eq!(s[1], 200.0);
        assert!(s[0] < s[1], "{s:?}");
    }

    #[test]
    fn out_of_range_scores_abort() {
        let mut c = TestCluster::new();
        standard_node(&mut c, "n1");
        let ssn = session(&c, &[]);
        let n1 = ssn.state.node_by_key("n1");
        let mut totals = vec![0.0];
        assert!(add_weighted(&ssn.state, "X", &[101], 1, &[n1], &mut totals).is_err());
        assert!(add_weighted(&ssn.state, "X", &[-1], 1, &[n1], &mut totals).is_err());
        add_weighted(&ssn.state, "X", &[40], -2, &[n1], &mut totals).expect("in range");
        assert_eq!(totals, vec![-80.0]);
    }
}
