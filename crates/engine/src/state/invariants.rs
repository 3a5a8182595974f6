//! Checks of the cluster state that must hold whatever the scheduler decided: the daemon runs
//! them after every session and on a timer, and counts what it finds (YuniKorn-style runtime
//! invariants). They are pure functions of a [`ClusterState`]; keeping track of how long a
//! finding lasts is the caller's, since the engine reads no clock.

use rustc_hash::FxHashMap;

use crate::model::TaskStatus;
use crate::model::resource::{DimensionDefault, Resource};
use crate::model::task::JobLink;

use super::ClusterState;

/// What kind of rule a finding breaks (the metric's `kind` label).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViolationKind {
    /// A node holds more than its allocatable, counting bound and assumed pods, with at least
    /// one pod of ours among them.
    NodeOverAllocatable,
    /// A gang of ours has some, but fewer than `minMember`, pods placed. Transient while a
    /// gang binds or is torn down: the caller reports it only past a grace period.
    PartialGang,
    /// A bind of ours is assumed for a pod the API server shows on another node.
    AssumedConflict,
    /// A session decided to bind a pod that is already bound or assumed.
    DoubleBind,
}

impl ViolationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::NodeOverAllocatable => "node_over_allocatable",
            ViolationKind::PartialGang => "partial_gang",
            ViolationKind::AssumedConflict => "assumed_conflict",
            ViolationKind::DoubleBind => "double_bind",
        }
    }

    pub const ALL: [ViolationKind; 4] = [
        ViolationKind::NodeOverAllocatable,
        ViolationKind::PartialGang,
        ViolationKind::AssumedConflict,
        ViolationKind::DoubleBind,
    ];
}

/// One finding: the rule, what it is about (node, `ns/podgroup` or `ns/pod`), and the detail.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub kind: ViolationKind,
    pub subject: String,
    pub detail: String,
}

/// Statuses that hold a place on a node.
fn occupies(status: TaskStatus) -> bool {
    !status.is_completed() && status != TaskStatus::Pending && status != TaskStatus::Unknown
}

/// Every finding in the state as it stands.
pub fn check_state(state: &ClusterState) -> Vec<Violation> {
    let mut out = Vec::new();
    check_nodes(state, &mut out);
    check_gangs(state, &mut out);
    check_assumed(state, &mut out);
    out
}

/// Sums by node in a hash map (a check runs once a period over every pod); each node's sum
/// adds its pods in the state's order as before, and what is found is reported in name order.
fn check_nodes(state: &ClusterState, out: &mut Vec<Violation>) {
    let first = out.len();
    let mut used: FxHashMap<&str, (Resource, bool)> = FxHashMap::default();
    for pod in state.pods() {
        let Some(node) = pod.node_name.as_deref().filter(|n| !n.is_empty()) else {
            continue;
        };
        if !occupies(pod.status) {
            continue;
        }
        let entry = used
            .entry(node)
            .or_insert_with(|| (Resource::empty(), false));
        entry.0.add(&pod.resreq);
        entry.1 |= pod.ours;
    }
    for (node, (sum, ours)) in used {
        let Some(spec) = state.node(node) else {
            continue;
        };
        if ours && !sum.less_equal(&spec.allocatable, DimensionDefault::Zero) {
            out.push(Violation {
                kind: ViolationKind::NodeOverAllocatable,
                subject: node.to_string(),
                detail: format!("pods request {sum}, allocatable is {}", spec.allocatable),
            });
        }
    }
    out[first..].sort_by(|a, b| a.subject.cmp(&b.subject));
}

fn check_gangs(state: &ClusterState, out: &mut Vec<Violation>) {
    let first = out.len();
    // PodGroup key → pods placed (or finished successfully, which counts as ready).
    let mut placed: FxHashMap<&str, i32> = FxHashMap::default();
    for pod in state.pods().filter(|p| p.ours) {
        let JobLink::PodGroup(key) = &pod.job else {
            continue;
        };
        let n = placed.entry(key.as_str()).or_default();
        if occupies(pod.status) && pod.status != TaskStatus::Releasing
            || pod.status == TaskStatus::Succeeded
        {
            *n += 1;
        }
    }
    for (key, n) in placed {
        let Some(pg) = state.pod_group(key) else {
            continue;
        };
        let min = pg.spec.min_member;
        if n > 0 && n < min {
            out.push(Violation {
                kind: ViolationKind::PartialGang,
                subject: key.to_string(),
                detail: format!("{n} of minMember {min} pods placed"),
            });
        }
    }
    out[first..].sort_by(|a, b| a.subject.cmp(&b.subject));
}

fn check_assumed(state: &ClusterState, out: &mut Vec<Violation>) {
    for (key, observed) in state.assumed.iter() {
        let shown = observed
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .filter(|n| !n.is_empty());
        let ours = state.pods.get(key).and_then(|p| p.node_name.as_deref());
        if let (Some(shown), Some(ours)) = (shown, ours)
            && shown != ours
        {
            out.push(Violation {
                kind: ViolationKind::AssumedConflict,
                subject: key.clone(),
                detail: format!("assumed on {ours}, the API server shows {shown}"),
            });
        }
    }
}

/// Binds a session decided, checked against the state they are about to be applied to: a pod
/// already bound or assumed must not be bound again.
pub fn check_binds<'a>(
    state: &ClusterState,
    binds: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for (pod, node) in binds {
        let current = state
            .pod(pod)
            .and_then(|p| p.node_name.as_deref())
            .filter(|n| !n.is_empty());
        if let Some(current) = current {
            out.push(Violation {
                kind: ViolationKind::DoubleBind,
                subject: pod.to_string(),
                detail: format!("bound again to {node} while on {current}"),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::StateOptions;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    fn pod(name: &str, scheduler: &str, node: Option<&str>, cpu: &str, group: Option<&str>) -> Pod {
        let mut v = json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}
        });
        if let Some(n) = node {
            v["spec"]["nodeName"] = json!(n);
        }
        if let Some(g) = group {
            v["metadata"]["annotations"] = json!({"scheduling.k8s.io/group-name": g});
        }
        serde_json::from_value(v).expect("pod")
    }

    fn state() -> ClusterState {
        let mut s = ClusterState::new(StateOptions::default());
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        }))
        .expect("node");
        s.upsert_node(node);
        s.upsert_pod_group(
            serde_json::from_value(json!({
                "metadata": {"name": "g", "namespace": "ns"},
                "spec": {"minMember": 3}
            }))
            .expect("pod group"),
        );
        s
    }

    fn kinds(v: &[Violation]) -> Vec<ViolationKind> {
        v.iter().map(|v| v.kind).collect()
    }

    #[test]
    fn a_consistent_state_has_no_finding() {
        let mut s = state();
        for i in 0..3 {
            s.upsert_pod(pod(
                &format!("g-{i}"),
                "volcano-rs",
                Some("n1"),
                "1",
                Some("g"),
            ));
        }
        s.upsert_pod(pod("other", "default-scheduler", Some("n1"), "1", None));
        assert_eq!(check_state(&s), vec![]);
    }

    #[test]
    fn a_node_over_allocatable_with_a_pod_of_ours_is_found() {
        let mut s = state();
        s.upsert_pod(pod("big", "default-scheduler", Some("n1"), "3", None));
        // Only someone else's pods: not ours to report.
        s.upsert_pod(pod("big2", "default-scheduler", Some("n1"), "1", None));
        assert_eq!(check_state(&s), vec![]);
        s.upsert_pod(pod("mine", "volcano-rs", None, "1", None));
        assert!(s.assume_bind("ns/mine", "n1"));
        let found = check_state(&s);
        assert_eq!(kinds(&found), vec![ViolationKind::NodeOverAllocatable]);
        assert_eq!(found[0].subject, "n1");
    }

    #[test]
    fn a_partly_placed_gang_is_found_and_a_complete_one_is_not() {
        let mut s = state();
        s.upsert_pod(pod("g-0", "volcano-rs", Some("n1"), "1", Some("g")));
        s.upsert_pod(pod("g-1", "volcano-rs", None, "1", Some("g")));
        s.upsert_pod(pod("g-2", "volcano-rs", None, "1", Some("g")));
        let found = check_state(&s);
        assert_eq!(kinds(&found), vec![ViolationKind::PartialGang]);
        assert_eq!(found[0].subject, "ns/g");
        assert!(s.assume_bind("ns/g-1", "n1"));
        assert!(s.assume_bind("ns/g-2", "n1"));
        assert_eq!(check_state(&s), vec![]);
    }

    #[test]
    fn findings_come_in_name_order() {
        let mut s = state();
        for name in ["n3", "n0", "n2"] {
            let node: Node = serde_json::from_value(json!({
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "1", "memory": "8Gi", "pods": "110"}}
            }))
            .expect("node");
            s.upsert_node(node);
            s.upsert_pod(pod(
                &format!("big-{name}"),
                "volcano-rs",
                Some(name),
                "2",
                None,
            ));
        }
        for g in ["z", "a", "m"] {
            s.upsert_pod_group(
                serde_json::from_value(json!({
                    "metadata": {"name": g, "namespace": "ns"},
                    "spec": {"minMember": 2}
                }))
                .expect("pod group"),
            );
            s.upsert_pod(pod(
                &format!("{g}-0"),
                "volcano-rs",
                Some("n1"),
                "0",
                Some(g),
            ));
        }
        let subjects: Vec<String> = check_state(&s).into_iter().map(|v| v.subject).collect();
        assert_eq!(subjects, ["n0", "n2", "n3", "ns/a", "ns/m", "ns/z"]);
    }

    #[test]
    fn an_assumed_bind_contradicted_by_the_api_server_is_found() {
        let mut s = state();
        s.upsert_pod(pod("p", "volcano-rs", None, "1", None));
        assert!(s.assume_bind("ns/p", "n1"));
        assert_eq!(check_state(&s), vec![]);
        // The watch shows the pod on another node while our bind is assumed: the update
        // confirms a node, so the state follows the API server and the assumption ends.
        let mut observed = pod("p", "volcano-rs", None, "1", None);
        observed.spec.as_mut().expect("spec").node_name = Some("n2".into());
        Arc::make_mut(&mut s.assumed).insert("ns/p".into(), Arc::new(observed));
        let found = check_state(&s);
        assert_eq!(kinds(&found), vec![ViolationKind::AssumedConflict]);
    }

    #[test]
    fn binding_a_bound_or_assumed_pod_again_is_found() {
        let mut s = state();
        s.upsert_pod(pod("p", "volcano-rs", None, "1", None));
        assert_eq!(check_binds(&s, [("ns/p", "n1")]), vec![]);
        assert!(s.assume_bind("ns/p", "n1"));
        let found = check_binds(&s, [("ns/p", "n1")]);
        assert_eq!(kinds(&found), vec![ViolationKind::DoubleBind]);
    }

    use std::sync::Arc;
}
