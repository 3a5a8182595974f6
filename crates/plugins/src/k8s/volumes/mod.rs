//! Kubernetes' volume placement rules, as the upstream filters Volcano embeds in `predicates`
//! apply them (spec `kubernetes.md` §7.9.4; Kubernetes v1.36 `volumebinding`, `volumezone`,
//! `nodevolumelimits`, `volumerestrictions` and component-helpers `storage/volume`).
//!
//! * [`claims`]: which claims a pod uses, claim and volume classes, "fully bound", a volume's
//!   node affinity, and the static-volume match for an unbound claim;
//! * [`binding`]: VolumeBinding (claims exist, bound volumes' node affinity, unbound claims
//!   waiting for their first consumer);
//! * [`zone`]: VolumeZone (a bound volume's zone and region labels);
//! * [`limits`]: NodeVolumeLimits for CSI drivers (the CSINode's attach count);
//! * [`restrictions`]: VolumeRestrictions (ReadWriteOncePod, the same disk twice on a node).
//!
//! Each reads the storage objects of the session's snapshot through [`StorageView`], and the
//! volume bindings the session has assumed so far through [`Assumed`].

pub mod binding;
pub mod claims;
pub mod limits;
pub mod restrictions;
pub mod zone;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

/// Why a volume rule refuses a pod, with upstream's status code: `Unschedulable` (a change on
/// the node, such as an eviction, could help), `Unresolvable` (it could not), or an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    Unschedulable(String),
    Unresolvable(String),
    Error(String),
}

/// The storage objects a filter may look up; the session's snapshot implements it.
pub trait StorageView: Sync {
    fn claim(&self, namespace: &str, name: &str) -> Option<&Arc<PersistentVolumeClaim>>;
    fn volume(&self, name: &str) -> Option<&Arc<PersistentVolume>>;
    /// Every volume, in name order (the order ties between equal volumes are broken in).
    fn volumes(&self) -> Box<dyn Iterator<Item = &Arc<PersistentVolume>> + '_>;
    fn storage_class(&self, name: &str) -> Option<&Arc<StorageClass>>;
    fn csi_node(&self, node: &str) -> Option<&Arc<CSINode>>;
}

impl StorageView for engine::state::ClusterState {
    fn claim(&self, namespace: &str, name: &str) -> Option<&Arc<PersistentVolumeClaim>> {
        engine::state::ClusterState::claim(self, namespace, name)
    }
    fn volume(&self, name: &str) -> Option<&Arc<PersistentVolume>> {
        engine::state::ClusterState::volume(self, name)
    }
    fn volumes(&self) -> Box<dyn Iterator<Item = &Arc<PersistentVolume>> + '_> {
        Box::new(engine::state::ClusterState::volumes(self))
    }
    fn storage_class(&self, name: &str) -> Option<&Arc<StorageClass>> {
        engine::state::ClusterState::storage_class(self, name)
    }
    fn csi_node(&self, node: &str) -> Option<&Arc<CSINode>> {
        engine::state::ClusterState::csi_node(self, node)
    }
}

/// Volume bindings assumed by pods placed earlier in the session (upstream's assume caches):
/// a volume promised to a claim, and a claim promised to a node for provisioning.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assumed {
    /// Volume name → the claim (`namespace/name`) it is promised to.
    pub volume_claims: BTreeMap<String, String>,
    /// Claim (`namespace/name`) → the node its volume is to be provisioned for.
    pub selected_nodes: BTreeMap<String, String>,
}

impl Assumed {
    /// The node a claim is to be provisioned for: assumed, else its `selected-node` annotation.
    pub fn selected_node<'a>(
        &'a self,
        key: &str,
        claim: &'a PersistentVolumeClaim,
    ) -> Option<&'a str> {
        self.selected_nodes
            .get(key)
            .map(String::as_str)
            .or_else(|| {
                claim
                    .metadata
                    .annotations
                    .as_ref()?
                    .get(apis::keys::VOLUME_SELECTED_NODE)
                    .map(String::as_str)
            })
    }
}

#[cfg(test)]
mod tests;
