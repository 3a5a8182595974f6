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

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::sync::Arc;

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

/// Which nodes take part in which constraint's counting, nodes by their place in the node
/// list the table was built from.
#[derive(Debug)]
struct Included {
    /// Row-major: node × constraint.
    included: Vec<bool>,
    width: usize,
}

impl Included {
    fn build(
        pod: &Pod,
        constraints: &[Constraint<'_>],
        nodes: &[&Node],
        eligible: &dyn Fn(&Node) -> bool,
    ) -> Self {
        let width = constraints.len();
        let mut included = vec![false; nodes.len() * width];
        let needs_affinity = constraints.iter().any(|c| c.honor_node_affinity);
        let needs_taints = constraints.iter().any(|c| c.honor_node_taints);
        for (i, node) in nodes.iter().enumerate() {
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
        Self { included, width }
    }

    fn included(&self, node: usize, constraint: usize) -> bool {
        self.included
            .get(node * self.width + constraint)
            .copied()
            .unwrap_or(false)
    }
}

/// [`Included`] with the nodes' places found by name.
struct Inclusion<'n> {
    index: FxHashMap<&'n str, usize>,
    table: Included,
}

impl<'n> Inclusion<'n> {
    fn build(
        pod: &Pod,
        constraints: &[Constraint<'_>],
        nodes: &[&'n Node],
        eligible: &dyn Fn(&Node) -> bool,
    ) -> Self {
        Self {
            index: name_index(nodes),
            table: Included::build(pod, constraints, nodes, eligible),
        }
    }

    /// The node's position, if it is one of the nodes the table was built from.
    fn position(&self, node: &Node) -> Option<usize> {
        self.index.get(node_name(node)).copied()
    }

    fn included(&self, node: usize, constraint: usize) -> bool {
        self.table.included(node, constraint)
    }
}

fn name_index<'n>(nodes: &[&'n Node]) -> FxHashMap<&'n str, usize> {
    nodes
        .iter()
        .enumerate()
        .map(|(i, node)| (node_name(node), i))
        .collect()
}

/// The domains of a pod's `DoNotSchedule` constraints before any pod is counted: which nodes
/// take part in which constraint, and the domains they open. It rests on the pod's spec alone
/// (constraints, node selector and affinity, tolerations) and on the nodes, so the pods of a
/// scheduling class can share it within a session rather than each going over every node.
#[derive(Debug)]
pub struct SpreadDomains {
    included: Included,
    /// Per constraint, every eligible domain with a count of 0.
    empty_counts: Vec<FxHashMap<String, i64>>,
    /// Per constraint, the values of its topology key over the nodes, and each node's value
    /// as its place in that list ([`NO_VALUE`] when the node lacks the key): the filter then
    /// looks a node up by position instead of by its labels.
    values: Vec<Vec<String>>,
    node_values: Vec<Vec<u32>>,
}

/// A node without the constraint's topology key.
const NO_VALUE: u32 = u32::MAX;

impl SpreadDomains {
    /// Over `all_nodes` (`eligible` = the pod's node selector / required node affinity); `None`
    /// when the pod has no `DoNotSchedule` constraint.
    pub fn build(pod: &Pod, all_nodes: &[&Node], eligible: &dyn Fn(&Node) -> bool) -> Option<Self> {
        let constraints = Constraint::of_pod(pod, DO_NOT_SCHEDULE);
        if constraints.is_empty() {
            return None;
        }
        let included = Included::build(pod, &constraints, all_nodes, eligible);
        // Every eligible node opens its domain, so empty domains take part in the minimum.
        let mut counts: Vec<FxHashMap<String, i64>> = vec![FxHashMap::default(); constraints.len()];
        for (i, node) in all_nodes.iter().enumerate() {
            let labels = node_labels(node);
            for (ci, c) in constraints.iter().enumerate() {
                let Some(value) = labels.get(c.topology_key) else {
                    continue;
                };
                if included.included(i, ci) && !counts[ci].contains_key(value) {
                    counts[ci].insert(value.clone(), 0);
                }
            }
        }
        let mut values = Vec::with_capacity(constraints.len());
        let mut node_values = Vec::with_capacity(constraints.len());
        for c in &constraints {
            let mut ids: FxHashMap<&str, u32> = FxHashMap::default();
            let mut list = Vec::new();
            let of_node = all_nodes
                .iter()
                .map(|node| match node_labels(node).get(c.topology_key) {
                    None => NO_VALUE,
                    Some(v) => *ids.entry(v.as_str()).or_insert_with(|| {
                        list.push(v.clone());
                        (list.len() - 1) as u32
                    }),
                })
                .collect();
            values.push(list);
            node_values.push(of_node);
        }
        Some(Self {
            included,
            empty_counts: counts,
            values,
            node_values,
        })
    }
}

/// What [`SpreadDomains::build`] reads of a pod, as text: its `DoNotSchedule` constraints'
/// topology keys and node inclusion policies, in order, its node selector, required node
/// affinity and tolerations. Pods with the same key get the same domains, so they can share
/// them (the pods of a job that spreads over its own label differ only in the selector).
pub fn domains_key(pod: &Pod) -> String {
    let spec = pod.spec.as_ref();
    let constraints: Vec<_> = (spec.and_then(|s| s.topology_spread_constraints.as_deref()))
        .unwrap_or(&[])
        .iter()
        .filter(|c| c.when_unsatisfiable == DO_NOT_SCHEDULE)
        .map(|c| {
            (
                &c.topology_key,
                &c.node_affinity_policy,
                &c.node_taints_policy,
            )
        })
        .collect();
    let read = (
        constraints,
        spec.and_then(|s| s.node_selector.as_ref()),
        spec.and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
        spec.and_then(|s| s.tolerations.as_ref()),
    );
    // Serialising these API types cannot fail; were it to, the pod's name keeps it apart.
    serde_json::to_string(&read).unwrap_or_else(|_| format!("pod {:?}", pod.metadata.uid))
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
    counts: FxHashMap<String, i64>,
    /// Minimum of `counts`; `i32::MAX` when there is no eligible domain, as upstream.
    min_match: i64,
}

impl FilterConstraint {
    /// Whether the pod may join the domain of value `value`:
    /// `matching pods there + self match − global minimum ≤ maxSkew`.
    fn admits(&self, value: &str) -> bool {
        let domains = i64::try_from(self.counts.len()).unwrap_or(i64::MAX);
        let min_match = if domains < self.min_domains {
            0
        } else {
            self.min_match
        };
        let match_num = self.counts.get(value).copied().unwrap_or(0);
        match_num + i64::from(self.self_match) - min_match <= self.max_skew
    }
}

/// Upstream PreFilter state of PodTopologySpread (DoNotSchedule constraints).
#[derive(Debug, Clone)]
pub struct SpreadFilterState {
    constraints: Vec<FilterConstraint>,
    /// The filter's answer per domain, for nodes found by position.
    by_position: Option<ByPosition>,
}

/// Per constraint, whether each domain (a value in the domains' list) admits the pod.
#[derive(Debug, Clone)]
struct ByPosition {
    domains: Arc<SpreadDomains>,
    passes: Vec<Vec<bool>>,
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
        let domains = Arc::new(SpreadDomains::build(pod, all_nodes, eligible)?);
        let index = name_index(all_nodes);
        let position = |node: &Node| index.get(node_name(node)).copied();
        Self::compute_in(pod, placed, &domains, &position)
    }

    /// [`SpreadFilterState::compute`] on domains already worked out for the pod's class
    /// ([`SpreadDomains::build`]); `position` gives a node's place in the node list they were
    /// built from. Costs one pass over `placed`.
    pub fn compute_in<'a>(
        pod: &Pod,
        placed: impl Iterator<Item = PlacedPod<'a>>,
        domains: &Arc<SpreadDomains>,
        position: &dyn Fn(&Node) -> Option<usize>,
    ) -> Option<Self> {
        let constraints = Constraint::of_pod(pod, DO_NOT_SCHEDULE);
        if constraints.is_empty() {
            return None;
        }
        let inclusion = &domains.included;
        let mut counts = domains.empty_counts.clone();

        let namespace = pod_namespace(pod);
        for placed_pod in placed {
            if !countable(placed_pod.pod, namespace) {
                continue;
            }
            let Some(i) = position(placed_pod.node) else {
                continue;
            };
            let labels = pod_labels(placed_pod.pod);
            let node_labels = node_labels(placed_pod.node);
            for (ci, c) in constraints.iter().enumerate() {
                if !inclusion.included(i, ci) || !c.counts(labels) {
                    continue;
                }
                if let Some(count) = node_labels
                    .get(c.topology_key)
                    .and_then(|value| counts.get_mut(ci)?.get_mut(value))
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
            .collect::<Vec<_>>();
        let passes = constraints
            .iter()
            .zip(&domains.values)
            .map(|(c, values)| values.iter().map(|v| c.admits(v)).collect())
            .collect();
        Some(Self {
            constraints,
            by_position: Some(ByPosition {
                domains: domains.clone(),
                passes,
            }),
        })
    }

    /// [`SpreadFilterState::filter`] for the node at `position` in the node list the domains
    /// were built from (by its labels when the state has no such list).
    /// `node` gives the node itself, needed only without such a list.
    pub fn filter_at<'n>(
        &self,
        pod: &Pod,
        position: usize,
        node: impl Fn() -> &'n Node,
    ) -> Result<(), SpreadFailure> {
        let Some(by) = &self.by_position else {
            return self.filter(pod, node());
        };
        for (ci, passes) in by.passes.iter().enumerate() {
            let value = by
                .domains
                .node_values
                .get(ci)
                .and_then(|of_node| of_node.get(position));
            match value {
                None => return self.filter(pod, node()),
                Some(&NO_VALUE) => return Err(SpreadFailure::MissingTopologyKey),
                Some(&v) => {
                    if !passes.get(v as usize).copied().unwrap_or(false) {
                        return Err(SpreadFailure::SkewTooLarge);
                    }
                }
            }
        }
        Ok(())
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
            if !c.admits(value) {
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
    let mut domain_counts: Vec<FxHashMap<&str, i64>> =
        vec![FxHashMap::default(); constraints.len()];
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
    let mut per_node: Vec<FxHashMap<&str, i64>> = vec![FxHashMap::default(); constraints.len()];
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
