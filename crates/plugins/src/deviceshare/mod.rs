//! `deviceshare`: GPU sharing as Volcano's `gpushare` device does it (spec/plugins-more.md §12).
//!
//! With `deviceshare.GPUSharingEnable`, a pod asking `volcano.sh/gpu-memory` (container
//! limits) fits a node only if one of its cards (`volcano.sh/gpu-number` of them sharing the
//! node's `volcano.sh/gpu-memory` capacity evenly, less the ids in the node's
//! `volcano.sh/gpu-unhealthy-ids` annotation) has that much memory idle; with
//! `deviceshare.GPUNumberEnable`, a pod asking `volcano.sh/gpu-number` cards needs that many
//! cards no pod uses. When the pod is placed, it gets the first such card(s), and its bind
//! carries the annotations `volcano.sh/gpu-index` (the cards) and `volcano.sh/predicate-time`
//! to the pod, where the device plugin reads them; a bind that fails leaves the pod as it was.
//! Pods already on a node hold the cards their `volcano.sh/gpu-index` names.
//!
//! The GPU sharing device scores every node 0 in Volcano, so no node order is registered.
//! Volcano's other devices (vGPU, Ascend vNPU) and its node lock are not provided: their
//! switches are reported and ignored.

mod gpushare;

use std::collections::{BTreeMap, HashMap};

use engine::conf::{ArgWarning, Arguments};
use engine::framework::{ExtensionPoints, Plugin, PreBindWrites, SessionState};
use engine::model::fit::{FitError, FitStatus, StatusCode};
use engine::model::{NodeId, TaskId};

use gpushare::Cards;
pub use gpushare::{GPU_INDEX, GPU_MEMORY, GPU_NUMBER, PREDICATE_TIME, UNHEALTHY_IDS};

/// Registered plugin name.
pub const NAME: &str = "deviceshare";

const SHARING_KEY: &str = "deviceshare.GPUSharingEnable";
const NUMBER_KEY: &str = "deviceshare.GPUNumberEnable";
/// Switches of devices or features this build does not provide.
const NOT_PROVIDED: &[&str] = &[
    "deviceshare.VGPUEnable",
    "deviceshare.AscendMindClusterVNPUEnable",
    "deviceshare.AscendHAMiVNPUEnable",
    "deviceshare.NodeLockEnable",
];

/// The switches this build reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    pub gpu_sharing: bool,
    pub gpu_number: bool,
}

impl Config {
    pub fn read(args: &Arguments, warnings: &mut Vec<ArgWarning>) -> Config {
        let mut c = Config::default();
        for (key, dst) in [
            (SHARING_KEY, &mut c.gpu_sharing),
            (NUMBER_KEY, &mut c.gpu_number),
        ] {
            if let Err(e) = args.get_bool(key, dst) {
                warnings.push(ArgWarning::new(key, e.message));
            }
        }
        if c.gpu_sharing && c.gpu_number {
            // Volcano exits on this; here the sharing mode is kept and the number mode dropped.
            warnings.push(ArgWarning::new(
                NUMBER_KEY,
                "GPU sharing and GPU number cannot both be on (Volcano refuses to start); \
                 GPU number is off",
            ));
            c.gpu_number = false;
        }
        for key in NOT_PROVIDED {
            let mut on = false;
            if args.get_bool(key, &mut on).is_ok() && on {
                warnings.push(ArgWarning::new(
                    *key,
                    "not provided by this build (only Volcano's GPU sharing device is); ignored",
                ));
            }
        }
        c
    }
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
    /// By node index; `None` for a node without GPU cards.
    nodes: Vec<Option<Cards>>,
    /// The annotations each placed task's bind carries.
    annotations: HashMap<TaskId, BTreeMap<String, String>>,
}

/// Builds the plugin from its arguments.
pub fn new(args: &Arguments) -> Box<dyn Plugin> {
    Box::new(DeviceShare {
        config: Config::read(args, &mut Vec::new()),
        nodes: Vec::new(),
        annotations: HashMap::new(),
    })
}

fn unschedulable(reason: String) -> FitError {
    FitError::new(FitStatus::new(StatusCode::Unschedulable, reason, NAME))
}

impl DeviceShare {
    /// What the task asks of the enabled modes: (memory, cards).
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
}

impl Plugin for DeviceShare {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_session_open(&mut self, ssn: &mut SessionState) {
        if !(self.config.gpu_sharing || self.config.gpu_number) {
            return;
        }
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

    fn extension_points(&self) -> ExtensionPoints {
        if self.config.gpu_sharing || self.config.gpu_number {
            ExtensionPoints::PREDICATE | ExtensionPoints::EVENT_HANDLER | ExtensionPoints::PRE_BIND
        } else {
            ExtensionPoints::NONE
        }
    }

    fn possible_extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::PREDICATE | ExtensionPoints::EVENT_HANDLER | ExtensionPoints::PRE_BIND
    }

    /// `FilterNode` of the GPU sharing device; a node without cards is left to the resource
    /// check, as in Volcano.
    fn predicate(&self, ssn: &SessionState, task: TaskId, node: NodeId) -> Result<(), FitError> {
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

    /// `Allocate` of the device: the first card with room (sharing) or the first idle cards
    /// (number); none left fails the placement, which the statement then undoes.
    fn on_allocate(&mut self, ssn: &SessionState, task: TaskId) -> Result<(), String> {
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
        let ids = if memory > 0 {
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

    /// `Release`: the pod leaves its cards (an evicted pod frees them for the pod it makes
    /// room for) and its bind carries no card.
    fn on_deallocate(&mut self, ssn: &SessionState, task: TaskId) {
        let t = ssn.task(task);
        let Some(node) = t.node else { return };
        self.annotations.remove(&task);
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
            ..PreBindWrites::default()
        }
    }
}

#[cfg(test)]
mod tests;
