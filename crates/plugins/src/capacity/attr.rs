//! Per-queue figures (`queueAttr`) and the comparisons on them.

use std::cmp::Ordering;

use engine::model::queue::QueueSpec;
use engine::model::resource::{DimensionDefault, intersection_names, max_resource};
use engine::model::{QueueId, Resource};

use crate::fairness::{self, QueueUsage};

/// Whether a queue holding `allocated` still holds its guarantee once `request` is gone.
pub(super) fn keeps_guarantee(
    guarantee: &Resource,
    allocated: &Resource,
    request: &Resource,
) -> bool {
    let mut remaining = allocated.clone();
    remaining.sub(request);
    guarantee.less_equal(&remaining, DimensionDefault::Zero)
}

/// Per-queue figures (`queueAttr`, §5.2).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct QueueAttr {
    pub(super) share: f64,
    /// Root first; hierarchical mode only, and only for queues connected to `root`.
    pub(super) ancestors: Vec<QueueId>,
    /// Hierarchical mode only.
    pub(super) children: Vec<QueueId>,
    /// False for a queue cut off from `root` (hierarchical mode only).
    pub(super) attached: bool,
    pub(super) deserved: Resource,
    pub(super) usage: QueueUsage,
    /// Flat: the configured capability with unset cpu/memory unbounded, empty when none is
    /// configured. Hierarchical: the configured capability after inheriting from the parent.
    pub(super) capability: Resource,
    pub(super) real_capability: Resource,
    pub(super) guarantee: Resource,
}

impl QueueAttr {
    /// A flat-mode record (§5.3) before usage is added and deserved is bounded.
    pub(super) fn flat(
        spec: &QueueSpec,
        total: &Resource,
        total_guarantee: &Resource,
    ) -> QueueAttr {
        let capability = spec.capability.as_ref().map(fairness::widen_capability);
        let guarantee = spec.guarantee.clone().unwrap_or_default();
        let real_capability =
            fairness::real_capability(total, total_guarantee, &guarantee, capability.as_ref());
        QueueAttr {
            attached: true,
            deserved: spec.deserved.clone().unwrap_or_default(),
            capability: capability.unwrap_or_default(),
            real_capability,
            guarantee,
            ..QueueAttr::default()
        }
    }

    /// A hierarchical-mode record (`newQueueAttr`, §5.4): the spec as written, no real
    /// capability until the tree is walked.
    pub(super) fn hierarchical(spec: &QueueSpec) -> QueueAttr {
        QueueAttr {
            deserved: spec.deserved.clone().unwrap_or_default(),
            capability: spec.capability.clone().unwrap_or_default(),
            guarantee: spec.guarantee.clone().unwrap_or_default(),
            ..QueueAttr::default()
        }
    }

    /// §5.3: `deserved = max(min(spec.deserved, realCapability), guarantee)`; deserved scalars
    /// the real capability does not name are kept (`Infinity`). The request plays no part.
    pub(super) fn settle_flat_deserved(&mut self) {
        self.deserved
            .min_dimension_resource(&self.real_capability, DimensionDefault::Infinity);
        self.deserved = max_resource(&self.deserved, &self.guarantee);
        self.update_share();
    }

    /// §5.5: a queue without deserved is best-effort and always has share 1.
    pub(super) fn update_share(&mut self) {
        self.share = if self.deserved.is_empty() {
            1.0
        } else {
            fairness::queue_share(&self.usage.allocated, &self.deserved)
        };
    }

    pub(super) fn has_deserved(&self) -> bool {
        !self.deserved.is_empty()
    }

    pub(super) fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    /// §5.7 `queueAllocatable`: `allocated + request ≤ realCapability` on the dimensions the
    /// request asks for (strictly, `pods` excluded).
    pub(super) fn fits(&self, request: &Resource) -> bool {
        let mut future = self.usage.allocated.clone();
        future.add(request);
        future.less_equal_with_dimension(&self.real_capability, request)
    }

    /// §5.9: after adding `request`, some requested dimension is still within deserved
    /// (with ε), leaving out requested dimensions where usage and deserved are both below ε.
    pub(super) fn within_deserved_somewhere(&self, request: &Resource) -> bool {
        let mut future = self.usage.allocated.clone();
        future.add(request);
        future
            .less_equal_partly_with_dimension_zero_filtered(&self.deserved, Some(request))
            .0
    }

    /// The ancestor `depth` levels up (parent = 1).
    pub(super) fn ancestor_at_depth(&self, depth: usize) -> Option<QueueId> {
        if depth == 0 {
            return None;
        }
        let len = self.ancestors.len();
        len.checked_sub(depth).map(|i| self.ancestors[i])
    }
}

/// §5.5 `compareShareWithDeserved`: the smaller share first; on equal shares a queue with
/// deserved goes before a best-effort one.
pub(super) fn compare_share_with_deserved(l: &QueueAttr, r: &QueueAttr) -> Ordering {
    if l.share == r.share {
        return match (l.has_deserved(), r.has_deserved()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => Ordering::Equal,
        };
    }
    fairness::compare_shares(l.share, r.share)
}

/// §5.6 `getQueueLevel`: the index of the deepest common ancestor of two root-first ancestor
/// lists (0 when they share none or either list is empty).
pub(super) fn queue_level(l: &[QueueId], r: &[QueueId]) -> usize {
    let mut level = 0;
    for (i, (a, b)) in l.iter().zip(r).enumerate() {
        if a != b {
            break;
        }
        level = i;
    }
    level
}

/// Whether a request asks for any dimension deserved names (both ≥ ε, `pods` included).
pub(super) fn has_relevant_deserved(request: &Resource, deserved: &Resource) -> bool {
    !intersection_names(request, deserved, false).is_empty()
}

/// A capability as a child inherits it (§5.4): unset cpu and memory, and scalars the child does
/// not name, come from the parent.
pub(super) fn inherit_capability(child: &mut Resource, parent: &Resource) {
    if child.milli_cpu <= 0.0 {
        child.milli_cpu = parent.milli_cpu;
    }
    if child.memory <= 0.0 {
        child.memory = parent.memory;
    }
    for (name, value) in parent.scalars.iter() {
        if !child.scalars.contains(name) {
            child.scalars.set(name, value);
        }
    }
}

/// `root`'s capability when none is configured: unlimited, including every scalar the cluster
/// offers (§5.4).
pub(super) fn unlimited_root_capability(total: &Resource) -> Resource {
    let mut unlimited = Resource::infinite();
    for (name, _) in total.scalars.iter() {
        unlimited.set_scalar(name, i64::MAX as f64);
    }
    unlimited
}
