//! Volcano's GPU sharing device (spec/plugins-more.md §12; Volcano's
//! `pkg/scheduler/api/devices/nvidia/gpushare`): a node offers `volcano.sh/gpu-number` cards
//! sharing `volcano.sh/gpu-memory` evenly; a pod asks memory on one card (sharing) or whole idle
//! cards (number), through container limits; the cards a pod got are in its
//! `volcano.sh/gpu-index` annotation, which the bind carries to the pod for the device plugin.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};

/// Extended resource: GPU memory (node capacity: all cards; container limit: what it needs).
pub const GPU_MEMORY: &str = "volcano.sh/gpu-memory";
/// Extended resource: GPU cards.
pub const GPU_NUMBER: &str = "volcano.sh/gpu-number";
/// Pod annotation: the cards given, `"0"` or `"1,3"`.
pub const GPU_INDEX: &str = "volcano.sh/gpu-index";
/// Pod annotation: when the cards were chosen (Unix nanoseconds).
pub const PREDICATE_TIME: &str = "volcano.sh/predicate-time";
/// Node annotation: cards the device plugin found unhealthy, `"0,2"`.
pub const UNHEALTHY_IDS: &str = "volcano.sh/gpu-unhealthy-ids";

/// One card: its memory and what each pod on it asks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Card {
    pub memory: u64,
    /// Pod uid → the pod's GPU memory request (0 for a pod holding the whole card by number).
    pub pods: BTreeMap<String, u64>,
}

impl Card {
    /// Idle memory; a card whose pods ask more than it has is full, not negative.
    fn idle(&self) -> u64 {
        let asked = (self.pods.values()).fold(0u64, |sum, &m| sum.saturating_add(m));
        self.memory.saturating_sub(asked)
    }
}

/// A node's cards by id (`GPUDevices`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cards {
    pub cards: BTreeMap<u32, Card>,
}

/// An extended-resource quantity as a whole number (Kubernetes' `Value()`, rounded up).
fn whole(q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity) -> Option<u64> {
    let milli = engine::model::quantity::parse_milli(&q.0).ok()?;
    u64::try_from((milli.max(0) + 999) / 1000).ok()
}

impl Cards {
    /// The node's cards, or `None` when it offers no GPU memory and cards (`NewGPUDevices`).
    pub fn of_node(node: &Node) -> Option<Cards> {
        let capacity = node.status.as_ref()?.capacity.as_ref()?;
        let memory = whole(capacity.get(GPU_MEMORY)?)?;
        let number = whole(capacity.get(GPU_NUMBER)?)?;
        if number == 0 {
            return None;
        }
        let per_card = memory / number;
        let mut cards: BTreeMap<u32, Card> = (0..number)
            .filter_map(|i| u32::try_from(i).ok())
            .map(|i| {
                (
                    i,
                    Card {
                        memory: per_card,
                        pods: BTreeMap::new(),
                    },
                )
            })
            .collect();
        let unhealthy = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(UNHEALTHY_IDS));
        for id in unhealthy.into_iter().flat_map(|v| v.split(',')) {
            if let Ok(id) = id.trim().parse::<u32>() {
                cards.remove(&id);
            }
        }
        Some(Cards { cards })
    }

    /// Accounts a pod already on the node to the cards its annotation names (`AddResource`).
    /// Finished pods hold nothing.
    pub fn add_pod(&mut self, pod: &Pod) {
        let (memory, number) = (memory_of_pod(pod), number_of_pod(pod));
        if memory == 0 && number == 0 {
            return;
        }
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        let held = if matches!(phase, Some("Succeeded" | "Failed")) {
            0
        } else {
            memory
        };
        for id in gpu_index(pod) {
            if let Some(card) = self.cards.get_mut(&id) {
                card.pods.insert(uid(pod), held);
            }
        }
    }

    /// Takes a pod off every card (`SubResource`, `Release`).
    pub fn remove_pod(&mut self, pod_uid: &str) {
        for card in self.cards.values_mut() {
            card.pods.remove(pod_uid);
        }
    }

    /// Cards with at least `memory` idle, ascending (`predicateGPUbyMemory`).
    pub fn cards_with_memory(&self, memory: u64) -> Vec<u32> {
        self.cards
            .iter()
            .filter(|(_, c)| c.idle() >= memory)
            .map(|(&id, _)| id)
            .collect()
    }

    /// The first `n` cards no pod uses, or none when there are fewer (`predicateGPUbyNumber`).
    /// Volcano takes them in map order; here in ascending id order.
    pub fn idle_cards(&self, n: usize) -> Vec<u32> {
        let idle: Vec<u32> = self
            .cards
            .iter()
            .filter(|(_, c)| c.pods.is_empty())
            .map(|(&id, _)| id)
            .collect();
        if idle.len() < n {
            return Vec::new();
        }
        idle[..n].to_vec()
    }

    /// Puts a pod on these cards.
    pub fn place(&mut self, pod_uid: &str, memory: u64, ids: &[u32]) {
        for id in ids {
            if let Some(card) = self.cards.get_mut(id) {
                card.pods.insert(pod_uid.to_string(), memory);
            }
        }
    }
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

/// The limits of `name` of every container and the largest of the init containers: the larger
/// of the containers' sum and the init peak.
fn pod_limit(pod: &Pod, name: &str) -> u64 {
    let Some(spec) = pod.spec.as_ref() else {
        return 0;
    };
    let of = |c: &k8s_openapi::api::core::v1::Container| {
        c.resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.get(name))
            .and_then(whole)
            .unwrap_or(0)
    };
    let containers = (spec.containers.iter()).fold(0u64, |sum, c| sum.saturating_add(of(c)));
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .map(of)
        .max()
        .unwrap_or(0);
    containers.max(init)
}

/// GPU memory the pod asks (`getGPUMemoryOfPod`).
pub fn memory_of_pod(pod: &Pod) -> u64 {
    pod_limit(pod, GPU_MEMORY)
}

/// GPU cards the pod asks (`getGPUNumberOfPod`).
pub fn number_of_pod(pod: &Pod) -> u64 {
    pod_limit(pod, GPU_NUMBER)
}

/// The cards a pod's annotation names; none when it is absent or unreadable (`GetGPUIndex`).
pub fn gpu_index(pod: &Pod) -> Vec<u32> {
    let Some(value) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(GPU_INDEX))
    else {
        return Vec::new();
    };
    value
        .split(',')
        .map(|id| id.trim().parse::<u32>())
        .collect::<Result<Vec<u32>, _>>()
        .unwrap_or_default()
}

/// The annotation value for these cards.
pub fn index_value(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}
