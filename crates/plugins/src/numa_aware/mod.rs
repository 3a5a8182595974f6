//! `numa-aware`: places Guaranteed pods whose CPUs the node's kubelet pins to NUMA nodes where
//! the kubelet's topology manager will admit them, and prefers nodes where they span fewer NUMA
//! nodes (spec/plugins-more.md §11).
//!
//! Each node's layout comes from its Numatopology report ([`apis::Numatopology`]): the
//! kubelet's CPU and topology manager policies, the CPUs still free, the reserved CPUs and where
//! each CPU sits. The CPUs given to pods bound since the last report are taken out as well
//! (`ClusterState::numa_pre_occupied`).
//!
//! * **Predicate**: a pod asking a policy (`volcano.sh/numa-topology-policy`, other than
//!   `none`) needs a node whose report says the CPU manager is `static` and whose topology
//!   policy is the same, with free CPUs; then, container by container, the CPU hints are
//!   merged by the node's policy as the kubelet would, and CPUs are chosen (whole sockets, then
//!   whole cores, then single CPUs, within the best hint first). A container the policy refuses
//!   makes the node unfit for good. Pods that are not Guaranteed pass untouched.
//! * **Batch node order**: for a pod with a policy, fewer NUMA nodes among its CPUs score
//!   higher: `100 − 100·count/max` × `weight`.
//! * The CPUs chosen on the node a pod is placed on are taken from that node's free sets for the
//!   rest of the session, and handed to the state at close for the pods bound.

pub mod bitmask;
pub mod cpu_manager;
pub mod cpuset;
pub mod policy;

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use apis::nodeinfo::policy_name;
use engine::conf::Arguments;
use engine::framework::{ExtensionPoints, NumaAssignment, Plugin, SessionState};
use engine::model::fit::{FitError, FitStatus, StatusCode};
use engine::model::{NodeId, TaskId, TaskStatus};

use crate::k8s::qos::{QosClass, pod_qos};
use cpu_manager::{CpuDetails, CpuInfo};
use cpuset::CpuSet;
use policy::Policy;

/// Registered plugin name.
pub const NAME: &str = "numa-aware";

/// Pod annotation: the NUMA policy the pod asks for.
pub const POLICY_ANNOTATION: &str = "volcano.sh/numa-topology-policy";

const WEIGHT_KEY: &str = "weight";
const CPU: &str = "cpu";

/// Resource name → CPUs.
type ResSets = BTreeMap<String, CpuSet>;

/// A node's NUMA layout for this session.
struct NodeNuma {
    cpu_manager_policy: String,
    topology_policy: String,
    details: CpuDetails,
    numa_ids: Vec<u32>,
    reserved_cpus: u32,
    /// What is still free, by resource.
    free: ResSets,
}

/// The plugin instance of one session.
pub struct NumaAware {
    weight: i64,
    /// By node index; `None` for a node without a report.
    nodes: Vec<Option<NodeNuma>>,
    /// Per task, per node: what the predicate chose there (`assignRes`).
    chosen: Mutex<HashMap<TaskId, HashMap<NodeId, ResSets>>>,
    /// Tasks placed in this session, and where (`taskBindNodeMap`).
    placed: BTreeMap<TaskId, NodeId>,
}

/// Builds the plugin from its arguments.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    let mut weight = 1;
    if let Err(e) = args.get_int(WEIGHT_KEY, &mut weight) {
        tracing::warn!(plugin = NAME, error = %e.message, "weight ignored");
    }
    Box::new(NumaAware {
        weight,
        nodes: Vec::new(),
        chosen: Mutex::new(HashMap::new()),
        placed: BTreeMap::new(),
    })
}

/// The layout a report gives, less what pods bound since hold.
fn node_numa(ssn: &SessionState, name: &str) -> Option<NodeNuma> {
    let report = ssn.snapshot().numatopologies().get(name)?;
    let spec = &report.spec;
    let mut details = CpuDetails::new();
    for (id, info) in &spec.cpu_detail {
        let Ok(id) = id.parse::<u32>() else { continue };
        details.insert(
            id,
            CpuInfo {
                numa: u32::try_from(info.numa).unwrap_or(0),
                socket: u32::try_from(info.socket).unwrap_or(0),
                core: u32::try_from(info.core).unwrap_or(0),
            },
        );
    }
    let numa_ids: Vec<u32> = cpu_manager::numa_ids(&details).into_iter().collect();
    let mut free = ResSets::new();
    for (resource, info) in &spec.numa_res_map {
        match CpuSet::parse(&info.allocatable) {
            Ok(set) => {
                free.insert(resource.clone(), set);
            }
            Err(e) => {
                tracing::warn!(node = name, resource, error = %e, "unreadable allocatable CPU list; the resource is left out")
            }
        }
    }
    for given in ssn.snapshot().numa_pre_occupied(name) {
        for (resource, cpus) in &given.resources {
            if let (Some(set), Ok(taken)) = (free.get_mut(resource), CpuSet::parse(cpus)) {
                *set = set.difference(&taken);
            }
        }
    }
    // Whole CPUs, rounded up, as the kubelet reserves them.
    let reserved_cpus = spec
        .res_reserved
        .get(CPU)
        .and_then(|q| engine::model::quantity::parse_milli(q).ok())
        .map_or(0, |milli| {
            u32::try_from((milli.max(0) + 999) / 1000).unwrap_or(u32::MAX)
        });
    Some(NodeNuma {
        cpu_manager_policy: spec
            .policies
            .get(policy_name::CPU_MANAGER)
            .cloned()
            .unwrap_or_default(),
        topology_policy: spec
            .policies
            .get(policy_name::TOPOLOGY_MANAGER)
            .cloned()
            .unwrap_or_default(),
        details,
        numa_ids,
        reserved_cpus,
        free,
    })
}

/// The policy a task asks for; empty when none.
fn task_policy(ssn: &SessionState, task: TaskId) -> &str {
    ssn.task(task)
        .spec
        .pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POLICY_ANNOTATION))
        .map_or("", String::as_str)
}

fn unfit(code: StatusCode, reason: String) -> FitError {
    FitError::new(FitStatus::new(code, reason, NAME))
}

impl NumaAware {
    /// `filterNodeByPolicy`: `Ok(true)` when the node takes part, `Ok(false)` when it passes
    /// untouched, `Err` when it cannot take the task.
    fn node_takes_part(&self, policy: &str, numa: Option<&NodeNuma>) -> Result<bool, String> {
        if !(policy.is_empty() || policy == "none") {
            let Some(n) = numa else {
                return Err("numa info is empty".into());
            };
            if n.cpu_manager_policy != "static" {
                return Err("cpu manager policy isn't static".into());
            }
            if n.topology_policy != policy {
                return Err(format!(
                    "task topology policy[{policy}] is different with node[{}]",
                    n.topology_policy
                ));
            }
            if n.free.get(CPU).is_none_or(CpuSet::is_empty) {
                return Err("cpu allocatable map is empty".into());
            }
            return Ok(true);
        }
        let Some(n) = numa else { return Ok(false) };
        Ok(n.cpu_manager_policy == "static"
            && !(n.topology_policy.is_empty() || n.topology_policy == "none"))
    }

    /// Chooses the CPUs of every container of the task on the node, or says which container
    /// the node's policy refuses.
    fn choose(&self, ssn: &SessionState, task: TaskId, n: &NodeNuma) -> Result<ResSets, String> {
        // An unknown policy is none, as in Volcano's policy factory.
        let node_policy = Policy::parse(&n.topology_policy).unwrap_or(Policy::None);
        let mut working = n.free.clone();
        let mut all = ResSets::new();
        let containers = ssn
            .task(task)
            .spec
            .pod
            .spec
            .as_ref()
            .map(|s| s.containers.as_slice())
            .unwrap_or_default();
        for container in containers {
            let request = whole_cpu_request(container);
            // A node that reports no CPU sets has no preference (Volcano's provider skips it).
            let Some(available) = working.get(CPU).cloned() else {
                continue;
            };
            let hints = cpu_manager::cpu_hints(&n.details, &available, n.reserved_cpus, request);
            let (best, admit) = policy::predicate(node_policy, &n.numa_ids, &[hints]);
            if !admit {
                return Err(format!(
                    "container {} cannot be assigned by numa",
                    container.name
                ));
            }
            let cpus =
                cpu_manager::assign_cpus(&n.details, &available, n.reserved_cpus, request, &best);
            if cpus.is_empty() {
                continue;
            }
            let entry = all.entry(CPU.to_string()).or_default();
            *entry = entry.union(&cpus);
            if let Some(w) = working.get_mut(CPU) {
                *w = w.difference(&cpus);
            }
        }
        Ok(all)
    }

    fn lock_chosen(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, HashMap<NodeId, ResSets>>> {
        self.chosen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The CPUs chosen for the task on its node, if any.
    fn chosen_on(&self, task: TaskId, node: NodeId) -> Option<ResSets> {
        self.lock_chosen()
            .get(&task)
            .and_then(|m| m.get(&node))
            .cloned()
    }
}

/// The container's CPU request in millicores when the pod is Guaranteed with a whole number of
/// CPUs (requests equal limits); what the CPU manager pins.
fn whole_cpu_request(container: &k8s_openapi::api::core::v1::Container) -> Option<i64> {
    let resources = container.resources.as_ref()?;
    let q = resources
        .requests
        .as_ref()
        .and_then(|r| r.get(CPU))
        .or_else(|| resources.limits.as_ref().and_then(|l| l.get(CPU)))?;
    engine::model::quantity::parse_milli(&q.0)
        .ok()
        .and_then(|m| i64::try_from(m).ok())
}

impl Plugin for NumaAware {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        if ssn.snapshot().numatopologies().is_empty() {
            self.nodes = Vec::new();
            return;
        }
        self.nodes = ssn
            .nodes()
            .iter()
            .map(|n| node_numa(ssn, n.name()))
            .collect();
    }

    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREDICATE
            | ExtensionPoints::BATCH_NODE_ORDER
            | ExtensionPoints::EVENT_HANDLER
    }

    fn predicate(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<(), FitError> {
        if pod_qos(&ssn.task(task).spec.pod) != QosClass::Guaranteed {
            return Ok(());
        }
        let numa = self.nodes.get(node.index()).and_then(Option::as_ref);
        match self.node_takes_part(task_policy(ssn, task), numa) {
            Err(reason) => return Err(unfit(StatusCode::Error, reason)),
            Ok(false) => return Ok(()),
            Ok(true) => {}
        }
        let Some(n) = numa else { return Ok(()) };
        let sets = self
            .choose(ssn, task, n)
            .map_err(|reason| unfit(StatusCode::UnschedulableAndUnresolvable, reason))?;
        self.lock_chosen()
            .entry(task)
            .or_default()
            .insert(node, sets);
        Ok(())
    }

    fn batch_node_order(
        &self,
        ssn: &SessionState,
        task: TaskId,
        nodes: &[NodeId],
    ) -> Result<Vec<f64>, String> {
        let policy = task_policy(ssn, task);
        if policy.is_empty() || policy == "none" {
            return Ok(Vec::new());
        }
        let chosen = self.lock_chosen();
        let Some(by_node) = chosen.get(&task) else {
            return Ok(Vec::new());
        };
        let counts: Vec<u32> = nodes
            .iter()
            .map(|&node| {
                let Some(n) = self.nodes.get(node.index()).and_then(Option::as_ref) else {
                    return 0;
                };
                let cpus = by_node.get(&node).and_then(|s| s.get(CPU));
                let mask: Vec<u32> = cpus
                    .map(|c| {
                        c.iter()
                            .filter_map(|id| n.details.get(&id))
                            .map(|d| d.numa)
                            .collect()
                    })
                    .unwrap_or_default();
                bitmask::NumaMask::of(&mask).count()
            })
            .collect();
        let max = counts.iter().copied().max().unwrap_or(0);
        Ok(counts
            .into_iter()
            .map(|c| {
                let normalised = if max == 0 {
                    100
                } else {
                    100 - 100 * i64::from(c) / i64::from(max)
                };
                (normalised * self.weight) as f64
            })
            .collect())
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        let Some(node) = ssn.task(task).node else {
            return Ok(());
        };
        let Some(sets) = self.chosen_on(task, node) else {
            return Ok(());
        };
        if let Some(Some(n)) = self.nodes.get_mut(node.index()) {
            for (resource, cpus) in &sets {
                if let Some(free) = n.free.get_mut(resource) {
                    *free = free.difference(cpus);
                }
            }
        }
        self.placed.insert(task, node);
        Ok(())
    }

    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        let Some(node) = ssn.task(task).node else {
            return;
        };
        let Some(sets) = self.chosen_on(task, node) else {
            return;
        };
        if let Some(Some(n)) = self.nodes.get_mut(node.index()) {
            for (resource, cpus) in &sets {
                if let Some(free) = n.free.get_mut(resource) {
                    *free = free.union(cpus);
                }
            }
        }
        self.placed.remove(&task);
    }

    /// Hands the CPUs of the pods this session binds to the state. Volcano hands over every
    /// task placed, pipelined ones included, which then hold their CPUs until a report that
    /// never comes; only bound pods are handed over here.
    fn on_session_close(&mut self, ssn: &mut SessionState) {
        let placed = std::mem::take(&mut self.placed);
        for (task, node) in placed {
            if ssn.task(task).status != TaskStatus::Binding {
                continue;
            }
            let Some(sets) = self.chosen_on(task, node) else {
                continue;
            };
            let t = ssn.task(task);
            let assignment = NumaAssignment {
                pod: t.key().to_string(),
                pod_uid: t.spec.uid.clone(),
                node: ssn.node(node).name().to_string(),
                resources: sets
                    .iter()
                    .map(|(r, c)| (r.clone(), c.to_string()))
                    .collect(),
            };
            ssn.record_numa_assignment(assignment);
        }
    }
}

#[cfg(test)]
mod tests;
