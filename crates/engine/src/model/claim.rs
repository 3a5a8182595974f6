//! What the scheduler reads of a PersistentVolumeClaim wherever it looks at one (the volume
//! predicates, the state's assumed bindings, the executor's wait): the volume it names, and
//! whether the volume controller finished binding it.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};

/// Whether the pod mounts a claim (a `persistentVolumeClaim` or generic ephemeral volume).
pub fn pod_uses_claims(pod: &Pod) -> bool {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .any(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some())
}

/// The volume the claim names (`spec.volumeName`), empty when none.
pub fn volume_name(claim: &PersistentVolumeClaim) -> &str {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default()
}

/// Names its volume and carries the bind-completed annotation (upstream's "fully bound").
pub fn fully_bound(claim: &PersistentVolumeClaim) -> bool {
    !volume_name(claim).is_empty()
        && claim
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(apis::keys::VOLUME_BIND_COMPLETED))
}
