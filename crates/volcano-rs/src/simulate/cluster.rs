//! The simulated API server: the objects of the cluster, the defaulting the real API server
//! would apply when they are created, and the cluster's reaction to a session's decisions.
//!
//! The simulator keeps its own copy of every Pod, PodGroup and Queue (keyed `ns/name`, queues
//! by name), changes it the way Kubernetes would after each session, and upserts the changed
//! object into the engine's [`ClusterState`], exactly as the daemon's watchers would.

use std::collections::BTreeMap;

use apis::{PodGroup, Queue};
use engine::framework::{Decisions, VolumeWrite};
use engine::model::job::job_status_to_api;
use std::sync::Arc;

use ::cluster::shared::Shared;
use engine::state::{ClusterState, StateOptions};
use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod, PodCondition, PodStatus,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

use super::load::SimInput;

/// `spec.schedulerName` the API server gives a pod that names none.
const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
const POD_SCHEDULED: &str = "PodScheduled";

/// The cluster between sessions.
pub(crate) struct SimCluster {
    /// The engine's view, shared with the scheduler that takes its snapshots.
    shared: Arc<Shared>,
    pods: BTreeMap<String, Pod>,
    pod_groups: BTreeMap<String, PodGroup>,
    queues: BTreeMap<String, Queue>,
    scheduler_names: Vec<String>,
    now: Timestamp,
    /// Recreate evicted pods Pending under a new name (a controller's stand-in).
    pub(crate) recreate_evicted: bool,
    /// How many times each original pod was recreated, for the next name.
    recreated: BTreeMap<String, u32>,
}

fn key(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or("default"),
        meta.name.as_deref().unwrap_or("")
    )
}

impl SimCluster {
    /// Creates the cluster from the input objects, as if each had been created through the
    /// API server (see [`admit_pod`] and [`default_queue_fields`]), plus the `default` queue the
    /// daemon creates in standalone mode. Returns the problems found along the way.
    pub(crate) fn new(
        input: &SimInput,
        options: StateOptions,
        now: Timestamp,
    ) -> (SimCluster, Vec<String>) {
        let mut warnings = Vec::new();
        let scheduler_names = options.scheduler_names.clone();
        let default_queue = options.default_queue.clone();
        let mut state = ClusterState::new(options);

        // Priority classes first: pod admission and job priorities read them.
        for pc in &input.priority_classes {
            state.upsert_priority_class(pc.clone());
        }
        for ns in &input.namespaces {
            state.upsert_namespace(ns.clone());
        }
        for rq in &input.resource_quotas {
            state.upsert_resource_quota(rq.clone());
        }
        for pdb in &input.pod_disruption_budgets {
            state.upsert_pdb(pdb.clone());
        }
        for class in &input.storage_classes {
            state.upsert_storage_class(class.clone());
        }
        for csi_node in &input.csi_nodes {
            state.upsert_csi_node(csi_node.clone());
        }
        for hyper_node in &input.hyper_nodes {
            state.upsert_hyper_node(hyper_node.clone());
        }
        for report in &input.numatopologies {
            state.upsert_numatopology(report.clone());
        }
        for volume in &input.volumes {
            state.upsert_volume(volume.clone());
        }
        for claim in &input.claims {
            state.upsert_claim(claim.clone());
        }

        let mut queues = BTreeMap::new();
        for q in &input.queues {
            let mut q = q.clone();
            default_queue_fields(&mut q);
            queues.insert(q.metadata.name.clone().unwrap_or_default(), q);
        }
        if !queues.contains_key(&default_queue) {
            queues.insert(default_queue.clone(), new_queue(&default_queue, true));
        }
        for (name, q) in &queues {
            warnings.extend(
                engine::model::queue::value_problems(q)
                    .into_iter()
                    .map(|problem| format!("Queue {name} {problem}")),
            );
            state.upsert_queue(q.clone());
        }

        for node in &input.nodes {
            state.upsert_node(node.clone());
        }
        for d in &input.node_usage {
            if state.node(&d.metadata.name).is_none() {
                warnings.push(format!(
                    "NodeUsage {}: no such node; the load is not used",
                    d.metadata.name
                ));
            }
        }
        state.set_node_usage(input.node_usage.iter().map(|d| {
            let usage = engine::model::NodeUsage {
                cpu_percent: d.cpu,
                memory_percent: d.memory,
                metrics_time: d.metrics_time.unwrap_or(now),
            };
            (d.metadata.name.clone(), usage)
        }));

        let mut pod_groups = BTreeMap::new();
        for pg in &input.pod_groups {
            pod_groups.insert(key(&pg.metadata), pg.clone());
        }
        for pg in pod_groups.values() {
            state.upsert_pod_group(pg.clone());
        }

        let mut pods = BTreeMap::new();
        for pod in &input.pods {
            let mut pod = pod.clone();
            if let Some(problem) = admit_pod(&mut pod, &input.priority_classes) {
                warnings.push(problem);
            }
            pods.insert(key(&pod.metadata), pod);
        }
        for pod in pods.values() {
            state.upsert_pod(pod.clone());
        }

        let cluster = SimCluster {
            shared: Shared::new(state),
            pods,
            pod_groups,
            queues,
            scheduler_names,
            now,
            recreate_evicted: false,
            recreated: BTreeMap::new(),
        };
        (cluster, warnings)
    }

    #[cfg(test)]
    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, ClusterState> {
        self.shared.lock()
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Creates the queue unless it exists, as the daemon does (spec/kubernetes.md §4.8.3).
    pub(crate) fn ensure_queue(&mut self, name: &str, reclaimable: bool) {
        if self.queues.contains_key(name) {
            return;
        }
        let queue = new_queue(name, reclaimable);
        self.shared.lock().upsert_queue(queue.clone());
        self.queues.insert(name.to_string(), queue);
    }

    /// Whether the pod is scheduled by us (same rule as the cluster state's).
    pub(crate) fn is_ours(&self, pod: &Pod) -> bool {
        let name = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .unwrap_or(DEFAULT_SCHEDULER_NAME);
        self.scheduler_names.iter().any(|n| n == name)
    }

    pub(crate) fn pods(&self) -> &BTreeMap<String, Pod> {
        &self.pods
    }

    pub(crate) fn pod_groups(&self) -> &BTreeMap<String, PodGroup> {
        &self.pod_groups
    }

    pub(crate) fn queues(&self) -> &BTreeMap<String, Queue> {
        &self.queues
    }

    /// What Kubernetes does with a session's decisions before the next session sees the
    /// cluster (spec/kubernetes.md §7): pod conditions and nominated nodes are written, bound
    /// pods start running on their node, evicted pods are deleted, PodGroup statuses and queue
    /// `status.allocated` are replaced by what the session computed.
    pub(crate) fn apply(&mut self, decisions: &Decisions) {
        for update in &decisions.pod_conditions {
            let Some(pod) = self.pods.get_mut(&update.pod) else {
                tracing::warn!(pod = %update.pod, "condition for an unknown pod ignored");
                continue;
            };
            let status = pod.status.get_or_insert_with(PodStatus::default);
            set_pod_condition(
                status,
                PodCondition {
                    type_: POD_SCHEDULED.to_string(),
                    status: "False".to_string(),
                    reason: Some(update.reason.clone()),
                    message: Some(update.message.clone()),
                    ..PodCondition::default()
                },
                self.now,
            );
            // An empty nomination means "leave as is" (§7.4).
            if let Some(node) = update.nominated_node.as_ref().filter(|n| !n.is_empty()) {
                status.nominated_node_name = Some(node.clone());
            }
            self.shared.lock().upsert_pod(pod.clone());
        }

        for bind in &decisions.binds {
            self.write_volumes(&bind.volumes);
            if let Some(lock) = &bind.node_lock {
                self.lock_node(&bind.node, lock);
            }
            let Some(pod) = self.pods.get_mut(&bind.pod) else {
                tracing::warn!(pod = %bind.pod, "bind of an unknown pod ignored");
                continue;
            };
            // The binding sets the node (and its annotations) and PodScheduled=True; the kubelet
            // then starts the pod.
            pod.spec.get_or_insert_with(Default::default).node_name = Some(bind.node.clone());
            if !bind.annotations.is_empty() {
                pod.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .extend(bind.annotations.clone());
            }
            let status = pod.status.get_or_insert_with(PodStatus::default);
            status.phase = Some("Running".to_string());
            set_pod_condition(
                status,
                PodCondition {
                    type_: POD_SCHEDULED.to_string(),
                    status: "True".to_string(),
                    ..PodCondition::default()
                },
                self.now,
            );
            self.shared.lock().upsert_pod(pod.clone());
        }

        for a in &decisions.numa_assignments {
            let given = engine::state::NumaGiven {
                uid: a.pod_uid.clone(),
                resources: a.resources.clone(),
            };
            self.shared.lock().assume_numa(&a.node, &a.pod, given);
        }

        for eviction in &decisions.evictions {
            let Some(evicted) = self.pods.remove(&eviction.pod) else {
                tracing::warn!(pod = %eviction.pod, "eviction of an unknown pod ignored");
                continue;
            };
            if let Some((namespace, name)) = eviction.pod.split_once('/') {
                self.shared.lock().delete_pod(namespace, name);
            }
            if self.recreate_evicted {
                self.recreate(&eviction.pod, evicted);
            }
        }

        for update in &decisions.pod_group_statuses {
            let Some(pg) = self.pod_groups.get_mut(&update.pod_group) else {
                tracing::warn!(pod_group = %update.pod_group, "status of an unknown PodGroup ignored");
                continue;
            };
            pg.status = Some(job_status_to_api(&update.status));
            self.shared.lock().upsert_pod_group(pg.clone());
        }

        for update in &decisions.queue_allocations {
            let Some(queue) = self.queues.get_mut(&update.queue) else {
                tracing::warn!(queue = %update.queue, "allocation of an unknown queue ignored");
                continue;
            };
            queue.status.get_or_insert_with(Default::default).allocated =
                update.allocated.to_resource_list();
            self.shared.lock().upsert_queue(queue.clone());
        }
    }
}

impl SimCluster {
    /// A bind's volume writes, as Kubernetes completes them before the pod runs: a static
    /// volume promised to a claim is bound on both sides (the volume controller's part); a claim
    /// to provision gets its `selected-node` annotation (no provisioner runs here, so its volume
    /// does not appear).
    /// A device's node lock, as the executor takes it: the node's `lock` annotation set to now.
    /// Nothing here removes it (a device plugin would); it expires after five minutes of the
    /// simulated clock.
    fn lock_node(&mut self, node: &str, lock: &str) {
        let mut state = self.shared.lock();
        let Some(spec) = state.node(node) else {
            return;
        };
        let mut object = spec.node.as_ref().clone();
        let at = self.now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        object
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(lock.to_string(), at);
        state.upsert_node(object);
    }

    fn write_volumes(&mut self, writes: &[VolumeWrite]) {
        let mut state = self.shared.lock();
        for write in writes {
            match write {
                VolumeWrite::BindVolume { volume, claim } => {
                    let Some((namespace, name)) = claim.split_once('/') else {
                        continue;
                    };
                    let (Some(pv), Some(pvc)) =
                        (state.volume(volume), state.claim(namespace, name))
                    else {
                        tracing::warn!(%volume, %claim, "volume binding for an unknown object ignored");
                        continue;
                    };
                    let (mut pv, mut pvc) = (pv.as_ref().clone(), pvc.as_ref().clone());
                    bind_volume_to_claim(&mut pv, &mut pvc);
                    state.upsert_volume(pv);
                    state.upsert_claim(pvc);
                }
                VolumeWrite::SelectNode { claim, node } => {
                    let Some((namespace, name)) = claim.split_once('/') else {
                        continue;
                    };
                    let Some(pvc) = state.claim(namespace, name) else {
                        tracing::warn!(%claim, "provisioning for an unknown claim ignored");
                        continue;
                    };
                    let mut pvc = pvc.as_ref().clone();
                    pvc.metadata
                        .annotations
                        .get_or_insert_with(Default::default)
                        .insert(apis::keys::VOLUME_SELECTED_NODE.to_string(), node.clone());
                    state.upsert_claim(pvc);
                }
            }
        }
    }

    /// The clock moved on (a cycle period): conditions written from now on carry this time.
    pub(crate) fn set_now(&mut self, now: Timestamp) {
        self.now = now;
    }

    /// What a controller does after its pod is deleted: a new pod from the same template,
    /// Pending, unbound, under a new name (`<original>-r<N>`) and uid.
    fn recreate(&mut self, evicted_key: &str, evicted: Pod) {
        let original = evicted
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(RECREATED_FROM))
            .cloned()
            .unwrap_or_else(|| evicted_key.to_string());
        let count = self.recreated.entry(original.clone()).or_default();
        *count += 1;
        let base = original
            .split_once('/')
            .map_or(original.as_str(), |(_, n)| n);
        let name = format!("{base}-r{count}");
        let mut pod = Pod {
            metadata: evicted.metadata,
            spec: evicted.spec,
            status: Some(PodStatus {
                phase: Some("Pending".to_string()),
                ..PodStatus::default()
            }),
        };
        pod.metadata.uid = Some(format!(
            "{}-r{count}",
            pod.metadata.uid.as_deref().unwrap_or(base)
        ));
        pod.metadata.name = Some(name);
        pod.metadata.creation_timestamp = Some(Time(self.now));
        pod.metadata.resource_version = None;
        pod.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(RECREATED_FROM.to_string(), original);
        if let Some(spec) = pod.spec.as_mut() {
            spec.node_name = None;
        }
        let new_key = key(&pod.metadata);
        self.shared.lock().upsert_pod(pod.clone());
        self.pods.insert(new_key, pod);
    }
}

/// Annotation on a recreated pod naming the pod it replaces (`namespace/name` of the first).
const RECREATED_FROM: &str = "simulate.volcano-rs.io/recreated-from";

/// Whether a session's decisions change the cluster. Pipelined placements are session-only.
/// The volume controller's binding of a volume to a claim: the volume's `claimRef`, the claim's
/// `volumeName` and bind-completed annotation, both phases `Bound`.
fn bind_volume_to_claim(pv: &mut PersistentVolume, pvc: &mut PersistentVolumeClaim) {
    let spec = pv.spec.get_or_insert_with(Default::default);
    spec.claim_ref = Some(ObjectReference {
        kind: Some("PersistentVolumeClaim".to_string()),
        api_version: Some("v1".to_string()),
        namespace: pvc.metadata.namespace.clone(),
        name: pvc.metadata.name.clone(),
        uid: pvc.metadata.uid.clone(),
        ..ObjectReference::default()
    });
    pv.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            apis::keys::VOLUME_BOUND_BY_CONTROLLER.to_string(),
            "yes".to_string(),
        );
    pv.status.get_or_insert_with(Default::default).phase = Some("Bound".to_string());
    pvc.spec.get_or_insert_with(Default::default).volume_name = pv.metadata.name.clone();
    let annotations = pvc
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(
        apis::keys::VOLUME_BIND_COMPLETED.to_string(),
        "yes".to_string(),
    );
    annotations.insert(
        apis::keys::VOLUME_BOUND_BY_CONTROLLER.to_string(),
        "yes".to_string(),
    );
    pvc.status.get_or_insert_with(Default::default).phase = Some("Bound".to_string());
}

pub(crate) fn changes_anything(d: &Decisions) -> bool {
    !(d.binds.is_empty()
        && d.evictions.is_empty()
        && d.pod_group_statuses.is_empty()
        && d.pod_conditions.is_empty()
        && d.queue_allocations.is_empty())
}

/// Replaces the condition of the same type; the transition time moves only when the status
/// changes (the API's convention, which the kubelet and the scheduler follow).
fn set_pod_condition(status: &mut PodStatus, mut condition: PodCondition, now: Timestamp) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing) => {
            condition.last_transition_time = if existing.status == condition.status {
                existing.last_transition_time.clone()
            } else {
                Some(Time(now))
            };
            *existing = condition;
        }
        None => {
            condition.last_transition_time = Some(Time(now));
            conditions.push(condition);
        }
    }
}

/// What the API server does to a pod on creation that the scheduler depends on:
///
/// * `status.phase` starts as `Pending`;
/// * the `Priority` admission plugin resolves `spec.priority` (and, if unset,
///   `spec.preemptionPolicy`) from the pod's PriorityClass, or from the global-default class
///   (whose name it also records) when the pod names none. Pods that already carry a priority
///   (a dump of a real cluster) are left alone; without any class the priority stays unset.
///
/// Returns a warning when the pod names a class that does not exist (the API server would have
/// refused the pod; the simulator keeps it without a priority).
pub(crate) fn admit_pod(pod: &mut Pod, classes: &[PriorityClass]) -> Option<String> {
    let status = pod.status.get_or_insert_with(PodStatus::default);
    if status.phase.as_deref().is_none_or(str::is_empty) {
        status.phase = Some("Pending".to_string());
    }

    let spec = pod.spec.as_mut()?;
    if spec.priority.is_some() {
        return None;
    }
    // A later definition of a class replaces an earlier one, as in the cluster state.
    let by_name = |name: &str| {
        classes
            .iter()
            .rev()
            .find(|pc| pc.metadata.name.as_deref() == Some(name))
    };
    let class = match spec
        .priority_class_name
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        Some(name) => match by_name(name) {
            Some(class) => class,
            None => {
                return Some(format!(
                    "pod {}: PriorityClass {name:?} does not exist (the API server would refuse \
                     the pod); its priority stays unset",
                    key(&pod.metadata)
                ));
            }
        },
        None => {
            let default = classes
                .iter()
                .rev()
                .find(|pc| pc.global_default == Some(true))?;
            spec.priority_class_name = default.metadata.name.clone();
            default
        }
    };
    spec.priority = Some(class.value.unwrap_or(0));
    if spec.preemption_policy.is_none() {
        spec.preemption_policy = class.preemption_policy.clone();
    }
    None
}

/// The Queue CRD's defaulting (spec/kubernetes.md §5.2): `spec.weight` defaults to 1.
pub(crate) fn default_queue_fields(queue: &mut Queue) {
    if queue.spec.weight == 0 {
        queue.spec.weight = 1;
    }
}

/// A queue the daemon creates in standalone mode when none of that name exists
/// (spec/kubernetes.md §4.8.3): weight 1; the default queue is reclaimable, `root` is not.
fn new_queue(name: &str, reclaimable: bool) -> Queue {
    let mut queue = Queue::default();
    queue.metadata.name = Some(name.to_string());
    queue.spec.weight = 1;
    queue.spec.reclaimable = Some(reclaimable);
    queue
}

#[cfg(test)]
mod tests;
