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

use rustc_hash::FxHashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use engine::conf::{ArgWarning, Arguments};
use engine::framework::{ExtensionPoints, Plugin, SessionState};
use engine::model::node::NodeSpec;
use engine::model::{NodeId, ResourceName, SchedClass, TaskId};
use k8s_openapi::api::core::v1::Node;

use crate::k8s::labels::PlacedPod;
use crate::k8s::node_affinity::{PreferredNodeAffinity, RequiredNodeAffinity};
use crate::k8s::pod_affinity::preferred_affinity_scores;
use crate::k8s::pod_view::{
    PodView, all_nodes, has_preferred_pod_affinity_terms, has_spread_constraint, namespace_labels,
};
use crate::k8s::resources::{
    MAX_NODE_SCORE, balanced_allocation_score, least_allocated_score, most_allocated_score,
    non_zero_request, non_zero_request_reads_status, normalize_max,
};
use crate::k8s::resources::{image_score, normalized_image_name};
use crate::k8s::taints::{count_intolerable_prefer_no_schedule, has_prefer_no_schedule_taint};
use crate::k8s::topology_spread::spread_scores;

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
    /// The task's requests; `non_zero` works out upstream's `NonZeroRequested` for its pod the
    /// first time the pod is asked about.
    fn of(
        ssn: &SessionState,
        task: TaskId,
        gpu: ResourceName,
        non_zero: impl FnOnce() -> (i64, i64),
    ) -> Self {
        let t = ssn.task(task);
        let (non_zero_cpu, non_zero_memory) = *t.spec.non_zero_request.get_or_init(non_zero);
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

/// The node sums one session hands to the next ([`Plugin::hand_over`]), by node index.
struct HandedNodes(Vec<Option<NodeResources>>);

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
    fn new(node: &NodeSpec, gpu: ResourceName) -> Self {
        let allocatable = &node.stated_allocatable;
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
            .nodes()
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

/// The image of each container of a class that names one, in container order, and how many
/// containers it has.
struct ClassImages {
    spreads: Vec<Arc<ImageSpread>>,
    containers: usize,
}

/// The plugin instance of one session.
pub struct NodeOrder {
    weights: NodeOrderWeights,
    gpu: ResourceName,
    view: PodView,
    /// Per node, built on first use (see [`NodeOrder::resources`]) or taken over from the
    /// session before.
    nodes: Vec<OnceLock<NodeResources>>,
    /// What the instance of the session before handed over, until this one opens.
    previous: Option<HandedNodes>,
    /// ImageLocality's per-image scans, filled the first time a pod asks for an image.
    images: RwLock<FxHashMap<String, Arc<ImageSpread>>>,
    /// Each scheduling class's images (see [`NodeOrder::class_images`]).
    class_images: RwLock<FxHashMap<SchedClass, Arc<ClassImages>>>,
    /// Each scheduling class's `NonZeroRequested` (see [`NodeOrder::non_zero_request`]).
    class_requests: RwLock<FxHashMap<SchedClass, (i64, i64)>>,
    /// Nodes with a `PreferNoSchedule` taint (the only ones TaintToleration can score down).
    prefer_no_schedule_nodes: Vec<NodeId>,
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
            previous: None,
            images: RwLock::new(FxHashMap::default()),
            class_images: RwLock::new(FxHashMap::default()),
            class_requests: RwLock::new(FxHashMap::default()),
            prefer_no_schedule_nodes: Vec::new(),
        }
    }

    /// The node's resource sums, built from the pods in the view the first time the node is
    /// scored.
    fn resources(&self, ssn: &SessionState, node: NodeId) -> Option<&NodeResources> {
        let cell = self.nodes.get(node.index())?;
        Some(cell.get_or_init(|| {
            let n = ssn.node(node);
            let mut resources = NodeResources::new(&n.spec, self.gpu);
            for &(task, _) in &n.tasks {
                if self.view.is_visible(task) {
                    resources.apply(self.requests_of(ssn, task), 1);
                }
            }
            resources
        }))
    }

    /// The task's requests (parsed once per pod version, `TaskSpec::non_zero_request`).
    fn requests_of(&self, ssn: &SessionState, task: TaskId) -> PodRequests {
        PodRequests::of(ssn, task, self.gpu, || self.non_zero_request(ssn, task))
    }

    /// `NonZeroRequested` of the task's pod, worked out once per scheduling class when it rests
    /// on the spec alone (the class covers the containers' requests): a session with a large
    /// backlog would otherwise parse the same quantities for every pod. With the session's
    /// memo off, for every pod (the property tests compare).
    fn non_zero_request(&self, ssn: &SessionState, task: TaskId) -> (i64, i64) {
        let spec = &ssn.task(task).spec;
        if !ssn.options().search_memo || non_zero_request_reads_status(&spec.pod) {
            return non_zero_request(&spec.pod);
        }
        // A poisoned lock only means another thread panicked between whole-entry inserts.
        let class = spec.sched_class();
        if let Some(&found) = (self.class_requests.read())
            .unwrap_or_else(PoisonError::into_inner)
            .get(&class)
        {
            return found;
        }
        let requests = non_zero_request(&spec.pod);
        (self.class_requests.write())
            .unwrap_or_else(PoisonError::into_inner)
            .insert(class, requests);
        requests
    }

    /// Keeps built sums current; a node not built yet will read the view when it is.
    fn track_requests(&mut self, ssn: &SessionState, task: TaskId, sign: i64) {
        let Some(node) = ssn.task(task).node else {
            return;
        };
        let requests = self.requests_of(ssn, task);
        if let Some(n) = self.nodes.get_mut(node.index()).and_then(OnceLock::get_mut) {
            n.apply(requests, sign);
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

    /// The images of the task's containers, found once per scheduling class: the class
    /// covers the containers' images, and ImageLocality scores every node a task is tried on.
    /// With the session's memo off, found for every call (the property tests compare).
    fn class_images(&self, ssn: &SessionState, task: TaskId) -> Arc<ClassImages> {
        let spec = &ssn.task(task).spec;
        let class = spec.sched_class();
        let memo = ssn.options().search_memo;
        // A poisoned lock only means another thread panicked between whole-entry inserts.
        if memo
            && let Some(found) = (self.class_images.read())
                .unwrap_or_else(PoisonError::into_inner)
                .get(&class)
        {
            return found.clone();
        }
        let containers: Vec<_> = (spec.pod.spec.iter())
            .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers))
            .collect();
        let images = Arc::new(ClassImages {
            spreads: (containers.iter())
                .filter_map(|c| c.image.as_deref())
                .map(|image| self.image_spread(ssn, &normalized_image_name(image)))
                .collect(),
            containers: containers.len(),
        });
        if !memo {
            return images;
        }
        (self.class_images.write())
            .unwrap_or_else(PoisonError::into_inner)
            .entry(class)
            .or_insert(images)
            .clone()
    }

    /// ImageLocality raw score of the task on one node (no normalisation upstream).
    fn image_locality(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> i64 {
        if ssn.task(task).spec.pod.spec.is_none() {
            return 0;
        }
        let images = self.class_images(ssn, task);
        let total_nodes = ssn.nodes().len();
        let mut sum: i64 = 0;
        for spread in &images.spreads {
            if let Some(Some(size)) = spread.size_on_node.get(node.index())
                && total_nodes > 0
            {
                let share = spread.nodes_with_image as f64 / total_nodes as f64;
                sum = sum.saturating_add((*size as f64 * share) as i64);
            }
        }
        image_score(sum, images.containers)
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
        // The node objects are reached only by the scores that read them.
        let candidates = || -> Vec<&Node> {
            nodes
                .iter()
                .map(|&n| ssn.node(n).spec.node.as_ref())
                .collect()
        };

        let requests = self.requests_of(ssn, task);
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
                let mut scores: Vec<i64> =
                    candidates().iter().map(|n| preferred.score(n)).collect();
                normalize_max(&mut scores, false);
                add_weighted(ssn, NODE_AFFINITY, &scores, w.node_affinity, nodes, totals)?;
            }
        }

        if w.pod_affinity != 0 && !nodes.is_empty() {
            // Without preferred terms of its own, only placed pods with affinity can score.
            let placed: Vec<PlacedPod<'_>> = if has_preferred_pod_affinity_terms(pod) {
                self.view.placed(ssn).collect()
            } else {
                self.view.placed_with_pod_affinity(ssn).collect()
            };
            if !placed.is_empty() {
                let ns = |name: &str| namespace_labels(ssn, name);
                if let Some(scores) = preferred_affinity_scores(pod, &placed, &candidates(), &ns) {
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
            // Only a node with a PreferNoSchedule taint can count one (the list is in node
            // order): with the memo on (so that the property tests compare), the others are
            // not reached.
            let tainted = &self.prefer_no_schedule_nodes;
            let memo = ssn.options().search_memo;
            let mut scores: Vec<i64> = nodes
                .iter()
                .map(|&n| {
                    if memo && tainted.binary_search(&n).is_err() {
                        0
                    } else {
                        count_intolerable_prefer_no_schedule(pod, ssn.node(n).spec.node.as_ref())
                    }
                })
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
            if let Some(scores) = spread_scores(pod, &placed, &candidates(), &every_node, &|n| {
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
        let mut previous = self.previous.take();
        // A node's sums as the session before left them hold where its row was carried: the
        // same node object and the same tasks, all shown (no view hides a pod at open).
        self.nodes = ssn
            .node_ids()
            .map(|n| {
                let cell = OnceLock::new();
                if ssn.node_row_carried(n)
                    && let Some(r) = previous
                        .as_mut()
                        .and_then(|p| p.0.get_mut(n.index()))
                        .and_then(Option::take)
                {
                    let _ = cell.set(r);
                }
                cell
            })
            .collect();
        self.prefer_no_schedule_nodes = ssn
            .node_ids()
            .filter(|&n| has_prefer_no_schedule_taint(ssn.node(n).spec.node.as_ref()))
            .collect();
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
        let score = self.image_locality(ssn, task, node);
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

    /// A node's score stands alone (for the search memo) unless a score normalises over the
    /// candidates or counts pods on other nodes: preferred node affinity, inter-pod affinity in
    /// play, `ScheduleAnyway` spread, or a `PreferNoSchedule` taint somewhere that the pod
    /// does not tolerate. The resource scores and ImageLocality (whose image spread is fixed for
    /// the session) read only the node.
    fn search_is_node_local(&self, ssn: &SessionState, task: TaskId) -> bool {
        let w = &self.weights;
        let pod = ssn.task(task).spec.pod.as_ref();
        (w.node_affinity == 0 || matches!(PreferredNodeAffinity::from_pod(pod), Ok(None)))
            && (w.pod_affinity == 0
                || (!has_preferred_pod_affinity_terms(pod)
                    && !self.view.any_placed_can_score_others()))
            && (w.pod_topology_spread == 0 || !has_spread_constraint(pod, SCHEDULE_ANYWAY))
            && (w.taint_toleration == 0
                || self.prefer_no_schedule_nodes.iter().all(|&n| {
                    count_intolerable_prefer_no_schedule(pod, ssn.node(n).spec.node.as_ref()) == 0
                }))
    }

    /// A placed pod scores other nodes only through pod affinity terms that can score others,
    /// and while one such pod is placed no task is node-local here
    /// ([`PodView::any_placed_can_score_others`]); its labels count only for pods with
    /// preferred terms or `ScheduleAnyway` spread, which are not node-local either.
    fn placement_is_node_local(&self, _ssn: &SessionState, _task: TaskId) -> bool {
        true
    }

    /// The nodes' sums where they count every pod listed on the node (no pod hidden): what
    /// the next session finds on a node whose row it carries over.
    fn hand_over(&mut self) -> Option<Box<dyn std::any::Any + Send + Sync>> {
        let nodes: Vec<Option<NodeResources>> = std::mem::take(&mut self.nodes)
            .into_iter()
            .enumerate()
            .map(|(i, cell)| {
                cell.into_inner()
                    .filter(|_| self.view.shows_all_on(NodeId::from_index(i)))
            })
            .collect();
        nodes
            .iter()
            .any(Option::is_some)
            .then(|| Box::new(HandedNodes(nodes)) as Box<dyn std::any::Any + Send + Sync>)
    }

    fn take_over(&mut self, previous: Box<dyn std::any::Any + Send + Sync>) {
        self.previous = previous.downcast::<HandedNodes>().ok().map(|b| *b);
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
mod tests;
