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
        self.matches_value(labels.get(&self.key).map(String::as_str))
    }

    /// Whether a node whose label `key` has `value` (`None`: no such label) matches.
    fn matches_value(&self, value: Option<&str>) -> bool {
        match &self.op {
            LabelOp::In(values) => value.is_some_and(|v| values.iter().any(|x| x == v)),
            LabelOp::NotIn(values) => value.is_none_or(|v| !values.iter().any(|x| x == v)),
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

/// Upstream `CheckNodeAffinity` for a PersistentVolume's required node affinity: the terms are
/// OR-ed and matched against a node rebuilt from `labels` alone, so `matchFields` never restrict
/// (the rebuilt node has no name); an empty or invalid term matches nothing.
pub fn volume_terms_match(terms: &[NodeSelectorTerm], labels: &BTreeMap<String, String>) -> bool {
    let mut node = Node::default();
    node.metadata.labels = Some(labels.clone());
    terms.iter().any(|term| {
        !is_empty_term(term) && parse_term(term).is_ok_and(|parsed| parsed.matches(&node))
    })
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

mod compiled;
#[cfg(test)]
mod tests;

pub use compiled::CompiledAffinity;
