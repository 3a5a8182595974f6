//! Checking argument values, and keeping user-supplied text in messages short.
//!
//! A plugin reads its arguments twice with the same code: once when the configuration is parsed,
//! to report what is wrong with them ([`ArgumentCheck`]), and once per session, when the
//! problems are known already and only the values matter. So a bad value is reported once per
//! configuration load (log, simulator, reload) and not at every session.

use std::borrow::Cow;

use super::Arguments;

/// The largest weight magnitude a plugin argument keeps; a larger one is clamped to it.
///
/// Weights multiply scores of up to 100 and several weighted scores are added up. Volcano does
/// part of that in 64-bit integers, which wrap around above about 9.2 × 10^16 / 100, so an
/// `int64`-max weight turns the best node into the worst. 10^12 leaves room for every product
/// and sum, and each stays exact in the `f64` the scores are added in.
pub const MAX_WEIGHT: i64 = 1_000_000_000_000;

/// At most this many characters of a user-supplied name or value are echoed in a message.
pub const MAX_ECHO_CHARS: usize = 64;

/// One problem with one argument, found when a plugin reads its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgWarning {
    /// The argument key, e.g. `leastrequested.weight`.
    pub key: String,
    /// What is wrong and what is used instead.
    pub message: String,
}

impl ArgWarning {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ArgWarning {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// Reads the arguments of the named plugin the way its builder does and returns the problems;
/// the parser reports them as warnings under `…plugins[j].arguments.<key>`.
pub type ArgumentCheck = fn(plugin: &str, arguments: &Arguments) -> Vec<ArgWarning>;

/// `text` itself when short, else its first [`MAX_ECHO_CHARS`] characters followed by
/// `…(N bytes)`: a 1 MB name in a configuration file must not become a 1 MB log line.
pub fn shorten(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_ECHO_CHARS) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}…({} bytes)", &text[..end], text.len())),
    }
}

/// `text` shortened and quoted, for messages that show a name as `"name"`.
pub fn quoted(text: &str) -> String {
    format!("{:?}", shorten(text))
}

impl Arguments {
    /// Reads an integer weight into `dst` as [`Arguments::get_int`] does, reporting a value of
    /// the wrong type (the default is kept) and clamping a magnitude above [`MAX_WEIGHT`].
    /// Returns true when the argument set `dst`. Whether a negative weight is allowed is the
    /// caller's decision.
    pub fn get_weight(&self, key: &str, dst: &mut i64, warnings: &mut Vec<ArgWarning>) -> bool {
        match self.get_int(key, dst) {
            Ok(true) => {
                if let Some(warning) = clamp_weight(key, dst) {
                    warnings.push(warning);
                }
                true
            }
            Ok(false) => false,
            Err(e) => {
                warnings.push(ArgWarning::new(
                    key,
                    format!("{}; the default {dst} is used", e.message),
                ));
                false
            }
        }
    }
}

/// Clamps `weight` to `±MAX_WEIGHT`, returning the warning when it had to.
pub fn clamp_weight(key: &str, weight: &mut i64) -> Option<ArgWarning> {
    let clamped = (*weight).clamp(-MAX_WEIGHT, MAX_WEIGHT);
    if clamped == *weight {
        return None;
    }
    let warning = ArgWarning::new(
        key,
        format!(
            "weight {weight} is out of range: a weight beyond ±{MAX_WEIGHT} can overflow the \
             score arithmetic; {clamped} is used"
        ),
    );
    *weight = clamped;
    Some(warning)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conf::ArgValue;

    #[test]
    fn long_text_is_shortened_with_its_size() {
        assert_eq!(shorten("gang"), "gang");
        let exact = "x".repeat(MAX_ECHO_CHARS);
        assert_eq!(shorten(&exact), exact.as_str());
        let long = "é".repeat(1 << 20);
        let short = shorten(&long);
        assert!(short.starts_with(&"é".repeat(MAX_ECHO_CHARS)));
        assert!(short.ends_with("…(2097152 bytes)"), "{short}");
        assert_eq!(
            short.chars().count(),
            MAX_ECHO_CHARS + "…(2097152 bytes)".len() - 2
        );
        assert_eq!(quoted("a\"b"), "\"a\\\"b\"");
    }

    #[test]
    fn weights_are_clamped_and_bad_types_reported() {
        let args = Arguments::from_pairs(&[
            ("max", ArgValue::Int(i64::MAX)),
            ("min", ArgValue::Int(i64::MIN)),
            ("neg", ArgValue::Int(-5)),
            ("float", ArgValue::Float(1.5)),
            ("huge", ArgValue::Uint(u64::MAX)),
        ]);
        let mut warnings = Vec::new();
        let mut w = 1;
        assert!(args.get_weight("max", &mut w, &mut warnings));
        assert_eq!(w, MAX_WEIGHT);
        assert!(args.get_weight("min", &mut w, &mut warnings));
        assert_eq!(w, -MAX_WEIGHT);
        assert!(args.get_weight("neg", &mut w, &mut warnings));
        assert_eq!(w, -5);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].message.contains("9223372036854775807"));

        let mut w = 3;
        warnings.clear();
        assert!(!args.get_weight("float", &mut w, &mut warnings));
        assert!(!args.get_weight("huge", &mut w, &mut warnings));
        assert!(!args.get_weight("missing", &mut w, &mut warnings));
        assert_eq!(w, 3);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].message.ends_with("the default 3 is used"));
        assert!(
            warnings[1].message.contains("too large"),
            "{}",
            warnings[1].message
        );
    }
}
