//! Sub-jobs: the parts of a job a PodGroup's `subGroupPolicy` forms (spec/framework.md
//! §5.5.7; Volcano's `pkg/scheduler/api/sub_job_info.go`).
//!
//! A task belongs to the first policy whose `labelSelector` (if any) matches its pod and for
//! which the pod has a non-empty label for every `matchLabelKeys` key; pods with the same values
//! form one sub-job of `subGroupSize` (default 1). A policy without `matchLabelKeys` takes no
//! pod. Tasks no policy takes form the job's default sub-job, whose minimum is 1 (a job without
//! policies has no sub-jobs listed: its one sub-job is the job itself).

use std::collections::BTreeMap;

use super::labels::selector_matches;
use super::task::TaskInfo;
use super::{HyperNodeId, TaskId, TaskStatus, TopologyConstraint};

/// A sub-job of a job, by its place in the job's list.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubJobId(pub u32);

impl SubJobId {
    /// The default sub-job of a job without policies: the job itself.
    pub const WHOLE_JOB: SubJobId = SubJobId(u32::MAX);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// See the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct SubJob {
    /// `<job uid>/<policy>-<values joined by '-'>`, or the job's uid for the default sub-job.
    pub uid: String,
    /// The policy's index in the PodGroup's list; `None` for the default sub-job.
    pub policy: Option<usize>,
    pub min_available: i32,
    /// The first match value as a number (0 when it is not one), for ordering.
    pub match_index: i64,
    /// The policy's constraint (the job's for the default sub-job), normalised by the session.
    pub topology: Option<TopologyConstraint>,
    pub tasks: Vec<TaskId>,
    /// Where the sub-job runs (`SubJobInfo.AllocatedHyperNode`).
    pub allocated_hyper_node: Option<HyperNodeId>,
}

/// `getSubJobMatchValues`: the pod's values for the policy's keys, or `None` when the policy
/// does not take it.
pub fn match_values<'a>(
    policy: &apis::SubGroupPolicySpec,
    labels: &'a BTreeMap<String, String>,
) -> Option<Vec<&'a str>> {
    if let Some(selector) = &policy.label_selector
        && !selector_matches(selector, labels)
    {
        return None;
    }
    if policy.match_label_keys.is_empty() {
        return None;
    }
    policy
        .match_label_keys
        .iter()
        .map(|key| {
            labels
                .get(key)
                .map(String::as_str)
                .filter(|v| !v.is_empty())
        })
        .collect()
}

/// The sub-job uid Volcano forms from the values (hashed when over 128 characters).
fn sub_job_uid(job_uid: &str, policy: &str, values: &[&str]) -> String {
    let mut id = values.join("-");
    if id.len() > 128 {
        // FNV-1a, as Volcano; the encoding differs (only uniqueness matters here).
        let mut hash: u32 = 0x811c_9dc5;
        for b in id.bytes() {
            hash ^= u32::from(b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
        id = format!("{hash:x}");
    }
    format!("{job_uid}/{policy}-{id}")
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// The sub-jobs of a job with policies, in the order they were first met (the default one
/// included when some task falls to it).
pub fn build(
    job_uid: &str,
    policies: &[apis::SubGroupPolicySpec],
    job_topology: Option<&TopologyConstraint>,
    job_tasks: &[TaskId],
    tasks: &[TaskInfo],
) -> Vec<SubJob> {
    let mut sub_jobs: Vec<SubJob> = Vec::new();
    let mut by_uid: BTreeMap<String, usize> = BTreeMap::new();
    for &t in job_tasks {
        let labels = tasks[t.index()]
            .spec
            .pod
            .metadata
            .labels
            .as_ref()
            .unwrap_or(&NO_LABELS);
        let matched = policies
            .iter()
            .enumerate()
            .find_map(|(i, p)| match_values(p, labels).map(|v| (i, p, v)));
        let fresh = match matched {
            Some((i, policy, values)) => SubJob {
                uid: sub_job_uid(job_uid, &policy.name, &values),
                policy: Some(i),
                min_available: policy.sub_group_size.unwrap_or(1),
                match_index: values
                    .first()
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(0),
                topology: None,
                tasks: Vec::new(),
                allocated_hyper_node: None,
            },
            None => SubJob {
                uid: job_uid.to_string(),
                policy: None,
                min_available: 1,
                match_index: 0,
                topology: job_topology.cloned(),
                tasks: Vec::new(),
                allocated_hyper_node: None,
            },
        };
        let uid = fresh.uid.clone();
        let index = match by_uid.get(&uid) {
            Some(&i) => i,
            None => {
                by_uid.insert(uid.clone(), sub_jobs.len());
                sub_jobs.push(fresh);
                sub_jobs.len() - 1
            }
        };
        sub_jobs[index].tasks.push(t);
    }
    sub_jobs
}

/// (ready, pipelined, pending best-effort) counts of these tasks, as the job's counters.
pub fn counts(task_ids: &[TaskId], tasks: &[TaskInfo]) -> (i32, i32, i32) {
    let (mut ready, mut waiting, mut best_effort) = (0, 0, 0);
    for &t in task_ids {
        let task = &tasks[t.index()];
        match task.status {
            TaskStatus::Bound
            | TaskStatus::Binding
            | TaskStatus::Running
            | TaskStatus::Allocated
            | TaskStatus::Succeeded => ready += 1,
            TaskStatus::Pipelined => waiting += 1,
            TaskStatus::Pending if task.spec.best_effort => best_effort += 1,
            _ => {}
        }
    }
    (ready, waiting, best_effort)
}

impl SubJob {
    /// `SubJobInfo.IsReady`.
    pub fn is_ready(&self, tasks: &[TaskInfo]) -> bool {
        let (ready, _, best_effort) = counts(&self.tasks, tasks);
        ready + best_effort >= self.min_available
    }

    /// `SubJobInfo.IsPipelined`.
    pub fn is_pipelined(&self, tasks: &[TaskInfo]) -> bool {
        let (ready, waiting, best_effort) = counts(&self.tasks, tasks);
        ready + waiting + best_effort >= self.min_available
    }
}

/// A job's sub-jobs as the actions and plugins see them.
impl super::JobInfo {
    /// The job's sub-jobs: each listed one, or [`SubJobId::WHOLE_JOB`] for a job without
    /// policies.
    pub fn sub_job_ids(&self) -> Vec<SubJobId> {
        if self.sub_jobs.is_empty() {
            vec![SubJobId::WHOLE_JOB]
        } else {
            (0..self.sub_jobs.len() as u32).map(SubJobId).collect()
        }
    }

    pub fn sub_job(&self, sj: SubJobId) -> Option<&SubJob> {
        self.sub_jobs.get(sj.index())
    }

    /// The sub-job's tasks (the job's for the whole job).
    pub fn sub_job_tasks(&self, sj: SubJobId) -> &[TaskId] {
        self.sub_job(sj).map_or(&self.tasks, |s| &s.tasks)
    }

    /// The sub-job's minimum (the job's `minMember` for the whole job).
    pub fn sub_job_min_available(&self, sj: SubJobId) -> i32 {
        self.sub_job(sj)
            .map_or(self.spec.min_available, |s| s.min_available)
    }

    /// The sub-job's constraint (the job's for the whole job).
    pub fn sub_job_topology(&self, sj: SubJobId) -> Option<&TopologyConstraint> {
        match self.sub_job(sj) {
            Some(s) => s.topology.as_ref(),
            None => self.topology.as_ref(),
        }
    }

    pub fn sub_job_allocated_hyper_node(&self, sj: SubJobId) -> Option<HyperNodeId> {
        match self.sub_job(sj) {
            Some(s) => s.allocated_hyper_node,
            None => self.sub_job_allocated_hyper_node,
        }
    }

    pub fn set_sub_job_allocated_hyper_node(&mut self, sj: SubJobId, hn: Option<HyperNodeId>) {
        match self.sub_jobs.get_mut(sj.index()) {
            Some(s) => s.allocated_hyper_node = hn,
            None => self.sub_job_allocated_hyper_node = hn,
        }
    }

    /// The sub-job a task belongs to.
    pub fn sub_job_of(&self, task: TaskId) -> SubJobId {
        self.sub_jobs
            .iter()
            .position(|s| s.tasks.contains(&task))
            .map_or(SubJobId::WHOLE_JOB, |i| SubJobId(i as u32))
    }

    /// `ContainsSubJobPolicy`.
    pub fn has_sub_job_policy(&self) -> bool {
        self.has_policies
    }

    /// `ContainsHardTopology`: the job's or one of its sub-jobs' constraint is hard.
    pub fn contains_hard_topology(&self) -> bool {
        self.topology
            .as_ref()
            .is_some_and(|c| c.hard_tier().is_some())
            || self
                .sub_jobs
                .iter()
                .any(|s| s.topology.as_ref().is_some_and(|c| c.hard_tier().is_some()))
    }

    /// `ContainsNetworkTopology`: the job or one of its sub-jobs has a constraint.
    pub fn contains_network_topology(&self) -> bool {
        self.topology.is_some() || self.sub_jobs.iter().any(|s| s.topology.is_some())
    }

    /// `minSubGroups` per policy name (a repeated name: the last policy's).
    fn min_sub_jobs(&self) -> BTreeMap<&str, i32> {
        self.spec
            .sub_group_policy
            .iter()
            .map(|p| (p.name.as_str(), p.min_sub_groups.unwrap_or(0)))
            .collect()
    }

    /// How many sub-jobs of the policy named `name` pass `pred`.
    fn count_sub_jobs(&self, name: &str, pred: impl Fn(&SubJob) -> bool) -> i32 {
        let n = self
            .sub_jobs
            .iter()
            .filter(|s| {
                s.policy
                    .and_then(|i| self.spec.sub_group_policy.get(i))
                    .is_some_and(|p| p.name == name)
                    && pred(s)
            })
            .count();
        i32::try_from(n).unwrap_or(i32::MAX)
    }

    /// The policy name of a listed sub-job (`None` for the default one).
    pub fn sub_job_policy_name(&self, sj: SubJobId) -> Option<&str> {
        self.sub_job(sj)
            .and_then(|s| s.policy)
            .and_then(|i| self.spec.sub_group_policy.get(i))
            .map(|p| p.name.as_str())
    }

    /// The minimum number of sub-jobs of the sub-job's policy (0 for the default one).
    pub fn min_sub_jobs_of(&self, sj: SubJobId) -> i32 {
        self.sub_job_policy_name(sj)
            .and_then(|name| self.min_sub_jobs().get(name).copied())
            .unwrap_or(0)
    }

    /// `CheckSubJobValid`: every policy has at least `minSubGroups` sub-jobs.
    pub fn check_sub_job_valid(&self) -> bool {
        if !self.has_policies {
            return true;
        }
        self.min_sub_jobs()
            .into_iter()
            .all(|(name, min)| self.count_sub_jobs(name, |_| true) >= min)
    }

    /// `CheckSubJobReady`: every policy with a minimum has that many ready sub-jobs.
    pub fn check_sub_job_ready(&self, tasks: &[TaskInfo]) -> bool {
        if !self.has_policies {
            return true;
        }
        self.min_sub_jobs()
            .into_iter()
            .filter(|(_, min)| *min != 0)
            .all(|(name, min)| self.count_sub_jobs(name, |s| s.is_ready(tasks)) >= min)
    }

    /// `CheckSubJobPipelined`: the same with pipelined sub-jobs.
    pub fn check_sub_job_pipelined(&self, tasks: &[TaskInfo]) -> bool {
        if !self.has_policies {
            return true;
        }
        self.min_sub_jobs()
            .into_iter()
            .filter(|(_, min)| *min != 0)
            .all(|(name, min)| self.count_sub_jobs(name, |s| s.is_pipelined(tasks)) >= min)
    }
}

#[cfg(test)]
mod tests;
