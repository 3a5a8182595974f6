//! Serde helpers shared by the PodGroup and Queue types.
//!
//! Two concerns live here:
//!
//! * Go's `encoding/json` semantics for plain (non-pointer) fields: `omitempty` drops zero values
//!   on output, and a JSON `null` decodes to the zero value instead of failing. The `is_zero` /
//!   `null_as_default` helpers reproduce both so that our output matches Volcano's byte for byte
//!   and anything Volcano accepts, we accept.
//! * The `apiVersion` / `kind` envelope of a top-level object (spec/kubernetes.md §5): always
//!   written, optional when read (list items and some fixtures omit them), checked when present.

use k8s_openapi::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Deserializer, Serialize};

/// `skip_serializing_if` predicate for Go `omitempty` integers.
pub(crate) fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// [`is_zero`] for Go `int` fields, which are 64 bits here.
pub(crate) fn is_zero_i64(value: &i64) -> bool {
    *value == 0
}

/// Decodes `null` (or a missing field, together with `#[serde(default)]`) as the type's default,
/// as Go does for non-pointer fields.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Borrowed view of a top-level object, used to serialise it with its type information.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvelopeRef<'a, Spec, Status> {
    pub(crate) api_version: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) metadata: &'a ObjectMeta,
    pub(crate) spec: &'a Spec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<&'a Status>,
}

impl<'a, Spec, Status> EnvelopeRef<'a, Spec, Status> {
    pub(crate) fn new<R: Resource>(
        metadata: &'a ObjectMeta,
        spec: &'a Spec,
        status: Option<&'a Status>,
    ) -> Self {
        Self {
            api_version: R::API_VERSION,
            kind: R::KIND,
            metadata,
            spec,
            status,
        }
    }
}

/// Owned form of a top-level object as read from the wire.
#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(deserialize = "Spec: Deserialize<'de> + Default, Status: Deserialize<'de>")
)]
pub(crate) struct Envelope<Spec, Status> {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default, deserialize_with = "crate::lean_meta::lean_object_meta")]
    metadata: ObjectMeta,
    #[serde(default, deserialize_with = "null_as_default")]
    spec: Spec,
    #[serde(default)]
    status: Option<Status>,
}

impl<Spec, Status> Envelope<Spec, Status> {
    /// Rejects a document whose `apiVersion` or `kind` names another resource, so that a Queue
    /// is never silently read as a PodGroup; returns metadata, spec and status.
    pub(crate) fn into_parts<R: Resource, E: serde::de::Error>(
        self,
    ) -> Result<(ObjectMeta, Spec, Option<Status>), E> {
        if let Some(api_version) = &self.api_version
            && api_version != R::API_VERSION
        {
            return Err(E::invalid_value(
                serde::de::Unexpected::Str(api_version),
                &R::API_VERSION,
            ));
        }
        if let Some(kind) = &self.kind
            && kind != R::KIND
        {
            return Err(E::invalid_value(serde::de::Unexpected::Str(kind), &R::KIND));
        }
        Ok((self.metadata, self.spec, self.status))
    }
}

/// Deserialises a top-level object of resource `R` into its parts.
pub(crate) fn deserialize_object<'de, R, Spec, Status, D>(
    deserializer: D,
) -> Result<(ObjectMeta, Spec, Option<Status>), D::Error>
where
    R: Resource,
    Spec: Deserialize<'de> + Default,
    Status: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Envelope::<Spec, Status>::deserialize(deserializer)?.into_parts::<R, D::Error>()
}

/// The Kubernetes resource traits and the enveloped serde of a top-level object with
/// `metadata`, `spec` and an optional `status`: `object_traits!(Type, api_version, group,
/// version, kind, plural, scope)`.
macro_rules! object_traits {
    ($ty:ty, $api_version:expr, $group:expr, $version:expr, $kind:literal, $plural:literal, $scope:ty) => {
        impl k8s_openapi::Resource for $ty {
            const API_VERSION: &'static str = $api_version;
            const GROUP: &'static str = $group;
            const KIND: &'static str = $kind;
            const VERSION: &'static str = $version;
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = $scope;
        }

        impl k8s_openapi::ListableResource for $ty {
            const LIST_KIND: &'static str = concat!($kind, "List");
        }

        impl k8s_openapi::Metadata for $ty {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(
                    &$crate::serde_util::EnvelopeRef::new::<Self>(
                        &self.metadata,
                        &self.spec,
                        self.status.as_ref(),
                    ),
                    serializer,
                )
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let (metadata, spec, status) =
                    $crate::serde_util::deserialize_object::<Self, _, _, _>(deserializer)?;
                Ok(Self {
                    metadata,
                    spec,
                    status,
                })
            }
        }
    };
}
pub(crate) use object_traits;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Plain {
        #[serde(default, deserialize_with = "null_as_default")]
        name: String,
        #[serde(default, deserialize_with = "null_as_default")]
        count: i32,
    }

    #[test]
    fn null_and_missing_decode_as_zero_values() {
        let from_null: Plain =
            serde_json::from_str(r#"{"name": null, "count": null}"#).expect("valid json");
        assert_eq!(from_null, Plain::default());
        let from_missing: Plain = serde_json::from_str("{}").expect("valid json");
        assert_eq!(from_missing, Plain::default());
        let set: Plain = serde_json::from_str(r#"{"name": "a", "count": 3}"#).expect("valid json");
        assert_eq!(
            set,
            Plain {
                name: "a".to_owned(),
                count: 3
            }
        );
    }

    #[test]
    fn is_zero_matches_go_omitempty() {
        assert!(is_zero(&0));
        assert!(!is_zero(&-1));
        assert!(!is_zero(&7));
    }
}
