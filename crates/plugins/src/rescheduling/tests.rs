use engine::conf::Arguments;

use super::*;

fn to_arg(v: &serde_json::Value) -> ArgValue {
    use serde_json::Value as J;
    match v {
        J::Null => ArgValue::Null,
        J::Bool(b) => ArgValue::Bool(*b),
        J::Number(n) => n
            .as_i64()
            .map(ArgValue::Int)
            .unwrap_or_else(|| ArgValue::Float(n.as_f64().unwrap_or_default())),
        J::String(s) => ArgValue::Str(s.clone()),
        J::Array(items) => ArgValue::List(items.iter().map(to_arg).collect()),
        J::Object(m) => ArgValue::Map(
            m.iter()
                .map(|(k, v)| (ArgValue::Str(k.clone()), to_arg(v)))
                .collect(),
        ),
    }
}

fn args(json: &str) -> Arguments {
    let value: serde_json::Value = serde_json::from_str(json).expect("json");
    let ArgValue::Map(entries) = to_arg(&value) else {
        panic!("a map");
    };
    entries
        .into_iter()
        .map(|(k, v)| (k.as_str().unwrap_or_default().to_string(), v))
        .collect()
}

#[test]
fn defaults_and_strategy_params() {
    let (a, w) = parse_args(&args("{}"));
    assert_eq!(a.interval, SignedDuration::from_mins(5));
    assert_eq!(a.low_node_utilization, Some(Thresholds::default()));
    // The default period reads no load: said once, at configuration load.
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key, "metricsPeriod");

    let (a, w) = parse_args(&args(
        r#"{"interval": "10m", "metricsPeriod": "10m", "strategies": [{"name": "lowNodeUtilization",
            "params": {"thresholds": {"cpu": 20, "memory": 30, "pods": 5},
                       "targetThresholds": {"cpu": 50}}}]}"#,
    ));
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(a.interval, SignedDuration::from_mins(10));
    let th = a.low_node_utilization.expect("strategy");
    assert_eq!((th.low_cpu, th.low_memory), (20.0, 30.0));
    assert_eq!((th.target_cpu, th.target_memory), (50.0, 100.0));
}

#[test]
fn values_volcano_would_panic_on_are_refused() {
    let (a, w) = parse_args(&args(
        r#"{"interval": 5, "metricsPeriod": "10m", "strategies": [{"name": "lowNodeUtilization",
            "params": {"thresholds": {"cpu": 20.5}}}, {"name": "highNodeUtilization"}]}"#,
    ));
    let keys: Vec<&str> = w.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "interval",
            "strategies[0].params.thresholds.cpu",
            "strategies[1].name"
        ]
    );
    assert_eq!(a.interval, SignedDuration::from_mins(5));
    assert_eq!(a.low_node_utilization.expect("kept").low_cpu, 100.0);
}

#[test]
fn no_implemented_strategy_means_no_victim_function() {
    let (a, _) = parse_args(&args(r#"{"strategies": [{"name": "other"}]}"#));
    assert_eq!(a.low_node_utilization, None);
}
