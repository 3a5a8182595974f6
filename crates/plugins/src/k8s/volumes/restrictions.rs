//! VolumeRestrictions (upstream `volumerestrictions/volume_restrictions.go`): a claim with the
//! `ReadWriteOncePod` access mode serves one pod in the cluster, and a node cannot mount the same
//! GCE PD, AWS EBS, iSCSI or RBD disk for two pods (unless both mount it read-only where the
//! disk allows that).

use k8s_openapi::api::core::v1::{Pod, Volume};

use super::{Failure, StorageView};

pub const DISK_CONFLICT: &str = "node(s) had no available disk";
pub const READ_WRITE_ONCE_POD_CONFLICT: &str = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

/// What Filter needs from PreFilter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestrictionState {
    /// The pod's `ReadWriteOncePod` claims some placed pod already uses.
    pub claims_in_use: usize,
}

fn pod_volumes(pod: &Pod) -> impl Iterator<Item = &Volume> {
    pod.spec.iter().flat_map(|s| s.volumes.iter().flatten())
}

fn has_disk(v: &Volume) -> bool {
    v.gce_persistent_disk.is_some()
        || v.aws_elastic_block_store.is_some()
        || v.rbd.is_some()
        || v.iscsi.is_some()
}

/// Upstream PreFilter: `Ok(None)` (Skip) when the pod mounts no such disk and none of its
/// `ReadWriteOncePod` claims is in use by a pod in `placed`.
pub fn prefilter<'p>(
    pod: &Pod,
    storage: &dyn StorageView,
    placed: impl Iterator<Item = &'p Pod>,
) -> Result<Option<RestrictionState>, Failure> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut once_pod = Vec::new();
    for v in pod_volumes(pod) {
        let Some(source) = &v.persistent_volume_claim else {
            continue;
        };
        let Some(claim) = storage.claim(namespace, &source.claim_name) else {
            return Err(Failure::Unresolvable(format!(
                "persistentvolumeclaim {:?} not found",
                source.claim_name
            )));
        };
        let modes = claim.spec.as_ref().and_then(|s| s.access_modes.as_deref());
        if modes
            .unwrap_or_default()
            .iter()
            .any(|m| m == "ReadWriteOncePod")
        {
            once_pod.push(source.claim_name.as_str());
        }
    }
    let mut in_use = vec![false; once_pod.len()];
    if !once_pod.is_empty() {
        for other in placed {
            if other.metadata.namespace.as_deref().unwrap_or("default") != namespace {
                continue;
            }
            for v in pod_volumes(other) {
                if let Some(source) = &v.persistent_volume_claim
                    && let Some(i) = once_pod.iter().position(|c| *c == source.claim_name)
                {
                    in_use[i] = true;
                }
            }
        }
    }
    let claims_in_use = in_use.iter().filter(|u| **u).count();
    if claims_in_use == 0 && !pod_volumes(pod).any(has_disk) {
        return Ok(None);
    }
    Ok(Some(RestrictionState { claims_in_use }))
}

/// Upstream Filter: a disk conflict with a pod on the node, then a `ReadWriteOncePod` claim in
/// use anywhere (which fails every node).
pub fn filter<'p>(
    state: &RestrictionState,
    pod: &Pod,
    pods_on_node: impl Iterator<Item = &'p Pod>,
) -> Result<(), Failure> {
    let disks: Vec<&Volume> = pod_volumes(pod).filter(|v| has_disk(v)).collect();
    if !disks.is_empty() {
        for other in pods_on_node {
            if pod_volumes(other).any(|existing| disks.iter().any(|v| conflicts(v, existing))) {
                return Err(Failure::Unschedulable(DISK_CONFLICT.to_owned()));
            }
        }
    }
    if state.claims_in_use > 0 {
        return Err(Failure::Unschedulable(
            READ_WRITE_ONCE_POD_CONFLICT.to_owned(),
        ));
    }
    Ok(())
}

/// Upstream `isVolumeConflict`.
fn conflicts(v: &Volume, existing: &Volume) -> bool {
    if let (Some(a), Some(b)) = (&v.gce_persistent_disk, &existing.gce_persistent_disk) {
        return a.pd_name == b.pd_name && !(a.read_only == Some(true) && b.read_only == Some(true));
    }
    if let (Some(a), Some(b)) = (
        &v.aws_elastic_block_store,
        &existing.aws_elastic_block_store,
    ) {
        return a.volume_id == b.volume_id;
    }
    if let (Some(a), Some(b)) = (&v.iscsi, &existing.iscsi) {
        return a.iqn == b.iqn && !(a.read_only == Some(true) && b.read_only == Some(true));
    }
    if let (Some(a), Some(b)) = (&v.rbd, &existing.rbd) {
        let shared_monitor = a.monitors.iter().any(|m| b.monitors.contains(m));
        return shared_monitor
            && a.pool == b.pool
            && a.image == b.image
            && !(a.read_only == Some(true) && b.read_only == Some(true));
    }
    false
}
