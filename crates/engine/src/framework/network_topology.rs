//! The network-topology side of a session (spec/framework.md §2.5 items 4–7, §3.1): the
//! HyperNode tree installed at open, each job's constraint and allocated HyperNode, and the
//! dispatch of the HyperNode extension points.

use crate::conf::Gate;
use crate::model::{HyperNodeId, JobId, NodeId, Resource, SessionTopology, SubJobId, TaskId};

use super::plugin::ExtensionPoints as EP;
use super::session::Session;
use super::session_state::SessionState;

use crate::model::topology::GradientQuery;

impl SessionState {
    /// Builds the session's tree and, for the jobs given (those with a constraint or sub-group
    /// policies), each one's constraint and sub-jobs, and recovers the HyperNode each already
    /// runs in from where its tasks are (§2.5 items 4–7).
    ///
    /// Volcano keeps a job's allocated HyperNode in memory between cycles and recovers it
    /// this way only after a restart; here every session recovers it. Both give the lowest
    /// HyperNode holding the job's placed tasks.
    pub(super) fn install_topology(&mut self, with_topology: &[JobId]) {
        let tree = self.snapshot.hyper_node_tree().clone();
        let names: Vec<&str> = self.nodes.iter().map(|n| n.name()).collect();
        self.topology = SessionTopology::build(&tree, &names);
        for j in with_topology.iter().map(|j| j.index()) {
            let spec = self.jobs[j].spec.clone();
            if let Some(written) = &spec.network_topology {
                let constraint = self.topology.constraint_of(written);
                warn_untranslated(&spec.uid, &constraint);
                self.jobs[j].topology = Some(constraint);
            }
            if !spec.sub_group_policy.is_empty() {
                let mut sub_jobs = crate::model::sub_job::build(
                    &spec.uid,
                    &spec.sub_group_policy,
                    self.jobs[j].topology.as_ref(),
                    &self.jobs[j].tasks,
                    &self.tasks,
                );
                for sj in &mut sub_jobs {
                    let written = sj
                        .policy
                        .and_then(|i| spec.sub_group_policy[i].network_topology.as_ref());
                    if let Some(written) = written {
                        let c = self
                            .topology
                            .constraint_of_sub_job(written, self.jobs[j].topology.as_ref());
                        warn_untranslated(&sj.uid, &c);
                        sj.topology = Some(c);
                    }
                }
                self.jobs[j].sub_jobs = sub_jobs;
            }
            if self.topology.is_ready() && self.jobs[j].contains_network_topology() {
                self.recover_allocated_hyper_nodes(j);
            }
        }
    }

    /// `recoverAllocatedHyperNode`: each sub-job with a constraint runs in the lowest
    /// HyperNode holding its allocated tasks' nodes; the job in the lowest common ancestor of
    /// its sub-jobs'.
    fn recover_allocated_hyper_nodes(&mut self, job: usize) {
        let ids = self.jobs[job].sub_job_ids();
        let mut job_hn = None;
        for sj in ids {
            let j = &self.jobs[job];
            if j.sub_job_topology(sj).is_none() {
                continue;
            }
            let hn = self.lowest_holding(j.sub_job_tasks(sj));
            self.jobs[job].set_sub_job_allocated_hyper_node(sj, hn);
            if hn.is_some() {
                job_hn = self.topology.lca(job_hn, hn);
            }
        }
        self.jobs[job].allocated_hyper_node = job_hn;
    }

    /// The HyperNode of the lowest tier holding every node these tasks are allocated on;
    /// `None` when none is placed.
    fn lowest_holding(&self, task_ids: &[TaskId]) -> Option<HyperNodeId> {
        let mut candidates: Option<Vec<HyperNodeId>> = None;
        for &t in task_ids {
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

    /// Records where the job now runs.
    pub fn set_job_allocated_hyper_node(&mut self, job: JobId, hn: Option<HyperNodeId>) {
        self.jobs[job.index()].allocated_hyper_node = hn;
    }

    /// Records where a sub-job now runs.
    pub fn set_sub_job_allocated_hyper_node(
        &mut self,
        job: JobId,
        sj: SubJobId,
        hn: Option<HyperNodeId>,
    ) {
        self.jobs[job.index()].set_sub_job_allocated_hyper_node(sj, hn);
    }

    /// Forgets the fit errors of the job's tasks and the job (`ResetFitErr`).
    pub fn reset_job_fit_errors(&mut self, job: JobId) {
        let j = &mut self.jobs[job.index()];
        j.nodes_fit_errors.clear();
        j.job_fit_errors.clear();
    }

    /// Forgets the fit errors of one sub-job's tasks (`ResetSubJobFitErr`).
    pub fn reset_sub_job_fit_errors(&mut self, job: JobId, sj: SubJobId) {
        if sj == SubJobId::WHOLE_JOB {
            self.jobs[job.index()].nodes_fit_errors.clear();
            return;
        }
        let j = &mut self.jobs[job.index()];
        if let Some(s) = j.sub_jobs.get(sj.index()) {
            for t in &s.tasks {
                j.nodes_fit_errors.remove(t);
            }
        }
    }

    /// Σ of the initial requests of the sub-job's pending tasks (`SubJobInfo.GetMinResources`).
    pub fn pending_min_resources(&self, job: JobId, sj: SubJobId) -> Resource {
        let mut total = Resource::empty();
        for &t in self.jobs[job.index()].sub_job_tasks(sj) {
            let task = &self.tasks[t.index()];
            if task.status == crate::model::TaskStatus::Pending {
                total.add(&task.spec.resreq);
            }
        }
        total
    }

    /// How many of the sub-job's tasks are on nodes under `hn` (`FindJobTaskNumOfHyperNode`).
    pub fn sub_job_task_count_in(&self, job: JobId, sj: SubJobId, hn: HyperNodeId) -> usize {
        self.jobs[job.index()]
            .sub_job_tasks(sj)
            .iter()
            .filter_map(|t| self.tasks[t.index()].node)
            .filter(|&n: &NodeId| self.topology.contains(hn, n))
            .count()
    }
}

/// A tier name that names no tier is left as written (Volcano warns too).
fn warn_untranslated(owner: &str, c: &crate::model::TopologyConstraint) {
    if let Some(name) = &c.untranslated_tier_name {
        tracing::warn!(owner, tier_name = %name,
            "highestTierName names no HyperNode tier; the constraint is left as written");
    }
}

impl Session {
    /// `HyperNodeGradientForJobFn` / `ForSubJobFn`: the first plugin (in tier order) that
    /// registered it answers; without one the start HyperNode alone is the only gradient.
    pub fn hyper_node_gradient(&self, query: &GradientQuery<'_>) -> Vec<Vec<HyperNodeId>> {
        match self
            .slots_for(EP::HYPER_NODE_GRADIENT, Some(Gate::HyperNodeGradient))
            .next()
        {
            Some(s) => self.instances[s.instance].hyper_node_gradient(&self.state, query),
            None => vec![vec![query.start]],
        }
    }

    /// `HyperNodeOrderMapFn`: each candidate's scores summed over the plugins, aligned with
    /// `candidates` (a plugin's missing answer counts 0).
    pub fn hyper_node_order(
        &self,
        job: JobId,
        sub_job: SubJobId,
        candidates: &[HyperNodeId],
    ) -> Vec<f64> {
        let mut total = vec![0.0; candidates.len()];
        for s in self.slots_for(EP::HYPER_NODE_ORDER, Some(Gate::HyperNodeOrder)) {
            let scores =
                self.instances[s.instance].hyper_node_order(&self.state, job, sub_job, candidates);
            for (t, v) in total.iter_mut().zip(scores) {
                *t += v;
            }
        }
        total
    }

    /// `SubJobReady`: the job's readiness for a job without policies; else every plugin that
    /// registered it must agree.
    pub fn sub_job_ready(&self, job: JobId, sj: SubJobId) -> bool {
        if !self.state.job(job).has_sub_job_policy() {
            return self.job_ready(job);
        }
        self.slots_for(EP::SUB_JOB_READY, Some(Gate::SubJobReady))
            .all(|s| self.instances[s.instance].sub_job_ready(&self.state, job, sj))
    }

    /// `SubJobPipelined`: the job's for a job without policies; else the tier-aware vote of
    /// `JobPipelined`.
    pub fn sub_job_pipelined(&self, job: JobId, sj: SubJobId) -> bool {
        if !self.state.job(job).has_sub_job_policy() {
            return self.job_pipelined(job);
        }
        self.tiered_vote(EP::SUB_JOB_PIPELINED, Gate::SubJobPipelined, |p| {
            p.sub_job_pipelined(&self.state, job, sj)
        })
    }

    /// `SubJobOrderFn`: the first plugin with an opinion, else the match index, then the uid.
    pub fn sub_job_order(&self, job: JobId, l: SubJobId, r: SubJobId) -> bool {
        for s in self.slots_for(EP::SUB_JOB_ORDER, Some(Gate::SubJobOrder)) {
            match self.instances[s.instance].sub_job_order(&self.state, job, l, r) {
                std::cmp::Ordering::Less => return true,
                std::cmp::Ordering::Greater => return false,
                std::cmp::Ordering::Equal => {}
            }
        }
        let j = self.state.job(job);
        let key = |sj: SubJobId| {
            j.sub_job(sj).map_or((0, j.spec.uid.as_str()), |s| {
                (s.match_index, s.uid.as_str())
            })
        };
        key(l) < key(r)
    }
}
