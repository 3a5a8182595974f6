//! Volcano's custom resources and well-known keys, as seen by the scheduler.
//!
//! * [`PodGroup`] and [`Queue`] of `scheduling.volcano.sh/v1beta1` (spec/kubernetes.md §5.1,
//!   §5.2), serialising exactly as Volcano's Go types do, with `apiVersion`/`kind` and the
//!   `k8s_openapi` resource traits so that Kubernetes clients can use them directly.
//! * [`HyperNode`] of `topology.volcano.sh/v1alpha1` (§5.5): the network topology tree.
//! * [`Numatopology`] of `nodeinfo.volcano.sh/v1alpha1`: a node's NUMA report (`numa-aware`).
//! * [`keys`]: annotation and label keys of spec/kubernetes.md §6.
//!
//! String enumerations (phases, states, condition types) are plain `String`s with their known
//! values as constants, so that a value added by a newer Volcano never fails to deserialise.

pub mod device_config;
pub mod keys;
pub mod lean_meta;
pub mod nodeinfo;
pub mod pod_group;
pub mod queue;
mod serde_util;
pub mod topology;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

pub use device_config::DeviceConfig;
pub use nodeinfo::Numatopology;
pub use pod_group::{
    NetworkTopologySpec, POD_GROUP_NOT_READY, POD_GROUP_READY, PodGroup, PodGroupCondition,
    PodGroupSpec, PodGroupStatus, SubGroupPolicySpec, condition_reason, condition_status,
    condition_type, network_topology_mode, pod_group_phase,
};
pub use queue::{
    Affinity, Cluster, DEFAULT_QUEUE, Guarantee, NodeGroupAffinity, NodeGroupAntiAffinity, Queue,
    QueueSpec, QueueStatus, ROOT_QUEUE, Reservation, dequeue_strategy, queue_state,
};
pub use topology::{HyperNode, HyperNodeSpec, MemberSelector, MemberSpec, member_type};

/// API group of Volcano's scheduling resources.
pub const GROUP: &str = "scheduling.volcano.sh";
/// The only served version of [`GROUP`].
pub const VERSION: &str = "v1beta1";
/// `apiVersion` of PodGroup and Queue objects.
pub const API_VERSION: &str = "scheduling.volcano.sh/v1beta1";

/// Resource name → quantity, as core/v1 `ResourceList` (sorted, like Go's JSON output).
pub type ResourceList = BTreeMap<String, Quantity>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_version_is_group_and_version() {
        assert_eq!(API_VERSION, format!("{GROUP}/{VERSION}"));
    }
}
