use super::DimensionDefault::{Infinity, Zero};
use super::*;

const GPU: &str = "nvidia.com/gpu";

fn res(cpu: f64, mem: f64, scalars: &[(&str, f64)]) -> Resource {
    Resource::from_pairs(cpu, mem, scalars)
}

fn list(entries: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
        .collect()
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

// -- names and scalars ---------------------------------------------------------------------

#[test]
fn interner_round_trips() {
    assert_eq!(ResourceName::PODS.as_str(), "pods");
    assert_eq!(ResourceName::new("pods"), ResourceName::PODS);
    let gpu = ResourceName::new(GPU);
    assert_eq!(ResourceName::new(GPU), gpu);
    assert_eq!(gpu.as_str(), GPU);
    assert_eq!(ResourceName::lookup(GPU), Some(gpu));
    assert_eq!(ResourceName::lookup("never.interned.example/name"), None);
    assert_eq!(ResourceName::from(GPU).to_string(), GPU);
}

#[test]
fn scalars_map_operations() {
    let a = ResourceName::new("example.com/a");
    let b = ResourceName::new("example.com/b");
    let mut s = Scalars::new();
    assert!(s.is_empty());
    s.set(b, 2.0);
    s.set(a, 1.0);
    s.add(ResourceName::PODS, 3.0);
    s.add(ResourceName::PODS, 1.0);
    assert_eq!(s.len(), 3);
    assert_eq!(s.get(a), Some(1.0));
    assert_eq!(s.get(ResourceName::PODS), Some(4.0));
    let order: Vec<ResourceName> = s.iter().map(|(n, _)| n).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    assert_eq!(s.remove(b), Some(2.0));
    assert_eq!(s.remove(b), None);
    assert!(!s.contains(b));
    let collected: Scalars = [(a, 1.0), (a, 5.0)].into_iter().collect();
    assert_eq!(collected.get(a), Some(5.0));
    assert_eq!(collected.len(), 1);
}

// -- conversion ----------------------------------------------------------------------------

#[test]
fn from_list_units() {
    let r = Resource::from_list(&list(&[
        ("cpu", "1500m"),
        ("memory", "2Gi"),
        (GPU, "1"),
        ("pods", "110"),
        ("hugepages-2Mi", "2Mi"),
        ("ephemeral-storage", "1Ki"),
        ("count/pods", "10"),
        ("storage", "10Gi"),
        ("requests.nvidia.com/gpu", "1"),
        ("attachable-volumes-csi-ebs", "25"),
        ("example.kubernetes.io/thing", "2"),
    ]));
    assert_eq!(r.milli_cpu, 1500.0);
    assert_eq!(r.memory, 2_147_483_648.0);
    assert_eq!(r.get(GPU), 1000.0);
    assert_eq!(r.get("pods"), 110.0);
    assert_eq!(r.max_task_num, 110);
    assert_eq!(r.get("hugepages-2Mi"), 2_097_152_000.0);
    assert_eq!(r.get("ephemeral-storage"), 1_024_000.0);
    assert_eq!(r.get("attachable-volumes-csi-ebs"), 25_000.0);
    assert_eq!(r.get("example.kubernetes.io/thing"), 2000.0);
    let kept: Vec<&str> = r.scalars.iter().map(|(n, _)| n.as_str()).collect();
    for dropped in ["count/pods", "storage", "requests.nvidia.com/gpu"] {
        assert!(!kept.contains(&dropped), "{dropped} should be dropped");
    }
    assert_eq!(r.scalars.len(), 6);
}

#[test]
fn from_list_skips_malformed_quantities() {
    let r = Resource::from_list(&list(&[("cpu", "lots"), ("memory", "1Gi"), (GPU, "1x")]));
    assert_eq!(r.milli_cpu, 0.0);
    assert_eq!(r.memory, 1_073_741_824.0);
    assert!(r.scalars.is_empty());
}

#[test]
fn from_list_with_ignored_devices() {
    let l = list(&[("volcano.sh/vgpu-number", "2"), (GPU, "1")]);
    let r = Resource::from_list_with_ignored(&l, &["volcano.sh/vgpu-number"]);
    assert_eq!(r.get("volcano.sh/vgpu-number"), 0.0);
    assert_eq!(r.get(GPU), 1000.0);
    assert_eq!(r.scalars.len(), 1);
}

#[test]
fn scalar_resource_name_rules() {
    for yes in [
        GPU,
        "example.com/foo",
        "example.com/Foo_bar.1",
        "hugepages-1Gi",
        "attachable-volumes-aws-ebs",
        "kubernetes.io/batch-cpu",
        "scheduling.k8s.io/x",
    ] {
        assert!(is_scalar_resource_name(yes), "{yes} should be scalar");
    }
    for no in [
        "cpu",
        "memory",
        "storage",
        "example.com/",
        "/gpu",
        "a/b/c",
        "Example.com/gpu",
        "example.com/-gpu",
        "example.com/gpu-",
        "example..com/gpu",
        "requests.example.com/gpu",
    ] {
        assert!(!is_scalar_resource_name(no), "{no} should not be scalar");
    }
    let long_name = format!("example.com/{}", "a".repeat(64));
    assert!(!is_scalar_resource_name(&long_name));
    assert!(is_count_quota("count/pods"));
}

#[test]
fn from_pairs_routes_cpu_and_memory() {
    let r = res(
        100.0,
        5.0,
        &[("cpu", 50.0), ("memory", 1.0), (GPU, 2.0), (GPU, 3.0)],
    );
    assert_eq!(r.milli_cpu, 150.0);
    assert_eq!(r.memory, 6.0);
    assert_eq!(r.get(GPU), 5.0);
    assert_eq!(r.max_task_num, 0);
}

// -- thresholds ----------------------------------------------------------------------------

#[test]
fn empty_zero_and_names() {
    assert!(Resource::empty().is_empty());
    assert!(res(0.05, 0.09, &[("pods", 1.0), (GPU, 0.05)]).is_empty());
    assert!(!res(0.1, 0.0, &[]).is_empty());
    assert!(!res(0.0, 0.0, &[(GPU, 0.1)]).is_empty());

    let r = res(0.05, 1024.0, &[("pods", 1.0), (GPU, 0.0)]);
    assert!(r.is_zero("cpu"));
    assert!(!r.is_zero("memory"));
    assert!(r.is_zero(GPU));
    assert!(!r.is_zero("pods"));
    // Missing scalar: zero (Volcano asserts here when the map is non-nil).
    assert!(r.is_zero("example.com/missing"));
    assert!(Resource::empty().is_zero(GPU));

    assert_eq!(r.resource_names(), names(&["memory", "pods"]));
    assert_eq!(res(1.0, 0.0, &[]).resource_names(), names(&["cpu"]));
    assert_eq!(r.get("unknown.example/never"), 0.0);
}

// -- arithmetic ----------------------------------------------------------------------------

#[test]
fn add_and_sub() {
    let mut r = res(1000.0, 2048.0, &[("pods", 1.0)]);
    r.max_task_num = 7;
    r.add(&res(500.0, 1024.0, &[(GPU, 1000.0)]));
    assert_eq!(r.milli_cpu, 1500.0);
    assert_eq!(r.memory, 3072.0);
    assert_eq!(r.get(GPU), 1000.0);
    assert_eq!(r.max_task_num, 7);

    r.sub(&res(500.0, 1024.0, &[(GPU, 1000.0)]));
    assert_eq!(r.milli_cpu, 1000.0);
    assert_eq!(r.get(GPU), 0.0);
    assert!(r.scalars.contains(ResourceName::new(GPU)));
    assert_eq!(r.max_task_num, 7);

    // Insufficient: logged, subtracted anyway; names only in rr go negative.
    r.sub(&res(2000.0, 0.0, &[("example.com/x", 3.0)]));
    assert_eq!(r.milli_cpu, -1000.0);
    assert_eq!(r.get("example.com/x"), -3.0);

    let mut w = res(1.0, 1.0, &[]);
    w.sub_without_assert(&res(2.0, 0.0, &[(GPU, 5.0)]));
    assert_eq!(w.milli_cpu, -1.0);
    assert_eq!(w.get(GPU), -5.0);
}

#[test]
fn multi_set_max_and_fit_delta() {
    let mut r = res(1000.0, 10.0, &[(GPU, 2000.0)]);
    r.multi(0.5);
    assert_eq!(r, res(500.0, 5.0, &[(GPU, 1000.0)]));

    let mut m = res(500.0, 50.0, &[(GPU, 1000.0)]);
    m.set_max_resource(&res(100.0, 80.0, &[(GPU, 3000.0), ("pods", 2.0)]));
    assert_eq!(m, res(500.0, 80.0, &[(GPU, 3000.0), ("pods", 2.0)]));
    m.set_max_resource(&res(0.0, 0.0, &[(GPU, 1.0)]));
    assert_eq!(m.get(GPU), 3000.0);

    let mut idle = res(1000.0, 100.0, &[(GPU, 1000.0)]);
    idle.fit_delta(&res(
        400.0,
        0.0,
        &[(GPU, 1000.0), ("example.com/x", 2.0), ("pods", 0.0)],
    ));
    assert!((idle.milli_cpu - 599.9).abs() < 1e-9);
    assert_eq!(idle.memory, 100.0);
    assert!((idle.get(GPU) + 0.1).abs() < 1e-9);
    assert!((idle.get("example.com/x") + 2.1).abs() < 1e-9);
    assert!(!idle.scalars.contains(ResourceName::PODS));
}

// -- comparisons ---------------------------------------------------------------------------

#[test]
fn less_is_strict_on_every_dimension() {
    assert!(res(1.0, 1.0, &[]).less(&res(2.0, 2.0, &[]), Zero));
    assert!(!res(2.0, 1.0, &[]).less(&res(2.0, 2.0, &[]), Zero));
    // No tolerance: within ε but not below.
    assert!(!res(2.05, 1.0, &[]).less(&res(2.0, 2.0, &[]), Zero));
    assert!(res(1.95, 1.0, &[]).less(&res(2.0, 2.0, &[]), Zero));
    assert!(!res(1.0, 2.0, &[]).less(&res(2.0, 2.0, &[]), Infinity));
}

#[test]
fn less_missing_scalars() {
    let with_gpu = res(1.0, 1.0, &[(GPU, 1000.0)]);
    let without = res(2.0, 2.0, &[]);
    // Left has gpu, right lacks: Zero needs gpu < 0, Infinity skips it.
    assert!(!with_gpu.less(&without, Zero));
    assert!(with_gpu.less(&without, Infinity));
    assert!(res(1.0, 1.0, &[(GPU, -1.0)]).less(&without, Zero));
    // Right has gpu, left lacks: unchecked with Zero, false with Infinity.
    let left = res(1.0, 1.0, &[]);
    let right = res(2.0, 2.0, &[(GPU, 1000.0)]);
    assert!(left.less(&right, Zero));
    assert!(!left.less(&right, Infinity));
    // Both have it.
    assert!(with_gpu.less(&res(2.0, 2.0, &[(GPU, 2000.0)]), Zero));
    assert!(!with_gpu.less(&res(2.0, 2.0, &[(GPU, 1000.0)]), Zero));
}

#[test]
fn less_equal_tolerance() {
    let rr = res(2.0, 100.0, &[(GPU, 1000.0)]);
    assert!(res(2.0, 100.0, &[(GPU, 1000.0)]).less_equal(&rr, Zero));
    assert!(res(2.09, 100.09, &[(GPU, 1000.09)]).less_equal(&rr, Zero));
    assert!(!res(2.15, 100.0, &[]).less_equal(&rr, Zero));
    assert!(!res(2.0, 100.15, &[]).less_equal(&rr, Zero));
    assert!(!res(2.0, 100.0, &[(GPU, 1000.15)]).less_equal(&rr, Zero));
    assert!(!res(2.0, 100.0, &[(GPU, 1000.15)]).less_equal(&rr, Infinity));
}

#[test]
fn less_equal_missing_scalars() {
    let with_gpu = res(1.0, 1.0, &[(GPU, 1000.0)]);
    let without = res(2.0, 2.0, &[]);
    assert!(!with_gpu.less_equal(&without, Zero));
    assert!(with_gpu.less_equal(&without, Infinity));
    // Within ε of the implicit zero.
    assert!(res(1.0, 1.0, &[(GPU, 0.05)]).less_equal(&without, Zero));
    let left = res(1.0, 1.0, &[]);
    let right = res(2.0, 2.0, &[(GPU, 1000.0)]);
    assert!(left.less_equal(&right, Zero));
    assert!(!left.less_equal(&right, Infinity));
    assert!(res(1.0, 1.0, &[]).less_equal(&Resource::infinite(), Zero));
    assert!(!Resource::infinite().less_equal(&res(1.0, 1.0, &[]), Zero));
    assert!(Resource::infinite().less_equal(&Resource::infinite(), Infinity));
}

#[test]
fn less_equal_with_resources_name_lacks_the_infinity_presence_rule() {
    let left = res(1.0, 1.0, &[]);
    let right = res(2.0, 2.0, &[(GPU, 1000.0)]);
    assert!(!left.less_equal(&right, Infinity));
    assert_eq!(
        left.less_equal_with_resources_name(&right, Infinity),
        (true, vec![])
    );
}

#[test]
fn less_equal_with_resources_name_lists_failures_in_order() {
    // Intern "zz" before "aa" so that handle order and name order disagree.
    let zz = ResourceName::new("zz.example.com/dev");
    let aa = ResourceName::new("aa.example.com/dev");
    assert!(zz < aa);
    let left = res(
        3.0,
        3.0,
        &[(zz.as_str(), 5.0), (aa.as_str(), 5.0), (GPU, 1.0)],
    );
    let right = res(2.0, 2.0, &[(GPU, 1.0)]);
    let (ok, failed) = left.less_equal_with_resources_name(&right, Zero);
    assert!(!ok);
    assert_eq!(failed, names(&["cpu", "memory", aa.as_str(), zz.as_str()]));
    let (ok, failed) = left.less_equal_with_resources_name(&right, Infinity);
    assert!(!ok);
    assert_eq!(failed, names(&["cpu", "memory"]));
    assert_eq!(
        left.greater_partly(&right, Infinity),
        (true, names(&["cpu", "memory"]))
    );
    assert_eq!(right.greater_partly(&left, Zero), (false, vec![]));
}

#[test]
fn less_equal_with_dimension_is_strict_and_filtered() {
    let req = res(100.0, 0.0, &[(GPU, 1000.0), ("pods", 1.0)]);
    let rr = res(2.0, 1.0, &[(GPU, 1000.0), ("pods", 0.0)]);
    // cpu within ε still fails (strict); memory not requested; pods ignored.
    let l = res(2.05, 50.0, &[(GPU, 1000.0), ("pods", 1.0)]);
    assert!(!l.less_equal_with_dimension(&rr, &req));
    assert_eq!(
        l.less_equal_with_dimension_and_resources_name(Some(&rr), Some(&req)),
        (false, names(&["cpu"]))
    );
    let l = res(2.0, 50.0, &[(GPU, 1000.0), ("pods", 1.0)]);
    assert!(l.less_equal_with_dimension(&rr, &req));
    assert_eq!(
        l.less_equal_with_dimension_and_resources_name(Some(&rr), Some(&req)),
        (true, vec![])
    );
    // Missing scalars read as 0 on both sides.
    let l = res(0.0, 0.0, &[(GPU, 1.0)]);
    assert_eq!(
        l.less_equal_with_dimension_and_resources_name(Some(&res(0.0, 0.0, &[])), Some(&req)),
        (false, names(&[GPU]))
    );
    assert!(res(0.0, 0.0, &[]).less_equal_with_dimension(&res(0.0, 0.0, &[]), &req));
    // Requested with zero value: not compared.
    let zero_req = res(0.0, 0.0, &[(GPU, 0.0)]);
    assert!(l.less_equal_with_dimension(&res(0.0, 0.0, &[]), &zero_req));
}

#[test]
fn less_equal_with_dimension_absent_arguments() {
    let l = res(1000.0, 0.0, &[("pods", 1.0), (GPU, 0.05)]);
    assert_eq!(
        l.less_equal_with_dimension_and_resources_name(None, None),
        (false, names(&["cpu", "pods"]))
    );
    // req absent: LessEqualWithResourcesName(rr, Zero), tolerance included.
    let rr = res(999.95, 0.0, &[("pods", 1.0)]);
    assert_eq!(
        l.less_equal_with_dimension_and_resources_name(Some(&rr), None),
        (true, vec![])
    );
    let rr = res(900.0, 0.0, &[]);
    assert_eq!(
        l.less_equal_with_dimension_and_resources_name(Some(&rr), None),
        (false, names(&["cpu", "pods"]))
    );
}

#[test]
fn less_partly_cases() {
    let base = res(2.0, 2.0, &[(GPU, 1000.0)]);
    assert!(res(1.0, 3.0, &[(GPU, 5000.0)]).less_partly(&base, Zero));
    assert!(!res(2.0, 2.0, &[(GPU, 1000.0)]).less_partly(&base, Zero));
    assert!(!res(2.0, 2.0, &[(GPU, 1000.0)]).less_partly(&base, Infinity));
    // rr has a scalar the left lacks: true with Zero only.
    assert!(res(3.0, 3.0, &[]).less_partly(&base, Zero));
    assert!(!res(3.0, 3.0, &[]).less_partly(&base, Infinity));
    // Left has a scalar rr lacks: true with Infinity; with Zero compare against 0.
    let extra = res(3.0, 3.0, &[(GPU, 2000.0), ("example.com/x", 1.0)]);
    assert!(extra.less_partly(&base, Infinity));
    assert!(!extra.less_partly(&base, Zero));
    assert!(res(3.0, 3.0, &[(GPU, 2000.0), ("example.com/x", -1.0)]).less_partly(&base, Zero));
    // Strict: within ε is not less.
    assert!(!res(2.05, 2.05, &[(GPU, 1000.05)]).less_partly(&base, Zero));
    assert!(res(1.95, 3.0, &[(GPU, 2000.0)]).less_partly(&base, Zero));
}

#[test]
fn less_equal_partly_cases() {
    let base = res(2.0, 2.0, &[(GPU, 1000.0)]);
    assert!(res(2.05, 3.0, &[(GPU, 5000.0)]).less_equal_partly(&base, Zero));
    assert!(!res(2.15, 3.0, &[(GPU, 5000.0)]).less_equal_partly(&base, Zero));
    assert!(res(3.0, 3.0, &[(GPU, 1000.09)]).less_equal_partly(&base, Infinity));
    assert!(res(3.0, 3.0, &[]).less_equal_partly(&base, Zero));
    assert!(!res(3.0, 3.0, &[]).less_equal_partly(&base, Infinity));
    assert!(
        res(3.0, 3.0, &[(GPU, 2000.0), ("example.com/x", 1.0)]).less_equal_partly(&base, Infinity)
    );
    assert!(
        !res(3.0, 3.0, &[(GPU, 2000.0), ("example.com/x", 1.0)]).less_equal_partly(&base, Zero)
    );
}

#[test]
fn less_equal_partly_with_dimension_cases() {
    let rr = res(2.0, 2.0, &[(GPU, 1000.0)]);
    let req = res(1.0, 1.0, &[(GPU, 1.0), ("pods", 1.0)]);
    let l = res(2.05, 3.0, &[(GPU, 2000.0), ("pods", 0.0)]);
    assert_eq!(
        l.less_equal_partly_with_dimension(&rr, Some(&req)),
        (true, names(&["cpu"]))
    );
    let l = res(3.0, 3.0, &[(GPU, 2000.0)]);
    assert_eq!(
        l.less_equal_partly_with_dimension(&rr, Some(&req)),
        (false, vec![])
    );
    assert_eq!(
        l.less_equal_partly_with_dimension(&rr, None),
        (false, vec![])
    );
    let l = res(1.0, 1.0, &[(GPU, 1.0)]);
    assert_eq!(
        l.less_equal_partly_with_dimension(&rr, Some(&req)),
        (true, names(&["cpu", "memory", GPU]))
    );
}

#[test]
fn zero_filtered_drops_dimensions_zero_on_both_sides() {
    let req = res(1.0, 0.0, &[(GPU, 1000.0)]);
    let l = res(3.0, 0.0, &[(GPU, 0.0)]);
    let rr = res(2.0, 0.0, &[(GPU, 0.05)]);
    assert_eq!(
        l.less_equal_partly_with_dimension(&rr, Some(&req)),
        (true, names(&[GPU]))
    );
    assert_eq!(
        l.less_equal_partly_with_dimension_zero_filtered(&rr, Some(&req)),
        (false, vec![])
    );
    // A dimension non-zero on one side survives the filter.
    let rr = res(2.0, 0.0, &[(GPU, 1000.0)]);
    assert_eq!(
        l.less_equal_partly_with_dimension_zero_filtered(&rr, Some(&req)),
        (true, names(&[GPU]))
    );
    assert_eq!(
        l.less_equal_partly_with_dimension_zero_filtered(&rr, None),
        (false, vec![])
    );
}

#[test]
fn equal_ignores_scalars_only_on_the_right() {
    let l = res(1.0, 2.0, &[(GPU, 1000.0)]);
    assert!(l.equal(&res(1.05, 1.95, &[(GPU, 1000.05), ("pods", 9.0)]), Zero));
    assert!(!l.equal(&res(1.2, 2.0, &[(GPU, 1000.0)]), Infinity));
    assert!(!l.equal(&res(1.0, 2.0, &[]), Zero));
    assert!(res(1.0, 2.0, &[]).equal(&l, Zero));
}

#[test]
fn greater_partly_with_dimension_examples() {
    // The examples documented in Volcano's resource_info.go.
    let gpu2 = res(0.0, 0.0, &[(GPU, 2.0)]);
    let req_gpu = res(0.0, 0.0, &[(GPU, 1.0)]);
    assert_eq!(
        gpu2.greater_partly_with_dimension(Some(&Resource::empty()), &req_gpu),
        (true, names(&[GPU]))
    );
    assert_eq!(
        gpu2.greater_partly_with_relevant_dimensions(&Resource::empty(), &req_gpu),
        (false, vec![])
    );

    let cpu4 = res(4.0, 0.0, &[]);
    let req_cpu = res(2.0, 0.0, &[]);
    assert_eq!(
        cpu4.greater_partly_with_dimension(Some(&res(0.0, 0.0, &[])), &req_cpu),
        (true, names(&["cpu"]))
    );
    assert_eq!(
        cpu4.greater_partly_with_relevant_dimensions(&res(0.0, 0.0, &[]), &req_cpu),
        (false, vec![])
    );

    let rr_gpu0 = res(0.0, 0.0, &[(GPU, 0.0)]);
    assert_eq!(
        gpu2.greater_partly_with_dimension(Some(&rr_gpu0), &req_gpu),
        (true, names(&[GPU]))
    );
    assert_eq!(
        gpu2.greater_partly_with_relevant_dimensions(&rr_gpu0, &req_gpu),
        (true, names(&[GPU]))
    );

    let rr_cpu = res(0.1, 0.0, &[]);
    assert_eq!(
        cpu4.greater_partly_with_relevant_dimensions(&rr_cpu, &req_cpu),
        (true, names(&["cpu"]))
    );

    let r = res(4.0, 8192.0, &[(GPU, 2.0)]);
    let rr = res(2.0, 8192.0, &[(GPU, 1.0)]);
    let cases = [
        (res(0.0, 0.0, &[(GPU, 1.0)]), names(&[GPU])),
        (res(2.0, 0.0, &[(GPU, 1.0)]), names(&["cpu", GPU])),
        (res(0.0, 4096.0, &[(GPU, 0.0)]), vec![]),
    ];
    for (req, expected) in cases {
        let ok = !expected.is_empty();
        assert_eq!(
            r.greater_partly_with_dimension(Some(&rr), &req),
            (ok, expected.clone())
        );
        assert_eq!(
            r.greater_partly_with_relevant_dimensions(&rr, &req),
            (ok, expected)
        );
    }
    // rr absent = empty; pods never compared.
    let req_pods = res(0.0, 0.0, &[("pods", 1.0)]);
    assert_eq!(
        res(0.0, 0.0, &[("pods", 5.0)]).greater_partly_with_dimension(None, &req_pods),
        (false, vec![])
    );
    // Strict: equal or within ε is not greater... but any excess counts.
    assert_eq!(
        res(2.05, 0.0, &[]).greater_partly_with_dimension(Some(&res(2.0, 0.0, &[])), &req_cpu),
        (true, names(&["cpu"]))
    );
}

#[test]
fn diff_with_zero_default() {
    let l = res(3.0, 1.0, &[(GPU, 2000.0), ("pods", 1.0)]);
    let r = res(1.0, 4.0, &[(GPU, 500.0), ("example.com/x", 7.0)]);
    let (inc, dec) = l.diff(&r, Zero);
    assert_eq!(inc, res(2.0, 0.0, &[(GPU, 1500.0), ("pods", 1.0)]));
    assert_eq!(dec, res(0.0, 3.0, &[("example.com/x", 7.0)]));
    // Equal values land in decreased as 0.
    let (inc, dec) = l.diff(&l, Zero);
    assert_eq!(inc, Resource::empty());
    assert_eq!(dec, res(0.0, 0.0, &[(GPU, 0.0), ("pods", 0.0)]));
}

#[test]
fn diff_with_infinity_padding() {
    let l = res(1.0, 1.0, &[(GPU, 2000.0)]);
    let r = res(1.0, 1.0, &[("example.com/x", 7.0)]);
    let (inc, dec) = l.diff(&r, Infinity);
    // Right lacks gpu → padded −1 → decreased −1; left lacks x → increased −1.
    assert_eq!(inc, res(0.0, 0.0, &[("example.com/x", -1.0)]));
    assert_eq!(dec, res(0.0, 0.0, &[(GPU, -1.0)]));
    // A real −1 triggers the same branch whatever the default.
    let (inc, dec) = res(0.0, 0.0, &[(GPU, -1.0)]).diff(&res(0.0, 0.0, &[(GPU, 5.0)]), Zero);
    assert_eq!(inc, res(0.0, 0.0, &[(GPU, -1.0)]));
    assert_eq!(dec, Resource::empty());
}

#[test]
fn exceeded_part_cases() {
    let l = res(3.0, 1.0, &[(GPU, 2000.0)]);
    let r = res(1.0, 4.0, &[(GPU, 500.0)]);
    assert_eq!(
        exceeded_part(Some(&l), Some(&r)),
        res(2.0, 0.0, &[(GPU, 1500.0)])
    );
    assert_eq!(exceeded_part(Some(&l), None), l);
    assert_eq!(exceeded_part(None, Some(&r)), Resource::empty());
    assert_eq!(exceeded_part(None, None), Resource::empty());
}

#[test]
fn min_dimension_resource_cases() {
    // Volcano's doc example.
    let mut r = res(
        2000.0,
        4_047_845_376.0,
        &[("hugepages-2Mi", 0.0), ("hugepages-1Gi", 0.0)],
    );
    r.min_dimension_resource(&res(3000.0, 1000.0, &[]), Infinity);
    assert_eq!(
        r,
        res(
            2000.0,
            1000.0,
            &[("hugepages-2Mi", 0.0), ("hugepages-1Gi", 0.0)]
        )
    );

    let l = res(5.0, 5.0, &[(GPU, 2000.0)]);
    let mut keep = l.clone();
    keep.min_dimension_resource(&res(9.0, 1.0, &[]), Infinity);
    assert_eq!(keep, res(5.0, 1.0, &[(GPU, 2000.0)]));
    let mut zeroed = l.clone();
    zeroed.min_dimension_resource(&res(9.0, 1.0, &[]), Zero);
    assert_eq!(zeroed, res(5.0, 1.0, &[(GPU, 0.0)]));
    let mut min = l.clone();
    min.min_dimension_resource(
        &res(9.0, 9.0, &[(GPU, 1000.0), ("example.com/x", 1.0)]),
        Zero,
    );
    assert_eq!(min, res(5.0, 5.0, &[(GPU, 1000.0)]));
    let mut other = l.clone();
    other.min_dimension_resource(&res(9.0, 9.0, &[("example.com/x", 1.0)]), Infinity);
    assert_eq!(other, l);
    let mut other = l.clone();
    other.min_dimension_resource(&res(9.0, 9.0, &[("example.com/x", 1.0)]), Zero);
    assert_eq!(other, res(5.0, 5.0, &[(GPU, 0.0)]));
    let mut none = res(5.0, 5.0, &[]);
    none.min_dimension_resource(&res(1.0, 9.0, &[(GPU, 1.0)]), Zero);
    assert_eq!(none, res(1.0, 5.0, &[]));
}

#[test]
fn fits_future_idle_cases() {
    let idle = res(1000.0, 100.0, &[(GPU, 1000.0), ("pods", 10.0)]);
    let releasing = res(500.0, 0.0, &[(GPU, 1000.0)]);
    let pipelined = res(200.0, 50.0, &[("pods", 1.0)]);
    assert_eq!(
        res(1300.0, 50.0, &[(GPU, 2000.0), ("pods", 9.0)])
            .fits_future_idle(&idle, &releasing, &pipelined),
        Ok(())
    );
    assert_eq!(
        res(1300.05, 50.05, &[]).fits_future_idle(&idle, &releasing, &pipelined),
        Ok(())
    );
    assert_eq!(
        res(1400.0, 60.0, &[]).fits_future_idle(&idle, &releasing, &pipelined),
        Err("cpu")
    );
    assert_eq!(
        res(100.0, 60.0, &[(GPU, 5000.0)]).fits_future_idle(&idle, &releasing, &pipelined),
        Err("memory")
    );
    // Several failing scalars: the first by name.
    let zz = ResourceName::new("zz.example.com/dev");
    let aa = ResourceName::new("aa.example.com/dev");
    let req = res(
        0.0,
        0.0,
        &[(zz.as_str(), 1.0), (aa.as_str(), 1.0), (GPU, 1.0)],
    );
    assert_eq!(
        req.fits_future_idle(&idle, &releasing, &pipelined),
        Err(aa.as_str())
    );
    // Scalars only in pipelined make the future negative.
    let pip = res(0.0, 0.0, &[("example.com/x", 1.0)]);
    assert_eq!(
        res(0.0, 0.0, &[("example.com/x", 0.0)]).fits_future_idle(&idle, &releasing, &pip),
        Err("example.com/x")
    );
}

// -- helpers and output --------------------------------------------------------------------

#[test]
fn share_cases() {
    assert_eq!(share(0.0, 0.0), 0.0);
    assert_eq!(share(5.0, 0.0), 1.0);
    assert_eq!(share(1.0, 4.0), 0.25);
    assert_eq!(share(0.0, 4.0), 0.0);
}

#[test]
fn max_and_min_resource() {
    let mut l = res(1.0, 5.0, &[(GPU, 3.0), ("example.com/neg", -2.0)]);
    l.max_task_num = 3;
    let r = res(
        2.0,
        4.0,
        &[
            (GPU, 1.0),
            ("example.com/r", 0.0),
            ("example.com/rneg", -1.0),
        ],
    );
    let m = max_resource(&l, &r);
    assert_eq!(m, res(2.0, 5.0, &[(GPU, 3.0), ("example.com/r", 0.0)]));
    assert_eq!(m.max_task_num, 0);
    let n = min_resource(&l, &r);
    assert_eq!(n, res(1.0, 4.0, &[(GPU, 1.0), ("example.com/neg", -2.0)]));
}

#[test]
fn intersection_cases() {
    let r1 = res(
        1000.0,
        0.0,
        &[("pods", 1.0), (GPU, 1000.0), ("example.com/x", 0.05)],
    );
    let r2 = res(
        500.0,
        10.0,
        &[("pods", 3.0), (GPU, 1.0), ("example.com/x", 5.0)],
    );
    assert_eq!(
        intersection_names(&r1, &r2, false),
        names(&["cpu", GPU, "pods"])
    );
    assert_eq!(intersection_names(&r1, &r2, true), names(&["cpu", GPU]));
}

#[test]
fn canonical_map_units() {
    let r = res(
        1500.0,
        2048.0,
        &[
            ("pods", 3.0),
            (GPU, 2000.0),
            ("example.com/x", 0.05),
            ("example.com/neg", -5.0),
        ],
    );
    let m = r.to_canonical_map();
    let expected: BTreeMap<String, f64> = [
        ("cpu", 1500.0),
        ("memory", 2048.0),
        ("pods", 3.0),
        (GPU, 2.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(m, expected);
    assert!(Resource::empty().to_canonical_map().is_empty());
}

#[test]
fn resource_list_round_trip() {
    let r = res(
        1500.0,
        1_073_741_824.0,
        &[
            ("pods", 110.0),
            (GPU, 2000.0),
            ("hugepages-2Mi", 2_097_152_000.0),
        ],
    );
    let out = r.to_resource_list();
    let text: BTreeMap<&str, &str> = out
        .iter()
        .map(|(k, v)| (k.as_str(), v.0.as_str()))
        .collect();
    let expected: BTreeMap<&str, &str> = [
        ("cpu", "1500m"),
        ("memory", "1Gi"),
        ("pods", "110"),
        (GPU, "2"),
        // Written as a decimal milli-quantity, like ConvertRes2ResList: 2097152000m.
        ("hugepages-2Mi", "2097152"),
    ]
    .into_iter()
    .collect();
    assert_eq!(text, expected);
    let mut back = Resource::from_list(&out);
    back.max_task_num = 0;
    assert_eq!(back, r);
    let empty = Resource::empty().to_resource_list();
    assert_eq!(empty.get("cpu").map(|q| q.0.as_str()), Some("0"));
    assert_eq!(empty.get("memory").map(|q| q.0.as_str()), Some("0"));
}

#[test]
fn display_like_volcano() {
    let r = res(1000.0, 2048.0, &[("pods", 1.0), (GPU, 1000.0)]);
    assert_eq!(
        r.to_string(),
        "cpu 1000.00, memory 2048.00, nvidia.com/gpu 1000.00, pods 1.00"
    );
    assert_eq!(
        Resource::infinite().to_string(),
        "cpu maxFloat, memory maxFloat"
    );
    assert_eq!(
        res(i64::MAX as f64, 0.5, &[]).to_string(),
        "cpu maxInt, memory 0.50"
    );
}

// -- properties ----------------------------------------------------------------------------

mod props {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 4] = ["pods", GPU, "example.com/b", "hugepages-2Mi"];

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(0.05),
            Just(0.1),
            Just(1000.0),
            Just(1000.09),
            Just(-1.0),
            -1.0e6..1.0e9f64,
            (0i64..5000).prop_map(|v| v as f64),
        ]
    }

    fn resource() -> impl Strategy<Value = Resource> {
        (
            value(),
            value(),
            proptest::collection::vec(proptest::option::of(value()), NAMES.len()),
        )
            .prop_map(|(cpu, mem, scalars)| {
                let mut r = Resource::from_pairs(cpu, mem, &[]);
                for (name, v) in NAMES.iter().zip(scalars) {
                    if let Some(v) = v {
                        r.set_scalar(ResourceName::new(name), v);
                    }
                }
                r
            })
    }

    proptest! {
        /// The shortcuts on the session's hot paths give what the general forms give.
        #[test]
        fn shortcuts_match_general_forms(l in resource(), r in resource()) {
            prop_assert_eq!(l.diff_increased(&r), l.diff(&r, Zero).0);
            prop_assert_eq!(
                r.less_equal(&l, Zero),
                r.less_equal_with_resources_name(&l, Zero).0
            );
            let mut fast = l.clone();
            fast.add(&r);
            let mut slow = l.clone();
            slow.milli_cpu += r.milli_cpu;
            slow.memory += r.memory;
            for (n, v) in r.scalars.iter() {
                slow.scalars.add(n, v);
            }
            prop_assert_eq!(&fast, &slow);
            let mut fast = l.clone();
            fast.sub_without_assert(&r);
            let mut slow = l.clone();
            slow.milli_cpu -= r.milli_cpu;
            slow.memory -= r.memory;
            for (n, v) in r.scalars.iter() {
                slow.scalars.add(n, -v);
            }
            prop_assert_eq!(&fast, &slow);
            prop_assert_eq!(&l.clone(), &l);
        }

        #[test]
        fn add_then_sub_restores(a in resource(), b in resource()) {
            let mut c = a.clone();
            c.add(&b);
            c.sub_without_assert(&b);
            prop_assert!(c.equal(&a, Zero), "{c} vs {a}");
            prop_assert!(a.equal(&c, Zero), "{a} vs {c}");
        }

        #[test]
        fn fits_future_idle_matches_explicit_sum(
            req in resource(),
            idle in resource(),
            releasing in resource(),
            pipelined in resource(),
        ) {
            let mut future = idle.clone();
            future.add(&releasing);
            future.sub_without_assert(&pipelined);
            let fits = req.fits_future_idle(&idle, &releasing, &pipelined);
            prop_assert_eq!(fits.is_ok(), req.less_equal(&future, Zero));
            let (_, failed) = req.less_equal_with_resources_name(&future, Zero);
            prop_assert_eq!(fits.err().map(str::to_owned), failed.first().cloned());
        }

        #[test]
        fn less_implies_less_equal(a in resource(), b in resource()) {
            for d in [Zero, Infinity] {
                if a.less(&b, d) {
                    prop_assert!(a.less_equal(&b, d));
                }
                prop_assert_eq!(a.greater_partly(&b, d).0, !a.less_equal_with_resources_name(&b, d).0);
            }
        }

        #[test]
        fn diff_splits_the_difference(a in resource(), b in resource()) {
            let (inc, dec) = a.diff(&b, Zero);
            prop_assert!(inc.milli_cpu >= 0.0 && dec.milli_cpu >= 0.0);
            prop_assert!(inc.milli_cpu == 0.0 || dec.milli_cpu == 0.0);
            for (n, v) in inc.scalars.iter() {
                prop_assert!(!dec.scalars.contains(n));
                prop_assert!(v > 0.0 || v == -1.0);
            }
        }
    }
}
