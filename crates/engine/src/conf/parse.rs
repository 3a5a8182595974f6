//! Reading a configuration document (spec `framework.md` §1.2–§1.7 and the defaulting of §1.4).
//!
//! The text is parsed into a [`Node`] tree and walked by hand, so that every error can name its
//! field path and unknown keys can be reported as warnings.

use std::collections::BTreeMap;

use super::values::{quoted, shorten};
use super::yaml::{self, Node};
use super::{
    ActionConfiguration, ArgValue, Arguments, ConfError, Gate, KnownNames, Parsed, PluginOption,
    SchedulerConf, Tier,
};

const TOP_LEVEL_KEYS: [&str; 4] = ["actions", "tiers", "configurations", "metrics"];
const TIER_KEYS: [&str; 1] = ["plugins"];
const CONFIGURATION_KEYS: [&str; 2] = ["name", "arguments"];
const HIERARCHY_KEY: &str = "enableHierarchy";
const ACTIONS_EXAMPLE: &str = "\"enqueue, allocate, backfill\"";

/// Parses, defaults and validates a configuration document.
///
/// Known action and plugin names come from the caller, which owns the registries. On success
/// the returned warnings list unknown keys and other suspicious but accepted content.
pub fn parse(text: &str, known: &KnownNames<'_>) -> Result<Parsed, ConfError> {
    let doc =
        yaml::parse_document(text).map_err(|e| ConfError::new("", format!("invalid YAML: {e}")))?;
    let mut parser = Parser {
        known,
        warnings: Vec::new(),
        skipped_plugins: Vec::new(),
    };
    let mut conf = parser.document(&doc)?;
    conf.skipped_plugins = parser.skipped_plugins;
    Ok(Parsed {
        conf,
        warnings: parser.warnings,
    })
}

struct Parser<'k> {
    known: &'k KnownNames<'k>,
    warnings: Vec<String>,
    /// Unknown plugin names, in configuration order (not strict mode).
    skipped_plugins: Vec<String>,
}

/// A plugin entry of a tier: one to run, or the name of one this build lacks.
enum PluginEntry {
    Known(PluginOption),
    Skipped(String),
}

impl Parser<'_> {
    fn document(&mut self, doc: &Node) -> Result<SchedulerConf, ConfError> {
        let root: &[(Node, Node)] = match doc {
            // An empty file: reported below as missing actions, as in Volcano.
            node if node.is_null() => &[],
            Node::Map(entries) => entries,
            other => {
                return Err(ConfError::new(
                    "",
                    format!(
                        "expected a mapping with \"actions\" and \"tiers\" at the top level, \
                         found {}",
                        other.describe()
                    ),
                ));
            }
        };

        let mut actions = None;
        let mut conf = SchedulerConf {
            actions: Vec::new(),
            tiers: Vec::new(),
            configurations: Vec::new(),
            metrics: BTreeMap::new(),
            skipped_plugins: Vec::new(),
        };
        for (key, value) in root {
            match key.text().as_deref() {
                Some("actions") => actions = Some(self.actions(value)?),
                Some("tiers") => conf.tiers = self.tiers(value)?,
                Some("configurations") => conf.configurations = self.configurations(value)?,
                Some("metrics") => conf.metrics = metrics(value)?,
                _ => self.unknown_key("", key, TOP_LEVEL_KEYS),
            }
        }
        conf.actions = actions.ok_or_else(|| {
            ConfError::new(
                "actions",
                format!("missing; name the actions to run, e.g. {ACTIONS_EXAMPLE}"),
            )
        })?;
        if conf.tiers.is_empty() {
            self.warnings
                .push("tiers: no tiers configured, so no plugin will run".to_owned());
        }
        Ok(conf)
    }

    /// §1.3: split on commas without dropping empty elements, trim, look every name up.
    fn actions(&self, value: &Node) -> Result<Vec<String>, ConfError> {
        let text = match value.text() {
            None => {
                return Err(ConfError::new(
                    "actions",
                    format!(
                        "expected a comma-separated string such as {ACTIONS_EXAMPLE}, found {}",
                        value.describe()
                    ),
                ));
            }
            // Volcano's decoder reads any scalar into the string field as its literal text.
            Some(text) => text,
        };
        if text.trim().is_empty() {
            return Err(ConfError::new(
                "actions",
                format!("empty; name the actions to run, e.g. {ACTIONS_EXAMPLE}"),
            ));
        }
        text.split(',')
            .enumerate()
            .map(|(i, raw)| {
                let name = raw.trim();
                if name.is_empty() {
                    Err(ConfError::new(
                        "actions",
                        format!(
                            "empty action name at position {} in {} (stray comma?)",
                            i + 1,
                            quoted(&text)
                        ),
                    ))
                } else if self.known.actions.contains(&name) {
                    Ok(name.to_owned())
                } else {
                    Err(ConfError::new(
                        "actions",
                        unknown_name("action", name, self.known.actions),
                    ))
                }
            })
            .collect()
    }

    fn tiers(&mut self, value: &Node) -> Result<Vec<Tier>, ConfError> {
        let items = sequence(value, "tiers", "a list of tiers")?;
        let mut tiers = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("tiers[{i}]");
            tiers.push(self.tier(item, &path)?);
        }
        Ok(tiers)
    }

    fn tier(&mut self, value: &Node, path: &str) -> Result<Tier, ConfError> {
        let Some(map) = mapping(value, path, "a mapping with \"plugins\"")? else {
            return Ok(Tier::default());
        };
        let mut tier = Tier::default();
        for (key, value) in map {
            if key.text().as_deref() == Some("plugins") {
                let plugins_path = format!("{path}.plugins");
                let items = sequence(value, &plugins_path, "a list of plugin options")?;
                for (j, item) in items.iter().enumerate() {
                    let option_path = format!("{plugins_path}[{j}]");
                    match self.plugin_option(item, &option_path)? {
                        PluginEntry::Known(option) => tier.plugins.push(option),
                        PluginEntry::Skipped(name) => self.skipped_plugins.push(name),
                    }
                }
            } else {
                self.unknown_key(path, key, TIER_KEYS);
            }
        }
        // §1.4: hierarchical drf and proportion both manage queue shares; Volcano refuses them together
        // in one tier (and only in one tier).
        let hierarchical_drf = tier
            .plugins
            .iter()
            .any(|p| p.name == "drf" && p.enable_hierarchy);
        if hierarchical_drf && tier.plugins.iter().any(|p| p.name == "proportion") {
            return Err(ConfError::new(
                path,
                "proportion and drf with hierarchy enabled conflict (both are in this tier)",
            ));
        }
        Ok(tier)
    }

    fn plugin_option(&mut self, value: &Node, path: &str) -> Result<PluginEntry, ConfError> {
        let map = match value {
            Node::Scalar {
                value: ArgValue::Str(s),
                ..
            } => {
                return Err(ConfError::new(
                    path,
                    format!(
                        "expected a mapping such as \"name: {}\", found {}",
                        shorten(s),
                        quoted(s)
                    ),
                ));
            }
            _ => mapping(value, path, "a mapping with \"name\"")?,
        };
        let mut option = PluginOption::new("");
        let mut name = None;
        for (key, value) in map.into_iter().flatten() {
            let Some(key_str) = key.text() else {
                self.unknown_key(path, key, option_keys());
                continue;
            };
            let field = format!("{path}.{key_str}");
            match key_str.as_str() {
                "name" => name = Some(name_text(value, &field, "a plugin name")?),
                "arguments" => option.arguments = Arguments::from_node(value, &field)?,
                HIERARCHY_KEY => {
                    option.enable_hierarchy = flag(value, &field)?.unwrap_or(false);
                }
                other => match Gate::from_yaml_key(other) {
                    Some(gate) => {
                        let on = flag(value, &field)?.unwrap_or(gate.default_enabled());
                        option.set_enabled(gate, on);
                    }
                    None => self.unknown_key(path, key, option_keys()),
                },
            }
        }
        let name_path = format!("{path}.name");
        let name = name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ConfError::new(&name_path, "missing plugin name"))?;
        if !self.known.plugins.contains(&name.as_str()) {
            let message = if super::VOLCANO_PLUGIN_NAMES.contains(&name.as_str()) {
                format!(
                    "plugin {} is a Volcano plugin that volcano-rs does not provide yet",
                    quoted(&name)
                )
            } else {
                unknown_name("plugin", &name, self.known.plugins)
            };
            if self.known.strict {
                return Err(ConfError::new(name_path, message));
            }
            // Volcano's session skips a plugin it has no builder for and runs the rest.
            self.warnings.push(format!(
                "{name_path}: {message}; skipped, the rest of the configuration runs"
            ));
            // Only reported from here on (events, a metric label): kept short.
            return Ok(PluginEntry::Skipped(shorten(&name).into_owned()));
        }
        if let Some(check) = self.known.check_arguments {
            for warning in check(&name, &option.arguments) {
                self.warnings.push(format!(
                    "{path}.arguments.{}: {}",
                    shorten(&warning.key),
                    warning.message
                ));
            }
        }
        option.name = name;
        Ok(PluginEntry::Known(option))
    }

    fn configurations(&mut self, value: &Node) -> Result<Vec<ActionConfiguration>, ConfError> {
        let items = sequence(value, "configurations", "a list of action configurations")?;
        let mut configurations: Vec<ActionConfiguration> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("configurations[{i}]");
            let map = mapping(item, &path, "a mapping with \"name\" and \"arguments\"")?;
            let mut name = None;
            let mut arguments = Arguments::default();
            for (key, value) in map.into_iter().flatten() {
                match key.text().as_deref() {
                    Some("name") => {
                        let field = format!("{path}.name");
                        name = Some(name_text(value, &field, "an action name")?);
                    }
                    Some("arguments") => {
                        arguments = Arguments::from_node(value, &format!("{path}.arguments"))?;
                    }
                    _ => self.unknown_key(&path, key, CONFIGURATION_KEYS),
                }
            }
            let name_path = format!("{path}.name");
            let name = name
                .filter(|n| !n.is_empty())
                .ok_or_else(|| ConfError::new(&name_path, "missing action name"))?;
            // Volcano does not check these names, so a typo silently drops the arguments: a
            // warning here, an error in strict mode.
            if !self.known.actions.contains(&name.as_str()) {
                let message = unknown_name("action", &name, self.known.actions);
                if self.known.strict {
                    return Err(ConfError::new(name_path, message));
                }
                self.warnings.push(format!(
                    "{name_path}: {message}; these arguments are not used"
                ));
                continue;
            }
            if let Some(first) = configurations.iter().position(|c| c.name == name) {
                self.warnings.push(format!(
                    "{path}: action {} is already configured by configurations[{first}], \
                     which takes precedence; this entry is ignored",
                    quoted(&name)
                ));
            }
            configurations.push(ActionConfiguration { name, arguments });
        }
        Ok(configurations)
    }

    fn unknown_key<'c>(
        &mut self,
        path: &str,
        key: &Node,
        candidates: impl IntoIterator<Item = &'c str>,
    ) {
        let text = key.text().unwrap_or_else(|| key.describe());
        let hint = did_you_mean(&text, candidates);
        let text = quoted(&text);
        self.warnings.push(if path.is_empty() {
            format!("unknown top-level key {text}{hint}")
        } else {
            format!("{path}: unknown key {text}{hint}")
        });
    }
}

/// §1.7: a flat map; scalar values are taken as their text.
fn metrics(value: &Node) -> Result<BTreeMap<String, String>, ConfError> {
    let Some(map) = mapping(value, "metrics", "a mapping of setting names to values")? else {
        return Ok(BTreeMap::new());
    };
    let mut metrics = BTreeMap::new();
    for (key, value) in map {
        let Some(key) = key.text() else {
            return Err(ConfError::new(
                "metrics",
                format!("setting names must be scalars, found {}", key.describe()),
            ));
        };
        let Some(text) = value.text() else {
            return Err(ConfError::new(
                format!("metrics.{}", shorten(&key)),
                format!("expected a scalar value, found {}", value.describe()),
            ));
        };
        metrics.insert(key, text);
    }
    Ok(metrics)
}

/// Every key a plugin option understands, for "did you mean" suggestions.
fn option_keys() -> impl Iterator<Item = &'static str> {
    ["name", "arguments", HIERARCHY_KEY]
        .into_iter()
        .chain(Gate::ALL.into_iter().map(Gate::yaml_key))
}

/// An enable flag: `None` when null (left to defaulting, as Volcano's nil pointer is). A quoted
/// boolean word is accepted too (Volcano refuses the whole file for it).
fn flag(value: &Node, path: &str) -> Result<Option<bool>, ConfError> {
    match value {
        Node::Scalar {
            value: ArgValue::Null,
            ..
        } => Ok(None),
        Node::Scalar {
            value: ArgValue::Bool(b),
            ..
        } => Ok(Some(*b)),
        Node::Scalar {
            value: ArgValue::Str(s),
            ..
        } if yaml11_bool(s).is_some() => Ok(yaml11_bool(s)),
        other => Err(ConfError::new(
            path,
            format!("expected a boolean, found {}", other.describe()),
        )),
    }
}

/// A name field: any scalar, as its text (null gives the empty string).
fn name_text(value: &Node, path: &str, what: &str) -> Result<String, ConfError> {
    value
        .text()
        .ok_or_else(|| ConfError::new(path, format!("expected {what}, found {}", value.describe())))
}

/// A list field; null is an empty list.
fn sequence<'v>(value: &'v Node, path: &str, what: &str) -> Result<&'v [Node], ConfError> {
    match value {
        Node::List(items) => Ok(items),
        null if null.is_null() => Ok(&[]),
        other => Err(ConfError::new(
            path,
            format!("expected {what}, found {}", other.describe()),
        )),
    }
}

/// A mapping field; `None` for null, which every caller treats as an empty mapping.
fn mapping<'v>(
    value: &'v Node,
    path: &str,
    what: &str,
) -> Result<Option<&'v [(Node, Node)]>, ConfError> {
    match value {
        Node::Map(entries) => Ok(Some(entries)),
        null if null.is_null() => Ok(None),
        other => Err(ConfError::new(
            path,
            format!("expected {what}, found {}", other.describe()),
        )),
    }
}

/// The YAML 1.1 boolean words beyond `true` and `false`.
pub(super) fn yaml11_extra_bool(s: &str) -> Option<bool> {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

/// Every YAML 1.1 boolean word.
fn yaml11_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => yaml11_extra_bool(s),
    }
}

/// `unknown plugin "gnag" (did you mean "gang"?); known plugins: gang, priority, …`
fn unknown_name(kind: &str, name: &str, known: &[&str]) -> String {
    let hint = did_you_mean(name, known.iter().copied());
    let name = quoted(name);
    if known.is_empty() {
        format!("unknown {kind} {name}{hint}; no {kind}s are available")
    } else {
        format!(
            "unknown {kind} {name}{hint}; known {kind}s: {}",
            known.join(", ")
        )
    }
}

/// ` (did you mean "x"?)` when a candidate is close to `word`, else nothing.
fn did_you_mean<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> String {
    suggest(word, candidates)
        .map(|close| format!(" (did you mean {close:?}?)"))
        .unwrap_or_default()
}

/// The candidate closest to `word` within edit distance 2, if any; the first one wins a tie.
/// The distance must also be smaller than the word's length, so that a one- or two-letter
/// word is not "corrected" into an unrelated name.
pub(super) fn suggest<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    let word_len = word.chars().count();
    candidates
        .into_iter()
        // The distance is at least the difference in length: a long word (a 1 MB name) is
        // not compared character by character with every candidate.
        .filter(|c| word_len.abs_diff(c.chars().count()) <= 2)
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= 2 && d < word_len)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Optimal-string-alignment distance: insertions, deletions, substitutions and transpositions
/// of adjacent characters each cost 1 (so `gnag` is one edit away from `gang`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rolling rows: two back (for transpositions), previous and current.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_typos() {
        assert_eq!(edit_distance("gang", "gang"), 0);
        assert_eq!(edit_distance("gnag", "gang"), 1);
        assert_eq!(edit_distance("enablePreemtable", "enablePreemptable"), 1);
        assert_eq!(edit_distance("alocate", "allocate"), 1);
        assert_eq!(edit_distance("", "drf"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("ca", "abc"), 3);
    }

    #[test]
    fn suggestions_need_a_close_and_meaningful_match() {
        let names = ["gang", "drf", "proportion", "pdb", "cdp"];
        assert_eq!(suggest("gnag", names), Some("gang"));
        assert_eq!(suggest("proprtion", names), Some("proportion"));
        assert_eq!(suggest("pbd", names), Some("pdb"));
        assert_eq!(suggest("fairness", names), None);
        assert_eq!(suggest("ab", names), None);
    }

    #[test]
    fn yaml11_words() {
        for word in [
            "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE",
        ] {
            assert_eq!(yaml11_bool(word), Some(true), "{word}");
        }
        for word in [
            "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
        ] {
            assert_eq!(yaml11_bool(word), Some(false), "{word}");
        }
        for word in ["yES", "1", "t", "maybe", ""] {
            assert_eq!(yaml11_bool(word), None, "{word}");
        }
        assert_eq!(yaml11_extra_bool("true"), None);
    }

    #[test]
    fn describe_and_text() {
        let Ok(Node::List(items)) =
            yaml::parse_document("[maybe, 5, 1.5, ~, true, [x], {a: 1}, 012]")
        else {
            panic!("a list");
        };
        let described: Vec<String> = items.iter().map(Node::describe).collect();
        assert_eq!(
            described,
            [
                "\"maybe\"",
                "5",
                "1.5",
                "null",
                "true",
                "a list",
                "a mapping",
                "10"
            ]
        );
        let texts: Vec<Option<String>> = items.iter().map(Node::text).collect();
        let text = |s: &str| Some(s.to_owned());
        assert_eq!(
            texts,
            [
                text("maybe"),
                text("5"),
                text("1.5"),
                text(""),
                text("true"),
                None,
                None,
                text("012")
            ]
        );
    }
}
