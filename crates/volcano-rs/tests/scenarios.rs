//! Scenario tests: every folder under `tests/scenarios/` (workspace root) is one case, run
//! through the simulator exactly as `volcano-rs simulate --format json` would.
//!
//! A case folder holds:
//!
//! * `cluster.yaml` — the cluster (any input `simulate` accepts);
//! * `scheduler.conf` — optional; the embedded default configuration otherwise;
//! * `args.yaml` — optional: `{cycles: N, now: "<RFC 3339>", schedulerNames: [..],
//!   strictConfig: bool, cyclePeriod: "<Go duration>", recreateEvicted: bool}`
//!   (default now `2026-01-01T00:00:00Z`, other defaults as the command's);
//! * `expected.yaml` — a subset of the JSON report that must match (see [`matches`]), or
//! * `expected-error.txt` — the simulation must fail with a message containing this text.
//!
//! Matching rules: a map matches if every expected key exists in the actual map and its value
//! matches; a list matches if it has the same length and matches element by element; scalars
//! are equal (numbers within a relative 1e-6; an expected `null` also matches a missing key).
//! Special forms: `{$contains: "text"}` matches a string containing the text, `{$len: N}` a
//! list or map of N entries, `{$absent: true}` a missing key.
//!
//! Every case runs; the test fails at the end listing each failing case with every mismatch
//! and its path (`pods["ns/p1"].node: expected "n1", got "n2"`).

use std::path::{Path, PathBuf};

use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;
use serde_json::{Map, Value};
use volcano_rs::simulate::{self, ConfFile, SimInput, SimOptions};

const DEFAULT_NOW: &str = "2026-01-01T00:00:00Z";

/// `args.yaml`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    cycles: Option<usize>,
    now: Option<String>,
    scheduler_names: Option<Vec<String>>,
    strict_config: bool,
    cycle_period: Option<String>,
    recreate_evicted: bool,
}

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios")
}

/// Every case folder, sorted by name.
fn cases() -> Vec<PathBuf> {
    let dir = scenarios_dir();
    let entries =
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut cases: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    cases
}

fn case_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

fn read_optional(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Scenario files are read as the simulator reads cluster files: only `true`/`false` are booleans.
fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! { strict_booleans: true }
}

/// Runs the simulator on a case: the report as pretty JSON (what `--format json` prints), or
/// the simulator's error message. The outer error is a broken case folder.
fn simulate_case(dir: &Path) -> Result<Result<String, String>, String> {
    let args: Args = match read_optional(&dir.join("args.yaml"))? {
        Some(text) => serde_saphyr::from_str_with_options(&text, yaml_options())
            .map_err(|e| format!("args.yaml: {e}"))?,
        None => Args::default(),
    };
    let now: Timestamp = args
        .now
        .as_deref()
        .unwrap_or(DEFAULT_NOW)
        .parse()
        .map_err(|e| format!("args.yaml: now: {e}"))?;
    let mut opts = SimOptions::new(now);
    if let Some(cycles) = args.cycles {
        opts.max_cycles = cycles;
    }
    opts.strict_config = args.strict_config;
    if let Some(period) = &args.cycle_period {
        opts.cycle_period = simulate::parse_cycle_period(period)
            .map_err(|e| format!("args.yaml: cyclePeriod: {e}"))?;
    }
    opts.recreate_evicted = args.recreate_evicted;
    if let Some(names) = args.scheduler_names {
        opts.scheduler_names = names;
    }
    opts.scheduler_conf = read_optional(&dir.join("scheduler.conf"))?.map(|text| ConfFile {
        name: "scheduler.conf".to_string(),
        text,
    });

    let cluster = dir.join("cluster.yaml");
    let outcome = SimInput::from_files(&[&cluster])
        .and_then(|input| simulate::run(&input, &opts))
        .map(|report| report.to_json())
        .map_err(|e| e.to_string());
    Ok(outcome)
}

/// Checks one case; returns its problems (empty when it passes).
fn check_case(dir: &Path) -> Vec<String> {
    let outcome = match simulate_case(dir) {
        Ok(outcome) => outcome,
        Err(broken) => return vec![broken],
    };
    let expected_error = match read_optional(&dir.join("expected-error.txt")) {
        Ok(text) => text,
        Err(e) => return vec![e],
    };
    let expected = match read_optional(&dir.join("expected.yaml")) {
        Ok(text) => text,
        Err(e) => return vec![e],
    };
    match (expected_error, expected, outcome) {
        (Some(want), _, Err(got)) => {
            let want = want.trim();
            if got.contains(want) {
                Vec::new()
            } else {
                vec![format!(
                    "expected an error containing {want:?}, got {got:?}"
                )]
            }
        }
        (Some(want), _, Ok(_)) => vec![format!(
            "expected an error containing {:?}, but the simulation succeeded",
            want.trim()
        )],
        (None, Some(_), Err(got)) => vec![format!("the simulation failed: {got}")],
        (None, Some(expected), Ok(json)) => {
            let expected: Value =
                match serde_saphyr::from_str_with_options(&expected, yaml_options()) {
                    Ok(v) => v,
                    Err(e) => return vec![format!("expected.yaml: {e}")],
                };
            let actual: Value = match serde_json::from_str(&json) {
                Ok(v) => v,
                Err(e) => return vec![format!("the report is not JSON: {e}")],
            };
            let mut problems = Vec::new();
            matches(&expected, Some(&actual), "", &mut problems);
            problems
        }
        (None, None, _) => vec!["neither expected.yaml nor expected-error.txt".to_string()],
    }
}

#[test]
fn scenarios_match_expected() {
    let cases = cases();
    assert!(
        !cases.is_empty(),
        "no scenario under {}",
        scenarios_dir().display()
    );
    let mut failures = Vec::new();
    for dir in &cases {
        let problems = check_case(dir);
        if !problems.is_empty() {
            let name = case_name(dir);
            let list: Vec<String> = problems.iter().map(|p| format!("  {p}")).collect();
            failures.push(format!("{name}:\n{}", list.join("\n")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn scenarios_are_deterministic() {
    let mut failures = Vec::new();
    for dir in cases() {
        let first = simulate_case(&dir);
        let second = simulate_case(&dir);
        if first != second {
            failures.push(case_name(&dir));
        }
    }
    assert!(
        failures.is_empty(),
        "the same input gave different output: {}",
        failures.join(", ")
    );
}

// ---- the subset matcher --------------------------------------------------------------------

/// Appends a path segment: `.key` for plain keys, `["ns/p1"]` otherwise, `[i]` for indices.
fn join_key(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        format!("{path}[{}]", Value::String(key.to_string()))
    } else if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn show(v: Option<&Value>) -> String {
    let Some(v) = v else {
        return "nothing".to_string();
    };
    let text = v.to_string();
    if text.chars().count() > 300 {
        format!("{}…", text.chars().take(300).collect::<String>())
    } else {
        text
    }
}

fn at(path: &str) -> &str {
    if path.is_empty() {
        "(the report)"
    } else {
        path
    }
}

/// The special form `{$op: arg}`, if `expected` is one.
fn special(expected: &Value) -> Option<(&str, &Value)> {
    let map = expected.as_object()?;
    if map.len() != 1 {
        return None;
    }
    let (key, arg) = map.iter().next()?;
    key.starts_with('$').then_some((key.as_str(), arg))
}

fn numbers_match(expected: f64, actual: f64) -> bool {
    expected == actual || (expected - actual).abs() <= 1e-6 * expected.abs().max(actual.abs())
}

/// Whether `actual` (`None`: the key is missing) matches `expected`; every mismatch is pushed
/// onto `problems` with its path.
fn matches(expected: &Value, actual: Option<&Value>, path: &str, problems: &mut Vec<String>) {
    let mismatch = |problems: &mut Vec<String>| {
        problems.push(format!(
            "{}: expected {}, got {}",
            at(path),
            show(Some(expected)),
            show(actual)
        ));
    };
    if let Some((op, arg)) = special(expected) {
        match op {
            "$absent" => {
                if arg != &Value::Bool(true) {
                    problems.push(format!("{}: $absent takes `true`", at(path)));
                } else if let Some(v) = actual {
                    problems.push(format!(
                        "{}: expected no such key, got {}",
                        at(path),
                        show(Some(v))
                    ));
                }
            }
            "$contains" => match (arg.as_str(), actual.and_then(Value::as_str)) {
                (None, _) => problems.push(format!("{}: $contains takes a string", at(path))),
                (Some(text), Some(s)) if s.contains(text) => {}
                (Some(text), _) => problems.push(format!(
                    "{}: expected a string containing {}, got {}",
                    at(path),
                    Value::String(text.to_string()),
                    show(actual)
                )),
            },
            "$len" => {
                let len = match actual {
                    Some(Value::Array(a)) => Some(a.len()),
                    Some(Value::Object(m)) => Some(m.len()),
                    _ => None,
                };
                match arg.as_u64() {
                    None => problems.push(format!("{}: $len takes a count", at(path))),
                    Some(n) if len.is_some_and(|len| len as u64 == n) => {}
                    Some(n) => problems.push(format!(
                        "{}: expected {n} entries, got {}",
                        at(path),
                        len.map_or_else(|| show(actual), |l| format!("{l} entries"))
                    )),
                }
            }
            other => problems.push(format!("{}: unknown matcher {other}", at(path))),
        }
        return;
    }
    match (expected, actual) {
        (Value::Null, None | Some(Value::Null)) => {}
        (Value::Object(want), Some(Value::Object(got))) => match_maps(want, got, path, problems),
        (Value::Array(want), Some(Value::Array(got))) => {
            if want.len() != got.len() {
                problems.push(format!(
                    "{}: expected a list of {} entries, got {}: {}",
                    at(path),
                    want.len(),
                    got.len(),
                    show(actual)
                ));
            } else {
                for (i, (w, g)) in want.iter().zip(got).enumerate() {
                    matches(w, Some(g), &format!("{path}[{i}]"), problems);
                }
            }
        }
        (Value::Number(want), Some(Value::Number(got))) => {
            let (Some(w), Some(g)) = (want.as_f64(), got.as_f64()) else {
                return mismatch(problems);
            };
            if !numbers_match(w, g) {
                mismatch(problems);
            }
        }
        (Value::Bool(_) | Value::String(_), Some(got)) if expected == got => {}
        _ => mismatch(problems),
    }
}

fn match_maps(
    want: &Map<String, Value>,
    got: &Map<String, Value>,
    path: &str,
    problems: &mut Vec<String>,
) {
    for (key, w) in want {
        matches(w, got.get(key), &join_key(path, key), problems);
    }
}

mod matcher {
    use super::*;
    use serde_json::json;

    fn check(expected: Value, actual: Value) -> Vec<String> {
        let mut problems = Vec::new();
        matches(&expected, Some(&actual), "", &mut problems);
        problems
    }

    #[test]
    fn maps_are_subsets_lists_are_exact() {
        let actual =
            json!({"pods": {"ns/p1": {"node": "n1", "phase": "Running"}}, "cycles": [1, 2]});
        assert!(check(json!({"pods": {"ns/p1": {"node": "n1"}}}), actual.clone()).is_empty());
        assert_eq!(
            check(json!({"pods": {"ns/p1": {"node": "n2"}}}), actual.clone()),
            [r#"pods["ns/p1"].node: expected "n2", got "n1""#]
        );
        assert_eq!(
            check(json!({"pods": {"ns/p2": {"node": "n1"}}}), actual.clone()),
            [r#"pods["ns/p2"]: expected {"node":"n1"}, got nothing"#]
        );
        assert_eq!(
            check(json!({"cycles": [1]}), actual.clone()),
            ["cycles: expected a list of 1 entries, got 2: [1,2]"]
        );
        assert_eq!(
            check(json!({"cycles": [1, 3]}), actual),
            ["cycles[1]: expected 3, got 2"]
        );
    }

    #[test]
    fn scalars_and_nulls() {
        assert!(check(json!({"a": 1.0000001}), json!({"a": 1})).is_empty());
        assert_eq!(check(json!({"a": 1.01}), json!({"a": 1})).len(), 1);
        assert!(check(json!({"a": 0}), json!({"a": 0.0})).is_empty());
        assert!(check(json!({"a": null, "b": null}), json!({"b": null})).is_empty());
        assert_eq!(
            check(json!({"a": null}), json!({"a": "x"})),
            [r#"a: expected null, got "x""#]
        );
        assert_eq!(
            check(json!({"a": "1"}), json!({"a": 1})),
            [r#"a: expected "1", got 1"#]
        );
        assert_eq!(check(json!({"a": true}), json!({"a": false})).len(), 1);
        // A string where a map is expected.
        assert_eq!(check(json!({"a": {"b": 1}}), json!({"a": "x"})).len(), 1);
    }

    #[test]
    fn special_forms() {
        let actual = json!({"reason": "0/3 nodes are unavailable: 3 Insufficient cpu.", "l": [1, 2], "m": {"a": 1}});
        assert!(
            check(
                json!({"reason": {"$contains": "Insufficient cpu"}}),
                actual.clone()
            )
            .is_empty()
        );
        assert_eq!(
            check(json!({"reason": {"$contains": "memory"}}), actual.clone()).len(),
            1
        );
        assert_eq!(
            check(json!({"l": {"$contains": "1"}}), actual.clone()).len(),
            1
        );
        assert!(check(json!({"l": {"$len": 2}, "m": {"$len": 1}}), actual.clone()).is_empty());
        assert_eq!(
            check(json!({"l": {"$len": 3}}), actual.clone()),
            ["l: expected 3 entries, got 2 entries"]
        );
        assert!(check(json!({"x": {"$absent": true}}), actual.clone()).is_empty());
        assert_eq!(
            check(json!({"m": {"$absent": true}}), actual.clone()),
            [r#"m: expected no such key, got {"a":1}"#]
        );
        assert_eq!(
            check(json!({"m": {"$bogus": 1}}), actual),
            ["m: unknown matcher $bogus"]
        );
    }

    #[test]
    fn paths() {
        assert_eq!(join_key("", "pods"), "pods");
        assert_eq!(join_key("pods", "ns/p1"), r#"pods["ns/p1"]"#);
        assert_eq!(join_key("queues", "default"), "queues.default");
        assert_eq!(join_key("queues", "team-a"), r#"queues["team-a"]"#);
    }
}
