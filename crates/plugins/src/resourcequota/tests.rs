use std::sync::Arc;

use super::*;
use crate::testutil::{SESSION_UID, StateLookup, TestCluster, conf, pod, pod_group, test_now};
use engine::conf::PluginOption;
use engine::framework::{EventType, Session, SessionOptions};
use engine::model::job::phase;
use serde_json::{Value, json};

/// Adds ResourceQuota `ns/name` whose status carries `hard` and, when given, `used`.
fn quota(c: &mut TestCluster, ns: &str, name: &str, hard: Value, used: Option<Value>) {
    let mut status = json!({"hard": hard});
    if let Some(u) = used {
        status["used"] = u;
    }
    let rq = json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": {"hard": status["hard"].clone()},
        "status": status
    });
    c.state
        .upsert_resource_quota(serde_json::from_value(rq).expect("valid quota"));
}

/// PodGroup `ns/<name>` with the given minResources (none when `Value::Null`).
fn group(ns: &str, name: &str, min: Value) -> Value {
    let mut pg = pod_group(ns, name, 1);
    if !min.is_null() {
        pg["spec"]["minResources"] = min;
    }
    pg
}

/// The plugin opened directly over the session (its state stays inspectable).
fn opened(ssn: &mut Session) -> ResourceQuotaPlugin {
    let mut p = ResourceQuotaPlugin::default();
    p.on_session_open(&mut ssn.state);
    p
}

fn pending_of<'a>(p: &'a ResourceQuotaPlugin, ns: &str) -> Option<&'a BTreeMap<String, i128>> {
    p.pending.get(ns)
}

const CORE: i128 = 1_000_000_000;

// ---- TestResourceQuotaPlugin ----------------------------------------------------------------

/// The Go test's objects: queue `c1`, quota `default/test` with `status.hard` = 2000m / 2G and
/// no `used`, PodGroups in phase Inqueue; every job's JobEnqueueable through the dispatcher.
fn go_case(min: Value, with_quota: bool) -> Vec<bool> {
    let mut c = TestCluster::new();
    c.queue(json!({"metadata": {"name": "c1"}, "spec": {"weight": 1}}));
    let mut pg = group("default", "pg", min);
    pg["spec"]["queue"] = json!("c1");
    pg["spec"]["minMember"] = json!(2);
    pg["status"] = json!({"phase": "Inqueue"});
    c.pod_group(pg);
    if with_quota {
        quota(
            &mut c,
            "default",
            "test",
            json!({"cpu": "2000m", "memory": "2G"}),
            None,
        );
    }
    let ssn = c.session(&[&[NAME]]);
    ssn.state
        .job_ids()
        .map(|j| ssn.job_enqueueable(j))
        .collect()
}

#[test]
fn go_quota_capacity_matches_the_needs_of_the_pg() {
    assert_eq!(
        go_case(json!({"cpu": "2000m", "memory": "2G"}), true),
        [true]
    );
}

#[test]
fn go_quota_capacity_cannot_match_the_needs_of_the_pg() {
    assert_eq!(
        go_case(json!({"cpu": "20000m", "memory": "20G"}), true),
        [false]
    );
}

#[test]
fn go_no_resource_quota_object() {
    assert_eq!(
        go_case(json!({"cpu": "20000m", "memory": "20G"}), false),
        [true]
    );
}

#[test]
fn go_min_resources_of_pg_not_set() {
    assert_eq!(go_case(Value::Null, true), [true]);
}

// ---- TestJobEnqueuedOnOtherPluginsReject ----------------------------------------------------

/// The Go test helper: rejects the PodGroup named `pgA`, permits everything else.
struct Rejecter;

impl Plugin for Rejecter {
    fn name(&self) -> &'static str {
        "test-rejecter"
    }
    fn extension_points(&self) -> ExtensionPoints {
        ExtensionPoints::JOB_ENQUEUEABLE
    }
    fn job_enqueueable(&self, ssn: &SessionState, job: JobId) -> i32 {
        if ssn.job(job).spec.name == "pgA" {
            REJECT
        } else {
            PERMIT
        }
    }
}

#[test]
fn go_job_enqueued_on_other_plugins_reject() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "4", "memory": "4G", "pods": "10"}));
    c.queue(json!({"metadata": {"name": "q1"}, "spec": {"weight": 1}}));
    quota(
        &mut c,
        "ns1",
        "rq1",
        json!({"cpu": "1", "memory": "1G"}),
        None,
    );
    for (pod_name, pg_name) in [("podA", "pgA"), ("podB", "pgB")] {
        let mut pg = group("ns1", pg_name, json!({"cpu": "1", "memory": "1G"}));
        pg["spec"]["queue"] = json!("q1");
        pg["status"] = json!({"phase": "Pending"});
        c.pod_group(pg);
        c.pod(pod(
            "ns1",
            pod_name,
            Some(pg_name),
            "Pending",
            None,
            json!({"cpu": "1", "memory": "1G"}),
        ));
    }
    let mut registry = crate::registry();
    registry.register("test-rejecter", |_| Box::new(Rejecter));
    let tiers = vec![vec![
        PluginOption::new(NAME),
        PluginOption::new("test-rejecter"),
    ]];
    let mut ssn = Session::open(
        &c.state.snapshot(),
        Arc::new(conf(tiers)),
        &registry,
        SessionOptions::default(),
        test_now(),
        SESSION_UID.to_string(),
    );
    engine::actions::enqueue::execute(&mut ssn);
    let phase_of = |key: &str| {
        ssn.state
            .job(ssn.state.job_by_key(key))
            .status()
            .phase
            .clone()
    };
    assert_eq!(phase_of("ns1/pgA"), phase::PENDING);
    assert_eq!(phase_of("ns1/pgB"), phase::INQUEUE);
}

// ---- spec vectors R1–R6 ---------------------------------------------------------------------

/// R1's namespace: quota hard cpu 8, used cpu 2.
fn r1_cluster() -> TestCluster {
    let mut c = TestCluster::new();
    quota(
        &mut c,
        "ns",
        "rq",
        json!({"cpu": "8"}),
        Some(json!({"cpu": "2"})),
    );
    c.pod_group(group("ns", "a", json!({"cpu": "4"})));
    c.pod_group(group("ns", "b", json!({"cpu": "4"})));
    c.pod_group(group("ns", "small", json!({"cpu": "2"})));
    c
}

#[test]
fn r1_job_within_the_quota_is_permitted_and_then_counted() {
    let mut ssn = r1_cluster().session(&[&[NAME]]);
    let mut p = opened(&mut ssn);
    let a = ssn.state.job_by_key("ns/a");
    assert_eq!(p.job_enqueueable(&ssn.state, a), PERMIT);
    // The vote itself reserves nothing.
    assert!(pending_of(&p, "ns").is_none());
    p.job_enqueued(&ssn.state, a);
    assert_eq!(
        pending_of(&p, "ns"),
        Some(&BTreeMap::from([("cpu".to_string(), 4 * CORE)]))
    );
}

#[test]
fn r1b_second_job_beyond_the_quota_is_rejected_with_the_event() {
    let mut ssn = r1_cluster().session(&[&[NAME]]);
    let mut p = opened(&mut ssn);
    let (a, b) = (ssn.state.job_by_key("ns/a"), ssn.state.job_by_key("ns/b"));
    p.job_enqueued(&ssn.state, a);
    // 2 + 4 + 4 = 10 > 8.
    assert_eq!(p.job_enqueueable(&ssn.state, b), REJECT);
    let want = "resource quota insufficient, requested: map[cpu:4], \
                used: map[cpu:2], \
                limited: map[cpu:8]";
    assert_eq!(p.enqueue_rejection(&ssn.state, b).as_deref(), Some(want));
    assert_eq!(p.enqueue_rejection(&ssn.state, a), None);
    assert!(ssn.state.events().is_empty());
    p.on_session_close(&mut ssn.state);
    assert_eq!(ssn.state.events().len(), 1);
    let e = &ssn.state.events()[0];
    assert_eq!(e.type_, EventType::Normal);
    assert_eq!(e.reason, "Unschedulable");
    assert_eq!(e.message, want);
    assert_eq!(e.object.kind, "PodGroup");
    assert_eq!(e.object.name, "b");
    assert_eq!(e.object.namespace.as_deref(), Some("ns"));
}

#[test]
fn r1c_second_job_reaching_the_quota_exactly_is_permitted() {
    let mut ssn = r1_cluster().session(&[&[NAME]]);
    let mut p = opened(&mut ssn);
    p.job_enqueued(&ssn.state, ssn.state.job_by_key("ns/a"));
    // 2 + 4 + 2 = 8 ≤ 8.
    let small = ssn.state.job_by_key("ns/small");
    assert_eq!(p.job_enqueueable(&ssn.state, small), PERMIT);
}

#[test]
fn r2_a_job_rejected_elsewhere_reserves_nothing() {
    let mut ssn = r1_cluster().session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let (a, b) = (ssn.state.job_by_key("ns/a"), ssn.state.job_by_key("ns/b"));
    assert_eq!(p.job_enqueueable(&ssn.state, a), PERMIT);
    // No JobEnqueued for a: 2 + 4 = 6 ≤ 8.
    assert_eq!(p.job_enqueueable(&ssn.state, b), PERMIT);
}

#[test]
fn r3_names_the_quota_does_not_limit_are_not_checked() {
    let mut c = TestCluster::new();
    quota(&mut c, "ns", "mem", json!({"memory": "10Gi"}), None);
    c.pod_group(group("ns", "a", json!({"cpu": "100"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let a = ssn.state.job_by_key("ns/a");
    assert_eq!(p.job_enqueueable(&ssn.state, a), PERMIT);
}

#[test]
fn r4_any_quota_of_the_namespace_can_reject() {
    let mut c = TestCluster::new();
    quota(
        &mut c,
        "ns",
        "q1",
        json!({"cpu": "8"}),
        Some(json!({"cpu": "0"})),
    );
    quota(
        &mut c,
        "ns",
        "q2",
        json!({"pods": "2"}),
        Some(json!({"pods": "2"})),
    );
    c.pod_group(group("ns", "a", json!({"cpu": "1", "pods": "1"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let a = ssn.state.job_by_key("ns/a");
    assert_eq!(p.job_enqueueable(&ssn.state, a), REJECT);
    assert_eq!(
        p.enqueue_rejection(&ssn.state, a).as_deref(),
        Some(
            "resource quota insufficient, requested: map[pods:1], \
             used: map[pods:2], \
             limited: map[pods:2]"
        )
    );
}

#[test]
fn r5_no_min_resources_or_no_quota_in_the_namespace_is_permitted() {
    let mut c = TestCluster::new();
    quota(&mut c, "ns", "rq", json!({"cpu": "0"}), None);
    c.pod_group(group("ns", "none", Value::Null));
    c.pod_group(group("free", "big", json!({"cpu": "100"})));
    let mut ssn = c.session(&[&[NAME]]);
    let mut p = opened(&mut ssn);
    let (none, big) = (
        ssn.state.job_by_key("ns/none"),
        ssn.state.job_by_key("free/big"),
    );
    assert_eq!(p.job_enqueueable(&ssn.state, none), PERMIT);
    assert_eq!(p.job_enqueueable(&ssn.state, big), PERMIT);
    p.job_enqueued(&ssn.state, none);
    p.job_enqueued(&ssn.state, big);
    assert!(p.pending.is_empty());
}

#[test]
fn r6_pending_keeps_the_whole_min_resources() {
    let mut c = TestCluster::new();
    quota(&mut c, "ns", "rq", json!({"cpu": "8"}), None);
    c.pod_group(group(
        "ns",
        "a",
        json!({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2", "requests.cpu": "1"}),
    ));
    let mut ssn = c.session(&[&[NAME]]);
    let mut p = opened(&mut ssn);
    let a = ssn.state.job_by_key("ns/a");
    p.job_enqueued(&ssn.state, a);
    p.job_enqueued(&ssn.state, a);
    assert_eq!(
        pending_of(&p, "ns"),
        Some(&BTreeMap::from([
            ("cpu".to_string(), 2 * CORE),
            ("memory".to_string(), 2 * 1024 * 1024 * 1024 * CORE),
            ("nvidia.com/gpu".to_string(), 4 * CORE),
            ("requests.cpu".to_string(), 2 * CORE),
        ]))
    );
}

// ---- further behaviour ----------------------------------------------------------------------

#[test]
fn names_are_compared_literally() {
    let mut c = TestCluster::new();
    quota(&mut c, "ns", "rq", json!({"requests.cpu": "1"}), None);
    c.pod_group(group("ns", "plain", json!({"cpu": "4"})));
    c.pod_group(group("ns", "prefixed", json!({"requests.cpu": "2"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let s = &ssn.state;
    assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/plain")), PERMIT);
    assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/prefixed")), REJECT);
}

#[test]
fn amounts_are_compared_exactly() {
    let mut c = TestCluster::new();
    // 1Gi − 1 byte used: one more byte fits, two do not; 0.05 + 50m is exactly 100m.
    quota(
        &mut c,
        "ns",
        "rq",
        json!({"memory": "1Gi", "cpu": "100m"}),
        Some(json!({"memory": "1073741823", "cpu": "0.05"})),
    );
    c.pod_group(group("ns", "byte", json!({"memory": "1"})));
    c.pod_group(group("ns", "two-bytes", json!({"memory": "2"})));
    c.pod_group(group("ns", "cpu", json!({"cpu": "50m"})));
    c.pod_group(group("ns", "cpu-nano", json!({"cpu": "50000001n"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let s = &ssn.state;
    let vote = |k: &str| p.job_enqueueable(s, s.job_by_key(k));
    assert_eq!(vote("ns/byte"), PERMIT);
    assert_eq!(vote("ns/two-bytes"), REJECT);
    assert_eq!(vote("ns/cpu"), PERMIT);
    assert_eq!(vote("ns/cpu-nano"), REJECT);
}

#[test]
fn message_lists_only_the_exceeded_names_with_their_text() {
    let mut c = TestCluster::new();
    quota(
        &mut c,
        "ns",
        "rq",
        json!({"cpu": "2000m", "memory": "2G", "pods": "10"}),
        Some(json!({"cpu": "1500m", "memory": "1G"})),
    );
    c.pod_group(group(
        "ns",
        "a",
        json!({"cpu": "1", "memory": "8Gi", "pods": "1"}),
    ));
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let a = ssn.state.job_by_key("ns/a");
    assert_eq!(p.job_enqueueable(&ssn.state, a), REJECT);
    assert_eq!(
        p.enqueue_rejection(&ssn.state, a).as_deref(),
        Some(
            "resource quota insufficient, requested: map[cpu:1 memory:8Gi], \
             used: map[cpu:1500m memory:1G], \
             limited: map[cpu:2000m memory:2G]"
        )
    );
}

#[test]
fn name_missing_from_used_counts_as_zero_and_prints_nothing() {
    let mut c = TestCluster::new();
    quota(&mut c, "ns", "rq", json!({"nvidia.com/gpu": "1"}), None);
    c.pod_group(group("ns", "a", json!({"nvidia.com/gpu": "2"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let a = ssn.state.job_by_key("ns/a");
    assert_eq!(p.job_enqueueable(&ssn.state, a), REJECT);
    assert_eq!(
        p.enqueue_rejection(&ssn.state, a).as_deref(),
        Some(
            "resource quota insufficient, requested: map[nvidia.com/gpu:2], \
             used: map[], limited: map[nvidia.com/gpu:1]"
        )
    );
}

#[test]
fn quotas_of_other_namespaces_and_quotas_without_status_do_not_apply() {
    let mut c = TestCluster::new();
    quota(&mut c, "other", "rq", json!({"cpu": "0"}), None);
    let rq =
        json!({"metadata": {"name": "fresh", "namespace": "ns"}, "spec": {"hard": {"cpu": "0"}}});
    c.state
        .upsert_resource_quota(serde_json::from_value(rq).expect("valid quota"));
    c.pod_group(group("ns", "a", json!({"cpu": "1"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let a = ssn.state.job_by_key("ns/a");
    // spec.hard is never read; the status has not been published yet.
    assert_eq!(p.job_enqueueable(&ssn.state, a), PERMIT);
}

#[test]
fn invalid_quantities_are_left_out() {
    let mut c = TestCluster::new();
    quota(
        &mut c,
        "ns",
        "rq",
        json!({"cpu": "1", "memory": "lots"}),
        None,
    );
    c.pod_group(group("ns", "a", json!({"cpu": "2x", "memory": "1Gi"})));
    c.pod_group(group("ns", "b", json!({"cpu": "2"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = opened(&mut ssn);
    let s = &ssn.state;
    assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/a")), PERMIT);
    assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/b")), REJECT);
}

#[test]
fn standalone_pod_is_judged_by_its_quota_usage() {
    let mut c = TestCluster::new();
    quota(
        &mut c,
        "ns",
        "rq",
        json!({"requests.cpu": "2", "count/pods": "3"}),
        Some(json!({"requests.cpu": "1500m", "count/pods": "1"})),
    );
    c.pod(pod(
        "ns",
        "small",
        None,
        "Pending",
        None,
        json!({"cpu": "500m"}),
    ));
    c.pod(pod("ns", "big", None, "Pending", None, json!({"cpu": "1"})));
    let mut ssn = c.session(&[&[NAME]]);
    let mut p = opened(&mut ssn);
    let job_of = |key: &str| {
        let t = ssn.state.task_by_key(key);
        ssn.state.job_of(t).expect("implicit job")
    };
    let (small, big) = (job_of("ns/small"), job_of("ns/big"));
    let usage = ResourceQuotaPlugin::min_resources(&ssn.state, small).expect("usage");
    let names: Vec<&str> = usage.keys().map(String::as_str).collect();
    assert_eq!(names, ["count/pods", "cpu", "pods", "requests.cpu"]);
    assert_eq!(usage["requests.cpu"].text, "500m");
    assert_eq!(p.job_enqueueable(&ssn.state, small), PERMIT);
    assert_eq!(p.job_enqueueable(&ssn.state, big), REJECT);
    p.on_session_close(&mut ssn.state);
    assert_eq!(ssn.state.events()[0].object.kind, "Pod");
    assert_eq!(ssn.state.events()[0].object.name, "big");
}

#[test]
fn through_the_enqueue_action_the_reason_reaches_the_job() {
    let mut c = r1_cluster();
    // Only a, b and small are Pending; a goes first (name order), then b is rejected.
    for name in ["a", "b", "small"] {
        let mut pg = group("ns", name, Value::Null);
        pg["spec"]["minResources"] = json!({"cpu": if name == "small" { "2" } else { "4" }});
        pg["status"] = json!({"phase": "Pending"});
        c.pod_group(pg);
    }
    let mut ssn = c.session(&[&[NAME]]);
    engine::actions::enqueue::execute(&mut ssn);
    let s = &ssn.state;
    let job = |k: &str| s.job(s.job_by_key(k));
    assert_eq!(job("ns/a").status().phase, phase::INQUEUE);
    assert_eq!(job("ns/b").status().phase, phase::PENDING);
    assert!(
        job("ns/b")
            .job_fit_errors
            .starts_with("resource quota insufficient, requested: map[cpu:4]")
    );
    // a's 4 cpu count: 2 + 4 + 2 = 8 still fits for small.
    assert_eq!(job("ns/small").status().phase, phase::INQUEUE);
    let decisions = ssn.close();
    let quota_events: Vec<_> = decisions
        .events
        .iter()
        .filter(|e| e.message.starts_with("resource quota insufficient"))
        .collect();
    assert_eq!(quota_events.len(), 1);
    assert_eq!(quota_events[0].object.name, "b");
}

#[test]
fn both_callbacks_follow_enable_job_enqueued() {
    use engine::conf::Gate;
    let mut c = r1_cluster();
    c.pod_group(group("ns", "huge", json!({"cpu": "100"})));
    let on = c.session(&[&[NAME]]);
    assert!(!on.job_enqueueable(on.state.job_by_key("ns/huge")));
    let option = PluginOption::new(NAME).with_gate(Gate::JobEnqueued, false);
    let off = c.session_with(vec![vec![option]]);
    assert!(off.job_enqueueable(off.state.job_by_key("ns/huge")));
    assert_eq!(
        ResourceQuotaPlugin::default().extension_points(),
        ExtensionPoints::JOB_ENQUEUEABLE | ExtensionPoints::JOB_ENQUEUED
    );
}
