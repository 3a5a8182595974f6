use super::*;
use crate::testutil::{StateLookup, TestCluster, pod, pod_group};
use engine::conf::{ArgValue, PluginOption};
use engine::framework::EventType;
use engine::framework::Session;
use engine::model::ResourceName;
use serde_json::{Value, json};

fn args(value: ArgValue) -> Arguments {
    Arguments::from_pairs(&[(FACTOR_KEY, value)])
}

fn plugin_with(ssn: &mut Session, factor: f64) -> Box<dyn Plugin> {
    let mut p = new(&args(ArgValue::Float(factor)));
    p.on_session_open(&mut ssn.state);
    p
}

fn pending_group(name: &str, min_resources: Value) -> Value {
    let mut pg = pod_group("ns", name, 1);
    pg["spec"]["minResources"] = min_resources;
    pg
}

fn with_phase(mut pg: Value, phase: &str) -> Value {
    pg["status"] = json!({"phase": phase});
    pg
}

/// Cluster of O-1: cpu total 10000m, 4000m used by a running pod of another job, and an
/// Inqueue job reserving 3000m.
fn o1_cluster() -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "64Gi", "pods": "110"}));
    c.pod(pod(
        "ns",
        "busy",
        None,
        "Running",
        Some("n1"),
        json!({"cpu": "4"}),
    ));
    c.pod_group(with_phase(
        pending_group("reserved", json!({"cpu": "3"})),
        "Inqueue",
    ));
    c.pod_group(pending_group("fits", json!({"cpu": "5"})));
    c.pod_group(pending_group("too-big", json!({"cpu": "5001m"})));
    c.pod_group(pending_group("tiny", json!({"cpu": "1m"})));
    c.pod_group(pod_group("ns", "best-effort", 1));
    c
}

#[test]
fn o1_idle_is_total_times_factor_minus_used_and_admission_is_strict() {
    let mut ssn = o1_cluster().session(&[&[NAME]]);
    let p = plugin_with(&mut ssn, 1.2);
    let s = &ssn.state;
    assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/fits")), PERMIT);
    assert_eq!(p.job_enqueueable(s, s.job_by_key("ns/too-big")), REJECT);
}

#[test]
fn o1_rejection_records_the_overused_event_at_close() {
    let mut ssn = o1_cluster().session(&[&[NAME]]);
    let mut p = plugin_with(&mut ssn, 1.2);
    let job = ssn.state.job_by_key("ns/too-big");
    assert_eq!(p.job_enqueueable(&ssn.state, job), REJECT);
    assert!(ssn.state.events().is_empty());
    p.on_session_close(&mut ssn.state);
    assert_eq!(ssn.state.events().len(), 1);
    let e = &ssn.state.events()[0];
    assert_eq!(e.type_, EventType::Normal);
    assert_eq!(e.reason, "Unschedulable");
    assert_eq!(e.message, "resource in cluster is overused: overused cpu");
    assert_eq!(e.object.kind, "PodGroup");
    assert_eq!(e.object.name, "too-big");
    assert_eq!(e.object.namespace.as_deref(), Some("ns"));
}

#[test]
fn o2_enqueued_job_reserves_its_minimum() {
    let mut ssn = o1_cluster().session(&[&[NAME]]);
    let mut p = plugin_with(&mut ssn, 1.2);
    let (fits, tiny) = (
        ssn.state.job_by_key("ns/fits"),
        ssn.state.job_by_key("ns/tiny"),
    );
    assert_eq!(p.job_enqueueable(&ssn.state, tiny), PERMIT);
    p.job_enqueued(&ssn.state, fits);
    assert_eq!(p.job_enqueueable(&ssn.state, tiny), REJECT);
}

#[test]
fn o2_through_the_dispatcher() {
    let mut ssn = o1_cluster().session(&[&[NAME]]);
    let (fits, tiny) = (
        ssn.state.job_by_key("ns/fits"),
        ssn.state.job_by_key("ns/tiny"),
    );
    assert!(ssn.job_enqueueable(fits));
    ssn.job_enqueued(fits);
    assert!(!ssn.job_enqueueable(tiny));
    let decisions = ssn.close();
    let overused: Vec<_> = decisions
        .events
        .iter()
        .filter(|e| e.message.starts_with("resource in cluster is overused"))
        .collect();
    assert_eq!(overused.len(), 1);
    assert_eq!(overused[0].object.name, "tiny");
}

fn parse_factor_of(args: &Arguments) -> f64 {
    parse_factor(args, &mut Vec::new())
}

#[test]
fn o3_factor_argument() {
    assert_eq!(parse_factor_of(&args(ArgValue::Float(0.5))), 1.2);
    assert_eq!(parse_factor_of(&args(ArgValue::Int(2))), 2.0);
    assert_eq!(parse_factor_of(&args(ArgValue::Float(1.0))), 1.0);
    assert_eq!(parse_factor_of(&args(ArgValue::Str("1.5".into()))), 1.2);
    assert_eq!(parse_factor_of(&args(ArgValue::Float(f64::NAN))), 1.2);
    assert_eq!(parse_factor_of(&Arguments::new()), 1.2);
}

#[test]
fn bad_factors_are_reported_for_the_parser() {
    let w = check_arguments(&args(ArgValue::Float(-3.0)));
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].key, FACTOR_KEY);
    assert!(w[0].message.contains("-3"), "{}", w[0].message);
    assert!(check_arguments(&args(ArgValue::Float(1.5))).is_empty());
    assert_eq!(check_arguments(&args(ArgValue::Str("x".into()))).len(), 1);
}

#[test]
fn o3_factor_changes_idle() {
    // With factor 2: idle = 20000 − 4000 = 16000, inqueue 3000 ⇒ 13000 fits, 13001 does not.
    let mut c = o1_cluster();
    c.pod_group(pending_group("big", json!({"cpu": "13"})));
    c.pod_group(pending_group("bigger", json!({"cpu": "13001m"})));
    let option = PluginOption::new(NAME).with_arguments(args(ArgValue::Int(2)));
    let ssn = c.session_with(vec![vec![option]]);
    assert!(ssn.job_enqueueable(ssn.state.job_by_key("ns/big")));
    assert!(!ssn.job_enqueueable(ssn.state.job_by_key("ns/bigger")));
}

#[test]
fn o4_job_without_min_resources_is_permitted() {
    let mut c = TestCluster::new();
    c.pod_group(pod_group("ns", "best-effort", 1));
    // No node at all: idle is zero, yet the job needs nothing reserved.
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin_with(&mut ssn, 1.2);
    assert_eq!(
        p.job_enqueueable(&ssn.state, ssn.state.job_by_key("ns/best-effort")),
        PERMIT
    );
}

#[test]
fn o5_inqueue_phase_reserves_the_full_minimum_even_when_partly_allocated() {
    // Total 10000 × 1.0; the Inqueue job has a 1000m task bound (used 1000) and reserves
    // its full 2000 ⇒ idle 9000, inqueue 2000 ⇒ 7000 fits and 7001 does not.
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "64Gi", "pods": "110"}));
    let mut reserved = with_phase(pending_group("reserved", json!({"cpu": "2"})), "Inqueue");
    reserved["spec"]["minMember"] = json!(2);
    c.pod_group(reserved);
    c.pod(pod(
        "ns",
        "r-0",
        Some("reserved"),
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    ));
    c.pod(pod(
        "ns",
        "r-1",
        Some("reserved"),
        "Pending",
        None,
        json!({"cpu": "1"}),
    ));
    c.pod_group(pending_group("a", json!({"cpu": "7"})));
    c.pod_group(pending_group("b", json!({"cpu": "7001m"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin_with(&mut ssn, 1.0);
    assert_eq!(
        p.job_enqueueable(&ssn.state, ssn.state.job_by_key("ns/a")),
        PERMIT
    );
    assert_eq!(
        p.job_enqueueable(&ssn.state, ssn.state.job_by_key("ns/b")),
        REJECT
    );
}

#[test]
fn o6_requested_scalar_missing_from_the_cluster_is_rejected() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "64Gi", "pods": "110"}));
    c.pod_group(pending_group(
        "gpu",
        json!({"cpu": "1", "nvidia.com/gpu": "1"}),
    ));
    let mut ssn = c.session(&[&[NAME]]);
    let mut p = plugin_with(&mut ssn, 1.2);
    let job = ssn.state.job_by_key("ns/gpu");
    assert_eq!(p.job_enqueueable(&ssn.state, job), REJECT);
    p.on_session_close(&mut ssn.state);
    assert_eq!(
        ssn.state.events()[0].message,
        "resource in cluster is overused: overused nvidia.com/gpu"
    );
}

#[test]
fn unrequested_dimensions_and_pods_are_not_checked() {
    // The cluster has no memory and one pod slot left; the job asks for cpu and pods only.
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "pods": "1"}));
    c.pod_group(pending_group("cpu-only", json!({"cpu": "1", "pods": "5"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin_with(&mut ssn, 1.0);
    assert_eq!(
        p.job_enqueueable(&ssn.state, ssn.state.job_by_key("ns/cpu-only")),
        PERMIT
    );
}

#[test]
fn running_job_at_gang_size_reserves_only_the_unallocated_remainder() {
    // minResources cpu 3 / gpu 2 with 2 × 1 cpu running ⇒ reserves cpu 1000 and, because
    // the job holds no gpu, the full 2000 gpu.
    let mut c = TestCluster::new();
    c.node(
        "n1",
        json!({"cpu": "10", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4"}),
    );
    let mut running = with_phase(
        pending_group(
            "running",
            json!({"cpu": "3", "nvidia.com/gpu": "2", "count/pods": "3", "ephemeral-storage": "1Gi"}),
        ),
        "Running",
    );
    running["spec"]["minMember"] = json!(2);
    c.pod_group(running);
    c.pod(pod(
        "ns",
        "w-0",
        Some("running"),
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    ));
    c.pod(pod(
        "ns",
        "w-1",
        Some("running"),
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    ));
    let ssn = c.session(&[&[NAME]]);
    let job = ssn.state.job(ssn.state.job_by_key("ns/running"));
    let reserved = job.inqueue_resource();
    assert_eq!(reserved.milli_cpu, 1000.0);
    assert_eq!(reserved.memory, 0.0);
    assert_eq!(reserved.get("nvidia.com/gpu"), 2000.0);
    // ephemeral-storage is not a Kubernetes scalar resource name and is not reserved.
    assert_eq!(reserved.get("ephemeral-storage"), 0.0);

    // Idle 10000 − 2000 = 8000, inqueue 1000 ⇒ 7000 fits, 7001 does not.
    let mut c2 = c;
    c2.pod_group(pending_group("a", json!({"cpu": "7"})));
    c2.pod_group(pending_group("b", json!({"cpu": "7001m"})));
    let mut ssn = c2.session(&[&[NAME]]);
    let p = plugin_with(&mut ssn, 1.0);
    assert_eq!(
        p.job_enqueueable(&ssn.state, ssn.state.job_by_key("ns/a")),
        PERMIT
    );
    assert_eq!(
        p.job_enqueueable(&ssn.state, ssn.state.job_by_key("ns/b")),
        REJECT
    );
}

#[test]
fn running_job_below_gang_size_reserves_nothing() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "64Gi", "pods": "110"}));
    let mut running = with_phase(pending_group("running", json!({"cpu": "5"})), "Running");
    running["spec"]["minMember"] = json!(2);
    c.pod_group(running);
    c.pod(pod(
        "ns",
        "w-0",
        Some("running"),
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    ));
    c.pod(pod(
        "ns",
        "w-1",
        Some("running"),
        "Succeeded",
        Some("n1"),
        json!({"cpu": "1"}),
    ));
    c.pod_group(pending_group("a", json!({"cpu": "9"})));
    let mut ssn = c.session(&[&[NAME]]);
    let p = plugin_with(&mut ssn, 1.0);
    // Idle 10000 − 1000 = 9000, nothing reserved.
    assert_eq!(
        p.job_enqueueable(&ssn.state, ssn.state.job_by_key("ns/a")),
        PERMIT
    );
}

#[test]
fn gated_pods_are_not_reserved_but_queue_gated_ones_are() {
    let gate = |p: &mut Value, name: &str| {
        p["spec"]["schedulingGates"] = json!([{"name": name}]);
    };
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "64Gi", "pods": "110"}));
    c.pod_group(with_phase(
        pending_group("gated", json!({"cpu": "4"})),
        "Inqueue",
    ));
    let mut g = pod(
        "ns",
        "g-0",
        Some("gated"),
        "Pending",
        None,
        json!({"cpu": "3"}),
    );
    gate(&mut g, "example.com/hold");
    c.pod(g);
    c.pod_group(with_phase(
        pending_group("queued", json!({"cpu": "2"})),
        "Inqueue",
    ));
    let mut q = pod(
        "ns",
        "q-0",
        Some("queued"),
        "Pending",
        None,
        json!({"cpu": "2"}),
    );
    gate(&mut q, "scheduling.volcano.sh/queue-allocation-gate");
    c.pod(q);
    let ssn = c.session(&[&[NAME]]);
    let s = &ssn.state;
    let gated = s.job(s.job_by_key("ns/gated"));
    let min = gated.spec.min_resources.clone().expect("minResources");
    assert_eq!(
        gated.deduct_sch_gated_resources(s.tasks(), &min).milli_cpu,
        1000.0
    );
    let queued = s.job(s.job_by_key("ns/queued"));
    let min = queued.spec.min_resources.clone().expect("minResources");
    assert_eq!(
        queued.deduct_sch_gated_resources(s.tasks(), &min).milli_cpu,
        2000.0
    );
}

#[test]
fn deduction_floors_at_zero_and_ignores_scalars_the_minimum_lacks() {
    let mut c = TestCluster::new();
    c.pod_group(pending_group(
        "gated",
        json!({"cpu": "1", "nvidia.com/gpu": "1"}),
    ));
    let mut g = pod(
        "ns",
        "g-0",
        Some("gated"),
        "Pending",
        None,
        json!({"cpu": "3", "nvidia.com/gpu": "2", "example.com/fpga": "1"}),
    );
    g["spec"]["schedulingGates"] = json!([{"name": "example.com/hold"}]);
    c.pod(g);
    let ssn = c.session(&[&[NAME]]);
    let s = &ssn.state;
    let job = s.job(s.job_by_key("ns/gated"));
    let min = job.spec.min_resources.clone().expect("minResources");
    let left = job.deduct_sch_gated_resources(s.tasks(), &min);
    assert_eq!(left.milli_cpu, 0.0);
    assert_eq!(left.get("nvidia.com/gpu"), 0.0);
    assert!(
        left.scalars
            .get(ResourceName::new("example.com/fpga"))
            .is_none()
    );
}

#[test]
fn format_resource_names_lists_each_name_with_the_verb() {
    assert_eq!(format_resource_names("p", "overused", &[]), "p");
    assert_eq!(
        format_resource_names("p", "overused", &["cpu".into(), "memory".into()]),
        "p: overused cpu, overused memory"
    );
}
