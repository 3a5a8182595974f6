//! The network-topology side of a session (spec/framework.md §2.5 items 4–7, §3.1): the
//! HyperNode tree installed at open, each job's constraint and allocated HyperNode, and the
//! dispatch of the HyperNode extension points.

use crate::conf::Gate;
use crate::model::{HyperNodeId, JobId, NodeId, Resource, SessionTopology, TaskId};

use super::plugin::ExtensionPoints as EP;
use super::session::Session;
use super::session_state::SessionState;

use crate::model::topology::GradientQuery;

impl SessionState {
    /// Builds the session's tree and each job's constraint, and recovers the HyperNode each
    /// job with a constraint already runs in from where its tasks are (§2.5 items 4–7).
    ///
    /// Volcano keeps a job's allocated HyperNode in memory between cycles and recovers it
    /// this way only after a restart; here every session recovers it. Both give the lowest
    /// HyperNode holding the job's placed tasks.
    pub(super) fn install_topology(&mut self) {
        let tree = self.snapshot.hyper_node_tree().clone();
        let names: Vec<&str> = self.nodes.iter().map(|n| n.name()).collect();
        self.topology = SessionTopology::build(&tree, &names);
        for j in 0..self.jobs.len() {
            let Some(spec) = self.jobs[j].spec.network_topology.clone() else {
                continue;
            };
            let constraint = self.topology.constraint_of(&spec);
            if let Some(name) = &constraint.untranslated_tier_name {
                tracing::warn!(job = %self.jobs[j].spec.uid, tier_name = %name,
                    "highestTierName names no HyperNode tier; the constraint is left as written");
            }
            self.jobs[j].topology = Some(constraint);
            if self.topology.is_ready() {
                let recovered = self.recover_allocated_hyper_node(j);
                self.jobs[j].allocated_hyper_node = recovered;
                self.jobs[j].sub_job_allocated_hyper_node = recovered;
            }
        }
    }

    /// The HyperNode of the lowest tier holding every node the job's allocated tasks are on
    /// (`recoverAllocatedHyperNode`); `None` when no task is placed.
    fn recover_allocated_hyper_node(&self, job: usize) -> Option<HyperNodeId> {
        let mut candidates: Option<Vec<HyperNodeId>> = None;
        for &t in &self.jobs[job].tasks {
            let task = &self.tasks[t.index()];
            if !task.status.is_allocated() {
                continue;
            }
            let Some(node) = task.node else { continue };
            let pool = candidates
                .take()
                .unwrap_or_else(|| self.topology.ids().collect());
            let holding: Vec<HyperNodeId> = pool
                .into_iter()
                .filter(|&h| self.topology.contains(h, node))
                .collect();
            if holding.is_empty() {
                return None;
            }
            candidates = Some(holding);
        }
        candidates?
            .into_iter()
            .min_by_key(|&h| (self.topology.tier(h), h))
    }

    pub fn topology(&self) -> &SessionTopology {
        &self.topology
    }

    /// The HyperNode the task's job had reached when the task was last placed
    /// (`TaskInfo.JobAllocatedHyperNode`).
    pub fn task_job_hyper_node(&self, task: TaskId) -> Option<HyperNodeId> {
        self.task_job_hyper_node.get(&task).copied()
    }

    pub fn set_task_job_hyper_node(&mut self, task: TaskId, hn: Option<HyperNodeId>) {
        match hn {
            Some(h) => {
                self.task_job_hyper_node.insert(task, h);
            }
            None => {
                self.task_job_hyper_node.remove(&task);
            }
        }
    }

    /// Records where the job (and its default sub-job) now run.
    pub fn set_job_allocated_hyper_node(
        &mut self,
        job: JobId,
        job_hn: Option<HyperNodeId>,
        sub_job_hn: Option<HyperNodeId>,
    ) {
        let j = &mut self.jobs[job.index()];
        j.allocated_hyper_node = job_hn;
        j.sub_job_allocated_hyper_node = sub_job_hn;
    }

    /// Forgets the fit errors of the job's tasks and the job (`ResetFitErr`).
    pub fn reset_job_fit_errors(&mut self, job: JobId) {
        let j = &mut self.jobs[job.index()];
        j.nodes_fit_errors.clear();
        j.job_fit_errors.clear();
    }

    /// Σ of the initial requests of the job's pending tasks (`SubJobInfo.GetMinResources`).
    pub fn pending_min_resources(&self, job: JobId) -> Resource {
        let mut total = Resource::empty();
        for &t in &self.jobs[job.index()].tasks {
            let task = &self.tasks[t.index()];
            if task.status == crate::model::TaskStatus::Pending {
                total.add(&task.spec.resreq);
            }
        }
        total
    }

    /// How many of the job's tasks are on nodes under `hn` (`FindJobTaskNumOfHyperNode`).
    pub fn job_task_count_in(&self, job: JobId, hn: HyperNodeId) -> usize {
        self.jobs[job.index()]
            .tasks
            .iter()
            .filter_map(|t| self.tasks[t.index()].node)
            .filter(|&n: &NodeId| self.topology.contains(hn, n))
            .count()
    }
}

impl Session {
    /// `HyperNodeGradientForJobFn` / `ForSubJobFn`: the first plugin (in tier order) that
    /// registered it answers; without one the start HyperNode alone is the only gradient.
    pub fn hyper_node_gradient(&self, query: &GradientQuery<'_>) -> Vec<Vec<HyperNodeId>> {
        for s in self.slots.iter() {
            if !s.option.is_enabled(Gate::HyperNodeGradient)
                || !self.points[s.instance].contains(EP::HYPER_NODE_GRADIENT)
            {
                continue;
            }
            return self.instances[s.instance].hyper_node_gradient(&self.state, query);
        }
        vec![vec![query.start]]
    }

    /// `HyperNodeOrderMapFn`: each candidate's scores summed over the plugins, aligned with
    /// `candidates` (a plugin's missing answer counts 0).
    pub fn hyper_node_order(&self, job: JobId, candidates: &[HyperNodeId]) -> Vec<f64> {
        let mut total = vec![0.0; candidates.len()];
        for s in self.slots.iter() {
            if !s.option.is_enabled(Gate::HyperNodeOrder)
                || !self.points[s.instance].contains(EP::HYPER_NODE_ORDER)
            {
                continue;
            }
            let scores = self.instances[s.instance].hyper_node_order(&self.state, job, candidates);
            for (t, v) in total.iter_mut().zip(scores) {
                *t += v;
            }
        }
        total
    }
}
