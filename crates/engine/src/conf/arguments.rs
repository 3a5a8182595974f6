//! Typed plugin and action arguments (spec `framework.md` §1.5, `plugins-core.md` §0.3).
//!
//! Volcano decodes every `arguments:` block with a YAML 1.1 decoder into a map of dynamically typed
//! values and offers accessors that overwrite a destination only when the key is present *and* has
//! the expected type. [`Arguments`] keeps the same dynamic typing in [`ArgValue`]; the accessors
//! return `Ok(true)` when they set the destination, `Ok(false)` when the key is missing and an
//! [`ArgError`] (destination unchanged) when the value has the wrong type. Volcano logs a warning in
//! that last case and keeps the default; here the caller decides how to report it.
//!
//! Scalar typing is Volcano's YAML 1.1 typing, done by the parser (see [`super::yaml`]):
//! integers become [`ArgValue::Int`] (or [`ArgValue::Uint`] above `i64::MAX`), floats
//! [`ArgValue::Float`], the plain boolean words [`ArgValue::Bool`], `~`/`null`/empty
//! [`ArgValue::Null`], lists [`ArgValue::List`] and nested mappings [`ArgValue::Map`] with their
//! keys typed the same way (document order kept). Top-level argument keys are always strings: a
//! non-string scalar key is taken as its text, as Volcano's decoder does for
//! `map[string]interface{}`.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::DeserializeOwned;

use super::ConfError;
use super::values::quoted;
use super::yaml::{self, Node};

/// The arguments of one plugin option or one action configuration, keyed by argument name.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Arguments(BTreeMap<String, ArgValue>);

/// One dynamically typed argument value (see the module documentation for the typing rules).
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer above `i64::MAX`; Volcano's integer and float accessors reject it.
    Uint(u64),
    Float(f64),
    Str(String),
    List(Vec<ArgValue>),
    /// A nested mapping, in document order.
    Map(Vec<(ArgValue, ArgValue)>),
}

/// A present argument whose value could not be converted to the requested type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("argument {key}: {message}")]
pub struct ArgError {
    pub key: String,
    pub message: String,
}

impl ArgError {
    fn wrong_type(key: &str, expected: &str, found: &ArgValue) -> Self {
        let why = match found {
            ArgValue::Uint(_) => " (too large for a 64-bit integer)",
            _ => "",
        };
        ArgError {
            key: key.to_owned(),
            message: format!("expected {expected}, found {}{why}", found.describe()),
        }
    }
}

impl Arguments {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds arguments from literal pairs; a later duplicate key replaces an earlier one.
    pub fn from_pairs(pairs: &[(&str, ArgValue)]) -> Self {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), value.clone()))
            .collect()
    }

    /// Sets `key`, returning the previous value.
    pub fn insert(&mut self, key: impl Into<String>, value: ArgValue) -> Option<ArgValue> {
        self.0.insert(key.into(), value)
    }

    pub fn get(&self, key: &str) -> Option<&ArgValue> {
        self.0.get(key)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Iterates in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &ArgValue)> {
        self.0.iter()
    }

    /// Volcano's `GetInt`: only an integer is accepted (a float such as `1.0` or a string `"5"` is
    /// rejected, and so is an integer above `i64::MAX`).
    pub fn get_int(&self, key: &str, dst: &mut i64) -> Result<bool, ArgError> {
        let Some(value) = self.get(key) else {
            return Ok(false);
        };
        match value {
            ArgValue::Int(i) => {
                *dst = *i;
                Ok(true)
            }
            other => Err(ArgError::wrong_type(key, "an integer", other)),
        }
    }

    /// Volcano's `GetFloat64`: a float, or an integer converted to a float.
    pub fn get_float(&self, key: &str, dst: &mut f64) -> Result<bool, ArgError> {
        let Some(value) = self.get(key) else {
            return Ok(false);
        };
        match value {
            ArgValue::Float(f) => {
                *dst = *f;
                Ok(true)
            }
            // Precision loss above 2^53 is what Go's float64(int) does as well.
            ArgValue::Int(i) => {
                *dst = *i as f64;
                Ok(true)
            }
            other => Err(ArgError::wrong_type(key, "a number", other)),
        }
    }

    /// Volcano's `GetBool`: a boolean, or a string accepted by Go's `strconv.ParseBool`
    /// (`1 t T TRUE true True 0 f F FALSE false False`).
    pub fn get_bool(&self, key: &str, dst: &mut bool) -> Result<bool, ArgError> {
        let Some(value) = self.get(key) else {
            return Ok(false);
        };
        let parsed = match value {
            ArgValue::Bool(b) => Some(*b),
            ArgValue::Str(s) => go_parse_bool(s),
            _ => None,
        };
        match parsed {
            Some(b) => {
                *dst = b;
                Ok(true)
            }
            None => Err(ArgError::wrong_type(key, "a boolean", value)),
        }
    }

    /// Volcano's `GetString`: only a string is accepted.
    pub fn get_string(&self, key: &str, dst: &mut String) -> Result<bool, ArgError> {
        let Some(value) = self.get(key) else {
            return Ok(false);
        };
        match value {
            ArgValue::Str(s) => {
                dst.clone_from(s);
                Ok(true)
            }
            other => Err(ArgError::wrong_type(key, "a string", other)),
        }
    }

    /// Counterpart of Volcano's generic `Get[T]` for structured arguments: decodes the value of
    /// `key` into `T` with serde. `Ok(None)` when the key is missing.
    ///
    /// Volcano exits the process when this decoding fails; callers that need compatibility should
    /// treat the error as fatal. Decoding follows serde's rules (integers are accepted for float
    /// fields, field names are case-sensitive), which are close to but not identical with
    /// `mapstructure`'s; [`super::go_decode`] follows `mapstructure` exactly.
    pub fn decode<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, ArgError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        yaml::decode(value).map(Some).map_err(|message| ArgError {
            key: key.to_owned(),
            message,
        })
    }

    /// Reads an `arguments:` mapping; `path` names it in errors. `null` is an empty map.
    pub(crate) fn from_node(node: &Node, path: &str) -> Result<Self, ConfError> {
        let entries = match node {
            Node::Map(entries) => entries,
            null if null.is_null() => return Ok(Self::default()),
            other => {
                return Err(ConfError::new(
                    path,
                    format!(
                        "expected a mapping of argument names to values, found {}",
                        other.describe()
                    ),
                ));
            }
        };
        let mut args = Self::default();
        for (key, value) in entries {
            let Some(key) = key.text() else {
                return Err(ConfError::new(
                    path,
                    format!("argument names must be scalars, found {}", key.describe()),
                ));
            };
            args.0.insert(key, value.value());
        }
        Ok(args)
    }

    /// The mapping that [`Arguments::from_node`] reads back into `self`.
    pub(crate) fn to_value(&self) -> ArgValue {
        ArgValue::Map(
            self.0
                .iter()
                .map(|(k, v)| (ArgValue::Str(k.clone()), v.clone()))
                .collect(),
        )
    }
}

impl FromIterator<(String, ArgValue)> for Arguments {
    fn from_iter<I: IntoIterator<Item = (String, ArgValue)>>(iter: I) -> Self {
        Arguments(iter.into_iter().collect())
    }
}

impl<'a> IntoIterator for &'a Arguments {
    type Item = (&'a String, &'a ArgValue);
    type IntoIter = std::collections::btree_map::Iter<'a, String, ArgValue>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl ArgValue {
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ArgValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ArgValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// A float, or an integer converted to a float (the `GetFloat64` rule).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ArgValue::Float(f) => Some(*f),
            ArgValue::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            ArgValue::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[ArgValue]> {
        match self {
            ArgValue::List(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(ArgValue, ArgValue)]> {
        match self {
            ArgValue::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// Looks up a string key in a nested mapping (first match).
    pub fn get(&self, key: &str) -> Option<&ArgValue> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// Short human description used in error messages, e.g. `"abc"`, `1.5`, `a list`.
    pub fn describe(&self) -> String {
        match self {
            ArgValue::List(_) => "a list".to_owned(),
            ArgValue::Map(_) => "a mapping".to_owned(),
            ArgValue::Str(s) => quoted(s),
            scalar => scalar.to_string(),
        }
    }

    /// The literal text of a scalar (null is the empty string); `None` for lists and mappings.
    pub fn scalar_text(&self) -> Option<String> {
        match self {
            ArgValue::Null => Some(String::new()),
            ArgValue::Str(s) => Some(s.clone()),
            ArgValue::List(_) | ArgValue::Map(_) => None,
            scalar => Some(scalar.to_string()),
        }
    }
}

impl fmt::Display for ArgValue {
    /// Renders the value as compact YAML-like text (flow style for collections).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgValue::Null => f.write_str("null"),
            ArgValue::Bool(b) => write!(f, "{b}"),
            ArgValue::Int(i) => write!(f, "{i}"),
            ArgValue::Uint(u) => write!(f, "{u}"),
            ArgValue::Float(x) => write!(f, "{x:?}"),
            ArgValue::Str(s) => f.write_str(s),
            ArgValue::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            ArgValue::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

impl From<bool> for ArgValue {
    fn from(b: bool) -> Self {
        ArgValue::Bool(b)
    }
}

impl From<i64> for ArgValue {
    fn from(i: i64) -> Self {
        ArgValue::Int(i)
    }
}

impl From<f64> for ArgValue {
    fn from(f: f64) -> Self {
        ArgValue::Float(f)
    }
}

impl From<&str> for ArgValue {
    fn from(s: &str) -> Self {
        ArgValue::Str(s.to_owned())
    }
}

impl From<String> for ArgValue {
    fn from(s: String) -> Self {
        ArgValue::Str(s)
    }
}

/// Go's `strconv.ParseBool`.
fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(text: &str) -> Node {
        yaml::parse_document(text).expect("test YAML is valid")
    }

    fn args_from(text: &str) -> Arguments {
        Arguments::from_node(&node(text), "arguments").expect("test arguments are valid")
    }

    #[test]
    fn scalar_typing_follows_yaml_1_1() {
        let args = args_from(
            "i: 10\nneg: -3\nhex: 0x1F\nbig: 18446744073709551615\nf: 0.5\ne: 1e3\n\
             t: true\ny: yes\nOff: Off\nq: \"true\"\ns: text\nn: ~\nempty:\noct: 012\n\
             list: [1, a]\nmap: {nvidia.com/gpu: {weight: 5}}\n7: seven\n012: twelve\n",
        );
        assert_eq!(args.get("i"), Some(&ArgValue::Int(10)));
        assert_eq!(args.get("neg"), Some(&ArgValue::Int(-3)));
        assert_eq!(args.get("hex"), Some(&ArgValue::Int(31)));
        assert_eq!(args.get("big"), Some(&ArgValue::Uint(u64::MAX)));
        assert_eq!(args.get("f"), Some(&ArgValue::Float(0.5)));
        assert_eq!(args.get("e"), Some(&ArgValue::Float(1000.0)));
        assert_eq!(args.get("t"), Some(&ArgValue::Bool(true)));
        assert_eq!(args.get("y"), Some(&ArgValue::Bool(true)));
        // The key is its literal text at the top level even though `Off` is a YAML 1.1 boolean
        // word (and `012` an octal number).
        assert_eq!(args.get("Off"), Some(&ArgValue::Bool(false)));
        assert_eq!(args.get("012"), Some(&ArgValue::Str("twelve".into())));
        assert_eq!(args.get("q"), Some(&ArgValue::Str("true".into())));
        assert_eq!(args.get("s"), Some(&ArgValue::Str("text".into())));
        assert_eq!(args.get("n"), Some(&ArgValue::Null));
        assert_eq!(args.get("empty"), Some(&ArgValue::Null));
        // Octal, as Go's YAML 1.1 decoder reads it.
        assert_eq!(args.get("oct"), Some(&ArgValue::Int(10)));
        assert_eq!(
            args.get("list"),
            Some(&ArgValue::List(vec![ArgValue::Int(1), "a".into()]))
        );
        assert_eq!(args.get("7"), Some(&ArgValue::Str("seven".into())));
        let weight = args
            .get("map")
            .and_then(|m| m.get("nvidia.com/gpu"))
            .and_then(|g| g.get("weight"));
        assert_eq!(weight, Some(&ArgValue::Int(5)));
    }

    #[test]
    fn get_int_accepts_only_integers() {
        let args = args_from("a: 5\nb: 1.0\nc: \"5\"\nd: true\nbig: 18446744073709551615\n");
        let mut dst = 42;
        assert_eq!(args.get_int("a", &mut dst), Ok(true));
        assert_eq!(dst, 5);
        for key in ["b", "c", "d", "big"] {
            let mut dst = 42;
            let err = args.get_int(key, &mut dst).expect_err(key);
            assert_eq!(err.key, key);
            assert_eq!(dst, 42, "destination must keep its default for {key}");
        }
        assert_eq!(
            args.get_int("b", &mut dst).map_err(|e| e.to_string()),
            Err("argument b: expected an integer, found 1.0".to_owned())
        );
        let mut dst = 42;
        assert_eq!(args.get_int("missing", &mut dst), Ok(false));
        assert_eq!(dst, 42);
    }

    #[test]
    fn get_float_accepts_floats_and_integers() {
        let args = args_from("f: 1.5\ni: 3\ns: \"1.5\"\nbig: 18446744073709551615\n");
        let mut dst = 0.0;
        assert_eq!(args.get_float("f", &mut dst), Ok(true));
        assert_eq!(dst, 1.5);
        assert_eq!(args.get_float("i", &mut dst), Ok(true));
        assert_eq!(dst, 3.0);
        assert!(args.get_float("s", &mut dst).is_err());
        assert!(args.get_float("big", &mut dst).is_err());
        assert_eq!(dst, 3.0);
        assert_eq!(args.get_float("missing", &mut dst), Ok(false));
    }

    #[test]
    fn get_bool_accepts_booleans_and_go_parse_bool_strings() {
        let args = args_from(
            "b: false\nword: on\ns1: \"1\"\nsT: \"T\"\nsFalse: \"False\"\nbad: \"maybe\"\nint: 1\n",
        );
        let mut dst = true;
        assert_eq!(args.get_bool("b", &mut dst), Ok(true));
        assert!(!dst);
        assert_eq!(args.get_bool("word", &mut dst), Ok(true));
        assert!(dst);
        assert_eq!(args.get_bool("sFalse", &mut dst), Ok(true));
        assert!(!dst);
        assert_eq!(args.get_bool("s1", &mut dst), Ok(true));
        assert!(dst);
        assert_eq!(args.get_bool("sT", &mut dst), Ok(true));
        assert!(dst);
        assert!(args.get_bool("bad", &mut dst).is_err());
        assert!(args.get_bool("int", &mut dst).is_err());
        assert!(dst);
        assert_eq!(args.get_bool("missing", &mut dst), Ok(false));
    }

    #[test]
    fn get_string_accepts_only_strings() {
        let args = args_from("s: hello\nn: 5\n");
        let mut dst = String::from("default");
        assert_eq!(args.get_string("n", &mut dst).map_err(|e| e.message), {
            Err("expected a string, found 5".to_owned())
        });
        assert_eq!(dst, "default");
        assert_eq!(args.get_string("s", &mut dst), Ok(true));
        assert_eq!(dst, "hello");
        assert_eq!(args.get_string("missing", &mut dst), Ok(false));
    }

    #[test]
    fn decode_reads_structured_arguments_and_reports_failures() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Weighted {
            #[serde(rename = "type")]
            kind: String,
            weight: f64,
        }
        let args = args_from("res: {type: MostAllocated, weight: 5}\nbad: {type: 1}\n");
        assert_eq!(
            args.decode::<Weighted>("res"),
            Ok(Some(Weighted {
                kind: "MostAllocated".into(),
                weight: 5.0
            }))
        );
        assert_eq!(args.decode::<Weighted>("missing"), Ok(None));
        let err = args.decode::<Weighted>("bad").expect_err("wrong shape");
        assert_eq!(err.key, "bad");
    }

    #[test]
    fn non_mapping_arguments_and_complex_keys_are_errors() {
        let err = Arguments::from_node(&node("[a, b]"), "tiers[0].plugins[0].arguments")
            .expect_err("list");
        assert_eq!(err.path, "tiers[0].plugins[0].arguments");
        assert!(err.message.contains("found a list"), "{}", err.message);

        assert!(Arguments::from_node(&node("? [a]\n: 1\n"), "arguments").is_err());
        assert_eq!(
            Arguments::from_node(&node("~"), "arguments"),
            Ok(Arguments::new())
        );
    }

    #[test]
    fn yaml_conversion_round_trips() {
        let args =
            args_from("a: 1\nb: [x, 2.5, ~]\nc: {k: {d: true}, 3: v}\nbig: 18446744073709551615\n");
        let text = yaml::render(&args.to_value());
        let back = Arguments::from_node(&node(&text), "arguments").expect("round trip");
        assert_eq!(back, args);
    }

    #[test]
    fn from_pairs_and_display() {
        let args = Arguments::from_pairs(&[
            ("a", ArgValue::Int(1)),
            ("b", ArgValue::List(vec![true.into(), "x".into()])),
        ]);
        assert_eq!(args.len(), 2);
        assert!(!args.is_empty());
        let keys: Vec<&String> = args.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(
            args.get("b").map(ToString::to_string),
            Some("[true, x]".into())
        );
        assert_eq!(ArgValue::Float(1.0).describe(), "1.0");
        assert_eq!(ArgValue::Str("x".into()).describe(), "\"x\"");
    }
}
