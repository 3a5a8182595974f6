//! `drf`: Dominant Resource Fairness, flat and hierarchical (spec/plugins-core.md §3).
//!
//! Every job's *dominant share* is the largest ratio `allocated / cluster total` over the
//! cluster's resource dimensions (§3.3). Jobs with a smaller dominant share go first (§3.5), and a
//! preemption is allowed only when the preemptor, after receiving its task, would not be richer
//! than the victim after losing it (§3.6). Allocate/deallocate events keep the shares current
//! (§3.7).
//!
//! With `enableHierarchy: true` (HDRF, §3.8–§3.10) the plugin also arranges the jobs in a tree
//! built from the queues' `volcano.sh/hierarchy` and `volcano.sh/hierarchy-weights` annotations:
//! inner nodes are path elements, leaves are jobs. An inner node's share is computed from its
//! children brought down to a common dominant share; saturated subtrees sort last; queues are
//! ordered by comparing weighted shares level by level from the top (`HdrfTree`). A reclaim
//! candidate is a victim when, in a copy of the tree where the reclaimer got its task and the
//! candidate lost its own, the reclaimer's queue sorts strictly first (§3.10). The seed notes'
//! simplifications (§3.13) are not followed: the code's saturation and `mdr` rules are.
//!
//! The `volcano_job_share` gauge (§3.11) is fed at close through `SessionState::job_metrics`
//! with each job's final dominant share.
//!
//! Deliberate differences from Volcano, all on inputs that crash the Go code or make it random:
//!
//! * a queue whose `hierarchy-weights` has fewer elements than its path gives the missing levels
//!   weight 1 (Volcano indexes out of range); like any unusable weight, it is reported once per
//!   Queue version where the Queue is read (`engine::model::queue::value_problems`);
//! * comparing a queue whose path has no node in the tree (a queue without jobs) gives no
//!   opinion (Volcano dereferences a missing child);
//! * an inner node takes its weight from the first job, in session order, whose queue creates
//!   it (Volcano walks a map, so its "first" is random).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use engine::conf::Arguments;
use engine::framework::{ABSTAIN, ExtensionPoints, PERMIT, Plugin, SessionState};
use engine::model::queue::{QueueSpec, hierarchy_weight};
use engine::model::resource::{CPU, MEMORY, MIN_RESOURCE, share};
use engine::model::{JobId, QueueId, Resource, ResourceName, TaskId};

/// Registered plugin name.
pub const NAME: &str = "drf";

/// Tolerance of the preemption comparison (§3.1); job and queue order compare shares exactly.
const SHARE_DELTA: f64 = 0.000_001;

/// Builds the plugin; `drf` reads no arguments (§3.1).
pub fn new(_args: &Arguments) -> Box<dyn Plugin> {
    Box::new(Drf::default())
}

// ---------------------------------------------------------------------------------------------
// Dominant shares (§3.3)
// ---------------------------------------------------------------------------------------------

/// One resource dimension: cpu, memory or a scalar.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Dimension {
    Cpu,
    Memory,
    Scalar(ResourceName),
}

impl Dimension {
    fn value(self, r: &Resource) -> f64 {
        match self {
            Dimension::Cpu => r.milli_cpu,
            Dimension::Memory => r.memory,
            Dimension::Scalar(n) => r.scalar(n),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Dimension::Cpu => CPU,
            Dimension::Memory => MEMORY,
            Dimension::Scalar(n) => n.as_str(),
        }
    }
}

/// Volcano's `ResourceNames()` of `r`, in no particular order: the dimensions at or above ε,
/// `pods` included.
fn present_dimensions(r: &Resource) -> impl Iterator<Item = Dimension> + '_ {
    let cpu = (r.milli_cpu >= MIN_RESOURCE).then_some(Dimension::Cpu);
    let memory = (r.memory >= MIN_RESOURCE).then_some(Dimension::Memory);
    let scalars = r
        .scalars
        .iter()
        .filter(|&(_, v)| v >= MIN_RESOURCE)
        .map(|(n, _)| Dimension::Scalar(n));
    cpu.into_iter().chain(memory).chain(scalars)
}

/// The dimensions of `total` that count towards a share (§3.3), in Volcano's `ResourceNames()`
/// order (cpu, memory, then scalars by name): a resource no node offers is ignored.
fn dimensions(total: &Resource) -> Vec<Dimension> {
    let mut dims: Vec<Dimension> = present_dimensions(total).collect();
    dims.sort_by_key(|d| match d {
        Dimension::Cpu => (0, ""),
        Dimension::Memory => (1, ""),
        Dimension::Scalar(n) => (2, n.as_str()),
    });
    dims
}

/// A dominant share and the resource it comes from (`""` when the share is 0).
#[derive(Copy, Clone, Debug, PartialEq)]
struct DominantShare {
    share: f64,
    resource: &'static str,
}

impl DominantShare {
    const ZERO: DominantShare = DominantShare {
        share: 0.0,
        resource: "",
    };
}

/// The session's cluster total and its share-bearing dimensions.
#[derive(Clone, Debug, Default)]
struct ShareBasis {
    total: Resource,
    dims: Vec<Dimension>,
}

impl ShareBasis {
    fn new(total: Resource) -> Self {
        let dims = dimensions(&total);
        ShareBasis { total, dims }
    }

    /// `calculateShare` (§3.3): the largest `Share(allocated, total)` over the dimensions; on a
    /// tie the earlier dimension keeps the title.
    fn share_of(&self, allocated: &Resource) -> DominantShare {
        let mut best = DominantShare::ZERO;
        for &d in &self.dims {
            let s = share(d.value(allocated), d.value(&self.total));
            if s > best.share {
                best = DominantShare {
                    share: s,
                    resource: d.name(),
                };
            }
        }
        best
    }

    /// The demanding resources of §3.8: dimensions of the total not yet fully allocated
    /// (strict `<`, no tolerance).
    fn demanding(&self, total_allocated: &Resource) -> Vec<Dimension> {
        self.dims
            .iter()
            .copied()
            .filter(|d| d.value(total_allocated) < d.value(&self.total))
            .collect()
    }
}

/// Volcano's share comparison: exact equality, otherwise smaller first (a NaN sorts last).
fn compare_shares(l: f64, r: f64) -> Ordering {
    if l == r {
        Ordering::Equal
    } else if l < r {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// Per-job state (`drfAttr`, §3.2).
#[derive(Clone, Debug, PartialEq)]
struct JobAttr {
    /// What the plugin has seen the job receive: the session's allocated tasks at open, then
    /// every allocate/deallocate event (pipelined tasks included, as in Volcano).
    allocated: Resource,
    dominant: DominantShare,
}

impl JobAttr {
    fn new(allocated: Resource, basis: &ShareBasis) -> Self {
        let dominant = basis.share_of(&allocated);
        JobAttr {
            allocated,
            dominant,
        }
    }

    fn add(&mut self, r: &Resource, basis: &ShareBasis) {
        self.allocated.add(r);
        self.dominant = basis.share_of(&self.allocated);
    }

    /// Volcano's asserting subtraction: an impossible result is logged, not refused.
    fn sub(&mut self, r: &Resource, basis: &ShareBasis) {
        self.allocated.sub(r);
        self.dominant = basis.share_of(&self.allocated);
    }
}

// ---------------------------------------------------------------------------------------------
// The HDRF tree (§3.8, §3.9)
// ---------------------------------------------------------------------------------------------

/// Index of a node in [`HdrfTree::nodes`].
type NodeIndex = usize;

/// The root is always the first node.
const ROOT: NodeIndex = 0;

/// Where a queue's jobs hang in the tree: its `volcano.sh/hierarchy` path (slash-separated, the
/// first element standing for the root) and the matching `volcano.sh/hierarchy-weights`.
#[derive(Copy, Clone, Debug)]
struct QueuePath<'a> {
    /// Queue name, for log messages only.
    queue: &'a str,
    hierarchy: &'a str,
    weights: &'a str,
}

impl<'a> From<&'a QueueSpec> for QueuePath<'a> {
    fn from(q: &'a QueueSpec) -> Self {
        QueuePath {
            queue: &q.name,
            hierarchy: &q.hierarchy,
            weights: &q.hierarchy_weights,
        }
    }
}

/// The weight of a new inner node at path position `i` ([`hierarchy_weight`]: below 1 or
/// unparsable counts as 1, a missing element too). What is wrong with a queue's weights is
/// reported once per Queue version where the Queue is read (`value_problems`), not here, where
/// it would be at every session.
fn node_weight(path: QueuePath<'_>, i: usize) -> f64 {
    hierarchy_weight(path.weights, i).0
}

/// `resourceSaturated` (§3.8): a job is saturated when, among the resources it holds (at or
/// above ε), one is fully granted (held ≥ requested, both non-zero) or one it requests is
/// exhausted cluster-wide (not demanding). A job holding nothing is never saturated.
fn resource_saturated(allocated: &Resource, request: &Resource, demanding: &[Dimension]) -> bool {
    present_dimensions(allocated).any(|d| {
        let (held, wanted) = (d.value(allocated), d.value(request));
        (held != 0.0 && wanted != 0.0 && held >= wanted)
            || (wanted != 0.0 && !demanding.contains(&d))
    })
}

/// The children of an inner node: path elements by name, and job leaves. Job keys cannot clash
/// with path elements this way (Volcano keeps both in one map, keyed by `ns/name` job ids that
/// never equal a path element because those contain no `/`).
#[derive(Clone, Debug, Default, PartialEq)]
struct Children {
    groups: BTreeMap<String, NodeIndex>,
    jobs: BTreeMap<JobId, NodeIndex>,
}

impl Children {
    fn all(&self) -> impl Iterator<Item = NodeIndex> + '_ {
        self.groups.values().chain(self.jobs.values()).copied()
    }
}

#[derive(Clone, Debug, PartialEq)]
enum NodeKind {
    /// A path element (the root is one too).
    Inner { name: String, children: Children },
    /// A job; `request` is its total request, whatever its tasks' status.
    Leaf { job: JobId, request: Resource },
}

/// `hierarchicalNode`. A leaf's `allocated` and `share` are its job's; an inner node's are
/// derived from its children by [`HdrfTree::recompute_node`].
#[derive(Clone, Debug, PartialEq)]
struct TreeNode {
    /// `None` only for the root.
    parent: Option<NodeIndex>,
    weight: f64,
    saturated: bool,
    allocated: Resource,
    share: DominantShare,
    kind: NodeKind,
}

impl TreeNode {
    fn weighted_share(&self) -> f64 {
        self.share.share / self.weight
    }
}

/// The HDRF tree together with the running total it is computed against (§3.2
/// `hierarchicalRoot` and `totalAllocated`).
///
/// Nodes live in an arena and are only ever appended (a job's leaf is replaced in place), so
/// every child has a larger index than its parent: walking the arena backwards visits children
/// before parents, the post-order of Volcano's recursive update, without recursion (paths come
/// from annotations and may be arbitrarily deep).
///
/// Volcano recomputes the whole tree on every update. That result depends only on the leaves
/// and on the set of demanding resources, so while that set is unchanged only the updated leaf
/// and its ancestors can change and only they are recomputed, with bit-for-bit the same result.
#[derive(Clone, Debug, PartialEq)]
struct HdrfTree {
    nodes: Vec<TreeNode>,
    /// Sum of the tracked jobs' allocations.
    total_allocated: Resource,
    /// The demanding resources of the last recomputation; `None` before the first.
    demanding: Option<Vec<Dimension>>,
}

impl Default for HdrfTree {
    fn default() -> Self {
        HdrfTree {
            nodes: vec![TreeNode {
                parent: None,
                weight: 1.0,
                saturated: false,
                allocated: Resource::empty(),
                share: DominantShare::ZERO,
                kind: NodeKind::Inner {
                    name: "root".to_string(),
                    children: Children::default(),
                },
            }],
            total_allocated: Resource::empty(),
            demanding: None,
        }
    }
}

impl HdrfTree {
    fn children(&self, node: NodeIndex) -> Option<&Children> {
        match &self.nodes[node].kind {
            NodeKind::Inner { children, .. } => Some(children),
            NodeKind::Leaf { .. } => None,
        }
    }

    /// The path-element child `name` of `node`.
    fn group(&self, node: NodeIndex, name: &str) -> Option<NodeIndex> {
        self.children(node)?.groups.get(name).copied()
    }

    /// Appends `node` as a child of `parent` and returns its index.
    fn push_child(&mut self, parent: NodeIndex, mut node: TreeNode) -> NodeIndex {
        let index = self.nodes.len();
        node.parent = Some(parent);
        if let NodeKind::Inner { children, .. } = &mut self.nodes[parent].kind {
            match &node.kind {
                NodeKind::Inner { name, .. } => {
                    children.groups.insert(name.clone(), index);
                }
                NodeKind::Leaf { job, .. } => {
                    children.jobs.insert(*job, index);
                }
            }
        }
        self.nodes.push(node);
        index
    }

    /// `buildHierarchy` (§3.8): walks the queue's path from the root, creating missing inner
    /// nodes, and hangs a fresh leaf for the job (a copy of its allocation and share, and its
    /// total request) under the last one, replacing the job's previous leaf. Returns the leaf.
    fn place_job(
        &mut self,
        job: JobId,
        attr: &JobAttr,
        request: &Resource,
        path: QueuePath<'_>,
    ) -> NodeIndex {
        let mut parent = ROOT;
        // The first element stands for the root and is not checked; an empty annotation hangs
        // the job directly under the root.
        for (i, name) in path.hierarchy.split('/').enumerate().skip(1) {
            parent = match self.group(parent, name) {
                Some(child) => child,
                None => {
                    let weight = node_weight(path, i);
                    tracing::trace!(
                        queue = path.queue,
                        node = name,
                        weight,
                        "drf: HDRF node added"
                    );
                    self.push_child(
                        parent,
                        TreeNode {
                            parent: None,
                            weight,
                            saturated: false,
                            allocated: Resource::empty(),
                            share: DominantShare::ZERO,
                            kind: NodeKind::Inner {
                                name: name.to_string(),
                                children: Children::default(),
                            },
                        },
                    )
                }
            };
        }
        let leaf = TreeNode {
            parent: Some(parent),
            weight: 1.0,
            saturated: false,
            allocated: attr.allocated.clone(),
            share: attr.dominant,
            kind: NodeKind::Leaf {
                job,
                request: request.clone(),
            },
        };
        match self
            .children(parent)
            .and_then(|c| c.jobs.get(&job).copied())
        {
            Some(existing) => {
                self.nodes[existing] = leaf;
                existing
            }
            None => self.push_child(parent, leaf),
        }
    }

    /// `UpdateHierarchicalShare` (§3.8): re-places the job's leaf and brings the tree up to date
    /// with `total_allocated` (which the caller has already adjusted).
    fn update_job(
        &mut self,
        basis: &ShareBasis,
        job: JobId,
        attr: &JobAttr,
        request: &Resource,
        path: QueuePath<'_>,
    ) {
        let leaf = self.place_job(job, attr, request, path);
        let demanding = basis.demanding(&self.total_allocated);
        if self.demanding.as_ref() != Some(&demanding) {
            self.demanding = Some(demanding);
            self.recompute_all(basis);
            return;
        }
        let mut node = Some(leaf);
        while let Some(index) = node {
            Self::recompute_node(&mut self.nodes, basis, &demanding, index);
            node = self.nodes[index].parent;
        }
    }

    /// Recomputes every node against the current `total_allocated`.
    fn recompute_all(&mut self, basis: &ShareBasis) {
        let demanding = basis.demanding(&self.total_allocated);
        for index in (0..self.nodes.len()).rev() {
            Self::recompute_node(&mut self.nodes, basis, &demanding, index);
        }
        self.demanding = Some(demanding);
    }

    /// `updateHierarchicalShare` for one node whose children are up to date (§3.8).
    ///
    /// A leaf only refreshes its saturation. An inner node scales every unsaturated child that
    /// holds something down to the smallest such share `mdr` (starting from 1, so the factor
    /// `mdr / share` never exceeds 1), adds saturated children unscaled, ignores children holding
    /// nothing, and is saturated when all its children are.
    fn recompute_node(
        nodes: &mut [TreeNode],
        basis: &ShareBasis,
        demanding: &[Dimension],
        index: NodeIndex,
    ) {
        let node = &nodes[index];
        let (saturated, derived) = match &node.kind {
            NodeKind::Leaf { request, .. } => (
                resource_saturated(&node.allocated, request, demanding),
                None,
            ),
            NodeKind::Inner { children, .. } => {
                let kids = || children.all().map(|c| &nodes[c]);
                // A child's share always is `calculateShare` of its allocation, which is what
                // Volcano recomputes here.
                let mdr = kids()
                    .filter(|c| c.share.share != 0.0 && !c.saturated)
                    .map(|c| c.share.share)
                    .fold(1.0, f64::min);
                let mut allocated = Resource::empty();
                let mut saturated = true;
                for c in kids() {
                    saturated &= c.saturated;
                    if c.share.share == 0.0 {
                        continue;
                    }
                    if c.saturated {
                        allocated.add(&c.allocated);
                    } else {
                        let mut scaled = c.allocated.clone();
                        scaled.multi(mdr / c.share.share);
                        allocated.add(&scaled);
                    }
                }
                let share = basis.share_of(&allocated);
                (saturated, Some((allocated, share)))
            }
        };
        let node = &mut nodes[index];
        node.saturated = saturated;
        if let Some((allocated, share)) = derived {
            node.allocated = allocated;
            node.share = share;
        }
        tracing::trace!(
            index,
            share = node.share.share,
            dominant = node.share.resource,
            saturated = node.saturated,
            "drf: HDRF node updated"
        );
    }

    /// `compareQueues` (§3.9) for two `volcano.sh/hierarchy` paths: walking both paths down from
    /// the root, an unsaturated node beats a saturated one (±1), otherwise the first difference
    /// of `share / weight` is returned; equal levels descend. `None` when a path element on the
    /// way has no node (a queue without jobs).
    fn compare_queues(&self, l: &str, r: &str) -> Option<f64> {
        let depth = l.split('/').count().min(r.split('/').count());
        let mut steps = l.split('/').zip(r.split('/')).skip(1);
        let (mut ln, mut rn) = (ROOT, ROOT);
        // The first level compares the root with itself.
        for i in 0..depth {
            let (lnode, rnode) = (&self.nodes[ln], &self.nodes[rn]);
            match (lnode.saturated, rnode.saturated) {
                (false, true) => return Some(-1.0),
                (true, false) => return Some(1.0),
                _ => {}
            }
            let (lw, rw) = (lnode.weighted_share(), rnode.weighted_share());
            if lw != rw {
                return Some(lw - rw);
            }
            if i + 1 < depth {
                let (lname, rname) = steps.next()?;
                ln = self.group(ln, lname)?;
                rn = self.group(rn, rname)?;
            }
        }
        Some(0.0)
    }
}

/// The sign of a `compareQueues` result as an order; no result, or NaN, is no opinion.
fn order_from_difference(d: Option<f64>) -> Ordering {
    d.and_then(|d| d.partial_cmp(&0.0))
        .unwrap_or(Ordering::Equal)
}

// ---------------------------------------------------------------------------------------------
// The plugin
// ---------------------------------------------------------------------------------------------

/// The plugin instance of one session.
#[derive(Default)]
pub struct Drf {
    basis: ShareBasis,
    /// Indexed by `JobId`; every job of the session has an entry.
    jobs: Vec<JobAttr>,
    /// The HDRF tree, in hierarchy mode only.
    hierarchy: Option<HdrfTree>,
}

impl Drf {
    fn attr(&self, job: JobId) -> Option<&JobAttr> {
        self.jobs.get(job.index())
    }

    /// §3.5: the smaller dominant share goes first; untracked jobs give no opinion.
    fn compare_jobs(&self, l: JobId, r: JobId) -> Ordering {
        match (self.attr(l), self.attr(r)) {
            (Some(l), Some(r)) => compare_shares(l.dominant.share, r.dominant.share),
            _ => Ordering::Equal,
        }
    }

    /// The open hook's HDRF part (§3.2): every job's leaf, then one recomputation. Volcano
    /// recomputes after each job, but only the last recomputation (with the final total)
    /// survives, so a single one gives the same tree.
    fn build_tree(&self, ssn: &SessionState) -> HdrfTree {
        let mut tree = HdrfTree::default();
        for (index, (job, attr)) in ssn.jobs().iter().zip(&self.jobs).enumerate() {
            // Every job of a session has an existing queue (framework.md §2.4).
            let Some(queue) = job.queue else { continue };
            tree.total_allocated.add(&attr.allocated);
            let path = QueuePath::from(&*ssn.queue(queue).spec);
            tree.place_job(JobId::from_index(index), attr, &job.total_request, path);
        }
        tree.recompute_all(&self.basis);
        tree
    }

    /// The shared body of the allocate and deallocate handlers (§3.7).
    fn on_event(&mut self, ssn: &SessionState, task: TaskId, allocate: bool) {
        let Some(job) = ssn.job_of(task) else {
            tracing::warn!(
                task = ssn.task(task).key(),
                "drf: event for a task without a job, ignored"
            );
            return;
        };
        let Some(attr) = self.jobs.get_mut(job.index()) else {
            tracing::warn!(job = %ssn.job(job).spec.uid, "drf: event for a job it does not track, ignored");
            return;
        };
        let request = ssn.task(task).resreq();
        if allocate {
            attr.add(request, &self.basis);
        } else {
            attr.sub(request, &self.basis);
        }
        tracing::debug!(
            job = %ssn.job(job).spec.uid,
            share = attr.dominant.share,
            dominant = attr.dominant.resource,
            "drf: job share updated"
        );
        let (Some(tree), Some(queue)) = (self.hierarchy.as_mut(), ssn.job(job).queue) else {
            return;
        };
        if allocate {
            tree.total_allocated.add(request);
        } else {
            tree.total_allocated.sub(request);
        }
        let path = QueuePath::from(&*ssn.queue(queue).spec);
        tree.update_job(&self.basis, job, attr, &ssn.job(job).total_request, path);
    }
}

impl Plugin for Drf {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        self.basis = ShareBasis::new(ssn.total_resource().clone());
        // The framework's job counter already holds the sum over AllocatedStatus tasks.
        self.jobs = ssn
            .jobs()
            .iter()
            .map(|job| JobAttr::new(job.allocated.clone(), &self.basis))
            .collect();
        self.hierarchy = ssn.hierarchy_enabled(NAME).then(|| self.build_tree(ssn));
    }

    fn on_session_close(&mut self, ssn: &mut SessionState) {
        self.hierarchy = None;
        for (i, attr) in self.jobs.drain(..).enumerate() {
            ssn.job_metrics_mut(JobId::from_index(i)).share = Some(attr.dominant.share);
        }
    }

    /// §3.4: queue order and reclaim filter only in hierarchy mode.
    fn extension_points(&self) -> ExtensionPoints {
        let flat = ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::JOB_ORDER
            | ExtensionPoints::EVENT_HANDLER;
        if self.hierarchy.is_some() {
            flat | ExtensionPoints::QUEUE_ORDER | ExtensionPoints::RECLAIMABLE
        } else {
            flat
        }
    }

    /// Hierarchical mode (HDRF) adds the queue order and reclaim filter.
    fn possible_extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::JOB_ORDER
            | ExtensionPoints::EVENT_HANDLER
            | ExtensionPoints::QUEUE_ORDER
            | ExtensionPoints::RECLAIMABLE
    }

    fn job_order(&self, _ssn: &SessionState, l: JobId, r: JobId) -> Ordering {
        self.compare_jobs(l, r)
    }

    /// §3.9: the sign of `compareQueues` over the live tree.
    fn queue_order(&self, ssn: &SessionState, l: QueueId, r: QueueId) -> Ordering {
        let Some(tree) = &self.hierarchy else {
            return Ordering::Equal;
        };
        let (lq, rq) = (&ssn.queue(l).spec, &ssn.queue(r).spec);
        let d = tree.compare_queues(&lq.hierarchy, &rq.hierarchy);
        if d.is_none() {
            tracing::debug!(
                left = %lq.name,
                right = %rq.name,
                "drf: a queue's hierarchy path has no HDRF node; no queue-order opinion"
            );
        }
        order_from_difference(d)
    }

    /// §3.6: a candidate is a victim when the preemptor's share with its task added is at most
    /// (within `SHARE_DELTA`) the victim job's share with this and the job's earlier candidates
    /// removed.
    fn preemptable(
        &self,
        ssn: &SessionState,
        preemptor: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        let Some(preemptor_attr) = ssn.job_of(preemptor).and_then(|j| self.attr(j)) else {
            tracing::warn!(
                task = ssn.task(preemptor).key(),
                "drf: preemptor has no tracked job, no victims"
            );
            return (Vec::new(), PERMIT);
        };
        let mut with_task = preemptor_attr.allocated.clone();
        with_task.add(ssn.task(preemptor).resreq());
        let ls = self.basis.share_of(&with_task).share;

        // Per victim job, what it would keep after losing the candidates seen so far (whether or
        // not they were accepted).
        let mut remaining: HashMap<JobId, Resource> = HashMap::new();
        let mut victims = Vec::new();
        for &candidate in candidates {
            let Some(job) = ssn.job_of(candidate) else {
                tracing::warn!(
                    task = ssn.task(candidate).key(),
                    "drf: candidate without a job skipped"
                );
                continue;
            };
            let kept = match remaining.entry(job) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let Some(attr) = self.attr(job) else {
                        tracing::warn!(
                            task = ssn.task(candidate).key(),
                            "drf: candidate of an untracked job skipped"
                        );
                        continue;
                    };
                    e.insert(attr.allocated.clone())
                }
            };
            kept.sub(ssn.task(candidate).resreq());
            let rs = self.basis.share_of(kept).share;
            if ls < rs || (ls - rs).abs() <= SHARE_DELTA {
                victims.push(candidate);
            }
        }
        (victims, PERMIT)
    }

    /// §3.10: on a copy of the tree where the reclaimer's job already holds its task, each
    /// candidate is judged on its own (its job loses just that task, then gets it back): it is
    /// a victim when the reclaimer's queue then sorts strictly first.
    fn reclaimable(
        &self,
        ssn: &SessionState,
        reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> (Vec<TaskId>, i32) {
        let Some(live) = &self.hierarchy else {
            return (Vec::new(), ABSTAIN);
        };
        let Some(lj) = ssn.job_of(reclaimer) else {
            tracing::warn!(
                task = ssn.task(reclaimer).key(),
                "drf: reclaimer without a job, no victims"
            );
            return (Vec::new(), PERMIT);
        };
        let (Some(lq), Some(lattr)) = (ssn.job(lj).queue, self.attr(lj)) else {
            tracing::debug!(job = %ssn.job(lj).spec.uid, "drf: reclaimer job untracked, no victims");
            return (Vec::new(), PERMIT);
        };
        let lqueue = &ssn.queue(lq).spec;
        let mut tree = live.clone();
        let request = ssn.task(reclaimer).resreq();
        let mut lattr = lattr.clone();
        lattr.add(request, &self.basis);
        tree.total_allocated.add(request);
        tree.update_job(
            &self.basis,
            lj,
            &lattr,
            &ssn.job(lj).total_request,
            QueuePath::from(&**lqueue),
        );

        let mut victims = Vec::new();
        for &candidate in candidates {
            let Some(rj) = ssn.job_of(candidate) else {
                tracing::warn!(
                    task = ssn.task(candidate).key(),
                    "drf: reclaim candidate without a job skipped"
                );
                continue;
            };
            let (Some(rq), Some(rattr)) = (ssn.job(rj).queue, self.attr(rj)) else {
                tracing::debug!(
                    task = ssn.task(candidate).key(),
                    "drf: reclaim candidate of an untracked job skipped"
                );
                continue;
            };
            let rqueue = &ssn.queue(rq).spec;
            let rpath = QueuePath::from(&**rqueue);
            let request = ssn.task(candidate).resreq();
            let job_request = &ssn.job(rj).total_request;

            let mut rattr = rattr.clone();
            tree.total_allocated.sub(request);
            rattr.sub(request, &self.basis);
            tree.update_job(&self.basis, rj, &rattr, job_request, rpath);
            let difference = tree.compare_queues(&lqueue.hierarchy, &rqueue.hierarchy);
            // Undo with the same arithmetic Volcano uses (add back, not restore).
            tree.total_allocated.add(request);
            rattr.add(request, &self.basis);
            tree.update_job(&self.basis, rj, &rattr, job_request, rpath);

            if difference.is_some_and(|d| d < 0.0) {
                victims.push(candidate);
            }
        }
        (victims, PERMIT)
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        self.on_event(ssn, task, true);
        Ok(())
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        self.on_event(ssn, task, false);
    }
}

#[cfg(test)]
mod tests;
