//! Cordoned nodes: the upstream `NodeUnschedulable` filter (spec `plugins-core.md` §6.3), as in
//! `pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go` of Kubernetes v1.36.1.

use k8s_openapi::api::core::v1::{Node, Pod, Taint};

use super::taints::{TAINT_EFFECT_NO_SCHEDULE, tolerations_tolerate_taint};

/// NodeUnschedulable filter reason (code UnschedulableAndUnresolvable).
pub const NODE_UNSCHEDULABLE: &str = "node(s) were unschedulable";

/// The taint the node lifecycle controller puts on cordoned nodes; tolerating it also lets a pod
/// onto a node whose `spec.unschedulable` is set.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// Whether the node is marked unschedulable: if not, [`node_unschedulable`] passes every pod.
pub fn cordoned(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|spec| spec.unschedulable)
        .unwrap_or(false)
}

/// NodeUnschedulable filter: `Err(reason)` when `node.spec.unschedulable` is true and none of the
/// pod's tolerations tolerates `node.kubernetes.io/unschedulable:NoSchedule` (with an empty value).
pub fn node_unschedulable(pod: &Pod, node: &Node) -> Result<(), &'static str> {
    if !cordoned(node) {
        return Ok(());
    }
    let taint = Taint {
        key: TAINT_NODE_UNSCHEDULABLE.to_string(),
        effect: TAINT_EFFECT_NO_SCHEDULE.to_string(),
        ..Taint::default()
    };
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.tolerations.as_deref())
        .unwrap_or_default();
    if tolerations_tolerate_taint(tolerations, &taint) {
        Ok(())
    } else {
        Err(NODE_UNSCHEDULABLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(tolerations: Value) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "tolerations": tolerations}
        }))
        .expect("valid pod")
    }

    fn node(spec: Value) -> Node {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "spec": spec
        }))
        .expect("valid node")
    }

    #[test]
    fn unschedulable_table() {
        let cordoned = json!({"unschedulable": true});
        let cases = [
            // (name, node spec, pod tolerations, expected)
            ("schedulable node", json!({}), json!([]), Ok(())),
            (
                "explicitly schedulable node",
                json!({"unschedulable": false}),
                json!([]),
                Ok(()),
            ),
            (
                "cordoned, no toleration",
                cordoned.clone(),
                json!([]),
                Err(NODE_UNSCHEDULABLE),
            ),
            (
                "cordoned, tolerates the unschedulable taint",
                cordoned.clone(),
                json!([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]),
                Ok(()),
            ),
            (
                "cordoned, Equal toleration with empty value",
                cordoned.clone(),
                json!([{"key": "node.kubernetes.io/unschedulable", "operator": "Equal"}]),
                Ok(()),
            ),
            (
                "cordoned, tolerate-everything",
                cordoned.clone(),
                json!([{"operator": "Exists"}]),
                Ok(()),
            ),
            (
                "cordoned, toleration with wrong effect",
                cordoned.clone(),
                json!([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}]),
                Err(NODE_UNSCHEDULABLE),
            ),
            (
                "cordoned, Equal toleration with a value",
                cordoned.clone(),
                json!([{"key": "node.kubernetes.io/unschedulable", "value": "true"}]),
                Err(NODE_UNSCHEDULABLE),
            ),
        ];
        for (name, spec, tolerations, want) in cases {
            assert_eq!(
                node_unschedulable(&pod(tolerations), &node(spec)),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn node_without_spec_is_schedulable() {
        let n: Node = serde_json::from_value(json!({"metadata": {"name": "n"}})).expect("node");
        assert_eq!(node_unschedulable(&pod(json!([])), &n), Ok(()));
    }
}
