//! `proportion`: weighted fair sharing between flat queues (spec/plugins-core.md §4).
//!
//! At open (§4.3) every queue that has a job this session gets an attribute record: what it holds
//! (`allocated`), what its jobs ask for (`request`), what admitted jobs still reserve
//! (`inqueue`), what its jobs hold above their minimum (`elastic`), and its real capability
//! (capability bounded by the cluster total minus every queue's guarantee, plus its own). The
//! cluster total is then divided by weighted water-filling (§4.4) into each queue's `deserved`,
//! which drives the queue order (§4.5), overuse (§4.6), allocation admission (§4.7), reclaim
//! victims (§4.8) and, with the real capability, job enqueueing (§4.9). Allocate/deallocate
//! events keep `allocated` and the share current (§4.10); the figures are published through the
//! session's queue metrics at close.
//!
//! Not registered: `PrePredicateFn` and the three simulate functions of §4.7. They only feed the
//! topology-aware preemption dry run, which the engine's plugin interface does not offer yet.

use std::cmp::Ordering;

use engine::conf::Arguments;
use engine::framework::{ABSTAIN, ExtensionPoints, PERMIT, Plugin, REJECT, SessionState};
use engine::model::queue::QueueSpec;
use engine::model::resource::{DimensionDefault, exceeded_part, max_resource};
use engine::model::{JobId, QueueId, Resource, TaskId};

use crate::fairness::{
    self, EnqueueRejections, compare_shares, queue_share, quota_insufficient_message,
};

/// Registered plugin name.
pub const NAME: &str = "proportion";

/// Builds the plugin; `proportion` reads no arguments (§4.1).
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(Proportion::default())
}

/// Per-queue figures (`queueAttr`, §4.2).
#[derive(Clone, Debug, PartialEq)]
struct QueueAttr {
    queue: QueueId,
    weight: i32,
    share: f64,
    deserved: Resource,
    allocated: Resource,
    request: Resource,
    elastic: Resource,
    inqueue: Resource,
    /// `spec.capability` with cpu/memory ≤ 0 read as unbounded; `None` when the queue sets none.
    capability: Option<Resource>,
    real_capability: Resource,
    guarantee: Resource,
}

impl QueueAttr {
    fn from_spec(
        queue: QueueId,
        spec: &QueueSpec,
        total: &Resource,
        total_guarantee: &Resource,
    ) -> Self {
        Self::with_limits(
            queue,
            spec.weight,
            spec.capability.as_ref(),
            spec.guarantee.as_ref(),
            total,
            total_guarantee,
        )
    }

    /// An attribute with nothing allocated or requested yet; the real capability is
    /// `min(capability, max(0, total − Σ guarantees) + own guarantee)` with capability scalars
    /// the spec leaves out unbounded (§4.3).
    fn with_limits(
        queue: QueueId,
        weight: i32,
        capability: Option<&Resource>,
        guarantee: Option<&Resource>,
        total: &Resource,
        total_guarantee: &Resource,
    ) -> Self {
        let capability = capability.map(fairness::widen_capability);
        let guarantee = guarantee.cloned().unwrap_or_default();
        let real_capability =
            fairness::real_capability(total, total_guarantee, &guarantee, capability.as_ref());
        QueueAttr {
            queue,
            weight,
            share: 0.0,
            deserved: Resource::empty(),
            allocated: Resource::empty(),
            request: Resource::empty(),
            elastic: Resource::empty(),
            inqueue: Resource::empty(),
            capability,
            real_capability,
            guarantee,
        }
    }

    fn update_share(&mut self) {
        self.share = queue_share(&self.allocated, &self.deserved);
    }

    /// §4.6: allocated has reached deserved in every dimension deserved has (within ε).
    fn overused(&self) -> bool {
        self.deserved
            .less_equal(&self.allocated, DimensionDefault::Zero)
    }

    /// §4.7: `allocated + request ≤ deserved` on the dimensions the request asks for (`pods`
    /// excluded), strictly, without tolerance.
    fn fits(&self, request: &Resource) -> bool {
        let mut future = self.allocated.clone();
        future.add(request);
        future.less_equal_with_dimension(&self.deserved, request)
    }

    /// §4.9: `min + allocated + inqueue − elastic ≤ realCapability` on the dimensions `min`
    /// asks for; `Err` carries the insufficient resource names.
    fn enqueue_check(&self, min: &Resource) -> Result<(), Vec<String>> {
        fairness::enqueue_fits(
            min,
            &self.allocated,
            &self.inqueue,
            &self.elastic,
            &self.real_capability,
        )
    }

    /// Adds one job's contribution (§4.3).
    fn add_job(&mut self, ssn: &SessionState, job: JobId) {
        fairness::UsageSums {
            allocated: &mut self.allocated,
            request: &mut self.request,
            inqueue: &mut self.inqueue,
            elastic: &mut self.elastic,
        }
        .add_job(ssn, job);
    }
}

/// The deserved water-filling of §4.4, in place on every attribute's `deserved` and `share`.
/// Returns the number of rounds run.
///
/// Each round hands every unsatisfied queue its weight's fraction of what is left, caps it by
/// real capability (scalars it leaves out unbounded) and by request (scalars not requested
/// dropped), raises it to the guarantee, and retires the queue once its request is met or its
/// deserved stopped moving. Every queue of a round sees the same `remaining` and total weight,
/// so the order of `attrs` does not matter.
fn water_fill(total: &Resource, attrs: &mut [QueueAttr]) -> u32 {
    let mut remaining = total.clone();
    let mut meet = vec![false; attrs.len()];
    let mut rounds = 0;
    loop {
        // i64: Volcano sums in int32; weights are at most 65535, so this only differs on
        // overflow.
        let total_weight: i64 = attrs
            .iter()
            .zip(&meet)
            .filter(|&(_, &met)| !met)
            .map(|(a, _)| i64::from(a.weight))
            .sum();
        if total_weight == 0 {
            break;
        }
        rounds += 1;
        let old_remaining = remaining.clone();
        let mut increased = Resource::empty();
        let mut decreased = Resource::empty();
        for (attr, met) in attrs.iter_mut().zip(meet.iter_mut()) {
            if *met {
                continue;
            }
            let old_deserved = attr.deserved.clone();
            let mut portion = remaining.clone();
            portion.multi(f64::from(attr.weight) / total_weight as f64);
            attr.deserved.add(&portion);
            attr.deserved
                .min_dimension_resource(&attr.real_capability, DimensionDefault::Infinity);
            attr.deserved
                .min_dimension_resource(&attr.request, DimensionDefault::Zero);
            attr.deserved = max_resource(&attr.deserved, &attr.guarantee);
            attr.update_share();
            tracing::trace!(queue = attr.queue.0, deserved = %attr.deserved, "proportion: deserved updated");

            if attr
                .request
                .less_equal(&attr.deserved, DimensionDefault::Zero)
                || attr.deserved == old_deserved
            {
                *met = true;
            }
            let (inc, dec) = attr.deserved.diff(&old_deserved, DimensionDefault::Zero);
            increased.add(&inc);
            decreased.add(&dec);
        }
        remaining.add(&decreased);
        remaining = exceeded_part(Some(&remaining), Some(&increased));
        if remaining.is_empty() || remaining == old_remaining {
            break;
        }
    }
    rounds
}

/// The plugin instance of one session.
#[derive(Default)]
pub struct Proportion {
    /// Queues that have at least one job, in the order their first job was seen.
    attrs: Vec<QueueAttr>,
    /// `QueueId` index → position in `attrs`.
    index: Vec<Option<usize>>,
    /// PodGroup events of rejected enqueue votes, recorded at close.
    rejections: EnqueueRejections,
}

impl Proportion {
    fn attr(&self, queue: QueueId) -> Option<&QueueAttr> {
        let i = (*self.index.get(queue.index())?)?;
        self.attrs.get(i)
    }

    fn attr_mut(&mut self, queue: QueueId) -> Option<&mut QueueAttr> {
        let i = (*self.index.get(queue.index())?)?;
        self.attrs.get_mut(i)
    }

    /// §4.7, shared by `Allocatable` and `Preemptive`.
    fn queue_allocatable(&self, ssn: &SessionState, queue: QueueId, task: TaskId) -> bool {
        self.queue_admits(ssn, queue, ssn.task(task).resreq())
    }

    fn queue_admits(&self, ssn: &SessionState, queue: QueueId, request: &Resource) -> bool {
        let spec = &ssn.queue(queue).spec;
        if !spec.is_open() {
            tracing::debug!(queue = %spec.name, state = %spec.state, "proportion: queue is not open, cannot allocate");
            return false;
        }
        let Some(attr) = self.attr(queue) else {
            tracing::warn!(queue = %spec.name, "proportion: queue without jobs asked to allocate");
            return false;
        };
        let fits = attr.fits(request);
        if !fits {
            tracing::debug!(
                queue = %spec.name,
                deserved = %attr.deserved,
                allocated = %attr.allocated,
                request = %request,
                "proportion: task does not fit the queue's deserved share"
            );
        }
        fits
    }

    /// The shared body of the allocate and deallocate handlers (§4.10).
    fn on_event(&mut self, ssn: &SessionState, task: TaskId, allocate: bool) {
        let Some(queue) = ssn.queue_of_task(task) else {
            tracing::warn!(
                task = ssn.task(task).key(),
                "proportion: event for a task without a job, ignored"
            );
            return;
        };
        let Some(attr) = self.attr_mut(queue) else {
            tracing::warn!(
                task = ssn.task(task).key(),
                "proportion: event for a queue it does not track, ignored"
            );
            return;
        };
        let request = ssn.task(task).resreq();
        if allocate {
            attr.allocated.add(request);
        } else {
            attr.allocated.sub(request);
        }
        attr.update_share();
    }
}

impl Plugin for Proportion {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        let total = ssn.total_resource().clone();
        let total_guarantee = fairness::total_guarantee(ssn);

        let mut index: Vec<Option<usize>> = vec![None; ssn.queues().len()];
        let mut attrs: Vec<QueueAttr> = Vec::new();
        for job_id in ssn.job_ids() {
            let job = ssn.job(job_id);
            let Some(queue) = job.queue else { continue };
            let Some(slot) = index.get_mut(queue.index()) else {
                continue;
            };
            let i = *slot.get_or_insert_with(|| {
                attrs.push(QueueAttr::from_spec(
                    queue,
                    &ssn.queue(queue).spec,
                    &total,
                    &total_guarantee,
                ));
                attrs.len() - 1
            });
            attrs[i].add_job(ssn, job_id);
        }

        water_fill(&total, &mut attrs);
        for a in &attrs {
            tracing::debug!(
                queue = %ssn.queue(a.queue).spec.name,
                deserved = %a.deserved,
                real_capability = %a.real_capability,
                allocated = %a.allocated,
                request = %a.request,
                inqueue = %a.inqueue,
                elastic = %a.elastic,
                share = a.share,
                "proportion: queue attributes"
            );
        }
        self.attrs = attrs;
        self.index = index;
    }

    fn on_session_close(&mut self, ssn: &mut SessionState) {
        for q in ssn.queue_ids().collect::<Vec<_>>() {
            let m = ssn.queue_metrics_mut(q);
            match self.attr(q) {
                Some(a) => {
                    m.weight = a.weight;
                    m.allocated = a.allocated.clone();
                    m.request = a.request.clone();
                    m.deserved = Some(a.deserved.clone());
                    m.capability = a.capability.clone();
                    m.real_capability = Some(a.real_capability.clone());
                    m.inqueue = Some(a.inqueue.clone());
                    m.share = Some(a.share);
                    m.overused = Some(a.overused());
                }
                // Volcano zeroes allocated, request and inqueue of queues without jobs.
                None => {
                    m.allocated = Resource::empty();
                    m.request = Resource::empty();
                    m.inqueue = Some(Resource::empty());
                }
            }
        }
        self.rejections.emit(ssn);
        self.attrs.clear();
        self.index.clear();
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::QUEUE_ORDER
            | ExtensionPoints::RECLAIMABLE
            | ExtensionPoints::OVERUSED
            | ExtensionPoints::ALLOCATABLE
            | ExtensionPoints::PREEMPTIVE
            | ExtensionPoints::JOB_ENQUEUEABLE
            | ExtensionPoints::JOB_ENQUEUED
            | ExtensionPoints::EVENT_HANDLER
    }

    /// §4.5: higher `spec.priority` first, then the smaller share.
    fn queue_order(&self, ssn: &SessionState, l: QueueId, r: QueueId) -> Ordering {
        let (lp, rp) = (ssn.queue(l).spec.priority, ssn.queue(r).spec.priority);
        if lp != rp {
            return rp.cmp(&lp);
        }
        let share = |q| self.attr(q).map_or(0.0, |a| a.share);
        compare_shares(share(l), share(r))
    }

    /// §4.8: walking the candidates in order, take one while its queue (after the earlier
    /// victims of that queue left) still exceeds its deserved share in some dimension.
    fn reclaimable(
        &self,
        ssn: &SessionState,
        _reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        let mut allocations: Vec<(QueueId, Resource)> = Vec::new();
        let mut victims = Vec::new();
        for &candidate in candidates {
            let Some(queue) = ssn.queue_of_task(candidate) else {
                tracing::warn!(
                    task = ssn.task(candidate).key(),
                    "proportion: reclaimee without a job skipped"
                );
                continue;
            };
            let Some(attr) = self.attr(queue) else {
                tracing::warn!(
                    task = ssn.task(candidate).key(),
                    "proportion: reclaimee of an untracked queue skipped"
                );
                continue;
            };
            let pos = match allocations.iter().position(|(q, _)| *q == queue) {
                Some(p) => p,
                None => {
                    allocations.push((queue, attr.allocated.clone()));
                    allocations.len() - 1
                }
            };
            let allocated = &mut allocations[pos].1;
            if !allocated.less_equal(&attr.deserved, DimensionDefault::Zero) {
                allocated.sub(ssn.task(candidate).resreq());
                victims.push(candidate);
            }
        }
        (victims, PERMIT)
    }

    fn overused(&self, ssn: &SessionState, queue: QueueId) -> bool {
        let Some(attr) = self.attr(queue) else {
            return false;
        };
        let overused = attr.overused();
        if overused {
            tracing::debug!(
                queue = %ssn.queue(queue).spec.name,
                deserved = %attr.deserved,
                allocated = %attr.allocated,
                share = attr.share,
                "proportion: queue is overused"
            );
        }
        overused
    }

    fn allocatable(&self, ssn: &SessionState, queue: QueueId, task: TaskId) -> bool {
        self.queue_allocatable(ssn, queue, task)
    }

    /// Used by reclaim: the reclaimer's queue must stay within its deserved share.
    fn preemptive(&self, ssn: &SessionState, queue: QueueId, request: &Resource) -> bool {
        self.queue_admits(ssn, queue, request)
    }

    /// §4.9. A rejection for lack of quota is reported on the PodGroup.
    fn enqueue_rejection(&self, _ssn: &SessionState, job: JobId) -> Option<String> {
        self.rejections.message_for(job)
    }

    fn job_enqueueable(&self, ssn: &SessionState, job_id: JobId) -> i32 {
        let job = ssn.job(job_id);
        let Some(queue) = job.queue else {
            return ABSTAIN;
        };
        let spec = &ssn.queue(queue).spec;
        if !spec.is_open() {
            tracing::debug!(queue = %spec.name, state = %spec.state, job = %job.spec.uid, "proportion: queue is not open, job rejected");
            self.rejections.record(
                job_id,
                crate::fairness::queue_not_open_message(&spec.name, &spec.state),
            );
            return REJECT;
        }
        let Some(attr) = self.attr(queue) else {
            tracing::warn!(queue = %spec.name, job = %job.spec.uid, "proportion: job of an untracked queue, no opinion");
            return ABSTAIN;
        };
        let Some(min) = &job.spec.min_resources else {
            return PERMIT;
        };
        match attr.enqueue_check(min) {
            Ok(()) => PERMIT,
            Err(names) => {
                let message = quota_insufficient_message(&names);
                tracing::debug!(job = %job.spec.uid, queue = %spec.name, %message, "proportion: job rejected");
                self.rejections.record(job_id, message);
                REJECT
            }
        }
    }

    /// The admitted job's minimum (less gated tasks) is reserved in its queue.
    fn job_enqueued(&mut self, ssn: &SessionState, job_id: JobId) {
        let job = ssn.job(job_id);
        let (Some(min), Some(queue)) = (&job.spec.min_resources, job.queue) else {
            return;
        };
        let reserved = job.deduct_sch_gated_resources(ssn.tasks(), min);
        if let Some(attr) = self.attr_mut(queue) {
            attr.inqueue.add(&reserved);
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
