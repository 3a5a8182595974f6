//! The simulated API server: the objects of the cluster, the defaulting the real API server
//! would apply when they are created, and the cluster's reaction to a session's decisions.
//!
//! The simulator keeps its own copy of every Pod, PodGroup and Queue (keyed `ns/name`, queues
//! by name), changes it the way Kubernetes would after each session, and upserts the changed
//! object into the engine's [`ClusterState`], exactly as the daemon's watchers would.

use std::collections::BTreeMap;

use apis::{PodGroup, Queue};
use engine::framework::Decisions;
use engine::model::job::job_status_to_api;
use std::sync::Arc;

use ::cluster::shared::Shared;
use engine::state::{ClusterState, StateOptions};
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
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
            let Some(pod) = self.pods.get_mut(&bind.pod) else {
                tracing::warn!(pod = %bind.pod, "bind of an unknown pod ignored");
                continue;
            };
            // The binding sets the node and PodScheduled=True; the kubelet then starts the pod.
            pod.spec.get_or_insert_with(Default::default).node_name = Some(bind.node.clone());
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
mod tests {
    use super::*;
    use engine::framework::decisions::{
        Bind, Eviction, PodConditionUpdate, PodGroupStatusUpdate, QueueAllocation,
    };
    use engine::model::job::JobStatus;
    use engine::model::{Resource, TaskStatus};
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().expect("valid timestamp")
    }

    fn input(text: &str) -> SimInput {
        let mut input = SimInput::default();
        input.add_str("test.yaml", text).expect("valid input");
        input
    }

    fn options() -> StateOptions {
        StateOptions {
            scheduler_names: vec!["volcano-rs".into(), "volcano".into()],
            ..StateOptions::default()
        }
    }

    const CLUSTER: &str = r#"
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
kind: Pod
metadata: {name: a, namespace: ns, uid: ua}
spec: {schedulerName: volcano-rs, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
---
kind: Pod
metadata: {name: b, namespace: ns, uid: ub}
spec: {schedulerName: volcano, nodeName: n1, containers: [{name: c}]}
status: {phase: Running}
---
kind: Pod
metadata: {name: other, namespace: ns}
spec: {containers: [{name: c}]}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec: {minMember: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
"#;

    #[test]
    fn unusable_queue_values_are_warned_about() {
        let text = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: q1
  annotations: {volcano.sh/hierarchy: root/a/b, volcano.sh/hierarchy-weights: 1/x}
spec: {weight: -2, capability: {cpu: "-4"}, guarantee: {resource: {memory: "-1Gi"}}}
"#;
        let (cluster, warnings) = SimCluster::new(&input(text), options(), now());
        let expected = [
            "Queue q1 spec.weight: -2 is below 1",
            "Queue q1 spec.capability.cpu: \"-4\" is negative",
            "Queue q1 spec.guarantee.resource.memory: \"-1Gi\" is negative",
            "Queue q1 metadata.annotations[volcano.sh/hierarchy-weights]: \"1/x\" weight \"x\" at path level 1 is not a number",
            "Queue q1 metadata.annotations[volcano.sh/hierarchy-weights]: \"1/x\" has no weight for path level 2",
        ];
        assert_eq!(warnings.len(), expected.len(), "{warnings:#?}");
        for (warning, start) in warnings.iter().zip(expected) {
            assert!(warning.starts_with(start), "{warning}");
        }
        let state = cluster.state();
        let q = state.queue("q1").expect("q1");
        assert_eq!(q.weight, 1);
        assert_eq!(q.capability, None);
        assert_eq!(q.guarantee, None);
    }

    #[test]
    fn creation_defaults_and_the_default_queue() {
        let (cluster, warnings) = SimCluster::new(&input(CLUSTER), options(), now());
        assert!(warnings.is_empty(), "{warnings:?}");
        // Pods start Pending; a pod that already has a phase keeps it.
        assert_eq!(
            cluster.pods()["ns/a"]
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref()),
            Some("Pending")
        );
        assert_eq!(
            cluster.pods()["ns/b"]
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref()),
            Some("Running")
        );
        // The default queue is created (weight 1, reclaimable); q1 gets the CRD's weight 1.
        let default = &cluster.queues()["default"];
        assert_eq!(default.spec.weight, 1);
        assert_eq!(default.spec.reclaimable, Some(true));
        assert_eq!(cluster.queues()["q1"].spec.weight, 1);
        assert!(cluster.state().queue("default").is_some());
        // Ours: both scheduler names; a pod without one belongs to default-scheduler.
        assert!(cluster.is_ours(&cluster.pods()["ns/a"]));
        assert!(cluster.is_ours(&cluster.pods()["ns/b"]));
        assert!(!cluster.is_ours(&cluster.pods()["ns/other"]));
        assert!(cluster.state().pod("ns/other").is_none());
    }

    #[test]
    fn an_existing_default_queue_is_kept() {
        let text = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 5, reclaimable: false}\n";
        let (cluster, _) = SimCluster::new(&input(text), options(), now());
        assert_eq!(cluster.queues().len(), 1);
        assert_eq!(cluster.queues()["default"].spec.weight, 5);
        assert_eq!(cluster.queues()["default"].spec.reclaimable, Some(false));
    }

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).expect("valid pod")
    }

    fn class(name: &str, value: i32, global: bool, policy: Option<&str>) -> PriorityClass {
        serde_json::from_value(json!({
            "metadata": {"name": name}, "value": value, "globalDefault": global, "preemptionPolicy": policy
        }))
        .expect("valid class")
    }

    #[test]
    fn priority_admission() {
        let classes = [
            class("high", 1000, false, Some("Never")),
            class("normal", 10, true, None),
        ];
        // Named class: value and preemption policy.
        let mut p = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [], "priorityClassName": "high"}}),
        );
        assert_eq!(admit_pod(&mut p, &classes), None);
        let spec = p.spec.as_ref().expect("spec");
        assert_eq!(spec.priority, Some(1000));
        assert_eq!(spec.preemption_policy.as_deref(), Some("Never"));
        // No class: the global default, whose name is recorded.
        let mut p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        assert_eq!(admit_pod(&mut p, &classes), None);
        let spec = p.spec.as_ref().expect("spec");
        assert_eq!(
            (spec.priority, spec.priority_class_name.as_deref()),
            (Some(10), Some("normal"))
        );
        // An explicit priority (a dump) wins.
        let mut p = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [], "priorityClassName": "high", "priority": 5}}),
        );
        admit_pod(&mut p, &classes);
        assert_eq!(p.spec.as_ref().and_then(|s| s.priority), Some(5));
        // Unknown class: warning, priority unset.
        let mut p = pod(
            json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [], "priorityClassName": "nope"}}),
        );
        let warning = admit_pod(&mut p, &classes).expect("warning");
        assert!(
            warning.contains("ns/p") && warning.contains("\"nope\""),
            "{warning}"
        );
        assert_eq!(p.spec.as_ref().and_then(|s| s.priority), None);
        // No class and no global default: unset.
        let mut p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        assert_eq!(admit_pod(&mut p, &classes[..1]), None);
        assert_eq!(p.spec.as_ref().and_then(|s| s.priority), None);
    }

    fn condition(pod: &Pod) -> Option<&PodCondition> {
        pod.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == POD_SCHEDULED)
    }

    #[test]
    fn reaction_to_decisions() {
        let (mut cluster, _) = SimCluster::new(&input(CLUSTER), options(), now());
        let mut d = Decisions::default();
        d.pod_conditions.push(PodConditionUpdate {
            pod: "ns/a".into(),
            reason: "Unschedulable".into(),
            message: "0/1 nodes are unavailable: 1 Insufficient cpu.".into(),
            nominated_node: Some("n1".into()),
        });
        d.evictions.push(Eviction {
            pod: "ns/b".into(),
            pod_uid: "ub".into(),
            node: "n1".into(),
            action: "preempt".into(),
            reason: "preempt".into(),
            preemptor: Some("ns/a".into()),
        });
        d.pod_group_statuses.push(PodGroupStatusUpdate {
            pod_group: "ns/pg".into(),
            status: JobStatus {
                phase: "Inqueue".into(),
                ..JobStatus::default()
            },
        });
        d.queue_allocations.push(QueueAllocation {
            queue: "q1".into(),
            allocated: Resource::from_pairs(1500.0, 1024.0 * 1024.0 * 1024.0, &[("pods", 2.0)]),
        });
        assert!(changes_anything(&d));
        cluster.apply(&d);

        let a = &cluster.pods()["ns/a"];
        let c = condition(a).expect("condition written");
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref()),
            ("False", Some("Unschedulable"))
        );
        assert_eq!(
            a.status
                .as_ref()
                .and_then(|s| s.nominated_node_name.as_deref()),
            Some("n1")
        );
        // The engine sees the condition, so it will not write it again.
        let state = cluster.state();
        let task = state.pod("ns/a").expect("task");
        assert_eq!(
            task.pod_scheduled_condition().map(|c| c.1),
            Some("Unschedulable")
        );
        drop(state);

        assert!(!cluster.pods().contains_key("ns/b"));
        assert!(cluster.state().pod("ns/b").is_none());

        let pg = cluster.pod_groups()["ns/pg"]
            .status
            .as_ref()
            .expect("status");
        assert_eq!(pg.phase, "Inqueue");
        assert_eq!(
            cluster
                .state()
                .pod_group("ns/pg")
                .map(|p| p.phase().to_string()),
            Some("Inqueue".into())
        );

        let q = cluster.queues()["q1"].status.as_ref().expect("status");
        assert_eq!(q.allocated["cpu"].0, "1500m");
        assert_eq!(q.allocated["memory"].0, "1Gi");
        assert_eq!(q.allocated["pods"].0, "2");
        assert!(
            cluster
                .state()
                .queue("q1")
                .and_then(|q| q.status_allocated.as_ref())
                .is_some()
        );

        // Now the pod is bound: it runs on the node with PodScheduled=True.
        let mut d = Decisions::default();
        d.binds.push(Bind {
            pod: "ns/a".into(),
            pod_uid: "ua".into(),
            node: "n1".into(),
        });
        cluster.apply(&d);
        let a = &cluster.pods()["ns/a"];
        assert_eq!(
            a.spec.as_ref().and_then(|s| s.node_name.as_deref()),
            Some("n1")
        );
        assert_eq!(
            a.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Running")
        );
        let c = condition(a).expect("condition");
        assert_eq!((c.status.as_str(), c.reason.as_deref()), ("True", None));
        let state = cluster.state();
        let task = state.pod("ns/a").expect("task");
        assert_eq!(task.status, TaskStatus::Running);
        assert_eq!(task.node_name.as_deref(), Some("n1"));
    }

    #[test]
    fn quiet_sessions_change_nothing() {
        let mut d = Decisions::default();
        assert!(!changes_anything(&d));
        d.pipelined.push(engine::framework::decisions::Pipeline {
            pod: "ns/a".into(),
            node: "n1".into(),
        });
        assert!(!changes_anything(&d), "pipelining is session-only");
        d.binds.push(Bind {
            pod: "ns/a".into(),
            pod_uid: String::new(),
            node: "n1".into(),
        });
        assert!(changes_anything(&d));
    }

    #[test]
    fn condition_transition_time_moves_only_on_status_change() {
        let later: Timestamp = "2026-01-02T00:00:00Z".parse().expect("timestamp");
        let mut status = PodStatus::default();
        let cond = |s: &str, r: &str| PodCondition {
            type_: POD_SCHEDULED.into(),
            status: s.into(),
            reason: Some(r.into()),
            ..PodCondition::default()
        };
        set_pod_condition(&mut status, cond("False", "a"), now());
        set_pod_condition(&mut status, cond("False", "b"), later);
        let c = &status.conditions.as_ref().expect("conditions")[0];
        assert_eq!(c.last_transition_time, Some(Time(now())));
        assert_eq!(c.reason.as_deref(), Some("b"));
        set_pod_condition(&mut status, cond("True", "c"), later);
        let conditions = status.conditions.as_ref().expect("conditions");
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].last_transition_time, Some(Time(later)));
    }
}
