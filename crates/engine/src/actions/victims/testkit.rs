//! A small cluster and fake plugins for the eviction actions' tests. The plugins are simple
//! stand-ins with the shape of Volcano's (gang-like starving/pipelined votes, priority-like
//! victims, proportion-like queue quotas, a predicate driven by node annotations), so that the
//! actions can be tested without the plugins crate.

use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::conf::{Arguments, KnownNames, parse};
use crate::framework::{
    ExtensionPoints as EP, PERMIT, Plugin, PluginRegistry, REJECT, Session, SessionOptions,
    SessionState,
};
use crate::model::{FitError, FitStatus, JobId, NodeId, QueueId, StatusCode, TaskId};
use crate::model::{TaskStatus, task::TaskInfo};
use crate::state::{ClusterState, StateOptions};

/// The plugins below, by name.
pub const PLUGINS: &[&str] = &[
    "gangish",
    "prio",
    "quota",
    "nodecheck",
    "lowfirst",
    "s1",
    "s2",
    "s3",
    "s4",
];

/// Names under which [`Scripted`] is registered.
const SCRIPTED: [&str; 4] = ["s1", "s2", "s3", "s4"];

/// Gang-like votes: starving while `ready + pipelined < minMember`, pipelined (Permit) once
/// `ready + pipelined ≥ minMember`, ready once `ready ≥ minMember`.
struct Gangish;

impl Plugin for Gangish {
    fn name(&self) -> &'static str {
        "gangish"
    }
    fn extension_points(&self) -> EP {
        EP::JOB_STARVING | EP::JOB_PIPELINED | EP::JOB_READY
    }
    fn job_starving(&self, ssn: &SessionState, job: JobId) -> bool {
        ssn.job(job).is_starving()
    }
    fn job_pipelined(&self, ssn: &SessionState, job: JobId) -> i32 {
        if ssn.job(job).is_pipelined() {
            PERMIT
        } else {
            REJECT
        }
    }
    fn job_ready(&self, ssn: &SessionState, job: JobId) -> bool {
        ssn.job(job).is_ready()
    }
}

/// Priority-like: higher job priority first, higher task priority first; preemption victims
/// are tasks of lower-priority jobs, or lower-priority tasks of the preemptor's own job.
/// Every reclaim candidate is permitted (the quota plugin narrows them).
struct Prio;

impl Plugin for Prio {
    fn name(&self) -> &'static str {
        "prio"
    }
    fn extension_points(&self) -> EP {
        EP::JOB_ORDER | EP::TASK_ORDER | EP::PREEMPTABLE | EP::RECLAIMABLE
    }
    fn job_order(&self, ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
        ssn.job(r).priority.cmp(&ssn.job(l).priority)
    }
    fn task_order(&self, ssn: &SessionState, l: TaskId, r: TaskId) -> Ordering {
        ssn.task(r).spec.priority.cmp(&ssn.task(l).spec.priority)
    }
    fn preemptable(
        &self,
        ssn: &SessionState,
        preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        let p = ssn.task(preemptor);
        let victims = candidates
            .iter()
            .copied()
            .filter(|&c| {
                let t = ssn.task(c);
                match (t.job, p.job) {
                    (Some(cj), Some(pj)) if cj == pj => t.spec.priority < p.spec.priority,
                    (Some(cj), Some(pj)) => ssn.job(cj).priority < ssn.job(pj).priority,
                    _ => false,
                }
            })
            .collect();
        (victims, PERMIT)
    }
    fn reclaimable(
        &self,
        _ssn: &SessionState,
        _reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        (candidates.to_vec(), PERMIT)
    }
}

/// Job order that serves lower-priority jobs first (to provoke the take-back rule).
struct LowFirst;

impl Plugin for LowFirst {
    fn name(&self) -> &'static str {
        "lowfirst"
    }
    fn extension_points(&self) -> EP {
        EP::JOB_ORDER
    }
    fn job_order(&self, ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
        ssn.job(l).priority.cmp(&ssn.job(r).priority)
    }
}

/// Proportion-like quotas on cpu: a queue's `deserved` and `capability` come from its spec
/// (missing = unlimited); its allocation is what its tasks hold, pipelined ones included.
struct Quota;

/// Milli-cpu a queue holds: allocated tasks plus pipelined ones.
pub fn queue_cpu(ssn: &SessionState, q: QueueId) -> f64 {
    ssn.tasks()
        .iter()
        .filter(|t| t.job.and_then(|j| ssn.job(j).queue) == Some(q))
        .filter(|t| t.status.is_allocated() || t.status == TaskStatus::Pipelined)
        .map(|t| t.resreq().milli_cpu)
        .sum()
}

fn deserved(ssn: &SessionState, q: QueueId) -> f64 {
    ssn.queue(q)
        .spec
        .deserved
        .as_ref()
        .map_or(f64::INFINITY, |d| d.milli_cpu)
}

fn capability(ssn: &SessionState, q: QueueId) -> f64 {
    ssn.queue(q)
        .spec
        .capability
        .as_ref()
        .map_or(f64::INFINITY, |d| d.milli_cpu)
}

fn share(ssn: &SessionState, q: QueueId) -> f64 {
    let d = deserved(ssn, q);
    if d.is_finite() && d > 0.0 {
        queue_cpu(ssn, q) / d
    } else {
        0.0
    }
}

impl Plugin for Quota {
    fn name(&self) -> &'static str {
        "quota"
    }
    fn extension_points(&self) -> EP {
        EP::QUEUE_ORDER | EP::OVERUSED | EP::ALLOCATABLE | EP::PREEMPTIVE | EP::RECLAIMABLE
    }
    fn queue_order(&self, ssn: &SessionState, l: QueueId, r: QueueId) -> Ordering {
        share(ssn, l).total_cmp(&share(ssn, r))
    }
    fn overused(&self, ssn: &SessionState, q: QueueId) -> bool {
        deserved(ssn, q) <= queue_cpu(ssn, q)
    }
    fn allocatable(&self, ssn: &SessionState, q: QueueId, task: TaskId) -> bool {
        queue_cpu(ssn, q) + ssn.task(task).resreq().milli_cpu <= capability(ssn, q)
    }
    fn preemptive(&self, ssn: &SessionState, q: QueueId, request: &crate::model::Resource) -> bool {
        queue_cpu(ssn, q) + request.milli_cpu <= deserved(ssn, q)
    }
    fn reclaimable(
        &self,
        ssn: &SessionState,
        _reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        let mut held: Vec<(QueueId, f64)> = Vec::new();
        let mut victims = Vec::new();
        for &c in candidates {
            let Some(q) = ssn.queue_of_task(c) else {
                continue;
            };
            let pos = match held.iter().position(|(hq, _)| *hq == q) {
                Some(p) => p,
                None => {
                    held.push((q, queue_cpu(ssn, q)));
                    held.len() - 1
                }
            };
            if held[pos].1 > deserved(ssn, q) {
                held[pos].1 -= ssn.task(c).resreq().milli_cpu;
                victims.push(c);
            }
        }
        (victims, PERMIT)
    }
}

/// Node annotations drive the predicate: `test/unschedulable` fails with `Unschedulable`
/// (evicting pods cannot fix it), `test/unresolvable` with `UnschedulableAndUnresolvable`,
/// `test/max-pods: N` fails with `Unschedulable` while N pods hold the node (evicted
/// ones no longer count, pipelined ones do), and `test/repels: <pod name>` fails with
/// `Unschedulable` for other pods while that pod holds the node (an anti-affinity in
/// miniature: only evicting that one pod helps).
struct NodeCheck;

fn annotation<'a>(ssn: &'a SessionState, node: NodeId, key: &str) -> Option<&'a str> {
    ssn.node(node)
        .spec
        .node
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

impl Plugin for NodeCheck {
    fn name(&self) -> &'static str {
        "nodecheck"
    }
    fn extension_points(&self) -> EP {
        EP::PREDICATE
    }
    fn predicate(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<(), FitError> {
        let fail = |code, reason: &'static str| {
            Err(FitError::new(FitStatus::new(code, reason, "nodecheck")))
        };
        if annotation(ssn, node, "test/unresolvable").is_some() {
            return fail(StatusCode::UnschedulableAndUnresolvable, "unresolvable");
        }
        if annotation(ssn, node, "test/unschedulable").is_some() {
            return fail(StatusCode::Unschedulable, "unschedulable");
        }
        if let Some(repelled) = annotation(ssn, node, "test/repels") {
            let present = ssn.node(node).tasks.iter().any(|&(t, _)| {
                let t = ssn.task(t);
                t.spec.name == repelled && t.status != TaskStatus::Releasing
            });
            if present && ssn.task(task).spec.name != repelled {
                return fail(StatusCode::Unschedulable, "repelled");
            }
        }
        if let Some(max) = annotation(ssn, node, "test/max-pods").and_then(|v| v.parse().ok()) {
            let pods = ssn
                .node(node)
                .tasks
                .iter()
                .filter(|(t, _)| ssn.task(*t).status != TaskStatus::Releasing)
                .count();
            if pods >= max {
                return fail(StatusCode::Unschedulable, "too many pods");
            }
        }
        Ok(())
    }
}

/// Answers from its arguments: `victims: "p1,p2"` (pod names; `""` is an empty answer)
/// for both victim filters, `starving: bool` for `JobStarving`.
struct Scripted {
    points: EP,
    victims: Vec<String>,
    starving: bool,
}

fn scripted(args: &Arguments) -> Box<dyn Plugin> {
    let mut points = EP::NONE;
    let mut victims = String::new();
    if args.get_string("victims", &mut victims) == Ok(true) {
        points = points | EP::PREEMPTABLE | EP::RECLAIMABLE;
    }
    let mut starving = false;
    if args.get_bool("starving", &mut starving) == Ok(true) {
        points = points | EP::JOB_STARVING;
    }
    Box::new(Scripted {
        points,
        victims: victims
            .split(',')
            .filter(|v| !v.is_empty())
            .map(|v| format!("ns/{v}"))
            .collect(),
        starving,
    })
}

impl Scripted {
    fn answer(&self, ssn: &SessionState) -> (Vec<TaskId>, i32) {
        let ids = self
            .victims
            .iter()
            .filter_map(|key| ssn.tasks().iter().position(|t| t.key() == key))
            .map(TaskId::from_index)
            .collect();
        (ids, PERMIT)
    }
}

impl Plugin for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }
    fn extension_points(&self) -> EP {
        self.points
    }
    fn preemptable(&self, ssn: &SessionState, _: TaskId, _: &[TaskId]) -> (Vec<TaskId>, i32) {
        self.answer(ssn)
    }
    fn reclaimable(&self, ssn: &SessionState, _: TaskId, _: &[TaskId]) -> (Vec<TaskId>, i32) {
        self.answer(ssn)
    }
    fn job_starving(&self, _: &SessionState, _: JobId) -> bool {
        self.starving
    }
}

fn registry() -> PluginRegistry {
    let mut r = PluginRegistry::new();
    for name in SCRIPTED {
        r.register(name, scripted);
    }
    r.register("gangish", |_: &Arguments| -> Box<dyn Plugin> {
        Box::new(Gangish)
    });
    r.register("prio", |_: &Arguments| -> Box<dyn Plugin> {
        Box::new(Prio)
    });
    r.register("quota", |_: &Arguments| -> Box<dyn Plugin> {
        Box::new(Quota)
    });
    r.register("nodecheck", |_: &Arguments| -> Box<dyn Plugin> {
        Box::new(NodeCheck)
    });
    r.register("lowfirst", |_: &Arguments| -> Box<dyn Plugin> {
        Box::new(LowFirst)
    });
    r
}

/// One tier with every plugin but `lowfirst`, running `actions`.
pub fn conf(actions: &str) -> String {
    format!(
        "actions: \"{actions}\"\ntiers:\n- plugins:\n  - name: prio\n  - name: gangish\n  - name: quota\n  - name: nodecheck\n"
    )
}

/// A cluster written as JSON objects.
pub struct Cluster {
    pub state: ClusterState,
    pods: usize,
}

impl Cluster {
    /// Queues `q1` and `q2` without quotas; add more with [`Cluster::queue`].
    pub fn new() -> Self {
        let mut c = Cluster {
            state: ClusterState::new(StateOptions::default()),
            pods: 0,
        };
        c.queue("q1", json!({}), true).queue("q2", json!({}), true);
        c
    }

    /// A node with `cpu` allocatable and the given annotations.
    pub fn node(&mut self, name: &str, cpu: &str, annotations: Value) -> &mut Self {
        let node = json!({
            "metadata": {"name": name, "annotations": annotations},
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}
        });
        self.state
            .upsert_node(serde_json::from_value(node).expect("valid node"));
        self
    }

    /// A queue; `spec` may set `deserved` and `capability`.
    pub fn queue(&mut self, name: &str, spec: Value, reclaimable: bool) -> &mut Self {
        let mut spec = spec;
        spec["weight"] = json!(1);
        spec["reclaimable"] = json!(reclaimable);
        let q = json!({"metadata": {"name": name, "creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": spec});
        self.state
            .upsert_queue(serde_json::from_value(q).expect("valid queue"));
        self
    }

    pub fn priority_class(&mut self, name: &str, value: i32) -> &mut Self {
        let pc = json!({"metadata": {"name": name}, "value": value});
        self.state
            .upsert_priority_class(serde_json::from_value(pc).expect("valid priority class"));
        self
    }

    /// A running PodGroup `ns/<name>` in `queue` with a priority class (`""`: none).
    pub fn job(&mut self, name: &str, queue: &str, min: i32, class: &str) -> &mut Self {
        let pg = json!({
            "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"minMember": min, "queue": queue, "priorityClassName": class},
            "status": {"phase": "Running"}
        });
        self.state
            .upsert_pod_group(serde_json::from_value(pg).expect("valid pod group"));
        self
    }

    /// A pod `ns/<name>` of job `job` asking for `cpu`: running on `node`, or pending.
    /// Pods are created one second apart, in call order.
    pub fn pod(&mut self, name: &str, job: &str, cpu: &str, node: Option<&str>) -> &mut Self {
        self.pod_with(name, job, cpu, node, json!({}))
    }

    /// [`Cluster::pod`] with extra top-level pod fields merged in (`spec`/`status` keys are
    /// merged one level deep).
    pub fn pod_with(
        &mut self,
        name: &str,
        job: &str,
        cpu: &str,
        node: Option<&str>,
        extra: Value,
    ) -> &mut Self {
        self.pods += 1;
        let mut pod = json!({
            "metadata": {
                "name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "creationTimestamp": format!("2024-01-01T00:00:{:02}Z", self.pods),
                "annotations": {"scheduling.k8s.io/group-name": job}
            },
            "spec": {
                "schedulerName": "volcano-rs",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]
            },
            "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}
        });
        if let Some(n) = node {
            pod["spec"]["nodeName"] = json!(n);
        }
        if let Value::Object(extra) = extra {
            for (k, v) in extra {
                match (pod.get_mut(&k), v) {
                    (Some(Value::Object(dst)), Value::Object(src)) => dst.extend(src),
                    (_, v) => pod[&k] = v,
                }
            }
        }
        self.state
            .upsert_pod(serde_json::from_value(pod).expect("valid pod"));
        self
    }

    /// Opens a session with the test plugins.
    pub fn session(&self, conf: &str) -> Session {
        let known = KnownNames {
            actions: &["enqueue", "allocate", "preempt", "reclaim", "backfill"],
            plugins: PLUGINS,
            strict: true,
            check_arguments: None,
        };
        let conf = parse(conf, &known).expect("valid configuration").conf;
        Session::open(
            &self.state.snapshot(),
            Arc::new(conf),
            &registry(),
            SessionOptions::default(),
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            "session".into(),
        )
    }
}

/// The task of pod `ns/<name>`.
pub fn task(ssn: &Session, name: &str) -> TaskId {
    let key = format!("ns/{name}");
    let i = ssn
        .state
        .tasks()
        .iter()
        .position(|t: &TaskInfo| t.key() == key)
        .unwrap_or_else(|| panic!("no pod {key}"));
    TaskId::from_index(i)
}

pub fn node(ssn: &Session, name: &str) -> NodeId {
    ssn.state.node_id(name).expect("node")
}

pub fn queue(ssn: &Session, name: &str) -> QueueId {
    ssn.state.queue_id(name).expect("queue")
}

pub fn status(ssn: &Session, name: &str) -> TaskStatus {
    ssn.state.task(task(ssn, name)).status
}

/// Runs one action the way the session loop does (so evictions name it).
pub fn run(ssn: &mut Session, action: &str) {
    let execute = crate::actions::action_by_name(action).expect("known action");
    ssn.state.begin_action(action);
    execute(ssn);
    ssn.state.end_action();
}

/// The pod names evicted so far, with the action that decided it.
pub fn evictions(ssn: &Session) -> Vec<(String, String)> {
    ssn.state
        .decisions()
        .evictions
        .iter()
        .map(|e| {
            let name = e.pod.strip_prefix("ns/").unwrap_or(&e.pod).to_string();
            (name, e.action.clone())
        })
        .collect()
}

/// The node a task was pipelined to, by name.
pub fn pipelined_on(ssn: &Session, name: &str) -> Option<String> {
    let t = ssn.state.task(task(ssn, name));
    (t.status == TaskStatus::Pipelined)
        .then(|| t.node.map(|n| ssn.state.node(n).name().to_string()))
        .flatten()
}
