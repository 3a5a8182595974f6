//! Typed decoding of a `serde_json::Value` that reports *where* a value is malformed.
//!
//! serde's own messages ("invalid type: string \"four\", expected i32") say what is wrong but
//! not where. This deserializer walks the value itself and records the path of the innermost
//! value whose decoding failed, so the loader can say
//! `spec.minMember: invalid type: string "four", expected i32`.
//!
//! It is a plain `serde_json::Value` deserializer with one addition: every error is stamped
//! with the path of the deepest value that produced it (errors bubble outwards, and an error
//! that already has a path keeps it).

use std::fmt;

use serde::Deserializer;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use serde_json::{Number, Value};

/// A decoding error and the field it concerns.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// `spec.containers[0].resources`, or empty for the object itself.
    pub path: String,
    pub message: String,
    located: bool,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DecodeError {
            path: String::new(),
            message: msg.to_string(),
            located: false,
        }
    }
}

/// Decodes `value` as `T`, naming the offending field on failure.
pub fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, DecodeError> {
    T::deserialize(ValueDe {
        value,
        path: Path::Root,
    })
}

/// Where a value sits in the object; borrowed from the callers' stack frames, rendered only
/// when an error needs it.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Key(parent, key) => {
                parent.fmt(f)?;
                if is_plain_key(key) {
                    if !matches!(parent, Path::Root) {
                        f.write_str(".")?;
                    }
                    f.write_str(key)
                } else {
                    // Label keys such as `app.kubernetes.io/name` would be ambiguous after a dot.
                    write!(f, "[{}]", Value::String((*key).to_string()))
                }
            }
            Path::Index(parent, index) => {
                parent.fmt(f)?;
                write!(f, "[{index}]")
            }
        }
    }
}

/// A key that reads unambiguously after a dot.
pub(crate) fn is_plain_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn locate(mut err: DecodeError, path: &Path<'_>) -> DecodeError {
    if !err.located {
        err.path = path.to_string();
        err.located = true;
    }
    err
}

struct ValueDe<'p, 'de> {
    value: &'de Value,
    path: Path<'p>,
}

fn visit_number<'de, V: Visitor<'de>>(n: &Number, visitor: V) -> Result<V::Value, DecodeError> {
    if let Some(u) = n.as_u64() {
        visitor.visit_u64(u)
    } else if let Some(i) = n.as_i64() {
        visitor.visit_i64(i)
    } else {
        // serde_json numbers are always one of u64, i64 or a finite f64.
        visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
    }
}

fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Unexpected::Unsigned(u),
            (None, Some(i)) => Unexpected::Signed(i),
            _ => Unexpected::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

impl<'de> Deserializer<'de> for ValueDe<'_, 'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let path = self.path;
        let result = match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => visit_number(n, visitor),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => {
                let mut access = SeqDe {
                    items: items.iter(),
                    index: 0,
                    path,
                };
                let out = visitor.visit_seq(&mut access);
                out.and_then(|v| match access.items.len() {
                    0 => Ok(v),
                    left => Err(de::Error::invalid_length(
                        access.index + left,
                        &"fewer elements in the list",
                    )),
                })
            }
            Value::Object(map) => {
                let mut access = MapDe {
                    entries: map.iter(),
                    pending: None,
                    path,
                };
                visitor.visit_map(&mut access)
            }
        };
        result.map_err(|e| locate(e, &path))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let path = self.path;
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
        .map_err(|e| locate(e, &path))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let path = self.path;
        visitor
            .visit_newtype_struct(self)
            .map_err(|e| locate(e, &path))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let path = self.path;
        let result = match self.value {
            Value::String(s) => {
                visitor.visit_enum(BorrowedStrDeserializer::<DecodeError>::new(s.as_str()))
            }
            Value::Object(map) if map.len() == 1 => match map.iter().next() {
                Some((variant, value)) => visitor.visit_enum(EnumDe {
                    variant,
                    value,
                    path,
                }),
                None => Err(de::Error::invalid_value(
                    Unexpected::Map,
                    &"a single-key map",
                )),
            },
            other => Err(de::Error::invalid_type(
                unexpected(other),
                &"a string or a single-key map",
            )),
        };
        result.map_err(|e| locate(e, &path))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

struct SeqDe<'p, 'de> {
    items: std::slice::Iter<'de, Value>,
    index: usize,
    path: Path<'p>,
}

impl<'de> SeqAccess<'de> for SeqDe<'_, 'de> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        let Some(value) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(ValueDe {
            value,
            path: Path::Index(&self.path, index),
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct MapDe<'p, 'de> {
    entries: serde_json::map::Iter<'de>,
    pending: Option<(&'de str, &'de Value)>,
    path: Path<'p>,
}

impl<'de> MapAccess<'de> for MapDe<'_, 'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.pending = Some((key.as_str(), value));
        seed.deserialize(BorrowedStrDeserializer::new(key.as_str()))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let Some((key, value)) = self.pending.take() else {
            return Err(de::Error::custom(
                "a map value was requested before its key",
            ));
        };
        seed.deserialize(ValueDe {
            value,
            path: Path::Key(&self.path, key),
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

struct EnumDe<'p, 'de> {
    variant: &'de str,
    value: &'de Value,
    path: Path<'p>,
}

impl<'p, 'de> EnumAccess<'de> for EnumDe<'p, 'de> {
    type Error = DecodeError;
    type Variant = ValueDe<'p, 'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), DecodeError> {
        let variant = seed.deserialize(BorrowedStrDeserializer::new(self.variant))?;
        // The variant's content sits one level down, under the variant name. The path
        // segments borrow from the caller, so the content keeps the enum's own path.
        Ok((
            variant,
            ValueDe {
                value: self.value,
                path: self.path,
            },
        ))
    }
}

impl<'de> VariantAccess<'de> for ValueDe<'_, 'de> {
    type Error = DecodeError;

    fn unit_variant(self) -> Result<(), DecodeError> {
        match self.value {
            Value::Null => Ok(()),
            other => Err(de::Error::invalid_type(
                unexpected(other),
                &"a unit variant",
            )),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, DecodeError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_any(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_any(visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::Pod;
    use serde::Deserialize;
    use serde_json::json;

    #[test]
    fn decodes_a_valid_pod() {
        let pod: Pod = decode(&json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app.kubernetes.io/name": "x"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 2, "memory": "1Gi"}}}]}
        }))
        .expect("valid pod");
        assert_eq!(pod.metadata.name.as_deref(), Some("p"));
        let req = pod.spec.expect("spec").containers[0]
            .resources
            .clone()
            .and_then(|r| r.requests)
            .expect("requests");
        assert_eq!(req["cpu"].0, "2");
    }

    #[test]
    fn type_error_names_the_nested_field() {
        let err = decode::<Pod>(&json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}, {"name": 7}]}
        }))
        .expect_err("name must be a string");
        assert_eq!(err.path, "spec.containers[1].name");
        assert!(err.message.contains("invalid type: integer `7`"), "{err}");
        assert_eq!(
            err.to_string(),
            format!("spec.containers[1].name: {}", err.message)
        );
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Item {
        name: String,
        #[serde(default)]
        size: u32,
    }

    #[test]
    fn missing_field_is_reported_at_its_object() {
        let err =
            decode::<BTreeMap<String, Vec<Item>>>(&json!({"items": [{"name": "a"}, {"size": 2}]}))
                .expect_err("name is required");
        assert_eq!(err.path, "items[1]");
        assert_eq!(err.message, "missing field `name`");
        // k8s-openapi fills in absent required fields, as Go does.
        let pod: Pod = decode(&json!({"spec": {"containers": [{"image": "x"}]}})).expect("lenient");
        assert_eq!(pod.spec.expect("spec").containers[0].name, "");
    }

    #[test]
    fn odd_keys_are_quoted() {
        let err = decode::<Pod>(
            &json!({"metadata": {"name": "p", "labels": {"app.kubernetes.io/name": true}}}),
        )
        .expect_err("label values are strings");
        assert_eq!(err.path, r#"metadata.labels["app.kubernetes.io/name"]"#);
    }

    #[test]
    fn bad_timestamp_and_api_version_are_located() {
        let err =
            decode::<Pod>(&json!({"metadata": {"name": "p", "creationTimestamp": "yesterday"}}))
                .expect_err("not RFC 3339");
        assert_eq!(err.path, "metadata.creationTimestamp");
        let err = decode::<Pod>(&json!({"apiVersion": "v2", "metadata": {"name": "p"}}))
            .expect_err("wrong apiVersion");
        assert_eq!(err.path, "");
        assert!(err.message.contains("v2"), "{err}");
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Shape {
        Dot,
        Square(u32),
        Rect { w: u32, h: u32 },
    }

    #[test]
    fn enums_options_and_tuples() {
        assert_eq!(decode::<Shape>(&json!("Dot")), Ok(Shape::Dot));
        assert_eq!(decode::<Shape>(&json!({"Square": 3})), Ok(Shape::Square(3)));
        assert_eq!(
            decode::<Shape>(&json!({"Rect": {"w": 1, "h": 2}})),
            Ok(Shape::Rect { w: 1, h: 2 })
        );
        let err = decode::<Shape>(&json!("Circle")).expect_err("unknown variant");
        assert!(err.message.contains("unknown variant `Circle`"), "{err}");
        assert_eq!(decode::<Option<i32>>(&json!(null)), Ok(None));
        assert_eq!(decode::<Option<i32>>(&json!(-4)), Ok(Some(-4)));
        let err = decode::<(u8, u8)>(&json!([1, 2, 3])).expect_err("too long");
        assert!(err.message.contains("invalid length 3"), "{err}");
        let err = decode::<Vec<u8>>(&json!([1, 300])).expect_err("out of range");
        assert_eq!(err.path, "[1]");
    }
}
