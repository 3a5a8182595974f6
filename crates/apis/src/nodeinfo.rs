//! The `nodeinfo.volcano.sh/v1alpha1` Numatopology (spec/plugins-more.md §11): what a node's
//! agent reports of its NUMA layout for the `numa-aware` plugin — the kubelet's CPU and topology
//! manager policies, the CPUs each NUMA-managed resource can still give, the reserved
//! resources, and which NUMA node, socket and core each CPU belongs to. One object per node,
//! named after it (cluster-scoped, plural `numatopologies`, short name `numatopo`).
//!
//! Field shapes follow Volcano's Go type (`volcano.sh/apis/pkg/apis/nodeinfo/v1alpha1`), with
//! this crate's conventions: plain fields are left out when zero, and `null` reads as zero.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::serde_util::{is_zero_i64, null_as_default};

/// API group of Numatopology objects.
pub const NODEINFO_GROUP: &str = "nodeinfo.volcano.sh";
/// `apiVersion` of Numatopology objects.
pub const NODEINFO_API_VERSION: &str = "nodeinfo.volcano.sh/v1alpha1";

/// Keys of `spec.policies`.
pub mod policy_name {
    /// The kubelet's `--cpu-manager-policy` (`none` or `static`).
    pub const CPU_MANAGER: &str = "CPUManagerPolicy";
    /// The kubelet's `--topology-manager-policy` (`none`, `best-effort`, `restricted`,
    /// `single-numa-node`).
    pub const TOPOLOGY_MANAGER: &str = "TopologyManagerPolicy";
}

/// A node's NUMA report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Numatopology {
    pub metadata: ObjectMeta,
    pub spec: NumatopoSpec,
    /// The CRD has no status; always `None`.
    pub status: Option<NoStatus>,
}

/// The (absent) status of a Numatopology.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoStatus {}

/// The report itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumatopoSpec {
    /// [`policy_name`] → policy.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub policies: BTreeMap<String, String>,
    /// Resource name → reserved quantity (`cpu: "2"`).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub res_reserved: BTreeMap<String, String>,
    /// Resource name → what of it NUMA management still has to give.
    #[serde(
        default,
        rename = "numares",
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub numa_res_map: BTreeMap<String, NumaResource>,
    /// CPU id (as a string) → where it sits.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub cpu_detail: BTreeMap<String, CpuInfo>,
    /// What the kubelet actually gave each pod (newer agents report it).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub pod_allocations: Vec<PodAllocation>,
}

/// The NUMA resources one pod got.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAllocation {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub uid: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub namespace: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub container_allocations: Vec<ContainerAllocation>,
}

/// The NUMA resources one container got: resource name → a CPU list or a quantity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerAllocation {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub allocations: BTreeMap<String, String>,
}

/// One NUMA-managed resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NumaResource {
    /// The CPUs still allocatable, as a Linux CPU list (`"0-3,8"`).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub allocatable: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero_i64"
    )]
    pub capacity: i64,
}

/// Where a CPU sits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuInfo {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero_i64"
    )]
    pub numa: i64,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero_i64"
    )]
    pub socket: i64,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero_i64"
    )]
    pub core: i64,
}

crate::serde_util::object_traits!(
    Numatopology,
    NODEINFO_API_VERSION,
    NODEINFO_GROUP,
    "v1alpha1",
    "Numatopology",
    "numatopologies",
    k8s_openapi::ClusterResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_numatopology_reads_and_writes_as_volcano_does() {
        let v = json!({
            "apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
            "metadata": {"name": "node-1"},
            "spec": {
                "policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
                "resReserved": {"cpu": "1"},
                "numares": {"cpu": {"allocatable": "1-7", "capacity": 8}},
                "cpuDetail": {"0": {}, "1": {"numa": 1, "socket": 1, "core": 1}}
            }
        });
        let n: Numatopology = serde_json::from_value(v.clone()).expect("numatopology");
        assert_eq!(n.spec.policies[policy_name::CPU_MANAGER], "static");
        assert_eq!(n.spec.numa_res_map["cpu"].allocatable, "1-7");
        assert_eq!(n.spec.cpu_detail["1"].numa, 1);
        assert_eq!(serde_json::to_value(&n).expect("json"), v);
    }
}
