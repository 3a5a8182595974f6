//! Label-selector semantics shared by the pod-side scheduling checks.
//!
//! Follows apimachinery `metav1.LabelSelectorAsSelector` plus `labels.Selector.Matches`, as used by
//! the upstream InterPodAffinity and PodTopologySpread plugins (spec plugins-core.md §6.3, §7.5):
//!
//! * `matchLabels` and `matchExpressions` are AND-ed;
//! * an empty selector `{}` ("Everything") matches every label set, a missing selector
//!   ("Nothing") matches none;
//! * `In` needs the key with one of the values, `NotIn` is also satisfied by a missing key,
//!   `Exists` / `DoesNotExist` test the key only.
//!
//! Upstream refuses to build a selector with an unknown operator, an `In`/`NotIn` without values or
//! an `Exists`/`DoesNotExist` with values, and its plugins then fail the whole pod. The API server
//! rejects such pods, so they cannot normally reach us; should one appear anyway, the selector
//! simply matches nothing here. Label key/value syntax is not re-validated.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// A pod already on a node (bound, running, or placed earlier in this cycle).
#[derive(Clone, Copy)]
pub struct PlacedPod<'a> {
    pub pod: &'a Pod,
    pub node: &'a Node,
}

/// Shared empty label map for objects without labels.
pub(crate) static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// The well-known hostname label; topology spread treats it specially.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";

pub use engine::model::labels::{selector_is_empty, selector_matches};

/// Like [`selector_matches`], but a missing selector (upstream `labels.Nothing()`) matches
/// nothing.
pub fn selector_matches_opt(
    sel: Option<&LabelSelector>,
    labels: &BTreeMap<String, String>,
) -> bool {
    sel.is_some_and(|s| selector_matches(s, labels))
}

/// The pod's labels; an empty map when it has none.
pub fn pod_labels(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// The node's labels; an empty map when it has none.
pub fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    node.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// The pod's namespace. A pod without one is treated as being in `default`, as the API server
/// (and the engine's task model) would place it.
pub fn pod_namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

/// The node's name; empty when unset.
pub fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn labels(v: Value) -> BTreeMap<String, String> {
        serde_json::from_value(v).expect("labels")
    }

    fn sel(v: Value) -> LabelSelector {
        serde_json::from_value(v).expect("selector")
    }

    #[test]
    fn selector_table() {
        let l = labels(json!({"app": "web", "tier": "front"}));
        let cases = [
            (json!({}), true),
            (json!({"matchLabels": {}}), true),
            (json!({"matchLabels": {"app": "web"}}), true),
            (json!({"matchLabels": {"app": "db"}}), false),
            (
                json!({"matchLabels": {"app": "web", "tier": "back"}}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                json!({"matchLabels": {"app": "web"},
                       "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]}),
                false,
            ),
            // Invalid selectors match nothing.
            (
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "NotIn"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}),
                false,
            ),
        ];
        for (i, (s, want)) in cases.into_iter().enumerate() {
            assert_eq!(selector_matches(&sel(s.clone()), &l), want, "case {i}: {s}");
        }
    }

    #[test]
    fn nil_selector_matches_nothing_and_empty_matches_everything() {
        let empty = BTreeMap::new();
        assert!(!selector_matches_opt(None, &empty));
        assert!(selector_matches_opt(Some(&sel(json!({}))), &empty));
        assert!(selector_is_empty(&sel(
            json!({"matchLabels": {}, "matchExpressions": []})
        )));
        assert!(!selector_is_empty(&sel(json!({"matchLabels": {"a": "b"}}))));
    }

    #[test]
    fn pod_accessors_default() {
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}})).expect("pod");
        assert!(pod_labels(&pod).is_empty());
        assert_eq!(pod_namespace(&pod), "default");
        let node: Node = serde_json::from_value(json!({"metadata": {}})).expect("node");
        assert!(node_labels(&node).is_empty());
        assert_eq!(node_name(&node), "");
    }
}
