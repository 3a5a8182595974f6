//! Volcano's MIG-mode vGPU tests (`pkg/scheduler/api/devices/nvidia/vgpu/mig_test.go`) ported
//! onto [`super`], plus our own cases for the instance ids and positions.

use std::collections::BTreeMap;

use apis::device_config::{Geometry, MigTemplate};
use k8s_openapi::api::core::v1::Pod;

use super::super::{Assigned, Gpu, Gpus, MIG, try_add};
use super::*;

/// A kind of instance: `count` of `memory` MiB.
fn kind(name: &str, memory: u32, count: u32) -> MigTemplate {
    MigTemplate {
        name: name.into(),
        memory,
        count,
    }
}

/// A geometry named `group` made of `kinds`.
fn geometry(group: &str, kinds: Vec<MigTemplate>) -> Geometry {
    Geometry {
        group: group.into(),
        instances: kinds,
    }
}

/// Usage of a card split by geometry `group`, with `used` indices of kind `name`.
fn in_use(group: usize, name: &str, memory: u32, used: Vec<u32>) -> MigUsage {
    MigUsage {
        group: Some(group),
        kinds: vec![KindUsage {
            name: name.into(),
            memory,
            used,
        }],
    }
}

/// The geometry of the memory-factor cases: two 10 GiB instances and one 20 GiB instance.
fn small_and_large() -> Vec<Geometry> {
    vec![geometry(
        "group1",
        vec![kind("1g.10gb", 10240, 2), kind("2g.20gb", 20480, 1)],
    )]
}

/// A fresh MIG card split by `geometries`.
fn mig_card(geometries: Vec<Geometry>) -> Gpu {
    let mut gpu = Gpu::new("gpu-1234", 10, 40960, "NVIDIA A100-SXM4-40GB");
    gpu.mig_geometries = geometries.into();
    gpu
}

/// A MIG node of one card with the given memory factor.
fn mig_node(factor: u32) -> Gpus {
    Gpus {
        node: "node-1".into(),
        mode: MIG.into(),
        memory_factor: factor,
        cards: BTreeMap::from([(0, mig_card(small_and_large()))]),
    }
}

// ---- TestFindMatch ----

#[test]
fn find_match_free_instance_of_the_used_kind() {
    let usage = in_use(0, "1g.10gb", 10240, vec![]);
    let geometries = vec![geometry("default", vec![kind("1g.10gb", 10240, 2)])];
    assert_eq!(
        find("gpu-1234", 10, &usage, &geometries),
        Some(("gpu-1234[default-0]".to_string(), 10240))
    );
}

#[test]
fn find_match_none_when_request_exceeds_instance() {
    let usage = in_use(0, "1g.10gb", 10, vec![]);
    let geometries = vec![geometry("default", vec![kind("1g.10gb", 10, 1)])];
    assert_eq!(find("gpu-1234", 20000, &usage, &geometries), None);
}

#[test]
fn find_match_none_for_an_empty_geometry() {
    let usage = MigUsage {
        group: Some(0),
        kinds: vec![],
    };
    let geometries = vec![Geometry::default()];
    assert_eq!(find("gpu-1234", 10, &usage, &geometries), None);
}

#[test]
fn find_match_none_when_used_kind_is_not_in_geometry() {
    // The card is in use, so only kinds already in use are candidates; none is in the group.
    let usage = in_use(0, "1g.10gb", 10, vec![]);
    let geometries = vec![geometry("default", vec![kind("2g.20gb", 20, 1)])];
    assert_eq!(find("gpu-0002", 20, &usage, &geometries), None);
}

#[test]
fn find_match_none_when_only_instance_is_taken() {
    let usage = in_use(0, "1g.10gb", 10, vec![0]);
    let geometries = vec![geometry("default", vec![kind("1g.10gb", 10, 1)])];
    assert_eq!(find("gpu-1234", 10, &usage, &geometries), None);
}

#[test]
fn find_match_fresh_card_takes_first_group_that_fits() {
    let usage = MigUsage::default();
    let geometries = vec![
        geometry("group1", vec![kind("1g.10gb", 10, 1)]),
        geometry("group2", vec![kind("2g.20gb", 24, 1)]),
    ];
    assert_eq!(
        find("gpu-1234", 20, &usage, &geometries),
        Some(("gpu-1234[group2-0]".to_string(), 24))
    );
}

#[test]
fn find_match_larger_instance_still_fits_small_request() {
    let usage = in_use(0, "1g.10gb", 10, vec![]);
    let geometries = vec![geometry("default", vec![kind("1g.10gb", 10, 1)])];
    assert_eq!(
        find("gpu-0005", 5, &usage, &geometries),
        Some(("gpu-0005[default-0]".to_string(), 10))
    );
}

// ---- TestAddAndSubMigUsed ----

/// Marks `position` of `group` on a fresh card, checks what is recorded, frees it again.
/// `expect_index` is the index within its kind the position should be recorded as, when the
/// group exists.
fn add_then_sub(
    geometries: &[Geometry],
    group: &str,
    position: u32,
    memory: u32,
    expect_index: Option<u32>,
) {
    let mut usage = MigUsage::default();
    assert_eq!(add_used(&mut usage, geometries, group, position), memory);
    match expect_index {
        Some(index) => assert!(
            usage.kinds.iter().any(|k| k.used.contains(&index)),
            "index {index} not recorded: {usage:?}"
        ),
        None => assert!(usage.kinds.is_empty(), "nothing should be recorded"),
    }
    assert_eq!(sub_used(&mut usage, geometries, group, position), memory);
    assert!(
        usage.kinds.is_empty(),
        "kinds left after freeing: {usage:?}"
    );
}

#[test]
fn add_and_sub_used_valid_position() {
    let geometries = vec![geometry("group-a", vec![kind("1g.10gb", 10240, 2)])];
    add_then_sub(&geometries, "group-a", 1, 10240, Some(1));
}

#[test]
fn add_and_sub_used_middle_of_three() {
    let geometries = vec![geometry("group-b", vec![kind("2g.20gb", 20480, 3)])];
    add_then_sub(&geometries, "group-b", 1, 20480, Some(1));
}

#[test]
fn add_and_sub_used_single_instance() {
    let geometries = vec![geometry("group-c", vec![kind("3g.30gb", 30720, 1)])];
    add_then_sub(&geometries, "group-c", 0, 30720, Some(0));
}

#[test]
fn add_and_sub_used_unknown_group_gives_zero() {
    let geometries = vec![geometry("group-d", vec![kind("1g.10gb", 10240, 1)])];
    add_then_sub(&geometries, "nonexistent-group", 0, 0, None);
}

// ---- TestMIGFactory_TryAddPod_WithMemoryFactor ----

/// Places a container of `memory` MiB and `cores` on a fresh card of [`small_and_large`];
/// checks the group named, the instance memory `add_used` reports, and the card's totals.
fn try_add_with_factor(factor: u32, memory: u32, cores: u32, instance: u32, recorded: u32) {
    let mut gpu = mig_card(small_and_large());
    let id = try_add(&mut gpu, memory, cores, true, factor).expect("an instance fits");
    let (group, position) = decode_id(&id).expect("an instance id");
    assert_eq!(group, "group1");
    // Ours already marked the instance in `try_add` (Volcano's TryAddPod leaves the usage
    // alone); marking it once more changes nothing and still reports its memory.
    assert_eq!(gpu.mig_usage.group, Some(0));
    let before = gpu.mig_usage.clone();
    let mut usage = gpu.mig_usage.clone();
    assert_eq!(
        add_used(&mut usage, &gpu.mig_geometries, group, position),
        instance
    );
    assert_eq!(usage, before);
    assert_eq!(gpu.used_num, 1);
    assert_eq!(gpu.used_mem, recorded);
    assert_eq!(gpu.used_cores, cores);
}

#[test]
fn try_add_factor_one_takes_small_instance() {
    try_add_with_factor(1, 10, 50, 10240, 10240);
}

#[test]
fn try_add_factor_two_takes_large_instance() {
    // 6144 × 2 outgrows the 10 GiB kind, so the 20 GiB one is taken and recorded halved.
    try_add_with_factor(2, 6144, 50, 20480, 10240);
}

// ---- TestMIGFactory_AddPod_WithMemoryFactor / TestMIGFactory_SubPod_WithMemoryFactor ----

/// The pod's single container holding instance 0 of group1 on the node's card.
fn first_instance(memory: u32) -> Vec<Vec<Assigned>> {
    vec![vec![Assigned {
        uuid: "gpu-1234[group1-0]".into(),
        card_type: "NVIDIA".into(),
        memory,
        cores: 50,
    }]]
}

#[test]
fn add_pod_records_instance_memory_divided_by_factor() {
    for (factor, request, recorded) in [(1, 10, 10240), (2, 6144, 5120)] {
        let mut node = mig_node(factor);
        node.commit(&Pod::default(), "pod-1", &first_instance(request), 0);
        let gpu = &node.cards[&0];
        assert_eq!(gpu.used_num, 1, "factor {factor}");
        assert_eq!(gpu.used_mem, recorded, "factor {factor}");
        assert_eq!(gpu.used_cores, 50, "factor {factor}");
        let usage = &gpu.pods["pod-1"];
        assert_eq!(usage.memory, recorded, "factor {factor}");
        assert_eq!(usage.cores, 50, "factor {factor}");
        assert_eq!(gpu.mig_usage.kinds.len(), 1, "factor {factor}");
    }
}

#[test]
fn sub_pod_gives_everything_back() {
    for (factor, request) in [(1, 10), (2, 6144)] {
        let mut node = mig_node(factor);
        node.commit(&Pod::default(), "pod-2", &first_instance(request), 0);
        node.release("pod-2");
        let gpu = &node.cards[&0];
        assert_eq!(gpu.used_num, 0, "factor {factor}");
        assert_eq!(gpu.used_mem, 0, "factor {factor}");
        assert_eq!(gpu.used_cores, 0, "factor {factor}");
        assert!(!gpu.pods.contains_key("pod-2"), "factor {factor}");
        assert!(gpu.mig_usage.kinds.is_empty(), "factor {factor}");
    }
}

// ---- our own cases ----

#[test]
fn decode_id_reads_group_and_position() {
    assert_eq!(decode_id("GPU-abc[group2-3]"), Some(("group2", 3)));
}

#[test]
fn decode_id_rejects_malformed_ids() {
    for id in ["GPU-abc", "GPU-abc[g-1-2]", "GPU-abc]x[", "GPU-abc[g-x]"] {
        assert_eq!(decode_id(id), None, "{id}");
    }
}

#[test]
fn encode_id_round_trips() {
    let id = encode_id("GPU-0fc3eda5", "group7", 12);
    assert_eq!(id, "GPU-0fc3eda5[group7-12]");
    assert_eq!(decode_id(&id), Some(("group7", 12)));
}

#[test]
fn successive_instances_take_successive_positions_and_reuse_freed_ones() {
    let geometries = vec![geometry("group1", vec![kind("1g.10gb", 10240, 2)])];
    let mut usage = MigUsage::default();
    let take = |usage: &mut MigUsage| {
        let (id, memory) = find("GPU-abc", 5000, usage, &geometries)?;
        assert_eq!(memory, 10240);
        let (group, position) = decode_id(&id).expect("an instance id");
        assert_eq!(add_used(usage, &geometries, group, position), 10240);
        Some(position)
    };
    assert_eq!(take(&mut usage), Some(0));
    assert_eq!(take(&mut usage), Some(1));
    assert_eq!(take(&mut usage), None);
    assert_eq!(sub_used(&mut usage, &geometries, "group1", 0), 10240);
    assert_eq!(take(&mut usage), Some(0));
}

#[test]
fn adding_the_same_instance_twice_records_it_once() {
    let geometries = vec![geometry("group-b", vec![kind("2g.20gb", 20480, 3)])];
    let mut usage = MigUsage::default();
    assert_eq!(add_used(&mut usage, &geometries, "group-b", 1), 20480);
    assert_eq!(add_used(&mut usage, &geometries, "group-b", 1), 20480);
    assert_eq!(usage.kinds[0].used, vec![1]);
    assert_eq!(sub_used(&mut usage, &geometries, "group-b", 1), 20480);
    assert!(usage.kinds.is_empty());
}
