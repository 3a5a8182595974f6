use super::*;
use crate::k8s::resources::MIB;
use crate::testutil::{StateLookup, TestCluster, allocate, pod, pod_group};
use engine::conf::{ArgValue, MAX_WEIGHT, PluginOption};
use engine::framework::{Session, Statement};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

/// Every weight 0 except the ones given.
fn only(weights: &[(&str, i64)]) -> Vec<(&'static str, ArgValue)> {
    let mut args: Vec<(&'static str, ArgValue)> = [
        LEAST_REQUESTED_WEIGHT,
        MOST_REQUESTED_WEIGHT,
        BALANCED_RESOURCE_WEIGHT,
        NODE_AFFINITY_WEIGHT,
        POD_AFFINITY_WEIGHT,
        TAINT_TOLERATION_WEIGHT,
        IMAGE_LOCALITY_WEIGHT,
        POD_TOPOLOGY_SPREAD_WEIGHT,
    ]
    .into_iter()
    .map(|k| (k, ArgValue::Int(0)))
    .collect();
    for &(key, w) in weights {
        if let Some(slot) = args.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = ArgValue::Int(w);
        }
    }
    args
}

fn session(c: &TestCluster, args: &[(&'static str, ArgValue)]) -> Session {
    let option = PluginOption::new(NAME).with_arguments(Arguments::from_pairs(args));
    c.session_with(vec![vec![option]])
}

/// Batch + per-node scores of `pod` on `nodes`, as the engine sums them.
fn scores(ssn: &Session, pod: &str, nodes: &[&str]) -> Vec<f64> {
    let t = ssn.state.task_by_key(pod);
    let ids: Vec<NodeId> = nodes.iter().map(|n| ssn.state.node_by_key(n)).collect();
    let batch = ssn.batch_node_order(t, &ids).expect("batch scoring");
    ids.iter()
        .zip(batch)
        .map(|(&n, b)| b + ssn.node_order(t, n).expect("node scoring"))
        .collect()
}

fn node_with(
    c: &mut TestCluster,
    name: &str,
    allocatable: Value,
    labels: Value,
    spec: Value,
    status: Value,
) {
    let mut all_labels = json!({"kubernetes.io/hostname": name});
    if let (Some(all), Some(extra)) = (all_labels.as_object_mut(), labels.as_object()) {
        all.extend(extra.clone());
    }
    let mut st = json!({"allocatable": allocatable, "capacity": allocatable});
    if let (Some(all), Some(extra)) = (st.as_object_mut(), status.as_object()) {
        all.extend(extra.clone());
    }
    let n = json!({"metadata": {"name": name, "labels": all_labels}, "spec": spec, "status": st});
    c.state
        .upsert_node(serde_json::from_value(n).expect("valid node"));
}

fn standard_node(c: &mut TestCluster, name: &str) {
    c.node(name, json!({"cpu": "4", "memory": "8Gi", "pods": "110"}));
}

#[test]
fn n1_least_allocated() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    c.pod(pod(
        "ns",
        "old",
        None,
        "Running",
        Some("n1"),
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    c.pod(pod(
        "ns",
        "new",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    let ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 1)]));
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
    let ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 3)]));
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![150.0]);
}

#[test]
fn n2_most_allocated() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    c.pod(pod(
        "ns",
        "old",
        None,
        "Running",
        Some("n1"),
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    c.pod(pod(
        "ns",
        "new",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    let ssn = session(&c, &only(&[(MOST_REQUESTED_WEIGHT, 1)]));
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
}

#[test]
fn n3_balanced_allocation() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "4", "memory": "2Gi", "pods": "110"}));
    c.node("n2", json!({"cpu": "2", "memory": "2Gi", "pods": "110"}));
    c.pod(pod(
        "ns",
        "new",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "1Gi"}),
    ));
    c.pod(pod("ns", "be", None, "Pending", None, json!({})));
    let ssn = session(&c, &only(&[(BALANCED_RESOURCE_WEIGHT, 1)]));
    // Fractions 0.25 / 0.5 ⇒ std 0.125 ⇒ 87; 0.5 / 0.5 ⇒ 100.
    assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![87.0, 100.0]);
    // A best-effort pod is not balanced-scored at all.
    assert_eq!(scores(&ssn, "ns/be", &["n1", "n2"]), vec![0.0, 0.0]);
}

#[test]
fn balanced_allocation_counts_gpu_only_when_requested() {
    let mut c = TestCluster::new();
    c.node(
        "n1",
        json!({"cpu": "4", "memory": "4Gi", "nvidia.com/gpu": "4", "pods": "110"}),
    );
    c.pod(pod(
        "ns",
        "gpu",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}),
    ));
    c.pod(pod(
        "ns",
        "cpu",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "1Gi"}),
    ));
    let ssn = session(&c, &only(&[(BALANCED_RESOURCE_WEIGHT, 1)]));
    // 0.25, 0.25, 1.0: mean 0.5, population std sqrt(0.125) ≈ 0.354 ⇒ 64.
    assert_eq!(scores(&ssn, "ns/gpu", &["n1"]), vec![64.0]);
    assert_eq!(scores(&ssn, "ns/cpu", &["n1"]), vec![100.0]);
}

#[test]
fn n4_taint_toleration() {
    let mut c = TestCluster::new();
    let alloc = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
    node_with(&mut c, "n1", alloc.clone(), json!({}), json!({}), json!({}));
    let taints = json!({"taints": [
        {"key": "a", "effect": "PreferNoSchedule"},
        {"key": "b", "effect": "PreferNoSchedule"}
    ]});
    node_with(&mut c, "n2", alloc, json!({}), taints, json!({}));
    c.pod(pod("ns", "new", None, "Pending", None, json!({"cpu": "1"})));
    let ssn = session(&c, &only(&[(TAINT_TOLERATION_WEIGHT, 3)]));
    assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![300.0, 0.0]);
    // No PreferNoSchedule taint anywhere: every node gets the full score.
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![300.0]);
}

#[test]
fn n5_node_affinity() {
    let mut c = TestCluster::new();
    let alloc = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
    node_with(
        &mut c,
        "n1",
        alloc.clone(),
        json!({"disk": "ssd"}),
        json!({}),
        json!({}),
    );
    node_with(
        &mut c,
        "n2",
        alloc,
        json!({"disk": "hdd"}),
        json!({}),
        json!({}),
    );
    let mut p = pod("ns", "new", None, "Pending", None, json!({"cpu": "1"}));
    p["spec"]["affinity"] = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}
    ]}});
    c.pod(p);
    c.pod(pod(
        "ns",
        "plain",
        None,
        "Pending",
        None,
        json!({"cpu": "1"}),
    ));
    let ssn = session(&c, &only(&[(NODE_AFFINITY_WEIGHT, 2)]));
    assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![200.0, 0.0]);
    // No preferred terms: PreScore skips, nothing is added.
    assert_eq!(scores(&ssn, "ns/plain", &["n1", "n2"]), vec![0.0, 0.0]);
}

#[test]
fn invalid_preferred_node_affinity_aborts_batch_scoring() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    let mut p = pod("ns", "bad", None, "Pending", None, json!({"cpu": "1"}));
    p["spec"]["affinity"] = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "Near", "values": ["x"]}]}}
    ]}});
    c.pod(p);
    let ssn = session(&c, &[]);
    let t = ssn.state.task_by_key("ns/bad");
    let n1 = ssn.state.node_by_key("n1");
    assert!(ssn.batch_node_order(t, &[n1]).is_err());
}

#[test]
fn n6_image_locality() {
    let mut c = TestCluster::new();
    let alloc = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
    let images =
        json!({"images": [{"names": ["registry.example/app:v1"], "sizeBytes": 500 * MIB}]});
    node_with(&mut c, "n1", alloc.clone(), json!({}), json!({}), images);
    node_with(&mut c, "n2", alloc, json!({}), json!({}), json!({}));
    let mut p = pod("ns", "new", None, "Pending", None, json!({"cpu": "1"}));
    p["spec"]["containers"][0]["image"] = json!("registry.example/app:v1");
    c.pod(p);
    let ssn = session(&c, &only(&[(IMAGE_LOCALITY_WEIGHT, 1)]));
    // 500 MiB × 1/2 nodes = 250 MiB ⇒ 100 × (250 − 23) / (1000 − 23) = 23.
    assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![23.0, 0.0]);
    let ssn = session(&c, &only(&[]));
    assert!(
        !ssn.has_node_order(),
        "weight 0 leaves the per-node point unregistered"
    );
}

#[test]
fn image_locality_matches_the_library_formula() {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {
            "initContainers": [{"name": "i", "image": "busybox"}],
            "containers": [{"name": "a", "image": "nginx:1.25"}, {"name": "b", "image": "nginx:1.25"}]
        }
    }))
    .expect("pod");
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": "n"},
        "status": {"images": [
            {"names": ["busybox:latest"], "sizeBytes": 5 * MIB},
            {"names": ["nginx:1.25", "nginx@sha256:x"], "sizeBytes": 900 * MIB}
        ]}
    }))
    .expect("node");
    let want = crate::k8s::resources::image_locality_score(&pod, &node, &|_| 3, 4);
    // Same inputs through this module's formula: every image on 3 of 4 nodes.
    let sum = (5 * MIB) * 3 / 4 + 2 * ((900 * MIB) as f64 * 0.75) as i64;
    assert_eq!(image_score(sum, 3), want);
    assert_eq!(normalized_image_name("busybox"), "busybox:latest");
    assert_eq!(
        normalized_image_name("host:5000/busybox"),
        "host:5000/busybox:latest"
    );
    assert_eq!(normalized_image_name("nginx:1.25"), "nginx:1.25");
    assert_eq!(image_score(0, 0), 0);
    assert_eq!(image_score(i64::MAX, 1), 100);
}

/// An `int64`-max weight is clamped to `MAX_WEIGHT`: scores stay ordered and finite
/// (Volcano's `score × weight` wraps around), and nothing panics in debug arithmetic.
#[test]
fn extreme_weights_are_clamped_and_scored_without_overflow() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "busy");
    standard_node(&mut c, "idle");
    c.pod(pod(
        "ns",
        "old",
        None,
        "Running",
        Some("busy"),
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    c.pod(pod(
        "ns",
        "new",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    let w = NodeOrderWeights::from_arguments(&Arguments::from_pairs(&[
        (LEAST_REQUESTED_WEIGHT, ArgValue::Int(i64::MAX)),
        (MOST_REQUESTED_WEIGHT, ArgValue::Int(i64::MIN)),
    ]));
    assert_eq!(
        (w.least_requested, w.most_requested),
        (MAX_WEIGHT, -MAX_WEIGHT)
    );

    let ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, i64::MAX)]));
    let got = scores(&ssn, "ns/new", &["busy", "idle"]);
    // LeastAllocated 50 on the busy node, 75 on the idle one, times the clamped weight.
    assert_eq!(
        got,
        vec![50.0 * MAX_WEIGHT as f64, 75.0 * MAX_WEIGHT as f64]
    );
    let ssn = session(
        &c,
        &only(&[
            (LEAST_REQUESTED_WEIGHT, i64::MAX),
            (MOST_REQUESTED_WEIGHT, i64::MAX),
        ]),
    );
    assert!(
        scores(&ssn, "ns/new", &["busy", "idle"])
            .iter()
            .all(|s| s.is_finite())
    );
}

/// Negative and out-of-range weights are reported by the parser, under their argument path,
/// once per configuration load.
#[test]
fn bad_weights_are_warned_about_at_parse_time() {
    let text = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n  \
                - name: nodeorder\n    arguments:\n      leastrequested.weight: -5\n      \
                mostrequested.weight: 9223372036854775807\n      \
                tainttoleration.weight: 1.5\n";
    let known = engine::conf::KnownNames {
        actions: &["allocate"],
        plugins: &["gang", NAME],
        strict: true,
        check_arguments: Some(crate::check_arguments),
    };
    let parsed = engine::conf::parse(text, &known).expect("valid configuration");
    let prefix = "tiers[1].plugins[0].arguments.";
    let w = &parsed.warnings;
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(
        w[0].starts_with(&format!(
            "{prefix}leastrequested.weight: negative weight -5"
        )),
        "{}",
        w[0]
    );
    assert!(
        w[1].starts_with(&format!(
            "{prefix}mostrequested.weight: weight 9223372036854775807 is out of range"
        )),
        "{}",
        w[1]
    );
    assert!(w[1].ends_with("1000000000000 is used"), "{}", w[1]);
    assert!(
        w[2].starts_with(&format!(
            "{prefix}tainttoleration.weight: expected an integer, found 1.5"
        )),
        "{}",
        w[2]
    );
}

#[test]
fn n7_zero_weight_disables_and_float_weight_is_ignored() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    c.pod(pod(
        "ns",
        "new",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    let ssn = session(&c, &only(&[]));
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![0.0]);

    let w = NodeOrderWeights::from_arguments(&Arguments::from_pairs(&[(
        LEAST_REQUESTED_WEIGHT,
        ArgValue::Float(1.5),
    )]));
    assert_eq!(w, NodeOrderWeights::default());
    let w = NodeOrderWeights::from_arguments(&Arguments::from_pairs(&[(
        LEAST_REQUESTED_WEIGHT,
        ArgValue::Int(0),
    )]));
    assert_eq!(w.least_requested, 0);

    let mut args = only(&[(LEAST_REQUESTED_WEIGHT, 0)]);
    args.retain(|(k, _)| *k != LEAST_REQUESTED_WEIGHT);
    args.push((LEAST_REQUESTED_WEIGHT, ArgValue::Float(1.5)));
    let ssn = session(&c, &args);
    // The float is ignored, default weight 1 stays: (4−1)/4 and (8−2)/8 ⇒ 75.
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![75.0]);
}

#[test]
fn defaults_sum_every_sub_plugin() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    c.pod(pod(
        "ns",
        "new",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    let ssn = session(&c, &[]);
    // least 75 + balanced 100 (0.25 / 0.25) + taint 300; no affinity, spread or image terms.
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![75.0 + 100.0 + 300.0]);
}

#[test]
fn non_zero_requests_for_containers_without_requests() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "1", "memory": "1000Mi", "pods": "110"}));
    c.pod(pod("ns", "old", None, "Running", Some("n1"), json!({})));
    c.pod(pod("ns", "new", None, "Pending", None, json!({})));
    let ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 1)]));
    // Each pod counts 100m and 200 MiB: cpu (1000−200)/1000 = 80, memory (1000−400)/1000 = 60.
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![70.0]);
}

#[test]
fn request_sums_follow_allocations_and_evictions() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    c.pod_group(pod_group("ns", "pg", 1));
    c.pod(pod(
        "ns",
        "old",
        None,
        "Running",
        Some("n1"),
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    c.pod(pod(
        "ns",
        "placed",
        Some("pg"),
        "Pending",
        None,
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    c.pod(pod(
        "ns",
        "new",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    let mut ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 1)]));
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
    allocate(&mut ssn, "ns/placed", "n1");
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![25.0]);
    // An eviction frees the pod's requests at once for scoring.
    let old = ssn.state.task_by_key("ns/old");
    let mut stmt = Statement::new();
    ssn.evict(&mut stmt, old, "test");
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
    ssn.discard(stmt);
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![25.0]);
}

#[test]
fn node_sums_built_after_an_eviction_leave_the_evicted_pod_out() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    c.pod(pod(
        "ns",
        "old",
        None,
        "Running",
        Some("n1"),
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    c.pod(pod(
        "ns",
        "new",
        None,
        "Pending",
        None,
        json!({"cpu": "1", "memory": "2Gi"}),
    ));
    let mut ssn = session(&c, &only(&[(LEAST_REQUESTED_WEIGHT, 1)]));
    let old = ssn.state.task_by_key("ns/old");
    let mut stmt = Statement::new();
    ssn.evict(&mut stmt, old, "test");
    // n1 is scored for the first time now: its sums come from the view, without `old`.
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![75.0]);
    ssn.discard(stmt);
    assert_eq!(scores(&ssn, "ns/new", &["n1"]), vec![50.0]);
}

#[test]
fn preferred_pod_affinity_scores() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    standard_node(&mut c, "n2");
    let mut db = pod("ns", "db", None, "Running", Some("n1"), json!({"cpu": "1"}));
    db["metadata"]["labels"] = json!({"app": "db"});
    c.pod(db);
    let mut p = pod("ns", "new", None, "Pending", None, json!({"cpu": "1"}));
    p["spec"]["affinity"] = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}}
    ]}});
    c.pod(p);
    c.pod(pod(
        "ns",
        "plain",
        None,
        "Pending",
        None,
        json!({"cpu": "1"}),
    ));
    let ssn = session(&c, &only(&[(POD_AFFINITY_WEIGHT, 2)]));
    assert_eq!(scores(&ssn, "ns/new", &["n1", "n2"]), vec![200.0, 0.0]);
    assert_eq!(scores(&ssn, "ns/plain", &["n1", "n2"]), vec![0.0, 0.0]);
}

#[test]
fn existing_pods_preferred_anti_affinity_scores_through_the_index() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    standard_node(&mut c, "n2");
    let mut loner = pod(
        "ns",
        "loner",
        None,
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    );
    loner["spec"]["affinity"] = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}}
    ]}});
    c.pod(loner);
    let mut web = pod("ns", "web", None, "Pending", None, json!({"cpu": "1"}));
    web["metadata"]["labels"] = json!({"app": "web"});
    c.pod(web);
    let ssn = session(&c, &only(&[(POD_AFFINITY_WEIGHT, 1)]));
    // n1 raw −5, n2 raw 0 ⇒ min–max 0 / 100.
    assert_eq!(scores(&ssn, "ns/web", &["n1", "n2"]), vec![0.0, 100.0]);
}

#[test]
fn topology_spread_schedule_anyway() {
    const ZONE: &str = "topology.kubernetes.io/zone";
    let mut c = TestCluster::new();
    let alloc = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
    node_with(
        &mut c,
        "a1",
        alloc.clone(),
        json!({ZONE: "a"}),
        json!({}),
        json!({}),
    );
    node_with(
        &mut c,
        "b1",
        alloc,
        json!({ZONE: "b"}),
        json!({}),
        json!({}),
    );
    for name in ["w1", "w2"] {
        let mut w = pod(
            "ns",
            name,
            None,
            "Running",
            Some("a1"),
            json!({"cpu": "100m"}),
        );
        w["metadata"]["labels"] = json!({"app": "web"});
        c.pod(w);
    }
    let mut p = pod("ns", "new", None, "Pending", None, json!({"cpu": "100m"}));
    p["metadata"]["labels"] = json!({"app": "web"});
    p["spec"]["topologySpreadConstraints"] = json!([{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}}
    }]);
    c.pod(p);
    let ssn = session(&c, &only(&[(POD_TOPOLOGY_SPREAD_WEIGHT, 2)]));
    let s = scores(&ssn, "ns/new", &["a1", "b1"]);
    // The empty zone scores the maximum; the crowded one less.
    assert_eq!(s[1], 200.0);
    assert!(s[0] < s[1], "{s:?}");
}

#[test]
fn out_of_range_scores_abort() {
    let mut c = TestCluster::new();
    standard_node(&mut c, "n1");
    let ssn = session(&c, &[]);
    let n1 = ssn.state.node_by_key("n1");
    let mut totals = vec![0.0];
    assert!(add_weighted(&ssn.state, "X", &[101], 1, &[n1], &mut totals).is_err());
    assert!(add_weighted(&ssn.state, "X", &[-1], 1, &[n1], &mut totals).is_err());
    add_weighted(&ssn.state, "X", &[40], -2, &[n1], &mut totals).expect("in range");
    assert_eq!(totals, vec![-80.0]);
}
