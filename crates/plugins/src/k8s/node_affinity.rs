//! Node selector and node affinity: the upstream `NodeAffinity` plugin (spec `plugins-core.md`
//! §6.3 PreFilter/Filter, §7.5 score), as of Kubernetes v1.36.1.
//!
//! Behaviour follows `pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`,
//! `staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go` (term
//! parsing and matching) and `staging/src/k8s.io/apimachinery/pkg/labels/selector.go`
//! (`NewRequirement` validation, `Requirement.Matches`). Volcano builds the plugin with no
//! scheduler-level added affinity, so none is modelled here.
//!
//! Upstream edge cases kept on purpose:
//! * a term that fails validation (unknown operator, bad key or value, wrong number of values,
//!   non-integer `Gt`/`Lt` value) matches nothing, but does not stop other terms from matching;
//! * a term with neither expressions nor fields matches nothing, so an empty term list matches no
//!   node at all;
//! * `matchFields` are ignored for a node whose name is empty.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::{Node, NodeSelectorRequirement, NodeSelectorTerm, Pod};

/// NodeAffinity filter reason (code UnschedulableAndUnresolvable).
pub const NODE_AFFINITY_MISMATCH: &str = "node(s) didn't match Pod's node affinity/selector";

/// NodeAffinity PreFilter reason when every required term pins `metadata.name` and no node name
/// satisfies any of them (code UnschedulableAndUnresolvable).
pub const NODE_AFFINITY_TERMS_CONFLICT: &str = "pod affinity terms conflict";

/// The only node field a `matchFields` requirement can see.
const NODE_NAME_FIELD: &str = "metadata.name";

/// Longest name part of a label key, and longest label value.
const LABEL_MAX_LENGTH: usize = 63;
/// Longest DNS subdomain, the limit for a label key prefix.
const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    node.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// A validated `matchExpressions` operator with its values.
#[derive(Clone, Debug, PartialEq, Eq)]
enum LabelOp {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct LabelRequirement {
    key: String,
    op: LabelOp,
}

impl LabelRequirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match &self.op {
            LabelOp::In(values) => value.is_some_and(|v| values.contains(v)),
            LabelOp::NotIn(values) => value.is_none_or(|v| !values.contains(v)),
            LabelOp::Exists => value.is_some(),
            LabelOp::DoesNotExist => value.is_none(),
            // Node label values go through a plain integer parse (upstream `strconv.ParseInt`,
            // which like Rust's accepts a sign and leading zeros); anything else never matches.
            LabelOp::Gt(bound) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *bound),
            LabelOp::Lt(bound) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *bound),
        }
    }
}

/// A validated `matchFields` requirement: `In` or `NotIn` with exactly one value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    key: String,
    value: String,
    equal: bool,
}

impl FieldRequirement {
    fn matches(&self, node_name: &str) -> bool {
        // Fields other than the node name read as empty, as a missing key of a Go map would.
        let actual = if self.key == NODE_NAME_FIELD {
            node_name
        } else {
            ""
        };
        (actual == self.value) == self.equal
    }
}

/// A node selector term that passed validation; its requirements are AND-ed.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ParsedTerm {
    labels: Vec<LabelRequirement>,
    fields: Vec<FieldRequirement>,
}

impl ParsedTerm {
    fn matches(&self, node: &Node) -> bool {
        let labels = node_labels(node);
        let name = node_name(node);
        self.labels.iter().all(|r| r.matches(labels))
            && (name.is_empty() || self.fields.iter().all(|r| r.matches(name)))
    }
}

fn is_empty_term(term: &NodeSelectorTerm) -> bool {
    term.match_expressions.as_ref().is_none_or(Vec::is_empty)
        && term.match_fields.as_ref().is_none_or(Vec::is_empty)
}

/// Validates a non-empty term the way upstream `newNodeSelectorTerm` does, collecting every
/// problem so the error reads like upstream's aggregate.
fn parse_term(term: &NodeSelectorTerm) -> Result<ParsedTerm, Vec<String>> {
    let mut errors = Vec::new();
    let mut labels = Vec::new();
    for (i, r) in term.match_expressions.iter().flatten().enumerate() {
        match parse_label_requirement(r) {
            Ok(req) => labels.push(req),
            Err(errs) => errors.extend(
                errs.into_iter()
                    .map(|e| format!("matchExpressions[{i}]: {e}")),
            ),
        }
    }
    let mut fields = Vec::new();
    for (i, r) in term.match_fields.iter().flatten().enumerate() {
        match parse_field_requirement(r) {
            Ok(req) => fields.push(req),
            Err(e) => errors.push(format!("matchFields[{i}]: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(ParsedTerm { labels, fields })
    } else {
        Err(errors)
    }
}

/// Upstream `labels.NewRequirement` checks for a node selector requirement.
fn parse_label_requirement(r: &NodeSelectorRequirement) -> Result<LabelRequirement, Vec<String>> {
    let values = r.values.as_deref().unwrap_or_default();
    let mut errors = Vec::new();
    if !is_label_key(&r.key) {
        errors.push(format!("key {:?} is not a valid label key", r.key));
    }
    let op = match r.operator.as_str() {
        "In" | "NotIn" => {
            if values.is_empty() {
                errors.push("values must be non-empty for 'In' and 'NotIn'".to_string());
            }
            if r.operator == "In" {
                LabelOp::In(values.to_vec())
            } else {
                LabelOp::NotIn(values.to_vec())
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errors.push("values must be empty for 'Exists' and 'DoesNotExist'".to_string());
            }
            if r.operator == "Exists" {
                LabelOp::Exists
            } else {
                LabelOp::DoesNotExist
            }
        }
        "Gt" | "Lt" => {
            if values.len() != 1 {
                errors.push("exactly one value is required for 'Gt' and 'Lt'".to_string());
            }
            for v in values.iter().filter(|v| v.parse::<i64>().is_err()) {
                errors.push(format!("value {v:?} must be an integer for 'Gt' and 'Lt'"));
            }
            let bound = values
                .first()
                .and_then(|v| v.parse().ok())
                .unwrap_or_default();
            if r.operator == "Gt" {
                LabelOp::Gt(bound)
            } else {
                LabelOp::Lt(bound)
            }
        }
        other => {
            // Upstream reports the operator and skips the value checks for this requirement.
            errors.push(format!("operator {other:?} is not supported"));
            return Err(errors);
        }
    };
    for v in values.iter().filter(|v| !is_label_value(v)) {
        errors.push(format!("value {v:?} is not a valid label value"));
    }
    if errors.is_empty() {
        Ok(LabelRequirement {
            key: r.key.clone(),
            op,
        })
    } else {
        Err(errors)
    }
}

/// Upstream `nodeSelectorRequirementsAsFieldSelector`: only `In`/`NotIn` with one value; neither
/// the key nor the value is validated.
fn parse_field_requirement(r: &NodeSelectorRequirement) -> Result<FieldRequirement, String> {
    let equal = match r.operator.as_str() {
        "In" => true,
        "NotIn" => false,
        other => return Err(format!("operator {other:?} is not supported for fields")),
    };
    match r.values.as_deref().unwrap_or_default() {
        [value] => Ok(FieldRequirement {
            key: r.key.clone(),
            value: value.clone(),
            equal,
        }),
        _ => Err("values must have exactly one element".to_string()),
    }
}

/// Upstream `IsLabelKey`: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters made of alphanumerics, `-`, `_` and `.`, starting and ending alphanumeric.
fn is_label_key(key: &str) -> bool {
    let name = match key.split_once('/') {
        None => key,
        Some((prefix, name)) => {
            if name.contains('/') || !is_dns1123_subdomain(prefix) {
                return false;
            }
            name
        }
    };
    !name.is_empty() && name.len() <= LABEL_MAX_LENGTH && is_qualified_name_part(name)
}

/// Upstream `IsValidLabelValue`: empty, or a qualified-name part of at most 63 characters.
fn is_label_value(value: &str) -> bool {
    value.is_empty() || (value.len() <= LABEL_MAX_LENGTH && is_qualified_name_part(value))
}

fn is_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Upstream `IsDNS1123Subdomain`: at most 253 characters of dot-separated lowercase DNS labels
/// (no per-label length limit is applied, as upstream).
fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= DNS1123_SUBDOMAIN_MAX_LENGTH
        && s.split('.').all(|label| {
            let bytes = label.as_bytes();
            match (bytes.first(), bytes.last()) {
                (Some(first), Some(last)) => {
                    is_lower_alphanumeric(*first)
                        && is_lower_alphanumeric(*last)
                        && bytes.iter().all(|&b| is_lower_alphanumeric(b) || b == b'-')
                }
                _ => false,
            }
        })
}

fn is_lower_alphanumeric(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// A pod's `spec.nodeSelector` and required node affinity, parsed once (upstream
/// `GetRequiredNodeAffinity`, computed in PreFilter) and then matched against each node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    /// Every pair must be present on the node; empty means no constraint.
    node_selector: BTreeMap<String, String>,
    /// Valid, non-empty required terms, OR-ed; `None` when the pod has no required affinity.
    terms: Option<Vec<ParsedTerm>>,
}

impl RequiredNodeAffinity {
    /// Parses the pod's constraints; invalid and empty required terms are kept out, since they
    /// can never match.
    pub fn from_pod(pod: &Pod) -> Self {
        let spec = pod.spec.as_ref();
        let node_selector = spec
            .and_then(|s| s.node_selector.clone())
            .unwrap_or_default();
        let terms = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|selector| {
                // Empty and invalid terms never match; dropping them leaves the OR unchanged.
                selector
                    .node_selector_terms
                    .iter()
                    .filter(|term| !is_empty_term(term))
                    .filter_map(|term| parse_term(term).ok())
                    .collect()
            });
        Self {
            node_selector,
            terms,
        }
    }

    /// Whether the node carries every node-selector label and satisfies at least one required
    /// term (when the pod has required affinity).
    pub fn matches(&self, node: &Node) -> bool {
        let labels = node_labels(node);
        self.node_selector
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
            && self
                .terms
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|term| term.matches(node)))
    }
}

/// Whether the NodeAffinity filter has anything to check for this pod; when false, upstream
/// PreFilter returns Skip. Like upstream this tests presence, so an empty `nodeSelector: {}`
/// still counts (the filter then passes every node).
pub fn has_required_node_constraints(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    spec.node_selector.is_some()
        || spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .is_some_and(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .is_some()
            })
}

/// NodeAffinity PreFilter conflict check: true when every required term has at least one
/// `matchFields` `metadata.name In` requirement, and in each term the intersection of those name
/// lists is empty, so no node can match. The caller reports [`NODE_AFFINITY_TERMS_CONFLICT`].
pub fn required_terms_conflict(pod: &Pod) -> bool {
    let Some(terms) = pod
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|selector| &selector.node_selector_terms)
    else {
        return false;
    };
    if terms.is_empty() {
        return false;
    }
    let mut any_name_possible = false;
    for term in terms {
        let mut term_names: Option<BTreeSet<&str>> = None;
        for r in term.match_fields.iter().flatten() {
            if r.key != NODE_NAME_FIELD || r.operator != "In" {
                continue;
            }
            let names: BTreeSet<&str> = r.values.iter().flatten().map(String::as_str).collect();
            term_names = Some(match term_names {
                None => names,
                Some(previous) => previous.intersection(&names).copied().collect(),
            });
        }
        match term_names {
            // A term without a name pin may match any node.
            None => return false,
            Some(names) => any_name_possible |= !names.is_empty(),
        }
    }
    !any_name_possible
}

/// NodeAffinity filter: the node carries every `nodeSelector` label and matches at least one
/// required node-affinity term. Parse once with [`RequiredNodeAffinity`] when checking many nodes.
pub fn node_matches_required(pod: &Pod, node: &Node) -> bool {
    RequiredNodeAffinity::from_pod(pod).matches(node)
}

/// The pod's preferred node-affinity terms failed validation; upstream PreScore then fails with an
/// error, which aborts batch scoring for the task (spec §7.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidNodeAffinity {
    pub message: String,
}

impl fmt::Display for InvalidNodeAffinity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid preferred node affinity: {}", self.message)
    }
}

impl std::error::Error for InvalidNodeAffinity {}

/// A pod's preferred node-affinity terms, parsed once (upstream `NewPreferredSchedulingTerms`,
/// computed in PreScore) and then scored against each node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreferredNodeAffinity {
    terms: Vec<(i64, ParsedTerm)>,
}

impl PreferredNodeAffinity {
    /// `Ok(None)` when the pod declares no preferred terms (upstream PreScore Skip). Terms with
    /// weight 0 or an empty preference are dropped before validation, as upstream does; any other
    /// invalid term makes the whole list an error.
    pub fn from_pod(pod: &Pod) -> Result<Option<Self>, InvalidNodeAffinity> {
        let Some(preferred) = pod
            .spec
            .as_ref()
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
        else {
            return Ok(None);
        };
        let mut terms = Vec::new();
        let mut errors = Vec::new();
        for (i, term) in preferred.iter().enumerate() {
            if term.weight == 0 || is_empty_term(&term.preference) {
                continue;
            }
            match parse_term(&term.preference) {
                Ok(parsed) => terms.push((i64::from(term.weight), parsed)),
                Err(errs) => errors.extend(errs.into_iter().map(|e| format!("[{i}].{e}"))),
            }
        }
        if errors.is_empty() {
            Ok(Some(Self { terms }))
        } else {
            Err(InvalidNodeAffinity {
                message: errors.join("; "),
            })
        }
    }

    /// Sum of the weights of the terms the node matches.
    pub fn score(&self, node: &Node) -> i64 {
        self.terms
            .iter()
            .filter(|(_, term)| term.matches(node))
            .map(|(weight, _)| weight)
            .sum()
    }
}

/// Whether the pod declares preferred node affinity; when false, upstream PreScore returns Skip
/// and the sub-plugin contributes nothing.
pub fn has_preferred_node_affinity(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .is_some_and(|na| {
            na.preferred_during_scheduling_ignored_during_execution
                .is_some()
        })
}

/// NodeAffinity raw score: the sum of the weights of the pod's preferred terms that the node
/// matches. Returns 0 when the terms are invalid; use [`PreferredNodeAffinity::from_pod`] to see
/// that case, which upstream turns into a PreScore error.
pub fn preferred_node_affinity_score(pod: &Pod, node: &Node) -> i64 {
    match PreferredNodeAffinity::from_pod(pod) {
        Ok(Some(preferred)) => preferred.score(node),
        Ok(None) | Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn pod(spec_extra: Value) -> Pod {
        let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
            spec.extend(extra.clone());
        }
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": spec
        }))
        .expect("valid pod")
    }

    fn pod_with_required(terms: Value) -> Pod {
        pod(json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }}}))
    }

    fn pod_with_preferred(terms: Value) -> Pod {
        pod(json!({"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": terms
        }}}))
    }

    fn node(name: &str, labels: Value) -> Node {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels}
        }))
        .expect("valid node")
    }

    fn worker() -> Node {
        node(
            "worker-1",
            json!({
                "topology.kubernetes.io/zone": "us-east-1a",
                "disk": "ssd",
                "gpu-count": "4",
                "empty": ""
            }),
        )
    }

    /// One requirement, usable in `matchExpressions` or `matchFields`.
    fn req(key: &str, operator: &str, values: &[&str]) -> Value {
        json!({"key": key, "operator": operator, "values": values})
    }

    /// A term list holding a single one-field term.
    fn field(key: &str, operator: &str, values: &[&str]) -> Value {
        json!([{"matchFields": [req(key, operator, values)]}])
    }

    /// A term list holding a single one-expression term.
    fn expr(key: &str, operator: &str, values: &[&str]) -> Value {
        json!([{"matchExpressions": [req(key, operator, values)]}])
    }

    #[test]
    fn match_expressions_table() {
        let zone = "topology.kubernetes.io/zone";
        let cases = [
            // (name, terms, matches worker-1)
            (
                "In with the value",
                expr(zone, "In", &["us-east-1b", "us-east-1a"]),
                true,
            ),
            (
                "In without the value",
                expr(zone, "In", &["us-east-1b"]),
                false,
            ),
            ("In on a missing label", expr("rack", "In", &["r1"]), false),
            ("In the empty value", expr("empty", "In", &[""]), true),
            (
                "NotIn on a missing label matches",
                expr("rack", "NotIn", &["r1"]),
                true,
            ),
            (
                "NotIn with the value",
                expr("disk", "NotIn", &["ssd", "nvme"]),
                false,
            ),
            (
                "NotIn without the value",
                expr("disk", "NotIn", &["hdd"]),
                true,
            ),
            ("Exists", expr("disk", "Exists", &[]), true),
            (
                "Exists on an empty-valued label",
                expr("empty", "Exists", &[]),
                true,
            ),
            (
                "Exists on a missing label",
                expr("rack", "Exists", &[]),
                false,
            ),
            (
                "DoesNotExist on a missing label",
                expr("rack", "DoesNotExist", &[]),
                true,
            ),
            (
                "DoesNotExist on a present label",
                expr("disk", "DoesNotExist", &[]),
                false,
            ),
            ("Gt below", expr("gpu-count", "Gt", &["3"]), true),
            ("Gt equal", expr("gpu-count", "Gt", &["4"]), false),
            ("Lt above", expr("gpu-count", "Lt", &["5"]), true),
            ("Lt equal", expr("gpu-count", "Lt", &["4"]), false),
            (
                "Gt compares as integers, not strings",
                expr("gpu-count", "Gt", &["10"]),
                false,
            ),
            (
                "Gt on a non-integer label",
                expr("disk", "Gt", &["1"]),
                false,
            ),
            ("Gt on a missing label", expr("rack", "Gt", &["1"]), false),
            (
                "Gt with a non-integer value",
                expr("gpu-count", "Gt", &["three"]),
                false,
            ),
            (
                "Gt with two values",
                expr("gpu-count", "Gt", &["1", "2"]),
                false,
            ),
            ("Gt with no value", expr("gpu-count", "Gt", &[]), false),
            // "-1" parses as an integer but is not a valid label value.
            (
                "Gt with a negative value",
                expr("gpu-count", "Gt", &["-1"]),
                false,
            ),
            ("In with no values", expr("disk", "In", &[]), false),
            ("NotIn with no values", expr("rack", "NotIn", &[]), false),
            (
                "Exists with values",
                expr("disk", "Exists", &["ssd"]),
                false,
            ),
            (
                "DoesNotExist with values",
                expr("rack", "DoesNotExist", &["x"]),
                false,
            ),
            (
                "unsupported operator",
                expr("disk", "Equals", &["ssd"]),
                false,
            ),
            (
                "operators are case-sensitive",
                expr("disk", "in", &["ssd"]),
                false,
            ),
            ("invalid key", expr("bad key", "DoesNotExist", &[]), false),
            (
                "invalid key prefix",
                expr("Example.com/disk", "Exists", &[]),
                false,
            ),
            ("invalid value", expr("rack", "NotIn", &["a b"]), false),
            (
                "expressions in a term are AND-ed",
                json!([{"matchExpressions": [
                    {"key": "disk", "operator": "In", "values": ["ssd"]},
                    {"key": "gpu-count", "operator": "Gt", "values": ["8"]}
                ]}]),
                false,
            ),
            (
                "terms are OR-ed",
                json!([
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]},
                    {"matchExpressions": [{"key": zone, "operator": "In", "values": ["us-east-1a"]}]}
                ]),
                true,
            ),
            (
                "an invalid term does not hide a valid one",
                json!([
                    {"matchExpressions": [{"key": "disk", "operator": "Bogus"}]},
                    {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}
                ]),
                true,
            ),
            (
                "one invalid requirement invalidates its term",
                json!([{"matchExpressions": [
                    {"key": "disk", "operator": "Exists"},
                    {"key": "rack", "operator": "DoesNotExist", "values": ["x"]}
                ]}]),
                false,
            ),
            ("empty term list matches nothing", json!([]), false),
            (
                "a term with nothing in it matches nothing",
                json!([{}]),
                false,
            ),
            (
                "a term with empty lists matches nothing",
                json!([{"matchExpressions": [], "matchFields": []}]),
                false,
            ),
            (
                "an empty term does not hide a valid one",
                json!([{}, {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]),
                true,
            ),
        ];
        let n = worker();
        for (name, terms, want) in cases {
            assert_eq!(
                node_matches_required(&pod_with_required(terms), &n),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn match_fields_table() {
        let cases = [
            // (name, terms, matches worker-1)
            (
                "metadata.name In",
                field("metadata.name", "In", &["worker-1"]),
                true,
            ),
            (
                "metadata.name In another node",
                field("metadata.name", "In", &["worker-2"]),
                false,
            ),
            (
                "metadata.name NotIn another node",
                field("metadata.name", "NotIn", &["worker-2"]),
                true,
            ),
            (
                "metadata.name NotIn this node",
                field("metadata.name", "NotIn", &["worker-1"]),
                false,
            ),
            (
                "two values are invalid for fields",
                field("metadata.name", "In", &["worker-1", "worker-2"]),
                false,
            ),
            (
                "Exists is invalid for fields",
                field("metadata.name", "Exists", &[]),
                false,
            ),
            (
                "unknown field reads as empty: In",
                field("spec.podCIDR", "In", &["10.0.0.0/24"]),
                false,
            ),
            (
                "unknown field reads as empty: NotIn",
                field("spec.podCIDR", "NotIn", &["10.0.0.0/24"]),
                true,
            ),
            (
                "fields and expressions are AND-ed",
                json!([{
                    "matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}],
                    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]
                }]),
                false,
            ),
        ];
        let n = worker();
        for (name, terms, want) in cases {
            assert_eq!(
                node_matches_required(&pod_with_required(terms), &n),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn match_fields_ignored_for_unnamed_node() {
        let p = pod_with_required(json!([{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["worker-2"]}
        ]}]));
        let unnamed: Node =
            serde_json::from_value(json!({"metadata": {"labels": {"disk": "ssd"}}})).expect("node");
        assert!(node_matches_required(&p, &unnamed));
    }

    #[test]
    fn node_selector_and_affinity_are_both_required() {
        let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu-count", "operator": "Gt", "values": ["2"]}]}]
        }}});
        let cases = [
            // (name, nodeSelector, affinity, matches worker-1)
            (
                "selector matches",
                json!({"disk": "ssd"}),
                Value::Null,
                true,
            ),
            (
                "selector value differs",
                json!({"disk": "hdd"}),
                Value::Null,
                false,
            ),
            (
                "selector label missing",
                json!({"rack": "r1"}),
                Value::Null,
                false,
            ),
            (
                "selector on an empty-valued label",
                json!({"empty": ""}),
                Value::Null,
                true,
            ),
            (
                "selector wants an empty value",
                json!({"disk": ""}),
                Value::Null,
                false,
            ),
            ("both match", json!({"disk": "ssd"}), affinity.clone(), true),
            (
                "selector fails, affinity matches",
                json!({"disk": "hdd"}),
                affinity.clone(),
                false,
            ),
            (
                "selector matches, affinity fails",
                json!({"disk": "ssd"}),
                json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": expr("gpu-count", "Gt", &["8"])
                }}}),
                false,
            ),
            ("empty selector", json!({}), Value::Null, true),
        ];
        let n = worker();
        for (name, selector, affinity, want) in cases {
            let p = pod(json!({"nodeSelector": selector, "affinity": affinity}));
            assert_eq!(node_matches_required(&p, &n), want, "{name}");
        }
    }

    #[test]
    fn node_without_labels() {
        let bare: Node =
            serde_json::from_value(json!({"metadata": {"name": "bare"}})).expect("node");
        assert!(node_matches_required(&pod(json!({})), &bare));
        assert!(!node_matches_required(
            &pod(json!({"nodeSelector": {"disk": "ssd"}})),
            &bare
        ));
        assert!(node_matches_required(
            &pod_with_required(expr("disk", "DoesNotExist", &[])),
            &bare
        ));
    }

    #[test]
    fn parsed_once_matches_many_nodes() {
        let required =
            RequiredNodeAffinity::from_pod(&pod_with_required(expr("disk", "In", &["ssd"])));
        assert!(required.matches(&worker()));
        assert!(!required.matches(&node("worker-2", json!({"disk": "hdd"}))));
    }

    #[test]
    fn required_constraint_presence() {
        let cases = [
            ("nothing", json!({}), false),
            (
                "node selector",
                json!({"nodeSelector": {"disk": "ssd"}}),
                true,
            ),
            (
                "empty node selector is still present",
                json!({"nodeSelector": {}}),
                true,
            ),
            (
                "required affinity",
                json!({"affinity": {"nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
                }}}),
                true,
            ),
            (
                "only preferred affinity",
                json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}}),
                false,
            ),
            (
                "only pod affinity",
                json!({"affinity": {"podAffinity": {}}}),
                false,
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(has_required_node_constraints(&pod(spec)), want, "{name}");
        }
        let no_spec: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}})).expect("pod");
        assert!(!has_required_node_constraints(&no_spec));
    }

    #[test]
    fn terms_conflict_table() {
        let name_in =
            |values: &[&str]| json!({"key": "metadata.name", "operator": "In", "values": values});
        let cases = [
            ("no affinity", None, false),
            ("no terms", Some(json!([])), false),
            (
                "a term without name pin",
                Some(json!([{"matchExpressions": [{"key": "disk", "operator": "Exists"}]}])),
                false,
            ),
            (
                "one name",
                Some(json!([{"matchFields": [name_in(&["a"])]}])),
                false,
            ),
            (
                "disjoint pins inside one term",
                Some(json!([{"matchFields": [name_in(&["a"]), name_in(&["b"])]}])),
                true,
            ),
            (
                "overlapping pins inside one term",
                Some(json!([{"matchFields": [name_in(&["a", "b"]), name_in(&["b"])]}])),
                false,
            ),
            (
                "every term empty after intersection",
                Some(json!([
                    {"matchFields": [name_in(&["a"]), name_in(&["b"])]},
                    {"matchFields": [name_in(&["c"]), name_in(&["d"])]}
                ])),
                true,
            ),
            (
                "one term still names a node",
                Some(json!([
                    {"matchFields": [name_in(&["a"]), name_in(&["b"])]},
                    {"matchFields": [name_in(&["c"])]}
                ])),
                false,
            ),
            (
                "another term is unpinned",
                Some(json!([
                    {"matchFields": [name_in(&["a"]), name_in(&["b"])]},
                    {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}
                ])),
                false,
            ),
            (
                "NotIn is not a pin",
                Some(field("metadata.name", "NotIn", &["a"])),
                false,
            ),
        ];
        for (name, terms, want) in cases {
            let p = match terms {
                Some(terms) => pod_with_required(terms),
                None => pod(json!({})),
            };
            assert_eq!(required_terms_conflict(&p), want, "{name}");
        }
    }

    #[test]
    fn preferred_score_table() {
        let cases = [
            // (name, preferred terms, raw score on worker-1)
            (
                "sum of matching weights",
                json!([
                    {"weight": 10, "preference": {"matchExpressions": [req("disk", "In", &["ssd"])]}},
                    {"weight": 5, "preference": {"matchExpressions": [req("gpu-count", "Gt", &["2"])]}},
                    {"weight": 7, "preference": {"matchExpressions": [req("disk", "In", &["hdd"])]}}
                ]),
                15,
            ),
            (
                "matchFields count too",
                json!([{"weight": 3, "preference": {"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["worker-1"]}
                ]}}]),
                3,
            ),
            ("no terms", json!([]), 0),
            (
                "an empty preference never matches",
                json!([{"weight": 9, "preference": {}}]),
                0,
            ),
            (
                "weight 0 is skipped, even when invalid",
                json!([
                    {"weight": 0, "preference": {"matchExpressions": [{"key": "disk", "operator": "Bogus"}]}},
                    {"weight": 4, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
                ]),
                4,
            ),
            (
                "an invalid weighted term scores nothing",
                json!([
                    {"weight": 4, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}},
                    {"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "Bogus"}]}}
                ]),
                0,
            ),
        ];
        let n = worker();
        for (name, terms, want) in cases {
            assert_eq!(
                preferred_node_affinity_score(&pod_with_preferred(terms), &n),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn preferred_parsing_outcomes() {
        assert_eq!(PreferredNodeAffinity::from_pod(&pod(json!({}))), Ok(None));
        assert!(!has_preferred_node_affinity(&pod(json!({}))));

        let empty = pod_with_preferred(json!([]));
        assert!(has_preferred_node_affinity(&empty));
        assert!(matches!(
            PreferredNodeAffinity::from_pod(&empty),
            Ok(Some(_))
        ));

        let invalid = pod_with_preferred(json!([
            {"weight": 1, "preference": {"matchExpressions": [req("disk", "Gt", &["x"])]}}
        ]));
        let err = PreferredNodeAffinity::from_pod(&invalid).expect_err("invalid term");
        assert!(err.message.contains("[0].matchExpressions[0]"), "{err}");
    }

    #[test]
    fn label_key_and_value_validation() {
        for key in [
            "disk",
            "a",
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "A_b.c-D",
            "x1/y",
        ] {
            assert!(is_label_key(key), "{key} should be valid");
        }
        for key in [
            "",
            "/disk",
            "a/b/c",
            "-disk",
            "disk-",
            "Example.com/disk",
            "example..com/disk",
            "example.com/",
            "a b",
            &"k".repeat(64),
        ] {
            assert!(!is_label_key(key), "{key} should be invalid");
        }
        for value in ["", "ssd", "1", "a.b_c-d"] {
            assert!(is_label_value(value), "{value} should be valid");
        }
        for value in ["-1", "+1", "a b", "ssd.", &"v".repeat(64)] {
            assert!(!is_label_value(value), "{value} should be invalid");
        }
    }

    proptest! {
        #[test]
        fn in_and_not_in_are_complementary(
            label in proptest::option::of("[a-z0-9]{1,3}"),
            values in proptest::collection::vec("[a-z0-9]{1,3}", 1..4),
        ) {
            let labels = match &label {
                Some(v) => json!({"k": v}),
                None => json!({}),
            };
            let n = node("n", labels);
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            let is_in = node_matches_required(&pod_with_required(expr("k", "In", &values)), &n);
            let not_in = node_matches_required(&pod_with_required(expr("k", "NotIn", &values)), &n);
            prop_assert_eq!(is_in, !not_in);
        }

        #[test]
        fn gt_and_lt_follow_integer_order(actual in 0i64..1000, bound in 0i64..1000) {
            let n = node("n", json!({"count": actual.to_string()}));
            let bound = bound.to_string();
            let gt = node_matches_required(&pod_with_required(expr("count", "Gt", &[&bound])), &n);
            let lt = node_matches_required(&pod_with_required(expr("count", "Lt", &[&bound])), &n);
            let bound: i64 = bound.parse().expect("integer");
            prop_assert_eq!(gt, actual > bound);
            prop_assert_eq!(lt, actual < bound);
        }

        #[test]
        fn arbitrary_requirements_never_panic(
            key in ".{0,20}",
            operator in "(In|NotIn|Exists|DoesNotExist|Gt|Lt|.{0,6})",
            values in proptest::collection::vec(".{0,8}", 0..3),
            label in ".{0,8}",
        ) {
            let n = node("n", json!({"k": label}));
            let p = pod_with_required(json!([{
                "matchExpressions": [{"key": key, "operator": operator, "values": values}],
                "matchFields": [{"key": "metadata.name", "operator": operator, "values": values}]
            }]));
            let _ = node_matches_required(&p, &n);
            let _ = required_terms_conflict(&p);
        }
    }
}
