//! NodeVolumeLimits for CSI drivers (upstream `nodevolumelimits/csi.go`): the volumes of one
//! driver on a node may not exceed the attach count its CSINode publishes.
//!
//! Counted: claims bound to CSI volumes (by driver and volume handle, so two pods sharing a
//! volume count it once) and unbound claims under their class's provisioner. Not modelled:
//! in-tree volumes migrated to CSI drivers, and VolumeAttachments of volumes no pod on the node
//! uses (this build does not mirror VolumeAttachments).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::claims::{claim_class, claim_volume_name, not_owner_message, owned_by_pod, pod_claims};
use super::{Failure, StorageView};
use crate::k8s::labels::node_name;

pub const MAX_VOLUME_COUNT: &str = "node(s) exceed max volume count";

/// Upstream PreFilter: only pods with claims are checked.
pub fn applies(pod: &Pod) -> bool {
    !pod_claims(pod).is_empty()
}

/// The countable volumes a pod brings (unique name → driver), worked out once per task; the
/// Filter reports a failure here on every node, as upstream's Filter does.
pub type NewVolumes = Result<BTreeMap<String, String>, Failure>;

/// The new pod's countable volumes, for [`filter`].
pub fn new_volumes(pod: &Pod, storage: &dyn StorageView) -> NewVolumes {
    csi_volumes(pod, storage, true)
}

/// The pod's countable volumes: unique name (`driver/handle`) → driver. For the new pod
/// (`strict`) a missing claim is a failure; for pods already on the node it is skipped.
fn csi_volumes(
    pod: &Pod,
    storage: &dyn StorageView,
    strict: bool,
) -> Result<BTreeMap<String, String>, Failure> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut volumes = BTreeMap::new();
    for used in pod_claims(pod) {
        if used.name.is_empty() {
            if strict {
                return Err(Failure::Error(
                    "PersistentVolumeClaim had no name".to_owned(),
                ));
            }
            continue;
        }
        let Some(claim) = storage.claim(namespace, &used.name) else {
            if strict {
                return Err(Failure::Unresolvable(format!(
                    "looking up PVC {namespace}/{}: persistentvolumeclaim {:?} not found",
                    used.name, used.name
                )));
            }
            continue;
        };
        if used.ephemeral && !owned_by_pod(claim, pod) {
            if strict {
                return Err(Failure::Error(not_owner_message(claim, pod)));
            }
            continue;
        }
        let volume = storage.volume(claim_volume_name(claim));
        let (driver, handle) = match volume {
            Some(volume) => match volume.spec.as_ref().and_then(|s| s.csi.as_ref()) {
                Some(csi) => (csi.driver.clone(), csi.volume_handle.clone()),
                None => continue,
            },
            // Not bound yet (or its volume is gone): counted under the class's provisioner.
            None => {
                let Some(class) = storage.storage_class(claim_class(claim)) else {
                    continue;
                };
                (
                    class.provisioner.clone(),
                    format!("unbound:{namespace}/{}", used.name),
                )
            }
        };
        volumes.insert(format!("{driver}/{handle}"), driver);
    }
    Ok(volumes)
}

/// Upstream Filter: for each driver the pod uses, the volumes already on the node plus the
/// pod's new ones must stay within the CSINode's `allocatable.count` (a driver without a count
/// has no limit; a node without a CSINode none at all).
pub fn filter<'p>(
    new: &NewVolumes,
    node: &Node,
    pods_on_node: impl Iterator<Item = &'p Pod>,
    storage: &dyn StorageView,
) -> Result<(), Failure> {
    let mut new = new.clone()?;
    if new.is_empty() {
        return Ok(());
    }
    let Some(csi_node) = storage.csi_node(node_name(node)) else {
        return Ok(());
    };
    let limits: BTreeMap<&str, i32> = csi_node
        .spec
        .drivers
        .iter()
        .filter_map(|d| Some((d.name.as_str(), d.allocatable.as_ref()?.count?)))
        .collect();
    if limits.is_empty() {
        return Ok(());
    }
    let mut attached = BTreeMap::new();
    for other in pods_on_node {
        if let Ok(volumes) = csi_volumes(other, storage, false) {
            attached.extend(volumes);
        }
    }
    new.retain(|unique, _| !attached.contains_key(unique));
    let count = |volumes: &BTreeMap<String, String>, driver: &str| {
        volumes.values().filter(|d| d.as_str() == driver).count()
    };
    for (driver, limit) in limits {
        let wanted = count(&new, driver);
        if wanted == 0 {
            continue;
        }
        let total = count(&attached, driver) + wanted;
        if i64::try_from(total).unwrap_or(i64::MAX) > i64::from(limit) {
            return Err(Failure::Unschedulable(MAX_VOLUME_COUNT.to_owned()));
        }
    }
    Ok(())
}
