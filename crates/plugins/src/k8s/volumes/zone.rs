//! VolumeZone (upstream `volumezone/volume_zone.go`): a node in a zone or region must be in
//! the zone and region of every bound volume the pod uses.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::claims::{claim_class, claim_volume_name, delay_binding};
use super::{Failure, StorageView};
use crate::k8s::labels::node_labels;

pub const NO_VOLUME_ZONE: &str = "node(s) had no available volume zone";

const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const ZONE: &str = "topology.kubernetes.io/zone";
const REGION: &str = "topology.kubernetes.io/region";
const TOPOLOGY_LABELS: [&str; 4] = [BETA_ZONE, BETA_REGION, ZONE, REGION];

/// A topology label of a volume and the values it allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeTopology {
    pub key: String,
    pub values: BTreeSet<String>,
}

/// Upstream PreFilter: the topology labels of the volumes of the pod's claims (`persistentVolume
/// Claim` volumes only); `Ok(None)` when there are none (Skip). Unbound claims of a
/// `WaitForFirstConsumer` class are left to VolumeBinding.
pub fn prefilter(
    pod: &Pod,
    storage: &dyn StorageView,
) -> Result<Option<Vec<VolumeTopology>>, Failure> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut topology = Vec::new();
    let volumes = pod.spec.iter().flat_map(|s| s.volumes.iter().flatten());
    for source in volumes.filter_map(|v| v.persistent_volume_claim.as_ref()) {
        let name = &source.claim_name;
        if name.is_empty() {
            return Err(Failure::Unresolvable(
                "PersistentVolumeClaim had no name".to_owned(),
            ));
        }
        let Some(claim) = storage.claim(namespace, name) else {
            return Err(Failure::Unresolvable(format!(
                "persistentvolumeclaim {name:?} not found"
            )));
        };
        let volume_name = claim_volume_name(claim);
        if volume_name.is_empty() {
            let class = claim_class(claim);
            if class.is_empty() {
                return Err(Failure::Unresolvable(
                    "PersistentVolumeClaim had no pv name and storageClass name".to_owned(),
                ));
            }
            if storage.storage_class(class).is_none() {
                return Err(Failure::Unresolvable(format!(
                    "storageclass.storage.k8s.io {class:?} not found"
                )));
            }
            match delay_binding(claim, storage) {
                Err(e) => return Err(Failure::Unresolvable(e)),
                Ok(true) => continue,
                Ok(false) => {
                    return Err(Failure::Unresolvable(
                        "PersistentVolume had no name".to_owned(),
                    ));
                }
            }
        }
        let Some(volume) = storage.volume(volume_name) else {
            return Err(Failure::Unresolvable(format!(
                "persistentvolume {volume_name:?} not found"
            )));
        };
        for key in TOPOLOGY_LABELS {
            let Some(value) = volume.metadata.labels.as_ref().and_then(|l| l.get(key)) else {
                continue;
            };
            // A value may list several zones (`a__b`); one with an empty part is ignored.
            let values: Vec<&str> = value.split("__").map(str::trim).collect();
            if values.iter().any(|v| v.is_empty()) {
                continue;
            }
            topology.push(VolumeTopology {
                key: key.to_owned(),
                values: values.into_iter().map(str::to_owned).collect(),
            });
        }
    }
    Ok((!topology.is_empty()).then_some(topology))
}

/// Upstream Filter: a node with none of the zone and region labels passes; otherwise every
/// volume label must be met, a beta label on the volume also by the node's GA label.
pub fn filter(topology: &[VolumeTopology], node: &Node) -> Result<(), String> {
    let labels = node_labels(node);
    if !TOPOLOGY_LABELS.iter().any(|k| labels.contains_key(*k)) {
        return Ok(());
    }
    for required in topology {
        let ga = match required.key.as_str() {
            BETA_ZONE => Some(ZONE),
            BETA_REGION => Some(REGION),
            _ => None,
        };
        let value = labels
            .get(&required.key)
            .or_else(|| ga.and_then(|k| labels.get(k)));
        if !value.is_some_and(|v| required.values.contains(v)) {
            return Err(NO_VOLUME_ZONE.to_owned());
        }
    }
    Ok(())
}
