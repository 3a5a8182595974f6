use super::*;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
use k8s_openapi::{ListableResource, Metadata, Resource};
use serde_json::{Value, json};

/// A PodGroup with every field set, as Volcano's Go client would marshal it.
fn full_pod_group_json() -> Value {
    json!({
        "kind": "PodGroup",
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "metadata": {
            "name": "job-1",
            "namespace": "team-a",
            "uid": "7c1f3c2e-0000-4000-8000-000000000001",
            "resourceVersion": "4242",
            "creationTimestamp": "2025-01-02T03:04:05Z",
            "annotations": {"volcano.sh/sla-waiting-time": "10m"}
        },
        "spec": {
            "minMember": 3,
            "minTaskMember": {"ps": 1, "worker": 2},
            "queue": "research",
            "priorityClassName": "high",
            "minResources": {"cpu": "3", "memory": "6Gi", "nvidia.com/gpu": "2"},
            "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
            "subGroupPolicy": [{
                "name": "workers",
                "networkTopology": {"mode": "soft", "highestTierName": "spine"},
                "subGroupSize": 2,
                "minSubGroups": 1,
                "labelSelector": {
                    "matchLabels": {"role": "worker"},
                    "matchExpressions": [
                        {"key": "tier", "operator": "In", "values": ["a", "b"]}
                    ]
                },
                "matchLabelKeys": ["volcano.sh/task-index"]
            }]
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "transitionID": "0b7d1f7e-session",
                    "lastTransitionTime": "2025-01-02T03:05:00Z",
                    "reason": "NotEnoughResources",
                    "message": "1/3 tasks in gang unschedulable: pod group is not ready, 2 Running, 3 minAvailable"
                },
                {
                    "type": "Scheduled",
                    "status": "True",
                    "transitionID": "1c8e2a8f-session",
                    "lastTransitionTime": "2025-01-02T03:06:00Z",
                    "reason": "tasks in gang are ready to be scheduled"
                }
            ],
            "running": 2,
            "succeeded": 1,
            "failed": 4
        }
    })
}

#[test]
fn full_pod_group_round_trips_exactly() {
    let input = full_pod_group_json();
    let pg: PodGroup = serde_json::from_value(input.clone()).expect("valid PodGroup");

    assert_eq!(pg.metadata.name.as_deref(), Some("job-1"));
    assert_eq!(pg.spec.min_member, 3);
    assert_eq!(pg.spec.min_task_member.get("worker"), Some(&2));
    assert_eq!(pg.spec.queue, "research");
    assert_eq!(pg.spec.priority_class_name, "high");
    let min_resources = pg.spec.min_resources.as_ref().expect("minResources set");
    assert_eq!(min_resources.get("memory"), Some(&Quantity("6Gi".into())));
    let topology = pg
        .spec
        .network_topology
        .as_ref()
        .expect("networkTopology set");
    assert_eq!(topology.mode, network_topology_mode::HARD);
    assert_eq!(topology.highest_tier_allowed, Some(2));
    assert_eq!(topology.highest_tier_name, "");
    let policy = &pg.spec.sub_group_policy[0];
    assert_eq!(policy.name, "workers");
    assert_eq!(policy.sub_group_size, Some(2));
    assert_eq!(policy.min_sub_groups, Some(1));
    assert_eq!(policy.match_label_keys, ["volcano.sh/task-index"]);
    let selector = policy.label_selector.as_ref().expect("labelSelector set");
    assert_eq!(
        selector.match_expressions.as_deref(),
        Some(
            &[LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: Some(vec!["a".into(), "b".into()]),
            }][..]
        )
    );
    assert_eq!(
        policy
            .network_topology
            .as_ref()
            .map(|t| t.highest_tier_name.as_str()),
        Some("spine")
    );

    let status = pg.status.as_ref().expect("status set");
    assert_eq!(pg.phase(), pod_group_phase::RUNNING);
    assert_eq!((status.running, status.succeeded, status.failed), (2, 1, 4));
    let unschedulable = &status.conditions[0];
    assert_eq!(unschedulable.type_, condition_type::UNSCHEDULABLE);
    assert_eq!(unschedulable.status, condition_status::TRUE);
    assert_eq!(unschedulable.transition_id, "0b7d1f7e-session");
    assert_eq!(unschedulable.reason, condition_reason::NOT_ENOUGH_RESOURCES);
    assert!(unschedulable.last_transition_time.is_some());
    assert_eq!(status.conditions[1].type_, condition_type::SCHEDULED);
    assert_eq!(status.conditions[1].message, "");

    assert_eq!(serde_json::to_value(&pg).expect("serialisable"), input);
}

#[test]
fn kubectl_yaml_document_parses() {
    let yaml = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  annotations:
    volcano.sh/preemptable: "true"
  creationTimestamp: "2025-03-01T10:00:00Z"
  generation: 4
  name: podgroup-3f1a6c0b-8f5e-4d0a-9a55-6f4f0c1d2e3f
  namespace: default
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: web-7d9c8b6f5
    uid: 3f1a6c0b-8f5e-4d0a-9a55-6f4f0c1d2e3f
  resourceVersion: "918273"
  uid: 9d2c4b1a-1111-4222-8333-444455556666
spec:
  minMember: 1
  minResources:
    cpu: 500m
    memory: 256Mi
  priorityClassName: low
  queue: default
status:
  conditions:
  - lastTransitionTime: "2025-03-01T10:00:02Z"
    reason: tasks in gang are ready to be scheduled
    status: "True"
    transitionID: 5f0c6c2d-7a1e-4d5b-9c3e-2b1a0f9e8d7c
    type: Scheduled
  phase: Running
  running: 1
"#;
    let pg: PodGroup = serde_saphyr::from_str(yaml).expect("valid PodGroup YAML");
    assert_eq!(
        pg.metadata.namespace.as_deref(),
        Some("default"),
        "metadata is read"
    );
    assert_eq!(
        pg.metadata
            .owner_references
            .as_ref()
            .and_then(|refs| refs.first())
            .map(|r| r.kind.as_str()),
        Some("ReplicaSet")
    );
    assert_eq!(pg.spec.min_member, 1);
    assert_eq!(pg.spec.queue, "default");
    assert_eq!(
        pg.spec
            .min_resources
            .as_ref()
            .and_then(|r| r.get("cpu"))
            .map(|q| q.0.as_str()),
        Some("500m")
    );
    assert_eq!(pg.phase(), pod_group_phase::RUNNING);
    let status = pg.status.expect("status set");
    assert_eq!(status.running, 1);
    assert_eq!(status.failed, 0);
    assert_eq!(status.conditions.len(), 1);
    assert_eq!(status.conditions[0].type_, condition_type::SCHEDULED);
    assert_eq!(
        status.conditions[0].transition_id,
        "5f0c6c2d-7a1e-4d5b-9c3e-2b1a0f9e8d7c"
    );
}

#[test]
fn unknown_phase_and_condition_type_survive() {
    let input = json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"networkTopology": {"mode": "sideways"}},
        "status": {
            "phase": "Hibernating",
            "conditions": [{"type": "Frobnicated", "status": "Maybe"}]
        }
    });
    let pg: PodGroup = serde_json::from_value(input.clone()).expect("unknown values accepted");
    assert_eq!(pg.phase(), "Hibernating");
    let status = pg.status.as_ref().expect("status set");
    assert_eq!(status.conditions[0].type_, "Frobnicated");
    assert_eq!(status.conditions[0].status, "Maybe");
    assert_eq!(serde_json::to_value(&pg).expect("serialisable"), input);
}

#[test]
fn type_information_is_always_emitted_and_zero_values_omitted() {
    let pg = PodGroup::default();
    assert_eq!(
        serde_json::to_value(&pg).expect("serialisable"),
        json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {},
            "spec": {}
        })
    );
    assert_eq!(pg.phase(), "");
}

#[test]
fn present_but_empty_min_resources_is_kept() {
    // A Go pointer to an empty map still serialises, and "no admission check" is only nil.
    let pg: PodGroup =
        serde_json::from_value(json!({"spec": {"minResources": {}}})).expect("valid");
    assert_eq!(pg.spec.min_resources, Some(ResourceList::new()));
    assert_eq!(
        serde_json::to_value(&pg.spec).expect("serialisable"),
        json!({"minResources": {}})
    );
}

#[test]
fn missing_type_information_and_nulls_are_accepted() {
    let pg: PodGroup = serde_json::from_value(json!({
        "metadata": {"name": "item-of-a-list"},
        "spec": {"minMember": null, "queue": null, "subGroupPolicy": null},
        "status": {"phase": "Pending", "conditions": [{"lastTransitionTime": null}]}
    }))
    .expect("list items omit apiVersion and kind");
    assert_eq!(pg.metadata.name.as_deref(), Some("item-of-a-list"));
    assert_eq!(pg.spec, PodGroupSpec::default());
    assert_eq!(pg.phase(), pod_group_phase::PENDING);
    assert_eq!(
        pg.status.map(|s| s.conditions),
        Some(vec![PodGroupCondition::default()])
    );

    let empty: PodGroup = serde_json::from_str("{}").expect("empty object accepted");
    assert_eq!(empty, PodGroup::default());
}

#[test]
fn wrong_type_information_is_rejected() {
    let wrong_kind = serde_json::from_value::<PodGroup>(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue"
    }));
    let message = wrong_kind.expect_err("kind Queue rejected").to_string();
    assert!(
        message.contains("\"Queue\", expected PodGroup"),
        "{message}"
    );
    let wrong_version = serde_json::from_value::<PodGroup>(json!({
        "apiVersion": "scheduling.volcano.sh/v1alpha1",
        "kind": "PodGroup"
    }));
    let message = wrong_version.expect_err("v1alpha1 rejected").to_string();
    assert!(
        message.contains("expected scheduling.volcano.sh/v1beta1"),
        "{message}"
    );
}

#[test]
fn resource_metadata_is_volcano_s() {
    assert_eq!(PodGroup::API_VERSION, "scheduling.volcano.sh/v1beta1");
    assert_eq!(PodGroup::GROUP, "scheduling.volcano.sh");
    assert_eq!(PodGroup::VERSION, "v1beta1");
    assert_eq!(PodGroup::KIND, "PodGroup");
    assert_eq!(PodGroup::URL_PATH_SEGMENT, "podgroups");
    assert_eq!(PodGroup::LIST_KIND, "PodGroupList");

    let mut pg = PodGroup::default();
    pg.metadata_mut().name = Some("renamed".into());
    assert_eq!(pg.metadata().name.as_deref(), Some("renamed"));
}
