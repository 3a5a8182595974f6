//! Building a session's tables from a snapshot (spec/framework.md §2.4), and what one build
//! leaves for the next.
//!
//! A build resolves names: a pod's job by its PodGroup's uid, a pod's node by name, a job's
//! queue and priority by name. Each lookup reads strings scattered over the heap, and a daemon
//! under a steady stream rebuilds the tables of the whole cluster every session although only
//! a few objects changed. So a build leaves its links in a [`TableMemo`], and the next build
//! walks its snapshot beside them (both in key order): a pod or PodGroup that is the very same
//! `Arc` as last time takes its links over, provided what they point into is unchanged too
//! (the nodes' and the queues' names and order, the priority classes); everything else is
//! resolved by name.
//! The tables come out the same either way (the property test in `table_build/tests.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashMap;

use k8s_openapi::jiff::Timestamp;

use crate::conf::SchedulerConf;
use crate::model::node::NodeInfo;
use crate::model::queue::{QueueInfo, QueueSpec};
use crate::model::task::{JobLink, TaskInfo, TaskSpec};
use crate::model::{JobId, JobInfo, JobSpec, NodeId, QueueId, TaskId};
use crate::state::{PriorityClassInfo, Snapshot};

use super::decisions::{Decisions, Event, EventType, ObjectRef};
use super::session_state::{SessionOptions, SessionState};

/// The links the last build resolved, for the next one; one per scheduler (clones of its
/// [`SessionOptions`] share it). Holding the specs' `Arc`s keeps their addresses from being
/// reused, so pointer equality means the same object.
#[derive(Default)]
pub struct TableMemo {
    links: Mutex<Option<Links>>,
}

impl std::fmt::Debug for TableMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("TableMemo")
            .field("tasks", &links.as_ref().map_or(0, |l| l.tasks.len()))
            .field("jobs", &links.as_ref().map_or(0, |l| l.jobs.len()))
            .field("same_pods", &links.as_ref().map_or(0, |l| l.same_pods))
            .field("taken_jobs", &links.as_ref().map_or(0, |l| l.taken_jobs))
            .field("taken_nodes", &links.as_ref().map_or(0, |l| l.taken_nodes))
            .finish()
    }
}

struct Links {
    /// The node name index the node links point into (node tables whose nodes kept their
    /// names and order share it: `state/node_table.rs`).
    node_by_name: Arc<FxHashMap<String, NodeId>>,
    /// The queues the queue links point into; only their names and order matter.
    queues: Vec<Arc<QueueSpec>>,
    priority_classes: Arc<BTreeMap<String, PriorityClassInfo>>,
    /// The jobs built from PodGroups, in uid order (their `JobId` order).
    jobs: Vec<JobLinks>,
    /// Every pod, in key order (their `TaskId` order).
    tasks: Vec<TaskLinks>,
    /// How many pods of the build that left these links were the same as the build before.
    same_pods: usize,
    /// Of those builds' jobs and pods, how many took their queue and node links over.
    taken_jobs: usize,
    taken_nodes: usize,
}

struct JobLinks {
    spec: Arc<JobSpec>,
    queue: QueueId,
    priority: i32,
    /// Its PriorityClass was missing (the build records a warning for it).
    class_missing: bool,
}

struct TaskLinks {
    spec: Arc<TaskSpec>,
    /// Its PodGroup's job (`None` also when it had none or belonged to a one-pod job).
    job: Option<JobId>,
    node: Option<NodeId>,
}

/// Binary searches a few lookups cost less than hashing every uid; a build that resolves many
/// (the first one, or after much changed) switches to a map.
const SEARCHES_BEFORE_MAP: u32 = 64;

/// The PodGroup jobs built so far by uid: their uids in `JobId` order, which is uid order.
struct PodGroupJobs<'a> {
    uids: Vec<&'a str>,
    map: Option<FxHashMap<&'a str, JobId>>,
    searches: u32,
}

impl<'a> PodGroupJobs<'a> {
    fn find(&mut self, uid: &str) -> Option<JobId> {
        if self.map.is_none() && self.searches >= SEARCHES_BEFORE_MAP {
            let map = self
                .uids
                .iter()
                .enumerate()
                .map(|(i, u)| (*u, JobId::from_index(i)))
                .collect();
            self.map = Some(map);
        }
        match &self.map {
            Some(map) => map.get(uid).copied(),
            None => {
                self.searches += 1;
                self.uids.binary_search(&uid).ok().map(JobId::from_index)
            }
        }
    }
}

/// Steps an old list in key order beside a new one: the position of the old entry with `key`
/// (over the ones before it, which are gone), and whether it is the very same object. The
/// same object is looked for at the cursor first, without reading any key.
fn step<T, X>(
    old: &[T],
    at: &mut usize,
    object: &Arc<X>,
    key: &str,
    of: impl Fn(&T) -> (&Arc<X>, &str),
) -> Option<(usize, bool)> {
    if old.get(*at).is_some_and(|o| Arc::ptr_eq(of(o).0, object)) {
        *at += 1;
        return Some((*at - 1, true));
    }
    while old.get(*at).is_some_and(|o| of(o).1 < key) {
        *at += 1;
    }
    if old.get(*at).is_some_and(|o| of(o).1 == key) {
        *at += 1;
        return Some((*at - 1, false));
    }
    None
}

pub(super) fn build_state(
    snapshot: &Snapshot,
    conf: Arc<SchedulerConf>,
    options: SessionOptions,
    now: Timestamp,
    uid: String,
) -> SessionState {
    let memo = Arc::clone(&options.tables);
    let old = memo
        .links
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();

    let mut queues = Vec::new();
    let mut queue_by_name = FxHashMap::default();
    for q in snapshot.queues() {
        queue_by_name.insert(q.name.clone(), QueueId::from_index(queues.len()));
        queues.push(QueueInfo { spec: q.clone() });
    }

    let node_table = snapshot.node_table();
    let mut nodes: Vec<NodeInfo> = node_table
        .specs
        .iter()
        .zip(&node_table.usage)
        .map(|(n, usage)| NodeInfo {
            usage: *usage,
            ..NodeInfo::new(n.clone())
        })
        .collect();
    let node_by_name = node_table.by_name.clone();
    let total_resource = node_table.total_allocatable.clone();

    let (old_jobs, old_tasks, same_nodes, same_job_links) = match &old {
        Some(l) => (
            l.jobs.as_slice(),
            l.tasks.as_slice(),
            Arc::ptr_eq(&l.node_by_name, &node_table.by_name),
            // A queue's status changes every session that places a job in it; its jobs'
            // links still hold while the queues keep their names and order.
            l.queues.len() == queues.len()
                && l.queues
                    .iter()
                    .zip(&queues)
                    .all(|(a, b)| Arc::ptr_eq(a, &b.spec) || a.name == b.spec.name)
                && Arc::ptr_eq(&l.priority_classes, snapshot.priority_classes_shared()),
        ),
        None => (&[][..], &[][..], false, false),
    };

    // Jobs from PodGroups whose queue exists (§2.4). Volcano skips the others silently; we
    // also say why on the PodGroup (the executor publishes an identical event once).
    // Sized for the PodGroups (one-pod jobs come after): a job is large, and growing the
    // table copied it several times a session.
    let mut jobs: Vec<JobInfo> = Vec::with_capacity(snapshot.pod_group_count());
    let mut job_links: Vec<JobLinks> = Vec::with_capacity(snapshot.pod_group_count());
    // Jobs with a network-topology constraint or sub-group policies, for `install_topology`
    // (looking for them afterwards would touch every job's spec again).
    let mut with_topology: Vec<JobId> = Vec::new();
    let mut events = Vec::new();
    // Old job → the job of the same uid now, for the pods that take their links over.
    let mut job_now: Vec<Option<JobId>> = vec![None; old_jobs.len()];
    let mut pg_jobs = PodGroupJobs {
        uids: Vec::new(),
        map: None,
        searches: if old.is_some() {
            0
        } else {
            SEARCHES_BEFORE_MAP
        },
    };
    let mut old_at = 0;
    let mut taken_jobs = 0;
    for (pg, spec) in snapshot.pod_group_jobs() {
        // A replaced PodGroup (same uid, new object) keeps its job for the pods that link to
        // it; only the same object keeps its queue and priority.
        let old_job = step(old_jobs, &mut old_at, spec, &spec.uid, |j| {
            (&j.spec, j.spec.uid.as_str())
        });
        let was_index = old_job.map(|(i, _)| i);
        let was = old_job.filter(|&(_, same)| same).map(|(i, _)| &old_jobs[i]);
        let links = match was.filter(|_| same_job_links) {
            Some(w) => {
                taken_jobs += 1;
                JobLinks {
                    spec: spec.clone(),
                    queue: w.queue,
                    priority: w.priority,
                    class_missing: w.class_missing,
                }
            }
            None => {
                let Some(&queue) = queue_by_name.get(&spec.queue_name) else {
                    tracing::debug!(pod_group = %spec.uid, queue = %spec.queue_name, "queue not found; job skipped");
                    events.push(Event {
                        object: pg_ref(pg),
                        type_: EventType::Warning,
                        reason: "QueueNotFound".to_string(),
                        message: format!(
                            "queue {} does not exist; the pod group is not scheduled until it does",
                            spec.queue_name
                        ),
                    });
                    continue;
                };
                JobLinks {
                    spec: spec.clone(),
                    queue,
                    priority: snapshot.job_priority(&spec.priority_class_name),
                    class_missing: !spec.priority_class_name.is_empty()
                        && !snapshot
                            .priority_classes()
                            .contains_key(&spec.priority_class_name),
                }
            }
        };
        if links.class_missing {
            events.push(Event {
                object: pg_ref(pg),
                type_: EventType::Warning,
                reason: "PriorityClassNotFound".to_string(),
                message: format!(
                    "priority class {} does not exist; the job gets the default priority",
                    spec.priority_class_name
                ),
            });
        }
        let id = JobId::from_index(jobs.len());
        if let Some(w) = was_index {
            job_now[w] = Some(id);
        }
        if spec.network_topology.is_some() || spec.has_sub_group_policy {
            with_topology.push(id);
        }
        let mut job = JobInfo::from_spec(spec.clone());
        job.queue = Some(links.queue);
        job.priority = links.priority;
        pg_jobs.uids.push(spec.uid.as_str());
        job_links.push(links);
        jobs.push(job);
    }
    let pg_job_count = jobs.len();

    // Tasks; a standalone pod of ours gets its own one-pod job. Its uid is of our making and
    // shadows a PodGroup's of the same uid for the pods after it, as one map of both would.
    let mut implicit_by_uid: FxHashMap<String, JobId> = FxHashMap::default();
    let mut tasks: Vec<TaskInfo> = Vec::with_capacity(snapshot.pod_count());
    let mut task_links: Vec<TaskLinks> = Vec::with_capacity(snapshot.pod_count());
    let mut old_at = 0;
    let mut same_pods = 0;
    let mut taken_nodes = 0;
    for spec in snapshot.pods() {
        let was = step(old_tasks, &mut old_at, spec, &spec.key, |t| {
            (&t.spec, t.spec.key.as_str())
        })
        .filter(|&(_, same)| same)
        .map(|(i, _)| &old_tasks[i]);
        same_pods += usize::from(was.is_some());
        let job = match &spec.job {
            JobLink::PodGroup(uid) => {
                let shadow = if implicit_by_uid.is_empty() {
                    None
                } else {
                    implicit_by_uid.get(uid).copied()
                };
                match (shadow, was.and_then(|w| w.job)) {
                    (Some(j), _) => Some(j),
                    (None, Some(old_job)) => job_now[old_job.index()],
                    (None, None) => pg_jobs.find(uid),
                }
            }
            JobLink::Standalone { queue } => match queue_by_name.get(queue) {
                Some(&qid) if !spec.status.is_completed() || spec.node_name.is_some() => {
                    let id = JobId::from_index(jobs.len());
                    let job = implicit_job(snapshot, spec, queue, qid);
                    implicit_by_uid.insert(job.spec.uid.clone(), id);
                    jobs.push(job);
                    Some(id)
                }
                _ => None,
            },
            JobLink::None => None,
        };
        // Finished pods hold no node resources (§5.6).
        let node = match (was.filter(|_| same_nodes), &spec.node_name) {
            (Some(w), _) => {
                taken_nodes += 1;
                w.node
            }
            (None, Some(n)) if !spec.status.is_completed() => node_by_name.get(n).copied(),
            (None, _) => None,
        };
        let id = TaskId::from_index(tasks.len());
        let task = TaskInfo::new(spec.clone(), job, node);
        if let Some(n) = node
            && let Err(e) = nodes[n.index()].add_task(id, &task)
        {
            tracing::warn!(error = %e, "task not added to its node");
        }
        if let Some(j) = job {
            jobs[j.index()].add_task(id, &task);
        }
        task_links.push(TaskLinks {
            spec: spec.clone(),
            job: job.filter(|j| j.index() < pg_job_count),
            node,
        });
        tasks.push(task);
    }
    drop(old);
    *memo.links.lock().unwrap_or_else(PoisonError::into_inner) = Some(Links {
        node_by_name: Arc::clone(&node_table.by_name),
        queues: queues.iter().map(|q| q.spec.clone()).collect(),
        priority_classes: Arc::clone(snapshot.priority_classes_shared()),
        jobs: job_links,
        tasks: task_links,
        same_pods,
        taken_jobs,
        taken_nodes,
    });

    for job in &mut jobs {
        job.owned = job.tasks.is_empty() || job.tasks.iter().any(|t| tasks[t.index()].spec.ours);
    }

    let node_count = nodes.len();
    let mut state = SessionState {
        uid,
        now,
        tasks,
        jobs,
        nodes,
        queues,
        node_by_name,
        queue_by_name,
        total_resource,
        snapshot: snapshot.clone(),
        configured_actions: conf.actions.clone(),
        conf,
        options,
        current_action: String::new(),
        queue_metrics: BTreeMap::new(),
        job_metrics: Vec::new(),
        events,
        decisions: Decisions::default(),
        last_processed_node_index: 0,
        node_versions: vec![0; node_count],
        search_epoch: 0,
        search_touches: Vec::new(),
        topology: crate::model::SessionTopology::default(),
        task_job_hyper_node: FxHashMap::default(),
    };
    state.install_topology(&with_topology);
    state
}

/// The PodGroup as an event's object.
fn pg_ref(pg: &apis::PodGroup) -> ObjectRef {
    ObjectRef {
        kind: "PodGroup",
        namespace: Some(
            pg.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
        ),
        name: pg.metadata.name.clone().unwrap_or_default(),
        uid: pg.metadata.uid.clone().unwrap_or_default(),
    }
}

/// The one-pod job a standalone pod of ours gets (the PodGroup Volcano's controller would
/// create for it).
fn implicit_job(snapshot: &Snapshot, spec: &TaskSpec, queue: &str, qid: QueueId) -> JobInfo {
    let name = format!("podgroup-{}", spec.uid);
    let uid = format!("{}/{name}", spec.namespace);
    let class = spec
        .pod
        .spec
        .as_ref()
        .and_then(|s| s.priority_class_name.clone())
        .unwrap_or_default();
    let mut job_spec = JobSpec::new(uid, name, spec.namespace.clone(), queue.to_string(), 1);
    job_spec.implicit = true;
    job_spec.creation = spec.creation;
    job_spec.priority_class_name = class;
    // It stands for the PodGroup Volcano's controller would create for it, whose
    // minResources are the pod's requests (spec/kubernetes.md §4.6), so the enqueue gate
    // judges it as Volcano would.
    job_spec.min_resources = Some(spec.resreq.clone());
    let mut job = JobInfo::from_spec(Arc::new(job_spec));
    job.queue = Some(qid);
    job.priority = snapshot.job_priority(&job.spec.priority_class_name);
    job
}

#[cfg(test)]
mod tests;
