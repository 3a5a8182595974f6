//! `task-topology`: affinity and anti-affinity between the tasks of one job
//! (spec/plugins-more.md §6).
//!
//! A job opts in through PodGroup annotations naming its task roles (the pods' annotation
//! `volcano.sh/task-spec`): `volcano.sh/task-topology-affinity` and
//! `volcano.sh/task-topology-anti-affinity` (groups separated by `;`, names by `,`; a one-name
//! group relates a role to itself) and `volcano.sh/task-topology-task-order` (a `,` list, first
//! name first). At session open each such job with pending tasks sorts its related tasks into
//! *buckets*, groups that would like to share a node (§6.4). Then:
//!
//! * task order: tasks in a bucket before those outside any bucket, fuller buckets first,
//!   within a bucket by user order then relation priority (§6.5);
//! * node order: members of the task's bucket already on the node plus the pending members
//!   that would fit there with it, minus repelled tasks placed there in this session, scaled
//!   to 100 per largest bucket and multiplied by `task-topology.weight` (integer, default 1;
//!   §6.1, §6.6);
//! * every allocation or pipelining updates the buckets and per-node counts (§6.7).
//!
//! Deliberate differences from Volcano: a job with invalid annotations is skipped with a
//! warning (Volcano logs it at verbosity 4), and node scoring trims pending bucket members in
//! pod-name order where Volcano walks a map in random order.

mod manager;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use apis::keys;
use engine::conf::{ArgWarning, Arguments};
use engine::framework::{ExtensionPoints, Plugin, SessionState};
use engine::model::{DimensionDefault, JobId, NodeId, TaskId};
use k8s_openapi::api::core::v1::Pod;

use manager::{Candidate, JobManager, Topology};

/// Registered plugin name.
pub const NAME: &str = "task-topology";

const WEIGHT_KEY: &str = "task-topology.weight";

/// Kubernetes' `MaxNodeScore`.
const MAX_NODE_SCORE: f64 = 100.0;

/// Builds the plugin for one session.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(TaskTopology::from_arguments(args))
}

struct TaskTopology {
    /// `task-topology.weight`: multiplies every score. A negative weight turns attraction into
    /// repulsion and is accepted, as in Volcano; a weight beyond ±`MAX_WEIGHT` is clamped to it
    /// (Volcano's integer product wraps around). Both are reported by [`check_arguments`].
    weight: i64,
    /// Jobs with valid annotations and pending tasks, set up at session open.
    managers: HashMap<JobId, JobManager>,
}

/// The problems the weight has, for the configuration parser.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    read_weight(args, &mut warnings);
    warnings
}

fn read_weight(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> i64 {
    let mut weight = 1;
    if args.get_weight(WEIGHT_KEY, &mut weight, warnings) && weight < 0 {
        warnings.push(ArgWarning::new(
            WEIGHT_KEY,
            format!(
                "negative weight {weight}: tasks of a bucket then avoid each other's nodes \
                 (accepted, as in Volcano)"
            ),
        ));
    }
    weight
}

impl TaskTopology {
    fn from_arguments(args: &Arguments) -> Self {
        TaskTopology {
            weight: read_weight(args, &mut Vec::new()),
            managers: HashMap::new(),
        }
    }

    /// `calcBucketScore` (§6.6): the task's bucket score on `node` and its job's manager, or
    /// `None` when the node scores 0 without normalisation (the task cannot fit, or its job has
    /// no manager).
    fn bucket_score(
        &self,
        ssn: &SessionState,
        task: TaskId,
        node: NodeId,
    ) -> Option<(i64, &JobManager)> {
        let t = ssn.task(task);
        // Most jobs have no topology: nothing to compute for them on any node. (Volcano checks
        // the fit first; both paths score 0, so the order does not change a score.)
        let manager = self.managers.get(&t.job?)?;
        let n = ssn.node(node);
        let mut room = n.idle.clone();
        room.add(&n.releasing);
        if room.less_partly(t.resreq(), DimensionDefault::Zero) {
            return None;
        }
        let Some(bucket) = manager.bucket(task) else {
            return Some((0, manager));
        };

        // Members of the bucket already placed here, less the tasks this one repels that were
        // placed here in this session.
        let mut score = bucket.on_node.get(n.name()).copied().unwrap_or(0);
        if let Some(placed) = manager.node_tasks.get(n.name()) {
            let repulsion = manager.affinity(task_name(&t.spec.pod), placed, true);
            if repulsion < 0 {
                score += repulsion;
            }
        }
        // Plus the pending members, this task included, minus one for each other member that
        // has to be left out before the rest fits the node.
        score += bucket.pending.len() as i64;
        if bucket.request_fits(&room) {
            return Some((score, manager));
        }
        let mut remains = bucket.request.clone();
        // Deliberate difference: Volcano leaves members out in random (map) order; we go by
        // pod name, so the same cluster always scores the same.
        for (&(_, other), resreq) in &bucket.pending {
            if other == task {
                continue;
            }
            remains.sub(resreq);
            score -= 1;
            if remains.less_equal(&room, DimensionDefault::Zero) {
                break;
            }
        }
        Some((score, manager))
    }

    /// `initBucket` for one job: `None` when the job has no pending task, no topology
    /// annotation, or an invalid one (warned).
    fn manager_for(ssn: &SessionState, job: JobId) -> Option<JobManager> {
        let j = ssn.job(job);
        if !j.has_pending_tasks() {
            return None;
        }
        let roles: HashSet<&str> = j
            .tasks
            .iter()
            .map(|&t| task_role(&ssn.task(t).spec.pod))
            .collect();
        let topology = match read_topology(&j.spec.annotations, &roles, &j.spec.uid) {
            Ok(Some(topology)) => topology,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(
                    plugin = NAME,
                    job = %j.spec.uid,
                    error = %e,
                    "invalid task-topology annotations; job ignored by task-topology"
                );
                return None;
            }
        };
        let mut manager = JobManager::new(&topology);
        manager.construct(&candidates(ssn, job));
        tracing::debug!(
            plugin = NAME,
            job = %j.spec.uid,
            buckets = manager.buckets.len(),
            max_size = manager.bucket_max_size,
            "task-topology buckets built"
        );
        Some(manager)
    }
}

impl Plugin for TaskTopology {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        let state: &SessionState = ssn;
        self.managers = state
            .job_ids()
            .filter_map(|job| Self::manager_for(state, job).map(|m| (job, m)))
            .collect();
    }

    fn on_session_close(&mut self, _ssn: &mut SessionState) {
        self.managers.clear();
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::TASK_ORDER | ExtensionPoints::NODE_ORDER | ExtensionPoints::EVENT_HANDLER
    }

    /// §6.5: `Less` puts `l` first.
    fn task_order(&self, ssn: &SessionState, l: TaskId, r: TaskId) -> Ordering {
        let (lt, rt) = (ssn.task(l), ssn.task(r));
        let (Some(lj), Some(rj)) = (lt.job, rt.job) else {
            return Ordering::Equal;
        };
        let (Some(lm), Some(rm)) = (self.managers.get(&lj), self.managers.get(&rj)) else {
            return Ordering::Equal;
        };
        let (lb, rb) = match (lm.bucket(l), rm.bucket(r)) {
            // A task in a bucket goes before one outside, even across jobs.
            (Some(_), None) => return Ordering::Less,
            (None, Some(_)) => return Ordering::Greater,
            (None, None) => return Ordering::Equal,
            (Some(lb), Some(rb)) => (lb, rb),
        };
        if lj != rj {
            return Ordering::Equal;
        }
        // More pending members first.
        rb.pending.len().cmp(&lb.pending.len()).then_with(|| {
            if lb.index == rb.index {
                // The higher-ranked task name first.
                lm.rank(task_name(&rt.spec.pod), task_name(&lt.spec.pod))
            } else {
                lb.index.cmp(&rb.index)
            }
        })
    }

    /// §6.6. Called in parallel; reads only.
    fn node_order(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<f64, String> {
        let Some((score, manager)) = self.bucket_score(ssn, task, node) else {
            return Ok(0.0);
        };
        // Go multiplies in `int` before converting; wrapping keeps that on absurd weights.
        let mut f = score.wrapping_mul(self.weight) as f64;
        if manager.bucket_max_size != 0 {
            f = f * MAX_NODE_SCORE / manager.bucket_max_size as f64;
        }
        Ok(f)
    }

    /// §6.7. There is no deallocate counterpart: undone placements stay counted, as in Volcano.
    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        let t = ssn.task(task);
        let Some(manager) = t.job.and_then(|j| self.managers.get_mut(&j)) else {
            return Ok(());
        };
        let node = node_name(ssn, task).unwrap_or_default();
        manager.task_bound(task, &t.spec.name, task_name(&t.spec.pod), node, t.resreq());
        Ok(())
    }
}

/// Every task of the job, bound or not, as the bucket construction sees it.
fn candidates(ssn: &SessionState, job: JobId) -> Vec<Candidate<'_>> {
    ssn.job(job)
        .tasks
        .iter()
        .map(|&t| {
            let info = ssn.task(t);
            Candidate {
                task: t,
                pod_name: &info.spec.name,
                name: task_name(&info.spec.pod),
                node: node_name(ssn, t),
                resreq: info.resreq(),
            }
        })
        .collect()
}

/// The task's name for topology purposes: the pod annotation `volcano.sh/task-spec` only.
fn task_name(pod: &Pod) -> &str {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::TASK_SPEC))
        .map_or("", String::as_str)
}

/// The task role the annotation check accepts (Volcano's `TaskRole`): a non-empty
/// `volcano.sh/task-spec` annotation, else a non-empty label of the same key.
fn task_role(pod: &Pod) -> &str {
    let meta = &pod.metadata;
    non_empty_spec(meta.annotations.as_ref())
        .or_else(|| non_empty_spec(meta.labels.as_ref()))
        .unwrap_or("")
}

fn non_empty_spec(map: Option<&BTreeMap<String, String>>) -> Option<&str> {
    map.and_then(|m| m.get(keys::TASK_SPEC))
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The node the task is placed on in this session, else the one its pod names.
fn node_name(ssn: &SessionState, task: TaskId) -> Option<&str> {
    let t = ssn.task(task);
    match t.node {
        Some(n) => Some(ssn.node(n).name()),
        None => t.spec.node_name.as_deref(),
    }
}

/// `readTopologyFromPgAnnotations`: `Ok(None)` when none of the three annotations is present,
/// an error naming the first unknown or repeated task name otherwise (affinity, then
/// anti-affinity, then task order). `roles` are the job's task roles; `job` names it in errors.
fn read_topology(
    annotations: &BTreeMap<String, String>,
    roles: &HashSet<&str>,
    job: &str,
) -> Result<Option<Topology>, String> {
    let affinity = annotations.get(keys::TASK_TOPOLOGY_AFFINITY);
    let anti_affinity = annotations.get(keys::TASK_TOPOLOGY_ANTI_AFFINITY);
    let task_order = annotations.get(keys::TASK_TOPOLOGY_TASK_ORDER);
    if affinity.is_none() && anti_affinity.is_none() && task_order.is_none() {
        return Ok(None);
    }
    let mut topology = Topology::default();
    if let Some(value) = affinity {
        topology.affinity = split_groups(value);
        check_groups(&topology.affinity, roles, job)?;
    }
    if let Some(value) = anti_affinity {
        topology.anti_affinity = split_groups(value);
        check_groups(&topology.anti_affinity, roles, job)?;
    }
    if let Some(value) = task_order {
        topology.task_order = value.split(',').map(str::to_string).collect();
        check_groups(std::slice::from_ref(&topology.task_order), roles, job)?;
    }
    Ok(Some(topology))
}

/// `a,b;c` → `[[a, b], [c]]`, keeping empty names.
fn split_groups(value: &str) -> Vec<Vec<String>> {
    value
        .split(';')
        .map(|group| group.split(',').map(str::to_string).collect())
        .collect()
}

/// `affinityCheck`: every non-empty name is a role of the job and appears once per group.
fn check_groups(groups: &[Vec<String>], roles: &HashSet<&str>, job: &str) -> Result<(), String> {
    for group in groups {
        let mut seen = HashSet::new();
        for name in group.iter().filter(|n| !n.is_empty()) {
            if !roles.contains(name.as_str()) {
                return Err(format!("task {name} does not exist in job <{job}>"));
            }
            if !seen.insert(name.as_str()) {
                return Err(format!("task {name} is duplicate in job <{job}>"));
            }
        }
    }
    Ok(())
}
