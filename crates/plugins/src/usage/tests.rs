//! Volcano's `usage` tests (usage_test.go, estimator_test.go, shadow_cache_test.go) with the
//! same objects and expected values, plus the event handlers through a session, which
//! Volcano's tests do not reach.

use engine::conf::{ArgValue, Arguments, PluginOption};
use engine::framework::Session;
use engine::model::{NodeUsage, StatusCode};
use k8s_openapi::jiff::SignedDuration;
use serde_json::json;

use super::*;
use crate::testutil::{StateLookup, TestCluster, allocate, pod, test_now};

const EPS: f64 = 1e-8;

fn int(v: i64) -> ArgValue {
    ArgValue::Int(v)
}
fn float(v: f64) -> ArgValue {
    ArgValue::Float(v)
}
fn text(v: &str) -> ArgValue {
    ArgValue::Str(v.into())
}
fn map(entries: &[(&str, ArgValue)]) -> ArgValue {
    ArgValue::Map(entries.iter().map(|(k, v)| (text(k), v.clone())).collect())
}
fn read(pairs: &[(&str, ArgValue)]) -> (UsageArgs, Vec<ArgWarning>) {
    let mut warnings = Vec::new();
    let a = UsageArgs::read(&Arguments::from_pairs(pairs), &mut warnings);
    (a, warnings)
}

#[test]
fn estimator_defaults_valid_values_and_out_of_range_fallbacks() {
    let (d, w) = read(&[]);
    assert_eq!(d, UsageArgs::default());
    assert!(w.is_empty());
    assert_eq!((d.be_cpu, d.be_mem), (250.0, 209_715_200.0));

    let (a, _) = read(&[(
        "estimator",
        map(&[
            ("request_ratio", float(0.8)),
            ("burst_ratio", float(0.3)),
            ("risk_threshold", float(0.75)),
            ("risk_factor", float(1.5)),
            ("be_cpu", text("500m")),
            ("be_mem", text("300Mi")),
        ]),
    )]);
    assert_eq!(
        (
            a.request_ratio,
            a.burst_ratio,
            a.risk_threshold,
            a.risk_factor
        ),
        (0.8, 0.3, 0.75, 1.5)
    );
    assert_eq!((a.be_cpu, a.be_mem), (500.0, 314_572_800.0));

    let (a, w) = read(&[(
        "estimator",
        map(&[
            ("request_ratio", float(1.5)),
            ("burst_ratio", float(-0.1)),
            ("risk_threshold", float(2.0)),
            ("risk_factor", float(0.5)),
            ("be_cpu", text("-1")),
            ("be_mem", text("bad")),
        ]),
    )]);
    assert_eq!(a, UsageArgs::default());
    assert_eq!(w.len(), 6, "{w:?}");
    assert!(w.iter().any(|w| w.key == "estimator.be_mem"));
}

/// Strings are not numbers (only `be_cpu` / `be_mem` parse them, as quantities).
#[test]
fn string_values_keep_the_defaults_except_best_effort_quantities() {
    let (a, _) = read(&[
        ("usage.weight", text("7")),
        ("cpu.weight", text("2")),
        ("memory.weight", text("3")),
        (
            "thresholds",
            map(&[("cpu", text("85")), ("mem", text("75"))]),
        ),
        (
            "estimator",
            map(&[
                ("request_ratio", text("0.8")),
                ("burst_ratio", text("0.3")),
                ("risk_threshold", text("0.75")),
                ("risk_factor", text("1.5")),
                ("be_cpu", text("500m")),
                ("be_mem", text("300Mi")),
            ]),
        ),
    ]);
    let expected = UsageArgs {
        be_cpu: 500.0,
        be_mem: 314_572_800.0,
        ..UsageArgs::default()
    };
    assert_eq!(a, expected);
}

#[test]
fn best_effort_integers_are_millicores_and_mebibytes() {
    let (a, _) = read(&[(
        "estimator",
        map(&[("be_cpu", int(500)), ("be_mem", int(200))]),
    )]);
    assert_eq!((a.be_cpu, a.be_mem), (500.0, 209_715_200.0));
}

#[test]
fn out_of_range_thresholds_and_negative_weights_keep_the_defaults() {
    let (a, w) = read(&[("thresholds", map(&[("cpu", int(-1)), ("mem", int(101))]))]);
    assert_eq!((a.cpu_threshold, a.mem_threshold), (80.0, 80.0));
    assert_eq!(w.len(), 2);
    let (a, w) = read(&[
        ("usage.weight", int(-1)),
        ("cpu.weight", int(-1)),
        ("memory.weight", int(-1)),
    ]);
    assert_eq!((a.usage_weight, a.cpu_weight, a.memory_weight), (5, 1, 1));
    assert_eq!(w.len(), 3);
    // 0 is a weight like any other.
    let (a, _) = read(&[("usage.weight", int(0))]);
    assert_eq!(a.usage_weight, 0);
    // A section that is not a mapping with string keys is ignored as a whole.
    let (a, w) = read(&[("thresholds", ArgValue::Map(vec![(int(1), int(5))]))]);
    assert_eq!(a.cpu_threshold, 80.0);
    assert_eq!(w.len(), 1);
}

/// Nodes n1..n5 of 4 cpu / 8Gi, pods p1 and p2 of c1 (1 cpu, 1Gi, pending) in pg1.
fn cluster(usage: &[(&str, f64, f64, Option<SignedDuration>)]) -> TestCluster {
    let mut c = TestCluster::new();
    for (name, ..) in usage {
        c.node(name, json!({"cpu": "4", "memory": "8Gi", "pods": "10"}));
    }
    c.pod_group(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "pg1", "namespace": "c1"},
        "spec": {"minMember": 0, "queue": "default"}
    }));
    for p in ["p1", "p2"] {
        c.pod(pod(
            "c1",
            p,
            Some("pg1"),
            "Pending",
            None,
            json!({"cpu": "1", "memory": "1Gi"}),
        ));
    }
    // `None` age: Volcano's zero time, always stale.
    c.state
        .set_node_usage(usage.iter().map(|(name, cpu, mem, age)| {
            let metrics_time = match age {
                Some(age) => test_now() - *age,
                None => k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            };
            let u = NodeUsage {
                cpu_percent: *cpu,
                memory_percent: *mem,
                metrics_time,
            };
            (name.to_string(), u)
        }));
    c
}

fn session(c: &TestCluster, args: &[(&str, ArgValue)]) -> Session {
    let option = PluginOption::new(NAME).with_arguments(Arguments::from_pairs(args));
    c.session_with(vec![vec![option]])
}

const NOW: Option<SignedDuration> = Some(SignedDuration::ZERO);
const SIX_MINUTES_AGO: Option<SignedDuration> = Some(SignedDuration::from_secs(360));

fn default_args() -> Vec<(&'static str, ArgValue)> {
    vec![
        ("usage.weight", int(5)),
        ("cpu.weight", int(1)),
        ("memory.weight", int(1)),
        ("thresholds", map(&[("cpu", int(80)), ("mem", int(80))])),
    ]
}

#[test]
fn predicate_filters_nodes_over_a_threshold_with_fresh_metrics() {
    let c = cluster(&[
        ("n1", 81.0, 60.0, NOW),
        ("n2", 60.0, 81.0, NOW),
        ("n3", 80.0, 79.0, NOW),
        ("n4", 90.0, 81.0, SIX_MINUTES_AGO),
        ("n5", 90.0, 81.0, None),
    ]);
    let ssn = session(&c, &default_args());
    for p in ["c1/p1", "c1/p2"] {
        let task = ssn.state.task_by_key(p);
        let check = |n: &str| ssn.predicate(task, ssn.state.node_by_key(n));
        let failed = |n: &str| {
            let e = check(n).expect_err(n);
            let s = &e.statuses[0];
            assert_eq!(
                (s.code, &*s.plugin),
                (StatusCode::UnschedulableAndUnresolvable, NAME)
            );
            s.reason.clone()
        };
        assert_eq!(failed("n1"), CPU_OVER_THRESHOLD);
        assert_eq!(failed("n2"), MEMORY_OVER_THRESHOLD);
        // 80 is not above 80; stale and zero-time samples pass.
        for n in ["n3", "n4", "n5"] {
            assert!(check(n).is_ok(), "{n}");
        }
    }
}

fn scores(args: &[(&str, ArgValue)]) -> Vec<f64> {
    let c = cluster(&[
        ("n1", 30.0, 50.0, NOW),
        ("n2", 60.0, 50.0, NOW),
        ("n3", 60.0, 80.0, NOW),
        ("n4", 10.0, 20.0, SIX_MINUTES_AGO),
        ("n5", 0.0, 0.0, None),
    ]);
    let ssn = session(&c, args);
    let task = ssn.state.task_by_key("c1/p1");
    ["n1", "n2", "n3", "n4", "n5"]
        .iter()
        .map(|n| {
            ssn.node_order(task, ssn.state.node_by_key(n))
                .expect("node order")
        })
        .collect()
}

fn assert_close(actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len());
    for (a, e) in actual.iter().zip(expected) {
        assert!((a - e).abs() <= EPS, "{actual:?} != {expected:?}");
    }
}

#[test]
fn node_order_prefers_the_least_loaded_node_by_weight() {
    assert_close(&scores(&default_args()), &[300.0, 225.0, 150.0, 0.0, 0.0]);
    let memory_first = [
        ("usage.weight", int(5)),
        ("cpu.weight", int(2)),
        ("memory.weight", int(8)),
        ("thresholds", map(&[("cpu", int(80)), ("mem", int(80))])),
    ];
    assert_close(&scores(&memory_first), &[270.0, 240.0, 120.0, 0.0, 0.0]);
}

/// The score is a node-order score only (not also a batch score): counted once.
#[test]
fn usage_registers_node_order_not_batch_node_order() {
    let points = new(&Arguments::new()).extension_points();
    assert!(points.contains(ExtensionPoints::NODE_ORDER));
    assert!(!points.contains(ExtensionPoints::BATCH_NODE_ORDER));
}

/// Which tasks on a node the metrics cannot show yet (TestShouldAddToShadowCache, with the
/// metrics interval of 5 minutes it uses).
#[test]
fn tasks_invisible_to_metrics_are_placed_or_recently_started() {
    let mut c = TestCluster::new();
    c.node("node1", json!({"cpu": "8", "memory": "16Gi", "pods": "20"}));
    let started = |minutes: i64| (test_now() - SignedDuration::from_mins(minutes)).to_string();
    let cases = [
        ("pending-without-node", "Pending", None, None, false),
        (
            "running-recent",
            "Running",
            Some("node1"),
            Some(started(1)),
            true,
        ),
        (
            "running-old",
            "Running",
            Some("node1"),
            Some(started(10)),
            false,
        ),
        ("running-no-start", "Running", Some("node1"), None, true),
        ("succeeded", "Succeeded", Some("node1"), None, false),
    ];
    for (name, phase, node, start, _) in &cases {
        let mut p = pod("ns", name, None, phase, *node, json!({"cpu": "1"}));
        if let Some(s) = start {
            p["status"]["startTime"] = json!(s);
        }
        c.pod(p);
    }
    let mut ssn = c.session(&[&[]]);
    let mut plugin = UsagePlugin {
        args: UsageArgs::default(),
        metrics_interval: SignedDuration::from_mins(5),
        shadow: ShadowCache::default(),
    };
    for (name, _, _, _, expected) in &cases {
        let task = ssn.state.task_by_key(&format!("ns/{name}"));
        assert_eq!(
            plugin.invisible_to_metrics(&ssn.state, task),
            *expected,
            "{name}"
        );
    }
    // Allocated, Binding and Bound tasks are placed: tracked.
    allocate(&mut ssn, "ns/pending-without-node", "node1");
    let task = ssn.state.task_by_key("ns/pending-without-node");
    assert!(plugin.invisible_to_metrics(&ssn.state, task));
    plugin.on_session_close(&mut ssn.state);
}

/// An allocation adds its estimate to the node, so the next task sees the node as busier;
/// undoing it removes exactly that estimate.
#[test]
fn allocations_add_shadow_load_and_deallocations_remove_it() {
    let c = cluster(&[("n1", 30.0, 50.0, NOW), ("n2", 30.0, 50.0, NOW)]);
    let mut ssn = session(&c, &default_args());
    let task = ssn.state.task_by_key("c1/p2");
    let (n1, n2) = (ssn.state.node_by_key("n1"), ssn.state.node_by_key("n2"));
    assert_close(
        &[
            ssn.node_order(task, n1).unwrap(),
            ssn.node_order(task, n2).unwrap(),
        ],
        &[300.0, 300.0],
    );
    let p1 = ssn.state.task_by_key("c1/p1");
    let mut stmt = engine::framework::Statement::new();
    ssn.allocate(&mut stmt, p1, n1).expect("allocate");
    // p1 (1 cpu, 1Gi, no limits): 0.7 × request at risk factor 1 (composite load 0.4 < 0.6):
    // cpu (1200 + 700) / 4000 = 0.475, memory (4 Gi + 0.7 Gi) / 8 Gi = 0.5875.
    let expected = ((1.0 - 0.475) + (1.0 - 0.5875)) / 2.0 * 500.0;
    assert_close(
        &[
            ssn.node_order(task, n1).unwrap(),
            ssn.node_order(task, n2).unwrap(),
        ],
        &[expected, 300.0],
    );
    ssn.discard(stmt);
    assert_close(&[ssn.node_order(task, n1).unwrap()], &[300.0]);
}

#[test]
fn estimator_formulas() {
    let close = |a: f64, e: f64| assert!((a - e).abs() < 1e-6, "{a} != {e}");
    close(load_composite(0.4, 0.6, 1, 1), 0.5);
    close(load_composite(0.8, 0.2, 3, 1), 0.65);
    close(load_composite(0.8, 0.2, 0, 0), 0.0);
    close(applied_risk_factor(0.59, 0.6, 1.2), 1.0);
    close(applied_risk_factor(0.6, 0.6, 1.2), 1.2);
    close(applied_risk_factor(0.9, 0.6, 1.2), 1.2);
    close(applied_risk_factor(0.9, 0.6, 0.8), 1.0);
    close(estimate_pod(500.0, 2000.0, 1.0, 0.0, 1.0), 500.0);
    close(estimate_pod(500.0, 2000.0, 0.0, 0.0, 1.0), 0.0);
    close(estimate_pod(500.0, 2000.0, 1.0, 1.0, 1.0), 2000.0);
    close(estimate_pod(500.0, 2000.0, 0.5, 0.2, 1.0), 550.0);
    close(estimate_pod(500.0, 600.0, 1.0, 0.0, 1.2), 600.0);
    close(estimate_pod(500.0, 0.0, 1.0, 1.0, 1.2), 500.0);
    close(estimate_best_effort(250.0, 1.0), 250.0);
    close(estimate_best_effort(250.0, 1.2), 300.0);
    close(estimate_best_effort(-1.0, 1.2), 0.0);
    close(composite_utilization(50.0, 0.0, 8000.0), 0.5);
    close(composite_utilization(50.0, 2000.0, 8000.0), 0.75);
    close(composite_utilization(80.0, 5000.0, 8000.0), 1.0);
    close(composite_utilization(50.0, 1000.0, 0.0), 0.0);
    close(composite_utilization(0.0, 0.0, 8000.0), 0.0);
    close(composite_utilization(100.0, 0.0, 8000.0), 1.0);
    close(node_score(0.0, 0.0, 1, 1, 1), 100.0);
    close(node_score(1.0, 1.0, 1, 1, 1), 0.0);
    close(node_score(0.5, 0.5, 1, 1, 5), 250.0);
    close(node_score(0.3, 0.5, 1, 1, 5), 300.0);
    close(node_score(0.6, 0.5, 2, 8, 5), 240.0);
    close(node_score(0.5, 0.5, 0, 0, 5), 0.0);
}

#[test]
fn pod_requests_and_limits_are_aggregated_the_scheduler_way() {
    use engine::model::task::{pod_resource_limit, pod_resource_request};
    let gi = 1024.0 * 1024.0 * 1024.0;
    let container = |req: (&str, &str), lim: (&str, &str)| {
        json!({"name": "c", "resources": {
            "requests": {"cpu": req.0, "memory": req.1},
            "limits": {"cpu": lim.0, "memory": lim.1}}})
    };
    let check = |spec: serde_json::Value, expected: [f64; 4]| {
        let p: k8s_openapi::api::core::v1::Pod =
            serde_json::from_value(json!({"spec": spec})).expect("pod");
        let (r, l) = (pod_resource_request(&p), pod_resource_limit(&p));
        assert_eq!(
            [r.milli_cpu, l.milli_cpu, r.memory, l.memory],
            expected,
            "{spec}"
        );
    };
    let a = container(("500m", "1Gi"), ("1000m", "2Gi"));
    check(
        json!({"containers": [a.clone()]}),
        [500.0, 1000.0, gi, 2.0 * gi],
    );
    let b = container(("300m", "2Gi"), ("700m", "3Gi"));
    let first = container(("200m", "1Gi"), ("500m", "2Gi"));
    check(
        json!({"containers": [first, b]}),
        [500.0, 1200.0, 3.0 * gi, 5.0 * gi],
    );
    let init = container(("2000m", "4Gi"), ("3000m", "5Gi"));
    check(
        json!({"initContainers": [init], "containers": [a]}),
        [2000.0, 3000.0, 4.0 * gi, 5.0 * gi],
    );
    let mut sidecar = container(("1000m", "1Gi"), ("2000m", "2Gi"));
    sidecar["restartPolicy"] = json!("Always");
    let main = container(("1000m", "2Gi"), ("2000m", "3Gi"));
    check(
        json!({"initContainers": [sidecar], "containers": [main]}),
        [2000.0, 4000.0, 3.0 * gi, 5.0 * gi],
    );
    check(json!({"containers": [{"name": "c"}]}), [0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn shadow_cache_adds_moves_and_subtracts_by_snapshot() {
    let mut c = ShadowCache::default();
    c.add("node1", "t1", 1000.0, 2048.0);
    c.add("node1", "t2", 500.0, 1024.0);
    c.add("node1", "t3", 800.0, 1600.0);
    assert_eq!(c.node("node1"), (2300.0, 4672.0));
    assert_eq!(
        c.snapshot("t1").map(|s| (s.cpu, s.mem)),
        Some((1000.0, 2048.0))
    );
    // Re-adding a task on another node first removes it from the old one.
    let mut c = ShadowCache::default();
    c.add("node1", "t1", 1000.0, 2048.0);
    c.add("node2", "t1", 500.0, 1024.0);
    assert_eq!(
        (c.node("node1"), c.node("node2")),
        ((0.0, 0.0), (500.0, 1024.0))
    );
    c.sub("t1");
    assert_eq!(c.node("node2"), (0.0, 0.0));
    // Subtraction by snapshot, unknown tasks ignored, exact return to zero.
    let mut c = ShadowCache::default();
    c.add("node1", "pod1", 800.0, 1600.0);
    c.add("node1", "pod2", 960.0, 1920.0);
    c.add("node1", "pod3", 1152.0, 2304.0);
    assert_eq!(c.node("node1"), (2912.0, 5824.0));
    c.sub("nonexistent");
    c.sub("pod3");
    assert_eq!(c.node("node1"), (1760.0, 3520.0));
    c.sub("pod1");
    assert_eq!(c.node("node1").0, 960.0);
    c.sub("pod2");
    assert_eq!(c.node("node1"), (0.0, 0.0));
    assert!(c.snapshot("pod2").is_none());
    assert_eq!(c.node("nonexistent"), (0.0, 0.0));
    c.add("node1", "t", 1.0, 1.0);
    c.clear();
    assert_eq!(
        (c.node("node1"), c.snapshot("t").is_none()),
        ((0.0, 0.0), true)
    );
}
