//! Pod topology spread: the upstream `PodTopologySpread` plugin of Kubernetes v1.36
//! (`pkg/scheduler/framework/plugins/podtopologyspread`), spec plugins-core.md §6.3 (filter,
//! `whenUnsatisfiable: DoNotSchedule`) and §7.5 (score, `ScheduleAnyway`).
//!
//! Domains: a node takes part in a constraint's counting when it carries *every* topology key of
//! the pod's constraints (of the kind being evaluated) and passes the constraint's node inclusion
//! policies — `nodeAffinityPolicy` (default `Honor`: the caller's `eligible` callback, i.e. the
//! pod's node selector and required node affinity) and `nodeTaintsPolicy` (default `Ignore`;
//! `Honor` excludes nodes with a `NoSchedule`/`NoExecute` taint the pod does not tolerate).
//! Counted pods are those in the incoming pod's namespace, not terminating, matching the
//! constraint's selector; an empty selector `{}` counts nothing, as upstream.
//!
//! `matchLabelKeys` are merged into the selector from the incoming pod's labels (a no-op for pods
//! whose selector the API server already merged). `minDomains` (default 1): with fewer eligible
//! domains the global minimum is taken as 0.
//!
//! Not implemented on purpose: the cluster-level system default constraints (zone skew 5,
//! hostname skew 3, `ScheduleAnyway`) that upstream applies to pods without constraints. Their
//! selector is derived from the Services / ReplicaSets / StatefulSets / ReplicationControllers
//! selecting the pod, and the scheduler model has no such objects, so a pod without explicit
//! constraints gets no spread score.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Node, Pod, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::labels::{
    LABEL_HOSTNAME, PlacedPod, node_labels, node_name, pod_labels, pod_namespace,
    selector_is_empty, selector_matches,
};
use super::resources::MAX_NODE_SCORE;
use super::taints::find_untolerated_taint;

const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
const POLICY_HONOR: &str = "Honor";

/// Why a node fails the topology spread filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpreadFailure {
    /// The node lacks the topology key of a constraint.
    MissingTopologyKey,
    /// Placing the pod in the node's domain would exceed a constraint's `maxSkew`.
    SkewTooLarge,
}

impl SpreadFailure {
    /// The upstream failure reason.
    pub fn reason(self) -> &'static str {
        match self {
            Self::MissingTopologyKey => {
                "node(s) didn't match pod topology spread constraints (missing required label)"
            }
            Self::SkewTooLarge => "node(s) didn't match pod topology spread constraints",
        }
    }

    /// True for UnschedulableAndUnresolvable (evicting pods cannot help), false for Unschedulable.
    pub fn unresolvable(self) -> bool {
        matches!(self, Self::MissingTopologyKey)
    }
}

/// One constraint of the incoming pod with its selector resolved.
struct Constraint<'p> {
    max_skew: i64,
    topology_key: &'p str,
    /// `None` (no `labelSelector`) matches nothing, even with `matchLabelKeys`.
    selector: Option<&'p LabelSelector>,
    /// `matchLabelKeys` resolved against the incoming pod's labels (keys it lacks are skipped).
    pod_label_pairs: Vec<(&'p str, &'p str)>,
    min_domains: i64,
    honor_node_affinity: bool,
    honor_node_taints: bool,
}

impl<'p> Constraint<'p> {
    /// The pod's constraints with the given `whenUnsatisfiable` action, in spec order.
    fn of_pod(pod: &'p Pod, action: &str) -> Vec<Self> {
        let own_labels = pod_labels(pod);
        pod.spec
            .as_ref()
            .and_then(|s| s.topology_spread_constraints.as_deref())
            .unwrap_or(&[])
            .iter()
            .filter(|c| c.when_unsatisfiable == action)
            .map(|c: &'p TopologySpreadConstraint| Self {
                max_skew: i64::from(c.max_skew),
                topology_key: &c.topology_key,
                selector: c.label_selector.as_ref(),
                pod_label_pairs: c
                    .match_label_keys
                    .iter()
                    .flatten()
                    .filter_map(|key| {
                        own_labels
                            .get_key_value(key)
                            .map(|(k, v)| (k.as_str(), v.as_str()))
                    })
                    .collect(),
                min_domains: i64::from(c.min_domains.unwrap_or(1)),
                honor_node_affinity: c.node_affinity_policy.as_deref().unwrap_or(POLICY_HONOR)
                    == POLICY_HONOR,
                honor_node_taints: c.node_taints_policy.as_deref() == Some(POLICY_HONOR),
            })
            .collect()
    }

    /// Whether the (merged) selector matches `labels`.
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector.is_some_and(|sel| {
            selector_matches(sel, labels)
                && self
                    .pod_label_pairs
                    .iter()
                    .all(|&(k, v)| labels.get(k).is_some_and(|l| l == v))
        })
    }

    /// Whether an existing pod with `labels` is counted: upstream counts nothing for an empty
    /// selector even though the selector itself matches everything.
    fn counts(&self, labels: &BTreeMap<String, String>) -> bool {
        let empty = self.pod_label_pairs.is_empty() && self.selector.is_some_and(selector_is_empty);
        !empty && self.matches(labels)
    }

    fn is_hostname(&self) -> bool {
        self.topology_key == LABEL_HOSTNAME
    }
}

fn has_all_keys(node: &Node, constraints: &[Constraint<'_>]) -> bool {
    let labels = node_labels(node);
    constraints
        .iter()
        .all(|c| labels.contains_key(c.topology_key))
}

/// Which nodes take part in which constraint's counting.
struct Inclusion<'n> {
    index: HashMap<&'n str, usize>,
    /// Row-major: node × constraint.
    included: Vec<bool>,
    width: usize,
}

impl<'n> Inclusion<'n> {
    fn build(
        pod: &Pod,
        constraints: &[Constraint<'_>],
        nodes: &[&'n Node],
        eligible: &dyn Fn(&Node) -> bool,
    ) -> Self {
        let width = constraints.len();
        let mut included = vec![false; nodes.len() * width];
        let mut index = HashMap::with_capacity(nodes.len());
        let needs_affinity = constraints.iter().any(|c| c.honor_node_affinity);
        let needs_taints = constraints.iter().any(|c| c.honor_node_taints);
        for (i, node) in nodes.iter().enumerate() {
            index.insert(node_name(node), i);
            if !has_all_keys(node, constraints) {
                continue;
            }
            // Each policy is evaluated once per node, and only when some constraint honours it.
            let passes_affinity = !needs_affinity || eligible(node);
            let passes_taints = !needs_taints || find_untolerated_taint(pod, node).is_none();
            let row = &mut included[i * width..(i + 1) * width];
            for (c, slot) in constraints.iter().zip(row) {
                *slot = (!c.honor_node_affinity || passes_affinity)
                    && (!c.honor_node_taints || passes_taints);
            }
        }
        Self {
            index,
            included,
            width,
        }
    }

    /// The node's position, if it is one of the nodes the table was built from.
    fn position(&self, node: &Node) -> Option<usize> {
        self.index.get(node_name(node)).copied()
    }

    fn included(&self, node: usize, constraint: usize) -> bool {
        self.included
            .get(node * self.width + constraint)
            .copied()
            .unwrap_or(false)
    }
}

/// Whether an existing pod can count toward the incoming pod's constraints at all.
fn countable(existing: &Pod, namespace: &str) -> bool {
    existing.metadata.deletion_timestamp.is_none() && pod_namespace(existing) == namespace
}

/// Per-constraint state for the filter.
#[derive(Debug, Clone)]
struct FilterConstraint {
    topology_key: String,
    max_skew: i64,
    min_domains: i64,
    /// The incoming pod matches the constraint's selector (it would add 1 to its domain).
    self_match: bool,
    /// Matching pods per eligible domain (every eligible domain present, possibly 0).
    counts: HashMap<String, i64>,
    /// Minimum of `counts`; `i32::MAX` when there is no eligible domain, as upstream.
    min_match: i64,
}

/// Upstream PreFilter state of PodTopologySpread (DoNotSchedule constraints).
#[derive(Debug, Clone)]
pub struct SpreadFilterState {
    constraints: Vec<FilterConstraint>,
}

impl SpreadFilterState {
    /// Upstream PreFilter over the `DoNotSchedule` constraints; `None` when the pod has none
    /// (Skip). Domains are counted over `all_nodes` that carry every constraint key and pass the
    /// inclusion policies (`eligible` = the pod's node selector / required node affinity).
    ///
    /// Cost: one pass over `all_nodes` and one over `placed`; a placed pod outside the incoming
    /// pod's namespace costs a string comparison.
    pub fn compute<'a>(
        pod: &Pod,
        placed: impl Iterator<Item = PlacedPod<'a>>,
        all_nodes: &[&Node],
        eligible: &dyn Fn(&Node) -> bool,
    ) -> Option<Self> {
        let constraints = Constraint::of_pod(pod, DO_NOT_SCHEDULE);
        if constraints.is_empty() {
            return None;
        }
        let inclusion = Inclusion::build(pod, &constraints, all_nodes, eligible);

        // Every eligible node opens its domain, so empty domains take part in the minimum.
        let mut counts: Vec<HashMap<String, i64>> = vec![HashMap::new(); constraints.len()];
        for (i, node) in all_nodes.iter().enumerate() {
            let labels = node_labels(node);
            for (ci, c) in constraints.iter().enumerate() {
                let Some(value) = labels.get(c.topology_key) else {
                    continue;
                };
                if inclusion.included(i, ci) && !counts[ci].contains_key(value) {
                    counts[ci].insert(value.clone(), 0);
                }
            }
        }

        let namespace = pod_namespace(pod);
        for placed_pod in placed {
            if !countable(placed_pod.pod, namespace) {
                continue;
            }
            let Some(i) = inclusion.position(placed_pod.node) else {
                continue;
            };
            let labels = pod_labels(placed_pod.pod);
            let node_labels = node_labels(all_nodes[i]);
            for (ci, c) in constraints.iter().enumerate() {
                if !inclusion.included(i, ci) || !c.counts(labels) {
                    continue;
                }
                if let Some(count) = node_labels
                    .get(c.topology_key)
                    .and_then(|value| counts[ci].get_mut(value))
                {
                    *count += 1;
                }
            }
        }

        let own_labels = pod_labels(pod);
        let constraints = constraints
            .iter()
            .zip(counts)
            .map(|(c, counts)| FilterConstraint {
                topology_key: c.topology_key.to_owned(),
                max_skew: c.max_skew,
                min_domains: c.min_domains,
                self_match: c.matches(own_labels),
                min_match: counts
                    .values()
                    .copied()
                    .min()
                    .unwrap_or(i64::from(i32::MAX)),
                counts,
            })
            .collect();
        Some(Self { constraints })
    }

    /// Upstream Filter for one node: for each constraint in order, the node must carry the key,
    /// and `matching pods in its domain + self match − global minimum ≤ maxSkew`. `_pod` is the
    /// pod `compute` was called for; everything needed from it is already in the state.
    pub fn filter(&self, _pod: &Pod, node: &Node) -> Result<(), SpreadFailure> {
        let labels = node_labels(node);
        for c in &self.constraints {
            let Some(value) = labels.get(&c.topology_key) else {
                return Err(SpreadFailure::MissingTopologyKey);
            };
            let domains = i64::try_from(c.counts.len()).unwrap_or(i64::MAX);
            let min_match = if domains < c.min_domains {
                0
            } else {
                c.min_match
            };
            let match_num = c.counts.get(value).copied().unwrap_or(0);
            let skew = match_num + i64::from(c.self_match) - min_match;
            if skew > c.max_skew {
                return Err(SpreadFailure::SkewTooLarge);
            }
        }
        Ok(())
    }
}

/// Upstream `topologyNormalizingWeight`: smaller topologies weigh less.
fn topology_normalizing_weight(domains: usize) -> f64 {
    (domains as f64 + 2.0).ln()
}

/// Topology spread scores of `candidates` for the pod's `ScheduleAnyway` constraints (upstream
/// PodTopologySpread PreScore, Score and NormalizeScore). Per candidate the raw score is
/// `round(Σ count_in_domain × ln(domains + 2) + (maxSkew − 1))`; then candidates lacking a
/// constraint key get 0 and the others `100 × (max + min − raw) / max` (100 when `max = 0`), so
/// emptier domains score higher.
///
/// Domain counts use `all_nodes` as for [`SpreadFilterState::compute`], but only domains of
/// scored candidates are counted and weighed; hostname constraints count the candidate's own pods.
/// Returns `None` (Skip) when the pod has no `ScheduleAnyway` constraint or there are no nodes.
/// System default constraints are not derived (see the module documentation).
pub fn spread_scores<'a>(
    pod: &Pod,
    placed: &[PlacedPod<'a>],
    candidates: &[&Node],
    all_nodes: &[&Node],
    eligible: &dyn Fn(&Node) -> bool,
) -> Option<Vec<i64>> {
    if all_nodes.is_empty() {
        return None;
    }
    let constraints = Constraint::of_pod(pod, SCHEDULE_ANYWAY);
    if constraints.is_empty() {
        return None;
    }

    let scored: Vec<bool> = candidates
        .iter()
        .map(|node| has_all_keys(node, &constraints))
        .collect();
    let scored_count = scored.iter().filter(|&&s| s).count();

    // Domains of the scored candidates, per constraint (hostname constraints count per node).
    let mut domain_counts: Vec<HashMap<&str, i64>> = vec![HashMap::new(); constraints.len()];
    for (node, _) in candidates.iter().zip(&scored).filter(|(_, s)| **s) {
        let labels = node_labels(node);
        for (c, counts) in constraints.iter().zip(&mut domain_counts) {
            if c.is_hostname() {
                continue;
            }
            if let Some(value) = labels.get(c.topology_key) {
                counts.entry(value.as_str()).or_insert(0);
            }
        }
    }
    let weights: Vec<f64> = constraints
        .iter()
        .zip(&domain_counts)
        .map(|(c, counts)| {
            topology_normalizing_weight(if c.is_hostname() {
                scored_count
            } else {
                counts.len()
            })
        })
        .collect();

    let inclusion = Inclusion::build(pod, &constraints, all_nodes, eligible);
    let namespace = pod_namespace(pod);
    // Matching pods per node name, for the hostname constraints.
    let mut per_node: Vec<HashMap<&str, i64>> = vec![HashMap::new(); constraints.len()];
    for placed_pod in placed {
        if !countable(placed_pod.pod, namespace) {
            continue;
        }
        let labels = pod_labels(placed_pod.pod);
        let position = inclusion.position(placed_pod.node);
        for (ci, c) in constraints.iter().enumerate() {
            if !c.counts(labels) {
                continue;
            }
            if c.is_hostname() {
                *per_node[ci].entry(node_name(placed_pod.node)).or_insert(0) += 1;
                continue;
            }
            let Some(i) = position.filter(|&i| inclusion.included(i, ci)) else {
                continue;
            };
            if let Some(count) = node_labels(all_nodes[i])
                .get(c.topology_key)
                .and_then(|value| domain_counts[ci].get_mut(value.as_str()))
            {
                *count += 1;
            }
        }
    }

    let raw: Vec<Option<i64>> = candidates
        .iter()
        .zip(&scored)
        .map(|(node, &is_scored)| {
            if !is_scored {
                return None;
            }
            let labels = node_labels(node);
            let total: f64 = constraints
                .iter()
                .enumerate()
                .filter_map(|(ci, c)| {
                    let value = labels.get(c.topology_key)?;
                    let count = if c.is_hostname() {
                        per_node[ci].get(node_name(node)).copied().unwrap_or(0)
                    } else {
                        domain_counts[ci].get(value.as_str()).copied().unwrap_or(0)
                    };
                    Some(count as f64 * weights[ci] + (c.max_skew - 1) as f64)
                })
                .sum();
            // Rust's `round` is half away from zero, like Go's math.Round.
            Some(total.round() as i64)
        })
        .collect();
    Some(normalize_spread(&raw))
}

/// Upstream PodTopologySpread NormalizeScore; `None` marks a candidate lacking a topology key.
fn normalize_spread(raw: &[Option<i64>]) -> Vec<i64> {
    let min = raw.iter().flatten().copied().min().unwrap_or(i64::MAX);
    let max = raw.iter().flatten().copied().fold(0, i64::max);
    raw.iter()
        .map(|score| match *score {
            None => 0,
            Some(_) if max == 0 => MAX_NODE_SCORE,
            Some(s) => {
                let v = i128::from(MAX_NODE_SCORE)
                    * (i128::from(max) + i128::from(min) - i128::from(s))
                    / i128::from(max);
                i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
