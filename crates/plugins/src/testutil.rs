//! Shared helpers for the plugins' unit tests: a small cluster written as JSON objects, and a
//! session opened over it with this crate's plugin registry.
//!
//! ```ignore
//! let mut c = TestCluster::new();
//! c.node("n1", json!({"cpu": "4", "memory": "8Gi", "pods": "110"}));
//! c.pod_group(pod_group("ns", "pg", 2));
//! c.pod(pod("ns", "p1", Some("pg"), "Pending", None, json!({"cpu": "1"})));
//! let ssn = c.session(&[&["gang"]]);
//! let task = ssn.state.task_by_key("ns/p1");
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::conf::{PluginOption, SchedulerConf, Tier};
use engine::framework::{Session, SessionOptions, SessionState, Statement};
use engine::model::{JobId, NodeId, TaskId};
use engine::state::{ClusterState, StateOptions};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

/// The scheduler name the test pods use (the engine's default).
pub const SCHEDULER: &str = "volcano-rs";

/// The session time of [`TestCluster::session`]: 2024-01-01T00:00:00Z.
pub fn test_now() -> Timestamp {
    Timestamp::from_second(1_704_067_200).expect("valid timestamp")
}

/// The session UID of [`TestCluster::session`].
pub const SESSION_UID: &str = "session-uid";

/// A cluster state fed from JSON, with the `default` queue already present.
pub struct TestCluster {
    pub state: ClusterState,
}

impl Default for TestCluster {
    fn default() -> Self {
        Self::new()
    }
}

impl TestCluster {
    pub fn new() -> Self {
        let mut c = TestCluster {
            state: ClusterState::new(StateOptions::default()),
        };
        c.queue(json!({"metadata": {"name": "default"}, "spec": {"weight": 1}}));
        c
    }

    /// A ready node with the given `status.allocatable` (and the same capacity).
    pub fn node(&mut self, name: &str, allocatable: Value) -> &mut Self {
        let node = json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": allocatable.clone(),
                "capacity": allocatable,
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        });
        self.state
            .upsert_node(serde_json::from_value(node).expect("valid node"));
        self
    }

    pub fn queue(&mut self, queue: Value) -> &mut Self {
        self.state
            .upsert_queue(serde_json::from_value(queue).expect("valid queue"));
        self
    }

    pub fn pod_group(&mut self, pod_group: Value) -> &mut Self {
        self.state
            .upsert_pod_group(serde_json::from_value(pod_group).expect("valid pod group"));
        self
    }

    pub fn pod(&mut self, pod: Value) -> &mut Self {
        self.state
            .upsert_pod(serde_json::from_value(pod).expect("valid pod"));
        self
    }

    /// A `topology.volcano.sh/v1alpha1` HyperNode written as JSON.
    pub fn hyper_node(&mut self, hn: Value) -> &mut Self {
        self.state
            .upsert_hyper_node(serde_json::from_value(hn).expect("valid hypernode"));
        self
    }

    /// A node's Numatopology report written as JSON.
    pub fn numatopology(&mut self, report: Value) -> &mut Self {
        self.state
            .upsert_numatopology(serde_json::from_value(report).expect("valid numatopology"));
        self
    }

    pub fn priority_class(&mut self, name: &str, value: i32) -> &mut Self {
        let pc = json!({"metadata": {"name": name}, "value": value});
        self.state
            .upsert_priority_class(serde_json::from_value(pc).expect("valid priority class"));
        self
    }

    /// A `policy/v1` PodDisruptionBudget written as JSON.
    pub fn pdb(&mut self, pdb: Value) -> &mut Self {
        self.state
            .upsert_pdb(serde_json::from_value(pdb).expect("valid pod disruption budget"));
        self
    }

    /// Opens a session whose tiers hold the named plugins with default options.
    pub fn session(&self, tiers: &[&[&str]]) -> Session {
        let tiers = tiers
            .iter()
            .map(|names| names.iter().map(|n| PluginOption::new(n)).collect())
            .collect();
        self.session_with(tiers)
    }

    /// Opens a session over explicit plugin options, one `Vec` per tier.
    pub fn session_with(&self, tiers: Vec<Vec<PluginOption>>) -> Session {
        Session::open(
            &self.state.snapshot(),
            Arc::new(conf(tiers)),
            &crate::registry(),
            SessionOptions::default(),
            test_now(),
            SESSION_UID.to_string(),
        )
    }
}

/// A configuration with no actions and the given tiers.
pub fn conf(tiers: Vec<Vec<PluginOption>>) -> SchedulerConf {
    SchedulerConf {
        actions: Vec::new(),
        tiers: tiers.into_iter().map(|plugins| Tier { plugins }).collect(),
        configurations: Vec::new(),
        metrics: BTreeMap::new(),
        skipped_plugins: Vec::new(),
    }
}

/// A PodGroup in the `default` queue with `minMember` set; add fields to the JSON as needed.
pub fn pod_group(namespace: &str, name: &str, min_member: i32) -> Value {
    json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": format!("pg-uid-{namespace}-{name}"),
            "creationTimestamp": "2023-12-31T00:00:00Z"
        },
        "spec": {"minMember": min_member, "queue": "default"}
    })
}

/// A pod of ours with one container asking for `requests`. `group` is the PodGroup name (none:
/// a standalone pod), `phase` the pod phase and `node` its `spec.nodeName`.
pub fn pod(
    namespace: &str,
    name: &str,
    group: Option<&str>,
    phase: &str,
    node: Option<&str>,
    requests: Value,
) -> Value {
    let mut p = json!({
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": format!("uid-{namespace}-{name}"),
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "annotations": {},
            "labels": {}
        },
        "spec": {
            "schedulerName": SCHEDULER,
            "containers": [{"name": "main", "resources": {"requests": requests}}]
        },
        "status": {"phase": phase}
    });
    if let Some(g) = group {
        p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = json!(g);
    }
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    }
    p
}

/// Allocates pod `key` to `node` through a statement (the effect stays in the session).
pub fn allocate(ssn: &mut Session, key: &str, node: &str) {
    let (task, node) = (ssn.state.task_by_key(key), ssn.state.node_by_key(node));
    ssn.allocate(&mut Statement::new(), task, node)
        .expect("allocation succeeds");
}

/// Pipelines pod `key` onto `node` through a statement (the effect stays in the session).
pub fn pipeline(ssn: &mut Session, key: &str, node: &str) {
    let (task, node) = (ssn.state.task_by_key(key), ssn.state.node_by_key(node));
    ssn.pipeline(&mut Statement::new(), task, node, false)
        .expect("pipelining succeeds");
}

/// Look-ups by name for assertions.
pub trait StateLookup {
    /// The task of pod `<namespace>/<name>`.
    fn task_by_key(&self, key: &str) -> TaskId;
    /// The job of PodGroup `<namespace>/<name>`.
    fn job_by_key(&self, key: &str) -> JobId;
    /// The node named `name`.
    fn node_by_key(&self, name: &str) -> NodeId;
}

impl StateLookup for SessionState {
    fn task_by_key(&self, key: &str) -> TaskId {
        let index = self
            .tasks()
            .iter()
            .position(|t| t.key() == key)
            .unwrap_or_else(|| panic!("no task {key}"));
        TaskId::from_index(index)
    }

    fn job_by_key(&self, key: &str) -> JobId {
        self.job_id(key).unwrap_or_else(|| panic!("no job {key}"))
    }

    fn node_by_key(&self, name: &str) -> NodeId {
        self.node_id(name)
            .unwrap_or_else(|| panic!("no node {name}"))
    }
}

/// A PodGroup `ns/<name>` in `queue` with the given phase and optional minResources.
pub fn queued_group(name: &str, queue: &str, phase: &str, min_resources: Option<Value>) -> Value {
    let mut pg = pod_group("ns", name, 1);
    pg["spec"]["queue"] = json!(queue);
    pg["status"] = json!({"phase": phase});
    if let Some(min) = min_resources {
        pg["spec"]["minResources"] = min;
    }
    pg
}

/// A Running pod `ns/<name>` of `group` on `n1` requesting `cpu`.
pub fn running(c: &mut TestCluster, name: &str, group: &str, cpu: &str) {
    c.pod(pod(
        "ns",
        name,
        Some(group),
        "Running",
        Some("n1"),
        json!({"cpu": cpu}),
    ));
}

/// A Pending pod `ns/<name>` of `group` requesting `cpu`.
pub fn pending(c: &mut TestCluster, name: &str, group: &str, cpu: &str) {
    c.pod(pod(
        "ns",
        name,
        Some(group),
        "Pending",
        None,
        json!({"cpu": cpu}),
    ));
}
