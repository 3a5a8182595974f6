//! Task status and the pod → status mapping (spec/framework.md §5.1).

use k8s_openapi::api::core::v1::Pod;

/// Where a task stands. `Allocated`, `Pipelined` and `Binding` exist only inside the scheduler.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskStatus {
    Pending,
    Allocated,
    Pipelined,
    Binding,
    Bound,
    Running,
    Releasing,
    Succeeded,
    Failed,
    Unknown,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 10] = [
        TaskStatus::Pending,
        TaskStatus::Allocated,
        TaskStatus::Pipelined,
        TaskStatus::Binding,
        TaskStatus::Bound,
        TaskStatus::Running,
        TaskStatus::Releasing,
        TaskStatus::Succeeded,
        TaskStatus::Failed,
        TaskStatus::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "Pending",
            TaskStatus::Allocated => "Allocated",
            TaskStatus::Pipelined => "Pipelined",
            TaskStatus::Binding => "Binding",
            TaskStatus::Bound => "Bound",
            TaskStatus::Running => "Running",
            TaskStatus::Releasing => "Releasing",
            TaskStatus::Succeeded => "Succeeded",
            TaskStatus::Failed => "Failed",
            TaskStatus::Unknown => "Unknown",
        }
    }

    /// Position in [`TaskStatus::ALL`]; used to index per-status counters.
    pub fn index(self) -> usize {
        self as usize
    }

    /// `AllocatedStatus`: Bound, Binding, Running, Allocated.
    pub fn is_allocated(self) -> bool {
        matches!(
            self,
            TaskStatus::Bound | TaskStatus::Binding | TaskStatus::Running | TaskStatus::Allocated
        )
    }

    /// `PreemptableStatus`: Bound, Running.
    pub fn is_preemptable(self) -> bool {
        matches!(self, TaskStatus::Bound | TaskStatus::Running)
    }

    /// `CompletedStatus`: Succeeded, Failed.
    pub fn is_completed(self) -> bool {
        matches!(self, TaskStatus::Succeeded | TaskStatus::Failed)
    }

    /// `ScheduledStatus`: Running, Bound, Failed, Succeeded.
    pub fn is_scheduled(self) -> bool {
        matches!(
            self,
            TaskStatus::Running | TaskStatus::Bound | TaskStatus::Failed | TaskStatus::Succeeded
        )
    }

    /// `getTaskStatus` (§5.1.2).
    pub fn from_pod(pod: &Pod) -> TaskStatus {
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("");
        let deleting = pod.metadata.deletion_timestamp.is_some();
        let assigned = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        match phase {
            "Running" if deleting => TaskStatus::Releasing,
            "Running" => TaskStatus::Running,
            "Pending" if deleting => TaskStatus::Releasing,
            "Pending" if assigned => TaskStatus::Bound,
            "Pending" => TaskStatus::Pending,
            "Succeeded" => TaskStatus::Succeeded,
            "Failed" => TaskStatus::Failed,
            _ => TaskStatus::Unknown,
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(phase: &str, deleting: bool, node: &str) -> Pod {
        let mut v = json!({"metadata": {"name": "p"}, "spec": {"containers": []}, "status": {"phase": phase}});
        if deleting {
            v["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        }
        if !node.is_empty() {
            v["spec"]["nodeName"] = json!(node);
        }
        serde_json::from_value(v).expect("valid pod")
    }

    #[test]
    fn pod_status_mapping_table() {
        let cases = [
            ("Running", false, "", TaskStatus::Running),
            ("Running", true, "n1", TaskStatus::Releasing),
            ("Pending", true, "", TaskStatus::Releasing),
            ("Pending", false, "", TaskStatus::Pending),
            ("Pending", false, "n1", TaskStatus::Bound),
            ("Succeeded", true, "n1", TaskStatus::Succeeded),
            ("Failed", false, "n1", TaskStatus::Failed),
            ("Unknown", false, "", TaskStatus::Unknown),
            ("", false, "", TaskStatus::Unknown),
            ("Weird", false, "", TaskStatus::Unknown),
        ];
        for (phase, deleting, node, want) in cases {
            assert_eq!(
                TaskStatus::from_pod(&pod(phase, deleting, node)),
                want,
                "{phase} {deleting} {node}"
            );
        }
    }

    #[test]
    fn status_sets() {
        assert!(TaskStatus::Allocated.is_allocated());
        assert!(!TaskStatus::Pipelined.is_allocated());
        assert!(TaskStatus::Bound.is_preemptable() && !TaskStatus::Binding.is_preemptable());
        assert!(TaskStatus::Failed.is_scheduled() && !TaskStatus::Binding.is_scheduled());
        for (i, s) in TaskStatus::ALL.iter().enumerate() {
            assert_eq!(s.index(), i);
        }
    }
}
