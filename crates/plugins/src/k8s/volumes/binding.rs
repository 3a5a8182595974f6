//! VolumeBinding (upstream `volumebinding/volume_binding.go`, `binder.go`): the pod's claims
//! exist; bound claims' volumes allow the node; claims waiting for their first consumer can get
//! a volume on the node, an available static one or one the class can provision there.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;

use super::claims::{
    self, NO_PROVISIONER, claim_key, claim_phase, claim_request, claim_volume_name, fully_bound,
    pod_claims, volume_fits_node,
};
use super::{Assumed, Failure, StorageView};
use crate::k8s::labels::{node_labels, node_name};

pub const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
pub const NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
pub const BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
pub const PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

/// The pod's claims, sorted as upstream PreFilter sorts them.
#[derive(Clone, Debug, Default)]
pub struct ClaimGroups {
    /// Fully bound: their volumes must allow the node.
    pub bound: Vec<Arc<PersistentVolumeClaim>>,
    /// Unbound, of a `WaitForFirstConsumer` class: a volume is found or provisioned per node.
    pub delayed: Vec<Arc<PersistentVolumeClaim>>,
    /// The volumes of each delayed claim's class, in name order, listed once per task (as
    /// upstream's PreFilter does) rather than for every node.
    pub volumes_by_class: BTreeMap<String, Vec<Arc<PersistentVolume>>>,
}

/// Upstream PreFilter: `Ok(None)` when the pod uses no claim (Skip).
pub fn prefilter(pod: &Pod, storage: &dyn StorageView) -> Result<Option<ClaimGroups>, Failure> {
    let uses = pod_claims(pod);
    if uses.is_empty() {
        return Ok(None);
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut found = Vec::with_capacity(uses.len());
    for used in &uses {
        let Some(claim) = storage.claim(namespace, &used.name) else {
            return Err(Failure::Unresolvable(if used.ephemeral {
                format!(
                    "waiting for ephemeral volume controller to create the persistentvolumeclaim {:?}",
                    used.name
                )
            } else {
                format!("persistentvolumeclaim {:?} not found", used.name)
            }));
        };
        if claim_phase(claim) == "Lost" {
            return Err(Failure::Unresolvable(format!(
                "persistentvolumeclaim {:?} bound to non-existent persistentvolume {:?}",
                used.name,
                claim_volume_name(claim)
            )));
        }
        if claims::being_deleted(&claim.metadata) {
            return Err(Failure::Unresolvable(format!(
                "persistentvolumeclaim {:?} is being deleted",
                used.name
            )));
        }
        if used.ephemeral && !claims::owned_by_pod(claim, pod) {
            return Err(Failure::Unresolvable(claims::not_owner_message(claim, pod)));
        }
        found.push(claim.clone());
    }
    let mut groups = ClaimGroups::default();
    let mut immediate = false;
    for claim in found {
        if fully_bound(&claim) {
            groups.bound.push(claim);
        } else if claims::delay_binding(&claim, storage).map_err(Failure::Error)?
            && claim_volume_name(&claim).is_empty()
        {
            groups.delayed.push(claim);
        } else {
            // Includes a claim pre-bound to a volume the controller has not finished binding.
            immediate = true;
        }
    }
    if immediate {
        return Err(Failure::Unresolvable(UNBOUND_IMMEDIATE.to_owned()));
    }
    for claim in &groups.delayed {
        let class = claims::claim_class(claim);
        if !groups.volumes_by_class.contains_key(class) {
            let volumes = storage
                .volumes()
                .filter(|v| claims::volume_class(v) == class)
                .cloned()
                .collect();
            groups.volumes_by_class.insert(class.to_owned(), volumes);
        }
    }
    Ok(Some(groups))
}

/// What placing the pod on a node takes: volumes promised to claims, and claims whose volume is
/// provisioned for the node (upstream `PodVolumes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodVolumes {
    /// (volume name, claim `namespace/name`).
    pub bindings: Vec<(String, String)>,
    /// Claims (`namespace/name`) to provision on the node.
    pub provisions: Vec<String>,
}

impl PodVolumes {
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty() && self.provisions.is_empty()
    }
}

/// Upstream Filter (`FindPodVolumes`) for one node: the volumes the pod would get, or the
/// reasons (in upstream's order) it cannot be placed there.
pub fn filter(
    groups: &ClaimGroups,
    node: &Node,
    storage: &dyn StorageView,
    assumed: &Assumed,
) -> Result<PodVolumes, Failure> {
    let labels = node_labels(node);
    let mut bound_satisfied = true;
    let mut bound_found = true;
    for claim in &groups.bound {
        match storage.volume(claim_volume_name(claim)) {
            None => {
                bound_found = false;
                break;
            }
            Some(volume) if !volume_fits_node(volume, labels) => {
                bound_satisfied = false;
                break;
            }
            Some(_) => {}
        }
    }
    let mut unbound_satisfied = true;
    let mut volumes = PodVolumes::default();
    if !groups.delayed.is_empty() {
        match delayed_claims(groups, node, storage, assumed)? {
            Some(found) => volumes = found,
            None => unbound_satisfied = false,
        }
    }
    // Upstream's order; "not enough free storage" (CSI storage capacity) is not modelled.
    let reasons: Vec<&str> = [
        (!bound_satisfied, NODE_CONFLICT),
        (!unbound_satisfied, BIND_CONFLICT),
        (!bound_found, PV_NOT_EXIST),
    ]
    .into_iter()
    .filter_map(|(failed, reason)| failed.then_some(reason))
    .collect();
    if reasons.is_empty() {
        Ok(volumes)
    } else {
        Err(Failure::Unresolvable(reasons.join(", ")))
    }
}

/// The delayed claims on one node: `None` when a claim is promised to another node or can get
/// no volume here.
fn delayed_claims(
    groups: &ClaimGroups,
    node: &Node,
    storage: &dyn StorageView,
    assumed: &Assumed,
) -> Result<Option<PodVolumes>, Failure> {
    let name = node_name(node);
    let labels = node_labels(node);
    let mut to_provision = Vec::new();
    let mut to_match = Vec::new();
    for claim in &groups.delayed {
        match assumed.selected_node(&claim_key(claim), claim) {
            Some(selected) if selected != name => return Ok(None),
            Some(_) => to_provision.push(claim),
            None => to_match.push(claim),
        }
    }
    // Smallest request first, so that a small claim does not take the volume a bigger one needs.
    to_match.sort_by_key(|c| claim_request(c));
    let mut volumes = PodVolumes::default();
    let mut chosen = BTreeSet::new();
    for claim in to_match {
        let candidates = groups
            .volumes_by_class
            .get(claims::claim_class(claim))
            .into_iter()
            .flatten();
        match claims::find_matching_volume(claim, candidates, labels, &chosen, assumed) {
            Some(volume) => {
                let volume_name = volume.metadata.name.clone().unwrap_or_default();
                chosen.insert(volume_name.clone());
                volumes.bindings.push((volume_name, claim_key(claim)));
            }
            None => to_provision.push(claim),
        }
    }
    for claim in to_provision {
        let class_name = claims::claim_class(claim);
        if class_name.is_empty() {
            return Err(Failure::Error(format!(
                "no class for claim {:?}",
                claim_key(claim)
            )));
        }
        let Some(class) = storage.storage_class(class_name) else {
            return Err(Failure::Error(format!(
                "failed to find storage class {class_name:?}"
            )));
        };
        if class.provisioner.is_empty()
            || class.provisioner == NO_PROVISIONER
            || !allowed_topologies_match(class, labels)
        {
            return Ok(None);
        }
        // Storage capacity is judged only for CSI drivers that publish it (CSIDriver
        // `storageCapacity`), which this build does not mirror: provisioning counts as possible.
        volumes.provisions.push(claim_key(claim));
    }
    Ok(Some(volumes))
}

/// Upstream `MatchTopologySelectorTerms`: no terms allow every node; otherwise one term whose
/// every requirement the node's labels meet (an empty term allows nothing).
fn allowed_topologies_match(class: &StorageClass, labels: &BTreeMap<String, String>) -> bool {
    let terms = class.allowed_topologies.as_deref().unwrap_or_default();
    terms.is_empty()
        || terms.iter().any(|term| {
            let requirements = term.match_label_expressions.as_deref().unwrap_or_default();
            !requirements.is_empty()
                && requirements
                    .iter()
                    .all(|r| labels.get(&r.key).is_some_and(|v| r.values.contains(v)))
        })
}
