//! The `scheduling.volcano.sh/v1beta1` PodGroup: spec/kubernetes.md §5.1 (fields), §5.3 (phases)
//! and §5.4 (conditions); how the scheduler reads it is §4.7.
//!
//! Field shapes follow Volcano's Go type (`staging/src/volcano.sh/apis/pkg/apis/scheduling/
//! v1beta1/types.go`): Go pointers are `Option`s, plain Go fields are plain Rust values that are
//! left out of the JSON when zero (`omitempty`), and a JSON `null` reads as the zero value.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use serde::{Deserialize, Serialize};

use crate::ResourceList;
use crate::serde_util::{is_zero, null_as_default};

/// Values of `status.phase` (§5.3). Unknown values are kept as they are.
pub mod pod_group_phase {
    /// Accepted but not admitted yet; an empty phase is treated the same way.
    pub const PENDING: &str = "Pending";
    /// At least `minMember` tasks are scheduled.
    pub const RUNNING: &str = "Running";
    /// Some tasks run but the gang is currently unschedulable.
    pub const UNKNOWN: &str = "Unknown";
    /// Admitted by the enqueue action; controllers may create pods.
    pub const INQUEUE: &str = "Inqueue";
    /// Everything that was scheduled has finished.
    pub const COMPLETED: &str = "Completed";
}

/// Values of a PodGroup condition's `type` (§5.4).
pub mod condition_type {
    /// Written by the gang plugin when the job is not ready.
    pub const UNSCHEDULABLE: &str = "Unschedulable";
    /// Written by the gang plugin when the job is ready.
    pub const SCHEDULED: &str = "Scheduled";
}

/// Values of a condition's `status` (core/v1 `ConditionStatus`).
pub mod condition_status {
    /// The condition holds.
    pub const TRUE: &str = "True";
    /// The condition does not hold.
    pub const FALSE: &str = "False";
    /// Whether the condition holds is not known.
    pub const UNKNOWN: &str = "Unknown";
}

/// Condition reasons defined by Volcano's API package (§5.1).
pub mod condition_reason {
    /// The gang plugin's reason for a Scheduled condition: every task the gang needs is placed.
    pub const TASKS_READY: &str = "tasks in gang are ready to be scheduled";
    /// A pod of the PodGroup failed.
    pub const POD_FAILED: &str = "PodFailed";
    /// A pod of the PodGroup was deleted.
    pub const POD_DELETED: &str = "PodDeleted";
    /// There are not enough resources to schedule the gang.
    pub const NOT_ENOUGH_RESOURCES: &str = "NotEnoughResources";
    /// There are fewer tasks than `spec.minMember`.
    pub const NOT_ENOUGH_TASKS: &str = "NotEnoughTasks";
    /// A task role has fewer pods than its `spec.minTaskMember` entry.
    pub const NOT_ENOUGH_PODS_OF_TASK: &str = "NotEnoughPodsOfTask";
}

/// Head of the job fit-error text when the gang is satisfied (§5.4).
pub const POD_GROUP_READY: &str = "pod group is ready";
/// Head of the job fit-error text when the gang is not satisfied (§5.4).
pub const POD_GROUP_NOT_READY: &str = "pod group is not ready";

/// Values of `networkTopology.mode`.
pub mod network_topology_mode {
    /// Strict constraint; the CRD default.
    pub const HARD: &str = "hard";
    /// Best-effort constraint.
    pub const SOFT: &str = "soft";
}

/// A gang of pods scheduled together (namespaced, plural `podgroups`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodGroup {
    pub metadata: ObjectMeta,
    pub spec: PodGroupSpec,
    /// `None` when the object carries no `status`; the scheduler fills it in (§7.5).
    pub status: Option<PodGroupStatus>,
}

impl PodGroup {
    /// `status.phase`, or `""` when there is no status (treated like `Pending`, §5.3).
    pub fn phase(&self) -> &str {
        self.status
            .as_ref()
            .map_or("", |status| status.phase.as_str())
    }
}

/// Desired behaviour of a PodGroup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// Gang size: tasks that must be placeable together.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub min_member: i32,
    /// Minimum per task role (value of `volcano.sh/task-spec`).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub min_task_member: BTreeMap<String, i32>,
    /// Queue name; empty means the scheduler's `--default-queue` (§4.7).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub queue: String,
    /// PriorityClass giving the job its priority.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub priority_class_name: String,
    /// Minimal resources of the gang; `None` means no admission check. A Go pointer, so an
    /// empty but present map is kept and written back as `{}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<ResourceList>,
    /// Job-level network-topology constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<NetworkTopologySpec>,
    /// Sub-group gang and topology policies.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub sub_group_policy: Vec<SubGroupPolicySpec>,
}

/// One entry of `spec.subGroupPolicy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubGroupPolicySpec {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// Constraint applied to each sub-group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<NetworkTopologySpec>,
    /// Pods per sub-group; the CRD defaults it to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_size: Option<i32>,
    /// Sub-group-level gang minimum; the CRD defaults it to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_sub_groups: Option<i32>,
    /// Pods belonging to this policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Pods with equal values for these label keys form one sub-group.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_label_keys: Vec<String>,
}

/// A network-topology constraint (HyperNode tiers).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkTopologySpec {
    /// `hard` or `soft` (see [`network_topology_mode`]); the CRD defaults it to `hard`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub mode: String,
    /// Highest HyperNode tier the job may span. Go `*int`, hence 64 bits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_tier_allowed: Option<i64>,
    /// The same limit given as a HyperNode `tierName`; exclusive with `highest_tier_allowed`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub highest_tier_name: String,
}

/// Observed state of a PodGroup, written by the scheduler (§7.5).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// One of [`pod_group_phase`], or anything else the server holds.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub phase: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<PodGroupCondition>,
    /// Tasks in status Running.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub running: i32,
    /// Tasks in status Succeeded.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub succeeded: i32,
    /// Tasks in status Failed.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub failed: i32,
}

/// An entry of `status.conditions` (§5.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupCondition {
    /// One of [`condition_type`], or anything else the server holds.
    #[serde(
        rename = "type",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub type_: String,
    /// One of [`condition_status`].
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub status: String,
    /// The scheduler stores the UID of the session that wrote the condition.
    #[serde(
        rename = "transitionID",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub transition_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub reason: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub message: String,
}

crate::serde_util::object_traits!(
    PodGroup,
    crate::API_VERSION,
    crate::GROUP,
    crate::VERSION,
    "PodGroup",
    "podgroups",
    k8s_openapi::NamespaceResourceScope
);

#[cfg(test)]
mod tests;
