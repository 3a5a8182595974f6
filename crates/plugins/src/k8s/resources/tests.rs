use super::*;
use serde_json::json;

fn pod(v: serde_json::Value) -> Pod {
    serde_json::from_value(v).expect("pod")
}

#[test]
fn worked_example_least_most_balanced() {
    // Node 4000m / 8Gi with 1000m / 2Gi requested, incoming pod 1000m / 2Gi.
    let gi = 1024 * 1024 * 1024;
    let resources = [(2000, 4000), (4 * gi, 8 * gi)];
    assert_eq!(least_allocated_score(&resources, &[50, 50]), 50);
    assert_eq!(most_allocated_score(&resources, &[1, 1]), 50);
    assert_eq!(balanced_allocation_score(&[0.5, 0.25]), 87);
}

#[test]
fn least_and_most_table() {
    // (resources, weights, least, most)
    type Case = (&'static [(i64, i64)], &'static [i64], i64, i64);
    let cases: [Case; 6] = [
        (&[(0, 4000), (0, 8000)], &[1, 1], 100, 0),
        (
            &[(3000, 4000), (1000, 8000)],
            &[1, 1],
            (25 + 87) / 2,
            (75 + 12) / 2,
        ),
        (
            &[(5000, 4000), (1000, 8000)],
            &[1, 1],
            87 / 2,
            (100 + 12) / 2,
        ),
        // Zero allocatable is skipped entirely, weight included.
        (&[(1000, 0), (1000, 4000)], &[50, 50], 75, 25),
        (&[(1000, 0)], &[1], 0, 0),
        (
            &[(1000, 4000), (3000, 4000)],
            &[3, 1],
            (75 * 3 + 25) / 4,
            (25 * 3 + 75) / 4,
        ),
    ];
    for (i, (res, w, least, most)) in cases.into_iter().enumerate() {
        assert_eq!(least_allocated_score(res, w), least, "least case {i}");
        assert_eq!(most_allocated_score(res, w), most, "most case {i}");
    }
}

#[test]
fn balanced_table() {
    let cases: [(&[f64], i64); 6] = [
        (&[], 100),
        (&[0.7], 100),
        (&[0.5, 0.5], 100),
        (&[1.5, 0.5], 75), // clamped to 1.0
        (&[0.0, 1.0], 50),
        // mean 0.5, deviations ±0.5 and 0 → sqrt(0.5/3) = 0.408 → 59
        (&[0.0, 0.5, 1.0], 59),
    ];
    for (fractions, want) in cases {
        assert_eq!(balanced_allocation_score(fractions), want, "{fractions:?}");
    }
    // Garbage in must not panic.
    let _ = balanced_allocation_score(&[f64::NAN, f64::INFINITY, -1.0]);
}

#[test]
fn normalize_max_cases() {
    let mut s = vec![0, 0, 0];
    normalize_max(&mut s, false);
    assert_eq!(s, [0, 0, 0]);
    normalize_max(&mut s, true);
    assert_eq!(s, [100, 100, 100]);

    let mut s = vec![1, 2, 4];
    normalize_max(&mut s, false);
    assert_eq!(s, [25, 50, 100]);
    let mut s = vec![1, 2, 4];
    normalize_max(&mut s, true);
    assert_eq!(s, [75, 50, 0]);
    let mut s = vec![1, 3];
    normalize_max(&mut s, false);
    assert_eq!(s, [33, 100]);
    let mut empty: Vec<i64> = Vec::new();
    normalize_max(&mut empty, true);
    assert!(empty.is_empty());
}

#[test]
fn normalize_min_max_cases() {
    let mut s = vec![5, 5];
    normalize_min_max(&mut s);
    assert_eq!(s, [0, 0]);
    let mut s = vec![-2, 0, 1];
    normalize_min_max(&mut s);
    assert_eq!(s, [0, 66, 100]);
    let mut s = vec![0, 0, 0];
    normalize_min_max(&mut s);
    assert_eq!(s, [0, 0, 0]);
    let mut s = vec![i64::MIN, i64::MAX];
    normalize_min_max(&mut s);
    assert_eq!(s, [0, 100]);
    let mut empty: Vec<i64> = Vec::new();
    normalize_min_max(&mut empty);
}

#[test]
fn quantity_parsing() {
    let cases = [
        ("0", 0),
        ("1", NANO_PER_UNIT),
        ("100m", 100 * NANO_PER_MILLI),
        ("1.5", 1_500_000_000),
        ("0.1m", 100_000),
        ("1n", 1),
        ("0.5n", 1), // rounded up to a nano
        ("-0.5n", -1),
        ("2Ki", 2048 * NANO_PER_UNIT),
        ("1.5Gi", 1_610_612_736 * NANO_PER_UNIT),
        ("1e3", 1000 * NANO_PER_UNIT),
        ("1E3", 1000 * NANO_PER_UNIT),
        ("5E", 5 * 10i128.pow(27)),
        ("1k", 1000 * NANO_PER_UNIT),
        ("+3", 3 * NANO_PER_UNIT),
        (".5", 500_000_000),
        (" 2 ", 2 * NANO_PER_UNIT),
        ("bogus", 0),
        ("1.2.3", 0),
        ("1Zi", 0),
        ("", 0),
    ];
    for (text, want) in cases {
        assert_eq!(parse_quantity_nanos(text), want, "{text:?}");
    }
}

#[test]
fn non_zero_request_table() {
    let mi = 1024 * 1024;
    let cases = [
        // No requests at all: the defaults per container.
        (
            json!({"containers": [{"name": "a"}, {"name": "b"}]}),
            (200, 400 * mi),
        ),
        // Explicit zero is respected, only missing resources are defaulted.
        (
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "0"}}}]}),
            (0, 200 * mi),
        ),
        (
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}]}),
            (250, 1024 * mi),
        ),
        // Init containers: maximum of the regular sum and each init container.
        (
            json!({
                "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}}],
                "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]
            }),
            (2000, 1024 * mi),
        ),
        // Sidecars run next to everything after them.
        (
            json!({
                "initContainers": [
                    {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                    {"name": "i", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}}
                ],
                "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]
            }),
            (3000, 2048 * mi),
        ),
        // Overhead is added.
        (
            json!({
                "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                "overhead": {"cpu": "100m", "memory": "10Mi"}
            }),
            (1100, 1034 * mi),
        ),
        // Pod-level requests override; unset memory falls back to the per-container default.
        (
            json!({
                "resources": {"requests": {"cpu": "3"}},
                "containers": [{"name": "a"}, {"name": "b"}]
            }),
            (3000, 400 * mi),
        ),
    ];
    for (i, (spec, want)) in cases.into_iter().enumerate() {
        let p = pod(json!({"metadata": {"name": "p"}, "spec": spec}));
        assert_eq!(non_zero_request(&p), want, "case {i}");
    }
    assert_eq!(non_zero_request(&pod(json!({"metadata": {}}))), (0, 0));
}

#[test]
fn non_zero_request_uses_resize_status() {
    let p = pod(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
        "status": {"containerStatuses": [{
            "name": "a", "image": "x", "imageID": "", "ready": true, "restartCount": 0,
            "resources": {"requests": {"cpu": "2", "memory": "512Mi"}},
            "allocatedResources": {"cpu": "1500m", "memory": "512Mi"}
        }]}
    }));
    assert_eq!(non_zero_request(&p), (2000, 1024 * 1024 * 1024));

    let mut infeasible = p.clone();
    let status = serde_json::from_value(json!({
        "containerStatuses": [{
            "name": "a", "image": "x", "imageID": "", "ready": true, "restartCount": 0,
            "resources": {"requests": {"cpu": "2", "memory": "512Mi"}},
            "allocatedResources": {"cpu": "1500m", "memory": "512Mi"}
        }],
        "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    }))
    .expect("status");
    infeasible.status = Some(status);
    assert_eq!(non_zero_request(&infeasible), (2000, 512 * 1024 * 1024));
}

#[test]
fn image_locality() {
    let mb = 1024 * 1024;
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": "n1"},
        "status": {"images": [
            {"names": ["registry/app:v1", "registry/app@sha256:abc"], "sizeBytes": 500 * mb},
            {"names": ["busybox:latest"], "sizeBytes": 300 * mb}
        ]}
    }))
    .expect("node");
    let spread = |name: &str| match name {
        "registry/app:v1" => 2,
        "busybox:latest" => 4,
        _ => 0,
    };
    let p = |images: &[&str]| {
        let containers: Vec<_> = images
            .iter()
            .enumerate()
            .map(|(i, img)| json!({"name": format!("c{i}"), "image": img}))
            .collect();
        pod(json!({"metadata": {"name": "p"}, "spec": {"containers": containers}}))
    };
    // 500 MiB × 2/4 = 250 MiB → 100 × (250 − 23) / (1000 − 23) = 23
    assert_eq!(
        image_locality_score(&p(&["registry/app:v1"]), &node, &spread, 4),
        23
    );
    // Untagged image is normalised to :latest: 300 MiB × 4/4.
    assert_eq!(
        image_locality_score(&p(&["busybox"]), &node, &spread, 4),
        28
    );
    // Absent image: clamped to the minimum → 0.
    assert_eq!(
        image_locality_score(&p(&["other:v2"]), &node, &spread, 4),
        0
    );
    // Two containers: (250 + 300) MiB over [23, 2000] MiB → 100 × 527 / 1977 = 26
    assert_eq!(
        image_locality_score(&p(&["registry/app:v1", "busybox"]), &node, &spread, 4),
        26
    );
    // No containers / no nodes never divide by zero.
    assert_eq!(image_locality_score(&p(&[]), &node, &spread, 4), 0);
    assert_eq!(image_locality_score(&p(&["busybox"]), &node, &spread, 0), 0);
}

proptest::proptest! {
    #[test]
    fn allocation_scores_stay_in_range(
        requested in 0i64..(1 << 50),
        allocatable in 1i64..(1 << 50),
        weight in 1i64..1000,
    ) {
        let res = [(requested, allocatable)];
        proptest::prop_assert!((0..=100).contains(&least_allocated_score(&res, &[weight])));
        proptest::prop_assert!((0..=100).contains(&most_allocated_score(&res, &[weight])));
    }

    #[test]
    fn normalisers_stay_in_range(
        scores in proptest::collection::vec(0i64..i64::MAX, 0..20),
        signed in proptest::collection::vec(proptest::num::i64::ANY, 0..20),
        reverse: bool,
    ) {
        let mut s = scores;
        normalize_max(&mut s, reverse);
        proptest::prop_assert!(s.iter().all(|v| (0..=100).contains(v)));
        let mut s = signed;
        normalize_min_max(&mut s);
        proptest::prop_assert!(s.iter().all(|v| (0..=100).contains(v)));
    }

    #[test]
    fn quantity_parsing_never_panics(text in "[-+]?[0-9.]{0,45}[eEinumkKMGTP]{0,2}[-+]?[0-9]{0,4}") {
        let _ = parse_quantity_nanos(&text);
    }
}

#[test]
fn image_name_normalisation() {
    assert_eq!(normalized_image_name("nginx"), "nginx:latest");
    assert_eq!(normalized_image_name("nginx:1.2"), "nginx:1.2");
    assert_eq!(
        normalized_image_name("host:5000/nginx"),
        "host:5000/nginx:latest"
    );
    assert_eq!(
        normalized_image_name("host:5000/nginx:1"),
        "host:5000/nginx:1"
    );
}
