//! `conformance`: critical system pods are never preemption or reclaim victims
//! (spec/plugins-core.md §9).
//!
//! A pod is protected when it runs in `kube-system` or uses one of the built-in critical
//! priority classes. The same filter answers `Preemptable` and `Reclaimable`; the evictor is not
//! looked at. It always votes Permit, so when every candidate is protected the tier's result is
//! empty and the next tier decides (§0.5).
//!
//! Not wired yet: `UnifiedEvictableFn` (same filter), because the engine has no gang-aware
//! eviction extension point.

use engine::conf::Arguments;
use engine::framework::{ExtensionPoints, PERMIT, Plugin, SessionState};
use engine::model::TaskId;

/// Registered plugin name.
pub const NAME: &str = "conformance";

/// Kubernetes' `metav1.NamespaceSystem`.
const NAMESPACE_SYSTEM: &str = "kube-system";
/// Kubernetes' built-in critical priority classes.
const SYSTEM_CLUSTER_CRITICAL: &str = "system-cluster-critical";
const SYSTEM_NODE_CRITICAL: &str = "system-node-critical";

/// Builds the plugin; it takes no arguments.
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(ConformancePlugin)
}

struct ConformancePlugin;

/// Whether the task's pod must never be evicted by the scheduler.
fn is_protected(ssn: &SessionState, task: TaskId) -> bool {
    let spec = &ssn.task(task).spec;
    let class = spec
        .pod
        .spec
        .as_ref()
        .and_then(|s| s.priority_class_name.as_deref())
        .unwrap_or_default();
    class == SYSTEM_CLUSTER_CRITICAL
        || class == SYSTEM_NODE_CRITICAL
        || spec.namespace == NAMESPACE_SYSTEM
}

/// The candidates that are not protected, in their given order.
fn evictable(ssn: &SessionState, candidates: &[TaskId]) -> (Vec<TaskId>, i32) {
    let victims = candidates
        .iter()
        .copied()
        .filter(|&t| !is_protected(ssn, t))
        .collect();
    (victims, PERMIT)
}

impl Plugin for ConformancePlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::RECLAIMABLE
            | ExtensionPoints::EVICTION_GUARD
            | ExtensionPoints::UNIFIED_EVICTABLE
    }

    fn unified_evictable(
        &self,
        ssn: &SessionState,
        _ctx: &engine::framework::EvictionContext,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        evictable(ssn, candidates)
    }

    fn eviction_guard(&self, ssn: &SessionState, candidates: &[TaskId]) -> Vec<TaskId> {
        evictable(ssn, candidates).0
    }

    fn preemptable(
        &self,
        ssn: &SessionState,
        _preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        evictable(ssn, candidates)
    }

    fn reclaimable(
        &self,
        ssn: &SessionState,
        _reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        evictable(ssn, candidates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{StateLookup, TestCluster, pod, pod_group};
    use engine::framework::Session;
    use serde_json::json;

    /// One preemptor and four running candidates: `kube-system/sys`, `default/node-critical`,
    /// `default/cluster-critical` and `default/plain`.
    fn cluster(with_plain: bool) -> Session {
        let mut c = TestCluster::new();
        c.node("n1", json!({"cpu": "8", "memory": "8Gi", "pods": "110"}));
        c.pod_group(pod_group("default", "pg", 1));
        c.pod(pod(
            "default",
            "preemptor",
            Some("pg"),
            "Pending",
            None,
            json!({"cpu": "1"}),
        ));
        c.pod(pod(
            "kube-system",
            "sys",
            None,
            "Running",
            Some("n1"),
            json!({"cpu": "1"}),
        ));
        for (name, class) in [
            ("node-critical", SYSTEM_NODE_CRITICAL),
            ("cluster-critical", SYSTEM_CLUSTER_CRITICAL),
        ] {
            let mut p = pod(
                "default",
                name,
                None,
                "Running",
                Some("n1"),
                json!({"cpu": "1"}),
            );
            p["spec"]["priorityClassName"] = json!(class);
            c.pod(p);
        }
        if with_plain {
            c.pod(pod(
                "default",
                "plain",
                None,
                "Running",
                Some("n1"),
                json!({"cpu": "1"}),
            ));
        }
        c.session(&[&[NAME]])
    }

    fn candidates(ssn: &Session, with_plain: bool) -> Vec<TaskId> {
        let mut keys = vec![
            "kube-system/sys",
            "default/node-critical",
            "default/cluster-critical",
        ];
        if with_plain {
            keys.insert(1, "default/plain");
        }
        keys.into_iter().map(|k| ssn.state.task_by_key(k)).collect()
    }

    #[test]
    fn cf1_system_pods_are_protected_ordinary_pods_are_victims() {
        let ssn = cluster(true);
        let s = &ssn.state;
        let preemptor = s.task_by_key("default/preemptor");
        let cands = candidates(&ssn, true);
        let plain = s.task_by_key("default/plain");
        let p = new(&Arguments::new());
        assert_eq!(p.preemptable(s, preemptor, &cands), (vec![plain], PERMIT));
        assert_eq!(p.reclaimable(s, preemptor, &cands), (vec![plain], PERMIT));
        // Through the dispatcher as well.
        assert_eq!(ssn.preemptable(preemptor, &cands), vec![plain]);
        assert_eq!(ssn.reclaimable(preemptor, &cands), vec![plain]);
    }

    #[test]
    fn cf2_all_protected_is_an_empty_permit_and_leaves_the_tier_undecided() {
        let ssn = cluster(false);
        let s = &ssn.state;
        let preemptor = s.task_by_key("default/preemptor");
        let cands = candidates(&ssn, false);
        let p = new(&Arguments::new());
        assert_eq!(p.preemptable(s, preemptor, &cands), (vec![], PERMIT));
        assert_eq!(p.reclaimable(s, preemptor, &cands), (vec![], PERMIT));
        assert!(ssn.preemptable(preemptor, &cands).is_empty());
    }
}
