//! The Grafana dashboard shipped by the Helm chart (`charts/volcano-rs/dashboards/volcano-rs.json`,
//! issue 7) queries only metrics the daemon exports.
//!
//! Every PromQL expression of the dashboard (panel targets and template-variable queries) is
//! reduced to the metric names it selects, and each name is looked up in the `# TYPE` lines of
//! [`Metrics::encode_text`] after every kind of observation has been recorded once (labelled
//! families only appear after their first observation). A histogram is queried through its
//! `_bucket`, `_sum` and `_count` series, never by its bare name, and only a histogram has those.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use engine::framework::{Decisions, JobFigures, JobMetrics, QueueMetrics};
use engine::model::Resource;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use volcano_rs_cluster::metrics::{
    JobLabels, Metrics, ON_SESSION_OPEN, SchedulingStage, TaskStage,
};

const DASHBOARD: &str = include_str!("../../../charts/volcano-rs/dashboards/volcano-rs.json");

/// Grafana's own variables (`$__rate_interval`, `$__range`, …) start with this.
const GRAFANA_BUILTIN_PREFIX: &str = "__";

/// PromQL words that look like identifiers but name no metric.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "atan2",
    "inf",
    "nan",
];

/// Keywords followed by a parenthesised list of label names, which are not metrics either.
const LABEL_LIST_KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Index just after the string literal that opens at `start` (`"…"`, `'…'` with escapes, or a
/// raw `` `…` ``); the end of input when it is unterminated.
fn skip_string(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if quote != '`' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// Index just after the bracket that closes the one opening at `start`, skipping nested
/// brackets of the same kind and string literals (a label value may contain `}`).
fn skip_group(chars: &[char], start: usize) -> usize {
    let open = chars[start];
    let close = match open {
        '{' => '}',
        '[' => ']',
        _ => ')',
    };
    let mut depth = 0usize;
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '"' | '\'' | '`' => {
                i = skip_string(chars, i);
                continue;
            }
            c if c == open => depth += 1,
            c if c == close => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// Whether `rest` opens with the `by` or `without` keyword (as a whole word).
fn starts_grouping(rest: &[char]) -> bool {
    let word: String = rest.iter().take_while(|&&c| is_ident_char(c)).collect();
    let word = word.to_ascii_lowercase();
    word == "by" || word == "without"
}

/// The metric names a PromQL expression selects.
///
/// Skipped: label matchers (`{…}`), range and subquery brackets (`[…]`), strings, numbers and
/// durations, Grafana variables (`$x`, `${x}`), function and aggregation names (an identifier
/// followed by `(`), keywords and the label lists of `by`, `without`, `on`, `ignoring` and
/// `group_left`/`group_right`.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_string(&chars, i);
        } else if c == '{' || c == '[' {
            i = skip_group(&chars, i);
        } else if c == '#' {
            // A comment runs to the end of the line.
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '$' {
            i += 1;
            if chars.get(i) == Some(&'{') {
                i = skip_group(&chars, i);
            } else {
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            // Numbers (`0.99`, `1e300`, `0x1f`) and durations (`5m`, `1h30m`) in one token.
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '.' | '_'))
            {
                i += 1;
            }
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            let lower = word.to_ascii_lowercase();
            if chars.get(next) == Some(&'(') {
                if LABEL_LIST_KEYWORDS.contains(&lower.as_str()) {
                    i = skip_group(&chars, next);
                }
                // Otherwise a function or aggregation: its arguments are scanned as usual.
            } else if !KEYWORDS.contains(&lower.as_str()) && !starts_grouping(&chars[next..]) {
                // An aggregation written `sum by (l) (…)` is followed by its grouping clause; a
                // metric never is.
                names.insert(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The metric names a Grafana template-variable query selects: `label_values(<selector>,
/// <label>)` reads the selector only, `label_values(<label>)` and `label_names()` select none,
/// anything else is a PromQL expression.
fn template_query_metrics(query: &str) -> BTreeSet<String> {
    let query = query.trim();
    if let Some(args) = query
        .strip_prefix("label_values(")
        .and_then(|rest| rest.strip_suffix(')'))
    {
        // The label name is the last argument and holds no comma; the selector may.
        return match args.rsplit_once(',') {
            Some((selector, _label)) => metric_names(selector),
            None => BTreeSet::new(),
        };
    }
    if query.starts_with("label_names(") || query.starts_with("metrics(") {
        return BTreeSet::new();
    }
    let inner = query
        .strip_prefix("query_result(")
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or(query);
    metric_names(inner)
}

/// One PromQL query of the dashboard: where it is (for messages) and its text.
#[derive(Debug)]
struct Query {
    place: String,
    expr: String,
    template: bool,
}

/// Every panel of the dashboard, including those nested in collapsed rows.
fn panels(dashboard: &Value) -> Vec<&Value> {
    fn walk<'a>(list: Option<&'a Value>, out: &mut Vec<&'a Value>) {
        for panel in list.and_then(Value::as_array).into_iter().flatten() {
            out.push(panel);
            walk(panel.get("panels"), out);
        }
    }
    let mut out = Vec::new();
    walk(dashboard.get("panels"), &mut out);
    out
}

fn title(panel: &Value) -> &str {
    panel
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("<untitled>")
}

/// Every query of the dashboard: panel targets' `expr` and query variables' `query`.
fn queries(dashboard: &Value) -> Vec<Query> {
    let mut out = Vec::new();
    for panel in panels(dashboard) {
        let targets = panel.get("targets").and_then(Value::as_array);
        for (i, target) in targets.into_iter().flatten().enumerate() {
            if let Some(expr) = target.get("expr").and_then(Value::as_str) {
                out.push(Query {
                    place: format!("panel {:?} target {i}", title(panel)),
                    expr: expr.to_owned(),
                    template: false,
                });
            }
        }
    }
    let variables = dashboard
        .pointer("/templating/list")
        .and_then(Value::as_array);
    for var in variables.into_iter().flatten() {
        if var.get("type").and_then(Value::as_str) != Some("query") {
            continue;
        }
        // Grafana stores the query either as a string or as `{query, refId}`.
        let query = var.get("query").and_then(|q| {
            q.as_str()
                .or_else(|| q.get("query").and_then(Value::as_str))
        });
        if let Some(query) = query {
            let name = var
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("<unnamed>");
            out.push(Query {
                place: format!("variable {name:?}"),
                expr: query.to_owned(),
                template: true,
            });
        }
    }
    out
}

/// Records one observation of every kind the daemon makes, so that every family it can export
/// shows in the exposition.
fn metrics_with_every_family() -> std::sync::Arc<Metrics> {
    let m = Metrics::new();
    let gpu = [("nvidia.com/gpu", 1000.0)];
    let mut d = Decisions {
        unschedulable_tasks: 2,
        unschedulable_jobs: Some(1),
        preemption_attempts: 1,
        preemption_victims: Some(1),
        ..Decisions::default()
    };
    d.queue_metrics.insert(
        "q1".to_owned(),
        QueueMetrics {
            weight: 1,
            allocated: Resource::from_pairs(1000.0, 1e9, &gpu),
            request: Resource::from_pairs(2000.0, 2e9, &gpu),
            deserved: Some(Resource::from_pairs(1500.0, 1.5e9, &gpu)),
            capability: Some(Resource::from_pairs(4000.0, 4e9, &gpu)),
            real_capability: Some(Resource::from_pairs(4000.0, 4e9, &gpu)),
            inqueue: Some(Resource::from_pairs(500.0, 5e8, &gpu)),
            share: Some(0.66),
            overused: Some(false),
        },
    );
    d.job_metrics.push(JobMetrics::labelled(
        "ns",
        "pg",
        "q1",
        None,
        JobFigures {
            unschedule_task_count: Some(2),
            retried: true,
            share: Some(0.1),
            ..JobFigures::default()
        },
    ));
    m.record_decisions(&d);

    let ms = Duration::from_millis;
    m.observe_session(ms(1), &[("allocate".to_owned(), ms(3))], ms(5));
    m.observe_plugin("gang", ON_SESSION_OPEN, ms(1));
    for stage in [
        TaskStage::Watched,
        TaskStage::Assumed,
        TaskStage::PreBound,
        TaskStage::Bound,
    ] {
        m.observe_task_stage(stage, ms(100));
    }
    for stage in [
        SchedulingStage::Predicate,
        SchedulingStage::Scoring,
        SchedulingStage::PreBind,
        SchedulingStage::Bind,
    ] {
        m.observe_scheduling_stage(stage, ms(1));
    }
    let job = JobLabels {
        namespace: "ns",
        name: "pg",
        queue: "q1",
    };
    m.set_job_start_time(job, Timestamp::UNIX_EPOCH);
    m.job_task_allocated(job, ms(200), Timestamp::UNIX_EPOCH);
    m.pod_bound(ms(2), Some(ms(300)));
    m.bind_failed();
    m.session_failed();
    m.evictions("reclaim", 1);
    m.preemption_attempt();
    m.set_preemption_victims(1);
    m.config_reload(true);
    m.config_reload(false);
    m.set_leader(true);
    m
}

/// Family name → type, from the `# TYPE` lines of a text exposition.
fn families(exposition: &str) -> BTreeMap<String, String> {
    exposition
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_once(' '))
        .map(|(name, kind)| (name.to_owned(), kind.trim().to_owned()))
        .collect()
}

/// Whether `name` is a series Prometheus stores for one of `families`.
fn is_exported(families: &BTreeMap<String, String>, name: &str) -> bool {
    if let Some(kind) = families.get(name) {
        // A histogram's or summary's bare name holds no series.
        return kind != "histogram" && kind != "summary";
    }
    let family_kind = |suffix: &str| {
        name.strip_suffix(suffix)
            .and_then(|family| families.get(family))
            .map(String::as_str)
    };
    family_kind("_bucket") == Some("histogram")
        || matches!(family_kind("_sum"), Some("histogram" | "summary"))
        || matches!(family_kind("_count"), Some("histogram" | "summary"))
}

/// `(place, metric)` for every metric the dashboard queries that `families` lacks.
fn unknown_metrics(dashboard: &str, families: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let dashboard: Value = serde_json::from_str(dashboard).expect("the dashboard is valid JSON");
    let mut unknown = Vec::new();
    for q in queries(&dashboard) {
        let names = if q.template {
            template_query_metrics(&q.expr)
        } else {
            metric_names(&q.expr)
        };
        for name in names {
            if !is_exported(families, &name) {
                unknown.push((q.place.clone(), name));
            }
        }
    }
    unknown
}

fn exported_families() -> BTreeMap<String, String> {
    families(&metrics_with_every_family().encode_text())
}

#[test]
fn every_dashboard_metric_is_exported_by_the_daemon() {
    let families = exported_families();
    assert!(
        families.len() > 30,
        "too few families recorded: {families:?}"
    );
    let unknown = unknown_metrics(DASHBOARD, &families);
    assert!(
        unknown.is_empty(),
        "the dashboard queries metrics the daemon does not export: {unknown:#?}"
    );
}

#[test]
fn the_dashboard_shows_what_the_issue_asks_for() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("valid JSON");
    let used: BTreeSet<String> = queries(&dashboard)
        .iter()
        .filter(|q| !q.template)
        .flat_map(|q| metric_names(&q.expr))
        .collect();
    for name in [
        "volcano_queue_allocated_milli_cpu",
        "volcano_queue_deserved_milli_cpu",
        "volcano_queue_capacity_milli_cpu",
        "volcano_queue_allocated_memory_bytes",
        "volcano_queue_deserved_memory_bytes",
        "volcano_queue_capacity_memory_bytes",
        "volcano_queue_share",
        "volcano_queue_overused",
        "volcano_unschedule_job_count",
        "volcano_unschedule_task_count",
        "volcano_e2e_scheduling_latency_milliseconds_bucket",
        "volcano_action_scheduling_latency_milliseconds_bucket",
        "volcano_pods_bound_total",
        "volcano_pods_evicted_total",
        "volcano_config_reloads_total",
        "volcano_leader",
    ] {
        assert!(
            used.contains(name),
            "no panel queries {name}; used: {used:?}"
        );
    }
}

#[test]
fn a_misspelt_metric_is_caught() {
    let families = exported_families();
    let misspelt = DASHBOARD.replace("volcano_pods_bound_total", "volcano_pod_bound_total");
    assert_ne!(
        misspelt, DASHBOARD,
        "the dashboard no longer queries pods bound"
    );
    let unknown = unknown_metrics(&misspelt, &families);
    assert!(
        unknown
            .iter()
            .any(|(_, name)| name == "volcano_pod_bound_total"),
        "{unknown:?}"
    );

    // A histogram suffix on a counter, and a histogram's bare name, are no series either.
    let suffixed = DASHBOARD.replace(
        "volcano_pods_bound_total",
        "volcano_pods_bound_total_bucket",
    );
    assert!(!unknown_metrics(&suffixed, &families).is_empty());
    let bare = DASHBOARD.replace(
        "volcano_e2e_scheduling_latency_milliseconds_bucket",
        "volcano_e2e_scheduling_latency_milliseconds",
    );
    assert!(!unknown_metrics(&bare, &families).is_empty());

    // Template variables are checked too.
    let variable = DASHBOARD.replace(
        "label_values(volcano_leader,",
        "label_values(volcano_leaders,",
    );
    assert_ne!(
        variable, DASHBOARD,
        "the job variable no longer reads volcano_leader"
    );
    let unknown = unknown_metrics(&variable, &families);
    assert!(
        unknown
            .iter()
            .any(|(place, name)| name == "volcano_leaders" && place.contains("variable")),
        "{unknown:?}"
    );
}

#[test]
fn the_dashboard_is_well_formed() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("valid JSON");
    assert_eq!(dashboard["uid"], "volcano-rs");

    let variables: BTreeSet<&str> = dashboard
        .pointer("/templating/list")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    assert!(variables.contains("datasource"), "{variables:?}");

    let mut ids = BTreeSet::new();
    for panel in panels(&dashboard) {
        let t = title(panel);
        let id = panel
            .get("id")
            .and_then(Value::as_u64)
            .expect("numeric panel id");
        assert!(ids.insert(id), "panel id {id} ({t:?}) is used twice");
        let grid = &panel["gridPos"];
        let x = grid["x"].as_u64().expect("gridPos.x");
        let w = grid["w"].as_u64().expect("gridPos.w");
        assert!(
            w > 0 && x + w <= 24,
            "panel {t:?} is outside the 24-column grid"
        );
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(
            panel.pointer("/datasource/uid").and_then(Value::as_str),
            Some("${datasource}"),
            "panel {t:?} must use the datasource variable"
        );
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {t:?} has no query");
        let mut refs = BTreeSet::new();
        for target in targets {
            let expr = target["expr"].as_str().unwrap_or_default();
            assert!(!expr.trim().is_empty(), "panel {t:?} has an empty query");
            let r = target["refId"].as_str().expect("refId");
            assert!(refs.insert(r), "panel {t:?} repeats refId {r}");
        }
        let description = panel
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert!(!description.is_empty(), "panel {t:?} has no description");
    }

    // Every variable a query uses is defined (or is one of Grafana's own).
    for q in queries(&dashboard) {
        for var in variables_used(&q.expr) {
            assert!(
                var.starts_with(GRAFANA_BUILTIN_PREFIX) || variables.contains(var.as_str()),
                "{} uses undefined variable ${var}",
                q.place
            );
        }
    }
}

/// Names of the Grafana variables (`$name`, `${name}`, `${name:format}`) in a query.
fn variables_used(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let name: String = match rest.strip_prefix('{') {
            Some(braced) => braced
                .chars()
                .take_while(|&c| c != '}' && c != ':')
                .collect(),
            None => rest.chars().take_while(|&c| is_ident_char(c)).collect(),
        };
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|&n| n.to_owned()).collect()
}

#[test]
fn metric_names_skip_functions_labels_and_modifiers() {
    assert_eq!(
        metric_names(
            r#"histogram_quantile(0.99, sum by (le, action) (rate(volcano_x_bucket{job=~"$job", a="}"}[$__rate_interval])))"#
        ),
        set(&["volcano_x_bucket"])
    );
    assert_eq!(
        metric_names(
            "max by (queue_name) (a{queue_name=~\"$queue\"} < 1e300 and on (instance) (b == 1)) / 1000"
        ),
        set(&["a", "b"])
    );
    assert_eq!(
        metric_names("sum(rate(x[5m] offset 1h)) by (l) / ignoring(k) group_left (m) y unless z"),
        set(&["x", "y", "z"])
    );
    assert_eq!(
        metric_names("topk(10, c > 0) or vector(0) + .5 * inf + count without(x) (bytes)"),
        set(&["bytes", "c"])
    );
    assert_eq!(
        metric_names("count_values(\"value\", up) # trailing comment naming not_a_metric"),
        set(&["up"])
    );
    assert_eq!(metric_names("increase(m[${__range}])"), set(&["m"]));
    assert!(metric_names("").is_empty());
    // Unterminated input ends the scan instead of panicking.
    assert_eq!(metric_names("rate(m{a=\"x"), set(&["m"]));
    assert_eq!(metric_names("n[5m"), set(&["n"]));
}

#[test]
fn template_queries_read_the_selector_only() {
    assert_eq!(
        template_query_metrics(
            "label_values(volcano_queue_weight{job=~\"$job\", a=\"b\"}, queue_name)"
        ),
        set(&["volcano_queue_weight"])
    );
    assert!(template_query_metrics("label_values(job)").is_empty());
    assert!(template_query_metrics("label_names()").is_empty());
    assert_eq!(template_query_metrics("query_result(sum(m))"), set(&["m"]));
    assert_eq!(template_query_metrics("up"), set(&["up"]));
}

#[test]
fn exported_names_follow_the_family_types() {
    let families = families(
        "# TYPE h histogram\nh_bucket{le=\"1\"} 0\n# TYPE c counter\nc 1\n# TYPE g gauge\ng 1\n",
    );
    assert!(is_exported(&families, "h_bucket"));
    assert!(is_exported(&families, "h_sum"));
    assert!(is_exported(&families, "h_count"));
    assert!(!is_exported(&families, "h"));
    assert!(is_exported(&families, "c"));
    assert!(!is_exported(&families, "c_bucket"));
    assert!(!is_exported(&families, "c_count"));
    assert!(is_exported(&families, "g"));
    assert!(!is_exported(&families, "missing"));
}

#[test]
fn variables_are_found_in_every_spelling() {
    assert_eq!(
        variables_used("a{x=~\"$job\"}[$__rate_interval] ${queue:regex} ${ds}"),
        set(&["job", "__rate_interval", "queue", "ds"])
    );
}
