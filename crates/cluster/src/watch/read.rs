//! PodGroups and Queues as their watches read them: typed straight from the event's JSON, or,
//! when that fails, the object's identity and why.
//!
//! Reading each event into an untyped object first and converting it (what a malformed object
//! needs, to be named in the warning) built every PodGroup three times: as a JSON tree, its
//! metadata again as JSON, then the typed object. The event's object is kept as its raw text
//! instead, parsed typed, and only parsed untyped when that fails.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::DynamicObject;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};

/// A custom resource as its watch read it.
#[derive(Clone, Debug)]
pub enum Read<K> {
    Typed(K),
    /// Not a valid `K`: its identity (types and metadata, the rest dropped) and the error.
    Malformed {
        shell: Box<DynamicObject>,
        error: String,
    },
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Read<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        match serde_json::from_str::<K>(raw.get()) {
            Ok(k) => Ok(Read::Typed(k)),
            Err(e) => {
                // Not even an object with metadata: the watch reports it as a decoding error.
                let mut shell: DynamicObject =
                    serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
                shell.data = serde_json::Value::Null;
                shell.metadata.managed_fields = None;
                Ok(Read::Malformed {
                    shell: Box::new(shell),
                    error: e.to_string(),
                })
            }
        }
    }
}

impl<K: Resource> Resource for Read<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        match self {
            Read::Typed(k) => k.meta(),
            Read::Malformed { shell, .. } => &shell.metadata,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Read::Typed(k) => k.meta_mut(),
            Read::Malformed { shell, .. } => &mut shell.metadata,
        }
    }
}
