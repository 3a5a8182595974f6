use super::*;
use crate::testutil::{StateLookup, TestCluster, pod, pod_group};
use engine::framework::Session;
use serde_json::{Value, json};

/// A PDB in `namespace` with the given selector (`Value::Null`: no selector) and status.
fn pdb(namespace: &str, name: &str, selector: Value, allowed: i32, disrupted: &[&str]) -> Value {
    let disrupted: serde_json::Map<String, Value> = disrupted
        .iter()
        .map(|p| (p.to_string(), json!("2023-12-31T23:59:00Z")))
        .collect();
    let mut v = json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": 1},
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": 2,
            "desiredHealthy": 1,
            "expectedPods": 2,
            "disruptedPods": disrupted
        }
    });
    if !selector.is_null() {
        v["spec"]["selector"] = selector;
    }
    v
}

fn web() -> Value {
    json!({"matchLabels": {"app": "web"}})
}

/// A cluster with one pending preemptor (`default/preemptor`) and running pods named by
/// `(namespace, name, labels)`; `labels` `Value::Null` means the pod has none.
fn cluster(pods: &[(&str, &str, Value)], pdbs: Vec<Value>) -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "8", "memory": "8Gi", "pods": "110"}));
    c.pod_group(pod_group("default", "pg", 1));
    c.pod(pod(
        "default",
        "preemptor",
        Some("pg"),
        "Pending",
        None,
        json!({"cpu": "1"}),
    ));
    for (ns, name, labels) in pods {
        let mut p = pod(ns, name, None, "Running", Some("n1"), json!({"cpu": "1"}));
        if labels.is_null() {
            p["metadata"]
                .as_object_mut()
                .expect("metadata object")
                .remove("labels");
        } else {
            p["metadata"]["labels"] = labels.clone();
        }
        c.pod(p);
    }
    for p in pdbs {
        c.pdb(p);
    }
    c
}

/// The plugin opened on the session, as the framework would open it.
fn opened(ssn: &mut Session) -> Box<dyn Plugin> {
    let mut p = new(&Arguments::new());
    p.on_session_open(&mut ssn.state);
    p
}

fn ids(ssn: &Session, keys: &[&str]) -> Vec<TaskId> {
    keys.iter().map(|k| ssn.state.task_by_key(k)).collect()
}

/// Runs the filter as `Preemptable` and checks that `Reclaimable` and `VictimTasks` agree.
fn victims(c: &TestCluster, candidates: &[&str]) -> Vec<String> {
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let s = &ssn.state;
    let preemptor = s.task_by_key("default/preemptor");
    let cands = ids(&ssn, candidates);
    let (kept, vote) = p.preemptable(s, preemptor, &cands);
    assert_eq!(vote, PERMIT);
    assert_eq!(p.reclaimable(s, preemptor, &cands), (kept.clone(), PERMIT));
    assert_eq!(p.victim_tasks(s, &cands), kept);
    kept.iter().map(|&t| s.task(t).key().to_string()).collect()
}

fn two_web_pods() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("default", "t1", json!({"app": "web"})),
        ("default", "t2", json!({"app": "web"})),
    ]
}

#[test]
fn p1_budget_of_one_keeps_the_first_candidate() {
    let c = cluster(&two_web_pods(), vec![pdb("default", "b", web(), 1, &[])]);
    assert_eq!(victims(&c, &["default/t1", "default/t2"]), ["default/t1"]);
    // Earlier candidates use the budget first.
    assert_eq!(victims(&c, &["default/t2", "default/t1"]), ["default/t2"]);
}

#[test]
fn p2_budget_of_zero_keeps_nothing_and_leaves_the_tier_undecided() {
    let c = cluster(&two_web_pods(), vec![pdb("default", "b", web(), 0, &[])]);
    assert!(victims(&c, &["default/t1", "default/t2"]).is_empty());

    // Through the dispatcher: alone in its tier, pdb decides nothing; the next tier does.
    let ssn = c.session(&[&[NAME], &["conformance"]]);
    let s = &ssn.state;
    let preemptor = s.task_by_key("default/preemptor");
    let cands = ids(&ssn, &["default/t1", "default/t2"]);
    assert_eq!(ssn.preemptable(preemptor, &cands), cands);
    assert_eq!(ssn.reclaimable(preemptor, &cands), cands);
    let alone = c.session(&[&[NAME]]);
    assert!(alone.preemptable(preemptor, &cands).is_empty());
}

#[test]
fn p3_already_disrupted_pods_use_no_budget() {
    let c = cluster(
        &two_web_pods(),
        vec![pdb("default", "b", web(), 1, &["t1"])],
    );
    assert_eq!(
        victims(&c, &["default/t1", "default/t2"]),
        ["default/t1", "default/t2"]
    );
}

#[test]
fn p4_pods_without_labels_are_never_victims() {
    let pods = [
        ("default", "t1", json!({"app": "web"})),
        ("default", "t3", Value::Null),
        ("default", "t4", json!({})),
    ];
    let c = cluster(&pods, vec![]);
    assert_eq!(
        victims(&c, &["default/t1", "default/t3", "default/t4"]),
        ["default/t1"]
    );
}

#[test]
fn p5_budgets_in_other_namespaces_are_ignored() {
    let c = cluster(&two_web_pods(), vec![pdb("other", "b", web(), 0, &[])]);
    assert_eq!(
        victims(&c, &["default/t1", "default/t2"]),
        ["default/t1", "default/t2"]
    );
}

#[test]
fn p6_empty_and_missing_selectors_match_nothing() {
    for selector in [json!({}), json!({"matchLabels": {}}), Value::Null] {
        let c = cluster(&two_web_pods(), vec![pdb("default", "b", selector, 0, &[])]);
        assert_eq!(
            victims(&c, &["default/t1", "default/t2"]),
            ["default/t1", "default/t2"]
        );
    }
}

#[test]
fn p7_a_pod_charges_every_matching_budget() {
    let c = cluster(
        &two_web_pods(),
        vec![
            pdb("default", "a", web(), 1, &[]),
            pdb("default", "b", web(), 1, &[]),
        ],
    );
    assert_eq!(victims(&c, &["default/t1", "default/t2"]), ["default/t1"]);
}

#[test]
fn budget_is_charged_even_when_another_budget_rejects_the_pod() {
    // t1 matches A (allowed 0) and B (allowed 1): it is rejected by A but still uses B's
    // only disruption, so t2 (B only) is rejected too.
    let pods = [
        ("default", "t1", json!({"app": "web", "tier": "front"})),
        ("default", "t2", json!({"app": "web"})),
    ];
    let c = cluster(
        &pods,
        vec![
            pdb(
                "default",
                "a",
                json!({"matchLabels": {"tier": "front"}}),
                0,
                &[],
            ),
            pdb("default", "b", web(), 1, &[]),
        ],
    );
    assert!(victims(&c, &["default/t1", "default/t2"]).is_empty());
    // The other way round t2 takes B's disruption first.
    assert_eq!(victims(&c, &["default/t2", "default/t1"]), ["default/t2"]);
}

#[test]
fn p8_vote_is_permit_whatever_the_input() {
    let c = cluster(&two_web_pods(), vec![pdb("default", "b", web(), 0, &[])]);
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let s = &ssn.state;
    let preemptor = s.task_by_key("default/preemptor");
    for cands in [vec![], ids(&ssn, &["default/t1"])] {
        assert_eq!(p.preemptable(s, preemptor, &cands).1, PERMIT);
        assert_eq!(p.reclaimable(s, preemptor, &cands).1, PERMIT);
    }
    assert_eq!(
        p.extension_points(),
        ExtensionPoints::PREEMPTABLE
            | ExtensionPoints::RECLAIMABLE
            | ExtensionPoints::VICTIM_TASKS
            | ExtensionPoints::EVICTION_GUARD
    );
}

#[test]
fn budget_is_not_remembered_between_calls() {
    let c = cluster(&two_web_pods(), vec![pdb("default", "b", web(), 1, &[])]);
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let s = &ssn.state;
    let preemptor = s.task_by_key("default/preemptor");
    let t1 = ids(&ssn, &["default/t1"]);
    assert_eq!(p.preemptable(s, preemptor, &t1).0, t1);
    assert_eq!(p.preemptable(s, preemptor, &t1).0, t1);
}

#[test]
fn negative_or_missing_disruptions_allowed_protects_every_match() {
    let mut no_status = pdb("default", "b", web(), 0, &[]);
    no_status
        .as_object_mut()
        .expect("pdb object")
        .remove("status");
    for budget in [pdb("default", "b", web(), -2, &[]), no_status] {
        let pods = [
            ("default", "t1", json!({"app": "web"})),
            ("default", "t2", json!({"app": "db"})),
        ];
        let c = cluster(&pods, vec![budget]);
        assert_eq!(victims(&c, &["default/t1", "default/t2"]), ["default/t2"]);
    }
}

#[test]
fn match_expressions_select_like_kubernetes() {
    let pods = [
        ("default", "t1", json!({"app": "web"})),
        ("default", "t2", json!({"app": "db"})),
        ("default", "t3", json!({"role": "cache"})),
    ];
    let not_web =
        json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]});
    let c = cluster(&pods, vec![pdb("default", "b", not_web, 0, &[])]);
    // NotIn also selects pods without the key, so t2 and t3 are both protected.
    assert_eq!(
        victims(&c, &["default/t1", "default/t2", "default/t3"]),
        ["default/t1"]
    );
}

#[test]
fn selectors_kubernetes_refuses_are_ignored() {
    let invalid = [
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}),
        json!({"matchExpressions": [{"key": "bad key", "operator": "DoesNotExist"}]}),
        json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a b"]}]}),
        json!({"matchLabels": {"app": "web"},
                   "matchExpressions": [{"key": "-x", "operator": "DoesNotExist"}]}),
    ];
    for selector in invalid {
        let c = cluster(
            &two_web_pods(),
            vec![pdb("default", "b", selector.clone(), 0, &[])],
        );
        assert_eq!(
            victims(&c, &["default/t1", "default/t2"]),
            ["default/t1", "default/t2"],
            "{selector}"
        );
    }
}

#[test]
fn label_syntax() {
    for key in ["app", "a.b-c_d", "example.com/app", "a/b", "A1"] {
        assert!(is_label_key(key), "{key}");
    }
    let long_name = "x".repeat(64);
    let long_prefix = format!("{}/a", "a".repeat(254));
    for key in [
        "",
        "/app",
        "app/",
        "a/b/c",
        "-app",
        "app-",
        "Example.com/app",
        "ex_ample.com/app",
        long_name.as_str(),
        long_prefix.as_str(),
    ] {
        assert!(!is_label_key(key), "{key}");
    }
    assert!(is_label_value(""));
    assert!(is_label_value("v1.2_3-x"));
    assert!(!is_label_value("a b"));
    assert!(!is_label_value("x."));
    assert!(is_label_value(&"x".repeat(63)));
    assert!(!is_label_value(&"x".repeat(64)));
}

#[test]
fn shuffle_victims_unite_within_the_tier() {
    // VictimTasks through the dispatcher: pdb's answer alone decides its tier.
    let c = cluster(&two_web_pods(), vec![pdb("default", "b", web(), 1, &[])]);
    let ssn = c.session(&[&[NAME]]);
    let cands = ids(&ssn, &["default/t1", "default/t2"]);
    assert_eq!(ssn.victim_tasks(&cands), ids(&ssn, &["default/t1"]));
}
