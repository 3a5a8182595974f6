//! `network-topology-aware`: keeps a job inside the smallest network domain (HyperNode) that
//! holds it, and packs HyperNodes (spec/plugins-more.md §14).
//!
//! * **HyperNode gradient** (hard constraints only): the HyperNodes under the search start, and
//!   under the highest HyperNode the job's constraint allows above where it already runs, of a
//!   tier up to `highestTierAllowed`, with room for what the job needs; grouped by tier from
//!   the lowest. For evictions the widest tiers come first, at most
//!   `hypernode.gradient.evict.max-hypernodes` of them.
//! * **HyperNode order**: how full each candidate HyperNode would be with the job's tasks
//!   (weighted by resource, 0 when it would overflow), the job's tasks already there breaking
//!   ties; × 100 × `weight`.
//! * **Node order** (batch): for a job with a constraint, how low the common HyperNode of the
//!   node and the job's HyperNode so far is; for other pods, how full the node's HyperNodes of
//!   each tier would be, lower tiers weighing more (`hypernode.binpack.normal-pod.fading`).
//!
//! Per HyperNode, allocatable, used, idle and future-idle resources are summed over its nodes
//! when the session opens; placements and evictions keep `used` current.

mod scores;

use engine::conf::{ArgWarning, Arguments};
use engine::framework::{ExtensionPoints, Plugin, SessionState};
use engine::model::topology::{GradientQuery, SearchPurpose};
use engine::model::{DimensionDefault, HyperNodeId, JobId, NodeId, Resource, SubJobId, TaskId};

pub use scores::Weights;

/// Registered plugin name.
pub const NAME: &str = "network-topology-aware";

const NORMAL_POD_ENABLE_KEY: &str = "hypernode.binpack.normal-pod.enable";
const NORMAL_POD_FADING_KEY: &str = "hypernode.binpack.normal-pod.fading";
const EVICT_MAX_KEY: &str = "hypernode.gradient.evict.max-hypernodes";

/// The plugin's arguments (§14.1).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub weights: Weights,
    pub normal_pod_enable: bool,
    pub normal_pod_fading: f64,
    pub max_hyper_nodes_for_eviction: usize,
}

impl Config {
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Config {
        let weights = Weights::read(args, warnings);
        let mut normal_pod_enable = true;
        if let Err(e) = args.get_bool(NORMAL_POD_ENABLE_KEY, &mut normal_pod_enable) {
            warnings.push(ArgWarning::new(NORMAL_POD_ENABLE_KEY, e.message));
        }
        let mut fading = 0.8;
        if let Err(e) = args.get_float(NORMAL_POD_FADING_KEY, &mut fading) {
            warnings.push(ArgWarning::new(NORMAL_POD_FADING_KEY, e.message));
        }
        if fading < 0.0 {
            warnings.push(ArgWarning::new(
                NORMAL_POD_FADING_KEY,
                format!("negative fading {fading}; 0.8 is used, as in Volcano"),
            ));
            fading = 0.8;
        }
        let mut max = 8;
        if let Err(e) = args.get_int(EVICT_MAX_KEY, &mut max) {
            warnings.push(ArgWarning::new(EVICT_MAX_KEY, e.message));
        }
        if max <= 0 {
            warnings.push(ArgWarning::new(
                EVICT_MAX_KEY,
                format!("{max} is not positive; 8 is used, as in Volcano"),
            ));
            max = 8;
        }
        Config {
            weights,
            normal_pod_enable,
            normal_pod_fading: fading,
            max_hyper_nodes_for_eviction: max as usize,
        }
    }
}

/// The problems [`Config::read`] finds, for the configuration parser.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    Config::read(args, &mut warnings);
    warnings
}

/// One HyperNode's resources (`resourceStatus`).
#[derive(Clone, Debug, Default)]
struct HyperNodeResources {
    allocatable: Resource,
    used: Resource,
    idle: Resource,
    future_idle: Resource,
}

/// The plugin instance of one session.
pub struct NetworkTopologyAware {
    config: Config,
    min_tier: i32,
    max_tier: i32,
    /// By HyperNode index.
    resources: Vec<HyperNodeResources>,
}

/// Builds the plugin from its arguments.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(NetworkTopologyAware {
        config: Config::read(args, &mut Vec::new()),
        min_tier: 0,
        max_tier: 0,
        resources: Vec::new(),
    })
}

impl NetworkTopologyAware {
    /// Every HyperNode holding `node`, for the event handlers.
    fn holding(ssn: &SessionState, node: NodeId) -> impl Iterator<Item = HyperNodeId> + '_ {
        let topology = ssn.topology();
        topology.ids().filter(move |&h| topology.contains(h, node))
    }

    /// `hyperNodeGradientFn` (§14.3).
    fn gradient(
        &self,
        ssn: &SessionState,
        start: HyperNodeId,
        highest_tier: i64,
        allocated: Option<HyperNodeId>,
        min_resource: &Resource,
        purpose: SearchPurpose,
    ) -> Option<Vec<Vec<HyperNodeId>>> {
        let topology = ssn.topology();
        let root = search_root(ssn, start, highest_tier, allocated)?;
        let mut by_tier: std::collections::BTreeMap<i32, Vec<HyperNodeId>> = Default::default();
        let mut queue = std::collections::VecDeque::from([root]);
        let mut seen = vec![false; topology.len()];
        seen[root.index()] = true;
        while let Some(at) = queue.pop_front() {
            if self.eligible(ssn, at, highest_tier, allocated, min_resource, purpose) {
                by_tier.entry(topology.tier(at)).or_default().push(at);
            }
            for &child in topology.children(at) {
                if !seen[child.index()] {
                    seen[child.index()] = true;
                    queue.push_back(child);
                }
            }
        }
        Some(by_tier.into_values().collect())
    }

    /// `isEligibleHyperNode`.
    fn eligible(
        &self,
        ssn: &SessionState,
        hn: HyperNodeId,
        highest_tier: i64,
        allocated: Option<HyperNodeId>,
        min_resource: &Resource,
        purpose: SearchPurpose,
    ) -> bool {
        if i64::from(ssn.topology().tier(hn)) > highest_tier {
            return false;
        }
        if allocated.is_some() {
            return true;
        }
        let Some(r) = self.resources.get(hn.index()) else {
            return true;
        };
        match purpose {
            SearchPurpose::Evict => min_resource.less_equal(&r.allocatable, DimensionDefault::Zero),
            SearchPurpose::Allocate => {
                min_resource.less_equal(&r.idle, DimensionDefault::Zero)
                    || min_resource.less_equal(&r.future_idle, DimensionDefault::Zero)
            }
        }
    }

    /// `reverseAndCapEvictionGradients`: widest tiers first, at most the configured number of
    /// HyperNodes, cutting a tier from its end.
    fn reverse_and_cap(&self, gradients: Vec<Vec<HyperNodeId>>) -> Vec<Vec<HyperNodeId>> {
        // No cap (only a plugin built without reading its arguments has none) leaves them be.
        if self.config.max_hyper_nodes_for_eviction == 0 {
            return gradients;
        }
        let mut remaining = self.config.max_hyper_nodes_for_eviction;
        let mut out = Vec::new();
        for gradient in gradients.into_iter().rev() {
            if remaining == 0 {
                break;
            }
            if gradient.len() <= remaining {
                remaining -= gradient.len();
                out.push(gradient);
            } else {
                out.push(gradient[gradient.len() - remaining..].to_vec());
                remaining = 0;
            }
        }
        out
    }
}

/// `getSearchRoot`: the start HyperNode, narrowed to the highest HyperNode the constraint
/// allows above where the job already runs; `None` when the two do not overlap.
fn search_root(
    ssn: &SessionState,
    start: HyperNodeId,
    highest_tier: i64,
    allocated: Option<HyperNodeId>,
) -> Option<HyperNodeId> {
    let Some(allocated) = allocated else {
        return Some(start);
    };
    let topology = ssn.topology();
    let highest_allowed = topology
        .ancestors(allocated)
        .into_iter()
        .take_while(|&a| i64::from(topology.tier(a)) <= highest_tier)
        .last()?;
    let lca = topology.lca(Some(start), Some(highest_allowed));
    if lca == Some(highest_allowed) {
        Some(start)
    } else if lca == Some(start) {
        Some(highest_allowed)
    } else {
        None
    }
}

impl Plugin for NetworkTopologyAware {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        let topology = ssn.topology();
        self.min_tier = topology.tiers().first().copied().unwrap_or(0);
        self.max_tier = topology.tiers().last().copied().unwrap_or(0);
        self.resources = topology
            .ids()
            .map(|h| {
                let mut r = HyperNodeResources::default();
                for &n in topology.nodes(h) {
                    let node = ssn.node(n);
                    r.allocatable.add(node.allocatable());
                    r.used.add(&node.used);
                    r.idle.add(&node.idle);
                    r.future_idle.add(&node.future_idle());
                }
                r
            })
            .collect();
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::HYPER_NODE_ORDER
            | ExtensionPoints::BATCH_NODE_ORDER
            | ExtensionPoints::HYPER_NODE_GRADIENT
            | ExtensionPoints::EVENT_HANDLER
    }

    fn hyper_node_gradient(
        &self,
        ssn: &SessionState,
        query: &GradientQuery<'_>,
    ) -> Vec<Vec<HyperNodeId>> {
        let GradientQuery {
            job,
            hard_tier,
            start,
            allocated,
            min_resource,
            purpose,
        } = *query;
        let Some(highest_tier) = hard_tier else {
            return vec![vec![start]];
        };
        let Some(gradients) =
            self.gradient(ssn, start, highest_tier, allocated, min_resource, purpose)
        else {
            tracing::debug!(job = %ssn.job(job).spec.uid, highest_tier,
                "the HyperNode the job runs in is out of the search's reach; no gradient");
            return Vec::new();
        };
        match purpose {
            SearchPurpose::Allocate => gradients,
            SearchPurpose::Evict => self.reverse_and_cap(gradients),
        }
    }

    fn hyper_node_order(
        &self,
        ssn: &SessionState,
        job: JobId,
        sub_job: SubJobId,
        candidates: &[HyperNodeId],
    ) -> Vec<f64> {
        scores::hyper_node_order(self, ssn, job, sub_job, candidates)
    }

    fn batch_node_order(
        &self,
        ssn: &SessionState,
        task: TaskId,
        nodes: &[NodeId],
    ) -> Result<Vec<f64>, String> {
        Ok(scores::batch_node_order(self, ssn, task, nodes))
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        let t = ssn.task(task);
        if let Some(node) = t.node {
            for h in Self::holding(ssn, node) {
                self.resources[h.index()].used.add(t.resreq());
            }
        }
        Ok(())
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        let t = ssn.task(task);
        if let Some(node) = t.node {
            for h in Self::holding(ssn, node) {
                self.resources[h.index()]
                    .used
                    .sub_without_assert(t.resreq());
            }
        }
    }
}

#[cfg(test)]
mod tests;
