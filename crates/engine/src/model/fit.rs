//! Fit errors: why a task does not fit a node, and the aggregated text users read
//! (spec/framework.md §3.3.2 status codes, §5.5.6).

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::NodeId;

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

/// One reason from one plugin. Most reasons and every plugin name are fixed text: borrowed,
/// they cost no allocation, and a search that fails on every node of a large cluster builds
/// one status per node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FitStatus {
    pub code: StatusCode,
    pub reason: Cow<'static, str>,
    pub plugin: Cow<'static, str>,
}

impl FitStatus {
    pub fn new(
        code: StatusCode,
        reason: impl Into<Cow<'static, str>>,
        plugin: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self {
            code,
            reason: reason.into(),
            plugin: plugin.into(),
        }
    }
}

/// Why one task does not fit one node. An empty status list means "fits".
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
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
    pub fn error(
        reason: impl Into<Cow<'static, str>>,
        plugin: impl Into<Cow<'static, str>>,
    ) -> Self {
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
        self.statuses.iter().map(|s| s.reason.as_ref())
    }
}

/// Fit errors of one task over the nodes it was tried on, kept as the users' text needs them:
/// how many nodes failed and how often each reason was given, not a copy of each node's error
/// (a task that fails everywhere on a large cluster would otherwise hold one per node). Only
/// which nodes were unresolvable is kept per node, as a bit per node, for the eviction actions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitErrors {
    /// Nodes counted so far.
    nodes: usize,
    /// Reason → how many times it was given, over every status of every node.
    reasons: BTreeMap<String, usize>,
    /// Bit per node index: its error included `UnschedulableAndUnresolvable`.
    unresolvable: Vec<u64>,
    /// A message that replaces the "0/N nodes are unavailable" head.
    pub message: Option<String>,
    /// The HyperNode the nodes were searched in, when not the whole cluster.
    pub hyper_node: Option<String>,
}

impl FitErrors {
    pub fn with_message(message: impl Into<String>) -> Self {
        Self {
            message: Some(message.into()),
            ..Self::default()
        }
    }

    /// Counts why `node` did not fit. Each node is counted once per search: callers give each
    /// node at most one error.
    pub fn set_node_error(&mut self, node: NodeId, err: &FitError) {
        self.add_nodes(err, [node]);
    }

    /// Counts the same error for each of `nodes` (each at most once).
    pub fn add_nodes(&mut self, err: &FitError, nodes: impl IntoIterator<Item = NodeId>) {
        let unresolvable = err.is_unresolvable();
        let mut count = 0;
        for node in nodes {
            count += 1;
            if unresolvable {
                let (word, bit) = (node.index() / 64, node.index() % 64);
                if self.unresolvable.len() <= word {
                    self.unresolvable.resize(word + 1, 0);
                }
                self.unresolvable[word] |= 1 << bit;
            }
        }
        if count == 0 {
            return;
        }
        self.nodes += count;
        for reason in err.reasons() {
            // Looked up by reference first: the reasons are few and repeat.
            match self.reasons.get_mut(reason) {
                Some(n) => *n += count,
                None => {
                    self.reasons.insert(reason.to_string(), count);
                }
            }
        }
    }

    /// How many nodes were counted.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    pub fn is_empty(&self) -> bool {
        self.nodes == 0 && self.message.is_none()
    }

    /// Whether `node`'s error included `UnschedulableAndUnresolvable`.
    pub fn is_unresolvable(&self, node: NodeId) -> bool {
        let (word, bit) = (node.index() / 64, node.index() % 64);
        self.unresolvable
            .get(word)
            .is_some_and(|w| w & (1 << bit) != 0)
    }

    /// Nodes whose errors include `UnschedulableAndUnresolvable`, in node order.
    pub fn unresolvable_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.unresolvable.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| NodeId::from_index(w * 64 + b))
        })
    }
}

impl std::fmt::Display for FitErrors {
    /// "0/3 nodes are unavailable: 2 Insufficient cpu, 1 node(s) had untolerated taint {..}."
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.nodes > 0
            && let Some(hn) = &self.hyper_node
        {
            write!(f, "In hyperNode {hn}: ")?;
        }
        match &self.message {
            Some(m) => f.write_str(m)?,
            None => write!(f, "0/{} nodes are unavailable", self.nodes)?,
        }
        if self.nodes == 0 {
            return Ok(());
        }
        // Sorted as whole strings ("10 x" before "2 y"), as Volcano sorts them.
        let mut parts: Vec<String> = self
            .reasons
            .iter()
            .map(|(reason, n)| format!("{n} {reason}"))
            .collect();
        parts.sort();
        write!(f, ": {}.", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unsched(reason: &'static str) -> FitError {
        FitError::new(FitStatus::new(StatusCode::Unschedulable, reason, "test"))
    }

    #[test]
    fn a_search_within_a_hyper_node_names_it() {
        let mut fe = FitErrors::default();
        fe.set_node_error(NodeId::from_index(0), &unsched("Insufficient cpu"));
        fe.hyper_node = Some("s1".into());
        assert_eq!(
            fe.to_string(),
            "In hyperNode s1: 0/1 nodes are unavailable: 1 Insufficient cpu."
        );
        let only_message = FitErrors {
            hyper_node: Some("s1".into()),
            ..FitErrors::with_message("skip")
        };
        assert_eq!(only_message.to_string(), "skip");
    }

    #[test]
    fn aggregated_text_counts_reasons_sorted_as_strings() {
        let n = NodeId::from_index;
        let mut fe = FitErrors::default();
        fe.set_node_error(n(1), &unsched("Insufficient cpu"));
        fe.set_node_error(n(2), &unsched("Insufficient cpu"));
        fe.set_node_error(
            n(70),
            &FitError::new(FitStatus::new(
                StatusCode::UnschedulableAndUnresolvable,
                "node(s) had untolerated taint {a: b}",
                "predicates",
            )),
        );
        assert_eq!(
            fe.to_string(),
            "0/3 nodes are unavailable: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu."
        );
        assert_eq!(fe.unresolvable_nodes().collect::<Vec<_>>(), vec![n(70)]);
        assert!(fe.is_unresolvable(n(70)) && !fe.is_unresolvable(n(1)));
        assert!(!fe.is_unresolvable(n(700)));
    }

    /// The counts are those of a histogram over every node's reasons, a node with two
    /// statuses counting for both, and "10 …" sorts before "9 …" as strings do.
    #[test]
    fn counting_many_nodes_at_once_is_counting_them_one_by_one() {
        let two = FitError {
            statuses: vec![unsched("a"), unsched("b")]
                .into_iter()
                .flat_map(|e| e.statuses)
                .collect(),
        };
        let mut many = FitErrors::default();
        many.add_nodes(&two, (0..10).map(NodeId::from_index));
        many.add_nodes(&unsched("c"), (10..19).map(NodeId::from_index));
        many.add_nodes(&unsched("c"), std::iter::empty());
        let mut one = FitErrors::default();
        for i in 0..10 {
            one.set_node_error(NodeId::from_index(i), &two);
        }
        for i in 10..19 {
            one.set_node_error(NodeId::from_index(i), &unsched("c"));
        }
        assert_eq!(many, one);
        assert_eq!(many.node_count(), 19);
        assert_eq!(
            many.to_string(),
            "0/19 nodes are unavailable: 10 a, 10 b, 9 c."
        );
        assert_eq!(
            FitErrors::default().to_string(),
            "0/0 nodes are unavailable"
        );
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
