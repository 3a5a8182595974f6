//! `pdb`: PodDisruptionBudgets protect preemption and reclaim victims
//! (spec/plugins-more.md §1).
//!
//! The plugin registers one filter as `Preemptable`, `Reclaimable` (both vote Permit and ignore
//! the evictor) and `VictimTasks`. The filter walks the candidates in order and charges each
//! one against every budget whose selector matches it; a candidate that drives any budget below
//! zero is dropped. Budgets are shared by the candidates of one call (earlier candidates use them
//! first) and start again from `status.disruptionsAllowed` on every call.
//!
//! Like Volcano, the plugin reads only `status.disruptionsAllowed` and `status.disruptedPods`:
//! `spec.minAvailable` / `spec.maxUnavailable` are turned into `disruptionsAllowed` by the
//! Kubernetes disruption controller, so a PDB whose status was never written allows nothing.
//! Volcano-specific differences from Kubernetes, kept on purpose:
//! * an empty selector (`{}`) matches nothing here, where Kubernetes selects the whole namespace;
//! * a pod without any label is never a victim (Volcano drops it rather than skipping the check).

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::conf::Arguments;
use engine::framework::{ExtensionPoints, PERMIT, Plugin, SessionState};
use engine::model::TaskId;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use crate::k8s::labels::{selector_is_empty, selector_matches};

/// Registered plugin name.
pub const NAME: &str = "pdb";

/// Builds the plugin; it takes no arguments.
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(PdbPlugin::default())
}

#[derive(Default)]
struct PdbPlugin {
    /// The cluster's PDBs whose selector can match a pod, read once per session (the snapshot
    /// does not change during a session, so this equals Volcano's fresh listing per call).
    budgets: Vec<Budget>,
}

/// One PDB reduced to what the filter needs.
struct Budget {
    pdb: Arc<PodDisruptionBudget>,
}

impl Budget {
    /// `None` for a PDB that can never match: no selector (`labels.Nothing()`), an empty one
    /// (`labels.Everything()`, which Volcano skips) or one Kubernetes refuses to convert.
    fn new(pdb: &Arc<PodDisruptionBudget>) -> Option<Budget> {
        let selector = pdb.spec.as_ref()?.selector.as_ref()?;
        if selector_is_empty(selector) || !selector_is_valid(selector) {
            return None;
        }
        Some(Budget { pdb: pdb.clone() })
    }

    fn namespace(&self) -> &str {
        self.pdb.metadata.namespace.as_deref().unwrap_or("default")
    }

    fn selector(&self) -> Option<&LabelSelector> {
        self.pdb.spec.as_ref()?.selector.as_ref()
    }

    /// `status.disruptionsAllowed`; an unset status allows nothing (Go's zero value).
    fn disruptions_allowed(&self) -> i64 {
        self.pdb
            .status
            .as_ref()
            .and_then(|s| s.disruptions_allowed)
            .map_or(0, i64::from)
    }

    /// Pods the API server already accepted an eviction for; they use no more budget.
    fn already_disrupted(&self, pod_name: &str) -> bool {
        self.pdb
            .status
            .as_ref()
            .and_then(|s| s.disrupted_pods.as_ref())
            .is_some_and(|pods| pods.contains_key(pod_name))
    }

    /// Whether evicting the pod would be charged to this budget.
    fn charges(&self, namespace: &str, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.namespace() == namespace
            && self.selector().is_some_and(|s| selector_matches(s, labels))
            && !self.already_disrupted(name)
    }
}

impl PdbPlugin {
    /// The candidates whose eviction keeps every matching budget at or above zero, in order.
    fn filter(&self, ssn: &SessionState, tasks: &[TaskId]) -> Vec<TaskId> {
        self.within_budgets(ssn, tasks, false)
    }

    /// The budget walk. `keep_unlabelled`: a pod without labels matches no budget; Volcano's
    /// filter drops it anyway (it never preempts or reclaims an unlabelled pod), the eviction
    /// guard keeps it.
    fn within_budgets(
        &self,
        ssn: &SessionState,
        tasks: &[TaskId],
        keep_unlabelled: bool,
    ) -> Vec<TaskId> {
        let mut allowed: Vec<i64> = self
            .budgets
            .iter()
            .map(Budget::disruptions_allowed)
            .collect();
        let mut kept = Vec::with_capacity(tasks.len());
        for &task in tasks {
            let spec = &ssn.task(task).spec;
            let Some(labels) = spec.pod.metadata.labels.as_ref().filter(|l| !l.is_empty()) else {
                if keep_unlabelled {
                    kept.push(task);
                }
                continue;
            };
            let mut violated = false;
            // Every matching budget is charged, even once another one is already violated.
            for (budget, left) in self.budgets.iter().zip(allowed.iter_mut()) {
                if budget.charges(&spec.namespace, &spec.name, labels) {
                    *left -= 1;
                    violated |= *left < 0;
                }
            }
            if violated {
                tracing::debug!(pod = %spec.key, "eviction would violate a PodDisruptionBudget");
            } else {
                kept.push(task);
            }
        }
        kept
    }
}

impl Plugin for PdbPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.budgets = ssn.snapshot().pdbs().filter_map(Budget::new).collect();
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::RECLAIMABLE
            | ExtensionPoints::VICTIM_TASKS
            | ExtensionPoints::EVICTION_GUARD
    }

    fn preemptable(
        &self,
        ssn: &SessionState,
        _preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        (self.filter(ssn, candidates), PERMIT)
    }

    fn reclaimable(
        &self,
        ssn: &SessionState,
        _reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        (self.filter(ssn, candidates), PERMIT)
    }

    fn victim_tasks(&self, ssn: &SessionState, tasks: &[TaskId]) -> Vec<TaskId> {
        self.filter(ssn, tasks)
    }

    fn eviction_guard(&self, ssn: &SessionState, candidates: &[TaskId]) -> Vec<TaskId> {
        self.within_budgets(ssn, candidates, true)
    }
}

/// Whether apimachinery's `LabelSelectorAsSelector` accepts the selector: known operators with
/// the right number of values, qualified label keys and valid label values.
fn selector_is_valid(sel: &LabelSelector) -> bool {
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| is_label_key(k) && is_label_value(v));
    labels_ok
        && sel
            .match_expressions
            .iter()
            .flatten()
            .all(requirement_is_valid)
}

fn requirement_is_valid(req: &LabelSelectorRequirement) -> bool {
    let values = req.values.as_deref().unwrap_or(&[]);
    let arity_ok = match req.operator.as_str() {
        "In" | "NotIn" => !values.is_empty(),
        "Exists" | "DoesNotExist" => values.is_empty(),
        _ => false,
    };
    arity_ok && is_label_key(&req.key) && values.iter().all(|v| is_label_value(v))
}

/// `IsQualifiedName`: `[prefix/]name`, the prefix a DNS-1123 subdomain.
fn is_label_key(key: &str) -> bool {
    match key.split_once('/') {
        None => is_label_name(key),
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_label_name(name),
    }
}

/// The name part of a qualified name: 1–63 alphanumerics, `-`, `_`, `.`, alphanumeric at both
/// ends.
fn is_label_name(name: &str) -> bool {
    let b = name.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            b.len() <= 63
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A label value is empty or has the syntax of a label name.
fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_label_name(value)
}

fn is_dns1123_subdomain(s: &str) -> bool {
    let label_ok = |part: &str| {
        let b = part.as_bytes();
        let lower_alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(first), Some(last)) => {
                lower_alnum(first)
                    && lower_alnum(last)
                    && b.iter().all(|c| lower_alnum(c) || *c == b'-')
            }
            _ => false,
        }
    };
    !s.is_empty() && s.len() <= 253 && s.split('.').all(label_ok)
}

#[cfg(test)]
mod tests;
