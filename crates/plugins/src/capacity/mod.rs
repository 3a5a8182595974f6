//! `capacity`: queue quotas the user writes down — `spec.deserved`, `spec.capability`,
//! `spec.guarantee` — for a flat set of queues or for a tree of queues (spec/plugins-core.md §5).
//!
//! Unlike `proportion`, nothing is water-filled: every queue's figures follow from its own spec.
//!
//! * **Flat mode** (§5.3): queues that have a job this session get an attribute record with
//!   `realCapability = min(capability, max(0, total − Σ guarantees) + guarantee)` and
//!   `deserved = max(min(spec.deserved, realCapability), guarantee)`.
//! * **Hierarchical mode** (`enableHierarchy: true` on the first `capacity` option, §5.4): every
//!   queue gets a record, linked to its parent (`spec.parent`, empty meaning `root`). Usage rolls
//!   up to every ancestor; capabilities are inherited downwards; a child's real capability is its
//!   parent's minus the guarantees of the parent's children plus its own guarantee, bounded by
//!   its capability; deserved is `max(spec.deserved, guarantee)` (root: the sum of its
//!   children's). Jobs must live in leaf queues and pass the checks of every queue from the leaf
//!   up to `root`.
//!
//! Registered points: queue order (§5.5, §5.6; hierarchical: only when the tree is usable),
//! victim queue order (hierarchical, same condition), `Allocatable` against the real capability
//! (§5.7), `JobEnqueueable`/`JobEnqueued` (§5.8), `Preemptive` (§5.9), `Reclaimable` with
//! task-level victims (§5.10) and the allocate/deallocate handlers (§5.13). No `Overused` is
//! registered, as in Volcano. The engine asks `Preemptive` about one reclaimer task at a time,
//! so the "sum of the candidate tasks" of §5.9 is that task's request. At close (§5.16) the
//! queue figures go to the session's queue metrics (`volcano_queue_*`, with
//! `overused = share > 1`); Volcano updates its gauges as it goes, the engine publishes them
//! once per session. Rejected enqueue votes become PodGroup events ("queue resource quota
//! insufficient: …") at close, since a vote only reads the session.
//!
//! **Queue tree problems** (§5.4, §5.17). Volcano stops scheduling altogether when a parent is
//! missing or the parent links loop. Here the problem is reported instead — a Warning event on
//! each offending queue (reason `InvalidQueueHierarchy`) and a warning in the log — and only the
//! queues cut off from `root` (the offending queues and their descendants) are taken out: their
//! jobs are refused exactly as Volcano refuses every job when its tree is broken (`Allocatable`
//! and `Preemptive` false, `JobEnqueueable` and `Reclaimable` Reject, their tasks are never
//! reclaim victims; a refused enqueue says so on the PodGroup), the queue order puts them after
//! the connected queues, and the queues still connected to `root` schedule normally. Limits that
//! contradict the parent's — a child capability above the parent's, children's deserved or
//! guarantees summing above the parent's — are only logged by Volcano and keep following the
//! formulas; they are reported as Warning events (reason `QueueQuotaExceedsParent`) and change
//! nothing else. A job placed in a queue that has children is a problem of the job, not of the
//! tree: as in Volcano (spec test C-13) it makes the plugin refuse everything for the cycle; the
//! queue gets an `InvalidQueueHierarchy` event naming the job.
//!
//! Not available in this engine, so not registered:
//! * `UnifiedEvictableFn` (§5.11) and the `Simulate*` functions (§5.12): the plugin interface has
//!   no gang-aware eviction point and no topology-aware preemption dry run. `PrePredicateFn` only
//!   snapshots the queue figures for those simulate functions and never fails, so leaving it out
//!   changes no decision.
//! * DRA device-class quotas (§5.14): the engine does not model ResourceClaims. Setting
//!   `capacity.DynamicResourceAllocationEnable` or `capacity.DRAConsumableCapacityEnable` to true
//!   logs a warning (once per process).
//! * The queue-allocation reservation cache (§5.15) belongs to Volcano's alpha feature gate
//!   `SchedulingGatesQueueAdmission`, off by default; the engine has no such gate, so the plugin
//!   behaves as Volcano with the gate off.
//!
//! `Reclaimable` walks the candidates in the order it is given. Volcano re-sorts them inside the
//! plugin with the framework's victim ordering (§5.10); the engine's plugin interface offers no
//! access to that ordering, so a reclaim action must hand the candidates over in victim order.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use engine::conf::{ArgWarning, Arguments};
use engine::framework::{ABSTAIN, ExtensionPoints, PERMIT, Plugin, REJECT, SessionState};
use engine::model::resource::{DimensionDefault, exceeded_part, intersection_names, max_resource};
use engine::model::{JobId, QueueId, Resource, TaskId};

use crate::fairness::{self, QueueUsage};

mod attr;
mod tree;

use attr::*;
use tree::*;

/// Registered plugin name.
pub const NAME: &str = "capacity";

/// Ancestor levels also checked during reclaim in hierarchical mode (§5.1).
const ANCESTOR_RECLAIM_LEVEL: &str = "ancestorReclaimLevel";
/// DRA quota switches (§5.1, §5.14); read only to say they are not supported.
const DRA_ENABLE: &str = "capacity.DynamicResourceAllocationEnable";
const DRA_CONSUMABLE_CAPACITY_ENABLE: &str = "capacity.DRAConsumableCapacityEnable";

/// Event reason for a queue cut off from the tree, or a job in a non-leaf queue.
const REASON_INVALID_HIERARCHY: &str = "InvalidQueueHierarchy";
/// Event reason for limits that contradict the parent's (reported, not enforced).
const REASON_EXCEEDS_PARENT: &str = "QueueQuotaExceedsParent";

/// Builds the plugin from its arguments (§5.1).
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(Capacity::from_arguments(args))
}

/// Logs once per process that the DRA quota switches have no effect here.
fn warn_unsupported_dra(args: &Arguments) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    for key in [DRA_ENABLE, DRA_CONSUMABLE_CAPACITY_ENABLE] {
        let mut on = false;
        match args.get_bool(key, &mut on) {
            Err(e) => tracing::warn!(plugin = NAME, key, error = %e, "argument ignored"),
            Ok(true) if on && !WARNED.swap(true, AtomicOrdering::Relaxed) => tracing::warn!(
                plugin = NAME,
                key,
                "DRA device-class quotas are not enforced: volcano-rs does not model ResourceClaims"
            ),
            Ok(_) => {}
        }
    }
}

/// The plugin instance of one session.
#[derive(Debug, Default)]
pub struct Capacity {
    /// `ancestorReclaimLevel` (§5.1).
    ancestor_reclaim_level: usize,
    hierarchical: bool,
    /// False when a job sits in a non-leaf queue: the plugin then refuses everything (§5.4).
    ready: bool,
    root: Option<QueueId>,
    /// Indexed by `QueueId`. Flat mode: queues with a job; hierarchical mode: every queue.
    attrs: Vec<Option<QueueAttr>>,
    rejections: fairness::EnqueueRejections,
}

/// The problems of the reclaim level, for the configuration parser.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    read_ancestor_reclaim_level(args, &mut warnings);
    warnings
}

/// The ancestor reclaim level; a negative one counts as 0.
fn read_ancestor_reclaim_level(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> usize {
    let mut level: i64 = 0;
    if let Err(e) = args.get_int(ANCESTOR_RECLAIM_LEVEL, &mut level) {
        warnings.push(ArgWarning::new(
            ANCESTOR_RECLAIM_LEVEL,
            format!("{}; the default 0 is used", e.message),
        ));
    }
    usize::try_from(level).unwrap_or_else(|_| {
        warnings.push(ArgWarning::new(
            ANCESTOR_RECLAIM_LEVEL,
            format!("{level} is negative; 0 is used"),
        ));
        0
    })
}

impl Capacity {
    fn from_arguments(args: &Arguments) -> Capacity {
        let ancestor_reclaim_level = read_ancestor_reclaim_level(args, &mut Vec::new());
        warn_unsupported_dra(args);
        Capacity {
            ancestor_reclaim_level,
            ready: true,
            ..Capacity::default()
        }
    }

    fn attr(&self, queue: QueueId) -> Option<&QueueAttr> {
        self.attrs.get(queue.index())?.as_ref()
    }

    fn attr_mut(&mut self, queue: QueueId) -> Option<&mut QueueAttr> {
        self.attrs.get_mut(queue.index())?.as_mut()
    }

    /// Whether the queue takes part in scheduling: it has a record and, in hierarchical mode,
    /// is connected to `root`.
    fn usable(&self, queue: QueueId) -> Option<&QueueAttr> {
        self.attr(queue).filter(|a| a.attached)
    }

    /// The queue, then its ancestors up to `root` (flat mode: the queue alone).
    fn leaf_to_root(&self, queue: QueueId) -> Vec<QueueId> {
        let mut chain = vec![queue];
        if let Some(a) = self.attr(queue) {
            chain.extend(a.ancestors.iter().rev());
        }
        chain
    }

    // ---- open -----------------------------------------------------------------------------

    /// §5.3.
    fn build_flat(&mut self, ssn: &SessionState) {
        let total = ssn.total_resource();
        let total_guarantee = fairness::total_guarantee(ssn);
        let mut attrs: Vec<Option<QueueAttr>> = vec![None; ssn.queues().len()];
        for job in ssn.job_ids() {
            let Some(queue) = ssn.job(job).queue else {
                continue;
            };
            let Some(slot) = attrs.get_mut(queue.index()) else {
                continue;
            };
            slot.get_or_insert_with(|| {
                QueueAttr::flat(&ssn.queue(queue).spec, total, &total_guarantee)
            })
            .usage
            .add_job(ssn, job);
        }
        for attr in attrs.iter_mut().flatten() {
            attr.settle_flat_deserved();
        }
        self.attrs = attrs;
    }

    /// §5.4. Returns the problems to report.
    fn build_hierarchy(&mut self, ssn: &SessionState) -> Vec<TreeProblem> {
        let tree = QueueTree::resolve(ssn);
        let mut problems = tree.problems;
        self.root = tree.root;
        self.attrs = ssn
            .queue_ids()
            .map(|q| {
                let mut attr = QueueAttr::hierarchical(&ssn.queue(q).spec);
                if let Some(ancestors) = &tree.ancestors[q.index()] {
                    attr.attached = true;
                    attr.ancestors = ancestors.clone();
                    attr.children = tree.children[q.index()].clone();
                }
                Some(attr)
            })
            .collect();

        let mut reported_non_leaf = vec![false; ssn.queues().len()];
        for job in ssn.job_ids() {
            let Some(queue) = ssn.job(job).queue else {
                continue;
            };
            let Some(attr) = self.attr(queue) else {
                continue;
            };
            if attr.attached && !attr.is_leaf() {
                self.ready = false;
                if !std::mem::replace(&mut reported_non_leaf[queue.index()], true) {
                    problems.push(TreeProblem {
                        queue,
                        reason: REASON_INVALID_HIERARCHY,
                        message: format!(
                            "job {} is in queue {:?}, which has child queues; jobs must be in leaf queues, so the capacity plugin schedules nothing this cycle",
                            ssn.job(job).spec.uid,
                            ssn.queue(queue).name()
                        ),
                    });
                }
            }
            let usage = QueueUsage::of_job(ssn, job);
            for q in self.leaf_to_root(queue) {
                if let Some(a) = self.attr_mut(q) {
                    a.usage.add(&usage);
                }
            }
        }

        if let Some(root) = tree.root
            && let Some(a) = self.attr_mut(root)
        {
            if a.capability.is_empty() {
                a.capability = unlimited_root_capability(ssn.total_resource());
            }
            a.real_capability = a.capability.clone();
        }
        for &parent in &tree.order {
            self.settle_children(ssn, parent, &mut problems);
        }
        for attr in self.attrs.iter_mut().flatten() {
            attr.update_share();
        }
        problems
    }

    /// `checkHierarchicalQueue` for one parent (§5.4): raise the children's deserved to their
    /// guarantees, let them inherit the parent's capability, derive their real capabilities, and
    /// report limits that contradict the parent's. Parents are settled before their children.
    fn settle_children(
        &mut self,
        ssn: &SessionState,
        parent: QueueId,
        problems: &mut Vec<TreeProblem>,
    ) {
        let Some(p) = self.attr(parent) else {
            return;
        };
        let children = p.children.clone();
        if children.is_empty() {
            return;
        }
        let parent_capability = p.capability.clone();
        let parent_name = ssn.queue(parent).name();
        let mut sum_deserved = Resource::empty();
        let mut sum_guarantee = Resource::empty();
        for &c in &children {
            let Some(child) = self.attr_mut(c) else {
                continue;
            };
            child.deserved = max_resource(&child.deserved, &child.guarantee);
            sum_deserved.add(&child.deserved);
            sum_guarantee.add(&child.guarantee);
            inherit_capability(&mut child.capability, &parent_capability);
            let (exceeds, names) = child
                .capability
                .greater_partly(&parent_capability, DimensionDefault::Infinity);
            if exceeds {
                problems.push(TreeProblem {
                    queue: c,
                    reason: REASON_EXCEEDS_PARENT,
                    message: format!(
                        "capability of queue {:?} ({}) exceeds the capability of its parent queue {parent_name:?} ({}) on {}; the parent's limit still applies",
                        ssn.queue(c).name(),
                        child.capability,
                        parent_capability,
                        names.join(", ")
                    ),
                });
            }
        }

        let is_root = Some(parent) == self.root;
        let Some(p) = self.attr_mut(parent) else {
            return;
        };
        if is_root {
            p.guarantee = sum_guarantee.clone();
            p.deserved = sum_deserved.clone();
        }
        let parent_real = p.real_capability.clone();
        let parent_deserved = p.deserved.clone();
        let parent_guarantee = p.guarantee.clone();
        let shared = exceeded_part(Some(&parent_real), Some(&sum_guarantee));
        for &c in &children {
            if let Some(child) = self.attr_mut(c) {
                let mut real = shared.clone();
                real.add(&child.guarantee);
                real.min_dimension_resource(&child.capability, DimensionDefault::Infinity);
                child.real_capability = real;
            }
        }

        if parent_deserved.less_partly(&sum_deserved, DimensionDefault::Zero) {
            problems.push(TreeProblem {
                queue: parent,
                reason: REASON_EXCEEDS_PARENT,
                message: format!(
                    "the deserved resources of the child queues of queue {parent_name:?} sum to ({sum_deserved}), above its own deserved ({parent_deserved})"
                ),
            });
        }
        if parent_guarantee.less_partly(&sum_guarantee, DimensionDefault::Zero) {
            problems.push(TreeProblem {
                queue: parent,
                reason: REASON_EXCEEDS_PARENT,
                message: format!(
                    "the guarantees of the child queues of queue {parent_name:?} sum to ({sum_guarantee}), above its own guarantee ({parent_guarantee}); not all of them can be honoured"
                ),
            });
        }
    }

    // ---- checks -----------------------------------------------------------------------------

    /// §5.7 without the queue-state check: a leaf (hierarchical) whose every level from the leaf
    /// up to `root` stays within its real capability with `request` added.
    fn allocatable_request(&self, queue: QueueId, request: &Resource) -> bool {
        if !self.ready {
            return false;
        }
        let Some(attr) = self.usable(queue) else {
            return false;
        };
        if self.hierarchical && !attr.is_leaf() {
            return false;
        }
        self.leaf_to_root(queue).into_iter().all(|q| {
            let fits = self.attr(q).is_some_and(|a| a.fits(request));
            if !fits {
                tracing::debug!(queue = q.0, %request, "capacity: request exceeds the real capability");
            }
            fits
        })
    }

    /// §5.9 without the queue-state check: the queue may reclaim for `request` if it would stay
    /// within its real capability and some requested dimension would still be within deserved —
    /// its own, or (hierarchical, `ancestorReclaimLevel` > 0) that of a non-root ancestor within
    /// that many levels.
    fn preemptive_request(&self, queue: QueueId, request: &Resource) -> bool {
        if !self.ready {
            return false;
        }
        let Some(attr) = self.usable(queue) else {
            return false;
        };
        if !attr.fits(request) {
            return false;
        }
        if attr.within_deserved_somewhere(request) {
            return true;
        }
        if !self.hierarchical {
            return false;
        }
        (1..=self.ancestor_reclaim_level).any(|depth| {
            attr.ancestor_at_depth(depth)
                .filter(|&a| Some(a) != self.root)
                .and_then(|a| self.attr(a))
                .is_some_and(|a| a.within_deserved_somewhere(request))
        })
    }

    /// §5.8 without the state and leaf checks: `Err` names the first queue from the leaf up whose
    /// real capability the job's minimum would overflow, with the insufficient resources.
    fn enqueue_check(&self, queue: QueueId, min: &Resource) -> Result<(), (QueueId, Vec<String>)> {
        for q in self.leaf_to_root(queue) {
            let Some(a) = self.attr(q) else {
                return Err((q, Vec::new()));
            };
            let u = &a.usage;
            fairness::enqueue_fits(
                min,
                &u.allocated,
                &u.inqueue,
                &u.elastic,
                &a.real_capability,
            )
            .map_err(|names| (q, names))?;
        }
        Ok(())
    }

    /// Whether the two queues share a non-root ancestor within `ancestorReclaimLevel` levels.
    fn share_ancestor_within_level(&self, l: &QueueAttr, r: &QueueAttr) -> bool {
        let level = self.ancestor_reclaim_level;
        let near = |a: &QueueAttr| -> Vec<QueueId> {
            (1..=level)
                .filter_map(|d| a.ancestor_at_depth(d))
                .filter(|&q| Some(q) != self.root)
                .collect()
        };
        let r_near = near(r);
        near(l).iter().any(|q| r_near.contains(q))
    }

    /// §5.10 on plain data: the reclaimer's queue and request, and the candidates as (task,
    /// queue, request) in victim order.
    fn select_victims(
        &self,
        reclaimer_queue: Option<QueueId>,
        reclaimer_request: &Resource,
        candidates: &[(TaskId, Option<QueueId>, &Resource)],
    ) -> (Vec<TaskId>, i32) {
        if !self.ready {
            return (Vec::new(), REJECT);
        }
        let Some(reclaimer_attr) = reclaimer_queue.and_then(|q| self.usable(q)) else {
            return (Vec::new(), REJECT);
        };
        let hierarchy_levels = if self.hierarchical {
            self.ancestor_reclaim_level
        } else {
            0
        };
        // What each queue would still hold once the victims chosen so far are gone.
        let mut allocations: BTreeMap<QueueId, Resource> = BTreeMap::new();
        let mut victims = Vec::new();
        for &(task, queue, request) in candidates {
            let Some((queue, attr)) = queue.and_then(|q| self.usable(q).map(|a| (q, a))) else {
                continue;
            };
            // A candidate that frees nothing the reclaimer asks for is no help.
            if intersection_names(request, reclaimer_request, true).is_empty() {
                continue;
            }
            let allocated = allocations
                .entry(queue)
                .or_insert_with(|| attr.usage.allocated.clone());
            if !keeps_guarantee(&attr.guarantee, allocated, request) {
                continue;
            }
            let eligible = if !has_relevant_deserved(request, &attr.deserved) {
                // Nothing the victim's queue deserves is at stake: an immediate victim, unless
                // both queues sit under a common ancestor and the reclaimer's queue has no
                // deserved share of what it asks for either (no real contention there).
                !(hierarchy_levels > 0
                    && self.share_ancestor_within_level(reclaimer_attr, attr)
                    && !has_relevant_deserved(reclaimer_request, &reclaimer_attr.deserved))
            } else {
                allocated
                    .greater_partly_with_relevant_dimensions(&attr.deserved, request)
                    .0
            };
            if !eligible {
                continue;
            }
            let mut ancestors_charged = Vec::new();
            let mut ancestors_agree = true;
            for depth in 1..=hierarchy_levels {
                let Some(ancestor) = attr.ancestor_at_depth(depth) else {
                    continue;
                };
                if Some(ancestor) == self.root
                    || reclaimer_attr.ancestor_at_depth(depth) == Some(ancestor)
                {
                    continue;
                }
                let Some(ancestor_attr) = self.attr(ancestor) else {
                    ancestors_agree = false;
                    break;
                };
                let ancestor_allocated = allocations
                    .entry(ancestor)
                    .or_insert_with(|| ancestor_attr.usage.allocated.clone());
                ancestors_charged.push(ancestor);
                if !has_relevant_deserved(request, &ancestor_attr.deserved) {
                    continue;
                }
                if !ancestor_allocated
                    .greater_partly_with_relevant_dimensions(&ancestor_attr.deserved, request)
                    .0
                {
                    ancestors_agree = false;
                    break;
                }
            }
            if !ancestors_agree {
                continue;
            }
            for q in std::iter::once(queue).chain(ancestors_charged) {
                if let Some(a) = allocations.get_mut(&q) {
                    a.sub(request);
                }
            }
            victims.push(task);
        }
        (victims, PERMIT)
    }

    // ---- events and close -------------------------------------------------------------------

    /// §5.13: the queue's allocation and share, and (hierarchical) its ancestors' allocations;
    /// ancestors' shares are left as they were, as in Volcano.
    fn on_event(&mut self, ssn: &SessionState, task: TaskId, allocate: bool) {
        let Some(queue) = ssn.queue_of_task(task) else {
            tracing::warn!(
                task = ssn.task(task).key(),
                "capacity: event for a task without a job, ignored"
            );
            return;
        };
        let request = ssn.task(task).resreq();
        let Some(attr) = self.attr_mut(queue) else {
            tracing::warn!(
                task = ssn.task(task).key(),
                "capacity: event for a queue it does not track, ignored"
            );
            return;
        };
        let update = |r: &mut Resource| {
            if allocate {
                r.add(request);
            } else {
                r.sub(request);
            }
        };
        update(&mut attr.usage.allocated);
        attr.update_share();
        for ancestor in attr.ancestors.clone() {
            if let Some(a) = self.attr_mut(ancestor) {
                update(&mut a.usage.allocated);
            }
        }
    }

    /// §5.16: the figures of every queue for the `volcano_queue_*` metrics.
    fn publish_metrics(&self, ssn: &mut SessionState) {
        let total = ssn.total_resource().clone();
        let total_guarantee = fairness::total_guarantee(ssn);
        for q in ssn.queue_ids().collect::<Vec<_>>() {
            let spec = ssn.queue(q).spec.clone();
            let m = ssn.queue_metrics_mut(q);
            match self.attr(q) {
                Some(a) => {
                    m.allocated = a.usage.allocated.clone();
                    m.request = a.usage.request.clone();
                    m.inqueue = Some(a.usage.inqueue.clone());
                    m.deserved = Some(a.deserved.clone());
                    m.capability = Some(a.capability.clone());
                    m.real_capability = Some(a.real_capability.clone());
                    m.share = Some(a.share);
                    m.overused = Some(a.share > 1.0);
                }
                // Flat mode, a queue without jobs: its spec as configured; the real capability
                // is recomputed from the raw capability (unset cpu/memory read as 0 there).
                None => {
                    m.allocated = Resource::empty();
                    m.request = Resource::empty();
                    m.inqueue = Some(Resource::empty());
                    m.deserved = Some(spec.deserved.clone().unwrap_or_default());
                    m.capability = spec.capability.clone();
                    let guarantee = spec.guarantee.clone().unwrap_or_default();
                    m.real_capability = Some(fairness::real_capability(
                        &total,
                        &total_guarantee,
                        &guarantee,
                        spec.capability.as_ref(),
                    ));
                }
            }
        }
    }
}

impl Plugin for Capacity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.hierarchical = ssn.hierarchy_enabled(NAME);
        if self.hierarchical {
            let problems = self.build_hierarchy(ssn);
            report_problems(ssn, problems);
        } else {
            self.build_flat(ssn);
        }
        for (i, a) in self.attrs.iter().enumerate() {
            if let Some(a) = a {
                tracing::debug!(
                    queue = ssn.queues()[i].name(),
                    deserved = %a.deserved,
                    capability = %a.capability,
                    real_capability = %a.real_capability,
                    allocated = %a.usage.allocated,
                    request = %a.usage.request,
                    inqueue = %a.usage.inqueue,
                    elastic = %a.usage.elastic,
                    share = a.share,
                    "capacity: queue attributes"
                );
            }
        }
    }

    fn on_session_close(&mut self, ssn: &mut SessionState) {
        self.publish_metrics(ssn);
        self.rejections.emit(ssn);
        self.attrs.clear();
    }

    fn extension_points(&self) -> ExtensionPoints {
        let mut points = ExtensionPoints::RECLAIMABLE
            | ExtensionPoints::UNIFIED_EVICTABLE
            | ExtensionPoints::PREEMPTIVE
            | ExtensionPoints::ALLOCATABLE
            | ExtensionPoints::JOB_ENQUEUEABLE
            | ExtensionPoints::JOB_ENQUEUED
            | ExtensionPoints::EVENT_HANDLER;
        // Hierarchical orders only exist for a tree whose jobs all sit in leaves.
        if !self.hierarchical || self.ready {
            points = points | ExtensionPoints::QUEUE_ORDER;
        }
        if self.hierarchical && self.ready {
            points = points | ExtensionPoints::VICTIM_QUEUE_ORDER;
        }
        points
    }

    /// Queue orders depend on the queue tree being usable (and hierarchical for the victim
    /// queue order).
    fn possible_extension_points(&self) -> ExtensionPoints {
        self.extension_points() | ExtensionPoints::QUEUE_ORDER | ExtensionPoints::VICTIM_QUEUE_ORDER
    }

    /// §5.6. Flat: higher priority, then share. Hierarchical: higher priority, then queues
    /// connected to `root`, then leaves; two leaves compare through their ancestors one level
    /// below their deepest common ancestor.
    fn queue_order(&self, ssn: &SessionState, l: QueueId, r: QueueId) -> Ordering {
        let (lp, rp) = (ssn.queue(l).spec.priority, ssn.queue(r).spec.priority);
        if lp != rp {
            return rp.cmp(&lp);
        }
        let (Some(la), Some(ra)) = (self.attr(l), self.attr(r)) else {
            return Ordering::Equal;
        };
        if !self.hierarchical {
            return compare_share_with_deserved(la, ra);
        }
        if la.attached != ra.attached {
            return if la.attached {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        match (la.is_leaf(), ra.is_leaf()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => compare_share_with_deserved(la, ra),
            (true, true) => {
                let level = queue_level(&la.ancestors, &ra.ancestors);
                let lq = la.ancestors.get(level + 1).copied().unwrap_or(l);
                let rq = ra.ancestors.get(level + 1).copied().unwrap_or(r);
                match (self.attr(lq), self.attr(rq)) {
                    (Some(a), Some(b)) => compare_share_with_deserved(a, b),
                    _ => Ordering::Equal,
                }
            }
        }
    }

    /// §5.6: the queue sharing a deeper ancestor with the preemptor's queue gives up tasks
    /// first.
    fn victim_queue_order(
        &self,
        _ssn: &SessionState,
        l: QueueId,
        r: QueueId,
        preemptor: QueueId,
    ) -> Ordering {
        let ancestors = |q: QueueId| self.attr(q).map_or(&[][..], |a| a.ancestors.as_slice());
        let p = ancestors(preemptor);
        let lv = queue_level(ancestors(l), p);
        let rv = queue_level(ancestors(r), p);
        rv.cmp(&lv)
    }

    fn reclaimable(
        &self,
        ssn: &SessionState,
        reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        let candidates: Vec<(TaskId, Option<QueueId>, &Resource)> = candidates
            .iter()
            .map(|&t| (t, ssn.queue_of_task(t), ssn.task(t).resreq()))
            .collect();
        let (victims, vote) = self.select_victims(
            ssn.queue_of_task(reclaimer),
            ssn.task(reclaimer).resreq(),
            &candidates,
        );
        tracing::debug!(
            reclaimer = ssn.task(reclaimer).key(),
            victims = victims.len(),
            vote,
            "capacity: reclaim victims"
        );
        (victims, vote)
    }

    /// Gang preemption stays in one queue: every candidate. Gang reclaim: walking the
    /// candidates in order, a task may go while its queue keeps its guarantee and, where the
    /// queue deserves what the task holds, stays above its deserved share.
    fn unified_evictable(
        &self,
        ssn: &SessionState,
        ctx: &engine::framework::EvictionContext,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        if ctx.kind == engine::framework::EvictionKind::GangPreempt {
            return (candidates.to_vec(), PERMIT);
        }
        if !self.ready {
            return (Vec::new(), REJECT);
        }
        let mut allocations: BTreeMap<QueueId, Resource> = BTreeMap::new();
        let mut victims = Vec::new();
        for &task in candidates {
            let Some((queue, attr)) = ssn
                .queue_of_task(task)
                .and_then(|q| self.usable(q).map(|a| (q, a)))
            else {
                continue;
            };
            let request = ssn.task(task).resreq();
            let allocated = allocations
                .entry(queue)
                .or_insert_with(|| attr.usage.allocated.clone());
            if !keeps_guarantee(&attr.guarantee, allocated, request) {
                continue;
            }
            let eligible = !has_relevant_deserved(request, &attr.deserved)
                || allocated
                    .greater_partly_with_relevant_dimensions(&attr.deserved, request)
                    .0;
            if eligible {
                allocated.sub(request);
                victims.push(task);
            }
        }
        (victims, PERMIT)
    }

    fn allocatable(&self, ssn: &SessionState, queue: QueueId, task: TaskId) -> bool {
        let spec = &ssn.queue(queue).spec;
        if !spec.is_open() {
            tracing::debug!(queue = %spec.name, state = %spec.state, "capacity: queue is not open, cannot allocate");
            return false;
        }
        self.allocatable_request(queue, ssn.task(task).resreq())
    }

    fn preemptive(&self, ssn: &SessionState, queue: QueueId, request: &Resource) -> bool {
        let spec = &ssn.queue(queue).spec;
        if !spec.is_open() {
            tracing::debug!(queue = %spec.name, state = %spec.state, "capacity: queue is not open, cannot reclaim");
            return false;
        }
        self.preemptive_request(queue, request)
    }

    /// §5.8. A quota rejection, or a queue cut off from the tree, is reported on the PodGroup.
    fn enqueue_rejection(&self, _ssn: &SessionState, job: JobId) -> Option<String> {
        self.rejections.message_for(job)
    }

    fn job_enqueueable(&self, ssn: &SessionState, job_id: JobId) -> i32 {
        if !self.ready {
            return REJECT;
        }
        let job = ssn.job(job_id);
        let Some(queue) = job.queue else {
            return ABSTAIN;
        };
        let spec = &ssn.queue(queue).spec;
        let Some(attr) = self.attr(queue) else {
            tracing::warn!(queue = %spec.name, job = %job.spec.uid, "capacity: job of an untracked queue, no opinion");
            return ABSTAIN;
        };
        if !attr.attached {
            self.rejections.record(
                job_id,
                format!(
                    "queue {} is not connected to the root queue (see the queue's events)",
                    spec.name
                ),
            );
            return REJECT;
        }
        if self.hierarchical && !attr.is_leaf() {
            return REJECT;
        }
        if !spec.is_open() {
            tracing::debug!(queue = %spec.name, state = %spec.state, job = %job.spec.uid, "capacity: queue is not open, job rejected");
            self.rejections.record(
                job_id,
                fairness::queue_not_open_message(&spec.name, &spec.state),
            );
            return REJECT;
        }
        let Some(min) = &job.spec.min_resources else {
            return PERMIT;
        };
        match self.enqueue_check(queue, min) {
            Ok(()) => PERMIT,
            Err((at, names)) => {
                let message = fairness::quota_insufficient_message(&names);
                tracing::debug!(job = %job.spec.uid, queue = %ssn.queue(at).name(), %message, "capacity: job rejected");
                self.rejections.record(job_id, message);
                REJECT
            }
        }
    }

    /// The admitted job's minimum (less gated tasks) is reserved in its queue and, in
    /// hierarchical mode, in every ancestor.
    fn job_enqueued(&mut self, ssn: &SessionState, job_id: JobId) {
        let job = ssn.job(job_id);
        let (Some(min), Some(queue)) = (&job.spec.min_resources, job.queue) else {
            return;
        };
        let reserved = job.deduct_sch_gated_resources(ssn.tasks(), min);
        let Some(attr) = self.attr_mut(queue) else {
            return;
        };
        attr.usage.inqueue.add(&reserved);
        for ancestor in attr.ancestors.clone() {
            if let Some(a) = self.attr_mut(ancestor) {
                a.usage.inqueue.add(&reserved);
            }
        }
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        self.on_event(ssn, task, true);
        Ok(())
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        self.on_event(ssn, task, false);
    }
}

#[cfg(test)]
mod tests;
