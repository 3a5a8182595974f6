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
//!
//! The session hands its rows back to the memo as it ends, with the marks of the rows it
//! changed (`framework::rows`). The next build takes a row over instead of making it again
//! when nothing about it can differ: a task row of the same pod object that the session left
//! unchanged, in the same job; a job row of the same PodGroup object, with the same links,
//! unchanged by the session, with no topology to install, whose tasks are all taken over and
//! are all of its tasks; a node row of the same node object and load sample, unchanged, whose
//! tasks are all taken over. Ids move with the keys around them, so a row taken over has the
//! ids it holds renumbered. Everything else is made afresh and given its tasks in `TaskId`
//! order, as a build without a memo does.
//! The tables come out the same either way (the property test in `table_build/tests.rs`, which
//! runs sessions between builds, and the `carried_rows_*` decision properties).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
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
use reuse::Reuse;

/// What the last build left for the next one: its links, and the rows of its session once the
/// session ended. One per scheduler (clones of its [`SessionOptions`] share it). Holding the
/// specs' `Arc`s keeps their addresses from being reused, so pointer equality means the same
/// object.
#[derive(Default)]
pub struct TableMemo {
    links: Mutex<Option<Links>>,
    /// Numbers the builds: a session hands its rows back only to the links of its own build.
    builds: AtomicU64,
}

impl std::fmt::Debug for TableMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        let count = |of: fn(&Links) -> usize| links.as_ref().map_or(0, of);
        f.debug_struct("TableMemo")
            .field("tasks", &count(|l| l.tasks.len()))
            .field("jobs", &count(|l| l.jobs.len()))
            .field("same_pods", &count(|l| l.same_pods))
            .field("taken_jobs", &count(|l| l.taken_jobs))
            .field("taken_nodes", &count(|l| l.taken_nodes))
            .field("carried", &links.as_ref().map(|l| l.carried))
            .finish()
    }
}

impl TableMemo {
    /// Takes a session's rows back when it ends, for the next build: only while no other build
    /// came after the one that made them.
    pub(super) fn keep(&self, build: u64, rows: KeptRows) {
        self.with_links_of(build, |l| l.kept = Some(rows));
    }

    /// Takes what a session's plugins handed over as it ends ([`super::Plugin::hand_over`]),
    /// under the same condition as its rows, which it must come before.
    pub(super) fn keep_handed_over(&self, build: u64, handed: HandedOver) {
        self.with_links_of(build, |l| l.handed_over = Some(handed));
    }

    /// Runs `f` on the links of `build` while its session has not handed its rows back.
    fn with_links_of(&self, build: u64, f: impl FnOnce(&mut Links)) {
        let mut links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(l) = links.as_mut()
            && l.build == build
            && l.kept.is_none()
        {
            f(l);
        }
    }
}

/// What the plugins of one session handed over, by instance, and the configuration that made
/// them: only the same configuration's instances receive it.
pub(super) struct HandedOver {
    pub conf: Arc<SchedulerConf>,
    pub states: Vec<Option<Box<dyn std::any::Any + Send + Sync>>>,
}

/// A session's rows as it left them, and which of them it changed ([`super::rows::Rows`]).
pub(super) struct KeptRows {
    pub tasks: (Vec<TaskInfo>, Vec<u64>),
    pub jobs: (Vec<JobInfo>, Vec<u64>),
    pub nodes: (Vec<NodeInfo>, Vec<u64>),
}

struct Links {
    /// The build that left these links ([`TableMemo::keep`]).
    build: u64,
    /// The node name index the node links point into (node tables whose nodes kept their
    /// names and order share it: `state/node_table.rs`).
    node_by_name: Arc<FxHashMap<String, NodeId>>,
    /// The queues the queue links point into; only their names and order matter.
    queues: Vec<Arc<QueueSpec>>,
    priority_classes: Arc<BTreeMap<String, PriorityClassInfo>>,
    /// The jobs built from PodGroups, in uid order (their `JobId` order): their specs, and
    /// beside them what was resolved for them.
    job_specs: Vec<Arc<JobSpec>>,
    jobs: Vec<JobLinks>,
    /// Every pod, in key order (their `TaskId` order), likewise.
    task_specs: Vec<Arc<TaskSpec>>,
    tasks: Vec<TaskLinks>,
    /// The session's rows, once it ended.
    kept: Option<KeptRows>,
    /// What its plugins handed over, once it ended.
    handed_over: Option<HandedOver>,
    /// How many pods of the build that left these links were the same as the build before.
    same_pods: usize,
    /// Of those builds' jobs and pods, how many took their queue and node links over.
    taken_jobs: usize,
    taken_nodes: usize,
    /// How many rows that build took over from the session before.
    carried: Carried,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Carried {
    pub tasks: usize,
    pub jobs: usize,
    pub nodes: usize,
}

#[derive(Clone, Copy)]
struct JobLinks {
    queue: QueueId,
    priority: i32,
    /// Its PriorityClass was missing (the build records a warning for it).
    class_missing: bool,
    /// Its spec has a network-topology constraint or sub-group policies (kept so that an
    /// unchanged spec is not read again for it).
    topology: bool,
}

#[derive(Clone, Copy)]
struct TaskLinks {
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

/// An old list taken apart front to back: what a build takes over is moved, not cloned, so
/// that an unchanged object's reference count (in a cache line the session has not touched
/// since the last one) is not written.
struct Cursor<T> {
    rest: std::vec::IntoIter<T>,
    at: usize,
}

impl<T> Cursor<T> {
    fn new(items: Vec<T>) -> Cursor<T> {
        Cursor::starting_at(items, 0)
    }

    /// A cursor over items whose first is at position `at`.
    fn starting_at(items: Vec<T>, at: usize) -> Cursor<T> {
        Cursor {
            rest: items.into_iter(),
            at,
        }
    }

    fn peek(&self) -> Option<&T> {
        self.rest.as_slice().first()
    }

    fn next(&mut self) -> Option<T> {
        let item = self.rest.next();
        self.at += usize::from(item.is_some());
        item
    }

    /// The item at position `i`, dropping the ones before it; `None` when it was passed.
    fn take(&mut self, i: usize) -> Option<T> {
        if i < self.at {
            return None;
        }
        while self.at < i {
            self.next()?;
        }
        self.next()
    }
}

/// Steps the old specs, in key order, to `key`: the old position of the spec with that key
/// (dropping the ones before it, which are gone), the spec, and whether it is the very same
/// object. The same object is looked for at the cursor first, without reading any key.
fn step<X>(
    old: &mut Cursor<Arc<X>>,
    object: &Arc<X>,
    key: &str,
    key_of: impl Fn(&X) -> &str,
) -> Option<(usize, Arc<X>, bool)> {
    let at = old.at;
    if old.peek().is_some_and(|o| Arc::ptr_eq(o, object)) {
        return old.next().map(|o| (at, o, true));
    }
    while old.peek().is_some_and(|o| key_of(o) < key) {
        old.next();
    }
    let at = old.at;
    if old.peek().is_some_and(|o| key_of(o) == key) {
        return old.next().map(|o| (at, o, false));
    }
    None
}

/// The last build's links and rows, taken apart for this build.
struct Old {
    job_specs: Cursor<Arc<JobSpec>>,
    jobs: Vec<JobLinks>,
    task_specs: Cursor<Arc<TaskSpec>>,
    tasks: Vec<TaskLinks>,
    /// The last session's rows, where this build can take them over: it ended, and the nodes
    /// kept their names and order (so node ids still hold).
    kept: Option<OldRows>,
    /// What the last session's plugins handed over, where its rows can be taken over.
    handed_over: Option<HandedOver>,
    same_nodes: bool,
    same_job_links: bool,
}

struct OldRows {
    tasks: Reuse<TaskInfo>,
    task_changed: Vec<u64>,
    jobs: Reuse<JobInfo>,
    job_changed: Vec<u64>,
    nodes: Vec<NodeInfo>,
    node_changed: Vec<u64>,
}

impl Old {
    fn of(
        links: Option<Links>,
        snapshot: &Snapshot,
        queues: &[QueueInfo],
        node_table: &crate::state::NodeTable,
    ) -> Old {
        let Some(l) = links else {
            return Old {
                job_specs: Cursor::new(Vec::new()),
                jobs: Vec::new(),
                task_specs: Cursor::new(Vec::new()),
                tasks: Vec::new(),
                kept: None,
                handed_over: None,
                same_nodes: false,
                same_job_links: false,
            };
        };
        let same_nodes = Arc::ptr_eq(&l.node_by_name, &node_table.by_name);
        // A queue's status changes every session that places a job in it; its jobs' links
        // still hold while the queues keep their names and order.
        let same_job_links = l.queues.len() == queues.len()
            && l.queues
                .iter()
                .zip(queues)
                .all(|(a, b)| Arc::ptr_eq(a, &b.spec) || a.name == b.spec.name)
            && Arc::ptr_eq(&l.priority_classes, snapshot.priority_classes_shared());
        let kept = l.kept.filter(|k| {
            same_nodes
                && k.nodes.0.len() == node_table.specs.len()
                && k.tasks.0.len() == l.task_specs.len()
                && k.jobs.0.len() >= l.job_specs.len()
        });
        let handed_over = l.handed_over.filter(|_| kept.is_some());
        Old {
            handed_over,
            job_specs: Cursor::new(l.job_specs),
            jobs: l.jobs,
            task_specs: Cursor::new(l.task_specs),
            tasks: l.tasks,
            kept: kept.map(|k| OldRows {
                tasks: Reuse::of(k.tasks.0),
                task_changed: k.tasks.1,
                jobs: Reuse::of(k.jobs.0),
                job_changed: k.jobs.1,
                nodes: k.nodes.0,
                node_changed: k.nodes.1,
            }),
            same_nodes,
            same_job_links,
        }
    }
}

/// A job built from a PodGroup, before its row is made.
struct PodGroupJob<'s> {
    spec: &'s Arc<JobSpec>,
    links: JobLinks,
    /// The last session's row of the same PodGroup object, if that session left it unchanged
    /// and nothing else rules it out.
    kept_row: Option<usize>,
    /// The last session's position of the same PodGroup (by uid), whose row a new one replaces.
    old_row: Option<usize>,
}

/// What the pass over the PodGroups makes.
struct PodGroupPass<'s> {
    jobs: Vec<PodGroupJob<'s>>,
    job_specs: Vec<Arc<JobSpec>>,
    job_links: Vec<JobLinks>,
    /// Old job → the job of the same uid now, for the pods that take their links over.
    job_now: Vec<Option<JobId>>,
    /// Jobs with a network-topology constraint or sub-group policies, for `install_topology`
    /// (looking for them afterwards would touch every job's spec again).
    with_topology: Vec<JobId>,
    taken_jobs: usize,
}

/// Jobs from PodGroups whose queue exists (§2.4). Volcano skips the others silently; we also
/// say why on the PodGroup (the executor publishes an identical event once).
fn pod_group_pass<'s>(
    snapshot: &'s Snapshot,
    queue_by_name: &FxHashMap<String, QueueId>,
    old: &mut Old,
    events: &mut Vec<Event>,
) -> PodGroupPass<'s> {
    let count = snapshot.pod_group_count();
    let mut pass = PodGroupPass {
        jobs: Vec::with_capacity(count),
        job_specs: Vec::with_capacity(count),
        job_links: Vec::with_capacity(count),
        job_now: vec![None; old.jobs.len()],
        with_topology: Vec::new(),
        taken_jobs: 0,
    };
    for (pg, spec) in snapshot.pod_group_jobs() {
        // A replaced PodGroup (same uid, new object) keeps its job for the pods that link to
        // it; only the same object keeps its queue and priority.
        let found = step(&mut old.job_specs, spec, &spec.uid, |j| j.uid.as_str());
        let was_index = found.as_ref().map(|(i, _, _)| *i);
        let same = found.as_ref().filter(|f| f.2).map(|f| f.0);
        let links = match same.filter(|_| old.same_job_links) {
            Some(w) => {
                pass.taken_jobs += 1;
                old.jobs[w]
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
                    queue,
                    priority: snapshot.job_priority(&spec.priority_class_name),
                    class_missing: !spec.priority_class_name.is_empty()
                        && !snapshot
                            .priority_classes()
                            .contains_key(&spec.priority_class_name),
                    topology: spec.network_topology.is_some() || spec.has_sub_group_policy,
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
        let id = JobId::from_index(pass.jobs.len());
        if let Some(w) = was_index {
            pass.job_now[w] = Some(id);
        }
        let topology = links.topology;
        if topology {
            pass.with_topology.push(id);
        }
        // A job whose topology the session installs is made afresh.
        let kept_row = same.filter(|&w| {
            old.same_job_links
                && !topology
                && old
                    .kept
                    .as_ref()
                    .is_some_and(|k| !super::rows::bit(&k.job_changed, w))
        });
        pass.job_specs.push(match found {
            Some((_, old_spec, true)) => old_spec,
            _ => Arc::clone(spec),
        });
        pass.job_links.push(links);
        pass.jobs.push(PodGroupJob {
            spec,
            links,
            kept_row,
            old_row: was_index,
        });
    }
    pass
}

/// What the pass over the pods makes.
struct PodPass {
    tasks: Vec<TaskInfo>,
    task_specs: Vec<Arc<TaskSpec>>,
    task_links: Vec<TaskLinks>,
    /// The one-pod jobs of standalone pods, after the PodGroups' jobs.
    implicit_jobs: Vec<JobInfo>,
    /// Old task → its position now, for the tasks whose rows were taken over.
    task_now: Vec<Option<TaskId>>,
    /// The tasks on a node whose pods have inter-pod affinity or anti-affinity terms, and
    /// those whose pods ask for host ports.
    placed_with_pod_affinity: Vec<TaskId>,
    placed_with_host_ports: Vec<TaskId>,
    /// PodGroup jobs and nodes that gained, lost or changed a task: their rows are made afresh.
    touched_jobs: Vec<bool>,
    touched_nodes: Vec<bool>,
    same_pods: usize,
    taken_nodes: usize,
}

impl PodPass {
    fn touch(&mut self, job: Option<JobId>, node: Option<NodeId>) {
        if let Some(t) = job.and_then(|j| self.touched_jobs.get_mut(j.index())) {
            *t = true;
        }
        if let Some(t) = node.and_then(|n| self.touched_nodes.get_mut(n.index())) {
            *t = true;
        }
    }
}

/// Tasks; a standalone pod of ours gets its own one-pod job. Its uid is of our making and
/// shadows a PodGroup's of the same uid for the pods after it, as one map of both would.
fn pod_pass(
    snapshot: &Snapshot,
    queue_by_name: &FxHashMap<String, QueueId>,
    node_by_name: &FxHashMap<String, NodeId>,
    pg: &PodGroupPass<'_>,
    old: &mut Old,
    had_links: bool,
) -> PodPass {
    let pg_job_count = pg.jobs.len();
    let mut pg_jobs = PodGroupJobs {
        uids: pg.jobs.iter().map(|j| j.spec.uid.as_str()).collect(),
        map: None,
        // The first build resolves every pod: a map at once.
        searches: if had_links { 0 } else { SEARCHES_BEFORE_MAP },
    };
    let count = snapshot.pod_count();
    let mut rows = match &mut old.kept {
        Some(k) => std::mem::take(&mut k.tasks),
        None => Reuse::fresh(count),
    };
    let mut pass = PodPass {
        tasks: Vec::new(),
        task_specs: Vec::with_capacity(count),
        task_links: Vec::with_capacity(count),
        implicit_jobs: Vec::new(),
        task_now: vec![None; old.tasks.len()],
        touched_jobs: vec![false; pg_job_count],
        touched_nodes: vec![false; node_by_name.len()],
        same_pods: 0,
        taken_nodes: 0,
        placed_with_pod_affinity: Vec::new(),
        placed_with_host_ports: Vec::new(),
    };
    let mut implicit_by_uid: FxHashMap<String, JobId> = FxHashMap::default();
    let affinity: Vec<&str> = snapshot.pods_with_inter_pod_affinity().collect();
    let host_ports: Vec<&str> = snapshot.pods_with_host_ports().collect();
    let (mut affinity, mut host_ports) = (affinity.as_slice(), host_ports.as_slice());
    for spec in snapshot.pods() {
        let found = step(&mut old.task_specs, spec, &spec.key, |t| t.key.as_str());
        let was = found
            .as_ref()
            .filter(|f| f.2)
            .map(|f| (f.0, old.tasks[f.0]));
        pass.same_pods += usize::from(was.is_some());
        // A pod whose link names its PodGroup's job is a PodGroup's pod; only a shadow (rare)
        // needs its uid.
        let linked = was
            .and_then(|(_, w)| w.job)
            .filter(|_| implicit_by_uid.is_empty());
        let job = match linked {
            Some(old_job) => pg.job_now[old_job.index()],
            None => match &spec.job {
                JobLink::PodGroup(uid) => {
                    let shadow = if implicit_by_uid.is_empty() {
                        None
                    } else {
                        implicit_by_uid.get(uid).copied()
                    };
                    match (shadow, was.and_then(|(_, w)| w.job)) {
                        (Some(j), _) => Some(j),
                        (None, Some(old_job)) => pg.job_now[old_job.index()],
                        (None, None) => pg_jobs.find(uid),
                    }
                }
                JobLink::Standalone { queue } => match queue_by_name.get(queue) {
                    Some(&qid) if !spec.status.is_completed() || spec.node_name.is_some() => {
                        let id = JobId::from_index(pg_job_count + pass.implicit_jobs.len());
                        let job = implicit_job(snapshot, spec, queue, qid);
                        implicit_by_uid.insert(job.spec.uid.clone(), id);
                        pass.implicit_jobs.push(job);
                        Some(id)
                    }
                    _ => None,
                },
                JobLink::None => None,
            },
        };
        // Finished pods hold no node resources (§5.6).
        let node = match (was.filter(|_| old.same_nodes), &spec.node_name) {
            (Some((_, w)), _) => {
                pass.taken_nodes += 1;
                w.node
            }
            (None, Some(n)) if !spec.status.is_completed() => node_by_name.get(n).copied(),
            (None, _) => None,
        };
        let id = TaskId::from_index(rows.len());
        let pg_job = job.filter(|j| j.index() < pg_job_count);
        // The last session's row of the same pod, unchanged, in the same job as then.
        let kept = match (was, &old.kept) {
            (Some((w, links)), Some(k))
                if !super::rows::bit(&k.task_changed, w)
                    && links.job.and_then(|j| pg.job_now[j.index()]) == pg_job
                    && links.job.is_some() == pg_job.is_some() =>
            {
                rows.keep(w)
            }
            _ => None,
        };
        let placed = match kept {
            Some(row) => {
                row.job = job;
                if let Some((w, _)) = was {
                    pass.task_now[w] = Some(id);
                }
                row.node.is_some()
            }
            None => {
                pass.touch(pg_job, node);
                rows.put(
                    found.as_ref().map(|f| f.0),
                    TaskInfo::new(Arc::clone(spec), job, node),
                );
                node.is_some()
            }
        };
        pass.task_specs.push(match found {
            Some((_, old_spec, true)) => old_spec,
            _ => Arc::clone(spec),
        });
        pass.task_links.push(TaskLinks { job: pg_job, node });
        if placed {
            if noted(&mut affinity, &spec.key) {
                pass.placed_with_pod_affinity.push(id);
            }
            if noted(&mut host_ports, &spec.key) {
                pass.placed_with_host_ports.push(id);
            }
        }
    }
    pass.tasks = rows.finish();
    // The jobs and nodes of old tasks whose rows were not taken over lost a task.
    for (w, links) in old.tasks.iter().enumerate() {
        if pass.task_now[w].is_none() {
            let job = links.job.and_then(|j| pg.job_now[j.index()]);
            pass.touch(job, links.node);
        }
    }
    pass
}

pub(super) fn build_state(
    snapshot: &Snapshot,
    conf: Arc<SchedulerConf>,
    options: SessionOptions,
    now: Timestamp,
    uid: String,
) -> SessionState {
    let memo = Arc::clone(&options.tables);
    let build = memo.builds.fetch_add(1, Ordering::Relaxed) + 1;
    let links = memo
        .links
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let had_links = links.is_some();

    let mut queues = Vec::new();
    let mut queue_by_name = FxHashMap::default();
    for q in snapshot.queues() {
        queue_by_name.insert(q.name.clone(), QueueId::from_index(queues.len()));
        queues.push(QueueInfo { spec: q.clone() });
    }
    let node_table = snapshot.node_table();
    let node_by_name = node_table.by_name.clone();
    let total_resource = node_table.total_allocatable.clone();
    let mut old = Old::of(links, snapshot, &queues, node_table);

    let mut events = Vec::new();
    let pg = pod_group_pass(snapshot, &queue_by_name, &mut old, &mut events);
    let mut pods = pod_pass(
        snapshot,
        &queue_by_name,
        &node_by_name,
        &pg,
        &mut old,
        had_links,
    );
    let implicit = std::mem::take(&mut pods.implicit_jobs);
    let (jobs, fresh_jobs, carried_jobs) = job_rows(&pg, &pods, implicit, &mut old);
    let (nodes, fresh_nodes, carried_nodes) = node_rows(node_table, &pods, &mut old);
    let mut jobs = jobs;
    let mut nodes = nodes;
    add_tasks_to_fresh_rows(
        &pods.tasks,
        &mut jobs,
        &fresh_jobs,
        &mut nodes,
        &fresh_nodes,
    );
    let carried = Carried {
        tasks: pods.task_now.iter().filter(|t| t.is_some()).count(),
        jobs: carried_jobs,
        nodes: carried_nodes,
    };
    tracing::debug!(
        build,
        tasks = pods.tasks.len(),
        jobs = jobs.len(),
        carried_tasks = carried.tasks,
        carried_jobs = carried.jobs,
        carried_nodes = carried.nodes,
        "session tables built"
    );
    let PodPass {
        tasks,
        task_specs,
        task_links,
        same_pods,
        taken_nodes,
        placed_with_pod_affinity,
        placed_with_host_ports,
        ..
    } = pods;
    let PodGroupPass {
        job_specs,
        job_links,
        with_topology,
        taken_jobs,
        ..
    } = pg;
    let handed_over = old.handed_over.take();
    drop(old);
    *memo.links.lock().unwrap_or_else(PoisonError::into_inner) = Some(Links {
        build,
        node_by_name: Arc::clone(&node_table.by_name),
        queues: queues.iter().map(|q| q.spec.clone()).collect(),
        priority_classes: Arc::clone(snapshot.priority_classes_shared()),
        job_specs,
        jobs: job_links,
        task_specs,
        tasks: task_links,
        kept: None,
        handed_over: None,
        same_pods,
        taken_jobs,
        taken_nodes,
        carried,
    });

    let node_count = nodes.len();
    let mut state = SessionState {
        uid,
        now,
        built: build,
        tasks: super::rows::Rows::new(tasks),
        jobs: super::rows::Rows::new(jobs),
        nodes: super::rows::Rows::new(nodes),
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
        fresh_nodes,
        handed_over,
        placed_with_pod_affinity,
        placed_with_host_ports,
        search_epoch: 0,
        search_touches: Vec::new(),
        topology: crate::model::SessionTopology::default(),
        task_job_hyper_node: FxHashMap::default(),
    };
    state.install_topology(&with_topology);
    state
}

/// Whether the pod under `key` is among the keys noted (sorted): steps past the keys up to it.
/// The pods are walked in key order too, so without noted pods this costs a length check.
#[inline]
fn noted(keys: &mut &[&str], key: &str) -> bool {
    while let Some((&first, rest)) = keys.split_first() {
        if first > key {
            return false;
        }
        *keys = rest;
        if first == key {
            return true;
        }
    }
    false
}

/// The jobs' rows in `JobId` order: the last session's row of an unchanged PodGroup whose
/// tasks are the same (their ids renumbered), else a new row; then the one-pod jobs. Also
/// which rows are new (they get their tasks next) and how many were taken over.
fn job_rows(
    pg: &PodGroupPass<'_>,
    pods: &PodPass,
    implicit: Vec<JobInfo>,
    old: &mut Old,
) -> (Vec<JobInfo>, Vec<bool>, usize) {
    let mut jobs = match &mut old.kept {
        Some(k) => std::mem::take(&mut k.jobs),
        None => Reuse::fresh(pg.jobs.len() + implicit.len()),
    };
    let mut fresh = Vec::with_capacity(pg.jobs.len() + implicit.len());
    let mut carried = 0;
    let new_row = |j: &PodGroupJob<'_>| {
        let mut job = JobInfo::from_spec(Arc::clone(j.spec));
        job.queue = Some(j.links.queue);
        job.priority = j.links.priority;
        job
    };
    for (i, j) in pg.jobs.iter().enumerate() {
        // Left where it is and renumbered there ([`Reuse`]): a job row is large, and each
        // copy of it is another pass over its memory.
        // A kept row comes from the old rows (`kept_row` is only set when there are some).
        let kept = match j.kept_row {
            Some(w) if !pods.touched_jobs[i] => jobs.keep(w),
            _ => None,
        };
        let Some(row) = kept else {
            jobs.put(j.old_row, new_row(j));
            fresh.push(true);
            continue;
        };
        let renumbered = row.tasks.iter_mut().all(|t| {
            let now = pods.task_now.get(t.index()).copied().flatten();
            *t = now.unwrap_or(*t);
            now.is_some()
        });
        if renumbered {
            // The one field a session writes without marking the row.
            row.renewed_condition = None;
            carried += 1;
        } else {
            *row = new_row(j);
        }
        fresh.push(!renumbered);
    }
    let mut jobs = jobs.finish();
    jobs.extend(implicit);
    fresh.resize(jobs.len(), true);
    (jobs, fresh, carried)
}

/// The nodes' rows in `NodeId` order: the last session's row of a node whose spec, load and
/// tasks are the same (their ids renumbered), else a new row.
fn node_rows(
    table: &crate::state::NodeTable,
    pods: &PodPass,
    old: &mut Old,
) -> (Vec<NodeInfo>, Vec<bool>, usize) {
    let new_row = |i: usize| NodeInfo {
        usage: table.usage[i],
        ..NodeInfo::new(table.specs[i].clone())
    };
    let Some(rows) = &mut old.kept else {
        let nodes = (0..table.specs.len()).map(new_row).collect();
        return (nodes, vec![true; table.specs.len()], 0);
    };
    let mut nodes = std::mem::take(&mut rows.nodes);
    let mut fresh = vec![false; nodes.len()];
    let mut carried = 0;
    for (i, node) in nodes.iter_mut().enumerate() {
        let mut keep = !super::rows::bit(&rows.node_changed, i)
            && !pods.touched_nodes[i]
            && Arc::ptr_eq(&node.spec, &table.specs[i])
            && node.usage == table.usage[i];
        if keep {
            for (t, _) in node.tasks.iter_mut() {
                match pods.task_now.get(t.index()).copied().flatten() {
                    Some(now) => *t = now,
                    None => keep = false,
                }
            }
        }
        if keep {
            carried += 1;
        } else {
            *node = new_row(i);
            fresh[i] = true;
        }
    }
    (nodes, fresh, carried)
}

/// Adds every task, in `TaskId` order, to its job's and its node's row where that row is new;
/// then works out whether each new job is ours.
fn add_tasks_to_fresh_rows(
    tasks: &[TaskInfo],
    jobs: &mut [JobInfo],
    fresh_jobs: &[bool],
    nodes: &mut [NodeInfo],
    fresh_nodes: &[bool],
) {
    for (i, task) in tasks.iter().enumerate() {
        let id = TaskId::from_index(i);
        if let Some(n) = task.node.filter(|n| fresh_nodes[n.index()])
            && let Err(e) = nodes[n.index()].add_task(id, task)
        {
            tracing::warn!(error = %e, "task not added to its node");
        }
        if let Some(j) = task.job.filter(|j| fresh_jobs[j.index()]) {
            jobs[j.index()].add_task(id, task);
        }
    }
    for (job, _) in jobs.iter_mut().zip(fresh_jobs).filter(|(_, f)| **f) {
        job.owned = job.tasks.is_empty() || job.tasks.iter().any(|t| tasks[t.index()].spec.ours);
    }
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

mod reuse;
#[cfg(test)]
mod tests;
