//! Pods as the pod watch reads them: without `metadata.managedFields`.
//!
//! Every pod event (created, bound, started, finished) carries the managed fields of each
//! writer, a nested JSON tree that k8s-openapi decodes into a `serde_json::Value` per entry
//! and that the scheduler never reads. Decoding the pod through [`WatchedPod`] skips that
//! tree while it is parsed instead of building and dropping it, which is most of the
//! allocations a pod event costs the watch.

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Deserializer};

use super::{Mirrored, ns_key};
use engine::state::ClusterState;

/// A pod read from the watch without its managed fields (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct WatchedPod(pub Pod);

#[derive(Deserialize)]
struct LeanPod {
    #[serde(default, deserialize_with = "apis::lean_meta::lean_object_meta")]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<PodSpec>,
    #[serde(default)]
    status: Option<PodStatus>,
}

impl<'de> Deserialize<'de> for WatchedPod {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let lean = LeanPod::deserialize(deserializer)?;
        Ok(WatchedPod(Pod {
            metadata: lean.metadata,
            spec: lean.spec,
            status: lean.status,
        }))
    }
}

// kube's `Resource` (what a watcher needs) follows from these two, as for `Pod` itself.
impl k8s_openapi::Resource for WatchedPod {
    const API_VERSION: &'static str = <Pod as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <Pod as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <Pod as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str = <Pod as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str = <Pod as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = <Pod as k8s_openapi::Resource>::Scope;
}

impl k8s_openapi::Metadata for WatchedPod {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.0.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

impl Mirrored for WatchedPod {
    const KIND: &'static str = "Pod";
    fn state_key(&self) -> String {
        ns_key(&self.0)
    }
    fn upsert(self, state: &mut ClusterState) -> bool {
        state.upsert_pod(self.0)
    }
    fn delete(key: &str, state: &mut ClusterState) -> bool {
        <Pod as Mirrored>::delete(key, state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_json() -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "p-0", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
                "generateName": "p-", "generation": 3,
                "creationTimestamp": "2026-11-28T01:00:00Z",
                "deletionTimestamp": "2026-11-28T01:05:00Z", "deletionGracePeriodSeconds": 30,
                "labels": {"app": "x"}, "annotations": {"scheduling.k8s.io/group-name": "pg"},
                "finalizers": ["f"],
                "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                    "name": "j", "uid": "u-j", "controller": true}],
                "managedFields": [{"manager": "kwok", "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "subresource": "status",
                    "fieldsV1": {"f:status": {"f:phase": {}, "f:conditions": {
                        "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}}}}}]
            },
            "spec": {"schedulerName": "volcano-rs", "nodeName": "n1",
                "containers": [{"name": "c", "image": "i",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    "env": [{"name": "A", "value": "b"}]}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}]}
        })
    }

    #[test]
    fn a_watched_pod_is_the_pod_without_its_managed_fields() {
        let full: Pod = serde_json::from_value(pod_json()).expect("pod");
        assert!(full.metadata.managed_fields.is_some());
        let WatchedPod(lean) = serde_json::from_value(pod_json()).expect("watched pod");
        let mut expected = full;
        expected.metadata.managed_fields = None;
        assert_eq!(lean, expected);
    }

    #[test]
    fn list_items_without_kind_and_null_fields_decode() {
        let v = json!({"metadata": {"name": "p", "labels": null, "managedFields": null},
            "spec": null});
        let WatchedPod(p) = serde_json::from_value(v).expect("watched pod");
        assert_eq!(p.metadata.name.as_deref(), Some("p"));
        assert!(p.metadata.labels.is_none() && p.spec.is_none() && p.status.is_none());
    }
}
