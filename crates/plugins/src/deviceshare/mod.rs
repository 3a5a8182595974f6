//! `deviceshare`: GPU sharing as Volcano's `gpushare` and vGPU devices do it
//! (spec/plugins-more.md §12).
//!
//! With `deviceshare.GPUSharingEnable`, a pod asking `volcano.sh/gpu-memory` (container
//! limits) fits a node only if one of its cards (`volcano.sh/gpu-number` of them sharing the
//! node's `volcano.sh/gpu-memory` capacity evenly, less the ids in the node's
//! `volcano.sh/gpu-unhealthy-ids` annotation) has that much memory idle; with
//! `deviceshare.GPUNumberEnable`, a pod asking `volcano.sh/gpu-number` cards needs that many
//! cards no pod uses. When the pod is placed, it gets the first such card(s), and its bind
//! carries the annotations `volcano.sh/gpu-index` (the cards) and `volcano.sh/predicate-time`
//! to the pod, where the device plugin reads them; a bind that fails leaves the pod as it was.
//! Pods already on a node hold the cards their `volcano.sh/gpu-index` names. This device
//! scores every node 0 in Volcano, so it adds no node order.
//!
//! With `deviceshare.VGPUEnable`, the cards are the ones the node registered for vGPU sharing
//! ([`vgpu`]); `deviceshare.SchedulePolicy` (`binpack` / `spread`) orders a node's cards and,
//! with `deviceshare.ScheduleWeight` above 0, scores nodes. The bind carries the vGPU
//! assignment annotations the device plugin acts on.
//!
//! Volcano's device configuration ConfigMap, which names the vGPU resources and MIG
//! geometries, reaches the sessions on the state (the daemon reads it; [`device_config_source`]
//! says which one).
//!
//! `deviceshare.GPUExclusiveRules` keeps pods of one label rule off each other's cards
//! ([`exclusive`]). `deviceshare.NodeLockEnable` places at most one device pod per node while
//! the node's lock annotation is younger than five minutes, and has the bind take the lock.
//! Volcano's Ascend vNPU devices are not provided: their switches are reported and ignored.

pub mod exclusive;
mod gpushare;
pub mod vgpu;

use std::collections::{BTreeMap, HashMap};

use engine::conf::{ArgWarning, Arguments};
use engine::framework::{ExtensionPoints, Plugin, PreBindWrites, SessionState};
use engine::model::fit::{FitError, FitStatus, StatusCode};
use engine::model::{NodeId, TaskId};

use gpushare::Cards;
pub use gpushare::{GPU_INDEX, GPU_MEMORY, GPU_NUMBER, PREDICATE_TIME, UNHEALTHY_IDS};
use vgpu::Gpus;
use vgpu::request::ResourceNames;

/// Registered plugin name.
pub const NAME: &str = "deviceshare";

const SHARING_KEY: &str = "deviceshare.GPUSharingEnable";
const NUMBER_KEY: &str = "deviceshare.GPUNumberEnable";
const VGPU_KEY: &str = "deviceshare.VGPUEnable";
const POLICY_KEY: &str = "deviceshare.SchedulePolicy";
const CM_NAME_KEY: &str = "deviceshare.KnownGeometriesCMName";
const CM_NAMESPACE_KEY: &str = "deviceshare.KnownGeometriesCMNamespace";
const WEIGHT_KEY: &str = "deviceshare.ScheduleWeight";
/// Switches of devices or features this build does not provide.
const NOT_PROVIDED: &[&str] = &[
    "deviceshare.AscendMindClusterVNPUEnable",
    "deviceshare.AscendHAMiVNPUEnable",
];
const NODE_LOCK_KEY: &str = "deviceshare.NodeLockEnable";
/// The node annotations Volcano's devices lock a node with (`nodelock.LockNode`).
const GPUSHARE_LOCK: &str = "gpu";
const VGPU_LOCK: &str = "hamivgpu";
/// A lock older than this is stale and may be taken over.
const LOCK_EXPIRY: std::time::Duration = std::time::Duration::from_secs(5 * 60);

/// The switches this build reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    pub gpu_sharing: bool,
    pub gpu_number: bool,
    pub vgpu: bool,
    /// `deviceshare.NodeLockEnable`: one device pod in flight per node.
    pub node_lock: bool,
    /// `deviceshare.SchedulePolicy`, as written.
    pub schedule_policy: String,
    /// `deviceshare.ScheduleWeight`; node order is 0 unless above 0.
    pub schedule_weight: i64,
    /// `deviceshare.GPUExclusiveRules` (vGPU).
    pub exclusive: exclusive::ExclusiveRules,
}

impl Config {
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Config {
        let mut c = Config::default();
        for (key, dst) in [
            (SHARING_KEY, &mut c.gpu_sharing),
            (NUMBER_KEY, &mut c.gpu_number),
            (VGPU_KEY, &mut c.vgpu),
            (NODE_LOCK_KEY, &mut c.node_lock),
        ] {
            if let Err(e) = args.get_bool(key, dst) {
                warnings.push(ArgWarning::new(key, e.message));
            }
        }
        if let Err(e) = args.get_string(POLICY_KEY, &mut c.schedule_policy) {
            warnings.push(ArgWarning::new(POLICY_KEY, e.message));
        }
        if let Err(e) = args.get_int(WEIGHT_KEY, &mut c.schedule_weight) {
            warnings.push(ArgWarning::new(WEIGHT_KEY, e.message));
        }
        // Volcano exits on these two conflicts; here the first device named stays on.
        if c.gpu_sharing && c.gpu_number {
            warnings.push(ArgWarning::new(
                NUMBER_KEY,
                "GPU sharing and GPU number cannot both be on (Volcano refuses to start); \
                 GPU number is off",
            ));
            c.gpu_number = false;
        }
        if (c.gpu_sharing || c.gpu_number) && c.vgpu {
            warnings.push(ArgWarning::new(
                VGPU_KEY,
                "GPU sharing (or number) and vGPU cannot both be on (Volcano refuses to start); \
                 vGPU is off",
            ));
            c.vgpu = false;
        }
        c.exclusive = exclusive::ExclusiveRules::read(args, warnings);
        for key in NOT_PROVIDED {
            let mut on = false;
            if args.get_bool(key, &mut on).is_ok() && on {
                warnings.push(ArgWarning::new(
                    *key,
                    "not provided by this build (only Volcano's GPU sharing and vGPU devices \
                     are); ignored",
                ));
            }
        }
        c
    }

    fn gpushare(&self) -> bool {
        self.gpu_sharing || self.gpu_number
    }
}

/// Where the configuration's vGPU device reads Volcano's device configuration from: the
/// ConfigMap (namespace, name) of `deviceshare.KnownGeometriesCMNamespace` /
/// `deviceshare.KnownGeometriesCMName`, or `None` when no `deviceshare` runs with vGPU.
pub fn device_config_source(conf: &engine::conf::SchedulerConf) -> Option<(String, String)> {
    let args = &conf
        .plugin_options()
        .find(|p| p.name == NAME && Config::read(&p.arguments, &mut Vec::new()).vgpu)?
        .arguments;
    let mut name = apis::device_config::DEFAULT_NAME.to_string();
    let mut namespace = apis::device_config::DEFAULT_NAMESPACE.to_string();
    let _ = args.get_string(CM_NAME_KEY, &mut name);
    let _ = args.get_string(CM_NAMESPACE_KEY, &mut namespace);
    Some((namespace, name))
}

/// The problems [`Config::read`] finds, for the configuration parser.
pub fn check_arguments(args: &Arguments) -> Vec<ArgWarning> {
    let mut warnings = Vec::new();
    Config::read(args, &mut warnings);
    warnings
}

/// The plugin instance of one session.
pub struct DeviceShare {
    config: Config,
    policy: vgpu::Policy,
    names: ResourceNames,
    /// GPU sharing cards by node index; `None` for a node without them.
    nodes: Vec<Option<Cards>>,
    /// vGPU cards by node index; `None` for a node that registered none.
    vgpus: Vec<Option<Gpus>>,
    /// The annotations each placed task's bind carries.
    annotations: HashMap<TaskId, BTreeMap<String, String>>,
    /// Node locks taken this session: node index → the task that took it, and the lock each
    /// such task's bind takes.
    locked: HashMap<usize, TaskId>,
    lock_of: HashMap<TaskId, &'static str>,
}

/// Builds the plugin from its arguments.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    let config = Config::read(args, &mut Vec::new());
    Box::new(DeviceShare {
        policy: vgpu::Policy::parse(&config.schedule_policy),
        config,
        names: ResourceNames::default(),
        nodes: Vec::new(),
        vgpus: Vec::new(),
        annotations: HashMap::new(),
        locked: HashMap::new(),
        lock_of: HashMap::new(),
    })
}

fn unschedulable(reason: String) -> FitError {
    FitError::new(FitStatus::new(StatusCode::Unschedulable, reason, NAME))
}

impl DeviceShare {
    /// Takes the node's lock for the task (Volcano's `LockNode`, whose write is left to the
    /// bind): refused while the node's lock annotation is younger than five minutes, is not a
    /// time, or was taken in this session for another pod.
    fn lock_node(
        &mut self,
        ssn: &SessionState,
        task: TaskId,
        node: NodeId,
        lock: &'static str,
    ) -> Result<(), String> {
        if !self.config.node_lock {
            return Ok(());
        }
        let n = ssn.node(node);
        let name = n.name();
        if self.locked.get(&node.index()).is_some_and(|&t| t != task) {
            return Err(format!("node {name} has been locked within 5 minutes"));
        }
        let held = n
            .spec
            .node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(lock));
        if let Some(value) = held {
            let at: k8s_openapi::jiff::Timestamp = value
                .parse()
                .map_err(|e| format!("node {name} lock {lock} is not a time ({value:?}): {e}"))?;
            let age = ssn.now().duration_since(at);
            if std::time::Duration::try_from(age).map_or(true, |a| a <= LOCK_EXPIRY) {
                return Err(format!("node {name} has been locked within 5 minutes"));
            }
        }
        self.locked.insert(node.index(), task);
        self.lock_of.insert(task, lock);
        Ok(())
    }

    /// Gives back a lock the task took this session.
    fn unlock_node(&mut self, task: TaskId) {
        if self.lock_of.remove(&task).is_some() {
            self.locked.retain(|_, t| *t != task);
        }
    }

    /// What the task asks of the enabled GPU sharing modes: (memory, cards).
    fn request(&self, ssn: &SessionState, task: TaskId) -> (u64, u64) {
        let pod = &ssn.task(task).spec.pod;
        let memory = if self.config.gpu_sharing {
            gpushare::memory_of_pod(pod)
        } else {
            0
        };
        let number = if self.config.gpu_number {
            gpushare::number_of_pod(pod)
        } else {
            0
        };
        (memory, number)
    }

    /// The node's vGPU cards when the task asks for some.
    fn vgpus_for(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Option<&Gpus> {
        let gpus = self.vgpus.get(node.index())?.as_ref()?;
        vgpu::request::asks_vgpu(&ssn.task(task).spec.pod, &self.names).then_some(gpus)
    }

    fn points(&self) -> ExtensionPoints {
        let mut points = ExtensionPoints::NONE;
        if self.config.gpushare() || self.config.vgpu {
            points = ExtensionPoints::PREDICATE
                | ExtensionPoints::EVENT_HANDLER
                | ExtensionPoints::PRE_BIND;
        }
        if self.config.vgpu && self.config.schedule_weight > 0 {
            points = points | ExtensionPoints::NODE_ORDER;
        }
        points
    }

    fn gpushare_predicate(
        &self,
        ssn: &SessionState,
        task: TaskId,
        node: NodeId,
    ) -> Result<(), FitError> {
        let Some(cards) = self.nodes.get(node.index()).and_then(Option::as_ref) else {
            return Ok(());
        };
        let (memory, number) = self.request(ssn, task);
        let name = ssn.node(node).name();
        if memory > 0 && cards.cards_with_memory(memory).is_empty() {
            return Err(unschedulable(format!(
                "GpuShare no enough gpu memory on node {name}"
            )));
        }
        if number > 0 && cards.idle_cards(number as usize).is_empty() {
            return Err(unschedulable(format!(
                "GpuNumber no enough gpu number on node {name}"
            )));
        }
        Ok(())
    }

    /// `Allocate` of the GPU sharing device: the first card with room (sharing) or the first
    /// idle cards (number); none left fails the placement, which the statement then undoes.
    fn gpushare_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        let t = ssn.task(task);
        let Some(node) = t.node else { return Ok(()) };
        let (memory, number) = self.request(ssn, task);
        if memory == 0 && number == 0 {
            return Ok(());
        }
        let Some(Some(cards)) = self.nodes.get_mut(node.index()) else {
            return Ok(());
        };
        // A pod that already holds cards (an eviction undone) takes them back.
        if !gpushare::gpu_index(&t.spec.pod).is_empty() {
            cards.add_pod(&t.spec.pod);
            return Ok(());
        }
        let ids: Vec<u32> = if memory > 0 {
            cards
                .cards_with_memory(memory)
                .into_iter()
                .take(1)
                .collect()
        } else {
            cards.idle_cards(number as usize)
        };
        if ids.is_empty() {
            return Err(format!(
                "the node {} can't place the pod {}",
                ssn.node(node).name(),
                t.key()
            ));
        }
        if memory > 0 {
            let name = ssn.node(node).name();
            self.lock_node(ssn, task, node, GPUSHARE_LOCK)
                .map_err(|e| format!("node {name} locked for lockname gpushare {e}"))?;
        }
        let Some(Some(cards)) = self.nodes.get_mut(node.index()) else {
            return Ok(());
        };
        cards.place(&t.spec.uid, memory, &ids);
        let nanos = ssn.now().as_nanosecond();
        self.annotations.insert(
            task,
            BTreeMap::from([
                (PREDICATE_TIME.to_string(), nanos.to_string()),
                (GPU_INDEX.to_string(), gpushare::index_value(&ids)),
            ]),
        );
        Ok(())
    }

    /// `Allocate` of the vGPU device: the cards the node's policy picks now (they may differ
    /// from the ones the predicate saw when earlier placements took some); none fails the
    /// placement.
    fn vgpu_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        let t = ssn.task(task);
        let Some(node) = t.node else { return Ok(()) };
        if !vgpu::request::asks_vgpu(&t.spec.pod, &self.names) {
            return Ok(());
        }
        let node_name = ssn.node(node).name().to_string();
        let rules = self.config.exclusive.of_pod(&t.spec.pod);
        let Some(Some(gpus)) = self.vgpus.get_mut(node.index()) else {
            return Ok(());
        };
        let pod = &t.spec.pod;
        // A bound pod that already holds cards (an eviction undone) takes them back.
        let bound = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if bound.is_some_and(|b| !b.is_empty())
            && pod
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(vgpu::IDS_NEW))
        {
            gpus.add_pod(pod, &t.spec.uid, rules);
            return Ok(());
        }
        let (cards, _) = gpus
            .fit(pod, &self.names, self.policy, rules)
            .map_err(|e| format!("the node {node_name} can't place the pod {}: {e}", t.key()))?;
        self.lock_node(ssn, task, node, VGPU_LOCK).map_err(|e| {
            format!(
                "node {node_name} locked for {} hamivgpu lockname {e}",
                t.spec.name
            )
        })?;
        let Some(Some(gpus)) = self.vgpus.get_mut(node.index()) else {
            return Ok(());
        };
        gpus.commit(pod, &t.spec.uid, &cards, rules);
        let ids = vgpu::encode_pod_cards(&cards);
        let seconds = ssn.now().as_second().to_string();
        self.annotations.insert(
            task,
            BTreeMap::from([
                (vgpu::ASSIGNED_NODE.to_string(), node_name),
                (vgpu::ASSIGNED_TIME.to_string(), seconds.clone()),
                (vgpu::IDS_NEW.to_string(), ids.clone()),
                (vgpu::TO_ALLOCATE.to_string(), ids),
                (vgpu::BIND_PHASE.to_string(), "allocating".to_string()),
                (vgpu::BIND_TIME.to_string(), seconds),
            ]),
        );
        Ok(())
    }
}

impl Plugin for DeviceShare {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        if self.config.gpushare() {
            self.nodes = ssn
                .nodes()
                .iter()
                .map(|n| {
                    let mut cards = Cards::of_node(&n.spec.node)?;
                    for &(t, _) in &n.tasks {
                        cards.add_pod(&ssn.task(t).spec.pod);
                    }
                    Some(cards)
                })
                .collect();
        }
        if self.config.vgpu {
            // Volcano's device configuration when one was read, else its defaults.
            let defaults;
            let device_config = match ssn.snapshot().device_config() {
                Some(c) => c,
                None => {
                    defaults = apis::DeviceConfig::defaults();
                    &defaults
                }
            };
            self.names = ResourceNames::of(device_config);
            let mut names = HashMap::new();
            self.vgpus = ssn
                .nodes()
                .iter()
                .map(|n| {
                    let mut gpus = Gpus::of_node(&n.spec.node, device_config)?;
                    for &(t, _) in &n.tasks {
                        let spec = &ssn.task(t).spec;
                        gpus.add_pod(
                            &spec.pod,
                            &spec.uid,
                            self.config.exclusive.of_pod(&spec.pod),
                        );
                        names.insert(spec.uid.clone(), spec.name.clone());
                    }
                    Some(gpus)
                })
                .collect();
            let cards = self
                .vgpus
                .iter()
                .flatten()
                .flat_map(|gpus| vgpu::card_metrics(gpus, &names))
                .collect();
            ssn.record_vgpu_cards(cards);
        }
    }

    fn extension_points(&self) -> ExtensionPoints {
        self.points()
    }

    fn possible_extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREDICATE
            | ExtensionPoints::EVENT_HANDLER
            | ExtensionPoints::PRE_BIND
            | ExtensionPoints::NODE_ORDER
    }

    /// `FilterNode` of the enabled device; a node without cards is left to the resource
    /// check, as in Volcano.
    fn predicate(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<(), FitError> {
        if self.config.gpushare() {
            return self.gpushare_predicate(ssn, task, node);
        }
        let Some(gpus) = self.vgpus_for(ssn, task, node) else {
            return Ok(());
        };
        let pod = &ssn.task(task).spec.pod;
        match gpus.fit(
            pod,
            &self.names,
            self.policy,
            self.config.exclusive.of_pod(pod),
        ) {
            Ok(_) => Ok(()),
            // Volcano's reason, with why (which Volcano only logs).
            Err(e) => Err(unschedulable(format!("hami-vgpuDeviceSharing error: {e}"))),
        }
    }

    /// The vGPU score of the cards the task would get here, rounded half up, times the weight.
    fn node_order(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<f64, String> {
        let Some(gpus) = self.vgpus_for(ssn, task, node) else {
            return Ok(0.0);
        };
        let pod = &ssn.task(task).spec.pod;
        let score = gpus
            .fit(
                pod,
                &self.names,
                self.policy,
                self.config.exclusive.of_pod(pod),
            )
            .map_or(0.0, |(_, s)| s);
        Ok((score + 0.5).floor() * self.config.schedule_weight as f64)
    }

    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
        if self.config.gpushare() {
            self.gpushare_allocate(ssn, task)
        } else if self.config.vgpu {
            self.vgpu_allocate(ssn, task)
        } else {
            Ok(())
        }
    }

    /// `Release`: the pod leaves its cards (an evicted pod frees them for the pod it makes
    /// room for) and its bind carries no card.
    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        let t = ssn.task(task);
        let Some(node) = t.node else { return };
        self.annotations.remove(&task);
        self.unlock_node(task);
        if self.config.vgpu {
            if let Some(Some(gpus)) = self.vgpus.get_mut(node.index()) {
                gpus.release(&t.spec.uid);
            }
            return;
        }
        let (memory, number) = self.request(ssn, task);
        if memory == 0 && number == 0 {
            return;
        }
        if let Some(Some(cards)) = self.nodes.get_mut(node.index()) {
            cards.remove_pod(&t.spec.uid);
        }
    }

    fn pre_bind(&self, _ssn: &SessionState, task: TaskId) -> PreBindWrites {
        PreBindWrites {
            annotations: self.annotations.get(&task).cloned().unwrap_or_default(),
            node_lock: self.lock_of.get(&task).map(|l| l.to_string()),
            ..PreBindWrites::default()
        }
    }
}

#[cfg(test)]
mod tests;
