//! Unit tests of the plugin shell: which nodes take part, the predicate's choice of CPUs, the
//! batch scores, the event handlers and what close hands to the state.

use serde_json::{Value, json};

use super::*;
use crate::testutil::{StateLookup, TestCluster, allocate, pod};
use engine::framework::Session;

/// A node of 8 CPUs over two NUMA nodes (0-3, 4-7) with `free` CPUs and the given policies.
fn report(name: &str, topology: &str, free: &str) -> Value {
    let detail: serde_json::Map<String, Value> = (0..8)
        .map(|i| {
            (
                i.to_string(),
                json!({"numa": i / 4, "socket": i / 4, "core": i}),
            )
        })
        .collect();
    json!({
        "metadata": {"name": name},
        "spec": {
            "policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": topology},
            "numares": {"cpu": {"allocatable": free, "capacity": 8}},
            "cpuDetail": detail
        }
    })
}

/// A Guaranteed pod asking `cpus` whole CPUs with the given NUMA policy.
fn pinned(name: &str, cpus: &str, policy: &str) -> Value {
    let mut p = pod(
        "ns",
        name,
        None,
        "Pending",
        None,
        json!({"cpu": cpus, "memory": "1Gi"}),
    );
    p["spec"]["containers"][0]["resources"]["limits"] = json!({"cpu": cpus, "memory": "1Gi"});
    p["metadata"]["annotations"][POLICY_ANNOTATION] = json!(policy);
    p
}

fn cluster(reports: &[Value], pods: &[Value]) -> TestCluster {
    let mut c = TestCluster::new();
    for r in reports {
        let name = r["metadata"]["name"].as_str().expect("name");
        c.node(name, json!({"cpu": "8", "memory": "16Gi", "pods": "110"}));
        c.numatopology(r.clone());
    }
    for p in pods {
        c.pod(p.clone());
    }
    c
}

fn session(c: &TestCluster) -> Session {
    c.session(&[&[NAME]])
}

fn fits(ssn: &Session, pod: &str, node: &str) -> Result<(), FitError> {
    let task = ssn.state.task_by_key(pod);
    ssn.predicate(task, ssn.state.node_by_key(node))
}

#[test]
fn single_numa_node_needs_room_in_one_numa_node() {
    let c = cluster(
        &[
            report("a", "single-numa-node", "0-2,4-6"),
            report("b", "single-numa-node", "0-1,4-7"),
        ],
        &[pinned("p", "4", "single-numa-node")],
    );
    let ssn = session(&c);
    let err = fits(&ssn, "ns/p", "a").expect_err("3 + 3 CPUs cannot hold 4 in one NUMA node");
    assert!(
        err.reasons()
            .any(|r| r.contains("cannot be assigned by numa"))
    );
    assert!(fits(&ssn, "ns/p", "b").is_ok());
}

#[test]
fn a_policy_mismatch_or_a_missing_report_is_refused() {
    let mut c = cluster(
        &[report("a", "best-effort", "0-7")],
        &[pinned("p", "2", "restricted")],
    );
    c.node("bare", json!({"cpu": "8", "memory": "16Gi", "pods": "110"}));
    let ssn = session(&c);
    let err = fits(&ssn, "ns/p", "a").expect_err("policy differs");
    assert!(
        err.reasons()
            .any(|r| r == "task topology policy[restricted] is different with node[best-effort]")
    );
    let err = fits(&ssn, "ns/p", "bare").expect_err("no report");
    assert!(err.reasons().any(|r| r == "numa info is empty"));
}

#[test]
fn pods_without_a_policy_or_not_guaranteed_pass_untouched() {
    let mut burstable = pod("ns", "b", None, "Pending", None, json!({"cpu": "2"}));
    burstable["metadata"]["annotations"][POLICY_ANNOTATION] = json!("single-numa-node");
    let c = cluster(
        &[report("a", "none", "0-7")],
        &[burstable, pinned("g", "2", "none")],
    );
    let ssn = session(&c);
    assert!(fits(&ssn, "ns/b", "a").is_ok());
    assert!(fits(&ssn, "ns/g", "a").is_ok());
}

#[test]
fn fewer_numa_nodes_score_higher() {
    // a: 2 CPUs free in each NUMA node, so 4 CPUs span both; b: 4 free in NUMA node 1.
    let c = cluster(
        &[
            report("a", "best-effort", "0-1,4-5"),
            report("b", "best-effort", "0,4-7"),
        ],
        &[pinned("p", "4", "best-effort")],
    );
    let ssn = session(&c);
    assert!(fits(&ssn, "ns/p", "a").is_ok());
    assert!(fits(&ssn, "ns/p", "b").is_ok());
    let task = ssn.state.task_by_key("ns/p");
    let nodes = [ssn.state.node_by_key("a"), ssn.state.node_by_key("b")];
    let scores = ssn.batch_node_order(task, &nodes).expect("scores");
    assert_eq!(scores, vec![0.0, 50.0]);
}

#[test]
fn a_placed_pod_holds_its_cpus_for_the_session_and_is_handed_over_when_bound() {
    let c = cluster(
        &[report("a", "single-numa-node", "0-7")],
        &[
            pinned("p1", "4", "single-numa-node"),
            pinned("p2", "4", "single-numa-node"),
            pinned("p3", "4", "single-numa-node"),
        ],
    );
    let mut ssn = session(&c);
    for p in ["ns/p1", "ns/p2"] {
        assert!(fits(&ssn, p, "a").is_ok());
        allocate(&mut ssn, p, "a");
    }
    let err = fits(&ssn, "ns/p3", "a").expect_err("both NUMA nodes are taken");
    assert!(err.reasons().any(|r| r == "cpu allocatable map is empty"));
}

#[test]
fn close_hands_over_the_cpus_of_bound_pods_only() {
    // p1 fits (4 CPUs in NUMA node 1); p2 asks 8, which no NUMA node holds: it stays pending.
    let c = cluster(
        &[report("a", "single-numa-node", "0-1,4-7")],
        &[
            pinned("p1", "4", "single-numa-node"),
            pinned("p2", "8", "single-numa-node"),
        ],
    );
    let mut ssn = c.session(&[&["predicates", NAME]]);
    let allocate = engine::actions::action_by_name("allocate").expect("allocate");
    allocate(&mut ssn);
    let decisions = ssn.close();
    assert_eq!(decisions.binds.len(), 1);
    assert_eq!(decisions.binds[0].pod, "ns/p1");
    assert_eq!(decisions.numa_assignments.len(), 1);
    let a = &decisions.numa_assignments[0];
    assert_eq!((a.pod.as_str(), a.node.as_str()), ("ns/p1", "a"));
    assert_eq!(a.resources.get("cpu").map(String::as_str), Some("4-7"));
}
