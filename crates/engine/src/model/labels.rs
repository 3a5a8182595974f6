//! Label selectors as apimachinery's `metav1.LabelSelectorAsSelector` plus
//! `labels.Selector.Matches` read them: `matchLabels` and `matchExpressions` are AND-ed, an empty
//! selector matches every label set; `In` needs the key with one of the values, `NotIn` is also
//! satisfied by a missing key, `Exists` / `DoesNotExist` test the key only. A selector upstream
//! would refuse to build (an unknown operator, `In`/`NotIn` without values, `Exists` /
//! `DoesNotExist` with values) matches nothing. Used by the plugins' pod-side checks and by the
//! HyperNode members chosen by labels.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// True when `labels` satisfies every `matchLabels` entry and every `matchExpressions`
/// requirement. An empty selector matches everything; an invalid one matches nothing.
pub fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    labels_ok
        && sel
            .match_expressions
            .iter()
            .flatten()
            .all(|req| requirement_matches(req, labels))
}

fn requirement_matches(req: &LabelSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let values = req.values.as_deref().unwrap_or(&[]);
    let value = labels.get(&req.key);
    match req.operator.as_str() {
        "In" => !values.is_empty() && value.is_some_and(|v| values.contains(v)),
        "NotIn" => !values.is_empty() && value.is_none_or(|v| !values.contains(v)),
        "Exists" => values.is_empty() && value.is_some(),
        "DoesNotExist" => values.is_empty() && value.is_none(),
        _ => false,
    }
}

/// True for the selector `{}` (no `matchLabels`, no `matchExpressions`), which upstream turns
/// into `labels.Everything()`.
pub fn selector_is_empty(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
}
