//! Object metadata as the scheduler reads it: without `metadata.managedFields`.
//!
//! Every watch event carries the managed fields of each writer of the object, a nested JSON
//! tree that k8s-openapi decodes into a `serde_json::Value` per entry and that the scheduler
//! never reads. [`lean_object_meta`] skips that tree while it is parsed instead of building
//! and dropping it; the watches read pods and this crate's resources through it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::{Deserialize, Deserializer};

/// `ObjectMeta` without `managedFields`: serde skips unknown keys without building them.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct LeanMeta {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

/// Decodes object metadata, `null` or missing as the default, leaving `managedFields` out.
pub fn lean_object_meta<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<ObjectMeta, D::Error> {
    let m = Option::<LeanMeta>::deserialize(deserializer)?.unwrap_or_default();
    Ok(ObjectMeta {
        annotations: m.annotations,
        creation_timestamp: m.creation_timestamp,
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        deletion_timestamp: m.deletion_timestamp,
        finalizers: m.finalizers,
        generate_name: m.generate_name,
        generation: m.generation,
        labels: m.labels,
        managed_fields: None,
        name: m.name,
        namespace: m.namespace,
        owner_references: m.owner_references,
        resource_version: m.resource_version,
        self_link: m.self_link,
        uid: m.uid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize)]
    struct Holder {
        #[serde(default, deserialize_with = "lean_object_meta")]
        metadata: ObjectMeta,
    }

    #[test]
    fn lean_metadata_is_the_metadata_without_its_managed_fields() {
        let v = json!({
            "name": "pg", "namespace": "ns", "uid": "u", "resourceVersion": "7", "generation": 2,
            "labels": {"a": "b"}, "annotations": {"c": "d"}, "finalizers": ["f"],
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "o"}],
            "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:status": {"f:phase": {}}}}]
        });
        let mut full: ObjectMeta = serde_json::from_value(v.clone()).expect("full metadata");
        assert!(full.managed_fields.is_some());
        let Holder { metadata } =
            serde_json::from_value(json!({"metadata": v})).expect("lean metadata");
        full.managed_fields = None;
        assert_eq!(metadata, full);
        let Holder { metadata } =
            serde_json::from_value(json!({"metadata": null})).expect("null metadata");
        assert_eq!(metadata, ObjectMeta::default());
    }
}
