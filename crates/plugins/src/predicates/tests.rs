use super::*;
use crate::testutil::{StateLookup, TestCluster, pipeline, pod, pod_group};
use engine::conf::{ArgValue, PluginOption};
use engine::framework::{Session, Statement};
use serde_json::{Value, json};

/// A node with allocatable 4 cpu / 8Gi / `pods` and extra `spec` and labels.
fn node(c: &mut TestCluster, name: &str, pods: u32, labels: Value, spec: Value) {
    let mut all_labels = json!({"kubernetes.io/hostname": name});
    if let (Some(all), Some(extra)) = (all_labels.as_object_mut(), labels.as_object()) {
        all.extend(extra.clone());
    }
    let allocatable = json!({"cpu": "4", "memory": "8Gi", "pods": pods.to_string()});
    let n = json!({
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": allocatable}
    });
    c.state
        .upsert_node(serde_json::from_value(n).expect("valid node"));
}

/// A pod of ours; `spec` is merged into the pod spec, `meta` into its metadata.
fn pod_with(name: &str, node: Option<&str>, phase: &str, meta: Value, spec: Value) -> Value {
    let mut p = pod("ns", name, None, phase, node, json!({"cpu": "100m"}));
    if let (Some(m), Some(extra)) = (p["metadata"].as_object_mut(), meta.as_object()) {
        m.extend(extra.clone());
    }
    if let (Some(s), Some(extra)) = (p["spec"].as_object_mut(), spec.as_object()) {
        s.extend(extra.clone());
    }
    p
}

fn host_port(port: i32) -> Value {
    json!({"containers": [{"name": "main", "ports": [{"containerPort": 80, "hostPort": port}]}]})
}

fn session(c: &TestCluster, args: &[(&str, ArgValue)]) -> Session {
    let option = PluginOption::new(NAME).with_arguments(Arguments::from_pairs(args));
    c.session_with(vec![vec![option]])
}

fn check(ssn: &mut Session, pod: &str, node: &str) -> Result<(), FitError> {
    let (t, n) = (ssn.state.task_by_key(pod), ssn.state.node_by_key(node));
    ssn.pre_predicate(t)
        .map_err(|e| FitError::error(e, "test"))?;
    ssn.predicate(t, n)
}

fn codes(e: &FitError) -> Vec<(StatusCode, &str, &str)> {
    e.statuses
        .iter()
        .map(|s| (s.code, &*s.reason, &*s.plugin))
        .collect()
}

#[test]
fn pd1_pod_number_exceeded_is_recorded_and_filters_go_on() {
    let mut c = TestCluster::new();
    node(
        &mut c,
        "n1",
        2,
        json!({}),
        json!({"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}),
    );
    let tolerate = json!({"tolerations": [{"operator": "Exists"}]});
    c.pod(pod_with(
        "a",
        Some("n1"),
        "Running",
        json!({}),
        tolerate.clone(),
    ));
    c.pod(pod_with("b", Some("n1"), "Running", json!({}), tolerate));
    c.pod(pod_with("new", None, "Pending", json!({}), json!({})));
    let mut ssn = session(&c, &[]);
    let err = check(&mut ssn, "ns/new", "n1").expect_err("does not fit");
    assert_eq!(
        codes(&err),
        vec![
            (StatusCode::Unschedulable, POD_NUMBER_EXCEEDED, NAME),
            (
                StatusCode::UnschedulableAndUnresolvable,
                crate::k8s::taints::UNTOLERATED_TAINT,
                "TaintToleration"
            ),
        ]
    );
}

#[test]
fn pod_count_alone_is_a_fit_error() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 1, json!({}), json!({}));
    c.pod(pod_with("a", Some("n1"), "Running", json!({}), json!({})));
    c.pod(pod_with("new", None, "Pending", json!({}), json!({})));
    let mut ssn = session(&c, &[]);
    let err = check(&mut ssn, "ns/new", "n1").expect_err("full");
    assert_eq!(
        codes(&err),
        vec![(StatusCode::Unschedulable, POD_NUMBER_EXCEEDED, NAME)]
    );
    assert!(err.blocks_allocation() && !err.blocks_preemption());
}

#[test]
fn node_without_pod_capacity_fits_nothing() {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "4", "memory": "8Gi"}));
    c.pod(pod_with("new", None, "Pending", json!({}), json!({})));
    let mut ssn = session(&c, &[]);
    let err = check(&mut ssn, "ns/new", "n1").expect_err("no pod capacity");
    assert_eq!(
        codes(&err),
        vec![(StatusCode::Unschedulable, POD_NUMBER_EXCEEDED, NAME)]
    );
}

#[test]
fn pd2_untolerated_taint_aborts_and_can_be_disabled() {
    let mut c = TestCluster::new();
    node(
        &mut c,
        "n1",
        110,
        json!({}),
        json!({"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}),
    );
    // The pod on n1 holds host port 8080, which the new pod wants too: NodePorts would fail,
    // but it never runs after the taint failure.
    c.pod(pod_with("holder", Some("n1"), "Running", json!({}), {
        let mut s = host_port(8080);
        s["tolerations"] = json!([{"operator": "Exists"}]);
        s
    }));
    c.pod(pod_with("new", None, "Pending", json!({}), host_port(8080)));
    c.pod(pod_with("plain", None, "Pending", json!({}), json!({})));
    let mut ssn = session(&c, &[]);
    let err = check(&mut ssn, "ns/new", "n1").expect_err("tainted");
    assert_eq!(
        codes(&err),
        vec![(
            StatusCode::UnschedulableAndUnresolvable,
            crate::k8s::taints::UNTOLERATED_TAINT,
            "TaintToleration"
        )]
    );

    let mut ssn = session(&c, &[(TAINT_TOLERATION_ENABLE, ArgValue::Bool(false))]);
    assert_eq!(check(&mut ssn, "ns/plain", "n1"), Ok(()));
    // With the taint filter off the port conflict is what remains.
    let err = check(&mut ssn, "ns/new", "n1").expect_err("port taken");
    assert_eq!(
        codes(&err),
        vec![(StatusCode::Unschedulable, PORTS_CONFLICT, "NodePorts")]
    );
}

#[test]
fn pd3_equivalence_cache_answers_the_second_pod_of_a_template() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({}), json!({"unschedulable": true}));
    let template = json!({"annotations": {"volcano.sh/template-uid": "tpl-1"}});
    c.pod(pod_with("p1", None, "Pending", template.clone(), json!({})));
    c.pod(pod_with("p2", None, "Pending", template, json!({})));
    let mut ssn = session(&c, &[(CACHE_ENABLE, ArgValue::Bool(true))]);
    let first = check(&mut ssn, "ns/p1", "n1").expect_err("cordoned");
    assert_eq!(
        codes(&first),
        vec![(
            StatusCode::UnschedulableAndUnresolvable,
            crate::k8s::unschedulable::NODE_UNSCHEDULABLE,
            "NodeUnschedulable"
        )]
    );
    let second = check(&mut ssn, "ns/p2", "n1").expect_err("cached");
    assert_eq!(
        codes(&second),
        vec![(StatusCode::Error, CACHE_NOT_FIT, CACHE_PLUGIN)]
    );

    // Without the cache the second pod gets the real reason.
    let mut ssn = session(&c, &[]);
    check(&mut ssn, "ns/p1", "n1").expect_err("cordoned");
    let second = check(&mut ssn, "ns/p2", "n1").expect_err("cordoned");
    assert_eq!(second.statuses[0].plugin, "NodeUnschedulable");
}

#[test]
fn cache_records_fit_and_ignores_pods_without_template() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({}), json!({}));
    let template = json!({"annotations": {"volcano.sh/template-uid": "tpl-1"}});
    c.pod(pod_with("p1", None, "Pending", template.clone(), json!({})));
    c.pod(pod_with(
        "p2",
        None,
        "Pending",
        template,
        json!({"nodeSelector": {"x": "y"}}),
    ));
    let mut ssn = session(&c, &[(CACHE_ENABLE, ArgValue::Bool(true))]);
    assert_eq!(check(&mut ssn, "ns/p1", "n1"), Ok(()));
    // Same template: the cached "fit" answers, even though this pod's selector would fail
    // (Volcano assumes pods of one template are alike).
    assert_eq!(check(&mut ssn, "ns/p2", "n1"), Ok(()));
}

#[test]
fn pd4_host_port_conflict_is_unschedulable_only() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({}), json!({}));
    node(&mut c, "n2", 110, json!({}), json!({}));
    c.pod(pod_with(
        "holder",
        Some("n1"),
        "Running",
        json!({}),
        host_port(8080),
    ));
    c.pod(pod_with("new", None, "Pending", json!({}), host_port(8080)));
    let mut ssn = session(&c, &[]);
    let err = check(&mut ssn, "ns/new", "n1").expect_err("port taken");
    assert_eq!(
        codes(&err),
        vec![(StatusCode::Unschedulable, PORTS_CONFLICT, "NodePorts")]
    );
    assert!(err.blocks_allocation());
    assert!(!err.blocks_preemption());
    assert_eq!(check(&mut ssn, "ns/new", "n2"), Ok(()));
}

#[test]
fn pd5_prefilter_skips() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({"disk": "ssd"}), json!({}));
    c.pod(pod_with("plain", None, "Pending", json!({}), json!({})));
    c.pod(pod_with(
        "hdd",
        None,
        "Pending",
        json!({}),
        json!({"nodeSelector": {"disk": "hdd"}}),
    ));
    let mut ssn = session(&c, &[]);
    let mut p = Predicates::from_arguments(&Arguments::new());
    let state = &mut ssn.state;
    p.on_session_open(state);
    let state = &*state;

    let plain = state.task_by_key("ns/plain");
    p.pre_predicate(state, plain).expect("prefilter");
    let skip = p.skip_set(plain);
    for f in [
        Filter::NodeAffinity,
        Filter::NodePorts,
        Filter::InterPodAffinity,
        Filter::PodTopologySpread,
    ] {
        assert!(skip.contains(f), "{f:?} skipped");
    }
    assert!(!skip.contains(Filter::TaintToleration) && !skip.contains(Filter::NodeUnschedulable));

    let hdd = state.task_by_key("ns/hdd");
    p.pre_predicate(state, hdd).expect("prefilter");
    assert!(!p.skip_set(hdd).contains(Filter::NodeAffinity));
    let n1 = state.node_by_key("n1");
    let err = p.predicate(state, hdd, n1).expect_err("selector mismatch");
    assert_eq!(
        codes(&err),
        vec![(
            StatusCode::UnschedulableAndUnresolvable,
            NODE_AFFINITY_MISMATCH,
            "NodeAffinity"
        )]
    );
}

#[test]
fn node_affinity_terms_conflict_fails_prepredicate() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({}), json!({}));
    let affinity = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a"]},
            {"key": "metadata.name", "operator": "In", "values": ["b"]}
        ]}]
    }}}});
    c.pod(pod_with("p", None, "Pending", json!({}), affinity));
    let mut ssn = session(&c, &[]);
    let t = ssn.state.task_by_key("ns/p");
    assert_eq!(
        ssn.pre_predicate(t),
        Err("plugin NodeAffinity pre-predicates failed pod affinity terms conflict".to_string())
    );
}

#[test]
fn pd6_action_level_resource_fit_uses_future_idle() {
    let mut c = TestCluster::new();
    c.node(
        "n1",
        json!({"cpu": "1500m", "memory": "8Gi", "pods": "110"}),
    );
    let mut releasing = pod(
        "ns",
        "old",
        None,
        "Running",
        Some("n1"),
        json!({"cpu": "500m"}),
    );
    releasing["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    c.pod(releasing);
    c.pod_group(pod_group("ns", "pg", 1));
    c.pod(pod(
        "ns",
        "piped",
        Some("pg"),
        "Pending",
        None,
        json!({"cpu": "200m"}),
    ));
    c.pod(pod(
        "ns",
        "fits",
        None,
        "Pending",
        None,
        json!({"cpu": "1300m"}),
    ));
    c.pod(pod(
        "ns",
        "too-big",
        None,
        "Pending",
        None,
        json!({"cpu": "1301m"}),
    ));
    let mut ssn = session(&c, &[]);
    pipeline(&mut ssn, "ns/piped", "n1");
    let n1 = ssn.state.node_by_key("n1");
    let node = ssn.state.node(n1);
    assert_eq!(
        (
            node.idle.milli_cpu,
            node.releasing.milli_cpu,
            node.pipelined.milli_cpu
        ),
        (1000.0, 500.0, 200.0)
    );
    let fits = ssn.state.task_by_key("ns/fits");
    assert_eq!(
        engine::actions::helper::resource_fit(&ssn, fits, n1),
        Ok(())
    );
    let too_big = ssn.state.task_by_key("ns/too-big");
    let err = engine::actions::helper::resource_fit(&ssn, too_big, n1).expect_err("1301 > 1300");
    assert_eq!(err.statuses[0].reason, "Insufficient cpu");
    assert_eq!(err.statuses[0].code, StatusCode::Unschedulable);
}

#[test]
fn evicted_pods_leave_the_view_and_allocations_join_it() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 2, json!({}), json!({}));
    c.pod(pod_with(
        "a",
        Some("n1"),
        "Running",
        json!({}),
        host_port(8080),
    ));
    c.pod(pod_with("b", Some("n1"), "Running", json!({}), json!({})));
    c.pod(pod_with("new", None, "Pending", json!({}), host_port(8080)));
    let mut ssn = session(&c, &[]);
    assert!(check(&mut ssn, "ns/new", "n1").is_err());

    // Evicting `a` frees both its pod slot and its host port in the Kubernetes view,
    // although the engine's node still accounts it as Releasing.
    let a = ssn.state.task_by_key("ns/a");
    let mut stmt = Statement::new();
    ssn.evict(&mut stmt, a, "test");
    assert_eq!(check(&mut ssn, "ns/new", "n1"), Ok(()));

    // Undoing the eviction brings both back.
    ssn.discard(stmt);
    let err = check(&mut ssn, "ns/new", "n1").expect_err("full again");
    assert_eq!(
        codes(&err),
        vec![
            (StatusCode::Unschedulable, POD_NUMBER_EXCEEDED, NAME),
            (StatusCode::Unschedulable, PORTS_CONFLICT, "NodePorts"),
        ]
    );
}

#[test]
fn allocations_take_host_ports() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({}), json!({}));
    c.pod_group(pod_group("ns", "pg", 1));
    let mut first = pod(
        "ns",
        "first",
        Some("pg"),
        "Pending",
        None,
        json!({"cpu": "100m"}),
    );
    first["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 9000}]);
    c.pod(first);
    c.pod(pod_with(
        "second",
        None,
        "Pending",
        json!({}),
        host_port(9000),
    ));
    let mut ssn = session(&c, &[]);
    assert_eq!(check(&mut ssn, "ns/second", "n1"), Ok(()));
    crate::testutil::allocate(&mut ssn, "ns/first", "n1");
    let err = check(&mut ssn, "ns/second", "n1").expect_err("port now taken");
    assert_eq!(err.statuses[0].reason, PORTS_CONFLICT);
}

fn anti_affinity(app: &str, key: &str) -> Value {
    json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    ]}}})
}

#[test]
fn existing_pods_anti_affinity_refuses_the_node() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({}), json!({}));
    node(&mut c, "n2", 110, json!({}), json!({}));
    c.pod(pod_with(
        "guard",
        Some("n1"),
        "Running",
        json!({}),
        anti_affinity("web", "kubernetes.io/hostname"),
    ));
    c.pod(pod_with(
        "web",
        None,
        "Pending",
        json!({"labels": {"app": "web"}}),
        json!({}),
    ));
    let mut ssn = session(&c, &[]);
    let err = check(&mut ssn, "ns/web", "n1").expect_err("guarded");
    assert_eq!(
        codes(&err),
        vec![(
            StatusCode::Unschedulable,
            "node(s) didn't satisfy existing pods anti-affinity rules",
            "InterPodAffinity"
        )]
    );
    assert_eq!(check(&mut ssn, "ns/web", "n2"), Ok(()));
}

#[test]
fn own_anti_affinity_sees_pods_allocated_in_the_session() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({}), json!({}));
    c.pod_group(pod_group("ns", "pg", 1));
    let mut w1 = pod(
        "ns",
        "w1",
        Some("pg"),
        "Pending",
        None,
        json!({"cpu": "100m"}),
    );
    w1["metadata"]["labels"] = json!({"app": "web"});
    c.pod(w1);
    let w2 = pod_with(
        "w2",
        None,
        "Pending",
        json!({"labels": {"app": "web"}}),
        anti_affinity("web", "kubernetes.io/hostname"),
    );
    c.pod(w2);
    let mut ssn = session(&c, &[]);
    assert_eq!(check(&mut ssn, "ns/w2", "n1"), Ok(()));
    crate::testutil::allocate(&mut ssn, "ns/w1", "n1");
    let err = check(&mut ssn, "ns/w2", "n1").expect_err("anti-affinity");
    assert_eq!(
        err.statuses[0].reason,
        "node(s) didn't match pod anti-affinity rules"
    );
    assert_eq!(err.statuses[0].code, StatusCode::Unschedulable);
}

#[test]
fn evictions_during_a_tasks_attempt_update_its_inter_pod_affinity() {
    // The counts PrePredicate took for `web` follow the pods evicted and brought back
    // while it is being placed, without a new PrePredicate (preemption's tentative
    // evictions): both its own anti-affinity (to `db`) and `guard`'s anti-affinity to it.
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({}), json!({}));
    c.pod(pod_with(
        "db",
        Some("n1"),
        "Running",
        json!({"labels": {"app": "db"}}),
        json!({}),
    ));
    c.pod(pod_with(
        "guard",
        Some("n1"),
        "Running",
        json!({}),
        anti_affinity("web", "kubernetes.io/hostname"),
    ));
    c.pod(pod_with(
        "web",
        None,
        "Pending",
        json!({"labels": {"app": "web"}}),
        anti_affinity("db", "kubernetes.io/hostname"),
    ));
    let mut ssn = session(&c, &[]);
    let (web, n1) = (ssn.state.task_by_key("ns/web"), ssn.state.node_by_key("n1"));
    let (db, guard) = (
        ssn.state.task_by_key("ns/db"),
        ssn.state.task_by_key("ns/guard"),
    );
    ssn.pre_predicate(web).expect("prepared");
    let reasons = |ssn: &Session| -> Vec<String> {
        ssn.predicate(web, n1)
            .err()
            .map(|e| e.statuses.iter().map(|s| s.reason.to_string()).collect())
            .unwrap_or_default()
    };
    let own = "node(s) didn't match pod anti-affinity rules";
    let existing = "node(s) didn't satisfy existing pods anti-affinity rules";
    // The filter stops at its first failure: the task's own anti-affinity.
    assert_eq!(reasons(&ssn), vec![own.to_string()]);

    let mut stmt = Statement::new();
    ssn.evict(&mut stmt, db, "test");
    assert_eq!(reasons(&ssn), vec![existing.to_string()]);
    ssn.evict(&mut stmt, guard, "test");
    assert_eq!(ssn.predicate(web, n1), Ok(()));

    // Undone one at a time (as when a victim is spared), then all at once.
    assert!(ssn.revert_eviction(&mut stmt, db, engine::model::TaskStatus::Running));
    assert_eq!(reasons(&ssn), vec![own.to_string()]);
    ssn.discard(stmt);
    assert_eq!(reasons(&ssn), vec![own.to_string()]);
    let mut stmt = Statement::new();
    ssn.evict(&mut stmt, db, "test");
    assert_eq!(reasons(&ssn), vec![existing.to_string()]);
    ssn.discard(stmt);
}

#[test]
fn required_affinity_without_any_match_is_unresolvable_unless_self_matching() {
    let mut c = TestCluster::new();
    node(&mut c, "n1", 110, json!({}), json!({}));
    let affinity = |app: &str| {
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
        ]}}})
    };
    c.pod(pod_with(
        "lonely",
        None,
        "Pending",
        json!({"labels": {"app": "x"}}),
        affinity("db"),
    ));
    c.pod(pod_with(
        "first",
        None,
        "Pending",
        json!({"labels": {"app": "db"}}),
        affinity("db"),
    ));
    let mut ssn = session(&c, &[]);
    let err = check(&mut ssn, "ns/lonely", "n1").expect_err("no db pod");
    assert_eq!(
        codes(&err),
        vec![(
            StatusCode::UnschedulableAndUnresolvable,
            "node(s) didn't match pod affinity rules",
            "InterPodAffinity"
        )]
    );
    assert_eq!(check(&mut ssn, "ns/first", "n1"), Ok(()));
}

#[test]
fn topology_spread_do_not_schedule() {
    const ZONE: &str = "topology.kubernetes.io/zone";
    let mut c = TestCluster::new();
    node(&mut c, "a1", 110, json!({ZONE: "a"}), json!({}));
    node(&mut c, "b1", 110, json!({ZONE: "b"}), json!({}));
    node(&mut c, "nozone", 110, json!({}), json!({}));
    let labels = json!({"labels": {"app": "web"}});
    c.pod(pod_with(
        "e1",
        Some("a1"),
        "Running",
        labels.clone(),
        json!({}),
    ));
    let spread = json!({"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}
    }]});
    c.pod(pod_with("new", None, "Pending", labels, spread));
    let mut ssn = session(&c, &[]);
    // Zone a would hold 2 against 0 in zone b: skew 2 > 1.
    let err = check(&mut ssn, "ns/new", "a1").expect_err("skew");
    assert_eq!(
        codes(&err),
        vec![(
            StatusCode::Unschedulable,
            "node(s) didn't match pod topology spread constraints",
            "PodTopologySpread"
        )]
    );
    assert_eq!(check(&mut ssn, "ns/new", "b1"), Ok(()));
    let err = check(&mut ssn, "ns/new", "nozone").expect_err("no zone label");
    assert_eq!(
        err.statuses[0].code,
        StatusCode::UnschedulableAndUnresolvable
    );

    let mut ssn = session(&c, &[(POD_TOPOLOGY_SPREAD_ENABLE, ArgValue::Bool(false))]);
    assert_eq!(check(&mut ssn, "ns/new", "a1"), Ok(()));
}

#[test]
fn arguments_and_skip_set_bits() {
    let e = Enabled::from_arguments(&Arguments::from_pairs(&[
        (NODE_PORTS_ENABLE, ArgValue::Str("false".into())),
        (CACHE_ENABLE, ArgValue::Int(1)),
        (VOLUME_BINDING_WEIGHT, ArgValue::Str("2".into())),
    ]));
    // Go's ParseBool accepts "false"; an integer is not a boolean: default kept.
    assert!(!e.node_ports);
    let warnings = check_arguments(&Arguments::from_pairs(&[
        (CACHE_ENABLE, ArgValue::Int(1)),
        (VOLUME_BINDING_WEIGHT, ArgValue::Str("2".into())),
    ]));
    let keys: Vec<&str> = warnings.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(keys, [CACHE_ENABLE, VOLUME_BINDING_WEIGHT]);
    assert!(!e.cache);
    assert!(e.node_affinity && e.taint_toleration && e.pod_affinity && e.pod_topology_spread);

    let mut s = SkipSet::default();
    s.insert(Filter::PodTopologySpread);
    assert!(s.contains(Filter::PodTopologySpread));
    assert!(!s.contains(Filter::NodeAffinity));
}
