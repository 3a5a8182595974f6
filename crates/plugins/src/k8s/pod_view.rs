//! The pods on each node as the embedded Kubernetes plugins see them during a session, and the
//! pod-shape helpers around it; shared by `predicates` (filters) and `nodeorder` (scores).

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::OnceLock;

use engine::framework::SessionState;
use engine::model::{NodeId, TaskId};
use k8s_openapi::api::core::v1::{Node, Pod, PodAffinity, PodAntiAffinity};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::labels::PlacedPod;

/// The pods on each node as Volcano's embedded Kubernetes plugins see them (§6.8): the node's
/// tasks at open, plus the session's allocations and pipelines, minus the session's evictions.
/// The engine's node keeps an evicted task in its list (as Releasing); Volcano's upstream node
/// info drops it at once, so such tasks are recorded here as hidden.
///
/// Also indexes the placed pods that carry pod (anti-)affinity, because the upstream plugins
/// only look at those when the incoming pod has no terms of its own; without the index every
/// task would scan every placed pod.
#[derive(Debug, Default)]
pub struct PodView {
    hidden: FxHashSet<TaskId>,
    hidden_per_node: Vec<usize>,
    /// Placed pods with a required anti-affinity term (`None`: not tracked).
    required_anti_affinity: Option<BTreeSet<TaskId>>,
    /// Changes whenever `required_anti_affinity` does.
    required_anti_affinity_version: u64,
    /// The same pods by the label pairs their terms' selectors narrow to (see
    /// [`PodView::anti_affinity_candidates`]), and those with a term that cannot be narrowed.
    anti_affinity_by_pair: FxHashMap<String, FxHashMap<String, BTreeSet<TaskId>>>,
    anti_affinity_wide: BTreeSet<TaskId>,
    /// Placed pods by label (key, value), built the first time a pod with required terms of
    /// its own asks, then kept current.
    by_label: OnceLock<FxHashMap<(String, String), BTreeSet<TaskId>>>,
    /// Placed pods whose terms can score other pods: required pod affinity, or preferred
    /// affinity or anti-affinity (`None`: not tracked). Required anti-affinity alone only
    /// filters.
    pod_affinity: Option<BTreeSet<TaskId>>,
}

impl PodView {
    /// Builds the view at session open, tracking the indexes asked for.
    pub fn open(
        ssn: &SessionState,
        track_required_anti_affinity: bool,
        track_pod_affinity: bool,
    ) -> Self {
        let mut view = PodView {
            hidden: FxHashSet::default(),
            hidden_per_node: vec![0; ssn.nodes().len()],
            required_anti_affinity: track_required_anti_affinity.then(BTreeSet::new),
            required_anti_affinity_version: 0,
            anti_affinity_by_pair: FxHashMap::default(),
            anti_affinity_wide: BTreeSet::new(),
            by_label: OnceLock::new(),
            pod_affinity: track_pod_affinity.then(BTreeSet::new),
        };
        if track_required_anti_affinity || track_pod_affinity {
            // Only pods with terms are indexed (`index`); the session lists those placed.
            for &task in ssn.placed_with_pod_affinity() {
                view.index(ssn, task);
            }
        }
        view
    }

    fn index(&mut self, ssn: &SessionState, task: TaskId) {
        let spec = &ssn.task(task).spec;
        // Without affinity terms a pod is in neither index (both tests below ask for them).
        if !spec.inter_pod_affinity {
            return;
        }
        let pod = spec.pod.as_ref();
        if let Some(set) = self.required_anti_affinity.as_mut()
            && has_required_anti_affinity(pod)
            && set.insert(task)
        {
            self.required_anti_affinity_version += 1;
            self.index_anti_affinity(pod, task, true);
        }
        if let Some(set) = self.pod_affinity.as_mut()
            && can_score_other_pods(pod)
        {
            set.insert(task);
        }
    }

    /// Files (or unfiles) a placed pod with required anti-affinity under the label pairs its
    /// terms' selectors narrow to.
    fn index_anti_affinity(&mut self, pod: &Pod, task: TaskId, add: bool) {
        let terms = pod_affinity_parts(pod)
            .1
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .into_iter()
            .flatten();
        for term in terms {
            match term.label_selector.as_ref().and_then(narrowing_pairs) {
                Some(pairs) => {
                    for (k, v) in pairs {
                        let values = self.anti_affinity_by_pair.entry(k).or_default();
                        if add {
                            values.entry(v).or_default().insert(task);
                        } else if let Some(set) = values.get_mut(&v) {
                            set.remove(&task);
                        }
                    }
                }
                None if add => {
                    self.anti_affinity_wide.insert(task);
                }
                None => {
                    self.anti_affinity_wide.remove(&task);
                }
            }
        }
    }

    fn index_labels(&mut self, ssn: &SessionState, task: TaskId, add: bool) {
        let Some(index) = self.by_label.get_mut() else {
            return;
        };
        for (k, v) in ssn.task(task).spec.pod.metadata.labels.iter().flatten() {
            let key = (k.clone(), v.clone());
            if add {
                index.entry(key).or_default().insert(task);
            } else if let Some(set) = index.get_mut(&key) {
                set.remove(&task);
            }
        }
    }

    /// The task's pod joined its node (allocate, pipeline, or an eviction undone).
    pub fn added(&mut self, ssn: &SessionState, task: TaskId) {
        self.index_labels(ssn, task, true);
        if self.hidden.remove(&task)
            && let Some(count) = ssn
                .task(task)
                .node
                .and_then(|n| self.hidden_per_node.get_mut(n.index()))
        {
            *count = count.saturating_sub(1);
        }
        self.index(ssn, task);
    }

    /// The task's pod left its node (eviction, or an allocation/pipeline undone).
    pub fn removed(&mut self, ssn: &SessionState, task: TaskId) {
        self.index_labels(ssn, task, false);
        if let Some(node) = ssn.task(task).node {
            let still_listed = ssn.node(node).tasks.iter().any(|&(t, _)| t == task);
            if still_listed
                && self.hidden.insert(task)
                && let Some(count) = self.hidden_per_node.get_mut(node.index())
            {
                *count += 1;
            }
        }
        if let Some(set) = self.required_anti_affinity.as_mut()
            && set.remove(&task)
        {
            self.required_anti_affinity_version += 1;
            self.index_anti_affinity(ssn.task(task).spec.pod.as_ref(), task, false);
        }
        if let Some(set) = self.pod_affinity.as_mut() {
            set.remove(&task);
        }
    }

    /// Number of pods on the node in this view.
    pub fn pod_count(&self, ssn: &SessionState, node: NodeId) -> usize {
        let hidden = self.hidden_per_node.get(node.index()).copied().unwrap_or(0);
        ssn.node(node).tasks.len().saturating_sub(hidden)
    }

    /// Whether every pod listed on the node is on it in this view.
    pub fn shows_all_on(&self, node: NodeId) -> bool {
        self.hidden_per_node
            .get(node.index())
            .is_none_or(|&h| h == 0)
    }

    /// Whether the task's pod is on its node in this view.
    pub fn is_visible(&self, task: TaskId) -> bool {
        self.hidden.is_empty() || !self.hidden.contains(&task)
    }

    /// The pods on one node in this view.
    pub fn pods_on<'a>(
        &'a self,
        ssn: &'a SessionState,
        node: NodeId,
    ) -> impl Iterator<Item = &'a Pod> + 'a {
        ssn.node(node)
            .tasks
            .iter()
            .filter(move |&&(task, _)| self.is_visible(task))
            .map(move |&(task, _)| ssn.task(task).spec.pod.as_ref())
    }

    /// Every placed pod, node by node.
    pub fn placed<'a>(&'a self, ssn: &'a SessionState) -> impl Iterator<Item = PlacedPod<'a>> + 'a {
        ssn.nodes().iter().flat_map(move |node| {
            node.tasks
                .iter()
                .filter(move |&&(task, _)| self.is_visible(task))
                .map(move |&(task, _)| PlacedPod {
                    pod: ssn.task(task).spec.pod.as_ref(),
                    node: node.spec.node.as_ref(),
                })
        })
    }

    /// Placed pods in one of the indexes (`None`: the index is not tracked, so every pod).
    fn placed_in<'a>(
        &'a self,
        ssn: &'a SessionState,
        set: Option<&'a BTreeSet<TaskId>>,
    ) -> Box<dyn Iterator<Item = PlacedPod<'a>> + 'a> {
        match set {
            Some(set) => Box::new(set.iter().filter_map(move |&task| {
                let node = ssn.task(task).node?;
                Some(PlacedPod {
                    pod: ssn.task(task).spec.pod.as_ref(),
                    node: ssn.node(node).spec.node.as_ref(),
                })
            })),
            None => Box::new(self.placed(ssn)),
        }
    }

    /// A number that changes whenever a pod with required anti-affinity joins or leaves the
    /// placed pods.
    pub fn required_anti_affinity_version(&self) -> u64 {
        self.required_anti_affinity_version
    }

    /// The placed pods whose required anti-affinity can refuse `pod`: a term selects only pods
    /// that carry one of the label pairs it narrows to, so only the pods filed under one of the
    /// pod's own labels, and those with a term that cannot be narrowed, can match it. Every
    /// placed pod with required anti-affinity that is left out matches `pod` with none of its
    /// terms. `None` when those pods are not tracked.
    pub fn anti_affinity_candidates(&self, pod: &Pod) -> Option<BTreeSet<TaskId>> {
        self.required_anti_affinity.as_ref()?;
        let mut out = self.anti_affinity_wide.clone();
        for (k, v) in pod.metadata.labels.iter().flatten() {
            if let Some(set) = self.anti_affinity_by_pair.get(k).and_then(|m| m.get(v)) {
                out.extend(set.iter().copied());
            }
        }
        Some(out)
    }

    /// Whether a placed pod has terms that can score other pods (always, when not tracked).
    pub fn any_placed_can_score_others(&self) -> bool {
        self.pod_affinity.as_ref().is_none_or(|set| !set.is_empty())
    }

    /// The placed pods that can matter to the required terms of `pod`: those with required
    /// anti-affinity (which may refuse it) and those that can match one of its own terms'
    /// selectors, found through the label index. `None` when a selector cannot be narrowed
    /// (no `matchLabels` and no `In` expression): then every placed pod can.
    ///
    /// With `narrow`, of the pods with required anti-affinity only the
    /// [`PodView::anti_affinity_candidates`] are taken; otherwise all of them.
    pub fn candidates_for_required_terms(
        &self,
        ssn: &SessionState,
        pod: &Pod,
        narrow: bool,
    ) -> Option<BTreeSet<TaskId>> {
        let mut out: BTreeSet<TaskId> = if narrow {
            self.anti_affinity_candidates(pod)?
        } else {
            self.required_anti_affinity.clone()?
        };
        let (affinity, anti) = pod_affinity_parts(pod);
        let terms = affinity
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .into_iter()
            .chain(anti.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }))
            .flatten();
        out.extend(self.matching_any(ssn, terms.map(|t| t.label_selector.as_ref()))?);
        Some(out)
    }

    /// The placed pods that can match one of the selectors, found through the label index;
    /// `None` when a selector cannot be narrowed (no `matchLabels` and no `In` expression, or
    /// no selector): then every placed pod can.
    pub fn matching_any<'s>(
        &self,
        ssn: &SessionState,
        selectors: impl Iterator<Item = Option<&'s LabelSelector>>,
    ) -> Option<BTreeSet<TaskId>> {
        let index = self.by_label.get_or_init(|| {
            let mut index: FxHashMap<(String, String), BTreeSet<TaskId>> = FxHashMap::default();
            for node in ssn.nodes() {
                for &(task, _) in &node.tasks {
                    if !self.is_visible(task) {
                        continue;
                    }
                    for (k, v) in ssn.task(task).spec.pod.metadata.labels.iter().flatten() {
                        index
                            .entry((k.clone(), v.clone()))
                            .or_default()
                            .insert(task);
                    }
                }
            }
            index
        });
        let mut out = BTreeSet::new();
        for selector in selectors {
            for pair in narrowing_pairs(selector?)? {
                out.extend(index.get(&pair).into_iter().flatten().copied());
            }
        }
        Some(out)
    }

    /// The given placed pods, with their nodes.
    pub fn placed_among<'a>(
        &'a self,
        ssn: &'a SessionState,
        tasks: &'a BTreeSet<TaskId>,
    ) -> impl Iterator<Item = PlacedPod<'a>> + 'a {
        tasks.iter().filter_map(move |&task| {
            let node = ssn.task(task).node?;
            Some(PlacedPod {
                pod: ssn.task(task).spec.pod.as_ref(),
                node: ssn.node(node).spec.node.as_ref(),
            })
        })
    }

    /// Placed pods with a required anti-affinity term.
    pub fn placed_with_required_anti_affinity<'a>(
        &'a self,
        ssn: &'a SessionState,
    ) -> Box<dyn Iterator<Item = PlacedPod<'a>> + 'a> {
        self.placed_in(ssn, self.required_anti_affinity.as_ref())
    }

    /// Placed pods whose terms can score other pods.
    pub fn placed_with_pod_affinity<'a>(
        &'a self,
        ssn: &'a SessionState,
    ) -> Box<dyn Iterator<Item = PlacedPod<'a>> + 'a> {
        self.placed_in(ssn, self.pod_affinity.as_ref())
    }
}

/// Label pairs one of which every pod the selector matches carries; `None` when the selector
/// gives none (a pod without them could still match).
fn narrowing_pairs(selector: &LabelSelector) -> Option<Vec<(String, String)>> {
    if let Some((k, v)) = selector.match_labels.iter().flatten().next() {
        return Some(vec![(k.clone(), v.clone())]);
    }
    selector
        .match_expressions
        .iter()
        .flatten()
        .find(|e| e.operator == "In")
        .map(|e| {
            e.values
                .iter()
                .flatten()
                .map(|v| (e.key.clone(), v.clone()))
                .collect()
        })
}

fn pod_affinity_parts(pod: &Pod) -> (Option<&PodAffinity>, Option<&PodAntiAffinity>) {
    let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
    (
        affinity.and_then(|a| a.pod_affinity.as_ref()),
        affinity.and_then(|a| a.pod_anti_affinity.as_ref()),
    )
}

/// The pod has a required pod anti-affinity term (upstream `PodsWithRequiredAntiAffinity`).
pub fn has_required_anti_affinity(pod: &Pod) -> bool {
    pod_affinity_parts(pod)
        .1
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .is_some_and(|terms| !terms.is_empty())
}

/// The pod has a required pod affinity (not anti-affinity) term.
fn has_required_affinity(pod: &Pod) -> bool {
    pod_affinity_parts(pod)
        .0
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .is_some_and(|terms| !terms.is_empty())
}

/// The pod has terms that score other pods (InterPodAffinity's scoring of existing pods'
/// required affinity and preferred terms).
fn can_score_other_pods(pod: &Pod) -> bool {
    has_preferred_pod_affinity_terms(pod) || has_required_affinity(pod)
}

/// The pod has required pod affinity or anti-affinity terms of its own.
pub fn has_required_pod_affinity_terms(pod: &Pod) -> bool {
    has_required_anti_affinity(pod) || has_required_affinity(pod)
}

/// The pod has preferred pod affinity or anti-affinity terms of its own.
pub fn has_preferred_pod_affinity_terms(pod: &Pod) -> bool {
    let (affinity, anti) = pod_affinity_parts(pod);
    affinity
        .and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .is_some_and(|terms| !terms.is_empty())
        || anti
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .is_some_and(|terms| !terms.is_empty())
}

/// The pod has a topology spread constraint with the given `whenUnsatisfiable` action.
pub fn has_spread_constraint(pod: &Pod, action: &str) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.when_unsatisfiable == action))
}

/// A namespace's labels from the session snapshot (`None`: unknown namespace).
pub fn namespace_labels(ssn: &SessionState, namespace: &str) -> Option<BTreeMap<String, String>> {
    ssn.snapshot()
        .namespace(namespace)
        .map(|ns| ns.metadata.labels.clone().unwrap_or_default())
}

/// Every node object of the session, in session order.
pub fn all_nodes(ssn: &SessionState) -> Vec<&Node> {
    ssn.nodes().iter().map(|n| n.spec.node.as_ref()).collect()
}
