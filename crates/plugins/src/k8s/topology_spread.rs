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
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const ZONE: &str = "topology.kubernetes.io/zone";

    fn node(name: &str, labels: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("node")
    }

    fn pod(ns: &str, labels: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": ns, "labels": labels},
            "spec": {"containers": []}
        }))
        .expect("pod")
    }

    /// An incoming `app=web` pod with the given constraints.
    fn incoming(labels: Value, constraints: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "in", "namespace": "default", "labels": labels},
            "spec": {"containers": [], "topologySpreadConstraints": constraints}
        }))
        .expect("pod")
    }

    fn constraint(skew: i32, key: &str, when: &str, extra: Value) -> Value {
        let mut c = json!({
            "maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}}
        });
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    }

    fn web() -> Pod {
        pod("default", json!({"app": "web"}))
    }

    fn all(_: &Node) -> bool {
        true
    }

    /// Filter result for every node.
    fn filter_all(
        pod: &Pod,
        nodes: &[Node],
        existing: &[(Pod, usize)],
        eligible: &dyn Fn(&Node) -> bool,
    ) -> Option<Vec<Result<(), SpreadFailure>>> {
        let refs: Vec<&Node> = nodes.iter().collect();
        let placed = existing.iter().map(|(p, n)| PlacedPod {
            pod: p,
            node: &nodes[*n],
        });
        let state = SpreadFilterState::compute(pod, placed, &refs, eligible)?;
        Some(nodes.iter().map(|n| state.filter(pod, n)).collect())
    }

    use SpreadFailure::*;
    const OK: Result<(), SpreadFailure> = Ok(());

    #[test]
    fn skew_over_two_zones() {
        let nodes = [
            node("a1", json!({ZONE: "a"})),
            node("b1", json!({ZONE: "b"})),
        ];
        let p = incoming(
            json!({"app": "web"}),
            json!([constraint(1, ZONE, DO_NOT_SCHEDULE, json!({}))]),
        );
        // 2 in a, 0 in b: a → 2 + 1 − 0 = 3 > 1, b → 0 + 1 − 0 = 1.
        let existing = [(web(), 0), (web(), 0)];
        assert_eq!(
            filter_all(&p, &nodes, &existing, &all),
            Some(vec![Err(SkewTooLarge), OK])
        );
        // 1 in a, 0 in b: a → 1 + 1 − 0 = 2 > 1 still fails.
        assert_eq!(
            filter_all(&p, &nodes, &existing[..1], &all),
            Some(vec![Err(SkewTooLarge), OK])
        );
        // 1 and 1: both fine.
        let balanced = [(web(), 0), (web(), 1)];
        assert_eq!(filter_all(&p, &nodes, &balanced, &all), Some(vec![OK, OK]));
    }

    #[test]
    fn filter_table() {
        let nodes = [
            node("a1", json!({ZONE: "a"})),
            node("b1", json!({ZONE: "b"})),
            node("c1", json!({ZONE: "c"})),
            node("x", json!({})),
        ];
        let c_ineligible = |n: &Node| node_name(n) != "c1";
        let terminating: Pod = serde_json::from_value(json!({
            "metadata": {"name": "t", "namespace": "default", "labels": {"app": "web"},
                         "deletionTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": []}
        }))
        .expect("pod");
        let dns = |extra: Value| json!([constraint(1, ZONE, DO_NOT_SCHEDULE, extra)]);
        type Case<'c> = (
            &'c str,
            Pod,
            Vec<(Pod, usize)>,
            &'c dyn Fn(&Node) -> bool,
            Option<Vec<Result<(), SpreadFailure>>>,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "missing topology key is unresolvable; empty zone c sets the minimum",
                incoming(json!({"app": "web"}), dns(json!({}))),
                vec![(web(), 0), (web(), 1)],
                &all,
                Some(vec![
                    Err(SkewTooLarge),
                    Err(SkewTooLarge),
                    OK,
                    Err(MissingTopologyKey),
                ]),
            ),
            (
                "ineligible zone c is not a domain",
                incoming(json!({"app": "web"}), dns(json!({}))),
                vec![(web(), 0), (web(), 1)],
                &c_ineligible,
                Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
            ),
            (
                "nodeAffinityPolicy Ignore counts zone c again",
                incoming(
                    json!({"app": "web"}),
                    dns(json!({"nodeAffinityPolicy": "Ignore"})),
                ),
                vec![(web(), 0), (web(), 1)],
                &c_ineligible,
                Some(vec![
                    Err(SkewTooLarge),
                    Err(SkewTooLarge),
                    OK,
                    Err(MissingTopologyKey),
                ]),
            ),
            (
                "minDomains above the domain count makes the minimum 0",
                incoming(json!({"app": "web"}), dns(json!({"minDomains": 3}))),
                vec![(web(), 0), (web(), 1)],
                &c_ineligible,
                // c1 is not a domain, so it counts 0 pods: 0 + 1 − 0 passes.
                Some(vec![
                    Err(SkewTooLarge),
                    Err(SkewTooLarge),
                    OK,
                    Err(MissingTopologyKey),
                ]),
            ),
            (
                "minDomains met",
                incoming(json!({"app": "web"}), dns(json!({"minDomains": 2}))),
                vec![(web(), 0), (web(), 1)],
                &c_ineligible,
                Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
            ),
            (
                "other namespaces and terminating pods do not count",
                incoming(json!({"app": "web"}), dns(json!({}))),
                vec![
                    (pod("other", json!({"app": "web"})), 0),
                    (terminating.clone(), 0),
                ],
                &all,
                Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
            ),
            (
                "a pod not matching its own selector adds nothing (compare the first case)",
                incoming(json!({"app": "db"}), dns(json!({}))),
                vec![(web(), 0), (web(), 1)],
                &all,
                Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
            ),
            (
                "matchLabelKeys restricts counting to the pod's own version",
                incoming(
                    json!({"app": "web", "v": "2"}),
                    dns(json!({"matchLabelKeys": ["v"]})),
                ),
                vec![
                    (pod("default", json!({"app": "web", "v": "1"})), 0),
                    (pod("default", json!({"app": "web", "v": "1"})), 0),
                ],
                &all,
                Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
            ),
            (
                "empty selector counts nothing",
                incoming(
                    json!({"app": "web"}),
                    json!([{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DO_NOT_SCHEDULE, "labelSelector": {}}]),
                ),
                vec![(web(), 0), (web(), 0), (web(), 0)],
                &all,
                Some(vec![OK, OK, OK, Err(MissingTopologyKey)]),
            ),
            (
                "ScheduleAnyway only: skip",
                incoming(
                    json!({"app": "web"}),
                    json!([constraint(1, ZONE, SCHEDULE_ANYWAY, json!({}))]),
                ),
                vec![(web(), 0)],
                &all,
                None,
            ),
            ("no constraints: skip", web(), vec![(web(), 0)], &all, None),
        ];
        for (name, p, existing, eligible, want) in cases {
            assert_eq!(filter_all(&p, &nodes, &existing, eligible), want, "{name}");
        }
    }

    #[test]
    fn node_taints_policy() {
        let nodes: Vec<Node> = vec![
            node("a1", json!({ZONE: "a"})),
            node("b1", json!({ZONE: "b"})),
            serde_json::from_value(json!({
                "metadata": {"name": "c1", "labels": {ZONE: "c"}},
                "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
            }))
            .expect("node"),
        ];
        let existing = [(web(), 0), (web(), 1)];
        let honor = incoming(
            json!({"app": "web"}),
            json!([constraint(
                1,
                ZONE,
                DO_NOT_SCHEDULE,
                json!({"nodeTaintsPolicy": "Honor"})
            )]),
        );
        // Tainted zone c is dropped: minimum 1 → a and b pass.
        assert_eq!(
            filter_all(&honor, &nodes, &existing, &all),
            Some(vec![OK, OK, OK])
        );
        // Default Ignore keeps zone c with 0 pods.
        let ignore = incoming(
            json!({"app": "web"}),
            json!([constraint(1, ZONE, DO_NOT_SCHEDULE, json!({}))]),
        );
        assert_eq!(
            filter_all(&ignore, &nodes, &existing, &all),
            Some(vec![Err(SkewTooLarge), Err(SkewTooLarge), OK])
        );
        // A tolerating pod keeps zone c even under Honor.
        let mut tolerant = honor.clone();
        if let Some(spec) = tolerant.spec.as_mut() {
            spec.tolerations = Some(vec![
                serde_json::from_value(json!({"key": "dedicated", "operator": "Exists"}))
                    .expect("toleration"),
            ]);
        }
        assert_eq!(
            filter_all(&tolerant, &nodes, &existing, &all),
            Some(vec![Err(SkewTooLarge), Err(SkewTooLarge), OK])
        );
    }

    #[test]
    fn failure_reasons() {
        assert_eq!(
            MissingTopologyKey.reason(),
            "node(s) didn't match pod topology spread constraints (missing required label)"
        );
        assert_eq!(
            SkewTooLarge.reason(),
            "node(s) didn't match pod topology spread constraints"
        );
        assert!(MissingTopologyKey.unresolvable());
        assert!(!SkewTooLarge.unresolvable());
    }

    #[test]
    fn scores() {
        let nodes = [
            node("a1", json!({ZONE: "a", LABEL_HOSTNAME: "a1"})),
            node("a2", json!({ZONE: "a", LABEL_HOSTNAME: "a2"})),
            node("b1", json!({ZONE: "b", LABEL_HOSTNAME: "b1"})),
            node("x", json!({LABEL_HOSTNAME: "x"})),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let pods = [web(), web(), web()];
        let placed = |at: &[usize]| -> Vec<PlacedPod<'_>> {
            at.iter()
                .zip(&pods)
                .map(|(&n, p)| PlacedPod {
                    pod: p,
                    node: &nodes[n],
                })
                .collect()
        };
        let zone = incoming(
            json!({"app": "web"}),
            json!([constraint(1, ZONE, SCHEDULE_ANYWAY, json!({}))]),
        );
        // Zone a holds 2 pods, b none; 2 domains → weight ln 4 ≈ 1.386.
        // raw a = round(2 × 1.386) = 3, b = 0; x lacks the key → 0.
        // normalised: a = 100 × (3 + 0 − 3) / 3 = 0, b = 100 × 3 / 3 = 100.
        assert_eq!(
            spread_scores(&zone, &placed(&[0, 1]), &refs, &refs, &all),
            Some(vec![0, 0, 100, 0])
        );
        // No pods anywhere: every raw score is 0 → 100 for nodes with the key.
        assert_eq!(
            spread_scores(&zone, &[], &refs, &refs, &all),
            Some(vec![100, 100, 100, 0])
        );

        // maxSkew 3 adds 2 everywhere: raw a = round(2.77 + 2) = 5, b = 2 → a = 100 × 2 / 5 = 40.
        let loose = incoming(
            json!({"app": "web"}),
            json!([constraint(3, ZONE, SCHEDULE_ANYWAY, json!({}))]),
        );
        assert_eq!(
            spread_scores(&loose, &placed(&[0, 1]), &refs, &refs, &all),
            Some(vec![40, 40, 100, 0])
        );

        // Hostname: counts the candidate's own pods; 4 scored candidates → weight ln 6 ≈ 1.792.
        // raw a1 = round(2 × 1.792) = 4, a2 = round(1.792) = 2, others 0 → a1 = 0, a2 = 50.
        let host = incoming(
            json!({"app": "web"}),
            json!([constraint(1, LABEL_HOSTNAME, SCHEDULE_ANYWAY, json!({}))]),
        );
        assert_eq!(
            spread_scores(&host, &placed(&[0, 0, 1]), &refs, &refs, &all),
            Some(vec![0, 50, 100, 100])
        );

        // Only domains of scored candidates are counted: scoring b1 and x alone.
        let subset = [&nodes[2], &nodes[3]];
        assert_eq!(
            spread_scores(&zone, &placed(&[0, 1]), &subset, &refs, &all),
            Some(vec![100, 0])
        );

        // Skips.
        let hard = incoming(
            json!({"app": "web"}),
            json!([constraint(1, ZONE, DO_NOT_SCHEDULE, json!({}))]),
        );
        assert_eq!(
            spread_scores(&hard, &placed(&[0]), &refs, &refs, &all),
            None
        );
        assert_eq!(spread_scores(&zone, &placed(&[0]), &refs, &[], &all), None);
    }

    #[test]
    fn normalisation_edge_cases() {
        assert_eq!(normalize_spread(&[None, None]), vec![0, 0]);
        assert_eq!(
            normalize_spread(&[Some(0), None, Some(0)]),
            vec![100, 0, 100]
        );
        assert_eq!(
            normalize_spread(&[Some(2), Some(4), Some(6)]),
            vec![100, 66, 33]
        );
        assert_eq!(normalize_spread(&[]), Vec::<i64>::new());
    }
}
