//! A node and its accounting (spec/framework.md §5.6).

use std::sync::Arc;

use apis::keys;
use k8s_openapi::api::core::v1::Node;

use super::ids::TaskId;
use super::resource::Resource;
use super::status::TaskStatus;
use super::task::TaskInfo;

/// Parsed, immutable facts about a node object; shared between state, snapshots and sessions.
#[derive(Debug)]
pub struct NodeSpec {
    pub name: String,
    pub node: Arc<Node>,
    pub allocatable: Resource,
    /// `status.allocatable` as the node object states it, without oversubscription (what the
    /// Kubernetes scores read).
    pub stated_allocatable: Resource,
    pub capacity: Resource,
    pub revocable_zone: String,
}

impl NodeSpec {
    pub fn from_node(node: Arc<Node>) -> NodeSpec {
        let status = node.status.as_ref();
        let mut allocatable = status
            .and_then(|s| s.allocatable.as_ref())
            .map(Resource::from_list)
            .unwrap_or_default();
        let stated_allocatable = allocatable.clone();
        let mut capacity = status
            .and_then(|s| s.capacity.as_ref())
            .map(Resource::from_list)
            .unwrap_or_default();
        let labels = node.metadata.labels.as_ref();
        let annotations = node.metadata.annotations.as_ref();
        let oversubscription = labels
            .and_then(|l| l.get(keys::OVERSUBSCRIPTION))
            .and_then(|v| super::task::parse_go_bool(v))
            .unwrap_or(false);
        if oversubscription {
            // Oversubscription resources are extra allocatable advertised by annotation.
            let parse = |k: &str| {
                annotations
                    .and_then(|a| a.get(k))
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0)
            };
            let extra = Resource::from_pairs(
                parse(keys::OVERSUBSCRIPTION_CPU),
                parse(keys::OVERSUBSCRIPTION_MEMORY),
                &[],
            );
            allocatable.add(&extra);
            capacity.add(&extra);
        }
        NodeSpec {
            name: node.metadata.name.clone().unwrap_or_default(),
            revocable_zone: labels
                .and_then(|l| l.get(keys::REVOCABLE_ZONE))
                .cloned()
                .unwrap_or_default(),
            allocatable,
            stated_allocatable,
            capacity,
            node,
        }
    }
}

/// A node's measured load as a metrics source last reported it (spec/plugins-more.md §4.1):
/// CPU and memory in percent (0–100), averaged over the source's 10-minute window, and when
/// the sample was taken. Volcano's `NodeInfo.ResourceUsage` with its only key, `"10m"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeUsage {
    pub cpu_percent: f64,
    pub memory_percent: f64,
    pub metrics_time: k8s_openapi::jiff::Timestamp,
}

/// The session's view of one node: what is used, idle, releasing and pipelined.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub spec: Arc<NodeSpec>,
    pub idle: Resource,
    pub used: Resource,
    pub releasing: Resource,
    pub pipelined: Resource,
    /// Tasks on the node, each with the status it was accounted under (inline up to four:
    /// the node table is built every session).
    pub tasks: smallvec::SmallVec<[(TaskId, TaskStatus); 4]>,
    /// The node's measured load, if a metrics source reported one.
    pub usage: Option<NodeUsage>,
}

impl NodeInfo {
    pub fn new(spec: Arc<NodeSpec>) -> Self {
        NodeInfo {
            idle: spec.allocatable.clone(),
            used: Resource::empty(),
            releasing: Resource::empty(),
            pipelined: Resource::empty(),
            tasks: smallvec::SmallVec::new(),
            usage: None,
            spec,
        }
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn allocatable(&self) -> &Resource {
        &self.spec.allocatable
    }

    /// `Idle + Releasing − Pipelined` (may be negative in a dimension).
    pub fn future_idle(&self) -> Resource {
        let mut r = self.idle.clone();
        r.add(&self.releasing);
        r.sub_without_assert(&self.pipelined);
        r
    }

    /// Number of pods counted on the node (for the pod-count predicate).
    pub fn pod_count(&self) -> usize {
        self.tasks.len()
    }

    /// `AddTask` (§5.6): accounting by the task's status. (Volcano's extra "a `Binding` task must
    /// fit `Idle`" rule belongs to its cache's bind path; here the daemon's state does that.)
    pub fn add_task(&mut self, id: TaskId, task: &TaskInfo) -> Result<(), String> {
        if self.tasks.iter().any(|(t, _)| *t == id) {
            return Err(format!(
                "task {} is already on node {}",
                task.key(),
                self.name()
            ));
        }
        let req = task.resreq();
        match task.status {
            TaskStatus::Releasing => {
                self.idle.sub_without_assert(req);
                self.releasing.add(req);
                self.used.add(req);
            }
            TaskStatus::Pipelined => {
                self.pipelined.add(req);
            }
            _ => {
                // Idle may go negative when the API server's view overcommits a node; that is
                // reported, not fatal (Volcano logs "out of sync").
                self.idle.sub_without_assert(req);
                self.used.add(req);
            }
        }
        self.tasks.push((id, task.status));
        Ok(())
    }

    /// `RemoveTask`: undoes the accounting made under the status the task was added with.
    pub fn remove_task(&mut self, id: TaskId, task: &TaskInfo) {
        let Some(pos) = self.tasks.iter().position(|(t, _)| *t == id) else {
            tracing::warn!(task = task.key(), node = self.name(), "task not on node");
            return;
        };
        let (_, status) = self.tasks.swap_remove(pos);
        let req = task.resreq();
        match status {
            TaskStatus::Releasing => {
                self.releasing.sub_without_assert(req);
                self.idle.add(req);
                self.used.sub_without_assert(req);
            }
            TaskStatus::Pipelined => {
                self.pipelined.sub_without_assert(req);
            }
            _ => {
                self.idle.add(req);
                self.used.sub_without_assert(req);
            }
        }
    }

    /// `UpdateTask` = remove + add under the task's current status.
    pub fn update_task(&mut self, id: TaskId, task: &TaskInfo) -> Result<(), String> {
        self.remove_task(id, task);
        self.add_task(id, task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::task::TaskSpec;
    use serde_json::json;

    fn node() -> Arc<NodeSpec> {
        let n: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        }))
        .expect("node");
        Arc::new(NodeSpec::from_node(Arc::new(n)))
    }

    fn task(cpu: &str, status: TaskStatus) -> TaskInfo {
        let p = serde_json::from_value(json!({
            "metadata": {"name": format!("p-{cpu}"), "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        }))
        .expect("pod");
        let mut t = TaskInfo::new(
            Arc::new(TaskSpec::from_pod(Arc::new(p), true, "default")),
            None,
            None,
        );
        t.status = status;
        t
    }

    #[test]
    fn accounting_by_status_and_future_idle() {
        let mut n = NodeInfo::new(node());
        let running = task("1", TaskStatus::Running);
        let releasing = task("2", TaskStatus::Releasing);
        let pipelined = task("500m", TaskStatus::Pipelined);
        n.add_task(TaskId(0), &running).expect("add");
        n.add_task(TaskId(1), &releasing).expect("add");
        n.add_task(TaskId(2), &pipelined).expect("add");
        assert_eq!(n.idle.milli_cpu, 1000.0);
        assert_eq!(n.used.milli_cpu, 3000.0);
        assert_eq!(n.releasing.milli_cpu, 2000.0);
        assert_eq!(n.pipelined.milli_cpu, 500.0);
        assert_eq!(n.future_idle().milli_cpu, 2500.0);
        n.remove_task(TaskId(1), &releasing);
        n.remove_task(TaskId(2), &pipelined);
        assert_eq!(n.idle.milli_cpu, 3000.0);
        assert_eq!(n.releasing.milli_cpu, 0.0);
        assert_eq!(n.pipelined.milli_cpu, 0.0);
    }

    #[test]
    fn duplicates_refused() {
        let mut n = NodeInfo::new(node());
        let t = task("1", TaskStatus::Binding);
        n.add_task(TaskId(1), &t).expect("fits");
        assert!(n.add_task(TaskId(1), &t).is_err());
    }
}
