//! The engine's only door to YAML: configuration text in, [`ArgValue`] trees out, and back.
//!
//! Everything else in the engine works on [`ArgValue`], so the parser can change without touching
//! a plugin. The parser is serde-saphyr, set up to read scalars as Volcano's YAML 1.1 decoder
//! does (spec `framework.md` §1.2):
//!
//! * `yes/no/on/off/y/n` in any of their three casings are booleans when plain; quoted they stay
//!   strings;
//! * `012` is octal, `0x1F` hex, `0b101` binary, `1_000` an integer with separators, `08` a float
//!   (Go's integer parse fails, its float parse succeeds); `1:30` stays a string (no sexagesimal);
//! * `.inf` and `.nan` are floats, as in Go;
//! * `<<` merge keys are expanded, application tags (`!foo`) are ignored, duplicate keys are
//!   refused, and nesting deeper than [`super::MAX_DEPTH`] is refused.
//!
//! Volcano decodes some fields as strings (names, `actions`, argument names) and reads a plain
//! scalar there as its literal text: `name: 012` is `"012"`, an argument named `Off` is `"Off"`.
//! [`Node`] keeps that literal beside the typed value for every scalar.

use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_saphyr::Spanned;
use std::fmt;

use super::ArgValue;

fn options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = super::MAX_DEPTH;
    serde_saphyr::options! {
        budget: Some(budget),
        legacy_octal_numbers: true,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::PassThrough,
        with_snippet: false,
    }
}

/// A parsed document node: scalars typed as Volcano types `interface{}` fields, each with the
/// literal text it was written as.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    Scalar { value: ArgValue, literal: String },
    List(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// The typed value, as plugins see it.
    pub(crate) fn value(&self) -> ArgValue {
        match self {
            Node::Scalar { value, .. } => value.clone(),
            Node::List(items) => ArgValue::List(items.iter().map(Node::value).collect()),
            Node::Map(entries) => ArgValue::Map(
                entries
                    .iter()
                    .map(|(k, v)| (k.value(), v.value()))
                    .collect(),
            ),
        }
    }

    /// The text a string field reads: a string as itself, another scalar as written, null as
    /// the empty string; `None` for lists and mappings.
    pub(crate) fn text(&self) -> Option<String> {
        match self {
            Node::Scalar { value, literal } => Some(match value {
                ArgValue::Str(s) => s.clone(),
                ArgValue::Null => String::new(),
                _ => literal.clone(),
            }),
            Node::List(_) | Node::Map(_) => None,
        }
    }

    /// A short description for error messages: `"maybe"`, `5`, `a list`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Node::Scalar { value, .. } => value.describe(),
            Node::List(_) => "a list".to_owned(),
            Node::Map(_) => "a mapping".to_owned(),
        }
    }

    pub(crate) fn is_null(&self) -> bool {
        matches!(
            self,
            Node::Scalar {
                value: ArgValue::Null,
                ..
            }
        )
    }
}

/// Parses one YAML document (empty text is null). The error is one line, with its position.
pub(crate) fn parse_document(text: &str) -> Result<Node, String> {
    serde_saphyr::from_str_with_options::<Spanned<Raw>>(text, options())
        .map(|raw| located(raw, text))
        .map_err(|e| first_line(&e.to_string()))
}

/// Attaches the literal text of each scalar, cut from the source by its span (where it was
/// defined, so an alias reads as its anchor's text).
fn located(raw: Spanned<Raw>, text: &str) -> Node {
    match raw.value {
        Raw::Scalar(value) => {
            let span = raw.defined.span();
            let literal = span
                .byte_offset()
                .zip(span.byte_len())
                .and_then(|(start, len)| {
                    let start = usize::try_from(start).ok()?;
                    let end = start.checked_add(usize::try_from(len).ok()?)?;
                    text.get(start..end)
                })
                .map_or_else(|| value.to_string(), str::to_owned);
            Node::Scalar { value, literal }
        }
        Raw::List(items) => Node::List(items.into_iter().map(|i| located(i, text)).collect()),
        Raw::Map(entries) => Node::Map(
            entries
                .into_iter()
                .map(|(k, v)| (located(k, text), located(v, text)))
                .collect(),
        ),
    }
}

/// Renders a value as a YAML document; strings that would read back as something else are
/// quoted, so [`parse_document`] gives the same value back.
pub(crate) fn render(value: &ArgValue) -> String {
    // Writing plain scalars, lists and mappings into a String cannot fail; the fallback only
    // avoids a panic path.
    serde_saphyr::to_string(&NodeRef(value))
        .unwrap_or_else(|e| format!("# cannot render as YAML: {}\n", first_line(&e.to_string())))
}

/// Decodes a value into a typed structure with the same YAML rules as the configuration text.
pub(crate) fn decode<T: DeserializeOwned>(value: &ArgValue) -> Result<T, String> {
    serde_saphyr::from_str_with_options(&render(value), options())
        .map_err(|e| first_line(&e.to_string()))
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or_default().to_owned()
}

/// A node as the parser hands it over, each child with its location.
enum Raw {
    Scalar(ArgValue),
    List(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<Raw>, Spanned<Raw>)>),
}

impl<'de> de::Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> de::Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Scalar(ArgValue::Null))
    }

    fn visit_none<E>(self) -> Result<Raw, E> {
        Ok(Raw::Scalar(ArgValue::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Raw, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Raw, E> {
        Ok(Raw::Scalar(ArgValue::Bool(b)))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Raw, E> {
        Ok(Raw::Scalar(ArgValue::Int(i)))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Raw, E> {
        Ok(Raw::Scalar(
            i64::try_from(u).map_or(ArgValue::Uint(u), ArgValue::Int),
        ))
    }

    fn visit_i128<E>(self, i: i128) -> Result<Raw, E> {
        // Go's decoder falls back to a float for integers beyond 64 bits.
        Ok(Raw::Scalar(
            i64::try_from(i)
                .map(ArgValue::Int)
                .or_else(|_| u64::try_from(i).map(ArgValue::Uint))
                .unwrap_or(ArgValue::Float(i as f64)),
        ))
    }

    fn visit_u128<E>(self, u: u128) -> Result<Raw, E> {
        Ok(Raw::Scalar(
            u64::try_from(u).map_or(ArgValue::Float(u as f64), |u| {
                i64::try_from(u).map_or(ArgValue::Uint(u), ArgValue::Int)
            }),
        ))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Raw, E> {
        Ok(Raw::Scalar(ArgValue::Float(f)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Raw, E> {
        Ok(Raw::Scalar(ArgValue::Str(s.to_owned())))
    }

    fn visit_string<E>(self, s: String) -> Result<Raw, E> {
        Ok(Raw::Scalar(ArgValue::Str(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Raw::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
        while let Some(key) = map.next_key()? {
            let value = map.next_value()?;
            entries.push((key, value));
        }
        Ok(Raw::Map(entries))
    }
}

/// An [`ArgValue`] seen through serde, for writing.
struct NodeRef<'v>(&'v ArgValue);

impl serde::Serialize for NodeRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ArgValue::Null => serializer.serialize_unit(),
            ArgValue::Bool(b) => serializer.serialize_bool(*b),
            ArgValue::Int(i) => serializer.serialize_i64(*i),
            ArgValue::Uint(u) => serializer.serialize_u64(*u),
            ArgValue::Float(f) => serializer.serialize_f64(*f),
            ArgValue::Str(s) => serializer.serialize_str(s),
            ArgValue::List(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&NodeRef(item))?;
                }
                seq.end()
            }
            ArgValue::Map(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(&NodeRef(key), &NodeRef(value))?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(text: &str) -> ArgValue {
        parse_document(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .value()
    }

    #[test]
    fn scalars_are_typed_as_go_yaml_types_them() {
        let cases = [
            ("yes", ArgValue::Bool(true)),
            ("Off", ArgValue::Bool(false)),
            ("'yes'", ArgValue::Str("yes".into())),
            ("\"true\"", ArgValue::Str("true".into())),
            ("012", ArgValue::Int(10)),
            ("08", ArgValue::Float(8.0)),
            ("0x1F", ArgValue::Int(31)),
            ("1_000", ArgValue::Int(1000)),
            ("1:30", ArgValue::Str("1:30".into())),
            ("-5", ArgValue::Int(-5)),
            ("18446744073709551615", ArgValue::Uint(u64::MAX)),
            ("1.5", ArgValue::Float(1.5)),
            (".inf", ArgValue::Float(f64::INFINITY)),
            ("~", ArgValue::Null),
            ("", ArgValue::Null),
            ("!custom allocate", ArgValue::Str("allocate".into())),
        ];
        for (text, expected) in cases {
            assert_eq!(scalar(text), expected, "{text}");
        }
        assert!(matches!(scalar(".nan"), ArgValue::Float(f) if f.is_nan()));
    }

    #[test]
    fn merge_keys_are_expanded_and_bad_documents_refused() {
        let value = scalar("base: &b {x: 1}\nm:\n  <<: *b\n  z: 2\n");
        assert_eq!(
            value.get("m").and_then(|m| m.get("x")),
            Some(&ArgValue::Int(1))
        );
        for bad in [
            "a: 1\na: 2\n",
            "a: [\n",
            "a: 1\n---\nb: 2\n",
            "a: *nowhere\n",
        ] {
            let error = parse_document(bad).expect_err(bad);
            assert!(!error.contains('\n'), "{error}");
            assert!(error.contains("line"), "{error}");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse_document(&deep).is_err());
    }

    /// The parser recurses once per level, with large frames in debug builds: the deepest
    /// document it accepts must fit the 2 MiB stack of a spawned thread.
    #[test]
    fn the_deepest_accepted_document_fits_a_default_thread_stack() {
        let depth = crate::conf::MAX_DEPTH;
        let within = "[".repeat(depth) + &"]".repeat(depth);
        let parsed = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || parse_document(&within).is_ok())
            .expect("thread")
            .join();
        assert_eq!(parsed.ok(), Some(true));
        let beyond = "[".repeat(depth + 1) + &"]".repeat(depth + 1);
        assert!(parse_document(&beyond).is_err());
    }

    #[test]
    fn rendering_quotes_what_would_read_back_differently() {
        let value = ArgValue::Map(
            [
                "yes", "012", "1_000", "", "~", "null", "1.5", "true", "a: b", "n",
            ]
            .into_iter()
            .map(|s| (ArgValue::Str(s.into()), ArgValue::Str(s.into())))
            .chain([
                (ArgValue::Int(3), ArgValue::Float(f64::NEG_INFINITY)),
                (
                    ArgValue::List(vec![ArgValue::Null]),
                    ArgValue::Uint(u64::MAX),
                ),
                (ArgValue::Str("e".into()), ArgValue::Map(Vec::new())),
            ])
            .collect(),
        );
        assert_eq!(scalar(&render(&value)), value, "{}", render(&value));
    }

    #[test]
    fn decoding_uses_the_same_rules() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Weights {
            cpu: f64,
            names: Vec<String>,
        }
        let value = scalar("{cpu: 2, names: [a, 'yes']}");
        assert_eq!(
            decode::<Weights>(&value),
            Ok(Weights {
                cpu: 2.0,
                names: vec!["a".into(), "yes".into()],
            })
        );
        assert!(decode::<Weights>(&scalar("{cpu: x}")).is_err());
    }
}
