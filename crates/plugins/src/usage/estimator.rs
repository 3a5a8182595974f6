//! The load estimator and the shadow cache (spec/plugins-more.md §4.5, §4.6): what a task
//! placed in this session, or placed too recently for the metrics to show it, is expected to
//! add to its node's measured load.

use std::collections::BTreeMap;

/// `composite(p, shadow, cap)`: measured percent plus the shadow estimate, as a fraction of
/// capacity, clamped to [0, 1]; 0 for a node without capacity.
pub fn composite_utilization(real_percent: f64, shadow: f64, capacity: f64) -> f64 {
    if capacity <= 0.0 {
        return 0.0;
    }
    ((real_percent / 100.0 * capacity + shadow) / capacity).clamp(0.0, 1.0)
}

/// The weighted mean of the two composites (0 when both weights are 0).
pub fn load_composite(cpu: f64, mem: f64, cpu_weight: i64, mem_weight: i64) -> f64 {
    let total = cpu_weight + mem_weight;
    if total == 0 {
        return 0.0;
    }
    (cpu * cpu_weight as f64 + mem * mem_weight as f64) / total as f64
}

/// The risk factor applies once the node's composite load reaches the threshold.
pub fn applied_risk_factor(load: f64, risk_threshold: f64, risk_factor: f64) -> f64 {
    if risk_factor < 1.0 || load < risk_threshold {
        1.0
    } else {
        risk_factor
    }
}

/// `(r·requestRatio + (L − r)·burstRatio)·rf`, clamped to [0, L], where a limit below the
/// request (or none) counts as the request.
pub fn estimate_pod(
    request: f64,
    limit: f64,
    request_ratio: f64,
    burst_ratio: f64,
    rf: f64,
) -> f64 {
    let request = request.max(0.0);
    let limit = if limit <= 0.0 || limit < request {
        request
    } else {
        limit
    };
    let burst = (limit - request).max(0.0);
    ((request * request_ratio + burst * burst_ratio) * rf).clamp(0.0, limit)
}

/// A best-effort pod's configured estimate times the risk factor.
pub fn estimate_best_effort(configured: f64, rf: f64) -> f64 {
    configured.max(0.0) * rf
}

/// `[0, 100·usageWeight]`: the less loaded, the higher.
pub fn node_score(cpu: f64, mem: f64, cpu_weight: i64, mem_weight: i64, usage_weight: i64) -> f64 {
    let total = cpu_weight + mem_weight;
    if total == 0 {
        return 0.0;
    }
    let score = ((1.0 - cpu) * cpu_weight as f64 + (1.0 - mem) * mem_weight as f64) / total as f64;
    score * 100.0 * usage_weight as f64
}

/// One task's recorded estimate: subtracting it later removes exactly what was added.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub node: String,
    pub cpu: f64,
    pub mem: f64,
}

/// Per-node estimate totals (millicores, bytes) and the per-task records behind them.
#[derive(Debug, Default)]
pub struct ShadowCache {
    nodes: BTreeMap<String, (f64, f64)>,
    tasks: BTreeMap<String, Snapshot>,
}

impl ShadowCache {
    /// Records a task's estimate on `node`, first removing any earlier record of the task.
    pub fn add(&mut self, node: &str, task: &str, cpu: f64, mem: f64) {
        self.sub(task);
        let total = self.nodes.entry(node.to_string()).or_default();
        total.0 += cpu;
        total.1 += mem;
        self.tasks.insert(
            task.to_string(),
            Snapshot {
                node: node.to_string(),
                cpu,
                mem,
            },
        );
    }

    /// Removes a task's recorded estimate (nothing when there is none); totals stay ≥ 0.
    pub fn sub(&mut self, task: &str) {
        let Some(s) = self.tasks.remove(task) else {
            return;
        };
        if let Some(total) = self.nodes.get_mut(&s.node) {
            total.0 = (total.0 - s.cpu).max(0.0);
            total.1 = (total.1 - s.mem).max(0.0);
        }
    }

    /// The node's estimate totals (millicores, bytes).
    pub fn node(&self, node: &str) -> (f64, f64) {
        self.nodes.get(node).copied().unwrap_or_default()
    }

    pub fn snapshot(&self, task: &str) -> Option<&Snapshot> {
        self.tasks.get(task)
    }

    pub fn clear(&mut self) {
        self.nodes.clear();
        self.tasks.clear();
    }
}
