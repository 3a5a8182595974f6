//! The objects an extender receives, in the JSON shape of Volcano's scheduler structs
//! (spec/plugins-more.md §7.4, "Serialized objects"): Go field names, resources as
//! `{MilliCPU, Memory, ScalarResources, MaxTaskNum}`, task status as Volcano's bit flag, and the
//! Kubernetes objects (Pod, Node, PodGroup, Queue) whole. Fields Volcano fills from state this
//! build does not keep (NUMA, DRA claims, hypernodes) are left out.

use engine::framework::SessionState;
use engine::model::{JobId, NodeId, QueueId, Resource, TaskId, TaskStatus};
use serde_json::{Map, Value, json};

/// Volcano's `TaskStatus` bit flags.
pub fn status_flag(s: TaskStatus) -> u32 {
    match s {
        TaskStatus::Pending => 1,
        TaskStatus::Allocated => 2,
        TaskStatus::Pipelined => 4,
        TaskStatus::Binding => 8,
        TaskStatus::Bound => 16,
        TaskStatus::Running => 32,
        TaskStatus::Releasing => 64,
        TaskStatus::Succeeded => 128,
        TaskStatus::Failed => 256,
        TaskStatus::Unknown => 512,
    }
}

pub fn resource(r: &Resource) -> Value {
    let scalars: Map<String, Value> = r
        .scalars
        .iter()
        .map(|(name, v)| (name.as_str().to_string(), json!(v)))
        .collect();
    json!({
        "MilliCPU": r.milli_cpu,
        "Memory": r.memory,
        "ScalarResources": if scalars.is_empty() { Value::Null } else { Value::Object(scalars) },
        "MaxTaskNum": r.max_task_num,
    })
}

pub fn task(ssn: &SessionState, id: TaskId) -> Value {
    let t = ssn.task(id);
    let s = &t.spec;
    let job = t
        .job
        .map(|j| ssn.job(j).spec.uid.clone())
        .unwrap_or_default();
    let node = t
        .node
        .map(|n| ssn.node(n).name().to_string())
        .or_else(|| s.node_name.clone())
        .unwrap_or_default();
    json!({
        "UID": s.uid,
        "Job": job,
        "Name": s.name,
        "Namespace": s.namespace,
        "TaskRole": s.role,
        "Resreq": resource(&s.resreq),
        "InitResreq": resource(&s.resreq),
        "NodeName": node,
        "EvictionOccurred": t.eviction_occurred,
        "Status": status_flag(t.status),
        "Priority": s.priority,
        "Preemptable": s.preemptable,
        "BestEffort": s.best_effort,
        "HasRestartableInitContainer": s.has_restartable_init_container,
        "SchGated": s.sch_gated,
        "RevocableZone": s.revocable_zone,
        "Pod": serde_json::to_value(s.pod.as_ref()).unwrap_or(Value::Null),
        "PodAnnotations": s.pod.metadata.annotations,
    })
}

pub fn node(ssn: &SessionState, id: NodeId) -> Value {
    let n = ssn.node(id);
    let tasks: Map<String, Value> = n
        .tasks
        .iter()
        .map(|(t, _)| (ssn.task(*t).spec.uid.clone(), task(ssn, *t)))
        .collect();
    let usage = n.usage.map(|u| {
        json!({
            "MetricsTime": u.metrics_time.to_string(),
            "CPUUsageAvg": {"10m": u.cpu_percent},
            "MEMUsageAvg": {"10m": u.memory_percent},
        })
    });
    json!({
        "Name": n.name(),
        "Node": serde_json::to_value(n.spec.node.as_ref()).unwrap_or(Value::Null),
        "State": {"Phase": "Ready", "Reason": ""},
        "Releasing": resource(&n.releasing),
        "Pipelined": resource(&n.pipelined),
        "Idle": resource(&n.idle),
        "Used": resource(&n.used),
        "Allocatable": resource(&n.spec.allocatable),
        "Capacity": resource(&n.spec.capacity),
        "ResourceUsage": usage,
        "Tasks": tasks,
        "RevocableZone": n.spec.revocable_zone,
    })
}

pub fn job(ssn: &SessionState, id: JobId) -> Value {
    let j = ssn.job(id);
    let tasks: Map<String, Value> = j
        .tasks
        .iter()
        .map(|t| (ssn.task(*t).spec.uid.clone(), task(ssn, *t)))
        .collect();
    let pod_group = ssn
        .snapshot()
        .pod_group(&format!("{}/{}", j.spec.namespace, j.spec.name))
        .and_then(|pg| serde_json::to_value(pg.as_ref()).ok());
    json!({
        "UID": j.spec.uid,
        "PgUID": j.spec.pg_uid,
        "Name": j.spec.name,
        "Namespace": j.spec.namespace,
        "Queue": j.spec.queue_name,
        "Priority": j.priority,
        "MinAvailable": j.spec.min_available,
        "JobFitErrors": j.job_fit_errors,
        "Tasks": tasks,
        "TaskMinAvailable": j.spec.task_min_available,
        "TaskMinAvailableTotal": j.spec.task_min_available_total,
        "Allocated": resource(&j.allocated),
        "TotalRequest": resource(&j.total_request),
        "CreationTimestamp": j.spec.creation.map(|c| c.to_string()),
        "PodGroup": pod_group,
        "Preemptable": j.spec.preemptable,
        "RevocableZone": j.spec.revocable_zone,
    })
}

pub fn queue(ssn: &SessionState, id: QueueId) -> Value {
    let q = &ssn.queue(id).spec;
    json!({
        "UID": q.name,
        "Name": q.name,
        "Weight": q.weight,
        "Weights": q.hierarchy_weights,
        "Hierarchy": q.hierarchy,
        "Queue": serde_json::to_value(q.queue.as_ref()).unwrap_or(Value::Null),
    })
}

/// The cycle-open request: every job, node and queue, keyed as Volcano keys them.
pub fn session_open(ssn: &SessionState) -> Value {
    let jobs: Map<String, Value> = ssn
        .job_ids()
        .map(|j| (ssn.job(j).spec.uid.clone(), job(ssn, j)))
        .collect();
    let nodes: Map<String, Value> = ssn
        .node_ids()
        .map(|n| (ssn.node(n).name().to_string(), node(ssn, n)))
        .collect();
    let queues: Map<String, Value> = (0..ssn.queues().len())
        .map(QueueId::from_index)
        .map(|q| (ssn.queue(q).spec.name.clone(), queue(ssn, q)))
        .collect();
    let revocable: Map<String, Value> = ssn
        .node_ids()
        .filter(|n| !ssn.node(*n).spec.revocable_zone.is_empty())
        .map(|n| (ssn.node(n).name().to_string(), node(ssn, n)))
        .collect();
    json!({
        "Jobs": jobs,
        "Nodes": nodes,
        "Queues": queues,
        "NamespaceInfo": {},
        "RevocableNodes": revocable,
        "NodeList": null,
    })
}
