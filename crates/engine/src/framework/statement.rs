//! The Statement: a transaction log over the session (spec/framework.md §4).
//!
//! Operations take effect on the session immediately; `commit` turns them into decisions
//! (binds, evictions), `discard` undoes them in reverse order and leaves each task's
//! `last_transaction` saying where it would have gone.

use crate::model::task::TransactionContext;
use crate::model::{NodeId, TaskId, TaskStatus};

use super::decisions::{Bind, Eviction};
use super::session::Session;
use super::session_state::SearchTouch;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OpKind {
    Evict,
    Pipeline,
    Allocate,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    pub kind: OpKind,
    pub task: TaskId,
    pub reason: String,
    /// For an eviction: the task it makes room for, when one is known.
    pub for_task: Option<TaskId>,
}

/// Recorded operations, in call order.
#[derive(Debug, Default)]
pub struct Statement {
    pub ops: Vec<Operation>,
}

impl Statement {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn has_evictions(&self) -> bool {
        self.ops.iter().any(|o| o.kind == OpKind::Evict)
    }

    /// Records `preemptor` as the task its not yet attributed evictions make room for.
    pub fn attribute_evictions(&mut self, preemptor: TaskId) {
        for op in &mut self.ops {
            if op.kind == OpKind::Evict && op.for_task.is_none() {
                op.for_task = Some(preemptor);
            }
        }
    }

    /// `Merge`: appends another statement's records (their effects are already applied).
    pub fn merge(&mut self, other: Statement) {
        self.ops.extend(other.ops);
    }
}

impl Session {
    /// Changes a task's status and keeps its job's counters current.
    pub(crate) fn set_task_status(&mut self, task: TaskId, status: TaskStatus) {
        let state = &mut self.state;
        let t = &mut state.tasks[task.index()];
        let old = t.status;
        t.status = status;
        if let Some(j) = t.job {
            let t = &state.tasks[task.index()];
            state.jobs[j.index()].update_task_status(t, old, status);
        }
    }

    fn node_add(&mut self, task: TaskId, node: NodeId) -> Result<(), String> {
        self.touch_node(task, Some(node), true);
        let state = &mut self.state;
        state.nodes[node.index()].add_task(task, &state.tasks[task.index()])
    }

    fn node_remove(&mut self, task: TaskId) {
        self.touch_node(task, None, false);
        let state = &mut self.state;
        if let Some(n) = state.tasks[task.index()].node {
            state.nodes[n.index()].remove_task(task, &state.tasks[task.index()]);
        }
    }

    pub(super) fn node_update(&mut self, task: TaskId) {
        self.touch_node(task, None, false);
        let state = &mut self.state;
        if let Some(n) = state.tasks[task.index()].node
            && let Err(e) = state.nodes[n.index()].update_task(task, &state.tasks[task.index()])
        {
            tracing::error!(error = %e, "node accounting update failed");
        }
    }

    /// Tells the search memo that what is on the task's node (or `node`) changes: that node's
    /// stamp moves, and every node's when the task's placement reaches beyond its node.
    /// `only_added`: the task is only being put on the node (allocated or pipelined).
    fn touch_node(&mut self, task: TaskId, node: Option<NodeId>, only_added: bool) {
        let Some(n) = node.or(self.state.tasks[task.index()].node) else {
            return;
        };
        let mut beyond = !self.placement_is_node_local(task);
        if let Some(v) = self.state.node_versions.get_mut(n.index()) {
            *v = v.wrapping_add(1);
            match SearchTouch::new(n.index(), only_added) {
                Some(touch) => self.state.search_touches.push(touch),
                // A node past what the log can name: every answer is forgotten instead.
                None => beyond = true,
            }
        }
        if beyond {
            self.state.search_epoch = self.state.search_epoch.wrapping_add(1);
        }
    }

    /// `Statement.Evict`: the task becomes `Releasing` on its node.
    pub fn evict(&mut self, stmt: &mut Statement, task: TaskId, reason: &str) {
        self.set_task_status(task, TaskStatus::Releasing);
        self.node_update(task);
        self.fire_deallocate(task);
        stmt.ops.push(Operation {
            kind: OpKind::Evict,
            task,
            reason: reason.to_string(),
            for_task: None,
        });
    }

    /// `Statement.Pipeline`: reserve `node` for the task while its resources are released.
    pub fn pipeline(
        &mut self,
        stmt: &mut Statement,
        task: TaskId,
        node: NodeId,
        eviction_occurred: bool,
    ) -> Result<(), String> {
        if self.state.tasks[task.index()].job.is_none() {
            return Err(format!(
                "task {} has no job",
                self.state.tasks[task.index()].key()
            ));
        }
        self.set_task_status(task, TaskStatus::Pipelined);
        {
            let t = &mut self.state.tasks[task.index()];
            t.node = Some(node);
            t.eviction_occurred = eviction_occurred;
        }
        let mut result = self.node_add(task, node);
        if let Err(e) = self.fire_allocate(task)
            && result.is_ok()
        {
            result = Err(e);
        }
        if let Err(e) = result {
            self.un_pipeline(task);
            return Err(e);
        }
        stmt.ops.push(Operation {
            kind: OpKind::Pipeline,
            task,
            reason: String::new(),
            for_task: None,
        });
        Ok(())
    }

    /// `Statement.Allocate`: place the task on `node` (bound at commit).
    pub fn allocate(
        &mut self,
        stmt: &mut Statement,
        task: TaskId,
        node: NodeId,
    ) -> Result<(), String> {
        self.allocate_in_session(task, node)?;
        stmt.ops.push(Operation {
            kind: OpKind::Allocate,
            task,
            reason: String::new(),
            for_task: None,
        });
        Ok(())
    }

    fn allocate_in_session(&mut self, task: TaskId, node: NodeId) -> Result<(), String> {
        if self.state.tasks[task.index()].job.is_none() {
            return Err(format!(
                "task {} has no job",
                self.state.tasks[task.index()].key()
            ));
        }
        self.set_task_status(task, TaskStatus::Allocated);
        self.state.tasks[task.index()].node = Some(node);
        let mut result = self.node_add(task, node);
        if let Err(e) = self.fire_allocate(task)
            && result.is_ok()
        {
            result = Err(e);
        }
        if let Err(e) = result {
            self.un_allocate(task);
            return Err(e);
        }
        Ok(())
    }

    /// `UnPipeline`: immediate undo, nothing recorded.
    pub fn un_pipeline(&mut self, task: TaskId) {
        self.node_remove(task);
        self.set_task_status(task, TaskStatus::Pending);
        self.fire_deallocate(task);
        self.state.tasks[task.index()].node = None;
        self.state.set_task_job_hyper_node(task, None);
    }

    fn un_allocate(&mut self, task: TaskId) {
        self.node_remove(task);
        self.set_task_status(task, TaskStatus::Pending);
        self.fire_deallocate(task);
        self.state.tasks[task.index()].node = None;
        self.state.set_task_job_hyper_node(task, None);
    }

    fn un_evict(&mut self, task: TaskId) {
        // Volcano brings an evicted task back as Running, whatever it was before.
        self.set_task_status(task, TaskStatus::Running);
        self.node_update(task);
        if let Err(e) = self.fire_allocate(task) {
            tracing::warn!(error = %e, "allocate handler failed while undoing an eviction");
        }
    }

    /// `Discard`: undo in reverse order, remembering each task's would-be placement.
    pub fn discard(&mut self, stmt: Statement) {
        for op in stmt.ops.into_iter().rev() {
            let t = &mut self.state.tasks[op.task.index()];
            t.last_transaction = Some(TransactionContext {
                node: t.node,
                eviction_occurred: t.eviction_occurred,
                status: t.status,
            });
            match op.kind {
                OpKind::Evict => self.un_evict(op.task),
                OpKind::Pipeline => self.un_pipeline(op.task),
                OpKind::Allocate => self.un_allocate(op.task),
            }
        }
    }

    /// `Commit`: allocations become binds (`Binding`), evictions become eviction decisions;
    /// pipelines stay session-only reservations.
    pub fn commit(&mut self, stmt: Statement) {
        for op in stmt.ops {
            self.state.tasks[op.task.index()].last_transaction = None;
            match op.kind {
                OpKind::Evict => self.record_eviction(op.task, &op.reason, op.for_task),
                OpKind::Pipeline => {}
                OpKind::Allocate => self.dispatch(op.task),
            }
        }
    }

    fn record_eviction(&mut self, task: TaskId, reason: &str, for_task: Option<TaskId>) {
        let state = &mut self.state;
        let preemptor = for_task.map(|p| state.tasks[p.index()].key().to_string());
        let t = &state.tasks[task.index()];
        let node = t
            .node
            .map(|n| state.nodes[n.index()].name().to_string())
            .unwrap_or_default();
        state.decisions.evictions.push(Eviction {
            pod: t.key().to_string(),
            pod_uid: t.spec.uid.clone(),
            node,
            action: state.current_action.clone(),
            reason: reason.to_string(),
            preemptor,
        });
    }

    /// Turns an `Allocated` task into a bind decision.
    fn dispatch(&mut self, task: TaskId) {
        self.set_task_status(task, TaskStatus::Binding);
        let pre_bind = self.pre_bind_writes(task);
        let state = &mut self.state;
        let t = &state.tasks[task.index()];
        let Some(n) = t.node else { return };
        state.decisions.binds.push(Bind {
            pod: t.key().to_string(),
            pod_uid: t.spec.uid.clone(),
            node: state.nodes[n.index()].name().to_string(),
            volumes: pre_bind.writes,
            volume_bind_timeout: pre_bind.timeout,
            annotations: pre_bind.annotations,
            node_lock: pre_bind.node_lock,
        });
    }

    /// `Session.Allocate` (§4.6, used by backfill): allocate without a statement, then bind
    /// every `Allocated` task of the job once the job is ready.
    pub fn allocate_and_dispatch(&mut self, task: TaskId, node: NodeId) -> Result<(), String> {
        self.allocate_in_session(task, node)?;
        let Some(job) = self.state.tasks[task.index()].job else {
            return Ok(());
        };
        if self.job_ready(job) {
            let allocated: Vec<TaskId> = self
                .state
                .job_tasks_in(job, TaskStatus::Allocated)
                .collect();
            for t in allocated {
                self.state.tasks[t.index()].last_transaction = None;
                self.dispatch(t);
            }
        }
        Ok(())
    }
}
