//! Well-known annotation and label keys: spec/kubernetes.md §6 ("Well-known annotations and
//! labels"), plus the pod-template key of plugins-core.md (predicates equivalence cache).
//!
//! Each constant says which objects carry it and how the value is read; the parsing itself lives
//! with the code that reads the key.

// --- PodGroup / queue membership -------------------------------------------------------------

/// Pod annotation: name of the PodGroup (in the pod's namespace); the sole pod → job link.
pub const GROUP_NAME: &str = "scheduling.k8s.io/group-name";
/// Pod annotation: Volcano's own group-name key; only the vGPU device code falls back to it.
pub const VOLCANO_GROUP_NAME: &str = "scheduling.volcano.sh/group-name";
/// Pod annotation: queue for PodGroups auto-created by the controller manager.
pub const QUEUE_NAME: &str = "scheduling.volcano.sh/queue-name";
/// Owner (Deployment, ReplicaSet, StatefulSet, Job…) annotation: `minMember` of auto-created
/// PodGroups.
pub const GROUP_MIN_MEMBER: &str = "scheduling.volcano.sh/group-min-member";
/// Annotation carrying a PodGroup's `minResources` (controller manager).
pub const GROUP_MIN_RESOURCES: &str = "scheduling.volcano.sh/group-min-resources";
/// Pod annotation (value `"true"`) opting in to queue-admission gating, and also the name of
/// the scheduling gate the scheduler removes once the queue admits the pod.
pub const QUEUE_ALLOCATION_GATE: &str = "scheduling.volcano.sh/queue-allocation-gate";

// --- Pod and PodGroup scheduling attributes --------------------------------------------------

/// Pod annotation, else label: task role (for `minTaskMember`, predicate caching, task-topology).
pub const TASK_SPEC: &str = "volcano.sh/task-spec";
/// Pod annotation: int32 override of the task priority.
pub const TASK_PRIORITY: &str = "volcano.sh/task-priority";
/// Pod or PodGroup annotation, else label: bool; pods default true, PodGroups false, invalid
/// false. A true pod annotation also implies revocable zone `*`.
pub const PREEMPTABLE: &str = "volcano.sh/preemptable";
/// Pod or PodGroup annotation: only `*` (any revocable node) is honoured. As a node label: the
/// node's revocable zone name (tdm plugin).
pub const REVOCABLE_ZONE: &str = "volcano.sh/revocable-zone";
/// Pod label, else annotation: Go duration protecting a running pod from preemption/reclaim
/// after it was scheduled (cdp plugin).
pub const COOLDOWN_TIME: &str = "volcano.sh/cooldown-time";
/// PodGroup annotation: job disruption budget, int or percentage; wins over max-unavailable.
pub const JDB_MIN_AVAILABLE: &str = "volcano.sh/jdb-min-available";
/// PodGroup annotation: job disruption budget, int or percentage.
pub const JDB_MAX_UNAVAILABLE: &str = "volcano.sh/jdb-max-unavailable";
/// PodGroup annotation: Go duration > 0, SLA waiting time (sla plugin); read before
/// [`SLA_WAITING_TIME_SHORT`].
pub const SLA_WAITING_TIME: &str = "volcano.sh/sla-waiting-time";
/// PodGroup annotation: unprefixed fallback for [`SLA_WAITING_TIME`].
pub const SLA_WAITING_TIME_SHORT: &str = "sla-waiting-time";
/// Pod annotation: NUMA topology policy requested by the pod.
pub const NUMA_TOPOLOGY_POLICY: &str = "volcano.sh/numa-topology-policy";
/// Pod annotation: JSON `{"numa": {"<numaId>": ResourceList}}`; the NUMA plugin's decision,
/// written through the Binding and read back for already-decided pods.
pub const TOPOLOGY_DECISION: &str = "volcano.sh/topology-decision";
/// Pod annotation set by the Volcano job controller (`<job>-<task>`): identifies pods built from
/// the same task template; key of the predicates equivalence cache (plugins-core.md).
pub const TEMPLATE_UID: &str = "volcano.sh/template-uid";
/// Pod annotation: per-pod scoring strategy (resource-strategy-fit plugin).
pub const RESOURCE_STRATEGY_SCORING_TYPE: &str = "volcano.sh/resource-strategy-scoring-type";
/// Pod annotation: per-pod scoring weight (resource-strategy-fit plugin).
pub const RESOURCE_STRATEGY_WEIGHT: &str = "volcano.sh/resource-strategy-weight";
/// Pod annotation: network-topology mode, converted into `spec.networkTopology` of
/// auto-created PodGroups (controller manager).
pub const NETWORK_TOPOLOGY_MODE: &str = "volcano.sh/network-topology-mode";
/// Pod annotation: highest allowed tier, converted into `spec.networkTopology` of auto-created
/// PodGroups (controller manager).
pub const NETWORK_TOPOLOGY_HIGHEST_TIER: &str = "volcano.sh/network-topology-highest-tier";
/// PodGroup annotation: lowest common HyperNode of the job; compared and persisted on status
/// updates, never set by Volcano itself.
pub const JOB_ALLOCATED_HYPERNODE: &str = "volcano.sh/job-allocated-hypernode";
/// Pod or PodGroup annotation: target cluster of the silo-cluster binder (never invoked).
pub const FORWARD_CLUSTER: &str = "volcano.sh/forward-cluster";
/// Pod annotation: QoS level; defined but not used by the scheduler.
pub const QOS_LEVEL: &str = "volcano.sh/qos-level";

// --- task-topology plugin --------------------------------------------------------------------

/// PodGroup annotation: task groups to co-locate; groups separated by `;`, tasks by `,`.
pub const TASK_TOPOLOGY_AFFINITY: &str = "volcano.sh/task-topology-affinity";
/// PodGroup annotation: task groups to spread; groups separated by `;`, tasks by `,`.
pub const TASK_TOPOLOGY_ANTI_AFFINITY: &str = "volcano.sh/task-topology-anti-affinity";
/// PodGroup annotation: task ordering; groups separated by `;`, tasks by `,`.
pub const TASK_TOPOLOGY_TASK_ORDER: &str = "volcano.sh/task-topology-task-order";
/// PodGroup annotation: defined by the task-topology plugin but never read.
pub const TASK_TOPOLOGY: &str = "volcano.sh/task-topology";

// --- Queues and node groups ------------------------------------------------------------------

/// Queue annotation: slash-separated path from the root (hierarchical DRF).
pub const HIERARCHY: &str = "volcano.sh/hierarchy";
/// Queue annotation: slash-separated weights matching [`HIERARCHY`].
pub const HIERARCHY_WEIGHTS: &str = "volcano.sh/hierarchy-weights";
/// Node label: node-group membership (nodegroup plugin, Queue `affinity`).
pub const NODE_GROUP_NAME: &str = "volcano.sh/nodegroup-name";
/// Queue annotation: JSON map node group → ResourceList capping what the queue may allocate in
/// each group.
pub const NODE_GROUP_RESOURCE_LIMITS: &str = "volcano.sh/nodegroup-resource-limits";

// --- Nodes -----------------------------------------------------------------------------------

/// Node label: bool; the node offers oversubscription.
pub const OVERSUBSCRIPTION: &str = "volcano.sh/oversubscription";
/// Node annotation: extra allocatable CPU in millicores.
pub const OVERSUBSCRIPTION_CPU: &str = "volcano.sh/oversubscription-cpu";
/// Node annotation: extra allocatable memory in bytes.
pub const OVERSUBSCRIPTION_MEMORY: &str = "volcano.sh/oversubscription-memory";
/// Node annotation: bool; the node must not receive oversubscribed pods.
pub const OFFLINE_JOB_EVICTING: &str = "volcano.sh/offline-job-evicting";

// --- Device sharing (deviceshare plugin with GPU sharing / vGPU / vNPU enabled) --------------

/// Pod annotation: vGPU mode requested by the pod.
pub const VGPU_MODE: &str = "volcano.sh/vgpu-mode";
/// Pod annotation: vGPU placement policy for the pods of one PodGroup (`spread`).
pub const VGPU_PODGROUP_POLICY: &str = "volcano.sh/vgpu-podgroup-policy";
/// Pod annotation: GPU UUIDs the pod may use.
pub const VGPU_USE_GPU_UUID: &str = "volcano.sh/vgpu-use-gpuuuid";
/// Pod annotation: GPU UUIDs the pod must not use.
pub const VGPU_NOUSE_GPU_UUID: &str = "volcano.sh/vgpu-nouse-gpuuuid";
/// Pod annotation: time the vGPU devices were assigned (written by the scheduler).
pub const VGPU_TIME: &str = "volcano.sh/vgpu-time";
/// Pod annotation: vGPU device IDs assigned to the pod (written by the scheduler).
pub const VGPU_IDS_NEW: &str = "volcano.sh/vgpu-ids-new";
/// Pod annotation: devices the device plugin still has to allocate (written by the scheduler).
pub const DEVICES_TO_ALLOCATE: &str = "volcano.sh/devices-to-allocate";
/// Pod annotation: node the vGPU devices were assigned on (written by the scheduler).
pub const VGPU_NODE: &str = "volcano.sh/vgpu-node";
/// Pod annotation: time the device binding was made (written by the scheduler).
pub const BIND_TIME: &str = "volcano.sh/bind-time";
/// Pod annotation: progress of the device binding (written by the scheduler).
pub const BIND_PHASE: &str = "volcano.sh/bind-phase";
/// Pod annotation: time the GPU-share predicate chose the device (written by the scheduler).
pub const PREDICATE_TIME: &str = "volcano.sh/predicate-time";
/// Pod annotation: index of the shared GPU assigned to the pod (written by the scheduler).
pub const GPU_INDEX: &str = "volcano.sh/gpu-index";
/// Node annotation: IDs of unhealthy GPUs, excluded from GPU sharing.
pub const GPU_UNHEALTHY_IDS: &str = "volcano.sh/gpu-unhealthy-ids";
/// Node annotation: vGPU inventory registered by the device plugin.
pub const NODE_VGPU_REGISTER: &str = "volcano.sh/node-vgpu-register";

// --- Volumes (kubernetes.md §7.9.4) ----------------------------------------------------------

/// PersistentVolumeClaim annotation: the volume controller finished binding the claim to its
/// `spec.volumeName` (any value).
pub const VOLUME_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// PersistentVolume and claim annotation `"yes"`: bound by a controller (or the scheduler),
/// not pre-bound by a user.
pub const VOLUME_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// PersistentVolumeClaim annotation: the node a `WaitForFirstConsumer` claim's volume is to be
/// provisioned for (written by the scheduler, removed by a provisioner that gives up).
pub const VOLUME_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// Claim and volume annotation: the beta storage class name, which wins over
/// `spec.storageClassName` when present (even empty).
pub const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    const ALL: &[&str] = &[
        GROUP_NAME,
        VOLCANO_GROUP_NAME,
        QUEUE_NAME,
        GROUP_MIN_MEMBER,
        GROUP_MIN_RESOURCES,
        QUEUE_ALLOCATION_GATE,
        TASK_SPEC,
        TASK_PRIORITY,
        PREEMPTABLE,
        REVOCABLE_ZONE,
        COOLDOWN_TIME,
        JDB_MIN_AVAILABLE,
        JDB_MAX_UNAVAILABLE,
        SLA_WAITING_TIME,
        SLA_WAITING_TIME_SHORT,
        NUMA_TOPOLOGY_POLICY,
        TOPOLOGY_DECISION,
        TEMPLATE_UID,
        RESOURCE_STRATEGY_SCORING_TYPE,
        RESOURCE_STRATEGY_WEIGHT,
        NETWORK_TOPOLOGY_MODE,
        NETWORK_TOPOLOGY_HIGHEST_TIER,
        JOB_ALLOCATED_HYPERNODE,
        FORWARD_CLUSTER,
        QOS_LEVEL,
        TASK_TOPOLOGY_AFFINITY,
        TASK_TOPOLOGY_ANTI_AFFINITY,
        TASK_TOPOLOGY_TASK_ORDER,
        TASK_TOPOLOGY,
        HIERARCHY,
        HIERARCHY_WEIGHTS,
        NODE_GROUP_NAME,
        NODE_GROUP_RESOURCE_LIMITS,
        OVERSUBSCRIPTION,
        OVERSUBSCRIPTION_CPU,
        OVERSUBSCRIPTION_MEMORY,
        OFFLINE_JOB_EVICTING,
        VGPU_MODE,
        VGPU_PODGROUP_POLICY,
        VGPU_USE_GPU_UUID,
        VGPU_NOUSE_GPU_UUID,
        VGPU_TIME,
        VGPU_IDS_NEW,
        DEVICES_TO_ALLOCATE,
        VGPU_NODE,
        BIND_TIME,
        BIND_PHASE,
        PREDICATE_TIME,
        GPU_INDEX,
        GPU_UNHEALTHY_IDS,
        NODE_VGPU_REGISTER,
    ];

    #[test]
    fn keys_are_distinct() {
        let unique: BTreeSet<&str> = ALL.iter().copied().collect();
        assert_eq!(unique.len(), ALL.len());
    }

    #[test]
    fn keys_are_valid_kubernetes_qualified_names() {
        // Optional DNS-subdomain prefix, then a name of at most 63 characters made of
        // alphanumerics, '-', '_' and '.', starting and ending alphanumeric.
        for key in ALL {
            let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
            assert!(prefix.len() <= 253, "{key}: prefix too long");
            assert!(
                prefix
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'),
                "{key}: bad prefix"
            );
            assert!(
                !name.is_empty() && name.len() <= 63,
                "{key}: bad name length"
            );
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')),
                "{key}: bad name characters"
            );
            assert!(
                name.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && name.ends_with(|c: char| c.is_ascii_alphanumeric()),
                "{key}: name must start and end alphanumeric"
            );
        }
    }

    #[test]
    fn spot_check_exact_values() {
        assert_eq!(GROUP_NAME, "scheduling.k8s.io/group-name");
        assert_eq!(QUEUE_NAME, "scheduling.volcano.sh/queue-name");
        assert_eq!(TEMPLATE_UID, "volcano.sh/template-uid");
        assert_eq!(SLA_WAITING_TIME_SHORT, "sla-waiting-time");
        assert_eq!(VGPU_USE_GPU_UUID, "volcano.sh/vgpu-use-gpuuuid");
    }
}
