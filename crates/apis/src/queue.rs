//! The `scheduling.volcano.sh/v1beta1` Queue: spec/kubernetes.md §5.2 (fields), §4.8 (how the
//! scheduler reads it) and §7.6 (the `status.allocated` it writes).
//!
//! Field shapes follow Volcano's Go type (`staging/src/volcano.sh/apis/pkg/apis/scheduling/
//! v1beta1/types.go`): Go pointers are `Option`s, plain Go fields are plain Rust values that are
//! left out of the JSON when zero (`omitempty`), and a JSON `null` reads as the zero value. Two Go
//! quirks are kept on purpose: embedded structs (`guarantee`, `reservation`) are always written,
//! and `status.allocated` has no `omitempty` so it is always written too.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::ResourceList;
use crate::serde_util::{is_zero, null_as_default};

/// Name of the queue PodGroups use when their `spec.queue` is empty and no `--default-queue` is
/// given.
pub const DEFAULT_QUEUE: &str = "default";
/// Name of the root of the queue hierarchy; an empty `spec.parent` means this queue (§4.8.3).
pub const ROOT_QUEUE: &str = "root";

/// Values of `status.state` (§4.8.2). Unknown values are kept as they are.
pub mod queue_state {
    /// Jobs may be enqueued and allocated; the only state `proportion`/`capacity` accept.
    pub const OPEN: &str = "Open";
    /// Closed by a bus Command; nothing new is admitted.
    pub const CLOSED: &str = "Closed";
    /// Being closed; waits for its PodGroups to finish.
    pub const CLOSING: &str = "Closing";
    /// State could not be determined.
    pub const UNKNOWN: &str = "Unknown";
}

/// Values of `spec.dequeueStrategy` (declared by the CRD, not consulted by the scheduler).
pub mod dequeue_strategy {
    /// Strict FIFO: a head job that cannot be scheduled blocks the queue.
    pub const FIFO: &str = "fifo";
    /// Skip a head job that cannot be scheduled; the CRD default.
    pub const TRAVERSE: &str = "traverse";
}

/// A resource queue (cluster-scoped, plural `queues`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Queue {
    pub metadata: ObjectMeta,
    pub spec: QueueSpec,
    /// `None` when the object carries no `status` (e.g. before the queue controller ran).
    pub status: Option<QueueStatus>,
}

impl Queue {
    /// `spec.reclaimable`, which counts as `true` when unset (§4.8.1).
    pub fn reclaimable(&self) -> bool {
        self.spec.reclaimable.unwrap_or(true)
    }

    /// `status.state`, or `""` when there is no status. Only `Open` admits jobs (§4.8.2).
    pub fn state(&self) -> &str {
        self.status
            .as_ref()
            .map_or("", |status| status.state.as_str())
    }
}

/// Desired behaviour of a Queue.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSpec {
    /// Share weight (proportion plugin); the CRD defaults it to 1.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub weight: i32,
    /// Upper bound of what the queue may use.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "ResourceList::is_empty"
    )]
    pub capability: ResourceList,
    /// Whether other queues may reclaim its over-share; see [`Queue::reclaimable`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaimable: Option<bool>,
    /// Multi-cluster dispatch hints; unused by the scheduler.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extend_clusters: Vec<Cluster>,
    /// Reserved resources. An embedded Go struct, so always written (as `{}` when empty).
    #[serde(default, deserialize_with = "null_as_default")]
    pub guarantee: Guarantee,
    /// Node-group placement rules (nodegroup plugin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Free-form queue type; unused by the scheduler.
    #[serde(
        rename = "type",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub type_: String,
    /// Parent queue; empty means [`ROOT_QUEUE`].
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub parent: String,
    /// Configured deserved share (capacity plugin).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "ResourceList::is_empty"
    )]
    pub deserved: ResourceList,
    /// Higher queues are ordered first and reclaimed last.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub priority: i32,
    /// One of [`dequeue_strategy`]; not consulted by the scheduler.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub dequeue_strategy: String,
}

/// An entry of `spec.extendClusters`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub weight: i32,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "ResourceList::is_empty"
    )]
    pub capacity: ResourceList,
}

/// `spec.guarantee`: resources reserved for the queue.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Guarantee {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "ResourceList::is_empty"
    )]
    pub resource: ResourceList,
}

/// `spec.affinity`: node groups (label `volcano.sh/nodegroup-name`) to use or avoid.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_group_affinity: Option<NodeGroupAffinity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_group_anti_affinity: Option<NodeGroupAntiAffinity>,
}

/// Node-group names a queue's pods must (required) or should (preferred) be placed on; the same
/// shape expresses anti-affinity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroupAffinity {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub required_during_scheduling_ignored_during_execution: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub preferred_during_scheduling_ignored_during_execution: Vec<String>,
}

/// Node groups a queue's pods must (required) or should (preferred) avoid. Volcano declares a
/// separate Go type with exactly the affinity's fields.
pub type NodeGroupAntiAffinity = NodeGroupAffinity;

/// Observed state of a Queue. The queue controller owns everything except `allocated`, which
/// the scheduler writes (§7.6).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatus {
    /// One of [`queue_state`], or anything else the server holds.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub state: String,
    /// PodGroups of the queue in phase `Unknown`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub unknown: i32,
    /// PodGroups of the queue in phase `Pending`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub pending: i32,
    /// PodGroups of the queue in phase `Running`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub running: i32,
    /// PodGroups of the queue in phase `Inqueue`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub inqueue: i32,
    /// PodGroups of the queue in phase `Completed`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub completed: i32,
    /// Legacy; nobody writes it. An embedded Go struct, so always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub reservation: Reservation,
    /// Resources of allocated-like tasks of the queue and its descendants. Go declares it
    /// without `omitempty`, so the key is always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub allocated: ResourceList,
}

/// `status.reservation` (legacy).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reservation {
    /// Nodes locked for the queue.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub nodes: Vec<String>,
    /// Idle resources on the locked nodes.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "ResourceList::is_empty"
    )]
    pub resource: ResourceList,
}

crate::serde_util::object_traits!(
    Queue,
    crate::API_VERSION,
    crate::GROUP,
    crate::VERSION,
    "Queue",
    "queues",
    k8s_openapi::ClusterResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::{ListableResource, Metadata, Resource};
    use serde_json::{Value, json};

    /// A Queue with every field set, as Volcano's Go client would marshal it.
    fn full_queue_json() -> Value {
        json!({
            "kind": "Queue",
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "metadata": {
                "name": "research",
                "uid": "0f0e0d0c-0000-4000-8000-000000000002",
                "resourceVersion": "77",
                "annotations": {
                    "volcano.sh/hierarchy": "root/science/research",
                    "volcano.sh/hierarchy-weights": "1/2/3"
                }
            },
            "spec": {
                "weight": 3,
                "capability": {"cpu": "64", "memory": "256Gi"},
                "reclaimable": false,
                "extendClusters": [
                    {"name": "east", "weight": 2, "capacity": {"cpu": "10"}},
                    {"name": "west"}
                ],
                "guarantee": {"resource": {"cpu": "8", "memory": "16Gi"}},
                "affinity": {
                    "nodeGroupAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": ["gpu-a"],
                        "preferredDuringSchedulingIgnoredDuringExecution": ["gpu-b", "gpu-c"]
                    },
                    "nodeGroupAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": ["batch"],
                        "preferredDuringSchedulingIgnoredDuringExecution": ["spot"]
                    }
                },
                "type": "training",
                "parent": "science",
                "deserved": {"cpu": "32", "nvidia.com/gpu": "4"},
                "priority": 10,
                "dequeueStrategy": "fifo"
            },
            "status": {
                "state": "Open",
                "unknown": 1,
                "pending": 2,
                "running": 3,
                "inqueue": 4,
                "completed": 5,
                "reservation": {"nodes": ["node-1"], "resource": {"cpu": "2"}},
                "allocated": {"cpu": "1500m", "memory": "3Gi", "pods": "3"}
            }
        })
    }

    #[test]
    fn full_queue_round_trips_exactly() {
        let input = full_queue_json();
        let queue: Queue = serde_json::from_value(input.clone()).expect("valid Queue");

        let spec = &queue.spec;
        assert_eq!(spec.weight, 3);
        assert_eq!(spec.capability.get("cpu"), Some(&Quantity("64".into())));
        assert_eq!(spec.reclaimable, Some(false));
        assert!(!queue.reclaimable());
        assert_eq!(spec.extend_clusters.len(), 2);
        assert_eq!(spec.extend_clusters[0].weight, 2);
        assert_eq!(
            spec.extend_clusters[1],
            Cluster {
                name: "west".into(),
                ..Cluster::default()
            }
        );
        assert_eq!(
            spec.guarantee.resource.get("memory"),
            Some(&Quantity("16Gi".into()))
        );
        let affinity = spec.affinity.as_ref().expect("affinity set");
        assert_eq!(
            affinity.node_group_affinity.as_ref().map(|a| a
                .preferred_during_scheduling_ignored_during_execution
                .clone()),
            Some(vec!["gpu-b".to_owned(), "gpu-c".to_owned()])
        );
        assert_eq!(
            affinity.node_group_anti_affinity.as_ref().map(|a| a
                .required_during_scheduling_ignored_during_execution
                .clone()),
            Some(vec!["batch".to_owned()])
        );
        assert_eq!(spec.type_, "training");
        assert_eq!(spec.parent, "science");
        assert_eq!(
            spec.deserved.get("nvidia.com/gpu"),
            Some(&Quantity("4".into()))
        );
        assert_eq!(spec.priority, 10);
        assert_eq!(spec.dequeue_strategy, dequeue_strategy::FIFO);

        assert_eq!(queue.state(), queue_state::OPEN);
        let status = queue.status.as_ref().expect("status set");
        assert_eq!(
            (
                status.unknown,
                status.pending,
                status.running,
                status.inqueue,
                status.completed
            ),
            (1, 2, 3, 4, 5)
        );
        assert_eq!(status.reservation.nodes, ["node-1"]);
        assert_eq!(status.allocated.get("cpu"), Some(&Quantity("1500m".into())));

        assert_eq!(serde_json::to_value(&queue).expect("serialisable"), input);
    }

    #[test]
    fn kubectl_yaml_document_parses() {
        let yaml = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  creationTimestamp: "2025-03-01T09:00:00Z"
  generation: 1
  name: default
  resourceVersion: "512"
  uid: 1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d
spec:
  guarantee: {}
  parent: root
  reclaimable: true
  weight: 1
status:
  allocated:
    cpu: "0"
    memory: "0"
  reservation: {}
  running: 2
  state: Open
"#;
        let queue: Queue = serde_saphyr::from_str(yaml).expect("valid Queue YAML");
        assert_eq!(queue.metadata.name.as_deref(), Some("default"));
        assert_eq!(queue.spec.weight, 1);
        assert_eq!(queue.spec.parent, ROOT_QUEUE);
        assert!(queue.reclaimable());
        assert_eq!(queue.state(), queue_state::OPEN);
        let status = queue.status.expect("status set");
        assert_eq!(status.running, 2);
        assert_eq!(status.allocated.len(), 2);
        assert_eq!(status.reservation, Reservation::default());
    }

    #[test]
    fn allocated_is_emitted_even_when_empty() {
        let queue = Queue {
            metadata: ObjectMeta {
                name: Some("q".into()),
                ..ObjectMeta::default()
            },
            status: Some(QueueStatus::default()),
            ..Queue::default()
        };
        assert_eq!(
            serde_json::to_value(&queue).expect("serialisable"),
            json!({
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "q"},
                "spec": {"guarantee": {}},
                "status": {"reservation": {}, "allocated": {}}
            })
        );
    }

    #[test]
    fn null_allocated_reads_as_empty() {
        // Go marshals a nil `allocated` as null.
        let queue: Queue = serde_json::from_value(json!({
            "spec": {"guarantee": null, "capability": null},
            "status": {"reservation": {}, "allocated": null}
        }))
        .expect("nulls accepted");
        let status = queue.status.expect("status set");
        assert!(status.allocated.is_empty());
        assert_eq!(queue.spec, QueueSpec::default());
    }

    #[test]
    fn unknown_state_survives() {
        let input = json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "q"},
            "spec": {"guarantee": {}, "dequeueStrategy": "random"},
            "status": {"state": "Draining", "reservation": {}, "allocated": {}}
        });
        let queue: Queue = serde_json::from_value(input.clone()).expect("unknown state accepted");
        assert_eq!(queue.state(), "Draining");
        assert_eq!(queue.spec.dequeue_strategy, "random");
        assert_eq!(serde_json::to_value(&queue).expect("serialisable"), input);
    }

    #[test]
    fn reclaimable_and_state_defaults() {
        let mut queue = Queue::default();
        assert!(queue.reclaimable(), "unset reclaimable counts as true");
        assert_eq!(queue.state(), "");
        queue.spec.reclaimable = Some(true);
        assert!(queue.reclaimable());
        queue.spec.reclaimable = Some(false);
        assert!(!queue.reclaimable());
        queue.status = Some(QueueStatus {
            state: queue_state::CLOSING.into(),
            ..QueueStatus::default()
        });
        assert_eq!(queue.state(), queue_state::CLOSING);
    }

    #[test]
    fn wrong_kind_is_rejected() {
        let result = serde_json::from_value::<Queue>(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup"
        }));
        let message = result.expect_err("kind PodGroup rejected").to_string();
        assert!(
            message.contains("\"PodGroup\", expected Queue"),
            "{message}"
        );
    }

    #[test]
    fn resource_metadata_is_volcano_s() {
        assert_eq!(Queue::API_VERSION, "scheduling.volcano.sh/v1beta1");
        assert_eq!(Queue::GROUP, "scheduling.volcano.sh");
        assert_eq!(Queue::VERSION, "v1beta1");
        assert_eq!(Queue::KIND, "Queue");
        assert_eq!(Queue::URL_PATH_SEGMENT, "queues");
        assert_eq!(Queue::LIST_KIND, "QueueList");

        let mut queue = Queue::default();
        queue.metadata_mut().name = Some(DEFAULT_QUEUE.into());
        assert_eq!(queue.metadata().name.as_deref(), Some("default"));
    }
}
