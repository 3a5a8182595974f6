//! Per-job state of `task-topology`: the relation tables read from the PodGroup annotations,
//! the buckets and the per-node counts of tasks bound in this session
//! (spec/plugins-more.md §6.3, §6.4, §6.7; Volcano's `manager.go`, `bucket.go`).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use engine::model::{DimensionDefault, Resource, TaskId};

/// Priority of a task name by the strongest relation it takes part in (§6.3): the higher,
/// the earlier its tasks are placed into buckets.
pub(crate) const SELF_ANTI_AFFINITY: i32 = 4;
pub(crate) const INTER_AFFINITY: i32 = 3;
pub(crate) const SELF_AFFINITY: i32 = 2;
pub(crate) const INTER_ANTI_AFFINITY: i32 = 1;

/// The three annotations of a job, split but otherwise as written (names are not trimmed and
/// empty names stay in place). An absent annotation is an empty list.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Topology {
    pub affinity: Vec<Vec<String>>,
    pub anti_affinity: Vec<Vec<String>>,
    pub task_order: Vec<String>,
}

/// What the bucket construction needs to know about one task of the job.
#[derive(Clone, Debug)]
pub(crate) struct Candidate<'a> {
    pub task: TaskId,
    pub pod_name: &'a str,
    /// The pod's `volcano.sh/task-spec` annotation (empty when absent).
    pub name: &'a str,
    /// The node the task is on, for tasks that already have one.
    pub node: Option<&'a str>,
    pub resreq: &'a Resource,
}

/// A group of tasks of one job that should land on the same node.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bucket {
    pub index: usize,
    /// Members still to place, keyed by (pod name, task). Volcano keeps them in a map keyed by
    /// pod UID and walks it in random order when trimming; the key order here is the trimming
    /// order, so scores are reproducible.
    pub pending: BTreeMap<(String, TaskId), Resource>,
    /// Members per task name, placed or not.
    pub names: BTreeMap<String, i64>,
    /// cpu millicores + memory MiB + every scalar, over the pending members: the "weight" used
    /// to balance equally attractive buckets.
    pub req_score: f64,
    /// The summed request of the pending members.
    pub request: Resource,
    /// Members that have a node.
    pub bound: usize,
    /// Members per node.
    pub on_node: BTreeMap<String, i64>,
}

/// `CalcResReq`'s score of one request: 1 millicore, 1 MiB and one milli-unit of any scalar
/// count the same.
fn request_score(r: &Resource) -> f64 {
    r.milli_cpu + r.memory / 1024.0 / 1024.0 + r.scalars.iter().map(|(_, v)| v).sum::<f64>()
}

impl Bucket {
    fn add(&mut self, c: &Candidate<'_>) {
        *self.names.entry(c.name.to_string()).or_insert(0) += 1;
        match c.node {
            Some(node) => {
                *self.on_node.entry(node.to_string()).or_insert(0) += 1;
                self.bound += 1;
            }
            None => {
                self.pending
                    .insert((c.pod_name.to_string(), c.task), c.resreq.clone());
                self.req_score += request_score(c.resreq);
                self.request.add(c.resreq);
            }
        }
    }

    /// A member was placed on `node`. Like Volcano, the request is taken off even when the
    /// task was not pending (an undone eviction re-announces a running task).
    fn task_bound(&mut self, pod_name: &str, task: TaskId, node: &str, resreq: &Resource) {
        *self.on_node.entry(node.to_string()).or_insert(0) += 1;
        self.bound += 1;
        self.pending.remove(&(pod_name.to_string(), task));
        self.req_score -= request_score(resreq);
        self.request.sub(resreq);
    }

    /// Members placed or pending: the size `bucketMaxSize` tracks.
    fn size(&self) -> usize {
        self.pending.len() + self.bound
    }

    /// The summed request of the pending members fits `max` (with Volcano's 0.1 tolerance).
    pub fn request_fits(&self, max: &Resource) -> bool {
        self.request.less_equal(max, DimensionDefault::Zero)
    }
}

/// The bucket state of one job for one session.
#[derive(Debug, Default)]
pub(crate) struct JobManager {
    pub buckets: Vec<Bucket>,
    bucket_of: HashMap<TaskId, usize>,
    /// Highest relation priority per task name; names without relations have no entry.
    pub priority: HashMap<String, i32>,
    /// User order per task name: list length minus position, so the first name is highest.
    pub order: HashMap<String, i64>,
    inter_affinity: HashMap<String, HashSet<String>>,
    self_affinity: HashSet<String>,
    inter_anti_affinity: HashMap<String, HashSet<String>>,
    self_anti_affinity: HashSet<String>,
    /// Largest bucket (pending + placed) seen; never shrinks.
    pub bucket_max_size: usize,
    /// Node → task name → tasks of this job placed there during this session.
    pub node_tasks: HashMap<String, BTreeMap<String, i64>>,
}

fn add_pair(m: &mut HashMap<String, HashSet<String>>, a: &str, b: &str) {
    m.entry(a.to_string()).or_default().insert(b.to_string());
    m.entry(b.to_string()).or_default().insert(a.to_string());
}

fn has_pair(m: &HashMap<String, HashSet<String>>, a: &str, b: &str) -> bool {
    m.get(a).is_some_and(|s| s.contains(b))
}

impl JobManager {
    /// Turns the annotations into relation tables, priorities and the user order.
    pub fn new(topology: &Topology) -> Self {
        let mut m = JobManager::default();
        for group in &topology.affinity {
            if let [only] = group.as_slice() {
                m.self_affinity.insert(only.clone());
                m.mark(only, SELF_AFFINITY);
                continue;
            }
            for (i, a) in group.iter().enumerate() {
                for b in &group[..i] {
                    add_pair(&mut m.inter_affinity, a, b);
                }
                m.mark(a, INTER_AFFINITY);
            }
        }
        for group in &topology.anti_affinity {
            if let [only] = group.as_slice() {
                m.self_anti_affinity.insert(only.clone());
                m.mark(only, SELF_ANTI_AFFINITY);
                continue;
            }
            for (i, a) in group.iter().enumerate() {
                for b in &group[..i] {
                    add_pair(&mut m.inter_anti_affinity, a, b);
                }
                m.mark(a, INTER_ANTI_AFFINITY);
            }
        }
        let len = topology.task_order.len() as i64;
        for (i, name) in topology.task_order.iter().enumerate() {
            // A repeated (empty) name keeps its last position, as in Volcano.
            m.order.insert(name.clone(), len - i as i64);
        }
        m
    }

    fn mark(&mut self, name: &str, priority: i32) {
        let entry = self.priority.entry(name.to_string()).or_insert(0);
        *entry = (*entry).max(priority);
    }

    /// `checkTaskSetAffinity`: +n for each of `n` tasks `name` is attracted to (unless
    /// `only_anti`), −n for each it repels.
    pub fn affinity(&self, name: &str, counts: &BTreeMap<String, i64>, only_anti: bool) -> i64 {
        if name.is_empty() {
            return 0;
        }
        let mut total = 0i64;
        for (other, &n) in counts {
            let same = other == name;
            if !only_anti
                && ((same && self.self_affinity.contains(name))
                    || (!same && has_pair(&self.inter_affinity, name, other)))
            {
                total += n;
            }
            if (same && self.self_anti_affinity.contains(name))
                || (!same && has_pair(&self.inter_anti_affinity, name, other))
            {
                total -= n;
            }
        }
        total
    }

    /// `taskAffinityOrder`: `Greater` when task name `l` ranks above `r`, by user order, then
    /// relation priority. Two tasks of the same name are equal.
    pub fn rank(&self, l: &str, r: &str) -> Ordering {
        if l == r {
            return Ordering::Equal;
        }
        let order = |n: &str| self.order.get(n).copied().unwrap_or(0);
        let priority = |n: &str| self.priority.get(n).copied().unwrap_or(0);
        order(l)
            .cmp(&order(r))
            .then_with(|| priority(l).cmp(&priority(r)))
    }

    /// The bucket of a task; `None` for tasks out of any bucket or unknown to this job.
    pub fn bucket(&self, task: TaskId) -> Option<&Bucket> {
        self.bucket_of.get(&task).map(|&i| &self.buckets[i])
    }

    /// `ConstructBucket`: the candidates with a name that has a relation, in construction
    /// order, each put into the bucket it is most attracted to (§6.4). All other tasks stay
    /// out of bucket.
    pub fn construct(&mut self, candidates: &[Candidate<'_>]) {
        let mut members: Vec<&Candidate<'_>> = candidates
            .iter()
            .filter(|c| !c.name.is_empty() && self.priority.contains_key(c.name))
            .collect();
        members.sort_by(|a, b| self.construction_order(a, b));

        let mut node_bucket: HashMap<&str, usize> = HashMap::new();
        for c in members {
            let (mut best, best_aff) = match c.node {
                Some(node) => (node_bucket.get(node).copied(), 0),
                None => self.most_attractive(c.name),
            };
            if best_aff < 0 || best.is_none() {
                let index = self.buckets.len();
                self.buckets.push(Bucket {
                    index,
                    ..Bucket::default()
                });
                if let Some(node) = c.node {
                    node_bucket.insert(node, index);
                }
                best = Some(index);
            }
            let Some(index) = best else { continue };
            self.bucket_of.insert(c.task, index);
            let bucket = &mut self.buckets[index];
            bucket.add(c);
            self.bucket_max_size = self.bucket_max_size.max(bucket.size());
        }
    }

    /// Tasks that have a node first (by node name), then the others by descending rank, ties
    /// by pod name. Volcano's sort is not stable; two placed tasks on the same node are
    /// ordered by pod name here, which cannot change the outcome (they share a bucket).
    pub fn construction_order(&self, a: &Candidate<'_>, b: &Candidate<'_>) -> Ordering {
        match (a.node, b.node) {
            (Some(x), Some(y)) => x.cmp(y).then_with(|| a.pod_name.cmp(b.pod_name)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => self
                .rank(b.name, a.name)
                .then_with(|| a.pod_name.cmp(b.pod_name)),
        }
    }

    /// The bucket a pending task of `name` likes best, and how much: the highest affinity,
    /// ties to the lighter bucket (the earlier one when equally light). `(None, MIN)` when
    /// there is no bucket yet.
    fn most_attractive(&self, name: &str) -> (Option<usize>, i64) {
        let mut best: Option<usize> = None;
        let mut best_aff = i64::MIN;
        for b in &self.buckets {
            let a = self.affinity(name, &b.names, false);
            if a > best_aff {
                best = Some(b.index);
                best_aff = a;
            } else if a == best_aff && best.is_some_and(|i| b.req_score < self.buckets[i].req_score)
            {
                best = Some(b.index);
            }
        }
        (best, best_aff)
    }

    /// `TaskBound`: count the task on its node and, if it is in a bucket, move it from the
    /// bucket's pending members to its placed ones.
    pub fn task_bound(
        &mut self,
        task: TaskId,
        pod_name: &str,
        name: &str,
        node: &str,
        resreq: &Resource,
    ) {
        if !name.is_empty() {
            *self
                .node_tasks
                .entry(node.to_string())
                .or_default()
                .entry(name.to_string())
                .or_insert(0) += 1;
        }
        if let Some(&i) = self.bucket_of.get(&task) {
            self.buckets[i].task_bound(pod_name, task, node, resreq);
        }
    }
}
