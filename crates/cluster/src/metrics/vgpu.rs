//! Volcano's vGPU card gauges (`pkg/scheduler/api/devices/nvidia/vgpu/metrics.go`): per card,
//! its memory, how many containers share it and the memory and compute they hold; per card and
//! pod, what the pod holds. Volcano sets them from its cache as pods arrive; here from the cards
//! `deviceshare` saw at the last session's open, which is the same view of bound pods.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use engine::framework::VgpuCard;
use prometheus::GaugeVec;

use super::families::Registrar;

/// Label values of the series set last time.
#[derive(Default)]
struct Known {
    /// (uuid, node)
    cards: BTreeSet<[String; 2]>,
    /// (uuid, node, pod)
    pods: BTreeSet<[String; 3]>,
}

pub(super) struct VgpuGauges {
    memory_limit: GaugeVec,
    shared: GaugeVec,
    memory: GaugeVec,
    cores: GaugeVec,
    pod_memory: GaugeVec,
    pod_cores: GaugeVec,
    known: Mutex<Known>,
}

impl VgpuGauges {
    pub(super) fn new(f: &Registrar<'_>) -> VgpuGauges {
        VgpuGauges {
            memory_limit: f.gauge_vec("vgpu_device_memory_limit"),
            shared: f.gauge_vec("vgpu_device_shared_number"),
            memory: f.gauge_vec("vgpu_device_allocated_memory"),
            cores: f.gauge_vec("vgpu_device_allocated_cores"),
            pod_memory: f.gauge_vec("vgpu_device_memory_allocation_for_a_certain_pod"),
            pod_cores: f.gauge_vec("vgpu_device_core_allocation_for_a_certain_pod"),
            known: Mutex::new(Default::default()),
        }
    }

    pub(super) fn record(&self, cards: &[VgpuCard]) {
        let mut seen_cards = BTreeSet::new();
        let mut seen_pods = BTreeSet::new();
        for c in cards {
            let labels = [c.uuid.as_str(), c.node.as_str()];
            self.memory_limit
                .with_label_values(&labels)
                .set(c.memory as f64);
            self.shared.with_label_values(&labels).set(c.shared as f64);
            self.memory
                .with_label_values(&labels)
                .set(c.used_memory as f64);
            self.cores
                .with_label_values(&labels)
                .set(c.used_cores as f64);
            for (pod, memory, cores) in &c.pods {
                let labels = [c.uuid.as_str(), c.node.as_str(), pod.as_str()];
                self.pod_memory
                    .with_label_values(&labels)
                    .set(*memory as f64);
                self.pod_cores.with_label_values(&labels).set(*cores as f64);
                seen_pods.insert([c.uuid.clone(), c.node.clone(), pod.clone()]);
            }
            seen_cards.insert([c.uuid.clone(), c.node.clone()]);
        }
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        for gone in known.cards.difference(&seen_cards) {
            let labels = [gone[0].as_str(), gone[1].as_str()];
            for g in [&self.memory_limit, &self.shared, &self.memory, &self.cores] {
                let _ = g.remove_label_values(&labels);
            }
        }
        for gone in known.pods.difference(&seen_pods) {
            let labels = [gone[0].as_str(), gone[1].as_str(), gone[2].as_str()];
            for g in [&self.pod_memory, &self.pod_cores] {
                let _ = g.remove_label_values(&labels);
            }
        }
        *known = Known {
            cards: seen_cards,
            pods: seen_pods,
        };
    }
}
