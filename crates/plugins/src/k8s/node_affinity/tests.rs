use super::*;
use proptest::prelude::*;
use serde_json::{Value, json};

fn pod(spec_extra: Value) -> Pod {
    let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": spec
    }))
    .expect("valid pod")
}

fn pod_with_required(terms: Value) -> Pod {
    pod(json!({"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
    }}}))
}

fn pod_with_preferred(terms: Value) -> Pod {
    pod(json!({"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": terms
    }}}))
}

fn node(name: &str, labels: Value) -> Node {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels}
    }))
    .expect("valid node")
}

fn worker() -> Node {
    node(
        "worker-1",
        json!({
            "topology.kubernetes.io/zone": "us-east-1a",
            "disk": "ssd",
            "gpu-count": "4",
            "empty": ""
        }),
    )
}

/// One requirement, usable in `matchExpressions` or `matchFields`.
fn req(key: &str, operator: &str, values: &[&str]) -> Value {
    json!({"key": key, "operator": operator, "values": values})
}

/// A term list holding a single one-field term.
fn field(key: &str, operator: &str, values: &[&str]) -> Value {
    json!([{"matchFields": [req(key, operator, values)]}])
}

/// A term list holding a single one-expression term.
fn expr(key: &str, operator: &str, values: &[&str]) -> Value {
    json!([{"matchExpressions": [req(key, operator, values)]}])
}

#[test]
fn match_expressions_table() {
    let zone = "topology.kubernetes.io/zone";
    let cases = [
        // (name, terms, matches worker-1)
        (
            "In with the value",
            expr(zone, "In", &["us-east-1b", "us-east-1a"]),
            true,
        ),
        (
            "In without the value",
            expr(zone, "In", &["us-east-1b"]),
            false,
        ),
        ("In on a missing label", expr("rack", "In", &["r1"]), false),
        ("In the empty value", expr("empty", "In", &[""]), true),
        (
            "NotIn on a missing label matches",
            expr("rack", "NotIn", &["r1"]),
            true,
        ),
        (
            "NotIn with the value",
            expr("disk", "NotIn", &["ssd", "nvme"]),
            false,
        ),
        (
            "NotIn without the value",
            expr("disk", "NotIn", &["hdd"]),
            true,
        ),
        ("Exists", expr("disk", "Exists", &[]), true),
        (
            "Exists on an empty-valued label",
            expr("empty", "Exists", &[]),
            true,
        ),
        (
            "Exists on a missing label",
            expr("rack", "Exists", &[]),
            false,
        ),
        (
            "DoesNotExist on a missing label",
            expr("rack", "DoesNotExist", &[]),
            true,
        ),
        (
            "DoesNotExist on a present label",
            expr("disk", "DoesNotExist", &[]),
            false,
        ),
        ("Gt below", expr("gpu-count", "Gt", &["3"]), true),
        ("Gt equal", expr("gpu-count", "Gt", &["4"]), false),
        ("Lt above", expr("gpu-count", "Lt", &["5"]), true),
        ("Lt equal", expr("gpu-count", "Lt", &["4"]), false),
        (
            "Gt compares as integers, not strings",
            expr("gpu-count", "Gt", &["10"]),
            false,
        ),
        (
            "Gt on a non-integer label",
            expr("disk", "Gt", &["1"]),
            false,
        ),
        ("Gt on a missing label", expr("rack", "Gt", &["1"]), false),
        (
            "Gt with a non-integer value",
            expr("gpu-count", "Gt", &["three"]),
            false,
        ),
        (
            "Gt with two values",
            expr("gpu-count", "Gt", &["1", "2"]),
            false,
        ),
        ("Gt with no value", expr("gpu-count", "Gt", &[]), false),
        // "-1" parses as an integer but is not a valid label value.
        (
            "Gt with a negative value",
            expr("gpu-count", "Gt", &["-1"]),
            false,
        ),
        ("In with no values", expr("disk", "In", &[]), false),
        ("NotIn with no values", expr("rack", "NotIn", &[]), false),
        (
            "Exists with values",
            expr("disk", "Exists", &["ssd"]),
            false,
        ),
        (
            "DoesNotExist with values",
            expr("rack", "DoesNotExist", &["x"]),
            false,
        ),
        (
            "unsupported operator",
            expr("disk", "Equals", &["ssd"]),
            false,
        ),
        (
            "operators are case-sensitive",
            expr("disk", "in", &["ssd"]),
            false,
        ),
        ("invalid key", expr("bad key", "DoesNotExist", &[]), false),
        (
            "invalid key prefix",
            expr("Example.com/disk", "Exists", &[]),
            false,
        ),
        ("invalid value", expr("rack", "NotIn", &["a b"]), false),
        (
            "expressions in a term are AND-ed",
            json!([{"matchExpressions": [
                {"key": "disk", "operator": "In", "values": ["ssd"]},
                {"key": "gpu-count", "operator": "Gt", "values": ["8"]}
            ]}]),
            false,
        ),
        (
            "terms are OR-ed",
            json!([
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]},
                {"matchExpressions": [{"key": zone, "operator": "In", "values": ["us-east-1a"]}]}
            ]),
            true,
        ),
        (
            "an invalid term does not hide a valid one",
            json!([
                {"matchExpressions": [{"key": "disk", "operator": "Bogus"}]},
                {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}
            ]),
            true,
        ),
        (
            "one invalid requirement invalidates its term",
            json!([{"matchExpressions": [
                {"key": "disk", "operator": "Exists"},
                {"key": "rack", "operator": "DoesNotExist", "values": ["x"]}
            ]}]),
            false,
        ),
        ("empty term list matches nothing", json!([]), false),
        (
            "a term with nothing in it matches nothing",
            json!([{}]),
            false,
        ),
        (
            "a term with empty lists matches nothing",
            json!([{"matchExpressions": [], "matchFields": []}]),
            false,
        ),
        (
            "an empty term does not hide a valid one",
            json!([{}, {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]),
            true,
        ),
    ];
    let n = worker();
    for (name, terms, want) in cases {
        assert_eq!(
            node_matches_required(&pod_with_required(terms), &n),
            want,
            "{name}"
        );
    }
}

#[test]
fn match_fields_table() {
    let cases = [
        // (name, terms, matches worker-1)
        (
            "metadata.name In",
            field("metadata.name", "In", &["worker-1"]),
            true,
        ),
        (
            "metadata.name In another node",
            field("metadata.name", "In", &["worker-2"]),
            false,
        ),
        (
            "metadata.name NotIn another node",
            field("metadata.name", "NotIn", &["worker-2"]),
            true,
        ),
        (
            "metadata.name NotIn this node",
            field("metadata.name", "NotIn", &["worker-1"]),
            false,
        ),
        (
            "two values are invalid for fields",
            field("metadata.name", "In", &["worker-1", "worker-2"]),
            false,
        ),
        (
            "Exists is invalid for fields",
            field("metadata.name", "Exists", &[]),
            false,
        ),
        (
            "unknown field reads as empty: In",
            field("spec.podCIDR", "In", &["10.0.0.0/24"]),
            false,
        ),
        (
            "unknown field reads as empty: NotIn",
            field("spec.podCIDR", "NotIn", &["10.0.0.0/24"]),
            true,
        ),
        (
            "fields and expressions are AND-ed",
            json!([{
                "matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]
            }]),
            false,
        ),
    ];
    let n = worker();
    for (name, terms, want) in cases {
        assert_eq!(
            node_matches_required(&pod_with_required(terms), &n),
            want,
            "{name}"
        );
    }
}

#[test]
fn match_fields_ignored_for_unnamed_node() {
    let p = pod_with_required(json!([{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["worker-2"]}
    ]}]));
    let unnamed: Node =
        serde_json::from_value(json!({"metadata": {"labels": {"disk": "ssd"}}})).expect("node");
    assert!(node_matches_required(&p, &unnamed));
}

#[test]
fn node_selector_and_affinity_are_both_required() {
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu-count", "operator": "Gt", "values": ["2"]}]}]
    }}});
    let cases = [
        // (name, nodeSelector, affinity, matches worker-1)
        (
            "selector matches",
            json!({"disk": "ssd"}),
            Value::Null,
            true,
        ),
        (
            "selector value differs",
            json!({"disk": "hdd"}),
            Value::Null,
            false,
        ),
        (
            "selector label missing",
            json!({"rack": "r1"}),
            Value::Null,
            false,
        ),
        (
            "selector on an empty-valued label",
            json!({"empty": ""}),
            Value::Null,
            true,
        ),
        (
            "selector wants an empty value",
            json!({"disk": ""}),
            Value::Null,
            false,
        ),
        ("both match", json!({"disk": "ssd"}), affinity.clone(), true),
        (
            "selector fails, affinity matches",
            json!({"disk": "hdd"}),
            affinity.clone(),
            false,
        ),
        (
            "selector matches, affinity fails",
            json!({"disk": "ssd"}),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": expr("gpu-count", "Gt", &["8"])
            }}}),
            false,
        ),
        ("empty selector", json!({}), Value::Null, true),
    ];
    let n = worker();
    for (name, selector, affinity, want) in cases {
        let p = pod(json!({"nodeSelector": selector, "affinity": affinity}));
        assert_eq!(node_matches_required(&p, &n), want, "{name}");
    }
}

#[test]
fn node_without_labels() {
    let bare: Node = serde_json::from_value(json!({"metadata": {"name": "bare"}})).expect("node");
    assert!(node_matches_required(&pod(json!({})), &bare));
    assert!(!node_matches_required(
        &pod(json!({"nodeSelector": {"disk": "ssd"}})),
        &bare
    ));
    assert!(node_matches_required(
        &pod_with_required(expr("disk", "DoesNotExist", &[])),
        &bare
    ));
}

#[test]
fn parsed_once_matches_many_nodes() {
    let required = RequiredNodeAffinity::from_pod(&pod_with_required(expr("disk", "In", &["ssd"])));
    assert!(required.matches(&worker()));
    assert!(!required.matches(&node("worker-2", json!({"disk": "hdd"}))));
}

#[test]
fn required_constraint_presence() {
    let cases = [
        ("nothing", json!({}), false),
        (
            "node selector",
            json!({"nodeSelector": {"disk": "ssd"}}),
            true,
        ),
        (
            "empty node selector is still present",
            json!({"nodeSelector": {}}),
            true,
        ),
        (
            "required affinity",
            json!({"affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
            }}}),
            true,
        ),
        (
            "only preferred affinity",
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}}),
            false,
        ),
        (
            "only pod affinity",
            json!({"affinity": {"podAffinity": {}}}),
            false,
        ),
    ];
    for (name, spec, want) in cases {
        assert_eq!(has_required_node_constraints(&pod(spec)), want, "{name}");
    }
    let no_spec: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}})).expect("pod");
    assert!(!has_required_node_constraints(&no_spec));
}

#[test]
fn terms_conflict_table() {
    let name_in =
        |values: &[&str]| json!({"key": "metadata.name", "operator": "In", "values": values});
    let cases = [
        ("no affinity", None, false),
        ("no terms", Some(json!([])), false),
        (
            "a term without name pin",
            Some(json!([{"matchExpressions": [{"key": "disk", "operator": "Exists"}]}])),
            false,
        ),
        (
            "one name",
            Some(json!([{"matchFields": [name_in(&["a"])]}])),
            false,
        ),
        (
            "disjoint pins inside one term",
            Some(json!([{"matchFields": [name_in(&["a"]), name_in(&["b"])]}])),
            true,
        ),
        (
            "overlapping pins inside one term",
            Some(json!([{"matchFields": [name_in(&["a", "b"]), name_in(&["b"])]}])),
            false,
        ),
        (
            "every term empty after intersection",
            Some(json!([
                {"matchFields": [name_in(&["a"]), name_in(&["b"])]},
                {"matchFields": [name_in(&["c"]), name_in(&["d"])]}
            ])),
            true,
        ),
        (
            "one term still names a node",
            Some(json!([
                {"matchFields": [name_in(&["a"]), name_in(&["b"])]},
                {"matchFields": [name_in(&["c"])]}
            ])),
            false,
        ),
        (
            "another term is unpinned",
            Some(json!([
                {"matchFields": [name_in(&["a"]), name_in(&["b"])]},
                {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}
            ])),
            false,
        ),
        (
            "NotIn is not a pin",
            Some(field("metadata.name", "NotIn", &["a"])),
            false,
        ),
    ];
    for (name, terms, want) in cases {
        let p = match terms {
            Some(terms) => pod_with_required(terms),
            None => pod(json!({})),
        };
        assert_eq!(required_terms_conflict(&p), want, "{name}");
    }
}

#[test]
fn preferred_score_table() {
    let cases = [
        // (name, preferred terms, raw score on worker-1)
        (
            "sum of matching weights",
            json!([
                {"weight": 10, "preference": {"matchExpressions": [req("disk", "In", &["ssd"])]}},
                {"weight": 5, "preference": {"matchExpressions": [req("gpu-count", "Gt", &["2"])]}},
                {"weight": 7, "preference": {"matchExpressions": [req("disk", "In", &["hdd"])]}}
            ]),
            15,
        ),
        (
            "matchFields count too",
            json!([{"weight": 3, "preference": {"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["worker-1"]}
            ]}}]),
            3,
        ),
        ("no terms", json!([]), 0),
        (
            "an empty preference never matches",
            json!([{"weight": 9, "preference": {}}]),
            0,
        ),
        (
            "weight 0 is skipped, even when invalid",
            json!([
                {"weight": 0, "preference": {"matchExpressions": [{"key": "disk", "operator": "Bogus"}]}},
                {"weight": 4, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
            ]),
            4,
        ),
        (
            "an invalid weighted term scores nothing",
            json!([
                {"weight": 4, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}},
                {"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "Bogus"}]}}
            ]),
            0,
        ),
    ];
    let n = worker();
    for (name, terms, want) in cases {
        assert_eq!(
            preferred_node_affinity_score(&pod_with_preferred(terms), &n),
            want,
            "{name}"
        );
    }
}

#[test]
fn preferred_parsing_outcomes() {
    assert_eq!(PreferredNodeAffinity::from_pod(&pod(json!({}))), Ok(None));
    assert!(!has_preferred_node_affinity(&pod(json!({}))));

    let empty = pod_with_preferred(json!([]));
    assert!(has_preferred_node_affinity(&empty));
    assert!(matches!(
        PreferredNodeAffinity::from_pod(&empty),
        Ok(Some(_))
    ));

    let invalid = pod_with_preferred(json!([
        {"weight": 1, "preference": {"matchExpressions": [req("disk", "Gt", &["x"])]}}
    ]));
    let err = PreferredNodeAffinity::from_pod(&invalid).expect_err("invalid term");
    assert!(err.message.contains("[0].matchExpressions[0]"), "{err}");
}

#[test]
fn label_key_and_value_validation() {
    for key in [
        "disk",
        "a",
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "A_b.c-D",
        "x1/y",
    ] {
        assert!(is_label_key(key), "{key} should be valid");
    }
    for key in [
        "",
        "/disk",
        "a/b/c",
        "-disk",
        "disk-",
        "Example.com/disk",
        "example..com/disk",
        "example.com/",
        "a b",
        &"k".repeat(64),
    ] {
        assert!(!is_label_key(key), "{key} should be invalid");
    }
    for value in ["", "ssd", "1", "a.b_c-d"] {
        assert!(is_label_value(value), "{value} should be valid");
    }
    for value in ["-1", "+1", "a b", "ssd.", &"v".repeat(64)] {
        assert!(!is_label_value(value), "{value} should be invalid");
    }
}

proptest! {
    #[test]
    fn in_and_not_in_are_complementary(
        label in proptest::option::of("[a-z0-9]{1,3}"),
        values in proptest::collection::vec("[a-z0-9]{1,3}", 1..4),
    ) {
        let labels = match &label {
            Some(v) => json!({"k": v}),
            None => json!({}),
        };
        let n = node("n", labels);
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let is_in = node_matches_required(&pod_with_required(expr("k", "In", &values)), &n);
        let not_in = node_matches_required(&pod_with_required(expr("k", "NotIn", &values)), &n);
        prop_assert_eq!(is_in, !not_in);
    }

    #[test]
    fn gt_and_lt_follow_integer_order(actual in 0i64..1000, bound in 0i64..1000) {
        let n = node("n", json!({"count": actual.to_string()}));
        let bound = bound.to_string();
        let gt = node_matches_required(&pod_with_required(expr("count", "Gt", &[&bound])), &n);
        let lt = node_matches_required(&pod_with_required(expr("count", "Lt", &[&bound])), &n);
        let bound: i64 = bound.parse().expect("integer");
        prop_assert_eq!(gt, actual > bound);
        prop_assert_eq!(lt, actual < bound);
    }

    #[test]
    fn arbitrary_requirements_never_panic(
        key in ".{0,20}",
        operator in "(In|NotIn|Exists|DoesNotExist|Gt|Lt|.{0,6})",
        values in proptest::collection::vec(".{0,8}", 0..3),
        label in ".{0,8}",
    ) {
        let n = node("n", json!({"k": label}));
        let p = pod_with_required(json!([{
            "matchExpressions": [{"key": key, "operator": operator, "values": values}],
            "matchFields": [{"key": "metadata.name", "operator": operator, "values": values}]
        }]));
        let _ = node_matches_required(&p, &n);
        let _ = required_terms_conflict(&p);
    }
}
