//! The storage objects the volume predicates read (spec/kubernetes.md §7.9.4): claims, volumes,
//! storage classes and CSI nodes, each as last observed, in the same copy-on-write tables as the
//! rest of the state.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

use super::{ClusterState, ns_key};

/// Claims by `namespace/name`, and volumes, classes and CSI nodes by name.
#[derive(Clone, Debug, Default)]
pub(super) struct StorageTables {
    claims: Arc<BTreeMap<String, Arc<PersistentVolumeClaim>>>,
    volumes: Arc<BTreeMap<String, Arc<PersistentVolume>>>,
    classes: Arc<BTreeMap<String, Arc<StorageClass>>>,
    csi_nodes: Arc<BTreeMap<String, Arc<CSINode>>>,
    /// Volume bindings decided but not yet seen through the watch: volume → claim
    /// (`namespace/name`), and claim → the node its volume is to be provisioned for.
    assumed_volume_claims: Arc<BTreeMap<String, String>>,
    assumed_selected_nodes: Arc<BTreeMap<String, String>>,
}

/// `namespace/name` of the claim a volume's `claimRef` names, if any.
fn claim_ref_key(volume: &PersistentVolume) -> Option<String> {
    let r = volume.spec.as_ref()?.claim_ref.as_ref()?;
    Some(format!(
        "{}/{}",
        r.namespace.as_deref().unwrap_or_default(),
        r.name.as_deref().unwrap_or_default()
    ))
}

fn put<T>(table: &mut Arc<BTreeMap<String, Arc<T>>>, key: String, object: T) {
    Arc::make_mut(table).insert(key, Arc::new(object));
}

fn take_assumption(table: &mut Arc<BTreeMap<String, String>>, key: &str) {
    if table.contains_key(key) {
        Arc::make_mut(table).remove(key);
    }
}

fn take<T>(table: &mut Arc<BTreeMap<String, Arc<T>>>, key: &str) {
    if table.contains_key(key) {
        Arc::make_mut(table).remove(key);
    }
}

impl ClusterState {
    /// Adds or replaces a claim; true when it is new or just got its volume (a pod waiting for
    /// it may go now). An assumed provisioning ends once the claim shows it (or is bound).
    pub fn upsert_claim(&mut self, claim: PersistentVolumeClaim) -> bool {
        let key = ns_key(
            claim.metadata.namespace.as_ref(),
            claim.metadata.name.as_ref(),
        );
        if let Some(node) = self.storage.assumed_selected_nodes.get(&key) {
            let shown = claim
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(apis::keys::VOLUME_SELECTED_NODE));
            let bound = !crate::model::claim::volume_name(&claim).is_empty();
            if shown == Some(node) || bound {
                take_assumption(&mut self.storage.assumed_selected_nodes, &key);
            }
        }
        let volume_of =
            |c: &PersistentVolumeClaim| c.spec.as_ref().and_then(|s| s.volume_name.clone());
        let wake = self
            .storage
            .claims
            .get(&key)
            .is_none_or(|old| volume_of(old) != volume_of(&claim));
        put(&mut self.storage.claims, key, claim);
        wake
    }

    pub fn delete_claim(&mut self, namespace: &str, name: &str) {
        let key = format!("{namespace}/{name}");
        take_assumption(&mut self.storage.assumed_selected_nodes, &key);
        take(&mut self.storage.claims, &key);
    }

    /// The claim `name` in `namespace`, as last observed.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<&Arc<PersistentVolumeClaim>> {
        self.storage.claims.get(&format!("{namespace}/{name}"))
    }

    pub fn claims(&self) -> impl Iterator<Item = &Arc<PersistentVolumeClaim>> {
        self.storage.claims.values()
    }

    /// Adds or replaces a volume. An assumed binding ends once the volume shows a claim.
    pub fn upsert_volume(&mut self, volume: PersistentVolume) {
        let key = volume.metadata.name.clone().unwrap_or_default();
        if self.storage.assumed_volume_claims.contains_key(&key) && claim_ref_key(&volume).is_some()
        {
            take_assumption(&mut self.storage.assumed_volume_claims, &key);
        }
        put(&mut self.storage.volumes, key, volume);
    }

    pub fn delete_volume(&mut self, name: &str) {
        take_assumption(&mut self.storage.assumed_volume_claims, name);
        take(&mut self.storage.volumes, name);
    }

    /// A decided volume binding, until the watch shows the volume's claim reference.
    pub fn assume_volume_binding(&mut self, volume: &str, claim: &str) {
        Arc::make_mut(&mut self.storage.assumed_volume_claims)
            .insert(volume.to_owned(), claim.to_owned());
    }

    /// A decided provisioning, until the watch shows the claim's `selected-node`.
    pub fn assume_selected_node(&mut self, claim: &str, node: &str) {
        Arc::make_mut(&mut self.storage.assumed_selected_nodes)
            .insert(claim.to_owned(), node.to_owned());
    }

    /// Withdraws an assumed binding (its write failed).
    pub fn forget_volume_binding(&mut self, volume: &str) {
        take_assumption(&mut self.storage.assumed_volume_claims, volume);
    }

    /// Withdraws an assumed provisioning (its write failed).
    pub fn forget_selected_node(&mut self, claim: &str) {
        take_assumption(&mut self.storage.assumed_selected_nodes, claim);
    }

    /// Volume → claim for bindings decided but not yet seen.
    pub fn assumed_volume_claims(&self) -> &BTreeMap<String, String> {
        &self.storage.assumed_volume_claims
    }

    /// Claim → node for provisionings decided but not yet seen.
    pub fn assumed_selected_nodes(&self) -> &BTreeMap<String, String> {
        &self.storage.assumed_selected_nodes
    }

    pub fn volume(&self, name: &str) -> Option<&Arc<PersistentVolume>> {
        self.storage.volumes.get(name)
    }

    /// Every PersistentVolume, in name order.
    pub fn volumes(&self) -> impl Iterator<Item = &Arc<PersistentVolume>> {
        self.storage.volumes.values()
    }

    pub fn upsert_storage_class(&mut self, class: StorageClass) {
        let key = class.metadata.name.clone().unwrap_or_default();
        put(&mut self.storage.classes, key, class);
    }

    pub fn delete_storage_class(&mut self, name: &str) {
        take(&mut self.storage.classes, name);
    }

    pub fn storage_class(&self, name: &str) -> Option<&Arc<StorageClass>> {
        self.storage.classes.get(name)
    }

    pub fn storage_classes(&self) -> impl Iterator<Item = &Arc<StorageClass>> {
        self.storage.classes.values()
    }

    pub fn upsert_csi_node(&mut self, csi_node: CSINode) {
        let key = csi_node.metadata.name.clone().unwrap_or_default();
        put(&mut self.storage.csi_nodes, key, csi_node);
    }

    pub fn delete_csi_node(&mut self, name: &str) {
        take(&mut self.storage.csi_nodes, name);
    }

    /// The CSINode of a node (same name), which lists its drivers and their attach limits.
    pub fn csi_node(&self, node: &str) -> Option<&Arc<CSINode>> {
        self.storage.csi_nodes.get(node)
    }

    pub fn csi_nodes(&self) -> impl Iterator<Item = &Arc<CSINode>> {
        self.storage.csi_nodes.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::StateOptions;

    fn claim(ns: &str, name: &str) -> PersistentVolumeClaim {
        let mut c = PersistentVolumeClaim::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some(name.into());
        c
    }

    #[test]
    fn storage_tables_copy_on_write_under_a_snapshot() {
        let mut state = ClusterState::new(StateOptions::default());
        state.upsert_claim(claim("ns", "data"));
        let mut volume = PersistentVolume::default();
        volume.metadata.name = Some("pv1".into());
        state.upsert_volume(volume);
        let snapshot = state.snapshot();
        state.delete_claim("ns", "data");
        state.delete_volume("pv1");
        assert!(state.claim("ns", "data").is_none());
        assert!(state.volume("pv1").is_none());
        assert!(snapshot.claim("ns", "data").is_some());
        assert_eq!(snapshot.volumes().count(), 1);
        // An assumed binding lasts until the watch shows the volume's claim.
        state.assume_volume_binding("pv2", "ns/data");
        state.assume_selected_node("ns/other", "n1");
        let shown: PersistentVolume = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "pv2"},
            "spec": {"claimRef": {"namespace": "ns", "name": "data"}}
        }))
        .expect("volume");
        state.upsert_volume(shown);
        assert!(state.assumed_volume_claims().is_empty());
        state.assume_volume_binding("pv3", "ns/data");
        state.forget_volume_binding("pv3");
        assert!(state.assumed_volume_claims().is_empty());
        let annotated: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "other", "namespace": "ns",
                         "annotations": {"volume.kubernetes.io/selected-node": "n1"}}
        }))
        .expect("claim");
        state.upsert_claim(annotated);
        assert!(state.assumed_selected_nodes().is_empty());
        // Deleting what is not there leaves the shared table alone.
        state.delete_storage_class("none");
        state.delete_csi_node("none");
        assert_eq!(
            state.storage_classes().count() + state.csi_nodes().count(),
            0
        );
    }
}
