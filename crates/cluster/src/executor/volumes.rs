//! A pod's volume bindings, written before its bind (spec `kubernetes.md` §7.9.4; upstream
//! `volumebinding` `BindPodVolumes`): a static volume gets its `claimRef`, a claim to provision
//! gets `volume.kubernetes.io/selected-node`; then the bind waits, within the predicates
//! plugin's `volumebinding.bindTimeoutSeconds`, until the volume controller (and for a
//! provisioning, the provisioner) has bound every claim.
//!
//! The decided bindings are assumed in the shared state from the moment the session closes
//! until the watch shows them, so the next session does not give the same volume away; a failed
//! write withdraws them.

use std::collections::BTreeMap;
use std::time::Duration;

use apis::keys::{VOLUME_BOUND_BY_CONTROLLER, VOLUME_SELECTED_NODE};
use engine::framework::VolumeWrite;
use engine::framework::decisions::Bind;
use engine::model::claim::fully_bound;
use engine::state::ClusterState;
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolume, PersistentVolumeClaim};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use super::{Executor, PreBindError};

/// How often the wait looks at the mirrored claims (upstream polls every second).
const POLL: Duration = Duration::from_secs(1);

/// Marks a bind's volume writes as taken in the state.
pub(super) fn assume(state: &mut ClusterState, writes: &[VolumeWrite]) {
    for write in writes {
        match write {
            VolumeWrite::BindVolume { volume, claim } => {
                state.assume_volume_binding(volume, claim);
            }
            VolumeWrite::SelectNode { claim, node } => state.assume_selected_node(claim, node),
        }
    }
}

/// Withdraws a bind's volume writes from the state.
pub(super) fn forget(state: &mut ClusterState, writes: &[VolumeWrite]) {
    for write in writes {
        match write {
            VolumeWrite::BindVolume { volume, .. } => state.forget_volume_binding(volume),
            VolumeWrite::SelectNode { claim, .. } => state.forget_selected_node(claim),
        }
    }
}

fn split(claim: &str) -> (&str, &str) {
    claim.split_once('/').unwrap_or(("default", claim))
}

impl Executor {
    /// Writes the bind's volume bindings and waits until they are complete.
    pub(super) async fn bind_volumes(&self, b: &Bind) -> Result<(), PreBindError> {
        // The resource version each written object had, to tell a stale view from a change.
        let mut written = BTreeMap::new();
        for write in &b.volumes {
            match write {
                VolumeWrite::BindVolume { volume, claim } => {
                    let version = self.write_claim_ref(volume, claim).await?;
                    written.insert(format!("pv/{volume}"), version);
                }
                VolumeWrite::SelectNode { claim, node } => {
                    let version = self.write_selected_node(claim, node).await?;
                    written.insert(format!("pvc/{claim}"), version);
                }
            }
        }
        let deadline = tokio::time::Instant::now() + b.volume_bind_timeout;
        loop {
            if let Some(done) = self.volumes_done(b, &written)? {
                return Ok(done);
            }
            if tokio::time::Instant::now() + POLL > deadline {
                return Err(PreBindError::Failed("context deadline exceeded".to_owned()));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `spec.claimRef` on the volume (a replace, so a concurrent change fails it), as upstream
    /// `GetBindVolumeToClaim` writes it. Returns the resource version written.
    async fn write_claim_ref(&self, volume: &str, claim: &str) -> Result<String, PreBindError> {
        let (namespace, name) = split(claim);
        let (uid, claim_version) = {
            let state = self.shared.lock();
            let found = state.claim(namespace, name).ok_or_else(|| {
                PreBindError::Failed(format!("persistentvolumeclaim {name:?} not found"))
            })?;
            (
                found.metadata.uid.clone(),
                found.metadata.resource_version.clone(),
            )
        };
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        let mut pv = api
            .get(volume)
            .await
            .map_err(|e| PreBindError::Failed(crate::errors::kube(&e)))?;
        let before = pv.metadata.resource_version.clone().unwrap_or_default();
        let spec = pv.spec.get_or_insert_with(Default::default);
        let already = spec.claim_ref.as_ref().is_some_and(|r| {
            r.name.as_deref() == Some(name) && r.namespace.as_deref() == Some(namespace)
        });
        spec.claim_ref = Some(ObjectReference {
            kind: Some("PersistentVolumeClaim".to_owned()),
            api_version: Some("v1".to_owned()),
            namespace: Some(namespace.to_owned()),
            name: Some(name.to_owned()),
            uid,
            resource_version: claim_version,
            ..ObjectReference::default()
        });
        if !already {
            pv.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(VOLUME_BOUND_BY_CONTROLLER.to_owned(), "yes".to_owned());
        }
        self.call(api.replace(volume, &PostParams::default(), &pv))
            .await?;
        Ok(before)
    }

    /// The claim's `selected-node` annotation. Returns the resource version it had before.
    async fn write_selected_node(&self, claim: &str, node: &str) -> Result<String, PreBindError> {
        let (namespace, name) = split(claim);
        let before = self
            .shared
            .lock()
            .claim(namespace, name)
            .and_then(|c| c.metadata.resource_version.clone())
            .unwrap_or_default();
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), namespace);
        let patch = json!({"metadata": {"annotations": {VOLUME_SELECTED_NODE: node}}});
        self.call(api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)))
            .await?;
        Ok(before)
    }

    /// Upstream `checkBindings` on the mirrored objects: `Some(())` when every claim is bound,
    /// `None` to wait on, an error when a write was undone (a provisioning failed, a claim
    /// reference reset) or the pod is gone. An object not updated since before the write is a
    /// stale view, not an undo.
    fn volumes_done(
        &self,
        b: &Bind,
        written: &BTreeMap<String, String>,
    ) -> Result<Option<()>, PreBindError> {
        let state = self.shared.lock();
        if state.pod(&b.pod).is_none() {
            return Err(PreBindError::Failed(format!(
                "pod does not exist any more: {}",
                b.pod
            )));
        }
        let changed = |key: String, version: Option<&String>| {
            written
                .get(&key)
                .is_some_and(|before| Some(before) != version)
        };
        let mut all_bound = true;
        for write in &b.volumes {
            let claim = match write {
                VolumeWrite::BindVolume { claim, .. } | VolumeWrite::SelectNode { claim, .. } => {
                    claim
                }
            };
            let (namespace, name) = split(claim);
            let Some(found) = state.claim(namespace, name) else {
                return Err(PreBindError::Failed(format!(
                    "failed to check binding: persistentvolumeclaim {name:?} not found"
                )));
            };
            match write {
                VolumeWrite::BindVolume { volume, .. } => {
                    let Some(pv) = state.volume(volume) else {
                        return Err(PreBindError::Failed(format!(
                            "failed to check binding: persistentvolume {volume:?} not found"
                        )));
                    };
                    let reset = pv.spec.as_ref().is_none_or(|s| s.claim_ref.is_none());
                    if reset
                        && changed(
                            format!("pv/{volume}"),
                            pv.metadata.resource_version.as_ref(),
                        )
                    {
                        return Err(PreBindError::Failed(format!(
                            "ClaimRef got reset for pv {volume:?}"
                        )));
                    }
                }
                VolumeWrite::SelectNode { node, .. } => {
                    let shown = found
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(VOLUME_SELECTED_NODE));
                    if shown != Some(node)
                        && !fully_bound(found)
                        && changed(
                            format!("pvc/{claim}"),
                            found.metadata.resource_version.as_ref(),
                        )
                    {
                        return Err(PreBindError::Failed(format!(
                            "provisioning failed for PVC {name:?}"
                        )));
                    }
                }
            }
            all_bound &= fully_bound(found);
        }
        Ok(all_bound.then_some(()))
    }
}
