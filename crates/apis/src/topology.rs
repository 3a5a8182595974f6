//! The `topology.volcano.sh/v1alpha1` HyperNode (spec/kubernetes.md §5.5): one node of the
//! network topology tree. Its members are nodes (by exact name, name pattern or labels) or other
//! HyperNodes (by exact name); its tier says how far up the network it sits (1 = closest to the
//! nodes).
//!
//! Field shapes follow Volcano's Go type (`volcano.sh/apis/pkg/apis/topology/v1alpha1`), with
//! the conventions of the other types of this crate: Go pointers are `Option`s, plain fields are
//! left out when zero, and a JSON `null` reads as the zero value.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};

use crate::serde_util::{is_zero, is_zero_i64, null_as_default};

/// API group of HyperNodes.
pub const TOPOLOGY_GROUP: &str = "topology.volcano.sh";
/// `apiVersion` of HyperNode objects.
pub const TOPOLOGY_API_VERSION: &str = "topology.volcano.sh/v1alpha1";

/// Values of a member's `type`.
pub mod member_type {
    /// The member selects nodes.
    pub const NODE: &str = "Node";
    /// The member names another HyperNode.
    pub const HYPER_NODE: &str = "HyperNode";
}

/// A HyperNode (cluster-scoped, plural `hypernodes`, short name `hn`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HyperNode {
    pub metadata: ObjectMeta,
    pub spec: HyperNodeSpec,
    pub status: Option<HyperNodeStatus>,
}

/// What a HyperNode groups and where it sits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HyperNodeSpec {
    /// The tier: 1 for a HyperNode of nodes, higher further up the network.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub tier: i32,
    /// A name for the tier, which a PodGroup's `highestTierName` can refer to.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tier_name: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub members: Vec<MemberSpec>,
}

/// One member: nodes, or another HyperNode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberSpec {
    /// [`member_type::NODE`] or [`member_type::HYPER_NODE`].
    #[serde(
        default,
        rename = "type",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub type_: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub selector: MemberSelector,
}

/// How a member is selected; the CRD allows exactly one of the three.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_match: Option<ExactMatch>,
    /// Node members only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex_match: Option<RegexMatch>,
    /// Node members only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_match: Option<LabelSelector>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExactMatch {
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RegexMatch {
    #[serde(default, deserialize_with = "null_as_default")]
    pub pattern: String,
}

/// Written by Volcano's HyperNode controller; the scheduler does not read it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HyperNodeStatus {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero_i64"
    )]
    pub node_count: i64,
}

crate::serde_util::object_traits!(
    HyperNode,
    TOPOLOGY_API_VERSION,
    TOPOLOGY_GROUP,
    "v1alpha1",
    "HyperNode",
    "hypernodes",
    k8s_openapi::ClusterResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hypernode_reads_and_writes_as_volcano_does() {
        let v = json!({
            "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": {"name": "s0"},
            "spec": {"tier": 1, "tierName": "leaf", "members": [
                {"type": "Node", "selector": {"exactMatch": {"name": "node-0"}}},
                {"type": "Node", "selector": {"regexMatch": {"pattern": "^node-1[0-9]$"}}},
                {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r1"}}}}
            ]},
            "status": {"nodeCount": 3}
        });
        let hn: HyperNode = serde_json::from_value(v.clone()).expect("hypernode");
        assert_eq!(hn.spec.tier, 1);
        assert_eq!(hn.spec.members.len(), 3);
        assert_eq!(hn.spec.members[1].type_, member_type::NODE);
        assert_eq!(
            hn.spec.members[1]
                .selector
                .regex_match
                .as_ref()
                .map(|r| r.pattern.as_str()),
            Some("^node-1[0-9]$")
        );
        assert_eq!(serde_json::to_value(&hn).expect("json"), v);
    }

    #[test]
    fn nulls_and_missing_fields_read_as_zero_and_another_kind_is_refused() {
        let hn: HyperNode = serde_json::from_value(json!({
            "metadata": {"name": "s1"}, "spec": {"tier": null, "members": null}
        }))
        .expect("hypernode");
        assert_eq!((hn.spec.tier, hn.spec.members.len()), (0, 0));
        let wrong = serde_json::from_value::<HyperNode>(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": "s1"}, "spec": {}
        }));
        assert!(wrong.is_err());
    }
}
