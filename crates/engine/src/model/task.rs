//! A task is one pod as the scheduler sees it (spec/framework.md §5.2, §5.3).
//!
//! [`TaskSpec`] is everything derived from the pod object once, when the pod is upserted into the
//! cluster state; it is shared (`Arc`) between the state, every snapshot and every session.
//! [`TaskInfo`] is the session's mutable view: status, node, transaction bookkeeping.

use std::collections::BTreeMap;
use std::sync::Arc;

use apis::keys;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;

use super::ids::{JobId, NodeId};
use super::resource::{Resource, ResourceName};
use super::status::TaskStatus;

/// How the pod relates to a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobLink {
    /// Annotation `scheduling.k8s.io/group-name`: the job is `<namespace>/<value>`.
    PodGroup(String),
    /// A pod of ours without a group annotation: scheduled as a one-pod job in this queue.
    Standalone { queue: String },
    /// Someone else's pod: it only occupies its node.
    None,
}

/// Immutable facts about one pod.
#[derive(Debug)]
pub struct TaskSpec {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// The index at the end of the name (`<job>-<role>-<index>`), which task order compares.
    pub name_index: Option<i64>,
    /// `<namespace>/<name>`
    pub key: String,
    pub job: JobLink,
    /// Task role: annotation, else label `volcano.sh/task-spec`.
    pub role: String,
    /// Request incl. init/sidecar containers, overhead and `pods: 1` (`Resreq == InitResreq`).
    pub resreq: Resource,
    pub best_effort: bool,
    pub priority: i32,
    pub preemptable: bool,
    pub revocable_zone: String,
    /// Any scheduling gate is set.
    pub sch_gated: bool,
    /// The only gate is Volcano's queue-allocation gate.
    pub only_volcano_gate: bool,
    pub has_restartable_init_container: bool,
    /// Some container (init containers included) declares a host port: only such pods occupy
    /// ports on their node, so the others are skipped without a look at their containers.
    pub uses_host_ports: bool,
    /// The pod states pod affinity or anti-affinity: only such pods are indexed by the
    /// inter-pod affinity views built at every session open, so the others are passed over
    /// without a look at their pod.
    pub inter_pod_affinity: bool,
    /// Status derived from the pod (§5.1.2).
    pub status: TaskStatus,
    /// `spec.nodeName`, if assigned.
    pub node_name: Option<String>,
    pub nominated_node_name: Option<String>,
    pub creation: Option<Timestamp>,
    /// `spec.preemptionPolicy: Never`.
    pub preemption_never: bool,
    /// The pod's scheduler name is one of ours.
    pub ours: bool,
    /// Volcano job template uid, for predicate caching.
    pub template_uid: Option<String>,
    /// What the pod asks of a node, for the allocate search memo ([`TaskSpec::sched_class`]).
    /// Worked out when the pod arrives waiting for a node; for the other versions of a pod
    /// (bound, running: two or three watch events each) only if a session asks, which allocate
    /// never does, so the watch does not hash their specs.
    sched_class: std::sync::OnceLock<super::SchedClass>,
    /// The pod's CPU (millicores) and memory (bytes) requests with Kubernetes' defaults for
    /// containers that state none (upstream `NonZeroRequested`), filled by the scoring plugin
    /// on first use. It depends on `pod` only, and a spec lives as long as its pod version, so
    /// every session after the first reads it instead of parsing quantities again.
    pub non_zero_request: std::sync::OnceLock<(i64, i64)>,
    pub pod: Arc<Pod>,
}

impl TaskSpec {
    /// Derives a task from a pod. `ours` says whether the pod's scheduler name is one of ours;
    /// `default_queue` is the queue for standalone pods without a queue annotation.
    pub fn from_pod(pod: Arc<Pod>, ours: bool, default_queue: &str) -> TaskSpec {
        let meta = &pod.metadata;
        let namespace = meta
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let name = meta.name.clone().unwrap_or_default();
        let annotations = meta.annotations.as_ref();
        let labels = meta.labels.as_ref();
        let annotation = |k: &str| annotations.and_then(|a| a.get(k)).map(String::as_str);
        let label = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);

        let job = match annotation(keys::GROUP_NAME).filter(|g| !g.is_empty()) {
            Some(group) => JobLink::PodGroup(format!("{namespace}/{group}")),
            None if ours => JobLink::Standalone {
                queue: annotation(keys::QUEUE_NAME)
                    .filter(|q| !q.is_empty())
                    .unwrap_or(default_queue)
                    .to_string(),
            },
            None => JobLink::None,
        };

        let spec = pod.spec.as_ref();
        let resreq = pod_resource_request(&pod);
        let best_effort = resreq.is_empty();

        let mut priority = spec.and_then(|s| s.priority).unwrap_or(1);
        if let Some(p) = annotation(keys::TASK_PRIORITY).and_then(|v| v.parse::<i32>().ok()) {
            priority = p;
        }

        let preemptable = match annotation(keys::PREEMPTABLE).or_else(|| label(keys::PREEMPTABLE)) {
            Some(v) => parse_go_bool(v).unwrap_or(false),
            None => true,
        };
        let revocable_zone = match annotation(keys::REVOCABLE_ZONE) {
            Some("*") => "*".to_string(),
            Some(_) => String::new(),
            None if annotation(keys::PREEMPTABLE).and_then(parse_go_bool) == Some(true) => {
                "*".to_string()
            }
            None => String::new(),
        };

        let gates = spec.and_then(|s| s.scheduling_gates.as_ref());
        let sch_gated = gates.is_some_and(|g| !g.is_empty());
        let only_volcano_gate =
            gates.is_some_and(|g| g.len() == 1 && g[0].name == keys::QUEUE_ALLOCATION_GATE);
        let has_restartable_init_container = spec
            .and_then(|s| s.init_containers.as_ref())
            .is_some_and(|ics| ics.iter().any(is_sidecar));
        let uses_host_ports = spec.is_some_and(|s| {
            s.init_containers
                .iter()
                .flatten()
                .chain(&s.containers)
                .flat_map(|c| c.ports.iter().flatten())
                .any(|p| p.host_port.is_some_and(|port| port > 0))
        });
        let inter_pod_affinity = spec
            .and_then(|s| s.affinity.as_ref())
            .is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some());

        // An empty annotation does not hide the label (Volcano's getTaskRole).
        let role = annotation(keys::TASK_SPEC)
            .filter(|r| !r.is_empty())
            .or_else(|| label(keys::TASK_SPEC))
            .unwrap_or("")
            .to_string();

        let task = TaskSpec {
            uid: meta
                .uid
                .clone()
                .unwrap_or_else(|| format!("{namespace}/{name}")),
            key: format!("{namespace}/{name}"),
            name_index: crate::framework::dispatch_pod_index(&name),
            namespace,
            name,
            job,
            role,
            best_effort,
            resreq,
            priority,
            preemptable,
            revocable_zone,
            sch_gated,
            only_volcano_gate,
            has_restartable_init_container,
            uses_host_ports,
            inter_pod_affinity,
            status: TaskStatus::from_pod(&pod),
            node_name: spec
                .and_then(|s| s.node_name.clone())
                .filter(|n| !n.is_empty()),
            nominated_node_name: pod
                .status
                .as_ref()
                .and_then(|s| s.nominated_node_name.clone())
                .filter(|n| !n.is_empty()),
            creation: meta.creation_timestamp.as_ref().map(|t| t.0),
            preemption_never: spec.and_then(|s| s.preemption_policy.as_deref()) == Some("Never"),
            ours,
            template_uid: annotation(keys::TEMPLATE_UID).map(str::to_string),
            sched_class: std::sync::OnceLock::new(),
            non_zero_request: std::sync::OnceLock::new(),
            pod: pod.clone(),
        };
        // A pod waiting for us is what allocate searches for: its class is worked out here, on
        // the watch, rather than in the session that places it.
        if task.ours && task.status == TaskStatus::Pending && task.node_name.is_none() {
            task.sched_class();
        }
        task
    }

    /// What the pod asks of a node (`SchedClass`), worked out on first use.
    pub fn sched_class(&self) -> super::SchedClass {
        *self
            .sched_class
            .get_or_init(|| super::SchedClass::of(&self.pod))
    }

    /// The pod's current `PodScheduled` condition, if any: (status, reason, message).
    pub fn pod_scheduled_condition(&self) -> Option<(&str, &str, &str)> {
        self.pod
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "PodScheduled")
            .map(|c| {
                (
                    c.status.as_str(),
                    c.reason.as_deref().unwrap_or(""),
                    c.message.as_deref().unwrap_or(""),
                )
            })
    }
}

/// Go's `strconv.ParseBool`.
pub fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

fn container_requests(c: &Container) -> Resource {
    match c.resources.as_ref().and_then(|r| r.requests.as_ref()) {
        Some(req) => Resource::from_list(req),
        None => Resource::empty(),
    }
}

fn container_limits(c: &Container) -> Resource {
    match c.resources.as_ref().and_then(|r| r.limits.as_ref()) {
        Some(lim) => Resource::from_list(lim),
        None => Resource::empty(),
    }
}

/// Containers' values aggregated the scheduler's way: max(regular + sidecars, init peak), then
/// the pod-level values for the names Kubernetes supports at pod level (cpu, memory,
/// hugepages) replace the container-derived ones.
fn aggregate(
    spec: &k8s_openapi::api::core::v1::PodSpec,
    of: fn(&Container) -> Resource,
    pod_level: Option<&BTreeMap<String, Quantity>>,
) -> Resource {
    let mut regular = Resource::empty();
    for c in &spec.containers {
        regular.add(&of(c));
    }
    let mut sidecars = Resource::empty();
    let mut init_peak = Resource::empty();
    for c in spec.init_containers.iter().flatten() {
        let value = of(c);
        let candidate = if is_sidecar(c) {
            regular.add(&value);
            sidecars.add(&value);
            sidecars.clone()
        } else {
            let mut cand = value;
            cand.add(&sidecars);
            cand
        };
        init_peak.set_max_resource(&candidate);
    }
    let mut result = regular;
    result.set_max_resource(&init_peak);
    if let Some(pod_level) = pod_level {
        let supported: BTreeMap<String, Quantity> = pod_level
            .iter()
            .filter(|(k, _)| {
                k.as_str() == "cpu" || k.as_str() == "memory" || k.starts_with("hugepages-")
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let level = Resource::from_list(&supported);
        for name in supported.keys() {
            match name.as_str() {
                "cpu" => result.milli_cpu = level.milli_cpu,
                "memory" => result.memory = level.memory,
                other => {
                    let n = ResourceName::new(other);
                    result.scalars.set(n, level.scalar(n));
                }
            }
        }
    }
    result
}

/// `GetPodResourceRequest` (§5.3): max(regular + sidecars, init peak), plus `pods: 1`,
/// pod-level requests, and overhead.
pub fn pod_resource_request(pod: &Pod) -> Resource {
    let Some(spec) = pod.spec.as_ref() else {
        let mut r = Resource::empty();
        r.scalars.set(ResourceName::PODS, 1.0);
        return r;
    };
    let pod_level = spec.resources.as_ref().and_then(|r| r.requests.as_ref());
    let mut result = aggregate(spec, container_requests, pod_level);
    let pods = result.scalar(ResourceName::PODS);
    result.scalars.set(ResourceName::PODS, pods + 1.0);
    if let Some(overhead) = spec.overhead.as_ref() {
        result.add(&Resource::from_list(overhead));
    }
    result
}

/// `GetPodResourceLimit`: limits aggregated as requests are, with pod-level limits; the
/// overhead is added only to the dimensions that have a limit (an unlimited one stays 0).
pub fn pod_resource_limit(pod: &Pod) -> Resource {
    let Some(spec) = pod.spec.as_ref() else {
        return Resource::empty();
    };
    let pod_level = spec.resources.as_ref().and_then(|r| r.limits.as_ref());
    let mut result = aggregate(spec, container_limits, pod_level);
    if let Some(overhead) = spec.overhead.as_ref() {
        let overhead = Resource::from_list(overhead);
        if result.milli_cpu != 0.0 {
            result.milli_cpu += overhead.milli_cpu;
        }
        if result.memory != 0.0 {
            result.memory += overhead.memory;
        }
        for (name, value) in overhead.scalars.iter() {
            let current = result.scalar(name);
            if current != 0.0 {
                result.scalars.set(name, current + value);
            }
        }
    }
    result
}

/// What a session remembers about a task's last placement attempt (§4.7).
#[derive(Clone, Debug, PartialEq)]
pub struct TransactionContext {
    pub node: Option<NodeId>,
    pub eviction_occurred: bool,
    pub status: TaskStatus,
}

/// The session's view of one task.
#[derive(Clone, Debug)]
pub struct TaskInfo {
    pub spec: Arc<TaskSpec>,
    pub job: Option<JobId>,
    pub status: TaskStatus,
    pub node: Option<NodeId>,
    pub eviction_occurred: bool,
    /// Set by `Discard`, cleared by `Commit`: explains the pod's situation at close.
    pub last_transaction: Option<TransactionContext>,
}

impl TaskInfo {
    pub fn new(spec: Arc<TaskSpec>, job: Option<JobId>, node: Option<NodeId>) -> Self {
        let status = spec.status;
        TaskInfo {
            spec,
            job,
            status,
            node,
            eviction_occurred: false,
            last_transaction: None,
        }
    }

    pub fn resreq(&self) -> &Resource {
        &self.spec.resreq
    }

    pub fn key(&self) -> &str {
        &self.spec.key
    }

    /// Volcano's `NodeName != ""`: placed in this session, or naming a node (also one that is
    /// not in the session).
    pub fn has_node(&self) -> bool {
        self.node.is_some() || self.spec.node_name.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Arc<Pod> {
        Arc::new(serde_json::from_value(v).expect("valid pod"))
    }

    #[test]
    fn request_includes_init_peak_sidecars_overhead_and_pods() {
        let p = pod(json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                    {"name": "b", "resources": {"requests": {"cpu": "500m"}}}
                ],
                "initContainers": [
                    {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
                    {"name": "init", "resources": {"requests": {"cpu": "3", "memory": "512Mi"}}}
                ],
                "overhead": {"cpu": "100m"}
            }
        }));
        let r = pod_resource_request(&p);
        // regular = 1.5 + 0.2 sidecar = 1.7; init candidate = 3 + 0.2 = 3.2 → max 3.2, + 0.1 overhead
        assert_eq!(r.milli_cpu, 3300.0);
        assert_eq!(r.memory, 1024.0 * 1024.0 * 1024.0);
        assert_eq!(r.scalar(ResourceName::PODS), 1.0);
    }

    #[test]
    fn empty_pod_is_best_effort_with_one_pod() {
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}));
        let t = TaskSpec::from_pod(p, true, "default");
        assert!(t.best_effort);
        assert_eq!(t.resreq.scalar(ResourceName::PODS), 1.0);
        assert_eq!(t.priority, 1);
        assert!(t.preemptable);
        assert_eq!(
            t.job,
            JobLink::Standalone {
                queue: "default".into()
            }
        );
        assert_eq!(t.key, "default/p");
    }

    #[test]
    fn inter_pod_affinity_flag_follows_the_pods_affinity_terms() {
        let with = |affinity: serde_json::Value| {
            let p = pod(json!({"metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c"}], "affinity": affinity}}));
            TaskSpec::from_pod(p, true, "default").inter_pod_affinity
        };
        let term = json!([{"labelSelector": {"matchLabels": {"app": "a"}},
            "topologyKey": "kubernetes.io/hostname"}]);
        assert!(with(
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term}})
        ));
        assert!(with(
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term}})
        ));
        assert!(with(
            json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
            [{"weight": 1, "podAffinityTerm": term[0]}]}})
        ));
        let node_only = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}]}}});
        assert!(!with(node_only));
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}));
        assert!(!TaskSpec::from_pod(p, true, "default").inter_pod_affinity);
    }

    #[test]
    fn annotations_and_labels() {
        let p = pod(json!({
            "metadata": {"name": "p", "namespace": "ns",
                "annotations": {"scheduling.k8s.io/group-name": "pg", "volcano.sh/task-priority": "7",
                                 "volcano.sh/preemptable": "false"},
                "labels": {"volcano.sh/task-spec": "worker"}},
            "spec": {"containers": [{"name": "c"}], "priority": 100}
        }));
        let t = TaskSpec::from_pod(p, true, "default");
        assert_eq!(t.job, JobLink::PodGroup("ns/pg".into()));
        assert_eq!(t.priority, 7);
        assert!(!t.preemptable);
        assert_eq!(t.role, "worker");
    }

    #[test]
    fn other_schedulers_pod_has_no_job_and_invalid_bool_is_false() {
        let p = pod(json!({
            "metadata": {"name": "p", "annotations": {"volcano.sh/preemptable": "maybe", "volcano.sh/task-priority": "x"}},
            "spec": {"containers": [{"name": "c"}], "priority": 5, "nodeName": "n1"},
            "status": {"phase": "Running"}
        }));
        let t = TaskSpec::from_pod(p, false, "default");
        assert_eq!(t.job, JobLink::None);
        assert!(!t.preemptable);
        assert_eq!(t.priority, 5);
        assert_eq!(t.node_name.as_deref(), Some("n1"));
        assert_eq!(t.status, TaskStatus::Running);
    }

    #[test]
    fn gates() {
        let p = pod(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}], "schedulingGates": [{"name": "scheduling.volcano.sh/queue-allocation-gate"}]}
        }));
        let t = TaskSpec::from_pod(p, true, "default");
        assert!(t.sch_gated && t.only_volcano_gate);
    }
}
