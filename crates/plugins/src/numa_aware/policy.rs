//! Topology-manager policies of the `numa-aware` plugin (spec/plugins-more.md §11, Predicate
//! step 4): merging the hint providers' NUMA hints for one container and deciding admission.
//! Follows Volcano's `pkg/scheduler/plugins/numaaware/policy` (`policy.go`, `factory.go`,
//! `policy_{none,best_effort,restricted,single_numa_node}.go`), itself a copy of kubelet's
//! topology-manager merge.
//!
//! Hints of one provider are a map resource → `Option<Vec<TopologyHint>>`: `None` is "no
//! preference" (Go's nil slice), `Some(vec![])` is "no possible affinity". An empty map means the
//! provider has no preference at all.

use std::collections::BTreeMap;

use super::bitmask::NumaMask;

/// One NUMA placement option. `affinity: None` means "any NUMA node" (Go's nil mask).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TopologyHint {
    pub affinity: Option<NumaMask>,
    pub preferred: bool,
}

/// A node's topology-manager policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    None,
    BestEffort,
    Restricted,
    SingleNumaNode,
}

impl Policy {
    /// Parses the batch API's policy names. Any other value gives `None` (no such policy); note
    /// that Volcano's `GetPolicy` treats an unknown node policy like [`Policy::None`].
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "none" => Some(Policy::None),
            "best-effort" => Some(Policy::BestEffort),
            "restricted" => Some(Policy::Restricted),
            "single-numa-node" => Some(Policy::SingleNumaNode),
            _ => None,
        }
    }

    /// The policy's name in the batch API.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::BestEffort => "best-effort",
            Policy::Restricted => "restricted",
            Policy::SingleNumaNode => "single-numa-node",
        }
    }
}

/// One container's predicate on a node whose NUMA ids are `numa_nodes`: merges the providers'
/// hints under `policy` and returns the best hint and whether the container is admitted.
///
/// * `none`: `({None, false}, true)` without looking at the hints;
/// * `best-effort`: the merged best hint, always admitted;
/// * `restricted`: the merged best hint, admitted iff it is preferred;
/// * `single-numa-node`: only preferred hints that are single-NUMA or `None` are kept before
///   merging; admitted iff the best hint is preferred.
pub fn predicate(
    policy: Policy,
    numa_nodes: &[u32],
    providers_hints: &[BTreeMap<String, Option<Vec<TopologyHint>>>],
) -> (TopologyHint, bool) {
    if policy == Policy::None {
        let hint = TopologyHint {
            affinity: None,
            preferred: false,
        };
        return (hint, true);
    }
    let mut per_resource = flatten_provider_hints(providers_hints);
    if policy == Policy::SingleNumaNode {
        per_resource = keep_single_numa_hints(per_resource);
    }
    let best = merge_hints(numa_nodes, &per_resource);
    let admit = match policy {
        Policy::BestEffort => true,
        _ => best.preferred,
    };
    (best, admit)
}

/// One hint list per resource (per provider when it has no preference at all), turning "no
/// preference" into a preferred any-NUMA hint and "no possible affinity" into a non-preferred
/// any-NUMA hint (Volcano's `filterProvidersHints`).
fn flatten_provider_hints(
    providers_hints: &[BTreeMap<String, Option<Vec<TopologyHint>>>],
) -> Vec<Vec<TopologyHint>> {
    let any = |preferred| TopologyHint {
        affinity: None,
        preferred,
    };
    let mut out = Vec::new();
    for provider in providers_hints {
        if provider.is_empty() {
            out.push(vec![any(true)]);
            continue;
        }
        for hints in provider.values() {
            out.push(match hints {
                None => vec![any(true)],
                Some(h) if h.is_empty() => vec![any(false)],
                Some(h) => h.clone(),
            });
        }
    }
    out
}

/// Keeps, per resource, the preferred hints that are any-NUMA or exactly one NUMA node. A list
/// may end up empty, which leaves nothing to merge.
fn keep_single_numa_hints(per_resource: Vec<Vec<TopologyHint>>) -> Vec<Vec<TopologyHint>> {
    per_resource
        .into_iter()
        .map(|hints| {
            hints
                .into_iter()
                .filter(|h| h.preferred && h.affinity.is_none_or(|m| m.count() == 1))
                .collect()
        })
        .collect()
}

/// Volcano's `mergeFilteredHints`: over every choice of one hint per resource, AND the
/// affinities (any-NUMA = all of `numa_nodes`); a choice is preferred iff all its hints are.
/// Empty results are skipped. A preferred result beats a non-preferred one, otherwise the
/// narrower mask wins and earlier results win ties. Starts from a non-preferred hint with all
/// NUMA nodes.
fn merge_hints(numa_nodes: &[u32], per_resource: &[Vec<TopologyHint>]) -> TopologyHint {
    let all = NumaMask::of(numa_nodes);
    let mut best = TopologyHint {
        affinity: Some(all),
        preferred: false,
    };
    for_each_combination(per_resource, &mut Vec::new(), &mut |choice| {
        let merged = TopologyHint {
            affinity: Some(
                choice
                    .iter()
                    .fold(all, |acc, h| acc.and(h.affinity.unwrap_or(all))),
            ),
            preferred: choice.iter().all(|h| h.preferred),
        };
        if replaces(merged, best) {
            best = merged;
        }
    });
    best
}

/// Whether `candidate` should replace `best` in [`merge_hints`].
fn replaces(candidate: TopologyHint, best: TopologyHint) -> bool {
    let mask = candidate.affinity.unwrap_or_default();
    if mask.is_empty() {
        return false;
    }
    match (candidate.preferred, best.preferred) {
        (true, false) => true,
        (false, true) => false,
        _ => mask.is_narrower_than(best.affinity.unwrap_or_default()),
    }
}

/// Calls `f` with each way of picking one hint from every list, in order (the first list varies
/// slowest). Any empty list means no call at all; no lists means one call with nothing picked.
fn for_each_combination(
    lists: &[Vec<TopologyHint>],
    picked: &mut Vec<TopologyHint>,
    f: &mut impl FnMut(&[TopologyHint]),
) {
    let Some((first, rest)) = lists.split_first() else {
        f(picked);
        return;
    };
    for &hint in first {
        picked.push(hint);
        for_each_combination(rest, picked, f);
        picked.pop();
    }
}

#[cfg(test)]
mod tests;
