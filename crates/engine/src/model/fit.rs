//! Fit errors: why a task does not fit a node, and the aggregated text users read
//! (spec/framework.md §3.3.2 status codes, §5.5.6).

use std::collections::BTreeMap;

/// Status codes carried by a fit error (Volcano's `pkg/scheduler/api/types.go`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum StatusCode {
    Success,
    Error,
    Unschedulable,
    UnschedulableAndUnresolvable,
    Wait,
    Skip,
}

/// One reason from one plugin.
#[derive(Clone, Debug, PartialEq)]
pub struct FitStatus {
    pub code: StatusCode,
    pub reason: String,
    pub plugin: String,
}

impl FitStatus {
    pub fn new(code: StatusCode, reason: impl Into<String>, plugin: &str) -> Self {
        Self {
            code,
            reason: reason.into(),
            plugin: plugin.to_string(),
        }
    }
}

/// Why one task does not fit one node. An empty status list means "fits".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitError {
    pub statuses: Vec<FitStatus>,
}

impl FitError {
    pub fn new(status: FitStatus) -> Self {
        Self {
            statuses: vec![status],
        }
    }

    /// A non-fit-error failure (Volcano wraps plain errors with code `Error`).
    pub fn error(reason: impl Into<String>, plugin: &str) -> Self {
        Self::new(FitStatus::new(StatusCode::Error, reason, plugin))
    }

    /// `PredicateForAllocateAction`: does not fit if any status is a failing code.
    pub fn blocks_allocation(&self) -> bool {
        self.statuses.iter().any(|s| {
            matches!(
                s.code,
                StatusCode::Unschedulable
                    | StatusCode::UnschedulableAndUnresolvable
                    | StatusCode::Error
                    | StatusCode::Skip
                    | StatusCode::Wait
            )
        })
    }

    /// `PredicateForPreemptAction`: `Unschedulable` alone may be fixed by evicting pods.
    pub fn blocks_preemption(&self) -> bool {
        self.statuses.iter().any(|s| {
            matches!(
                s.code,
                StatusCode::UnschedulableAndUnresolvable
                    | StatusCode::Error
                    | StatusCode::Skip
                    | StatusCode::Wait
            )
        })
    }

    pub fn is_unresolvable(&self) -> bool {
        self.statuses
            .iter()
            .any(|s| s.code == StatusCode::UnschedulableAndUnresolvable)
    }

    pub fn reasons(&self) -> impl Iterator<Item = &str> {
        self.statuses.iter().map(|s| s.reason.as_str())
    }
}

/// Fit errors of one task over the nodes it was tried on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitErrors {
    /// node name → why it did not fit; ordered so the text is stable.
    pub nodes: BTreeMap<String, FitError>,
    /// A message that replaces the "0/N nodes are unavailable" head.
    pub message: Option<String>,
}

impl FitErrors {
    pub fn with_message(message: impl Into<String>) -> Self {
        Self {
            nodes: BTreeMap::new(),
            message: Some(message.into()),
        }
    }

    pub fn set_node_error(&mut self, node: &str, err: FitError) {
        self.nodes.insert(node.to_string(), err);
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.message.is_none()
    }

    /// Nodes whose errors include `UnschedulableAndUnresolvable`.
    pub fn unresolvable_nodes(&self) -> impl Iterator<Item = &str> {
        self.nodes
            .iter()
            .filter(|(_, e)| e.is_unresolvable())
            .map(|(n, _)| n.as_str())
    }
}

impl std::fmt::Display for FitErrors {
    /// "0/3 nodes are unavailable: 2 Insufficient cpu, 1 node(s) had untolerated taint {..}."
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.message {
            Some(m) => f.write_str(m)?,
            None => write!(f, "0/{} nodes are unavailable", self.nodes.len())?,
        }
        if self.nodes.is_empty() {
            return Ok(());
        }
        let mut histogram: BTreeMap<&str, usize> = BTreeMap::new();
        for err in self.nodes.values() {
            for reason in err.reasons() {
                *histogram.entry(reason).or_default() += 1;
            }
        }
        let mut parts: Vec<String> = histogram
            .into_iter()
            .map(|(reason, n)| format!("{n} {reason}"))
            .collect();
        parts.sort();
        write!(f, ": {}.", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unsched(reason: &str) -> FitError {
        FitError::new(FitStatus::new(StatusCode::Unschedulable, reason, "test"))
    }

    #[test]
    fn aggregated_text_counts_reasons_sorted_as_strings() {
        let mut fe = FitErrors::default();
        fe.set_node_error("n1", unsched("Insufficient cpu"));
        fe.set_node_error("n2", unsched("Insufficient cpu"));
        fe.set_node_error(
            "n3",
            FitError::new(FitStatus::new(
                StatusCode::UnschedulableAndUnresolvable,
                "node(s) had untolerated taint {a: b}",
                "predicates",
            )),
        );
        assert_eq!(
            fe.to_string(),
            "0/3 nodes are unavailable: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu."
        );
        assert_eq!(fe.unresolvable_nodes().collect::<Vec<_>>(), vec!["n3"]);
    }

    #[test]
    fn message_only() {
        let fe =
            FitErrors::with_message("Task t with role spec r has already predicated failed, skip");
        assert_eq!(
            fe.to_string(),
            "Task t with role spec r has already predicated failed, skip"
        );
    }

    #[test]
    fn blocking_codes() {
        let e = unsched("x");
        assert!(e.blocks_allocation());
        assert!(!e.blocks_preemption());
        let ok = FitError::new(FitStatus::new(StatusCode::Success, "", "p"));
        assert!(!ok.blocks_allocation());
        assert!(FitError::error("boom", "p").blocks_preemption());
    }
}
