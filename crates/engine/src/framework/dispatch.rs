//! Tier dispatch of every extension point (spec/framework.md §3.1–§3.3).
//!
//! Each dispatcher walks the plugin options in tier order, skips an option whose gate flag is
//! off or whose plugin did not register the point, and combines the answers exactly as
//! Volcano does (first non-zero order, first error, AND/OR, tier-aware votes and victim
//! intersections).

use std::cmp::Ordering;

use crate::conf::Gate;
use crate::model::{FitError, JobId, NodeId, QueueId, TaskId};

use super::plugin::{ExtensionPoints as EP, PredicateOutcome, ValidateResult};
use super::session::{PluginSlot, Session};

impl Session {
    /// Slots that take part in `point`, given their gate.
    pub(super) fn slots_for(
        &self,
        point: EP,
        gate: Option<Gate>,
    ) -> impl Iterator<Item = &PluginSlot> + '_ {
        self.slots.iter().filter(move |s| {
            gate.is_none_or(|g| s.option.is_enabled(g)) && self.points[s.instance].contains(point)
        })
    }

    /// Slots of one tier.
    fn tier_slots(
        &self,
        tier: usize,
        point: EP,
        gate: Option<Gate>,
    ) -> impl Iterator<Item = &PluginSlot> + '_ {
        self.slots_for(point, gate).filter(move |s| s.tier == tier)
    }

    /// `PreBind` of every plugin that has it, in plugin open order (as the event handlers): the
    /// writes in that order, and the longest wait any of them allows.
    pub fn pre_bind_writes(&self, task: TaskId) -> super::decisions::PreBindWrites {
        let mut all = super::decisions::PreBindWrites::default();
        for (i, p) in self.instances.iter().enumerate() {
            if self.points[i].contains(EP::PRE_BIND) {
                let answer = p.pre_bind(&self.state, task);
                all.writes.extend(answer.writes);
                all.timeout = all.timeout.max(answer.timeout);
                all.annotations.extend(answer.annotations);
                all.node_lock = all.node_lock.or(answer.node_lock);
            }
        }
        all
    }

    // ---- ordering -----------------------------------------------------------------------------

    /// `JobOrderFn`: does `l` come before `r`?
    pub fn job_order(&self, l: JobId, r: JobId) -> bool {
        match self.job_order_compare(l, r) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => {
                let (lj, rj) = (self.state.job(l), self.state.job(r));
                if lj.spec.creation == rj.spec.creation {
                    lj.spec.uid < rj.spec.uid
                } else {
                    lj.spec.creation < rj.spec.creation
                }
            }
        }
    }

    /// `JobOrderCompareFn`: first non-zero plugin answer, no fallback.
    pub fn job_order_compare(&self, l: JobId, r: JobId) -> Ordering {
        for s in self.slots_for(EP::JOB_ORDER, Some(Gate::JobOrder)) {
            let c = self.instances[s.instance].job_order(&self.state, l, r);
            if c != Ordering::Equal {
                return c;
            }
        }
        Ordering::Equal
    }

    /// `QueueOrderFn`: does `l` come before `r`?
    pub fn queue_order(&self, l: QueueId, r: QueueId) -> bool {
        for s in self.slots_for(EP::QUEUE_ORDER, Some(Gate::QueueOrder)) {
            let c = self.instances[s.instance].queue_order(&self.state, l, r);
            if c != Ordering::Equal {
                return c == Ordering::Less;
            }
        }
        let (lq, rq) = (&self.state.queue(l).spec, &self.state.queue(r).spec);
        if lq.creation == rq.creation {
            lq.name < rq.name
        } else {
            lq.creation < rq.creation
        }
    }

    /// `TaskOrderFn`: plugins, then Volcano's default task comparison.
    pub fn task_order(&self, l: TaskId, r: TaskId) -> bool {
        match self.task_order_compare(l, r) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => {
                default_task_less(&self.state.task(l).spec, &self.state.task(r).spec)
            }
        }
    }

    pub fn task_order_compare(&self, l: TaskId, r: TaskId) -> Ordering {
        for &i in &self.task_order_instances {
            let c = self.instances[i].task_order(&self.state, l, r);
            if c != Ordering::Equal {
                return c;
            }
        }
        Ordering::Equal
    }

    /// `VictimQueueOrderFn` (ungated): does queue `l` give up resources before `r`?
    pub fn victim_queue_order(&self, l: QueueId, r: QueueId, preemptor: QueueId) -> bool {
        for s in self.slots_for(EP::VICTIM_QUEUE_ORDER, None) {
            let c = self.instances[s.instance].victim_queue_order(&self.state, l, r, preemptor);
            if c != Ordering::Equal {
                return c == Ordering::Less;
            }
        }
        !self.queue_order(l, r)
    }

    // ---- predicates and scores ------------------------------------------------------------------

    /// `PrePredicateFn`: first error wins.
    pub fn pre_predicate(&mut self, task: TaskId) -> Result<(), String> {
        let slots: Vec<usize> = self
            .slots_for(EP::PRE_PREDICATE, Some(Gate::Predicate))
            .map(|s| s.instance)
            .collect();
        for i in slots {
            self.instances[i].pre_predicate(&self.state, task)?;
        }
        Ok(())
    }

    /// `PredicateFn`: first error wins. Safe to call from several threads.
    pub fn predicate(&self, task: TaskId, node: NodeId) -> Result<(), FitError> {
        for &i in &self.predicate_instances {
            self.instances[i].predicate(&self.state, task, node)?;
        }
        Ok(())
    }

    /// Whether `PredicateForAllocateAction` lets `task` on `node`, as [`Session::predicate`]
    /// would decide it (the first plugin that fails decides) but without the reasons.
    pub fn predicate_allows_allocation(&self, task: TaskId, node: NodeId) -> bool {
        for &i in &self.predicate_instances {
            let plugin = &self.instances[i];
            if let PredicateOutcome::Fails { blocks_allocation } =
                plugin.predicate_outcome(&self.state, task, node)
            {
                return !blocks_allocation;
            }
        }
        true
    }

    /// Instances that answer predicates or scores, the ones the search memo asks.
    fn searching_instances(&self) -> impl Iterator<Item = &dyn super::plugin::Plugin> + '_ {
        let searching = EP::PREDICATE | EP::NODE_ORDER | EP::BATCH_NODE_ORDER;
        self.instances
            .iter()
            .zip(&self.points)
            .filter(move |(_, p)| p.intersects(searching))
            .map(|(i, _)| i.as_ref())
    }

    /// Whether allocate may remember this task's predicate results and scores per node
    /// (`actions::search_memo`): the memo is on and every plugin that predicates or scores
    /// says its answers for the task are node-local. Asked after the task's PrePredicate.
    pub fn search_is_node_local(&self, task: TaskId) -> bool {
        self.state.options.search_memo
            && self
                .searching_instances()
                .all(|p| p.search_is_node_local(&self.state, task))
    }

    /// Whether a node that refuses `task` — its request does not fit the node's future idle
    /// resources, or a plugin's predicate refuses it — still refuses it after tasks are only
    /// put on the node: every plugin that predicates says so
    /// ([`Plugin::refusal_survives_placements`](super::plugin::Plugin::refusal_survives_placements)).
    /// Putting a task on a node only takes idle or future-idle room, so the request's part
    /// holds. Meant for tasks whose search is node-local ([`Session::search_is_node_local`]).
    pub fn refusals_survive_placements(&self, task: TaskId) -> bool {
        self.predicate_instances
            .iter()
            .all(|&i| self.instances[i].refusal_survives_placements(&self.state, task))
    }

    /// Whether a search for `task` fails as `other`'s did, with the same reasons, while no node
    /// and no placement changed since: the memo is on (with it off every search is done, and
    /// the property tests compare the two), both are of one class, and every plugin that
    /// predicates says its answers for them are alike
    /// ([`Plugin::predicate_answers_alike`](super::plugin::Plugin::predicate_answers_alike)).
    pub fn predicates_alike(&self, task: TaskId, other: TaskId) -> bool {
        let class = |t: TaskId| self.state.task(t).spec.sched_class();
        self.state.options.search_memo
            && class(task) == class(other)
            && self
                .predicate_instances
                .iter()
                .all(|&i| self.instances[i].predicate_answers_alike(&self.state, task, other))
    }

    /// Whether allocate may remember this task's scores per node even when its predicates are
    /// not node-local: the memo is on and every plugin that scores says its answers for the
    /// task are node-local (a plugin that also predicates answers for both, so it may only
    /// keep the scores from the memo).
    pub fn scores_are_node_local(&self, task: TaskId) -> bool {
        let scoring = EP::NODE_ORDER | EP::BATCH_NODE_ORDER;
        self.state.options.search_memo
            && self
                .instances
                .iter()
                .zip(&self.points)
                .filter(|(_, p)| p.intersects(scoring))
                .all(|(i, _)| i.search_is_node_local(&self.state, task))
    }

    /// Whether moving this task changes other tasks' predicates and scores on its node only.
    pub(crate) fn placement_is_node_local(&self, task: TaskId) -> bool {
        self.searching_instances()
            .all(|p| p.placement_is_node_local(&self.state, task))
    }

    /// Σ `NodeOrderFn` for one node; the first error aborts.
    pub fn node_order(&self, task: TaskId, node: NodeId) -> Result<f64, String> {
        let mut sum = 0.0;
        for s in self.slots_for(EP::NODE_ORDER, Some(Gate::NodeOrder)) {
            sum += self.instances[s.instance].node_order(&self.state, task, node)?;
        }
        Ok(sum)
    }

    /// Whether any plugin scores per node (lets callers skip the per-node loop).
    pub fn has_node_order(&self) -> bool {
        self.slots_for(EP::NODE_ORDER, Some(Gate::NodeOrder))
            .next()
            .is_some()
    }

    /// Σ `BatchNodeOrderFn` per node, aligned with `nodes`; any error aborts.
    pub fn batch_node_order(&self, task: TaskId, nodes: &[NodeId]) -> Result<Vec<f64>, String> {
        let mut total = vec![0.0; nodes.len()];
        for s in self.slots_for(EP::BATCH_NODE_ORDER, Some(Gate::NodeOrder)) {
            let scores = self.instances[s.instance].batch_node_order(&self.state, task, nodes)?;
            for (t, v) in total.iter_mut().zip(scores) {
                *t += v;
            }
        }
        Ok(total)
    }

    // ---- victims --------------------------------------------------------------------------------

    fn tiered_victims(
        &self,
        point: EP,
        gate: Option<Gate>,
        call: impl Fn(&dyn super::plugin::Plugin) -> (Vec<TaskId>, i32),
    ) -> Vec<TaskId> {
        for tier in 0..self.tier_count {
            let mut victims: Option<Vec<TaskId>> = None;
            for s in self.tier_slots(tier, point, gate) {
                let (cands, vote) = call(self.instances[s.instance].as_ref());
                if vote == 0 {
                    continue;
                }
                if cands.is_empty() {
                    victims = None;
                    break;
                }
                victims = match victims {
                    None => Some(cands),
                    Some(v) => {
                        let inter: Vec<TaskId> =
                            v.into_iter().filter(|t| cands.contains(t)).collect();
                        // An empty intersection is "not decided" (§3.3.4 quirk).
                        (!inter.is_empty()).then_some(inter)
                    }
                };
            }
            if let Some(v) = victims {
                return v;
            }
        }
        Vec::new()
    }

    /// `Preemptable` (§3.3.4).
    pub fn preemptable(&self, preemptor: TaskId, candidates: &[TaskId]) -> Vec<TaskId> {
        self.tiered_victims(EP::PREEMPTABLE, Some(Gate::Preemptable), |p| {
            p.preemptable(&self.state, preemptor, candidates)
        })
    }

    /// `Reclaimable` (§3.3.4).
    pub fn reclaimable(&self, reclaimer: TaskId, candidates: &[TaskId]) -> Vec<TaskId> {
        self.tiered_victims(EP::RECLAIMABLE, Some(Gate::Reclaimable), |p| {
            p.reclaimable(&self.state, reclaimer, candidates)
        })
    }

    /// `UnifiedEvictable` (gangpreempt, gangreclaim): combined as `Preemptable`, but every
    /// plugin that answers takes part whatever its flags, as in Volcano.
    pub fn unified_evictable(
        &self,
        ctx: &super::plugin::EvictionContext,
        candidates: &[TaskId],
    ) -> Vec<TaskId> {
        self.tiered_victims(EP::UNIFIED_EVICTABLE, None, |p| {
            p.unified_evictable(&self.state, ctx, candidates)
        })
    }

    /// `VictimTasks`: union within a tier; first tier with a non-empty union wins.
    pub fn victim_tasks(&self, tasks: &[TaskId]) -> Vec<TaskId> {
        for tier in 0..self.tier_count {
            let mut union: Vec<TaskId> = Vec::new();
            for s in self.tier_slots(tier, EP::VICTIM_TASKS, Some(Gate::Victim)) {
                for t in self.instances[s.instance].victim_tasks(&self.state, tasks) {
                    if !union.contains(&t) {
                        union.push(t);
                    }
                }
            }
            if !union.is_empty() {
                return union;
            }
        }
        Vec::new()
    }

    /// The eviction guards (volcano-rs's own): every configured plugin that guards keeps only
    /// the candidates it lets go, whatever its tier and flags — a protection is not a vote.
    pub fn eviction_guard(&self, candidates: &[TaskId]) -> Vec<TaskId> {
        let mut kept = candidates.to_vec();
        for s in self.slots_for(EP::EVICTION_GUARD, None) {
            if kept.is_empty() {
                break;
            }
            let allowed: std::collections::HashSet<TaskId> = self.instances[s.instance]
                .eviction_guard(&self.state, &kept)
                .into_iter()
                .collect();
            kept.retain(|t| allowed.contains(t));
        }
        kept
    }

    // ---- queue checks ---------------------------------------------------------------------------

    /// `Overused`: OR.
    pub fn overused(&self, queue: QueueId) -> bool {
        self.slots_for(EP::OVERUSED, Some(Gate::Overused))
            .any(|s| self.instances[s.instance].overused(&self.state, queue))
    }

    /// `Allocatable`: AND.
    pub fn allocatable(&self, queue: QueueId, task: TaskId) -> bool {
        self.slots_for(EP::ALLOCATABLE, Some(Gate::Allocatable))
            .all(|s| self.instances[s.instance].allocatable(&self.state, queue, task))
    }

    /// `Preemptive`: AND.
    pub fn preemptive(&self, queue: QueueId, task: TaskId) -> bool {
        self.preemptive_request(queue, self.state.task(task).resreq())
    }

    /// `Preemptive` for a request (gangreclaim asks for all of a job's pending tasks at once).
    pub fn preemptive_request(&self, queue: QueueId, request: &crate::model::Resource) -> bool {
        self.slots_for(EP::PREEMPTIVE, Some(Gate::Preemptive))
            .all(|s| self.instances[s.instance].preemptive(&self.state, queue, request))
    }

    // ---- job checks -----------------------------------------------------------------------------

    /// `JobValid` (ungated): the first failing result.
    pub fn job_valid(&self, job: JobId) -> Option<ValidateResult> {
        self.slots_for(EP::JOB_VALID, None)
            .find_map(|s| self.instances[s.instance].job_valid(&self.state, job))
    }

    /// `JobReady`: AND.
    pub fn job_ready(&self, job: JobId) -> bool {
        self.slots_for(EP::JOB_READY, Some(Gate::JobReady))
            .all(|s| self.instances[s.instance].job_ready(&self.state, job))
    }

    pub(super) fn tiered_vote(
        &self,
        point: EP,
        gate: Gate,
        vote: impl Fn(&dyn super::plugin::Plugin) -> i32,
    ) -> bool {
        self.tiered_vote_rejector(point, gate, vote).is_none()
    }

    /// The tier-aware vote; `Some(instance)` names the plugin whose Reject decided it.
    fn tiered_vote_rejector(
        &self,
        point: EP,
        gate: Gate,
        vote: impl Fn(&dyn super::plugin::Plugin) -> i32,
    ) -> Option<usize> {
        for tier in 0..self.tier_count {
            let mut permitted = false;
            for s in self.tier_slots(tier, point, Some(gate)) {
                let v = vote(self.instances[s.instance].as_ref());
                if v < 0 {
                    return Some(s.instance);
                }
                if v > 0 {
                    permitted = true;
                }
            }
            if permitted {
                return None;
            }
        }
        None
    }

    /// `JobPipelined`: tier-aware vote (§3.3.5).
    pub fn job_pipelined(&self, job: JobId) -> bool {
        self.tiered_vote(EP::JOB_PIPELINED, Gate::JobPipelined, |p| {
            p.job_pipelined(&self.state, job)
        })
    }

    /// `JobEnqueueable`: tier-aware vote.
    pub fn job_enqueueable(&self, job: JobId) -> bool {
        self.job_enqueueable_or_reason(job).is_ok()
    }

    /// `JobEnqueueable` (tier-aware vote) that also says why: `Err(reason)` when a plugin
    /// rejected the job, with that plugin's explanation (empty when it gives none).
    pub fn job_enqueueable_or_reason(&self, job: JobId) -> Result<(), String> {
        match self.tiered_vote_rejector(EP::JOB_ENQUEUEABLE, Gate::JobEnqueued, |p| {
            p.job_enqueueable(&self.state, job)
        }) {
            None => Ok(()),
            Some(i) => Err(self.instances[i]
                .enqueue_rejection(&self.state, job)
                .unwrap_or_default()),
        }
    }

    /// `JobEnqueued`: every enabled registrant, for its side effects.
    pub fn job_enqueued(&mut self, job: JobId) {
        let slots: Vec<usize> = self
            .slots_for(EP::JOB_ENQUEUED, Some(Gate::JobEnqueued))
            .map(|s| s.instance)
            .collect();
        for i in slots {
            self.instances[i].job_enqueued(&self.state, job);
        }
    }

    /// `JobStarving`: the first tier with a registrant decides (AND); none ⇒ false.
    pub fn job_starving(&self, job: JobId) -> bool {
        for tier in 0..self.tier_count {
            let mut found = false;
            for s in self.tier_slots(tier, EP::JOB_STARVING, Some(Gate::JobStarving)) {
                found = true;
                if !self.instances[s.instance].job_starving(&self.state, job) {
                    return false;
                }
            }
            if found {
                return true;
            }
        }
        false
    }

    // ---- event handlers -------------------------------------------------------------------------

    /// Every `AllocateFunc`, in plugin open order; all run, the first error is returned.
    pub(crate) fn fire_allocate(&mut self, task: TaskId) -> Result<(), String> {
        let mut first_err = None;
        for (i, p) in self.instances.iter_mut().enumerate() {
            if self.points[i].contains(EP::EVENT_HANDLER)
                && let Err(e) = p.on_allocate(&self.state, task)
                && first_err.is_none()
            {
                first_err = Some(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Every `DeallocateFunc`, in plugin open order.
    pub(crate) fn fire_deallocate(&mut self, task: TaskId) {
        for (i, p) in self.instances.iter_mut().enumerate() {
            if self.points[i].contains(EP::EVENT_HANDLER) {
                p.on_deallocate(&self.state, task);
            }
        }
    }
}

/// Volcano's default task order (`CompareTask`): pod index of a Volcano job, then creation
/// time, then UID.
pub fn default_task_less(l: &crate::model::TaskSpec, r: &crate::model::TaskSpec) -> bool {
    if let (Some(li), Some(ri)) = (l.name_index, r.name_index)
        && li != ri
    {
        return li < ri;
    }
    if l.creation == r.creation {
        l.uid < r.uid
    } else {
        l.creation < r.creation
    }
}

/// Last "-"-separated segment of a pod name with at least three segments, as an integer
/// (read once per pod: [`crate::model::TaskSpec::name_index`]).
pub(crate) fn pod_index(name: &str) -> Option<i64> {
    let (head, last) = name.rsplit_once('-')?;
    if !head.contains('-') {
        return None;
    }
    last.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::pod_index;

    #[test]
    fn pod_index_needs_three_segments() {
        assert_eq!(pod_index("job-worker-10"), Some(10));
        assert_eq!(pod_index("worker-10"), None);
        assert_eq!(pod_index("job-worker-x"), None);
        assert_eq!(pod_index("a--3"), Some(3));
        assert_eq!(pod_index("job-worker-"), None);
        assert_eq!(pod_index("noindex"), None);
    }
}
