//! Claims and volumes as the volume filters read them (component-helpers `storage/volume`,
//! `storage/ephemeral`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use apis::keys::BETA_STORAGE_CLASS;
pub use engine::model::claim::{fully_bound, volume_name as claim_volume_name};
use engine::model::quantity::parse_value;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};

use super::{Assumed, StorageView};
use crate::k8s::labels::selector_matches;
use crate::k8s::node_affinity::volume_terms_match;

/// The provisioner of classes for static volumes only.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// `volumeBindingMode` of a class whose claims wait for a pod.
pub const WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";

/// A claim a pod uses: a `persistentVolumeClaim` volume, or the claim of a generic ephemeral
/// volume (named `<pod>-<volume>`, and created for that pod).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodClaim {
    pub name: String,
    pub ephemeral: bool,
}

/// The claims of a pod, in volume order.
pub fn pod_claims(pod: &Pod) -> Vec<PodClaim> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| {
            if let Some(pvc) = &v.persistent_volume_claim {
                Some(PodClaim {
                    name: pvc.claim_name.clone(),
                    ephemeral: false,
                })
            } else {
                v.ephemeral.as_ref().map(|_| PodClaim {
                    name: format!("{pod_name}-{}", v.name),
                    ephemeral: true,
                })
            }
        })
        .collect()
}

/// `namespace/name` of a claim.
pub fn claim_key(claim: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or("default"),
        claim.metadata.name.as_deref().unwrap_or_default()
    )
}

fn annotation<'a>(annotations: &'a Option<BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    annotations.as_ref()?.get(key).map(String::as_str)
}

/// The claim's class: the beta annotation if present (even empty), else the spec's, else `""`.
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    annotation(&claim.metadata.annotations, BETA_STORAGE_CLASS)
        .or_else(|| claim.spec.as_ref()?.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// The volume's class, by the same rule.
pub fn volume_class(volume: &PersistentVolume) -> &str {
    annotation(&volume.metadata.annotations, BETA_STORAGE_CLASS)
        .or_else(|| volume.spec.as_ref()?.storage_class_name.as_deref())
        .unwrap_or_default()
}

pub fn claim_phase(claim: &PersistentVolumeClaim) -> &str {
    claim
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

pub fn being_deleted(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    meta.deletion_timestamp.is_some()
}

/// Bytes the claim asks for (`requests.storage`; none is 0).
pub fn claim_request(claim: &PersistentVolumeClaim) -> i128 {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| parse_value(&q.0).ok())
        .unwrap_or(0)
}

/// Bytes the volume holds (`capacity.storage`; none is 0).
pub fn volume_capacity(volume: &PersistentVolume) -> i128 {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| parse_value(&q.0).ok())
        .unwrap_or(0)
}

/// Upstream `IsDelayBindingMode`: the claim's class exists and binds `WaitForFirstConsumer`.
/// No class, or a missing one, binds at once; a class without a mode is an error.
pub fn delay_binding(
    claim: &PersistentVolumeClaim,
    storage: &dyn StorageView,
) -> Result<bool, String> {
    let class_name = claim_class(claim);
    if class_name.is_empty() {
        return Ok(false);
    }
    let Some(class) = storage.storage_class(class_name) else {
        return Ok(false);
    };
    match class.volume_binding_mode.as_deref() {
        None => Err(format!(
            "VolumeBindingMode not set for StorageClass {class_name:?}"
        )),
        Some(mode) => Ok(mode == WAIT_FOR_FIRST_CONSUMER),
    }
}

/// The claim of an ephemeral volume must be controlled by the pod.
pub fn owned_by_pod(claim: &PersistentVolumeClaim, pod: &Pod) -> bool {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// The error upstream gives for an ephemeral volume's claim the pod does not own.
pub fn not_owner_message(claim: &PersistentVolumeClaim, pod: &Pod) -> String {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    format!(
        "PVC {ns}/{} was not created for pod {ns}/{} (pod is not owner)",
        claim.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Upstream `CheckNodeAffinity`: no required node affinity passes every node.
pub fn volume_fits_node(volume: &PersistentVolume, node_labels: &BTreeMap<String, String>) -> bool {
    let required = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref());
    match required {
        None => true,
        Some(selector) => volume_terms_match(&selector.node_selector_terms, node_labels),
    }
}

fn volume_mode(mode: Option<&String>) -> &str {
    mode.map_or("Filesystem", String::as_str)
}

/// Whether a volume's claim reference (assumed first) names this claim.
fn promised_to(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
    assumed: &Assumed,
) -> Option<bool> {
    let name = volume.metadata.name.as_deref().unwrap_or_default();
    if let Some(key) = assumed.volume_claims.get(name) {
        return Some(*key == claim_key(claim));
    }
    let claim_ref = volume.spec.as_ref()?.claim_ref.as_ref()?;
    let same_name = claim_ref.name.as_deref() == claim.metadata.name.as_deref()
        && claim_ref.namespace.as_deref().unwrap_or_default()
            == claim.metadata.namespace.as_deref().unwrap_or("default");
    let same_uid = claim_ref
        .uid
        .as_deref()
        .is_none_or(|uid| uid.is_empty() || Some(uid) == claim.metadata.uid.as_deref());
    Some(same_name && same_uid)
}

/// Upstream `FindMatchingVolume` for a claim waiting for its first consumer on a node with
/// `node_labels`: a volume promised to the claim if its node affinity allows the node (and then
/// no other), else the smallest available volume of the claim's class that is big enough, has
/// the claim's mode and access modes, matches its selector and allows the node. Volumes in
/// `excluded` (taken by the pod's other claims) are skipped; ties go to the first of
/// `candidates` (in name order).
pub fn find_matching_volume<'s>(
    claim: &PersistentVolumeClaim,
    candidates: impl IntoIterator<Item = &'s Arc<PersistentVolume>>,
    node_labels: &BTreeMap<String, String>,
    excluded: &BTreeSet<String>,
    assumed: &Assumed,
) -> Option<&'s PersistentVolume> {
    let class = claim_class(claim);
    let request = claim_request(claim);
    let spec = claim.spec.as_ref();
    let mode = volume_mode(spec.and_then(|s| s.volume_mode.as_ref()));
    let attributes = spec.and_then(|s| s.volume_attributes_class_name.as_deref());
    let wanted_modes: Vec<&String> = spec
        .and_then(|s| s.access_modes.as_ref())
        .into_iter()
        .flatten()
        .collect();
    let mut best: Option<(&PersistentVolume, i128)> = None;
    for volume in candidates {
        let volume = volume.as_ref();
        let name = volume.metadata.name.as_deref().unwrap_or_default();
        let Some(vspec) = volume.spec.as_ref() else {
            continue;
        };
        if volume_class(volume) != class || excluded.contains(name) {
            continue;
        }
        let promised = promised_to(volume, claim, assumed);
        let capacity = volume_capacity(volume);
        if promised == Some(false)
            || capacity < request
            || volume_mode(vspec.volume_mode.as_ref()) != mode
            || vspec.volume_attributes_class_name.as_deref() != attributes
            || being_deleted(&volume.metadata)
        {
            continue;
        }
        let fits_node = volume_fits_node(volume, node_labels);
        if promised == Some(true) {
            // Pre-bound to this claim: this volume or none.
            return fits_node.then_some(volume);
        }
        let available =
            volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available");
        let selected = spec.and_then(|s| s.selector.as_ref()).is_none_or(|sel| {
            selector_matches(
                sel,
                volume.metadata.labels.as_ref().unwrap_or(&BTreeMap::new()),
            )
        });
        let modes_offered = vspec.access_modes.as_deref().unwrap_or_default();
        let has_modes = wanted_modes.iter().all(|m| modes_offered.contains(m));
        if !available || !selected || !fits_node || !has_modes {
            continue;
        }
        if best.is_none_or(|(_, smallest)| capacity < smallest) {
            best = Some((volume, capacity));
        }
    }
    best.map(|(volume, _)| volume)
}
