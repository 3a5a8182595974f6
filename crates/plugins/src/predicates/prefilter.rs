//! The PreFilter steps of `predicates` that look beyond the pod: InterPodAffinity's and
//! PodTopologySpread's states, over the placed pods the view's indexes find.

use rustc_hash::FxHashMap;
use std::sync::{Arc, PoisonError};

use engine::framework::SessionState;
use engine::model::{SchedClass, TaskId};
use k8s_openapi::api::core::v1::{Node, Pod};

use crate::k8s::labels::node_name;
use crate::k8s::node_affinity::RequiredNodeAffinity;
use crate::k8s::pod_affinity::AffinityFilterState;
use crate::k8s::pod_view::{all_nodes, has_required_pod_affinity_terms, namespace_labels};
use crate::k8s::topology_spread::{SpreadDomains, SpreadFilterState, domains_key};

use super::{DO_NOT_SCHEDULE, Predicates};

/// PodTopologySpread's domains, by scheduling class and by what they are built from
/// ([`domains_key`]): the class is looked up first, so the key is written once per class.
#[derive(Debug, Default)]
pub(super) struct SpreadDomainCache {
    by_class: FxHashMap<SchedClass, Arc<SpreadDomains>>,
    by_key: FxHashMap<String, Arc<SpreadDomains>>,
}

impl Predicates {
    /// Whether no placed pod's required anti-affinity matched a pod of this namespace and
    /// these labels since the last change to those pods: the answer depends on nothing else,
    /// and pods of one job share it, so it is worked out once per job rather than per task.
    pub(super) fn anti_affinity_misses(&self, pod: &Pod) -> bool {
        let key = (pod.metadata.namespace.clone(), pod.metadata.labels.clone());
        self.anti_affinity_misses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            == Some(&self.view.required_anti_affinity_version())
    }

    pub(super) fn remember_anti_affinity_miss(&self, pod: &Pod) {
        let key = (pod.metadata.namespace.clone(), pod.metadata.labels.clone());
        self.anti_affinity_misses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, self.view.required_anti_affinity_version());
    }

    /// InterPodAffinity's PreFilter state for the pod; `None` for Skip.
    ///
    /// With the session's memo on, the placed pods with required anti-affinity that can refuse
    /// the pod are found through the view's index of their terms (`anti_affinity_candidates`),
    /// so a pod is not compared with every one of them after each new one is placed; with it
    /// off, every one is looked at (as Volcano does), which the property tests compare against.
    pub(super) fn pod_affinity_prefilter(
        &self,
        ssn: &SessionState,
        pod: &Pod,
    ) -> Option<AffinityFilterState> {
        let ns = |name: &str| namespace_labels(ssn, name);
        let narrow = ssn.options().search_memo;
        // Without terms of its own the pod can only be refused by existing pods' required
        // anti-affinity, so only those pods need a look.
        if has_required_pod_affinity_terms(pod) {
            // Only placed pods its terms can match, or whose anti-affinity can refuse it,
            // count: the label index finds them without a pass over every placed pod.
            return match self.view.candidates_for_required_terms(ssn, pod, narrow) {
                Some(candidates) => {
                    AffinityFilterState::compute(pod, self.view.placed_among(ssn, &candidates), &ns)
                }
                None => AffinityFilterState::compute(pod, self.view.placed(ssn), &ns),
            };
        }
        if narrow && let Some(candidates) = self.view.anti_affinity_candidates(pod) {
            if candidates.is_empty() {
                return None;
            }
            return AffinityFilterState::compute(
                pod,
                self.view.placed_among(ssn, &candidates),
                &ns,
            );
        }
        if self.anti_affinity_misses(pod) {
            return None;
        }
        let state = AffinityFilterState::compute(
            pod,
            self.view.placed_with_required_anti_affinity(ssn),
            &ns,
        );
        if state.is_none() {
            self.remember_anti_affinity_miss(pod);
        }
        state
    }

    /// The inter-pod affinity state with its counts indexed by node position, with the
    /// session's memo on (so that the property tests compare the two lookups) and once the
    /// session has columns for its topology keys.
    pub(super) fn by_position(
        &self,
        ssn: &SessionState,
        mut state: AffinityFilterState,
    ) -> AffinityFilterState {
        if ssn.options().search_memo {
            state.index_by_position(&mut |key| self.columns.get(key, || all_nodes(ssn)));
        }
        state
    }

    /// PodTopologySpread's PreFilter state for a task with a `DoNotSchedule` constraint.
    ///
    /// The domains rest on the pod's spec and the nodes alone, so with the session's memo on
    /// they are worked out once per scheduling class and kept for the session; with it off,
    /// for every task (as Volcano does), which the property tests compare against.
    pub(super) fn spread_prefilter(
        &self,
        ssn: &SessionState,
        task: TaskId,
    ) -> Option<SpreadFilterState> {
        let pod = ssn.task(task).spec.pod.as_ref();
        let build = || {
            let required = RequiredNodeAffinity::from_pod(pod);
            SpreadDomains::build(pod, &all_nodes(ssn), &|n: &Node| required.matches(n))
        };
        let domains = if ssn.options().search_memo {
            let class = ssn.task(task).spec.sched_class();
            let mut cache = self
                .spread_domains
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match cache.by_class.get(&class) {
                Some(d) => d.clone(),
                None => {
                    let key = domains_key(pod);
                    let d = match cache.by_key.get(&key) {
                        Some(d) => d.clone(),
                        None => Arc::new(build()?),
                    };
                    cache.by_key.insert(key, d.clone());
                    cache.by_class.insert(class, d.clone());
                    d
                }
            }
        } else {
            Arc::new(build()?)
        };
        let position = |n: &Node| ssn.node_id(node_name(n)).map(|id| id.index());
        // Only placed pods a constraint's selector can match are counted: the label index
        // finds them without a pass over every placed pod.
        let selectors = pod
            .spec
            .iter()
            .flat_map(|s| s.topology_spread_constraints.iter().flatten())
            .filter(|c| c.when_unsatisfiable == DO_NOT_SCHEDULE)
            .map(|c| c.label_selector.as_ref());
        match self.view.matching_any(ssn, selectors) {
            Some(candidates) => SpreadFilterState::compute_in(
                pod,
                self.view.placed_among(ssn, &candidates),
                &domains,
                &position,
            ),
            None => SpreadFilterState::compute_in(pod, self.view.placed(ssn), &domains, &position),
        }
    }
}
