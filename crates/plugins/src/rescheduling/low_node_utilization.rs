//! The `lowNodeUtilization` strategy (Volcano's `victimsFnForLnu`): nodes whose measured load
//! is under every `thresholds` value are *low*, nodes over some `targetThresholds` value are
//! *high*; pods are taken off the high nodes, most loaded node first and least important pod
//! first, while the node stays at or over a target and the low nodes still have room for what
//! is taken (their distance to the targets, summed: the budget).

use std::collections::HashSet;

use engine::conf::{ArgValue, ArgWarning};
use engine::framework::SessionState;
use engine::model::{NodeId, Resource, TaskId};

use crate::k8s::qos::{QosClass, pod_qos};

/// Percent limits on cpu and memory (Volcano also accepts `pod`, which is never measured).
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    pub low_cpu: f64,
    pub low_memory: f64,
    pub target_cpu: f64,
    pub target_memory: f64,
}

impl Default for Thresholds {
    /// Volcano's defaults, 100 everywhere: no node is ever high, so nothing moves.
    fn default() -> Self {
        Thresholds {
            low_cpu: 100.0,
            low_memory: 100.0,
            target_cpu: 100.0,
            target_memory: 100.0,
        }
    }
}

impl Thresholds {
    /// `params: {thresholds: {cpu, memory}, targetThresholds: {cpu, memory}}`, integers in
    /// percent. Keys left out keep 100.
    pub fn parse(params: Option<&ArgValue>, key: &str, warnings: &mut Vec<ArgWarning>) -> Self {
        let mut out = Thresholds::default();
        let Some(params) = params.and_then(ArgValue::as_map) else {
            return out;
        };
        for (name, value) in params {
            let (low, target) = match name.as_str() {
                Some("thresholds") => (true, false),
                Some("targetThresholds") => (false, true),
                _ => continue,
            };
            let field = format!("{key}.params.{}", name.as_str().unwrap_or_default());
            let Some(entries) = value.as_map() else {
                warnings.push(ArgWarning::new(
                    field,
                    "is not a map of percentages; 100 is used",
                ));
                continue;
            };
            for (resource, percent) in entries {
                let resource = resource.as_str().unwrap_or_default();
                let slot = match (resource, low, target) {
                    ("cpu", true, _) => &mut out.low_cpu,
                    ("memory", true, _) => &mut out.low_memory,
                    ("cpu", _, true) => &mut out.target_cpu,
                    ("memory", _, true) => &mut out.target_memory,
                    // Pod counts are never measured; Volcano ignores them too.
                    ("pod" | "pods", _, _) => continue,
                    _ => {
                        warnings.push(ArgWarning::new(
                            format!("{field}.{resource}"),
                            "is not cpu or memory; ignored",
                        ));
                        continue;
                    }
                };
                match percent {
                    ArgValue::Int(v) => *slot = *v as f64,
                    other => warnings.push(ArgWarning::new(
                        format!("{field}.{resource}"),
                        format!("{other:?} is not a whole percentage; 100 is used"),
                    )),
                }
            }
        }
        out
    }
}

/// Measured load in percent.
#[derive(Copy, Clone, Debug, Default)]
struct Load {
    cpu: f64,
    memory: f64,
}

/// The victims, in eviction order: high nodes by load (cpu + memory, highest first, ties in
/// node order), each node's pods in `sortPods` order. `read_load` false: no node has a load.
pub fn victims(
    ssn: &SessionState,
    candidates: &[TaskId],
    th: &Thresholds,
    read_load: bool,
) -> Vec<TaskId> {
    let load_of = |n: NodeId| {
        let usage = ssn.node(n).usage.as_ref().filter(|_| read_load);
        usage.map_or(Load::default(), |u| Load {
            cpu: u.cpu_percent,
            memory: u.memory_percent,
        })
    };
    let mut low = Vec::new();
    let mut high = Vec::new();
    for n in ssn.node_ids() {
        let load = load_of(n);
        let unschedulable = raw_node(ssn, n)
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        if !unschedulable && load.cpu < th.low_cpu && load.memory < th.low_memory {
            low.push(n);
        } else if load.cpu > th.target_cpu || load.memory > th.target_memory {
            high.push((n, load));
        }
    }
    if low.is_empty() || low.len() == ssn.nodes().len() || high.is_empty() {
        return Vec::new();
    }
    // The low nodes' room up to the targets, in millicores and bytes.
    let mut budget = (0.0_f64, 0.0_f64);
    for &n in &low {
        let base = budget_base(ssn, n);
        let load = load_of(n);
        budget.0 += (th.target_cpu * base.milli_cpu * 0.01).trunc()
            - (load.cpu * base.milli_cpu * 0.01).trunc();
        budget.1 += (th.target_memory * base.memory * 0.01).trunc()
            - (load.memory * base.memory * 0.01).trunc();
    }
    high.sort_by(|a, b| (b.1.cpu + b.1.memory).total_cmp(&(a.1.cpu + a.1.memory)));

    let allowed: HashSet<TaskId> = candidates.iter().copied().collect();
    let mut victims = Vec::new();
    for (n, mut load) in high {
        let capacity = capacity(ssn, n);
        for t in pods_in_eviction_order(ssn, n) {
            let overused = load.cpu >= th.target_cpu || load.memory >= th.target_memory;
            if !overused || budget.0 <= 0.0 || budget.1 <= 0.0 {
                break;
            }
            if !allowed.contains(&t) {
                continue;
            }
            let req = ssn.task(t).resreq();
            budget.0 -= req.milli_cpu.trunc();
            budget.1 -= req.memory.trunc();
            load.cpu -= percent(req.milli_cpu.trunc(), capacity.milli_cpu);
            load.memory -= percent(req.memory.trunc(), capacity.memory);
            victims.push(t);
        }
    }
    victims
}

/// `amount` as a percentage of `of`; a node that does not state it gets its load to zero
/// (Volcano divides by zero there, and the resource then never counts as over its target).
fn percent(amount: f64, of: f64) -> f64 {
    if of > 0.0 {
        amount * 100.0 / of
    } else {
        f64::INFINITY
    }
}

fn raw_node(ssn: &SessionState, n: NodeId) -> &k8s_openapi::api::core::v1::Node {
    &ssn.node(n).spec.node
}

/// The node's `status.allocatable` if it lists anything, else its `status.capacity`.
fn budget_base(ssn: &SessionState, n: NodeId) -> Resource {
    let status = raw_node(ssn, n).status.as_ref();
    match status.and_then(|s| s.allocatable.as_ref()) {
        Some(list) if !list.is_empty() => Resource::from_list(list),
        _ => capacity(ssn, n),
    }
}

fn capacity(ssn: &SessionState, n: NodeId) -> Resource {
    raw_node(ssn, n)
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .map(Resource::from_list)
        .unwrap_or_default()
}

/// Volcano's `sortPods`: pods without a priority first, then lower `spec.priority`, then
/// BestEffort < Burstable < Guaranteed; ties in the node's task order.
fn pods_in_eviction_order(ssn: &SessionState, n: NodeId) -> Vec<TaskId> {
    let mut pods: Vec<(TaskId, (bool, i32, QosClass))> = ssn
        .node(n)
        .tasks
        .iter()
        .map(|&(t, _)| {
            let pod = &ssn.task(t).spec.pod;
            let priority = pod.spec.as_ref().and_then(|s| s.priority);
            (t, (priority.is_some(), priority.unwrap_or(0), pod_qos(pod)))
        })
        .collect();
    pods.sort_by_key(|&(_, key)| key);
    pods.into_iter().map(|(t, _)| t).collect()
}
