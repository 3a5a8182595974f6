//! Inter-pod affinity: the upstream `InterPodAffinity` plugin of Kubernetes v1.36
//! (`pkg/scheduler/framework/plugins/interpodaffinity`), spec plugins-core.md §6.3 (filter) and
//! §7.5 (score).
//!
//! Filter: [`AffinityFilterState::compute`] is upstream PreFilter — one pass over the placed pods
//! counting, per topology pair (key, value), the pods matching the incoming pod's required
//! affinity (all terms) and anti-affinity (each term), and the existing pods whose required
//! anti-affinity matches the incoming pod. [`AffinityFilterState::filter`] is the per-node check.
//!
//! Score: [`preferred_affinity_scores`] is upstream PreScore + Score + NormalizeScore with
//! `hardPodAffinityWeight = 1` and `ignorePreferredTermsOfExistingPods = false`.
//!
//! Namespaces of a term: its `namespaces` list, plus those selected by `namespaceSelector`; with
//! neither, the namespace of the pod owning the term. `namespaceSelector: {}` selects every
//! namespace. The incoming pod's selectors are resolved against the namespaces that exist (an
//! unknown namespace is never selected); existing pods' selectors are evaluated on the incoming
//! pod's namespace labels (empty when the namespace is unknown), as upstream does.
//!
//! `matchLabelKeys` / `mismatchLabelKeys` are not read: since v1.33 the API server merges them into
//! the label selector when the pod is created.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use k8s_openapi::api::core::v1::{
    Node, Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::labels::{
    PlacedPod, node_labels, pod_labels, pod_namespace, selector_is_empty, selector_matches,
    selector_matches_opt,
};

/// Upstream `HardPodAffinityWeight` default: the score an existing pod's required affinity term
/// gives to the domains it is in when the incoming pod matches it.
const HARD_POD_AFFINITY_WEIGHT: i64 = 1;

/// Why a node fails the inter-pod affinity filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AffinityFailure {
    /// A required affinity term of the incoming pod has no matching pod in the node's domain.
    AffinityRulesNotMatch,
    /// A pod in the node's domain matches a required anti-affinity term of the incoming pod.
    AntiAffinityRulesNotMatch,
    /// The incoming pod matches the required anti-affinity of a pod in the node's domain.
    ExistingAntiAffinityRulesNotMatch,
}

impl AffinityFailure {
    /// The upstream failure reason.
    pub fn reason(self) -> &'static str {
        match self {
            Self::AffinityRulesNotMatch => "node(s) didn't match pod affinity rules",
            Self::AntiAffinityRulesNotMatch => "node(s) didn't match pod anti-affinity rules",
            Self::ExistingAntiAffinityRulesNotMatch => {
                "node(s) didn't satisfy existing pods anti-affinity rules"
            }
        }
    }

    /// True for UnschedulableAndUnresolvable (evicting pods cannot help), false for Unschedulable.
    pub fn unresolvable(self) -> bool {
        matches!(self, Self::AffinityRulesNotMatch)
    }
}

/// Counts per topology key, then per topology value.
#[derive(Debug, Default, Clone)]
struct TopologyCounts(FxHashMap<String, FxHashMap<String, i64>>);

impl TopologyCounts {
    /// Adds `delta` to the pair (`key`, the node's value for `key`), if the node has that label.
    /// A pair whose count comes back to 0 is removed, as upstream does: the self-affinity rule
    /// asks whether any pair is left at all.
    fn add_for_node(&mut self, key: &str, node_labels: &BTreeMap<String, String>, delta: i64) {
        let Some(value) = node_labels.get(key) else {
            return;
        };
        // Look up by reference first so the common "already there" case does not allocate.
        if let Some(values) = self.0.get_mut(key) {
            if let Some(count) = values.get_mut(value) {
                *count = count.saturating_add(delta);
                if *count == 0 {
                    values.remove(value);
                    if values.is_empty() {
                        self.0.remove(key);
                    }
                }
            } else if delta != 0 {
                values.insert(value.clone(), delta);
            }
        } else if delta != 0 {
            self.0.insert(
                key.to_owned(),
                FxHashMap::from_iter([(value.clone(), delta)]),
            );
        }
    }

    fn get(&self, key: &str, value: &str) -> i64 {
        self.0
            .get(key)
            .and_then(|values| values.get(value))
            .copied()
            .unwrap_or(0)
    }

    /// The count of the node's domain for `key`; `None` when the node lacks the label.
    fn for_node(&self, key: &str, node_labels: &BTreeMap<String, String>) -> Option<i64> {
        node_labels.get(key).map(|value| self.get(key, value))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Namespace labels looked up through the caller's callback, once per namespace.
struct NamespaceLabels<'f> {
    lookup: &'f dyn Fn(&str) -> Option<BTreeMap<String, String>>,
    cache: FxHashMap<String, Option<BTreeMap<String, String>>>,
}

impl<'f> NamespaceLabels<'f> {
    fn new(lookup: &'f dyn Fn(&str) -> Option<BTreeMap<String, String>>) -> Self {
        Self {
            lookup,
            cache: FxHashMap::default(),
        }
    }

    /// The namespace's labels; `None` when the namespace is unknown.
    fn get(&mut self, namespace: &str) -> Option<&BTreeMap<String, String>> {
        if !self.cache.contains_key(namespace) {
            let labels = (self.lookup)(namespace);
            self.cache.insert(namespace.to_owned(), labels);
        }
        self.cache.get(namespace).and_then(Option::as_ref)
    }
}

/// A borrowed view of one `PodAffinityTerm` together with the namespace of the pod owning it.
#[derive(Clone, Copy)]
struct Term<'t> {
    owner_namespace: &'t str,
    namespaces: &'t [String],
    namespace_selector: Option<&'t LabelSelector>,
    selector: Option<&'t LabelSelector>,
    topology_key: &'t str,
}

impl<'t> Term<'t> {
    fn new(term: &'t PodAffinityTerm, owner_namespace: &'t str) -> Self {
        Self {
            owner_namespace,
            namespaces: term.namespaces.as_deref().unwrap_or(&[]),
            namespace_selector: term.namespace_selector.as_ref(),
            selector: term.label_selector.as_ref(),
            topology_key: &term.topology_key,
        }
    }

    /// Whether `target` is selected by the term. `ns_selector_matches` evaluates a non-empty
    /// namespace selector for the target's namespace; it is only called when needed.
    fn matches(
        &self,
        target: &Pod,
        ns_selector_matches: impl FnOnce(&LabelSelector) -> bool,
    ) -> bool {
        let namespace = pod_namespace(target);
        let namespace_ok = if self.namespaces.is_empty() && self.namespace_selector.is_none() {
            namespace == self.owner_namespace
        } else {
            self.namespaces.iter().any(|n| n == namespace)
                || self
                    .namespace_selector
                    .is_some_and(|sel| selector_is_empty(sel) || ns_selector_matches(sel))
        };
        namespace_ok && selector_matches_opt(self.selector, pod_labels(target))
    }

    /// Matching for a term of the incoming pod: a namespace selector only selects namespaces
    /// that exist (upstream resolves it through the namespace lister).
    fn matches_as_incoming(&self, target: &Pod, ns: &mut NamespaceLabels<'_>) -> bool {
        self.matches(target, |sel| {
            ns.get(pod_namespace(target))
                .is_some_and(|labels| selector_matches(sel, labels))
        })
    }

    /// Matching for a term of an existing pod against the incoming pod, whose namespace labels
    /// are `incoming_ns_labels` (upstream snapshots them, empty for an unknown namespace).
    fn matches_as_existing(
        &self,
        incoming: &Pod,
        incoming_ns_labels: &BTreeMap<String, String>,
    ) -> bool {
        self.matches(incoming, |sel| selector_matches(sel, incoming_ns_labels))
    }
}

fn pod_affinity(pod: &Pod) -> Option<&PodAffinity> {
    pod.spec.as_ref()?.affinity.as_ref()?.pod_affinity.as_ref()
}

fn pod_anti_affinity(pod: &Pod) -> Option<&PodAntiAffinity> {
    pod.spec
        .as_ref()?
        .affinity
        .as_ref()?
        .pod_anti_affinity
        .as_ref()
}

fn required_affinity_terms(pod: &Pod) -> &[PodAffinityTerm] {
    pod_affinity(pod)
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or(&[])
}

fn required_anti_affinity_terms(pod: &Pod) -> &[PodAffinityTerm] {
    pod_anti_affinity(pod)
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or(&[])
}

fn preferred_affinity_terms(pod: &Pod) -> &[WeightedPodAffinityTerm] {
    pod_affinity(pod)
        .and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or(&[])
}

fn preferred_anti_affinity_terms(pod: &Pod) -> &[WeightedPodAffinityTerm] {
    pod_anti_affinity(pod)
        .and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or(&[])
}

/// Upstream "pod with affinity": has a pod affinity or pod anti-affinity section at all.
fn has_pod_affinity_section(pod: &Pod) -> bool {
    pod_affinity(pod).is_some() || pod_anti_affinity(pod).is_some()
}

fn weighted_terms<'t>(
    terms: &'t [WeightedPodAffinityTerm],
    owner_namespace: &'t str,
) -> impl Iterator<Item = (Term<'t>, i64)> {
    terms.iter().map(move |t| {
        (
            Term::new(&t.pod_affinity_term, owner_namespace),
            i64::from(t.weight),
        )
    })
}

fn terms_of<'t>(terms: &'t [PodAffinityTerm], owner_namespace: &'t str) -> Vec<Term<'t>> {
    terms
        .iter()
        .map(|t| Term::new(t, owner_namespace))
        .collect()
}

/// Upstream PreFilter state of InterPodAffinity for one incoming pod.
#[derive(Debug, Clone)]
pub struct AffinityFilterState {
    /// Topology keys of the incoming pod's required affinity terms, in term order.
    affinity_keys: Vec<String>,
    /// Topology keys of the incoming pod's required anti-affinity terms, in term order.
    anti_affinity_keys: Vec<String>,
    /// Existing pods matching *all* required affinity terms, counted once per term.
    affinity_counts: TopologyCounts,
    /// Existing pods matching each required anti-affinity term.
    anti_affinity_counts: TopologyCounts,
    /// Existing pods' required anti-affinity terms matching the incoming pod.
    existing_anti_affinity_counts: TopologyCounts,
    /// The incoming pod matches all of its own required affinity terms.
    matches_own_affinity: bool,
    /// The same counts by node position, when the caller indexed them
    /// ([`AffinityFilterState::index_by_position`]).
    by_position: Option<by_position::PositionCounts>,
}

impl AffinityFilterState {
    /// Upstream PreFilter. `namespace_labels` returns a namespace's labels (`None` if the
    /// namespace is unknown). Returns `None` when nothing needs checking (PreFilter Skip): the pod
    /// has no required (anti-)affinity and no existing pod's required anti-affinity matches it.
    ///
    /// Cost: one pass over `placed`; a placed pod without required anti-affinity costs a field
    /// check unless the incoming pod has required terms of its own.
    pub fn compute<'a>(
        pod: &Pod,
        placed: impl Iterator<Item = PlacedPod<'a>>,
        namespace_labels: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
    ) -> Option<Self> {
        let own_namespace = pod_namespace(pod);
        let affinity = terms_of(required_affinity_terms(pod), own_namespace);
        let anti_affinity = terms_of(required_anti_affinity_terms(pod), own_namespace);
        let has_own_terms = !affinity.is_empty() || !anti_affinity.is_empty();

        let mut ns = NamespaceLabels::new(namespace_labels);
        // Fetched lazily: only existing pods' namespace selectors need it.
        let mut own_ns_labels: Option<BTreeMap<String, String>> = None;

        let mut affinity_counts = TopologyCounts::default();
        let mut anti_affinity_counts = TopologyCounts::default();
        let mut existing_anti_affinity_counts = TopologyCounts::default();

        for placed_pod in placed {
            let existing = placed_pod.pod;
            let existing_anti = required_anti_affinity_terms(existing);
            if !existing_anti.is_empty() {
                let node_labels = node_labels(placed_pod.node);
                let existing_namespace = pod_namespace(existing);
                for term in existing_anti {
                    let term = Term::new(term, existing_namespace);
                    let own_labels = own_ns_labels
                        .get_or_insert_with(|| ns.get(own_namespace).cloned().unwrap_or_default());
                    if term.matches_as_existing(pod, own_labels) {
                        existing_anti_affinity_counts.add_for_node(
                            term.topology_key,
                            node_labels,
                            1,
                        );
                    }
                }
            }

            if !has_own_terms {
                continue;
            }
            let node_labels = node_labels(placed_pod.node);
            if !affinity.is_empty()
                && affinity
                    .iter()
                    .all(|term| term.matches_as_incoming(existing, &mut ns))
            {
                for term in &affinity {
                    affinity_counts.add_for_node(term.topology_key, node_labels, 1);
                }
            }
            for term in &anti_affinity {
                if term.matches_as_incoming(existing, &mut ns) {
                    anti_affinity_counts.add_for_node(term.topology_key, node_labels, 1);
                }
            }
        }

        if !has_own_terms && existing_anti_affinity_counts.is_empty() {
            return None;
        }

        let matches_own_affinity = !affinity.is_empty()
            && affinity
                .iter()
                .all(|term| term.matches_as_incoming(pod, &mut ns));
        Some(Self {
            affinity_keys: affinity.iter().map(|t| t.topology_key.to_owned()).collect(),
            anti_affinity_keys: anti_affinity
                .iter()
                .map(|t| t.topology_key.to_owned())
                .collect(),
            affinity_counts,
            anti_affinity_counts,
            existing_anti_affinity_counts,
            matches_own_affinity,
            by_position: None,
        })
    }

    /// Upstream `updateWithPod` (the PreFilter extensions `AddPod` / `RemovePod`): the counts
    /// after `existing` joins (`delta` = 1) or leaves (`delta` = −1) its node. `incoming` is the
    /// pod the state was computed for, and `namespace_labels` the same lookup as for
    /// [`AffinityFilterState::compute`]. Keeps the state of a pod being placed current while
    /// the session tentatively evicts pods (preemption) or undoes placements.
    pub fn update(
        &mut self,
        incoming: &Pod,
        existing: PlacedPod<'_>,
        delta: i64,
        namespace_labels: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
    ) {
        // The counts change: the nodes are looked up by their labels from now on.
        self.by_position = None;
        let own_namespace = pod_namespace(incoming);
        let mut ns = NamespaceLabels::new(namespace_labels);
        let node_labels = node_labels(existing.node);

        let existing_anti = required_anti_affinity_terms(existing.pod);
        if !existing_anti.is_empty() {
            let own_labels = ns.get(own_namespace).cloned().unwrap_or_default();
            let existing_namespace = pod_namespace(existing.pod);
            for term in existing_anti {
                let term = Term::new(term, existing_namespace);
                if term.matches_as_existing(incoming, &own_labels) {
                    self.existing_anti_affinity_counts.add_for_node(
                        term.topology_key,
                        node_labels,
                        delta,
                    );
                }
            }
        }

        let affinity = terms_of(required_affinity_terms(incoming), own_namespace);
        if !affinity.is_empty()
            && affinity
                .iter()
                .all(|term| term.matches_as_incoming(existing.pod, &mut ns))
        {
            for term in &affinity {
                self.affinity_counts
                    .add_for_node(term.topology_key, node_labels, delta);
            }
        }
        for term in terms_of(required_anti_affinity_terms(incoming), own_namespace) {
            if term.matches_as_incoming(existing.pod, &mut ns) {
                self.anti_affinity_counts
                    .add_for_node(term.topology_key, node_labels, delta);
            }
        }
    }

    /// Upstream Filter for one node, checked in upstream order: own affinity, own
    /// anti-affinity, existing pods' anti-affinity. `_pod` is the pod `compute` was called for;
    /// everything needed from it is already in the state.
    pub fn filter(&self, _pod: &Pod, node: &Node) -> Result<(), AffinityFailure> {
        let labels = node_labels(node);
        if !self.satisfies_affinity(labels) {
            return Err(AffinityFailure::AffinityRulesNotMatch);
        }
        let anti_hit = self
            .anti_affinity_keys
            .iter()
            .any(|key| self.anti_affinity_counts.for_node(key, labels).unwrap_or(0) > 0);
        if anti_hit {
            return Err(AffinityFailure::AntiAffinityRulesNotMatch);
        }
        // Upstream scans every node label against the map; scanning the map's keys is the same
        // test and is bounded by the number of distinct topology keys in existing terms.
        let existing_hit = self
            .existing_anti_affinity_counts
            .0
            .iter()
            .any(|(key, values)| {
                labels
                    .get(key)
                    .and_then(|value| values.get(value))
                    .is_some_and(|&count| count > 0)
            });
        if existing_hit {
            return Err(AffinityFailure::ExistingAntiAffinityRulesNotMatch);
        }
        Ok(())
    }

    fn satisfies_affinity(&self, labels: &BTreeMap<String, String>) -> bool {
        let mut pods_exist = true;
        for key in &self.affinity_keys {
            match self.affinity_counts.for_node(key, labels) {
                // Every topology key must be on the node, whatever the counts.
                None => return false,
                Some(count) if count <= 0 => pods_exist = false,
                Some(_) => {}
            }
        }
        // The first pod of a group with affinity to itself: accepted when no pod in the cluster
        // matches the terms yet and the pod matches them itself.
        pods_exist || (self.affinity_counts.is_empty() && self.matches_own_affinity)
    }
}

/// Preferred inter-pod affinity scores of `candidates` (upstream InterPodAffinity PreScore, Score
/// and NormalizeScore): per topology domain, + weight for each preferred affinity term of the pod
/// matched by a placed pod there, − weight per matching preferred anti-affinity term, and the
/// symmetric contributions of placed pods' terms matching the incoming pod (required affinity
/// with weight 1, preferred affinity +weight, preferred anti-affinity −weight). The raw sums are
/// normalised min–max to 0..=100.
///
/// Returns `None` when PreScore would Skip: no term matched anywhere (or no candidates).
/// `namespace_labels` is as for [`AffinityFilterState::compute`].
pub fn preferred_affinity_scores<'a>(
    pod: &Pod,
    placed: &[PlacedPod<'a>],
    candidates: &[&Node],
    namespace_labels: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
) -> Option<Vec<i64>> {
    if candidates.is_empty() {
        return None;
    }
    let own_namespace = pod_namespace(pod);
    let own_affinity: Vec<_> =
        weighted_terms(preferred_affinity_terms(pod), own_namespace).collect();
    let own_anti_affinity: Vec<_> =
        weighted_terms(preferred_anti_affinity_terms(pod), own_namespace).collect();
    let has_own_terms = !own_affinity.is_empty() || !own_anti_affinity.is_empty();

    let mut ns = NamespaceLabels::new(namespace_labels);
    let own_ns_labels = ns.get(own_namespace).cloned().unwrap_or_default();
    let mut scores = TopologyCounts::default();

    for placed_pod in placed {
        let existing = placed_pod.pod;
        // Without own preferred terms only placed pods with affinity sections can contribute.
        if !has_own_terms && !has_pod_affinity_section(existing) {
            continue;
        }
        let node_labels = node_labels(placed_pod.node);
        if node_labels.is_empty() {
            continue;
        }
        for (term, weight) in &own_affinity {
            if term.matches_as_incoming(existing, &mut ns) {
                scores.add_for_node(term.topology_key, node_labels, *weight);
            }
        }
        for (term, weight) in &own_anti_affinity {
            if term.matches_as_incoming(existing, &mut ns) {
                scores.add_for_node(term.topology_key, node_labels, -*weight);
            }
        }
        let existing_namespace = pod_namespace(existing);
        for term in required_affinity_terms(existing) {
            let term = Term::new(term, existing_namespace);
            if term.matches_as_existing(pod, &own_ns_labels) {
                scores.add_for_node(term.topology_key, node_labels, HARD_POD_AFFINITY_WEIGHT);
            }
        }
        for (term, weight) in weighted_terms(preferred_affinity_terms(existing), existing_namespace)
        {
            if term.matches_as_existing(pod, &own_ns_labels) {
                scores.add_for_node(term.topology_key, node_labels, weight);
            }
        }
        for (term, weight) in
            weighted_terms(preferred_anti_affinity_terms(existing), existing_namespace)
        {
            if term.matches_as_existing(pod, &own_ns_labels) {
                scores.add_for_node(term.topology_key, node_labels, -weight);
            }
        }
    }

    if scores.is_empty() {
        return None;
    }
    let mut result: Vec<i64> = candidates
        .iter()
        .map(|node| {
            let labels = node_labels(node);
            scores
                .0
                .iter()
                .filter_map(|(key, values)| labels.get(key).and_then(|v| values.get(v)))
                .sum()
        })
        .collect();
    super::resources::normalize_min_max(&mut result);
    Some(result)
}

mod by_position;
#[cfg(test)]
mod tests;
