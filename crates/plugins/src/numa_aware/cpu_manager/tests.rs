//! Volcano's `cpu_mng_test.go` cases, golden outputs of Volcano's code on larger topologies
//! (`golden_cases.txt`), and the quirks listed in the module docs.

use super::*;
use crate::numa_aware::bitmask::NumaMask;

fn info(numa: u32, socket: u32, core: u32) -> CpuInfo {
    CpuInfo { numa, socket, core }
}

/// The node of `cpu_mng_test.go`: 8 CPUs, two NUMA nodes = two sockets, two threads per core.
fn volcano_node() -> CpuDetails {
    (0..8).map(|c| (c, info(c / 4, c / 4, c / 2))).collect()
}

/// The topologies of `golden_cases.txt`, built as the Go generator built them.
fn topology(name: &str) -> CpuDetails {
    let mut d = CpuDetails::new();
    match name {
        "volcano" => return volcano_node(),
        // Two sockets of two NUMA nodes, 8 cores each with per-socket core ids, 2 threads.
        "two_socket_ht" => {
            for (t, s, c) in threads(2, 2, 8) {
                d.insert(t * 16 + s * 8 + c, info(s * 2 + c / 4, s, c));
            }
        }
        // One socket, two NUMA nodes, 20 cores, 2 threads (more than 12 cores to sort).
        "big_single" => {
            for (t, _, c) in threads(2, 1, 20) {
                d.insert(t * 20 + c, info(c / 10, 0, c));
            }
        }
        // Four sockets = NUMA nodes of 6 single-thread cores; core id = CPU id.
        "four_socket" => {
            for (_, s, c) in threads(1, 4, 6) {
                d.insert(s * 6 + c, info(s, s, s * 6 + c));
            }
        }
        // Like two_socket_ht with one NUMA node per socket, and core ids that are no CPU ids.
        "offset_cores" => {
            for (t, s, c) in threads(2, 2, 8) {
                d.insert(t * 16 + s * 8 + c, info(s, s, 100 + s * 8 + c));
            }
        }
        _ => panic!("unknown topology {name}"),
    }
    d
}

/// Every (thread, socket, core) index triple.
fn threads(t: u32, s: u32, c: u32) -> impl Iterator<Item = (u32, u32, u32)> {
    (0..t).flat_map(move |t| (0..s).flat_map(move |s| (0..c).map(move |c| (t, s, c))))
}

fn cpus(s: &str) -> CpuSet {
    CpuSet::parse(s).unwrap()
}

fn hint(nodes: &[u32], preferred: bool) -> TopologyHint {
    TopologyHint {
        affinity: Some(NumaMask::of(nodes)),
        preferred,
    }
}

const NO_HINT: TopologyHint = TopologyHint {
    affinity: None,
    preferred: false,
};

/// The `cpu` hints of `cpu_hints`, which must report that resource.
fn cpu_hint_list(d: &CpuDetails, avail: &str, reserved: u32, request: i64) -> Vec<TopologyHint> {
    let mut map = cpu_hints(d, &cpus(avail), reserved, Some(request * 1000));
    assert_eq!(map.len(), 1);
    map.remove(CPU).unwrap().unwrap()
}

/// Hints written as in `golden_cases.txt`.
fn hints_text(hints: &[TopologyHint]) -> String {
    let one = |h: &TopologyHint| {
        let nodes = h.affinity.unwrap().nodes();
        let mut s = nodes
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("+");
        if h.preferred {
            s.push('!');
        }
        s
    };
    hints.iter().map(one).collect::<Vec<_>>().join(" ")
}

#[test]
fn get_topology_hints_go_test() {
    let d = volcano_node();
    let cases: Vec<(i64, &str, Vec<TopologyHint>)> = vec![
        (
            4,
            "0-7",
            vec![hint(&[0], true), hint(&[1], true), hint(&[0, 1], false)],
        ),
        (4, "1-7", vec![hint(&[1], true), hint(&[0, 1], false)]),
        (5, "0-7", vec![hint(&[0, 1], true)]),
        (8, "0-7", vec![hint(&[0, 1], true)]),
        (9, "0-7", vec![]),
        (4, "2-5", vec![hint(&[0, 1], false)]),
    ];
    for (i, (request, avail, want)) in cases.into_iter().enumerate() {
        assert_eq!(cpu_hint_list(&d, avail, 0, request), want, "test-{}", i + 1);
    }
}

#[test]
fn allocate_go_test() {
    let d = volcano_node();
    let cases = [
        (4, "0-7", hint(&[0], true), "0-3"),
        (4, "1-7", hint(&[1], true), "4-7"),
        (5, "0-7", hint(&[0, 1], true), "0-4"),
        (5, "1-7", hint(&[0, 1], true), "1,4-7"),
        (8, "1-7", hint(&[0, 1], true), ""),
    ];
    for (i, (request, avail, best, want)) in cases.into_iter().enumerate() {
        let got = assign_cpus(&d, &cpus(avail), 0, Some(request * 1000), &best);
        assert_eq!(got, cpus(want), "test-{}", i + 1);
    }
}

#[test]
fn matches_volcano_on_golden_cases() {
    let mut checked = 0;
    for line in include_str!("golden_cases.txt").lines() {
        if line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('|').collect();
        let (d, avail) = (topology(f[0]), cpus(f[1]));
        let (reserved, request): (u32, i64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
        let milli = Some(request * 1000);
        let hints = cpu_hint_list(&d, f[1], reserved, request);
        assert_eq!(hints_text(&hints), f[4], "hints: {line}");
        let assign = |h: &TopologyHint| assign_cpus(&d, &avail, reserved, milli, h).to_string();
        assert_eq!(assign(&NO_HINT), f[5], "no hint: {line}");
        match hints.iter().find(|h| h.preferred) {
            Some(h) => assert_eq!(assign(h), f[6], "preferred hint: {line}"),
            None => assert_eq!(f[6], "-", "{line}"),
        }
        let all: Vec<u32> = numa_ids(&d).into_iter().collect();
        assert_eq!(assign(&hint(&all, true)), f[7], "all NUMA nodes: {line}");
        checked += 1;
    }
    assert_eq!(checked, 210);
}

#[test]
fn whole_cpus_only() {
    assert_eq!(guaranteed_cpus(None), 0);
    assert_eq!(guaranteed_cpus(Some(0)), 0);
    assert_eq!(guaranteed_cpus(Some(1500)), 0);
    assert_eq!(guaranteed_cpus(Some(999)), 0);
    assert_eq!(guaranteed_cpus(Some(-2000)), 0);
    assert_eq!(guaranteed_cpus(Some(2000)), 2);
    let d = volcano_node();
    let all = cpus("0-7");
    for milli in [None, Some(0), Some(500), Some(2500)] {
        assert!(cpu_hints(&d, &all, 0, milli).is_empty(), "{milli:?}");
        assert!(assign_cpus(&d, &all, 0, milli, &hint(&[0], true)).is_empty());
        assert!(assign_cpus(&d, &all, 0, milli, &NO_HINT).is_empty());
    }
}

#[test]
fn reserved_cpus_are_picked_by_topology_and_never_given() {
    let d = volcano_node();
    assert_eq!(reserved_set(&d, 0), CpuSet::new());
    assert_eq!(reserved_set(&d, 1), cpus("0"));
    assert_eq!(reserved_set(&d, 2), cpus("0-1"));
    assert_eq!(reserved_set(&d, 3), cpus("0-2"));
    assert_eq!(reserved_set(&d, 4), cpus("0-3"));
    // More than the node has: Volcano ignores the failure and reserves nothing.
    assert_eq!(reserved_set(&d, 9), CpuSet::new());
    // Reserving 3 CPUs leaves NUMA 0 with one: only NUMA 1 fits 2 CPUs on its own.
    assert_eq!(
        cpu_hint_list(&d, "0-7", 3, 2),
        vec![hint(&[1], true), hint(&[0, 1], false)]
    );
    let got = assign_cpus(&d, &cpus("0-7"), 3, Some(2000), &hint(&[0], true));
    assert_eq!(got, cpus("3-4"));
}

#[test]
fn preferred_width_counts_all_cpus_not_free_ones() {
    // NUMA 0 could hold 4 CPUs but has 1 free: the single-NUMA width stays preferred, so the
    // two-NUMA hint that fits is not preferred.
    let d = volcano_node();
    assert_eq!(cpu_hint_list(&d, "3-5", 0, 3), vec![hint(&[0, 1], false)]);
}

#[test]
fn unknown_available_cpu_counts_as_numa_zero() {
    // CPU 42 is not in the details: it counts for NUMA 0 when hinting, but is never assigned.
    let d = volcano_node();
    assert_eq!(
        cpu_hint_list(&d, "2-3,42", 0, 3),
        vec![hint(&[0], true), hint(&[0, 1], false)]
    );
    assert_eq!(
        assign_cpus(&d, &cpus("2-3,42"), 0, Some(3000), &hint(&[0], true)),
        CpuSet::new()
    );
}

#[test]
fn per_socket_core_ids_can_over_assign() {
    // Core ids repeat on each socket, and a core is taken by id: asking 2 CPUs without a hint
    // takes "core 0" of both sockets, i.e. 4 CPUs, as Volcano does.
    let d = topology("two_socket_ht");
    assert_eq!(
        assign_cpus(&d, &cpus("0-31"), 0, Some(2000), &NO_HINT),
        cpus("0,8,16,24")
    );
    // With a single-NUMA hint the aligned set holds one copy of each core id.
    assert_eq!(
        assign_cpus(&d, &cpus("0-31"), 0, Some(2000), &hint(&[0], true)),
        cpus("0,16")
    );
}

#[test]
fn numa_ids_of_details() {
    let ids: Vec<u32> = numa_ids(&topology("two_socket_ht")).into_iter().collect();
    assert_eq!(ids, vec![0, 1, 2, 3]);
    assert!(numa_ids(&CpuDetails::new()).is_empty());
    // A node without CPU details gives no hint and assigns nothing.
    let none = CpuDetails::new();
    assert_eq!(cpu_hint_list(&none, "0-3", 0, 1), vec![]);
    assert!(assign_cpus(&none, &cpus("0-3"), 0, Some(1000), &NO_HINT).is_empty());
}
