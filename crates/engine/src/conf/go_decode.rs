//! Structured argument decoding with the rules of Volcano's `framework.Get[T]`, which runs
//! `mapstructure.Decode` without weak typing (spec/plugins-more.md §0.2):
//!
//! * an int field takes an integer, a float (truncated toward zero) or a large unsigned
//!   integer (wrapped, as Go's `int64(uint64)` does); a float field takes any number; a bool
//!   field only a boolean; a string field only a string;
//! * a struct field is found by its Go field name, exactly first, then ignoring case;
//!   unknown keys are ignored;
//! * a map needs string keys (a null key decodes to `""`), and a null element decodes to the
//!   element type's zero value;
//! * a null value leaves the destination untouched.
//!
//! Every mismatch is an error naming the path; the caller decides what to fall back to
//! (Volcano exits the process instead).

use super::ArgValue;

/// A decoding failure, already rendered with the path of the bad value.
pub type DecodeError = String;

fn mismatch(path: &str, expected: &str, found: &ArgValue) -> DecodeError {
    format!("{path}: expected {expected}, found {}", found.describe())
}

/// Go's `int64(f)` on amd64: truncation, with NaN and out-of-range values giving the minimum.
fn go_float_to_int(f: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// An `int` destination; `None` for null.
pub fn int(v: &ArgValue, path: &str) -> Result<Option<i64>, DecodeError> {
    match v {
        ArgValue::Null => Ok(None),
        ArgValue::Int(i) => Ok(Some(*i)),
        // Go converts with wrap-around; the bit pattern is kept on purpose.
        ArgValue::Uint(u) => Ok(Some(*u as i64)),
        ArgValue::Float(f) => Ok(Some(go_float_to_int(*f))),
        other => Err(mismatch(path, "an integer", other)),
    }
}

/// A `float64` destination; `None` for null.
pub fn float(v: &ArgValue, path: &str) -> Result<Option<f64>, DecodeError> {
    match v {
        ArgValue::Null => Ok(None),
        ArgValue::Int(i) => Ok(Some(*i as f64)),
        ArgValue::Uint(u) => Ok(Some(*u as f64)),
        ArgValue::Float(f) => Ok(Some(*f)),
        other => Err(mismatch(path, "a number", other)),
    }
}

/// A `bool` destination; `None` for null.
pub fn boolean(v: &ArgValue, path: &str) -> Result<Option<bool>, DecodeError> {
    match v {
        ArgValue::Null => Ok(None),
        ArgValue::Bool(b) => Ok(Some(*b)),
        other => Err(mismatch(path, "a boolean", other)),
    }
}

/// A `string` destination; `None` for null.
pub fn string(v: &ArgValue, path: &str) -> Result<Option<String>, DecodeError> {
    match v {
        ArgValue::Null => Ok(None),
        ArgValue::Str(s) => Ok(Some(s.clone())),
        other => Err(mismatch(path, "a string", other)),
    }
}

/// A `map[string]T` destination: its entries in document order with decoded keys, each value
/// passed to `elem` with its path. `None` for null.
pub fn map<T>(
    v: &ArgValue,
    path: &str,
    mut elem: impl FnMut(&ArgValue, &str) -> Result<T, DecodeError>,
) -> Result<Option<Vec<(String, T)>>, DecodeError> {
    let entries = match v {
        ArgValue::Null => return Ok(None),
        ArgValue::Map(entries) => entries,
        other => return Err(mismatch(path, "a mapping", other)),
    };
    let mut out = Vec::with_capacity(entries.len());
    for (k, value) in entries {
        let key = match k {
            ArgValue::Null => String::new(),
            ArgValue::Str(s) => s.clone(),
            other => return Err(mismatch(&format!("{path} key"), "a string", other)),
        };
        let item = elem(value, &format!("{path}[{}]", super::shorten(&key)))?;
        out.push((key, item));
    }
    Ok(Some(out))
}

/// The keys of a mapping decoded into a Go struct, with the mapping's path.
pub struct Fields<'a> {
    entries: &'a [(ArgValue, ArgValue)],
    path: &'a str,
}

/// A struct destination; `None` for null.
pub fn fields<'a>(v: &'a ArgValue, path: &'a str) -> Result<Option<Fields<'a>>, DecodeError> {
    match v {
        ArgValue::Null => Ok(None),
        ArgValue::Map(entries) => Ok(Some(Fields { entries, path })),
        other => Err(mismatch(path, "a mapping", other)),
    }
}

impl<'a> Fields<'a> {
    /// The value for Go field `name`: an exact key first, else the first key equal to it under
    /// Go's case folding (Go picks among several such keys in random map order).
    pub fn get(&self, name: &str) -> Option<&'a ArgValue> {
        let keyed = || {
            self.entries
                .iter()
                .filter_map(|(k, v)| Some((k.as_str()?, v)))
        };
        keyed()
            .find(|(k, _)| *k == name)
            .or_else(|| keyed().find(|(k, _)| go_equal_fold(k, name)))
            .map(|(_, v)| v)
    }

    /// Decodes Go field `name` (shown as `key` in errors) with `dec`; `None` when the field is
    /// missing or null.
    pub fn read<T>(
        &self,
        name: &str,
        key: &str,
        dec: impl FnOnce(&ArgValue, &str) -> Result<Option<T>, DecodeError>,
    ) -> Result<Option<T>, DecodeError> {
        match self.get(name) {
            Some(v) => dec(v, &format!("{}.{key}", self.path)),
            None => Ok(None),
        }
    }
}

/// Go's `strings.EqualFold` against an ASCII field name. Besides ASCII case, Unicode folding
/// makes the long s (U+017F) equal to `s` and the Kelvin sign (U+212A) equal to `k`.
fn go_equal_fold(key: &str, field: &str) -> bool {
    let mut key_chars = key.chars();
    for f in field.chars() {
        let Some(c) = key_chars.next() else {
            return false;
        };
        let same = c.eq_ignore_ascii_case(&f)
            || (c == '\u{17F}' && f.eq_ignore_ascii_case(&'s'))
            || (c == '\u{212A}' && f.eq_ignore_ascii_case(&'k'));
        if !same {
            return false;
        }
    }
    key_chars.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, ArgValue)]) -> ArgValue {
        ArgValue::Map(
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn scalars_follow_mapstructure() {
        assert_eq!(int(&ArgValue::Float(3.9), "w"), Ok(Some(3)));
        assert_eq!(int(&ArgValue::Float(-3.9), "w"), Ok(Some(-3)));
        assert_eq!(int(&ArgValue::Uint(u64::MAX), "w"), Ok(Some(-1)));
        assert_eq!(int(&ArgValue::Float(f64::NAN), "w"), Ok(Some(i64::MIN)));
        assert_eq!(int(&ArgValue::Null, "w"), Ok(None));
        assert!(int(&"5".into(), "w").is_err());
        assert!(int(&true.into(), "w").is_err());
        assert_eq!(float(&ArgValue::Int(4), "f"), Ok(Some(4.0)));
        assert!(float(&"1.5".into(), "f").is_err());
        assert!(boolean(&"true".into(), "b").is_err());
        assert_eq!(boolean(&true.into(), "b"), Ok(Some(true)));
        assert!(string(&ArgValue::Int(1), "s").is_err());
        let err = string(&ArgValue::Int(1), "sra.resources").expect_err("int is no string");
        assert_eq!(err, "sra.resources: expected a string, found 1");
    }

    #[test]
    fn struct_fields_match_ignoring_case_exact_first() {
        let v = m(&[
            ("weight", ArgValue::Int(1)),
            ("Weight", ArgValue::Int(2)),
            ("ENABLE", true.into()),
            ("ſtring", ArgValue::Int(3)),
        ]);
        let f = fields(&v, "x").expect("a map").expect("not null");
        assert_eq!(f.get("Weight"), Some(&ArgValue::Int(2)));
        assert_eq!(f.get("Enable"), Some(&ArgValue::Bool(true)));
        assert_eq!(f.get("String"), Some(&ArgValue::Int(3)));
        assert_eq!(f.get("Resources"), None);
        assert!(fields(&ArgValue::List(vec![]), "x").is_err());
        assert!(
            fields(&ArgValue::Null, "x")
                .expect("null is fine")
                .is_none()
        );
    }

    #[test]
    fn maps_need_string_keys() {
        let v = ArgValue::Map(vec![
            (ArgValue::Null, ArgValue::Int(1)),
            ("a".into(), ArgValue::Int(2)),
        ]);
        let got = map(&v, "m", int).expect("valid");
        assert_eq!(
            got,
            Some(vec![(String::new(), Some(1)), ("a".to_owned(), Some(2))])
        );
        let bad = ArgValue::Map(vec![(ArgValue::Int(1), ArgValue::Int(2))]);
        assert!(map(&bad, "m", int).is_err());
        let bad_elem = m(&[("a", "x".into())]);
        assert_eq!(
            map(&bad_elem, "m", int),
            Err("m[a]: expected an integer, found \"x\"".to_owned())
        );
    }
}
