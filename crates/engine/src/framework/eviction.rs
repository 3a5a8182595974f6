//! Framework helpers of the eviction actions (`preempt`, `reclaim`): the victim order
//! (`BuildVictimsPriorityQueue`, spec/framework.md §3.3.1), the preemption predicate
//! (`PredicateForPreemptAction`, §3.3.2), the node list without the nodes an earlier search found
//! unresolvable (`FilterOutUnschedulableAndUnresolvableNodesForTask`, §3.3.2), and the undo of a
//! single eviction inside a statement (used to spare victims that turn out not to be needed).

use std::cmp::Ordering;

use crate::model::{FitError, NodeId, TaskId, TaskStatus};

use super::heap::PriorityQueue;
use super::session::Session;
use super::statement::{OpKind, Statement};

impl Session {
    /// The victim order of `BuildVictimsPriorityQueue` (§3.3.1): does victim `l` give way
    /// before victim `r` when `preemptor` needs room?
    pub fn victim_before(&self, l: TaskId, r: TaskId, preemptor: TaskId) -> bool {
        let (lt, rt) = (self.state.task(l), self.state.task(r));
        // Also covers two tasks without a job.
        if lt.job == rt.job {
            return !self.task_order(l, r);
        }
        let (Some(lj), Some(rj)) = (lt.job, rt.job) else {
            // A task whose job left the session gives way first.
            return lt.job.is_none();
        };
        let queues = (
            self.state.job(lj).queue,
            self.state.job(rj).queue,
            self.state.queue_of_task(preemptor),
        );
        if let (Some(lq), Some(rq), Some(pq)) = queues
            && lq != rq
        {
            return self.victim_queue_order(lq, rq, pq);
        }
        // Same queue, or a preemptor without a job: the job that would be scheduled later
        // loses first, then the task that would be scheduled later.
        match self.job_order_compare(lj, rj) {
            Ordering::Equal => !self.task_order(l, r),
            c => c == Ordering::Greater,
        }
    }

    /// `BuildVictimsPriorityQueue`: a heap whose pop order (with [`Session::victim_before`] as
    /// its `less`) is the eviction order.
    pub fn build_victims_priority_queue(
        &self,
        victims: &[TaskId],
        preemptor: TaskId,
    ) -> PriorityQueue<TaskId> {
        let mut heap = PriorityQueue::new();
        for &v in victims {
            heap.push(v, |a, b| self.victim_before(a, b, preemptor));
        }
        heap
    }

    /// `PredicateForPreemptAction`: like the allocate predicate, except that `Unschedulable`
    /// alone does not exclude a node, since evicting pods may fix it.
    pub fn predicate_for_preempt_action(&self, task: TaskId, node: NodeId) -> Result<(), FitError> {
        match self.predicate(task, node) {
            Err(e) if e.blocks_preemption() => Err(e),
            _ => Ok(()),
        }
    }

    /// `FilterOutUnschedulableAndUnresolvableNodesForTask`: every session node except those an
    /// earlier search of this session (normally allocate's) found `UnschedulableAndUnresolvable`
    /// for the task. Node order is kept (Volcano's order there is a map's).
    pub fn filter_out_unschedulable_and_unresolvable_nodes(&self, task: TaskId) -> Vec<NodeId> {
        let fit_errors = self
            .state
            .job_of(task)
            .and_then(|j| self.state.job(j).nodes_fit_errors.get(&task));
        self.state
            .node_ids()
            .filter(|&n| !fit_errors.is_some_and(|fe| fe.is_unresolvable(n)))
            .collect()
    }

    /// Takes back the latest eviction of `task` recorded in `stmt`: the record is dropped and the
    /// task returns to `status` on its node, with the plugins' allocate handlers called (as when
    /// a discard undoes an eviction). Returns false when `stmt` holds no eviction of `task`.
    ///
    /// Unlike `Discard`, which brings every evicted task back as `Running` (Volcano's rule),
    /// the caller names the status, so a spared victim is exactly as it was before.
    pub fn revert_eviction(
        &mut self,
        stmt: &mut Statement,
        task: TaskId,
        status: TaskStatus,
    ) -> bool {
        let Some(pos) = stmt
            .ops
            .iter()
            .rposition(|op| op.kind == OpKind::Evict && op.task == task)
        else {
            return false;
        };
        stmt.ops.remove(pos);
        self.set_task_status(task, status);
        self.node_update(task);
        if let Err(e) = self.fire_allocate(task) {
            tracing::warn!(error = %e, "allocate handler failed while sparing a victim");
        }
        true
    }
}
