//! The long-lived cluster state, updated one object at a time, and its cheap snapshot
//! (DESIGN.md "Cluster state" and "Snapshot"; spec/framework.md §2.4, §7.1).
//!
//! Each object is parsed once, when it is upserted, into an immutable `Arc`'d spec. The tables are
//! ordered maps behind `Arc`: a snapshot clones the `Arc`s (O(1) per table); the next upsert
//! after a snapshot copies the table it touches once (copy-on-write), so a session never sees a
//! half-applied event and the watchers never wait for a session.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use apis::{PodGroup, Queue};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ResourceQuota,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

use crate::model::JobSpec;
use crate::model::node::{NodeSpec, NodeUsage};
use crate::model::queue::QueueSpec;
use crate::model::task::TaskSpec;

/// Which pods are ours and where standalone pods go.
#[derive(Clone, Debug)]
pub struct StateOptions {
    /// Pods whose `spec.schedulerName` is one of these are scheduled by us.
    pub scheduler_names: Vec<String>,
    /// Queue for PodGroups with an empty `spec.queue` and standalone pods without annotation.
    pub default_queue: String,
    /// `--node-selector`: only nodes carrying at least one of these label pairs are kept.
    pub node_selector: Vec<(String, String)>,
}

impl Default for StateOptions {
    fn default() -> Self {
        StateOptions {
            scheduler_names: vec!["volcano-rs".to_string()],
            default_queue: "default".to_string(),
            node_selector: Vec::new(),
        }
    }
}

/// A PriorityClass as the scheduler needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct PriorityClassInfo {
    pub value: i32,
    pub global_default: bool,
    pub object: Arc<PriorityClass>,
}

/// Every object the state holds, as last observed (for dumps in the simulator's input format).
#[derive(Clone, Debug, Default)]
pub struct ObservedObjects {
    pub namespaces: Vec<Arc<Namespace>>,
    pub priority_classes: Vec<Arc<PriorityClass>>,
    pub queues: Vec<Arc<Queue>>,
    pub nodes: Vec<Arc<Node>>,
    pub pod_groups: Vec<Arc<PodGroup>>,
    pub pods: Vec<Arc<Pod>>,
    pub pdbs: Vec<Arc<PodDisruptionBudget>>,
    pub resource_quotas: Vec<Arc<ResourceQuota>>,
    pub storage_classes: Vec<Arc<StorageClass>>,
    pub volumes: Vec<Arc<PersistentVolume>>,
    pub claims: Vec<Arc<PersistentVolumeClaim>>,
    pub csi_nodes: Vec<Arc<CSINode>>,
    pub hyper_nodes: Vec<Arc<apis::HyperNode>>,
    pub numatopologies: Vec<Arc<apis::Numatopology>>,
}

/// A node with the order in which it was first seen (Volcano's node list order).
#[derive(Clone, Debug)]
pub struct NodeEntry {
    pub seq: u64,
    pub spec: Arc<NodeSpec>,
}

/// A PodGroup and the job spec built from it when it was stored.
#[derive(Clone, Debug)]
struct PodGroupEntry {
    object: Arc<PodGroup>,
    job: Arc<JobSpec>,
}

/// The cluster as last observed. Cheap to snapshot.
#[derive(Clone, Debug, Default)]
pub struct ClusterState {
    options: Arc<StateOptions>,
    pods: Arc<BTreeMap<String, Arc<TaskSpec>>>,
    /// How many of `pods` wait for a decision (pending pods of ours), kept as `pods` changes so
    /// that [`ClusterState::has_waiting_work`] need not look at every pod.
    waiting_pods: usize,
    /// The keys of the pods in `pods` with inter-pod affinity or anti-affinity terms, kept as
    /// `pods` changes: the few pods a session's pod views index, found without reading every
    /// pod ([`ClusterState::pods_with_inter_pod_affinity`]).
    affinity_pods: Arc<BTreeSet<String>>,
    /// Likewise the pods that ask for host ports.
    host_port_pods: Arc<BTreeSet<String>>,
    nodes: Arc<BTreeMap<String, NodeEntry>>,
    pod_groups: Arc<BTreeMap<String, PodGroupEntry>>,
    queues: Arc<BTreeMap<String, Arc<QueueSpec>>>,
    priority_classes: Arc<BTreeMap<String, PriorityClassInfo>>,
    pdbs: Arc<BTreeMap<String, Arc<PodDisruptionBudget>>>,
    quotas: Arc<BTreeMap<String, Arc<ResourceQuota>>>,
    namespaces: Arc<BTreeMap<String, Arc<Namespace>>>,
    /// Pods we decided to bind whose binding the API server has not shown yet: key → the pod
    /// as last observed (what a failed bind rolls back to).
    assumed: Arc<BTreeMap<String, Arc<Pod>>>,
    /// Pods we decided to evict whose deletion the API server has not shown yet: key → the pod
    /// as last observed.
    evicting: Arc<BTreeMap<String, Arc<Pod>>>,
    /// Node load from the metrics source (spec/plugins-more.md §4.1), by node name.
    node_usage: Arc<BTreeMap<String, NodeUsage>>,
    /// Claims, volumes, storage classes and CSI nodes (`storage.rs`).
    storage: storage::StorageTables,
    /// HyperNodes and their tree (`hyper_nodes.rs`).
    hyper_nodes: hyper_nodes::HyperNodeTables,
    /// Numatopology reports by node name (`numa.rs`).
    numatopologies: Arc<BTreeMap<String, Arc<apis::Numatopology>>>,
    /// CPUs given to pods bound since their node's last report, by node and pod (`numa.rs`).
    numa_given: Arc<BTreeMap<String, BTreeMap<String, numa::NumaGiven>>>,
    /// Volcano's device configuration, once read (`deviceshare`'s vGPU resource names and MIG
    /// geometries); `None` until then, which the plugin reads as Volcano's defaults.
    device_config: Option<Arc<apis::DeviceConfig>>,
    next_node_seq: u64,
    /// Built on the first snapshot after the nodes or their load changed; shared by the
    /// snapshots taken since ([`ClusterState::node_table`]).
    node_table: OnceLock<Arc<NodeTable>>,
    /// The node table the next build replaces (it shares its name index when it can).
    replaced_node_table: Option<Arc<NodeTable>>,
}

/// Puts `key` in the set or takes it out; the set is copied (a snapshot may share it) only
/// when that changes it.
fn note(set: &mut Arc<BTreeSet<String>>, key: &str, member: bool) {
    if member != set.contains(key) {
        let set = Arc::make_mut(set);
        if member {
            set.insert(key.to_string());
        } else {
            set.remove(key);
        }
    }
}

/// A pod as observed, to assume a bind of (see [`ClusterState::bind_source`]).
pub struct BindSource {
    observed: Arc<TaskSpec>,
    default_queue: String,
}

/// A bind's assumed pod, made from the pod as observed.
pub struct AssumedBind {
    observed: Arc<TaskSpec>,
    assumed: TaskSpec,
}

impl BindSource {
    /// The pod bound to `node` with the bind's annotations (the state is not touched).
    pub fn prepare(self, node: &str, annotations: &BTreeMap<String, String>) -> AssumedBind {
        let mut pod = (*self.observed.pod).clone();
        pod.spec.get_or_insert_with(Default::default).node_name = Some(node.to_string());
        if !annotations.is_empty() {
            pod.metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .extend(annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        // Binding, as in Volcano's cache until the watch shows the pod bound: it holds its
        // node's capacity, cannot be preempted, and does not yet count as scheduled for the
        // PodGroup's phase (spec/framework.md §2.7.1), so Running follows the binds.
        let mut assumed = TaskSpec::from_pod(Arc::new(pod), true, &self.default_queue);
        assumed.status = crate::model::TaskStatus::Binding;
        AssumedBind {
            observed: self.observed,
            assumed,
        }
    }
}

/// A pod of ours waiting for a node.
fn waits(spec: &TaskSpec) -> bool {
    spec.ours && spec.status == crate::model::TaskStatus::Pending
}

/// A pod on a node, still holding its share of it.
fn holds_node(spec: &TaskSpec) -> bool {
    spec.node_name.is_some() && !spec.status.is_completed()
}

/// An immutable view of the cluster for one session. Cloning it is cheap.
pub type Snapshot = ClusterState;

fn ns_key(ns: Option<&String>, name: Option<&String>) -> String {
    format!(
        "{}/{}",
        ns.map(String::as_str).unwrap_or("default"),
        name.map(String::as_str).unwrap_or("")
    )
}

impl ClusterState {
    pub fn new(options: StateOptions) -> Self {
        ClusterState {
            options: Arc::new(options),
            ..Default::default()
        }
    }

    pub fn options(&self) -> &StateOptions {
        &self.options
    }

    fn is_ours(&self, pod: &Pod) -> bool {
        let name = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .unwrap_or("default-scheduler");
        self.options.scheduler_names.iter().any(|n| n == name)
    }

    fn default_queue(&self) -> &str {
        &self.options.default_queue
    }

    /// A snapshot for a session: shares every table with the state.
    pub fn snapshot(&self) -> Snapshot {
        // Built here, before the copy, so the state keeps them for the snapshots to come.
        let _ = self.node_table();
        let _ = self.hyper_node_tree();
        self.clone()
    }

    /// The nodes in first-seen order with their name index, summed allocatable and load.
    pub fn node_table(&self) -> &Arc<NodeTable> {
        self.node_table.get_or_init(|| {
            let specs = self.nodes_in_order().into_iter().cloned().collect();
            Arc::new(NodeTable::build(
                specs,
                |name| self.node_usage(name),
                self.replaced_node_table.as_deref(),
            ))
        })
    }

    /// The nodes or their load changed: the next snapshot builds the node table again.
    fn nodes_changed(&mut self) {
        if let Some(table) = self.node_table.take() {
            self.replaced_node_table = Some(table);
        }
    }

    // ---- pods -------------------------------------------------------------------------------

    /// Adds or replaces a pod. Pods of other schedulers are kept only when they are assigned
    /// to a node (they occupy it); unassigned ones are invisible to us (§7.1). Returns true when
    /// the update can change a decision (the daemon then starts a session early): a pod of
    /// ours newly pending, or a pod of any scheduler that held a node and no longer does (it
    /// finished). Updates that change neither, such as the conditions a session wrote, do not.
    ///
    /// While a bind of ours is assumed, an update that still shows no node is remembered but
    /// does not undo the assumption (Volcano ignores it the same way, §7.5); an update that
    /// shows a node confirms it.
    pub fn upsert_pod(&mut self, pod: Pod) -> bool {
        let key = ns_key(pod.metadata.namespace.as_ref(), pod.metadata.name.as_ref());
        let assigned = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if self.assumed.contains_key(&key) {
            if !assigned && pod.metadata.deletion_timestamp.is_none() {
                Arc::make_mut(&mut self.assumed).insert(key, Arc::new(pod));
                return false;
            }
            Arc::make_mut(&mut self.assumed).remove(&key);
        }
        if self.evicting.contains_key(&key) {
            // Until the API server shows the deletion, the pod stays Releasing in our view: an
            // update from before the delete (e.g. the eviction conditions) must not make it
            // look running again, or the next session would pick more victims.
            if pod.metadata.deletion_timestamp.is_none() {
                Arc::make_mut(&mut self.evicting).insert(key, Arc::new(pod));
                return false;
            }
            Arc::make_mut(&mut self.evicting).remove(&key);
        }
        self.insert_pod(key, pod)
    }

    fn insert_pod(&mut self, key: String, pod: Pod) -> bool {
        let ours = self.is_ours(&pod);
        let assigned = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if !ours && !assigned {
            if self.pods.contains_key(&key) {
                let old = Arc::make_mut(&mut self.pods).remove(&key);
                self.count_waiting(old.as_deref(), None);
                self.note_pod_flags(&key, None);
            }
            return false;
        }
        let spec = TaskSpec::from_pod(Arc::new(pod), ours, self.default_queue());
        let (was_pending, held) = self
            .pods
            .get(&key)
            .map_or((false, false), |p| (waits(p), holds_node(p)));
        let wake = (waits(&spec) && !was_pending) || (held && !holds_node(&spec));
        let spec = Arc::new(spec);
        self.note_pod_flags(&key, Some(&spec));
        let old = Arc::make_mut(&mut self.pods).insert(key, Arc::clone(&spec));
        self.count_waiting(old.as_deref(), Some(&spec));
        wake
    }

    /// Keeps `affinity_pods` and `host_port_pods` true to the pod entry under `key` (now
    /// `new`, or gone).
    fn note_pod_flags(&mut self, key: &str, new: Option<&TaskSpec>) {
        note(
            &mut self.affinity_pods,
            key,
            new.is_some_and(|t| t.inter_pod_affinity),
        );
        note(
            &mut self.host_port_pods,
            key,
            new.is_some_and(|t| t.uses_host_ports),
        );
    }

    /// The keys of the pods with inter-pod affinity or anti-affinity terms, in key order.
    pub fn pods_with_inter_pod_affinity(&self) -> impl Iterator<Item = &str> {
        self.affinity_pods.iter().map(String::as_str)
    }

    /// The keys of the pods that ask for host ports, in key order.
    pub fn pods_with_host_ports(&self) -> impl Iterator<Item = &str> {
        self.host_port_pods.iter().map(String::as_str)
    }

    /// Keeps `waiting_pods` true to a pod entry replaced (`old` by `new`, either absent).
    fn count_waiting(&mut self, old: Option<&TaskSpec>, new: Option<&TaskSpec>) {
        let was = old.is_some_and(waits);
        let is = new.is_some_and(waits);
        if is && !was {
            self.waiting_pods += 1;
        } else if was && !is {
            self.waiting_pods = self.waiting_pods.saturating_sub(1);
        }
    }

    /// Marks a decided bind as done in the state at once, so the next session cannot reuse
    /// the capacity. Returns false when the pod is gone.
    pub fn assume_bind(&mut self, key: &str, node: &str) -> bool {
        self.assume_bind_annotated(key, node, &BTreeMap::new())
    }

    /// [`Self::assume_bind`] for a binding that also carries pod annotations, which the pod
    /// then shows (as the API server copies them onto it).
    pub fn assume_bind_annotated(
        &mut self,
        key: &str,
        node: &str,
        annotations: &BTreeMap<String, String>,
    ) -> bool {
        let Some(source) = self.bind_source(key) else {
            return false;
        };
        let prepared = source.prepare(node, annotations);
        self.install_assumed_bind(key, prepared, node, annotations)
    }

    /// What assuming a bind starts from (cheap to take): copying the pod is most of the cost
    /// of [`ClusterState::assume_bind_annotated`], and a caller can do that for many binds
    /// ([`BindSource::prepare`]) without holding whatever guards the state, then
    /// [`install`](ClusterState::install_assumed_bind) them. `None` when the pod is gone.
    pub fn bind_source(&self, key: &str) -> Option<BindSource> {
        Some(BindSource {
            observed: Arc::clone(self.pods.get(key)?),
            default_queue: self.default_queue().to_string(),
        })
    }

    /// Records a bind prepared with this node and these annotations. When the pod changed
    /// since it was prepared, it is prepared again from what the state shows now. False when
    /// the pod is gone.
    pub fn install_assumed_bind(
        &mut self,
        key: &str,
        prepared: AssumedBind,
        node: &str,
        annotations: &BTreeMap<String, String>,
    ) -> bool {
        let AssumedBind { observed, assumed } = prepared;
        let Some(now) = self.pods.get(key) else {
            return false;
        };
        if !Arc::ptr_eq(now, &observed) {
            return self.assume_bind_annotated(key, node, annotations);
        }
        Arc::make_mut(&mut self.assumed).insert(key.to_string(), observed.pod.clone());
        let assumed = Arc::new(assumed);
        let old = Arc::make_mut(&mut self.pods).insert(key.to_string(), Arc::clone(&assumed));
        self.count_waiting(old.as_deref(), Some(&assumed));
        self.note_pod_flags(key, Some(&assumed));
        true
    }

    /// A bind failed: the pod returns to what the API server last showed (normally pending).
    pub fn rollback_bind(&mut self, key: &str) {
        if let Some(observed) = Arc::make_mut(&mut self.assumed).remove(key) {
            self.insert_pod(key.to_string(), (*observed).clone());
        }
    }

    /// Pods whose bind is assumed but not yet observed.
    pub fn assumed_count(&self) -> usize {
        self.assumed.len()
    }

    /// Marks a decided eviction as under way (the pod becomes Releasing at once, as Volcano's
    /// cache does), so the next session neither counts the pod as running nor picks more
    /// victims for the same preemptor. `now` stamps the assumed deletion. Returns false when the
    /// pod is gone.
    pub fn assume_eviction(&mut self, key: &str, now: k8s_openapi::jiff::Timestamp) -> bool {
        let Some(spec) = self.pods.get(key) else {
            return false;
        };
        if spec.pod.metadata.deletion_timestamp.is_some() {
            return true;
        }
        let observed = spec.pod.clone();
        let mut pod = (*observed).clone();
        pod.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
        Arc::make_mut(&mut self.evicting).insert(key.to_string(), observed);
        self.insert_pod(key.to_string(), pod);
        true
    }

    /// An eviction failed: the pod returns to what the API server last showed.
    pub fn rollback_eviction(&mut self, key: &str) {
        if let Some(observed) = Arc::make_mut(&mut self.evicting).remove(key) {
            self.insert_pod(key.to_string(), (*observed).clone());
        }
    }

    /// Removes a pod; true when it held a node, whose capacity is now free.
    pub fn delete_pod(&mut self, namespace: &str, name: &str) -> bool {
        let key = format!("{namespace}/{name}");
        if self.assumed.contains_key(&key) {
            Arc::make_mut(&mut self.assumed).remove(&key);
        }
        if self.evicting.contains_key(&key) {
            Arc::make_mut(&mut self.evicting).remove(&key);
        }
        // Checked first: `make_mut` would copy a table a snapshot shares for nothing.
        if !self.pods.contains_key(&key) {
            return false;
        }
        let removed = Arc::make_mut(&mut self.pods).remove(&key);
        self.count_waiting(removed.as_deref(), None);
        self.note_pod_flags(&key, None);
        removed.is_some_and(|removed| holds_node(&removed))
    }

    pub fn pod(&self, key: &str) -> Option<&Arc<TaskSpec>> {
        self.pods.get(key)
    }

    pub fn pods(&self) -> impl Iterator<Item = &Arc<TaskSpec>> {
        self.pods.values()
    }

    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    // ---- nodes ------------------------------------------------------------------------------

    fn node_selected(&self, node: &Node) -> bool {
        let o = &self.options;
        if o.node_selector.is_empty() {
            return true;
        }
        let labels = node.metadata.labels.as_ref();
        o.node_selector
            .iter()
            .any(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
    }

    /// Adds or replaces a node; true when it can take pods it could not before: new, no longer
    /// unschedulable, or with other taints.
    pub fn upsert_node(&mut self, node: Node) -> bool {
        let name = node.metadata.name.clone().unwrap_or_default();
        if !self.node_selected(&node) {
            self.delete_node(&name);
            return false;
        }
        let gate = |n: &Node| {
            let spec = n.spec.as_ref();
            (
                spec.and_then(|s| s.unschedulable).unwrap_or(false),
                spec.and_then(|s| s.taints.clone()),
            )
        };
        let opened = match self.nodes.get(&name) {
            None => true,
            Some(old) => {
                let (was_closed, old_taints) = gate(&old.spec.node);
                let (closed, taints) = gate(&node);
                (was_closed && !closed) || old_taints != taints
            }
        };
        // HyperNode members are chosen by node name and labels only: a status update (a
        // heartbeat, a pod's resources) leaves the tree as it is.
        let members_may_change = self
            .nodes
            .get(&name)
            .is_none_or(|old| old.spec.node.metadata.labels != node.metadata.labels);
        let spec = Arc::new(NodeSpec::from_node(Arc::new(node)));
        let seq = match self.nodes.get(&name) {
            Some(e) => e.seq,
            None => {
                self.next_node_seq += 1;
                self.next_node_seq
            }
        };
        Arc::make_mut(&mut self.nodes).insert(name, NodeEntry { seq, spec });
        self.nodes_changed();
        if members_may_change {
            self.hyper_nodes.nodes_changed();
        }
        opened
    }

    pub fn delete_node(&mut self, name: &str) {
        if self.nodes.contains_key(name) {
            Arc::make_mut(&mut self.nodes).remove(name);
            self.nodes_changed();
            self.hyper_nodes.nodes_changed();
        }
        if self.node_usage.contains_key(name) {
            Arc::make_mut(&mut self.node_usage).remove(name);
            self.nodes_changed();
        }
    }

    /// One collection run's results, as Volcano applies them: every node the state holds that
    /// the run reported on gets the new sample; reports on unknown nodes are dropped, and nodes
    /// the run did not cover keep what they had.
    pub fn set_node_usage(&mut self, usage: impl IntoIterator<Item = (String, NodeUsage)>) {
        self.nodes_changed();
        let table = Arc::make_mut(&mut self.node_usage);
        for (name, u) in usage {
            if self.nodes.contains_key(&name) {
                table.insert(name, u);
            }
        }
    }

    /// Sets the device configuration the sessions see from now on.
    pub fn set_device_config(&mut self, config: apis::DeviceConfig) {
        self.device_config = Some(Arc::new(config));
    }

    /// The device configuration, if one was read.
    pub fn device_config(&self) -> Option<&apis::DeviceConfig> {
        self.device_config.as_deref()
    }

    /// The last sample for a node, if any.
    pub fn node_usage(&self, name: &str) -> Option<NodeUsage> {
        self.node_usage.get(name).copied()
    }

    /// Every node's last sample, by node name (for dumps).
    pub fn node_usages(&self) -> impl Iterator<Item = (&String, &NodeUsage)> {
        self.node_usage.iter()
    }

    /// Nodes in the order they were first seen.
    pub fn nodes_in_order(&self) -> Vec<&Arc<NodeSpec>> {
        let mut v: Vec<&NodeEntry> = self.nodes.values().collect();
        v.sort_by_key(|e| e.seq);
        v.into_iter().map(|e| &e.spec).collect()
    }

    pub fn node(&self, name: &str) -> Option<&Arc<NodeSpec>> {
        self.nodes.get(name).map(|e| &e.spec)
    }

    // ---- pod groups, queues -----------------------------------------------------------------

    /// Adds or replaces a PodGroup; true when it is new or its spec changed (a status update,
    /// such as the one a session wrote, changes no decision).
    pub fn upsert_pod_group(&mut self, pg: PodGroup) -> bool {
        let key = ns_key(pg.metadata.namespace.as_ref(), pg.metadata.name.as_ref());
        let changed = self
            .pod_groups
            .get(&key)
            .is_none_or(|old| old.object.spec != pg.spec);
        let job = Arc::new(JobSpec::from_pod_group(&key, &pg, self.default_queue()));
        let entry = PodGroupEntry {
            object: Arc::new(pg),
            job,
        };
        Arc::make_mut(&mut self.pod_groups).insert(key, entry);
        changed
    }

    pub fn delete_pod_group(&mut self, namespace: &str, name: &str) {
        let key = format!("{namespace}/{name}");
        if self.pod_groups.contains_key(&key) {
            Arc::make_mut(&mut self.pod_groups).remove(&key);
        }
    }

    /// Whether anything waits for a decision: a pod of ours pending, or a PodGroup that is not
    /// Running or Completed (enqueue may admit it, or its pods wait). Only then can freed
    /// capacity change a decision; the daemon starts no early session for it otherwise.
    pub fn has_waiting_work(&self) -> bool {
        use crate::model::job::phase;
        debug_assert_eq!(
            self.waiting_pods,
            self.pods.values().filter(|p| waits(p)).count()
        );
        self.waiting_pods > 0
            || self.pod_groups.values().any(|e| {
                let current = e.object.status.as_ref().map_or("", |s| s.phase.as_str());
                current != phase::RUNNING && current != phase::COMPLETED
            })
    }

    pub fn pod_groups(&self) -> impl Iterator<Item = (&String, &Arc<PodGroup>)> {
        self.pod_groups.iter().map(|(k, e)| (k, &e.object))
    }

    pub fn pod_group_count(&self) -> usize {
        self.pod_groups.len()
    }

    /// Each PodGroup with the job spec built from it.
    pub fn pod_group_jobs(&self) -> impl Iterator<Item = (&Arc<PodGroup>, &Arc<JobSpec>)> {
        self.pod_groups.values().map(|e| (&e.object, &e.job))
    }

    pub fn pod_group(&self, key: &str) -> Option<&Arc<PodGroup>> {
        self.pod_groups.get(key).map(|e| &e.object)
    }

    pub fn upsert_queue(&mut self, q: Queue) {
        let name = q.metadata.name.clone().unwrap_or_default();
        Arc::make_mut(&mut self.queues).insert(name, Arc::new(QueueSpec::from_queue(Arc::new(q))));
    }

    pub fn delete_queue(&mut self, name: &str) {
        if self.queues.contains_key(name) {
            Arc::make_mut(&mut self.queues).remove(name);
        }
    }

    pub fn queues(&self) -> impl Iterator<Item = &Arc<QueueSpec>> {
        self.queues.values()
    }

    pub fn queue(&self, name: &str) -> Option<&Arc<QueueSpec>> {
        self.queues.get(name)
    }

    // ---- the rest ---------------------------------------------------------------------------

    pub fn upsert_priority_class(&mut self, pc: PriorityClass) {
        let name = pc.metadata.name.clone().unwrap_or_default();
        let info = PriorityClassInfo {
            value: pc.value.unwrap_or(0),
            global_default: pc.global_default.unwrap_or(false),
            object: Arc::new(pc),
        };
        Arc::make_mut(&mut self.priority_classes).insert(name, info);
    }

    pub fn delete_priority_class(&mut self, name: &str) {
        if self.priority_classes.contains_key(name) {
            Arc::make_mut(&mut self.priority_classes).remove(name);
        }
    }

    pub fn priority_classes(&self) -> &BTreeMap<String, PriorityClassInfo> {
        &self.priority_classes
    }

    /// The priority classes as shared between snapshots: the same `Arc` while none changed.
    pub fn priority_classes_shared(&self) -> &Arc<BTreeMap<String, PriorityClassInfo>> {
        &self.priority_classes
    }

    /// Priority of a job (§2.4): its PriorityClass, else the global default class, else 0.
    pub fn job_priority(&self, class_name: &str) -> i32 {
        if let Some(pc) = self.priority_classes.get(class_name) {
            return pc.value;
        }
        self.priority_classes
            .values()
            .find(|pc| pc.global_default)
            .map(|pc| pc.value)
            .unwrap_or(0)
    }

    pub fn upsert_pdb(&mut self, pdb: PodDisruptionBudget) {
        let key = ns_key(pdb.metadata.namespace.as_ref(), pdb.metadata.name.as_ref());
        Arc::make_mut(&mut self.pdbs).insert(key, Arc::new(pdb));
    }

    pub fn delete_pdb(&mut self, namespace: &str, name: &str) {
        let key = format!("{namespace}/{name}");
        if self.pdbs.contains_key(&key) {
            Arc::make_mut(&mut self.pdbs).remove(&key);
        }
    }

    pub fn pdbs(&self) -> impl Iterator<Item = &Arc<PodDisruptionBudget>> {
        self.pdbs.values()
    }

    pub fn upsert_resource_quota(&mut self, rq: ResourceQuota) {
        let key = ns_key(rq.metadata.namespace.as_ref(), rq.metadata.name.as_ref());
        Arc::make_mut(&mut self.quotas).insert(key, Arc::new(rq));
    }

    pub fn delete_resource_quota(&mut self, namespace: &str, name: &str) {
        let key = format!("{namespace}/{name}");
        if self.quotas.contains_key(&key) {
            Arc::make_mut(&mut self.quotas).remove(&key);
        }
    }

    pub fn resource_quotas(&self) -> impl Iterator<Item = &Arc<ResourceQuota>> {
        self.quotas.values()
    }

    pub fn upsert_namespace(&mut self, ns: Namespace) {
        let name = ns.metadata.name.clone().unwrap_or_default();
        Arc::make_mut(&mut self.namespaces).insert(name, Arc::new(ns));
    }

    pub fn delete_namespace(&mut self, name: &str) {
        if self.namespaces.contains_key(name) {
            Arc::make_mut(&mut self.namespaces).remove(name);
        }
    }

    pub fn namespace(&self, name: &str) -> Option<&Arc<Namespace>> {
        self.namespaces.get(name)
    }

    /// Every object as last observed from the API server (assumed binds show the observed,
    /// unbound pod).
    pub fn observed_objects(&self) -> ObservedObjects {
        ObservedObjects {
            namespaces: self.namespaces.values().cloned().collect(),
            priority_classes: self
                .priority_classes
                .values()
                .map(|p| p.object.clone())
                .collect(),
            queues: self.queues.values().map(|q| q.queue.clone()).collect(),
            nodes: self
                .nodes_in_order()
                .into_iter()
                .map(|n| n.node.clone())
                .collect(),
            pod_groups: self.pod_groups.values().map(|e| e.object.clone()).collect(),
            pods: self
                .pods
                .iter()
                .map(|(k, p)| {
                    self.assumed
                        .get(k)
                        .cloned()
                        .unwrap_or_else(|| p.pod.clone())
                })
                .collect(),
            pdbs: self.pdbs.values().cloned().collect(),
            resource_quotas: self.quotas.values().cloned().collect(),
            storage_classes: self.storage_classes().cloned().collect(),
            volumes: self.volumes().cloned().collect(),
            claims: self.claims().cloned().collect(),
            csi_nodes: self.csi_nodes().cloned().collect(),
            hyper_nodes: self.hyper_node_objects().cloned().collect(),
            numatopologies: self.numatopologies.values().cloned().collect(),
        }
    }
}

mod hyper_nodes;
mod numa;
pub use numa::NumaGiven;
pub mod invariants;
mod node_table;
mod storage;

pub use node_table::NodeTable;
#[cfg(test)]
mod tests;
