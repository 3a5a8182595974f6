//! Taints and tolerations: the upstream `TaintToleration` plugin (spec `plugins-core.md` §6.3
//! filter, §7.5 score), as of Kubernetes v1.36.1.
//!
//! Behaviour follows `Toleration.ToleratesTaint` (`staging/src/k8s.io/api/core/v1/toleration.go`),
//! `TolerationsTolerateTaint` / `FindMatchingUntoleratedTaint`
//! (`staging/src/k8s.io/component-helpers/scheduling/corev1/helpers.go`) and
//! `pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`.

use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};

/// Taint effect: new pods are not scheduled unless they tolerate the taint.
pub const TAINT_EFFECT_NO_SCHEDULE: &str = "NoSchedule";
/// Taint effect: like `NoSchedule`, and running pods that don't tolerate it are evicted.
pub const TAINT_EFFECT_NO_EXECUTE: &str = "NoExecute";
/// Taint effect: avoided when scoring, never filtered.
pub const TAINT_EFFECT_PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";

/// TaintToleration filter reason. Since v1.35 (kubernetes PR #134740, also in v1.34.x) upstream no
/// longer puts the taint's key and value into the pod status, because they can be sensitive.
pub const UNTOLERATED_TAINT: &str = "node(s) had untolerated taint(s)";

const TOLERATION_OP_EQUAL: &str = "Equal";
const TOLERATION_OP_EXISTS: &str = "Exists";
const TOLERATION_OP_LT: &str = "Lt";
const TOLERATION_OP_GT: &str = "Gt";

/// Upstream `ToleratesTaint` with the `TaintTolerationComparisonOperators` feature gate off (its
/// v1.36 default, and Volcano does not pass it to the plugin): an empty toleration effect matches
/// every effect, an empty key matches every key, operator `Exists` matches every value, an empty
/// operator means `Equal`, and any other operator (including `Lt`/`Gt`) tolerates nothing.
pub fn toleration_tolerates(t: &Toleration, taint: &Taint) -> bool {
    toleration_tolerates_with(t, taint, false)
}

/// [`toleration_tolerates`] with the `TaintTolerationComparisonOperators` gate made explicit. With
/// the gate on, `Lt`/`Gt` compare the taint value against the toleration value as 64-bit integers
/// written in canonical decimal form; a value that isn't one makes the toleration not match.
pub fn toleration_tolerates_with(
    t: &Toleration,
    taint: &Taint,
    comparison_operators: bool,
) -> bool {
    let effect = t.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    let toleration_value = t.value.as_deref().unwrap_or_default();
    let taint_value = taint.value.as_deref().unwrap_or_default();
    match t.operator.as_deref().unwrap_or_default() {
        "" | TOLERATION_OP_EQUAL => toleration_value == taint_value,
        TOLERATION_OP_EXISTS => true,
        op @ (TOLERATION_OP_LT | TOLERATION_OP_GT) if comparison_operators => {
            match (
                parse_canonical_i64(toleration_value),
                parse_canonical_i64(taint_value),
            ) {
                (Some(threshold), Some(actual)) if op == TOLERATION_OP_LT => actual < threshold,
                (Some(threshold), Some(actual)) => actual > threshold,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Parses an integer the way upstream's comparison operators accept it: `content.IsDecimalInteger`
/// (optional `-`, no `+`, no leading zeros, `-0` rejected) followed by a 64-bit range check.
fn parse_canonical_i64(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let canonical = match digits.as_bytes() {
        [] => false,
        [b'0'] => digits.len() == s.len(),
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.iter().all(u8::is_ascii_digit),
    };
    if canonical { s.parse().ok() } else { None }
}

/// Upstream `TolerationsTolerateTaint`: whether any of `tolerations` tolerates `taint`.
pub fn tolerations_tolerate_taint(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| toleration_tolerates(t, taint))
}

fn pod_tolerations(pod: &Pod) -> &[Toleration] {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.tolerations.as_deref())
        .unwrap_or_default()
}

fn node_taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|spec| spec.taints.as_deref())
        .unwrap_or_default()
}

/// TaintToleration filter: the first taint of the node, in declaration order, whose effect is
/// `NoSchedule` or `NoExecute` and which none of the pod's tolerations tolerates.
pub fn find_untolerated_taint<'a>(pod: &Pod, node: &'a Node) -> Option<&'a Taint> {
    let tolerations = pod_tolerations(pod);
    node_taints(node).iter().find(|taint| {
        (taint.effect == TAINT_EFFECT_NO_SCHEDULE || taint.effect == TAINT_EFFECT_NO_EXECUTE)
            && !tolerations_tolerate_taint(tolerations, taint)
    })
}

/// Whether the node has a `NoSchedule` or `NoExecute` taint: without one, [`find_untolerated_taint`]
/// finds nothing for any pod.
pub fn has_scheduling_taint(node: &Node) -> bool {
    node_taints(node).iter().any(|taint| {
        taint.effect == TAINT_EFFECT_NO_SCHEDULE || taint.effect == TAINT_EFFECT_NO_EXECUTE
    })
}

/// Filter reason for a taint found by [`find_untolerated_taint`]. It is the same text for every
/// taint (see [`UNTOLERATED_TAINT`]); upstream only logs the taint itself.
pub fn untolerated_taint_reason(_taint: &Taint) -> &'static str {
    UNTOLERATED_TAINT
}

/// TaintToleration raw score: how many `PreferNoSchedule` taints of the node are tolerated by none
/// of the pod's tolerations whose effect is empty or `PreferNoSchedule`. Normalisation (reversed,
/// lower is better) is the caller's job.
pub fn count_intolerable_prefer_no_schedule(pod: &Pod, node: &Node) -> i64 {
    let prefer_tolerations: Vec<&Toleration> = pod_tolerations(pod)
        .iter()
        .filter(|t| {
            let effect = t.effect.as_deref().unwrap_or_default();
            effect.is_empty() || effect == TAINT_EFFECT_PREFER_NO_SCHEDULE
        })
        .collect();
    let untolerated = node_taints(node)
        .iter()
        .filter(|taint| taint.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE)
        .filter(|taint| {
            !prefer_tolerations
                .iter()
                .any(|t| toleration_tolerates(t, taint))
        })
        .count();
    i64::try_from(untolerated).unwrap_or(i64::MAX)
}

/// Whether the node has a `PreferNoSchedule` taint.
pub fn has_prefer_no_schedule_taint(node: &Node) -> bool {
    node_taints(node)
        .iter()
        .any(|taint| taint.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn toleration(v: Value) -> Toleration {
        serde_json::from_value(v).expect("valid toleration")
    }

    fn taint(v: Value) -> Taint {
        serde_json::from_value(v).expect("valid taint")
    }

    fn pod(tolerations: Value) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "tolerations": tolerations}
        }))
        .expect("valid pod")
    }

    fn node(taints: Value) -> Node {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "spec": {"taints": taints}
        }))
        .expect("valid node")
    }

    #[test]
    fn toleration_matching_table() {
        let gpu = json!({"key": "gpu", "value": "a100", "effect": "NoSchedule"});
        let cases = [
            // (name, toleration, taint, tolerated)
            (
                "exists without key tolerates everything",
                json!({"operator": "Exists"}),
                gpu.clone(),
                true,
            ),
            (
                "exists without key or effect tolerates NoExecute too",
                json!({"operator": "Exists"}),
                json!({"key": "x", "effect": "NoExecute"}),
                true,
            ),
            (
                "exists with matching key, any value",
                json!({"key": "gpu", "operator": "Exists"}),
                gpu.clone(),
                true,
            ),
            (
                "exists with other key",
                json!({"key": "cpu", "operator": "Exists"}),
                gpu.clone(),
                false,
            ),
            (
                "equal with same value",
                json!({"key": "gpu", "operator": "Equal", "value": "a100", "effect": "NoSchedule"}),
                gpu.clone(),
                true,
            ),
            (
                "equal with value mismatch",
                json!({"key": "gpu", "operator": "Equal", "value": "h100"}),
                gpu.clone(),
                false,
            ),
            (
                "default operator is Equal",
                json!({"key": "gpu", "value": "a100"}),
                gpu.clone(),
                true,
            ),
            (
                "default operator with value mismatch",
                json!({"key": "gpu", "value": "h100"}),
                gpu.clone(),
                false,
            ),
            (
                "empty effect matches all effects",
                json!({"key": "gpu", "operator": "Equal", "value": "a100"}),
                json!({"key": "gpu", "value": "a100", "effect": "NoExecute"}),
                true,
            ),
            (
                "effect mismatch",
                json!({"key": "gpu", "operator": "Exists", "effect": "NoExecute"}),
                gpu.clone(),
                false,
            ),
            (
                "empty key with Equal matches any key whose value is equal",
                json!({"operator": "Equal", "value": "a100"}),
                gpu.clone(),
                true,
            ),
            (
                "equal without value matches a taint without value",
                json!({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}),
                json!({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}),
                true,
            ),
            (
                "unknown operator tolerates nothing",
                json!({"key": "gpu", "operator": "exists"}),
                gpu.clone(),
                false,
            ),
            (
                "Gt is off by default",
                json!({"key": "gpu", "operator": "Gt", "value": "1"}),
                json!({"key": "gpu", "value": "5", "effect": "NoSchedule"}),
                false,
            ),
        ];
        for (name, t, tt, want) in cases {
            assert_eq!(
                toleration_tolerates(&toleration(t), &taint(tt)),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn comparison_operators_when_gate_on() {
        let cases = [
            // (operator, toleration value, taint value, tolerated)
            ("Gt", "100", "150", true),
            ("Gt", "100", "100", false),
            ("Lt", "100", "50", true),
            ("Lt", "100", "100", false),
            ("Lt", "0", "-5", true),
            ("Gt", "-10", "0", true),
            ("Gt", "100", "0150", false),
            ("Gt", "+1", "5", false),
            ("Gt", "1", "-0", false),
            ("Gt", "1", "", false),
            ("Gt", "1", "abc", false),
            ("Gt", "1", "99999999999999999999", false),
        ];
        for (op, tv, taint_value, want) in cases {
            let t = toleration(json!({"key": "score", "operator": op, "value": tv}));
            let tt = taint(json!({"key": "score", "value": taint_value, "effect": "NoSchedule"}));
            assert_eq!(
                toleration_tolerates_with(&t, &tt, true),
                want,
                "{op} {tv} vs taint {taint_value}"
            );
            assert!(!toleration_tolerates_with(&t, &tt, false), "gate off");
        }
    }

    #[test]
    fn filter_considers_no_schedule_and_no_execute_only() {
        let n = node(json!([
            {"key": "soft", "value": "x", "effect": "PreferNoSchedule"},
            {"key": "evict", "value": "y", "effect": "NoExecute"},
            {"key": "block", "value": "z", "effect": "NoSchedule"}
        ]));
        let untolerated = find_untolerated_taint(&pod(json!([])), &n);
        assert_eq!(untolerated.map(|t| t.key.as_str()), Some("evict"));

        let p = pod(json!([{"key": "evict", "operator": "Exists", "effect": "NoExecute"}]));
        assert_eq!(
            find_untolerated_taint(&p, &n).map(|t| t.key.as_str()),
            Some("block")
        );

        let p = pod(json!([
            {"key": "evict", "operator": "Exists"},
            {"key": "block", "operator": "Equal", "value": "z", "effect": "NoSchedule"}
        ]));
        assert_eq!(
            find_untolerated_taint(&p, &n),
            None,
            "PreferNoSchedule is ignored"
        );
    }

    #[test]
    fn filter_on_node_without_taints() {
        let n: Node = serde_json::from_value(json!({"metadata": {"name": "bare"}})).expect("node");
        assert_eq!(find_untolerated_taint(&pod(json!([])), &n), None);
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}})).expect("pod");
        let tainted = node(json!([{"key": "k", "effect": "NoSchedule"}]));
        assert!(find_untolerated_taint(&p, &tainted).is_some());
    }

    #[test]
    fn reason_hides_taint_details() {
        let t = taint(json!({"key": "secret", "value": "v", "effect": "NoSchedule"}));
        assert_eq!(
            untolerated_taint_reason(&t),
            "node(s) had untolerated taint(s)"
        );
    }

    #[test]
    fn prefer_no_schedule_count() {
        let n = node(json!([
            {"key": "a", "value": "1", "effect": "PreferNoSchedule"},
            {"key": "b", "value": "2", "effect": "PreferNoSchedule"},
            {"key": "c", "value": "3", "effect": "NoSchedule"},
            {"key": "d", "value": "4", "effect": "NoExecute"}
        ]));
        let cases = [
            ("no tolerations", json!([]), 2),
            (
                "one tolerated by a PreferNoSchedule toleration",
                json!([{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}]),
                1,
            ),
            (
                "empty effect counts for PreferNoSchedule",
                json!([{"key": "b", "value": "2"}]),
                1,
            ),
            (
                "NoSchedule toleration does not help",
                json!([{"key": "a", "operator": "Exists", "effect": "NoSchedule"}]),
                2,
            ),
            ("tolerate everything", json!([{"operator": "Exists"}]), 0),
        ];
        for (name, tolerations, want) in cases {
            assert_eq!(
                count_intolerable_prefer_no_schedule(&pod(tolerations), &n),
                want,
                "{name}"
            );
        }
    }
}
