//! The scores of `network-topology-aware` (spec/plugins-more.md §14.3).

use engine::conf::{ArgWarning, Arguments};
use engine::framework::SessionState;
use engine::model::resource::{CPU, MEMORY};
use engine::model::{HyperNodeId, JobId, NodeId, ResourceName, SubJobId, TaskId};

use super::NetworkTopologyAware;
use crate::binpack::{read_resource_weight, read_resource_weights};

const WEIGHT_KEY: &str = "weight";

/// Kubernetes' `MaxNodeScore`.
const MAX_NODE_SCORE: f64 = 100.0;

/// The plugin's weights (§14.1): the overall one and one per packed resource.
#[derive(Clone, Debug, PartialEq)]
pub struct Weights {
    pub weight: i64,
    pub cpu: i64,
    pub memory: i64,
    pub scalars: Vec<(ResourceName, i64)>,
}

impl Weights {
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Weights {
        let weight = read_resource_weight(args, WEIGHT_KEY, warnings);
        let (cpu, memory, scalars) = read_resource_weights(args, "hypernode.binpack.", warnings);
        Weights {
            weight,
            cpu,
            memory,
            scalars,
        }
    }

    /// `getBinPackWeight`: the weight of a resource, if it is packed.
    fn of(&self, name: &str) -> Option<i64> {
        match name {
            CPU => Some(self.cpu),
            MEMORY => Some(self.memory),
            _ => self
                .scalars
                .iter()
                .find(|(n, _)| n.as_str() == name)
                .map(|&(_, w)| w),
        }
    }

    fn scale(&self, score: f64) -> f64 {
        MAX_NODE_SCORE * self.weight as f64 * score
    }
}

/// The weighted fill of a HyperNode once `request` (resource name → amount) is added to what
/// it uses; 0 when a resource would overflow or none is packed.
fn fill(plugin: &NetworkTopologyAware, hn: HyperNodeId, request: &[(String, f64)]) -> f64 {
    let Some(r) = plugin.resources.get(hn.index()) else {
        return 0.0;
    };
    let (mut total, mut weights) = (0.0, 0i64);
    for (name, req) in request {
        let Some(w) = plugin.config.weights.of(name) else {
            continue;
        };
        let (allocatable, used, req) = (r.allocatable.get(name), r.used.get(name), *req);
        if used + req > allocatable {
            return 0.0;
        }
        total += w as f64 * (used + req) / allocatable;
        weights += w;
    }
    if weights > 0 {
        total / weights as f64
    } else {
        0.0
    }
}

/// The share of the sub-job's tasks on nodes under `hn` (`scoreWithTaskNum`).
fn task_share(ssn: &SessionState, job: JobId, sub_job: SubJobId, hn: HyperNodeId) -> f64 {
    let all = ssn.job(job).sub_job_tasks(sub_job).len();
    if all == 0 {
        return 0.0;
    }
    ssn.sub_job_task_count_in(job, sub_job, hn) as f64 / all as f64
}

/// Adds the task share to every entry that ties for the top score, when several do.
fn break_top_ties(scores: &mut [f64], share: impl Fn(usize) -> f64) {
    let Some(max) = scores.iter().copied().reduce(f64::max) else {
        return;
    };
    let top: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] == max).collect();
    if top.len() > 1 {
        for i in top {
            scores[i] += share(i);
        }
    }
}

/// `HyperNodeOrderFn`.
pub(super) fn hyper_node_order(
    plugin: &NetworkTopologyAware,
    ssn: &SessionState,
    job: JobId,
    sub_job: SubJobId,
    candidates: &[HyperNodeId],
) -> Vec<f64> {
    // Every task's request in the packed resources it asks for, summed per resource.
    let mut request: std::collections::BTreeMap<String, f64> = Default::default();
    for &t in ssn.job(job).sub_job_tasks(sub_job) {
        let resreq = ssn.task(t).resreq();
        for name in resreq.resource_names() {
            if plugin.config.weights.of(&name).is_some() {
                let amount = resreq.get(&name);
                *request.entry(name).or_default() += amount;
            }
        }
    }
    let request: Vec<(String, f64)> = request.into_iter().collect();
    let mut scores: Vec<f64> = candidates
        .iter()
        .map(|&hn| fill(plugin, hn, &request))
        .collect();
    break_top_ties(&mut scores, |i| {
        task_share(ssn, job, sub_job, candidates[i])
    });
    scores
        .into_iter()
        .map(|s| plugin.config.weights.scale(s))
        .collect()
}

/// `batchNodeOrderFn`: by topology for a job with a constraint, by HyperNode packing for
/// the others.
pub(super) fn batch_node_order(
    plugin: &NetworkTopologyAware,
    ssn: &SessionState,
    task: TaskId,
    nodes: &[NodeId],
) -> Vec<f64> {
    let Some(job) = ssn.task(task).job else {
        return vec![0.0; nodes.len()];
    };
    let j = ssn.job(job);
    let sub_job = j.sub_job_of(task);
    let scores = if j.sub_job_topology(sub_job).is_some() {
        topology_scores(plugin, ssn, job, sub_job, task, nodes)
    } else if plugin.config.normal_pod_enable {
        packing_scores(plugin, ssn, task, nodes)
    } else {
        vec![0.0; nodes.len()]
    };
    scores
        .into_iter()
        .map(|s| plugin.config.weights.scale(s))
        .collect()
}

/// `scoreHyperNodeWithTier`: 1 for the lowest tier down to 0 for the highest.
fn tier_score(plugin: &NetworkTopologyAware, tier: i32) -> f64 {
    let (min, max) = (plugin.min_tier, plugin.max_tier);
    if min == max {
        return 1.0;
    }
    if (min..=max).contains(&tier) {
        f64::from(max - tier) / f64::from(max - min)
    } else {
        0.0
    }
}

/// `batchNodeOrderFnForNetworkAwarePods`: the lower the common HyperNode of the node's and
/// the job's so far, the better; nothing before the job has a HyperNode.
fn topology_scores(
    plugin: &NetworkTopologyAware,
    ssn: &SessionState,
    job: JobId,
    sub_job: SubJobId,
    task: TaskId,
    nodes: &[NodeId],
) -> Vec<f64> {
    let Some(allocated) = ssn.task_job_hyper_node(task) else {
        return vec![0.0; nodes.len()];
    };
    let topology = ssn.topology();
    let mut scores: Vec<f64> = nodes
        .iter()
        .map(|&n| match topology.lowest_of_node(n) {
            None => 0.0,
            Some(h) if h == allocated => 1.0,
            Some(h) => topology
                .lca(Some(h), Some(allocated))
                .map_or(0.0, |lca| tier_score(plugin, topology.tier(lca))),
        })
        .collect();
    break_top_ties(&mut scores, |i| match topology.lowest_of_node(nodes[i]) {
        Some(h) => task_share(ssn, job, sub_job, h),
        None => 0.0,
    });
    scores
}

/// `batchNodeOrderFnForNormalPods`: per tier, how full the node's HyperNode of that tier
/// would be with the task (1 when no HyperNode of the tier holds the node), the tiers
/// weighted `fading^(tier − 1)`.
fn packing_scores(
    plugin: &NetworkTopologyAware,
    ssn: &SessionState,
    task: TaskId,
    nodes: &[NodeId],
) -> Vec<f64> {
    let tiers: Vec<(i32, f64)> = (plugin.min_tier..=plugin.max_tier)
        .map(|t| (t, plugin.config.normal_pod_fading.powi(t - 1)))
        .collect();
    let total: f64 = tiers.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return vec![0.0; nodes.len()];
    }
    let topology = ssn.topology();
    let resreq = ssn.task(task).resreq();
    let request: Vec<(String, f64)> = resreq
        .resource_names()
        .into_iter()
        .map(|n| {
            let amount = resreq.get(&n);
            (n, amount)
        })
        .collect();
    nodes
        .iter()
        .map(|&n| {
            let sum: f64 = tiers
                .iter()
                .map(|&(tier, w)| {
                    let hn = topology.holding_in_tier(n, tier);
                    w * hn.map_or(1.0, |h| fill(plugin, h, &request))
                })
                .sum();
            sum / total
        })
        .collect()
}
