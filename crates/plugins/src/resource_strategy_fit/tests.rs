//! Unit tests: every case of Volcano's `resource_strategy_fit_test.go`, `sra_test.go` and
//! `proportional_test.go` that is about one function's value (the allocate and predicate cases
//! are scenarios under `tests/scenarios/resource-strategy-fit-*`), then the vectors F1–F16 of
//! spec/plugins-more.md §16 and the argument decoding rules.

use std::collections::BTreeMap;

use engine::conf::{ArgValue, Arguments, PluginOption};
use engine::framework::{ExtensionPoints, Session};
use engine::model::{Resource, StatusCode};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::proportional::{Proportional, Ratio};
use super::sra::{SraWeights, sra_score};
use super::*;
use crate::testutil::{StateLookup, TestCluster, pod, pod_group};

use ScoringType::{LeastAllocated as Least, MostAllocated as Most};

const GI: f64 = 1024.0 * 1024.0 * 1024.0;
const G: f64 = 1e9;

/// A JSON literal as the configuration parser would type it.
fn arg(v: &Value) -> ArgValue {
    match v {
        Value::Null => ArgValue::Null,
        Value::Bool(b) => ArgValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => ArgValue::Int(i),
            (None, Some(u)) => ArgValue::Uint(u),
            _ => ArgValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => ArgValue::Str(s.clone()),
        Value::Array(items) => ArgValue::List(items.iter().map(arg).collect()),
        Value::Object(m) => ArgValue::Map(
            m.iter()
                .map(|(k, v)| (ArgValue::Str(k.clone()), arg(v)))
                .collect(),
        ),
    }
}

fn args(v: Value) -> Arguments {
    match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), arg(v))).collect(),
        _ => panic!("arguments must be an object"),
    }
}

fn table(entries: &[(&str, ScoringType, i64)]) -> BTreeMap<String, ResourceStrategy> {
    entries
        .iter()
        .map(|&(name, kind, weight)| (name.to_owned(), ResourceStrategy { kind, weight }))
        .collect()
}

fn config(weight: i64, entries: &[(&str, ScoringType, i64)]) -> StrategyConfig {
    StrategyConfig::new(weight, table(entries))
}

fn res(cpu_milli: f64, memory: f64, scalars: &[(&str, f64)]) -> Resource {
    Resource::from_pairs(cpu_milli, memory, scalars)
}

fn annotated(annotations: &[(&str, &str)]) -> Pod {
    let a: serde_json::Map<String, Value> = annotations
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    serde_json::from_value(json!({"metadata": {"name": "p", "annotations": a}})).expect("valid pod")
}

fn pod_type(kind: &str, weights: &str) -> PodStrategy {
    PodStrategy::of(&annotated(&[
        (apis::keys::RESOURCE_STRATEGY_SCORING_TYPE, kind),
        (apis::keys::RESOURCE_STRATEGY_WEIGHT, weights),
    ]))
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-6 * want.abs().max(1.0)
}

fn session(c: &TestCluster, a: Value) -> Session {
    c.session_with(vec![vec![PluginOption::new(NAME).with_arguments(args(a))]])
}

/// Checks `node_order` for every (pod, node) pair of `want`.
fn check_scores(ssn: &Session, want: &[(&str, &[(&str, f64)])]) {
    assert!(ssn.has_node_order());
    for &(pod_key, nodes) in want {
        let t = ssn.state.task_by_key(pod_key);
        for &(node, score) in nodes {
            let got = ssn
                .node_order(t, ssn.state.node_by_key(node))
                .expect("scoring never fails");
            assert!(
                close(got, score),
                "{pod_key} on {node}: got {got}, want {score}"
            );
        }
    }
}

fn pending_pod(c: &mut TestCluster, name: &str, requests: Value) {
    c.pod(pod("c1", name, Some("pg1"), "Pending", None, requests));
}

// ---- resource_strategy_fit_test.go: Test_calculateWeight ---------------------------------------

#[test]
fn calculate_weight_test1_to_test3() {
    let two = json!({"cpu": {"type": "MostAllocated", "weight": 1},
                     "memory": {"type": "LeastAllocated", "weight": 2}});
    let want = config(10, &[("cpu", Most, 1), ("memory", Least, 2)]);
    // test1: explicit weight 10.
    let got = StrategyConfig::from_arguments(&args(
        json!({"resourceStrategyFitWeight": 10, "resources": two.clone()}),
    ));
    assert_eq!(got, want);
    // test2: weight omitted → 10.
    assert_eq!(
        StrategyConfig::from_arguments(&args(json!({"resources": two}))),
        want
    );
    // test3: resources omitted → cpu and memory LeastAllocated, weight 1.
    assert_eq!(
        StrategyConfig::from_arguments(&args(json!({"resourceStrategyFitWeight": 10}))),
        config(10, &[("cpu", Least, 1), ("memory", Least, 1)])
    );
}

#[test]
fn calculate_weight_test4_to_test7_drop_invalid_wildcards() {
    // The Go cases misspell the weight key (`ResourceStrategyFitPlusWeight`): default 10.
    let cases = [
        (
            json!({"cpu": {"type": "LeastAllocated", "weight": 1},
                   "*": {"type": "MostAllocated", "weight": 2}}),
            vec![("cpu", Least, 1)],
        ),
        (
            json!({"nvidia.com/gpu/*": {"type": "MostAllocated", "weight": 3},
                   "cloudml.gpu**": {"type": "LeastAllocated", "weight": 2}}),
            vec![("nvidia.com/gpu/*", Most, 3)],
        ),
        (
            json!({"memory": {"type": "LeastAllocated", "weight": 1},
                   "cloudml.*.gpu": {"type": "MostAllocated", "weight": 2},
                   "*.com/gpu": {"type": "MostAllocated", "weight": 3}}),
            vec![("memory", Least, 1)],
        ),
        (
            json!({"nvidia.com/gpu/*": {"type": "MostAllocated", "weight": 3},
                   "example.com/foo/*": {"type": "LeastAllocated", "weight": 2},
                   "*test*resource*": {"type": "MostAllocated", "weight": 4},
                   "*": {"type": "LeastAllocated", "weight": 1}}),
            vec![
                ("nvidia.com/gpu/*", Most, 3),
                ("example.com/foo/*", Least, 2),
            ],
        ),
    ];
    for (resources, want) in cases {
        let got = StrategyConfig::from_arguments(&args(
            json!({"ResourceStrategyFitPlusWeight": 10, "resources": resources}),
        ));
        assert_eq!(got, config(10, &want), "{resources}");
    }
}

// ---- TestScore ----------------------------------------------------------------------------------

/// One `TestScore` case: task (milli-cpu, memory), node (used cpu, used memory, allocatable cpu,
/// allocatable memory), all in raw units as in the Go test.
fn score_case(
    name: &str,
    pod: &PodStrategy,
    task: [f64; 2],
    node: [f64; 4],
    cfg: &StrategyConfig,
    want: f64,
) {
    let request = res(task[0], task[1], &[]);
    let (used, allocatable) = (res(node[0], node[1], &[]), res(node[2], node[3], &[]));
    let got = strategy_score(cfg, pod, &request, &allocatable, &used);
    assert!((got - want).abs() < 1e-6, "{name}: got {got}, want {want}");
}

#[test]
fn score_cases() {
    let plain = &PodStrategy::Configured;
    let task = [100.0, 100.0];
    let node = [200.0, 200.0, 500.0, 500.0];
    let small = [200.0, 200.0, 400.0, 400.0];
    let least = |w, cw, mw| config(w, &[("cpu", Least, cw), ("memory", Least, mw)]);
    let most = |w, cw, mw| config(w, &[("cpu", Most, cw), ("memory", Most, mw)]);
    let mixed = |c, cw, m, mw| config(10, &[("cpu", c, cw), ("memory", m, mw)]);
    score_case("test1", plain, task, node, &least(10, 1, 1), 400.0);
    score_case("test2", plain, task, small, &least(10, 1, 1), 250.0);
    score_case("test3", plain, task, node, &most(10, 1, 1), 600.0);
    score_case("test4", plain, task, small, &most(10, 1, 1), 750.0);
    let cfg = mixed(Least, 2, Most, 1);
    score_case("test5", plain, task, node, &cfg, 466.666_666_67);
    let cfg = mixed(Least, 1, Most, 2);
    score_case("test6", plain, task, node, &cfg, 533.333_333_33);
    score_case("test7", plain, [0.0, 100.0], node, &cfg, 600.0);
    // cpu allocatable 0: that resource scores 0 but its weight still counts.
    score_case(
        "test8",
        plain,
        task,
        [200.0, 200.0, 0.0, 400.0],
        &cfg,
        500.0,
    );
    let cfg = config(10, &[("memory", Most, 2)]);
    score_case("test9", plain, task, node, &cfg, 600.0);

    let pod = pod_type("LeastAllocated", r#"{"cpu": 2, "memory": 1}"#);
    score_case(
        "pod-level-scoring-least-allocated",
        &pod,
        task,
        node,
        &least(10, 1, 1),
        400.0,
    );
    let pod = pod_type("MostAllocated", r#"{"cpu": 1, "memory": 2}"#);
    score_case(
        "pod-level-scoring-most-allocated",
        &pod,
        task,
        node,
        &least(10, 1, 1),
        600.0,
    );
    let pod = pod_type("LeastAllocated", "invalid-json");
    score_case(
        "pod-level-scoring-invalid-json",
        &pod,
        task,
        node,
        &least(10, 1, 1),
        0.0,
    );
    let pod = pod_type("LeastAllocated", r#"{"cpu": 2}"#);
    let name = "pod-level-scoring-missing-resource-weight";
    score_case(name, &pod, task, node, &least(10, 1, 1), 400.0);

    score_case(
        "zero-resources-requested",
        plain,
        [0.0, 0.0],
        node,
        &least(10, 1, 1),
        0.0,
    );
    let full = [500.0, 500.0, 500.0, 500.0];
    score_case(
        "node-fully-allocated",
        plain,
        task,
        full,
        &least(10, 1, 1),
        0.0,
    );
    let cfg = mixed(Least, 3, Most, 1);
    score_case("mixed-scoring-strategies", plain, task, node, &cfg, 450.0);
    score_case(
        "high-weight-scenario",
        plain,
        task,
        node,
        &least(20, 5, 5),
        800.0,
    );
}

// ---- Test_mostRequestedScore / Test_leastRequestedScore -----------------------------------------

#[test]
fn requested_score_helpers() {
    // test1: everything 0 → 0, no error; test2: 1 + 2 > 2 → error.
    assert_eq!(most_requested_score(0.0, 0.0, 0.0, 0), Some(0.0));
    assert_eq!(most_requested_score(1.0, 2.0, 2.0, 1), None);
    assert_eq!(least_requested_score(0.0, 0.0, 0.0, 0), Some(0.0));
    assert_eq!(least_requested_score(1.0, 2.0, 2.0, 1), None);
}

// ---- TestResourceStrategyFitPlugin_OnSessionOpen ------------------------------------------------

#[test]
fn opens_on_an_empty_cluster() {
    let ssn = TestCluster::new().session(&[&[NAME]]);
    assert!(ssn.has_node_order());
}

// ---- TestResourceStrategyFitPlugin --------------------------------------------------------------

fn foo_gpu_cluster() -> TestCluster {
    let mut c = TestCluster::new();
    let base = |extra: &[(&str, &str)]| {
        let mut v = json!({"cpu": "4", "memory": "4Gi", "pods": "10"});
        for (k, q) in extra {
            v[*k] = json!(q);
        }
        v
    };
    c.node("n1", base(&[("nvidia.com/gpu", "10")]));
    c.node("n2", base(&[("nvidia.com/gpu", "5")]));
    c.node("n3", base(&[("example.com/foo", "10")]));
    c.node("n4", base(&[("example.com/foo", "5")]));
    c.node(
        "n5",
        base(&[("nvidia.com/gpu", "10"), ("example.com/foo", "5")]),
    );
    // The Go case sets foo twice on n6; the second value (10) stays.
    c.node("n6", base(&[("example.com/foo", "10")]));
    c.pod_group(pod_group("c1", "pg1", 0));
    pending_pod(
        &mut c,
        "p1",
        json!({"cpu": "1", "memory": "1Gi", "example.com/foo": "2"}),
    );
    pending_pod(
        &mut c,
        "p2",
        json!({"cpu": "1", "memory": "1Gi", "example.com/foo": "3"}),
    );
    pending_pod(
        &mut c,
        "p3",
        json!({"cpu": "1", "memory": "10Gi", "nvidia.com/gpu": "2"}),
    );
    pending_pod(
        &mut c,
        "p4",
        json!({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "3"}),
    );
    pending_pod(
        &mut c,
        "p5",
        json!({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4", "example.com/foo": "4"}),
    );
    c
}

#[test]
fn plugin_scores_extended_resources() {
    let c = foo_gpu_cluster();
    let ssn = session(
        &c,
        json!({"resourceStrategyFitWeight": 10, "resources": {
            "nvidia.com/gpu": {"type": "MostAllocated", "weight": 1},
            "example.com/foo": {"type": "LeastAllocated", "weight": 1}}}),
    );
    check_scores(
        &ssn,
        &[
            (
                "c1/p1",
                &[("n1", 0.0), ("n2", 0.0), ("n3", 800.0), ("n4", 600.0)],
            ),
            (
                "c1/p2",
                &[("n1", 0.0), ("n2", 0.0), ("n3", 700.0), ("n4", 400.0)],
            ),
            (
                "c1/p3",
                &[("n1", 200.0), ("n2", 400.0), ("n3", 0.0), ("n4", 0.0)],
            ),
            (
                "c1/p4",
                &[("n1", 300.0), ("n2", 600.0), ("n3", 0.0), ("n4", 0.0)],
            ),
        ],
    );
    let ssn = session(
        &c,
        json!({"resourceStrategyFitWeight": 10, "resources": {
            "nvidia.com/gpu": {"type": "MostAllocated", "weight": 1},
            "example.com/foo": {"type": "LeastAllocated", "weight": 2}}}),
    );
    check_scores(
        &ssn,
        &[("c1/p5", &[("n5", 266.666_666_66), ("n6", 399.999_999_99)])],
    );
}

/// A pod's own strategy (annotations, F9) is read at session open and used when its nodes are
/// scored; its neighbour without annotations keeps the configured table.
#[test]
fn plugin_uses_the_pods_own_strategy_from_its_annotations() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "10Gi", "pods": "10"}));
    c.pod_group(pod_group("c1", "pg1", 0));
    let requests = json!({"cpu": "5", "memory": "2Gi"});
    let mut own = pod("c1", "own", Some("pg1"), "Pending", None, requests.clone());
    own["metadata"]["annotations"][apis::keys::RESOURCE_STRATEGY_SCORING_TYPE] =
        json!("MostAllocated");
    own["metadata"]["annotations"][apis::keys::RESOURCE_STRATEGY_WEIGHT] = json!(r#"{"cpu": 2}"#);
    c.pod(own);
    pending_pod(&mut c, "plain", requests);
    let ssn = session(&c, json!({}));
    // own: cpu only, MostAllocated: 5/10 → 0.5 × 100 × 10. plain: cpu and memory
    // LeastAllocated weight 1: (0.5 + 0.8) / 2 × 100 × 10.
    check_scores(
        &ssn,
        &[("c1/own", &[("n1", 500.0)]), ("c1/plain", &[("n1", 650.0)])],
    );
}

// ---- Test_findResourceConfigWithPrefix ----------------------------------------------------------

#[test]
fn find_resource_config_with_prefix() {
    let cfg = config(
        10,
        &[("nvidia.com/gpu", Most, 3), ("nvidia.com/*", Least, 1)],
    );
    // exact_match_priority
    assert_eq!(
        cfg.lookup("nvidia.com/gpu"),
        Some(ResourceStrategy {
            kind: Most,
            weight: 3
        })
    );
    // longest_prefix_match
    let cfg = config(
        10,
        &[("nvidia.com/gpu/*", Most, 2), ("nvidia.com/*", Least, 1)],
    );
    assert_eq!(
        cfg.lookup("nvidia.com/gpu/v100"),
        Some(ResourceStrategy {
            kind: Most,
            weight: 2
        })
    );
    // no_match_found, empty_resources_map
    assert_eq!(
        config(10, &[("nvidia.com/gpu/*", Most, 2)]).lookup("example.com/foo"),
        None
    );
    assert_eq!(config(10, &[]).lookup("any.resource"), None);
    // multiple_valid_wildcards_longest_match
    let cfg = config(
        10,
        &[
            ("cloudml.gpu/tensorflow/*", Most, 3),
            ("cloudml.gpu/*", Least, 2),
            ("cloudml/*", Most, 1),
        ],
    );
    assert_eq!(
        cfg.lookup("cloudml.gpu/tensorflow/v2"),
        Some(ResourceStrategy {
            kind: Most,
            weight: 3
        })
    );
}

// ---- sra_test.go: TestArguments -----------------------------------------------------------------

#[test]
fn sra_and_proportional_arguments() {
    let p = ResourceStrategyFit::from_arguments(&args(json!({
        "sra": {"enable": true, "resources": "nvidia.com/t4, nvidia.com/a10", "weight": 3,
                "resourceWeight": {"nvidia.com/t4": 1, "nvidia.com/a10": 2}},
        "proportional": {"enable": true, "resources": "nvidia.com/t4, nvidia.com/a10",
                "resourceProportion": {"nvidia.com/t4.cpu": 3, "nvidia.com/t4.memory": 6,
                                       "nvidia.com/a10.cpu": 4, "nvidia.com/a10.memory": 8}}
    })));
    assert_eq!(p.sra.weight, 3);
    assert_eq!(p.sra.weight_sum, 3);
    assert_eq!(
        p.sra.resources,
        BTreeMap::from([
            ("nvidia.com/t4".to_owned(), 1),
            ("nvidia.com/a10".to_owned(), 2)
        ])
    );
    let prop = p.proportional.expect("enabled");
    assert_eq!(
        prop.resources,
        BTreeMap::from([
            (
                "nvidia.com/t4".to_owned(),
                Ratio {
                    cpu: 3.0,
                    memory: 6.0
                }
            ),
            (
                "nvidia.com/a10".to_owned(),
                Ratio {
                    cpu: 4.0,
                    memory: 8.0
                }
            ),
        ])
    );
}

// ---- sra_test.go: TestNode ----------------------------------------------------------------------

fn sra_cluster() -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "32", "memory": "64Gi", "pods": "10"}));
    c.node(
        "n2",
        json!({"cpu": "8", "memory": "16Gi", "pods": "10", "nvidia.com/t4": "16"}),
    );
    c.node(
        "n3",
        json!({"cpu": "8", "memory": "16Gi", "pods": "10", "nvidia.com/a10": "16"}),
    );
    c.node(
        "n4",
        json!({"cpu": "8", "memory": "16Gi", "pods": "10",
               "nvidia.com/t4": "8", "nvidia.com/a10": "16"}),
    );
    c.pod_group(pod_group("c1", "pg1", 0));
    pending_pod(&mut c, "p1", json!({"cpu": "1", "memory": "1Gi"}));
    pending_pod(
        &mut c,
        "p2",
        json!({"cpu": "1.5", "memory": "0Gi", "nvidia.com/t4": "2"}),
    );
    pending_pod(
        &mut c,
        "p3",
        json!({"cpu": "2", "memory": "4Gi", "nvidia.com/a10": "2"}),
    );
    pending_pod(
        &mut c,
        "p4",
        json!({"cpu": "3", "memory": "4Gi", "nvidia.com/t4": "1", "nvidia.com/a10": "3"}),
    );
    c
}

#[test]
fn sra_case1_multi_gpu_resources() {
    let ssn = session(
        &sra_cluster(),
        json!({"resourceStrategyFitWeight": 0, "sra": {"enable": true,
            "resources": "nvidia.com/t4, nvidia.com/a10", "weight": 5,
            "resourceWeight": {"nvidia.com/t4": 2, "nvidia.com/a10": 3}}}),
    );
    check_scores(
        &ssn,
        &[
            (
                "c1/p1",
                &[("n1", 500.0), ("n2", 300.0), ("n3", 200.0), ("n4", 0.0)],
            ),
            (
                "c1/p2",
                &[("n1", 0.0), ("n2", 300.0), ("n3", 0.0), ("n4", 0.0)],
            ),
            (
                "c1/p3",
                &[("n1", 0.0), ("n2", 0.0), ("n3", 200.0), ("n4", 0.0)],
            ),
            (
                "c1/p4",
                &[("n1", 0.0), ("n2", 0.0), ("n3", 0.0), ("n4", 0.0)],
            ),
        ],
    );
}

#[test]
fn sra_case2_single_gpu_resource() {
    let ssn = session(
        &sra_cluster(),
        json!({"resourceStrategyFitWeight": 0, "sra": {"enable": true,
            "resources": "nvidia.com/t4", "weight": 5, "resourceWeight": {"nvidia.com/t4": 2}}}),
    );
    check_scores(
        &ssn,
        &[
            (
                "c1/p1",
                &[("n1", 500.0), ("n2", 0.0), ("n3", 500.0), ("n4", 0.0)],
            ),
            (
                "c1/p2",
                &[("n1", 0.0), ("n2", 0.0), ("n3", 0.0), ("n4", 0.0)],
            ),
            (
                "c1/p3",
                &[("n1", 0.0), ("n2", 0.0), ("n3", 500.0), ("n4", 0.0)],
            ),
            (
                "c1/p4",
                &[("n1", 0.0), ("n2", 0.0), ("n3", 0.0), ("n4", 0.0)],
            ),
        ],
    );
}

/// Cases 3 and 4 differ only in the SRA weight (0: strategy score alone).
fn sra_with_strategy(sra_weight: i64) -> Session {
    session(
        &sra_cluster(),
        json!({"resourceStrategyFitWeight": 8,
            "resources": {"nvidia.com/t4": {"type": "MostAllocated", "weight": 3},
                          "cpu": {"type": "LeastAllocated", "weight": 1}},
            "sra": {"enable": true, "resources": "nvidia.com/t4", "weight": sra_weight,
                    "resourceWeight": {"nvidia.com/t4": 2}}}),
    )
}

#[test]
fn sra_case3_strategy_only() {
    check_scores(
        &sra_with_strategy(0),
        &[
            (
                "c1/p1",
                &[("n1", 775.0), ("n2", 700.0), ("n3", 700.0), ("n4", 700.0)],
            ),
            (
                "c1/p2",
                &[("n1", 190.625), ("n2", 237.5), ("n3", 162.5), ("n4", 312.5)],
            ),
            (
                "c1/p3",
                &[("n1", 750.0), ("n2", 600.0), ("n3", 600.0), ("n4", 600.0)],
            ),
            (
                "c1/p4",
                &[("n1", 181.25), ("n2", 162.5), ("n3", 125.0), ("n4", 200.0)],
            ),
        ],
    );
}

#[test]
fn sra_case4_strategy_plus_sra() {
    check_scores(
        &sra_with_strategy(5),
        &[
            (
                "c1/p1",
                &[("n1", 1275.0), ("n2", 700.0), ("n3", 1200.0), ("n4", 700.0)],
            ),
            (
                "c1/p2",
                &[("n1", 190.625), ("n2", 237.5), ("n3", 162.5), ("n4", 312.5)],
            ),
            (
                "c1/p3",
                &[("n1", 750.0), ("n2", 600.0), ("n3", 1100.0), ("n4", 600.0)],
            ),
            (
                "c1/p4",
                &[("n1", 181.25), ("n2", 162.5), ("n3", 125.0), ("n4", 200.0)],
            ),
        ],
    );
}

// ---- proportional_test.go: Test_checkNodeResourceIsProportional ---------------------------------

fn gpu_proportional(cpu: f64, memory: f64) -> Proportional {
    Proportional {
        resources: BTreeMap::from([("nvidia.com/gpu".to_owned(), Ratio { cpu, memory })]),
    }
}

/// A request or idle vector in cores / 10⁹ bytes / GPUs, the GPU entry present even at 0.
fn gpu_res(cores: f64, bytes: f64, gpus: f64) -> Resource {
    res(cores * 1000.0, bytes, &[("nvidia.com/gpu", gpus * 1000.0)])
}

#[test]
fn check_node_resource_is_proportional() {
    let p = gpu_proportional(4.0, 4.0);
    let (t1, t2, t3) = (
        gpu_res(4.0, 4.0 * G, 0.0),
        gpu_res(10.0, 10.0 * G, 0.0),
        gpu_res(10.0, 10.0 * G, 1.0),
    );
    let (n1, n2) = (gpu_res(30.0, 30.0 * G, 6.0), gpu_res(26.0, 26.0 * G, 2.0));
    assert_eq!(
        p.check(&t1, &n1),
        Ok(()),
        "cpu_task_less_than_reserved_resource"
    );
    assert_eq!(
        p.check(&t2, &n1),
        Err("nvidia.com/gpu"),
        "cpu_task_greater_than_reserved_resource"
    );
    assert_eq!(p.check(&t3, &n1), Ok(()), "gpu_task_no_proportional_check");
    assert_eq!(
        p.check(&t2, &n2),
        Ok(()),
        "cpu_task_less_than_idle_resource"
    );
}

#[test]
fn predicate_failure_is_unresolvable_and_names_the_resource() {
    let mut c = TestCluster::new();
    c.node(
        "n1",
        json!({"cpu": "30", "memory": "30G", "nvidia.com/gpu": "6", "pods": "110"}),
    );
    c.pod_group(pod_group("c1", "pg1", 1));
    pending_pod(&mut c, "t2", json!({"cpu": "10", "memory": "10G"}));
    let ssn = session(
        &c,
        json!({"proportional": {"enable": true, "resources": "nvidia.com/gpu",
            "resourceProportion": {"nvidia.com/gpu.cpu": 4, "nvidia.com/gpu.memory": 4}}}),
    );
    let err = ssn
        .predicate(ssn.state.task_by_key("c1/t2"), ssn.state.node_by_key("n1"))
        .expect_err("20 idle cores < 24 reserved");
    assert_eq!(err.statuses.len(), 1);
    let status = &err.statuses[0];
    assert_eq!(status.code, StatusCode::UnschedulableAndUnresolvable);
    assert_eq!(
        status.reason,
        "proportional of resource nvidia.com/gpu check failed"
    );
    assert_eq!(status.plugin, NAME);
}

// ---- spec §16 vectors F1–F16 --------------------------------------------------------------------

fn defaults() -> StrategyConfig {
    StrategyConfig::from_arguments(&Arguments::new())
}

fn f1_node() -> (Resource, Resource) {
    (res(10_000.0, 10.0 * GI, &[]), res(3000.0, 3.0 * GI, &[]))
}

#[test]
fn f1_defaults() {
    let (alloc, used) = f1_node();
    let t = res(2000.0, 2.0 * GI, &[]);
    assert_eq!(
        defaults(),
        config(10, &[("cpu", Least, 1), ("memory", Least, 1)])
    );
    let got = strategy_score(&defaults(), &PodStrategy::Configured, &t, &alloc, &used);
    assert!(close(got, 500.0), "{got}");
}

#[test]
fn f2_single_resource_formulas() {
    assert_eq!(most_requested_score(2.0, 3.0, 10.0, 1), Some(0.5));
    assert_eq!(least_requested_score(2.0, 3.0, 10.0, 1), Some(0.5));
}

#[test]
fn f3_mixed_strategies() {
    let cfg = config(10, &[("cpu", Most, 2), ("memory", Least, 1)]);
    let (alloc, used) = (res(10_000.0, 10.0 * GI, &[]), res(6000.0, 6.0 * GI, &[]));
    let got = strategy_score(
        &cfg,
        &PodStrategy::Configured,
        &res(2000.0, 2.0 * GI, &[]),
        &alloc,
        &used,
    );
    assert!(close(got, 600.0), "{got}");
}

#[test]
fn f4_overflow_zeroes_the_node() {
    let alloc = res(10_000.0, 10.0 * GI, &[]);
    let used = res(9000.0, 3.0 * GI, &[]);
    let t = res(2000.0, 2.0 * GI, &[]);
    assert_eq!(
        strategy_score(&defaults(), &PodStrategy::Configured, &t, &alloc, &used),
        0.0
    );
}

#[test]
fn f5_wildcard_on_a_node_without_the_resource() {
    let cfg = StrategyConfig::from_arguments(&args(json!({"resources": {
        "cpu": {"type": "LeastAllocated", "weight": 1},
        "nvidia.com/*": {"type": "MostAllocated", "weight": 2}}})));
    let (alloc, used) = f1_node();
    let t = res(2000.0, 0.0, &[("nvidia.com/gpu", 1000.0)]);
    let got = strategy_score(&cfg, &PodStrategy::Configured, &t, &alloc, &used);
    assert!(close(got, 500.0 / 3.0), "{got}");
}

#[test]
fn f6_longest_prefix_and_exact_match() {
    let cfg = config(10, &[("nvidia.com/*", Most, 2), ("nvidia.*", Least, 5)]);
    assert_eq!(
        cfg.lookup("nvidia.com/gpu"),
        Some(ResourceStrategy {
            kind: Most,
            weight: 2
        })
    );
    assert_eq!(
        cfg.lookup("nvidia.io/x"),
        Some(ResourceStrategy {
            kind: Least,
            weight: 5
        })
    );
    let cfg = config(
        10,
        &[
            ("nvidia.com/*", Most, 2),
            ("nvidia.*", Least, 5),
            ("nvidia.com/gpu", Least, 7),
        ],
    );
    assert_eq!(
        cfg.lookup("nvidia.com/gpu"),
        Some(ResourceStrategy {
            kind: Least,
            weight: 7
        })
    );
}

#[test]
fn f7_invalid_wildcards_are_dropped() {
    for key in ["*", "*/gpu", "vendor.*/gpu", "x/**"] {
        assert!(!is_valid_wildcard_pattern(key), "{key}");
    }
    assert!(is_valid_wildcard_pattern("nvidia.com/*"));
    assert!(is_valid_wildcard_pattern("cpu"));
    let cfg = StrategyConfig::from_arguments(&args(json!({"resources": {
        "*": {"type": "MostAllocated", "weight": 1},
        "*/gpu": {}, "vendor.*/gpu": {}, "x/**": {}}})));
    // The default only replaces a missing or empty table, so nothing is scored at all.
    assert!(cfg.resources.is_empty());
    let (alloc, used) = f1_node();
    let t = res(2000.0, 2.0 * GI, &[]);
    assert_eq!(
        strategy_score(&cfg, &PodStrategy::Configured, &t, &alloc, &used),
        0.0
    );
}

#[test]
fn f8_unknown_type_and_bad_weight() {
    let cfg = StrategyConfig::from_arguments(&args(
        json!({"resources": {"cpu": {"type": "mostallocated", "weight": -2}}}),
    ));
    assert_eq!(cfg, config(10, &[("cpu", Least, 1)]));
}

#[test]
fn f9_pod_annotations_override_the_table() {
    let (alloc, used) = f1_node();
    let t = res(2000.0, 2.0 * GI, &[]);
    let pod = pod_type("MostAllocated", r#"{"cpu":2}"#);
    let got = strategy_score(&defaults(), &pod, &t, &alloc, &used);
    assert!(close(got, 500.0), "{got}");
}

#[test]
fn f10_pod_type_without_usable_weights() {
    let (alloc, used) = f1_node();
    let t = res(2000.0, 2.0 * GI, &[]);
    let missing = PodStrategy::of(&annotated(&[(
        apis::keys::RESOURCE_STRATEGY_SCORING_TYPE,
        "MostAllocated",
    )]));
    assert_eq!(missing, PodStrategy::Invalid);
    for pod in [
        missing,
        pod_type("MostAllocated", "{cpu: 1}"),
        pod_type("MostAllocated", r#"{"cpu": 1.5}"#),
    ] {
        assert_eq!(strategy_score(&defaults(), &pod, &t, &alloc, &used), 0.0);
    }
    // An empty type is "no pod strategy".
    assert_eq!(pod_type("", "garbage"), PodStrategy::Configured);
}

#[test]
fn f11_unknown_pod_type_scores_zero() {
    let (alloc, used) = f1_node();
    let t = res(2000.0, 2.0 * GI, &[]);
    let pod = pod_type("Foo", r#"{"cpu":1}"#);
    assert_eq!(
        pod,
        PodStrategy::Own {
            kind: None,
            weights: BTreeMap::from([("cpu".to_owned(), 1)])
        }
    );
    assert_eq!(strategy_score(&defaults(), &pod, &t, &alloc, &used), 0.0);
    // No overflow check for an unknown type: still 0, not an early exit with another value.
    let full = res(10_000.0, 10.0 * GI, &[]);
    assert_eq!(strategy_score(&defaults(), &pod, &t, &alloc, &full), 0.0);
}

fn f12_sra() -> SraWeights {
    SraWeights::from_argument(Some(&arg(&json!({"enable": true,
        "resources": "nvidia.com/t4, nvidia.com/a10", "weight": 2}))))
}

#[test]
fn f12_sra_scores() {
    let sra = f12_sra();
    assert_eq!(sra.weight_sum, 2);
    let node1 = res(32_000.0, 64.0 * GI, &[]);
    let node2 = res(32_000.0, 64.0 * GI, &[("nvidia.com/t4", 10_000.0)]);
    let node3 = res(
        32_000.0,
        64.0 * GI,
        &[("nvidia.com/t4", 5000.0), ("nvidia.com/a10", 10_000.0)],
    );
    let nodes = [&node1, &node2, &node3];
    let cases = [
        (res(2000.0, 4.0 * GI, &[]), [200.0, 100.0, 0.0]),
        (
            res(2000.0, 4.0 * GI, &[("nvidia.com/t4", 2000.0)]),
            [0.0, 100.0, 0.0],
        ),
        (
            res(
                2000.0,
                4.0 * GI,
                &[("nvidia.com/t4", 1000.0), ("nvidia.com/a10", 2000.0)],
            ),
            [0.0, 0.0, 0.0],
        ),
    ];
    for (task, want) in cases {
        for (node, w) in nodes.iter().zip(want) {
            assert!(
                close(sra_score(&task, node, &sra), w),
                "{task} on {node}: want {w}"
            );
        }
    }
}

#[test]
fn f13_sra_without_weight_and_zero_strategy_weight_registers_nothing() {
    let p = new(&args(json!({"resourceStrategyFitWeight": 0,
        "sra": {"enable": true, "resources": "nvidia.com/gpu"}})));
    assert_eq!(p.extension_points(), ExtensionPoints::NONE);
    // Either weight alone registers the node order; proportional alone only the predicate.
    let p = new(&args(json!({"resourceStrategyFitWeight": 0,
        "sra": {"enable": true, "resources": "nvidia.com/gpu", "weight": 1}})));
    assert_eq!(p.extension_points(), ExtensionPoints::NODE_ORDER);
    let p = new(&args(
        json!({"resourceStrategyFitWeight": 0, "proportional": {"enable": true}}),
    ));
    assert_eq!(p.extension_points(), ExtensionPoints::PREDICATE);
    let p = new(&Arguments::new());
    assert_eq!(p.extension_points(), ExtensionPoints::NODE_ORDER);
}

#[test]
fn f14_proportional_reserves_per_idle_gpu() {
    let p = gpu_proportional(8.0, 8.0);
    let node = gpu_res(66.0, 120.0 * G, 8.0);
    assert_eq!(
        p.check(&res(8000.0, 8.0 * G, &[]), &node),
        Err("nvidia.com/gpu")
    );
    assert_eq!(p.check(&res(2000.0, 8.0 * G, &[]), &node), Ok(()));
    assert_eq!(
        p.check(&gpu_res(8.0, 8.0 * G, 1.0), &node),
        Ok(()),
        "GPU tasks are exempt"
    );
}

#[test]
fn f15_memory_ratio_is_in_decimal_gigabytes() {
    let p = gpu_proportional(4.0, 8.0);
    let node = res(10_000.0, 20.0 * GI, &[("nvidia.com/gpu", 2000.0)]);
    assert_eq!(
        p.check(&res(3000.0, 0.0, &[]), &node),
        Err("nvidia.com/gpu")
    );
    assert_eq!(p.check(&res(2000.0, 0.0, &[]), &node), Ok(()));
    // 20 Gi − 4.5 Gi = 16 642 998 272 B ≥ 16·10⁹ B (a GiB reading would reject).
    assert_eq!(p.check(&res(2000.0, 4.5 * GI, &[]), &node), Ok(()));
}

#[test]
fn f16_default_ratios_are_one() {
    let p = Proportional::from_argument(Some(&arg(&json!({"enable": true,
        "resources": " nvidia.com/gpu ,, "}))))
    .expect("enabled");
    assert_eq!(p, gpu_proportional(1.0, 1.0));
    let node = gpu_res(8.0, 8.0 * G, 4.0);
    assert_eq!(p.check(&res(4000.0, 4.0 * G, &[]), &node), Ok(()));
    assert_eq!(
        p.check(&res(4001.0, 0.0, &[]), &node),
        Err("nvidia.com/gpu")
    );
    assert_eq!(
        p.check(&res(0.0, 4.0 * G + 1.0, &[]), &node),
        Err("nvidia.com/gpu")
    );
}

// ---- further rules of §8 ------------------------------------------------------------------------

#[test]
fn proportional_edge_cases() {
    let p = gpu_proportional(4.0, 4.0);
    // A node that lists the GPU at 0 still takes part: nothing is reserved, but the task must
    // fit the idle cpu and memory.
    let empty_gpu = gpu_res(2.0, 2.0 * G, 0.0);
    assert_eq!(
        p.check(&res(3000.0, 0.0, &[]), &empty_gpu),
        Err("nvidia.com/gpu")
    );
    // A node without the GPU entry is not checked at all.
    assert_eq!(
        p.check(&res(3000.0, 0.0, &[]), &res(2000.0, 2.0 * G, &[])),
        Ok(())
    );
    // Enabled without resources: always passes.
    let none = Proportional::from_argument(Some(&arg(&json!({"enable": true})))).expect("enabled");
    assert_eq!(
        none.check(
            &res(1e9, 1e18, &[]),
            &res(0.0, 0.0, &[("nvidia.com/gpu", 8000.0)])
        ),
        Ok(())
    );
    // Negative ratios become 1, zero is kept.
    let p = Proportional::from_argument(Some(&arg(&json!({"enable": true, "resources": "g",
        "resourceProportion": {"g.cpu": -3, "g.memory": 0}}))))
    .expect("enabled");
    assert_eq!(
        p.resources["g"],
        Ratio {
            cpu: 1.0,
            memory: 0.0
        }
    );
    assert_eq!(
        Proportional::from_argument(Some(&arg(&json!({"resources": "g"})))),
        None
    );
}

#[test]
fn sra_weights_rules() {
    // Omitted weight is 0; negative resource weights become 1; 0 is kept; duplicates count
    // twice in the sum.
    let sra = SraWeights::from_argument(Some(&arg(&json!({"enable": true,
        "resources": "a, b, c, a", "resourceWeight": {"a": -1, "b": 0}}))));
    assert_eq!(sra.weight, 0);
    assert_eq!(
        sra.resources,
        BTreeMap::from([
            ("a".to_owned(), 1),
            ("b".to_owned(), 0),
            ("c".to_owned(), 1)
        ])
    );
    assert_eq!(sra.weight_sum, 3);
    // Weights summing to 0: the raw sum (0) is used.
    let zero = SraWeights::from_argument(Some(&arg(&json!({"enable": true, "resources": "a",
        "weight": 1, "resourceWeight": {"a": 0}}))));
    assert_eq!(
        sra_score(
            &res(1000.0, 0.0, &[]),
            &res(2000.0, 0.0, &[("a", 1000.0)]),
            &zero
        ),
        0.0
    );
    // Disabled: nothing, whatever else is set.
    assert_eq!(
        SraWeights::from_argument(Some(&arg(&json!({"weight": 4})))),
        SraWeights::default()
    );
}

#[test]
fn strategy_weight_argument() {
    let w = |v: Value| {
        StrategyConfig::from_arguments(&args(json!({"resourceStrategyFitWeight": v}))).weight
    };
    assert_eq!(w(json!(0)), 0);
    assert_eq!(w(json!(-1)), DEFAULT_WEIGHT);
    assert_eq!(w(json!(7)), 7);
    // mapstructure truncates floats into ints.
    assert_eq!(w(json!(7.9)), 7);
    // A null value decodes to Go's zero int and counts as given.
    assert_eq!(w(Value::Null), 0);
    // Fatal in Volcano; warning and default here.
    assert_eq!(w(json!("5")), DEFAULT_WEIGHT);
    assert_eq!(w(json!(true)), DEFAULT_WEIGHT);
}

#[test]
fn field_names_match_ignoring_case() {
    let p = ResourceStrategyFit::from_arguments(&args(json!({
        "resources": {"cpu": {"TYPE": "MostAllocated", "Weight": 3}},
        "sra": {"ENABLE": true, "Resources": "g", "wEiGhT": 2, "resourceweight": {"g": 4}},
        "proportional": {"Enable": true, "RESOURCES": "g", "ResourceProportion": {"g.cpu": 2}},
    })));
    assert_eq!(p.strategy.resources, table(&[("cpu", Most, 3)]));
    assert_eq!((p.sra.weight, p.sra.weight_sum), (2, 4));
    assert_eq!(
        p.proportional.expect("enabled").resources["g"],
        Ratio {
            cpu: 2.0,
            memory: 1.0
        }
    );
    // Top-level keys are looked up exactly.
    let p =
        ResourceStrategyFit::from_arguments(&args(json!({"SRA": {"enable": true, "weight": 1}})));
    assert_eq!(p.sra, SraWeights::default());
}

#[test]
fn undecodable_arguments_fall_back_to_defaults() {
    // Each of these makes Volcano exit.
    let p = ResourceStrategyFit::from_arguments(&args(json!({
        "resources": {"cpu": {"type": 1, "weight": 2}},
        "sra": {"enable": "true", "resources": "g", "weight": 1},
        "proportional": {"enable": true, "resources": ["g"]},
    })));
    assert_eq!(p.strategy, defaults());
    assert_eq!(p.sra, SraWeights::default());
    assert_eq!(p.proportional, None);
    let p = ResourceStrategyFit::from_arguments(&args(json!({
        "resources": [1, 2],
        "sra": {"enable": true, "resources": "g", "weight": 1, "resourceWeight": {"g": "x"}},
        "proportional": {"enable": true, "resources": "g", "resourceProportion": {"g.cpu": "1"}},
    })));
    assert_eq!(p.strategy, defaults());
    assert_eq!(p.sra, SraWeights::default());
    assert_eq!(p.proportional, None);
    // Null values decode to zero values, as in Volcano.
    let p = ResourceStrategyFit::from_arguments(&args(json!({
        "resources": {"cpu": null},
        "sra": null,
        "proportional": {"enable": true, "resources": null},
    })));
    assert_eq!(p.strategy, config(10, &[("cpu", Least, 1)]));
    assert_eq!(p.sra, SraWeights::default());
    assert_eq!(p.proportional, Some(Proportional::default()));
    // An empty table is replaced by the default one.
    let p = ResourceStrategyFit::from_arguments(&args(json!({"resources": {}})));
    assert_eq!(p.strategy, defaults());
}

#[test]
fn pod_weights_match_names_exactly_and_count_zero_capacity() {
    // Pod weights do not use wildcards; `pods` is requested by every pod but only scored when
    // named.
    let alloc = res(
        10_000.0,
        10.0 * GI,
        &[("nvidia.com/gpu", 4000.0), ("pods", 10.0)],
    );
    let used = res(0.0, 0.0, &[]);
    let t = res(2000.0, 0.0, &[("nvidia.com/gpu", 1000.0), ("pods", 1.0)]);
    let cfg = config(10, &[("nvidia.*", Most, 1)]);
    let pod = pod_type("MostAllocated", r#"{"nvidia.*": 5, "pods": 1}"#);
    // Only pods: 1/10 × 1 / 1 × 1000.
    assert!(close(strategy_score(&cfg, &pod, &t, &alloc, &used), 100.0));
    // The table's wildcard matches the GPU: 1/4.
    assert!(close(
        strategy_score(&cfg, &PodStrategy::Configured, &t, &alloc, &used),
        250.0
    ));
    // JSON null is an empty map: nothing scored.
    assert_eq!(
        strategy_score(&cfg, &pod_type("MostAllocated", "null"), &t, &alloc, &used),
        0.0
    );
}
