//! Unit tests: Volcano's `Test_readTopologyFromPgAnnotations` cases and the vectors T1–T10 of
//! spec/plugins-more.md §16.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};

use engine::conf::{ArgValue, Arguments};
use engine::framework::{Plugin, Session};
use engine::model::JobId;
use serde_json::{Value, json};

use super::manager::{INTER_AFFINITY, INTER_ANTI_AFFINITY, JobManager, Topology};
use super::*;
use crate::testutil::{StateLookup, TestCluster, allocate, pipeline, pod, pod_group};

// ---- annotation parsing (topology_test.go) ----------------------------------------------------

fn annotations(affinity: &str, anti: &str, order: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            keys::TASK_TOPOLOGY_AFFINITY.to_string(),
            affinity.to_string(),
        ),
        (
            keys::TASK_TOPOLOGY_ANTI_AFFINITY.to_string(),
            anti.to_string(),
        ),
        (
            keys::TASK_TOPOLOGY_TASK_ORDER.to_string(),
            order.to_string(),
        ),
    ])
}

fn groups(g: &[&[&str]]) -> Vec<Vec<String>> {
    g.iter()
        .map(|names| names.iter().map(|n| n.to_string()).collect())
        .collect()
}

fn list(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn roles<'a>(names: &[&'a str]) -> HashSet<&'a str> {
    names.iter().copied().collect()
}

const JOB1_ROLES: &[&str] = &["ps", "ps", "worker", "worker", "chief", "evaluator"];

#[test]
fn correct_annotation() {
    let got = read_topology(
        &annotations(
            "ps,worker;ps,chief",
            "ps;worker,chief",
            "ps,worker,chief,evaluator",
        ),
        &roles(JOB1_ROLES),
        "default/job1",
    );
    let want = Topology {
        affinity: groups(&[&["ps", "worker"], &["ps", "chief"]]),
        anti_affinity: groups(&[&["ps"], &["worker", "chief"]]),
        task_order: list(&["ps", "worker", "chief", "evaluator"]),
    };
    assert_eq!(got, Ok(Some(want)));
}

#[test]
fn correct_annotation_with_dashed_task_names() {
    let got = read_topology(
        &annotations(
            "ps-some,worker-another-some;ps-some,chief-kk",
            "ps-some;worker-another-some,chief-kk",
            "ps-some,worker-another-some,chief-kk,evaluator-tt",
        ),
        &roles(&["ps-some", "worker-another-some", "chief-kk", "evaluator-tt"]),
        "default/job1",
    );
    let want = Topology {
        affinity: groups(&[
            &["ps-some", "worker-another-some"],
            &["ps-some", "chief-kk"],
        ]),
        anti_affinity: groups(&[&["ps-some"], &["worker-another-some", "chief-kk"]]),
        task_order: list(&["ps-some", "worker-another-some", "chief-kk", "evaluator-tt"]),
    };
    assert_eq!(got, Ok(Some(want)));
}

#[test]
fn no_annotation_means_no_topology() {
    assert_eq!(
        read_topology(&BTreeMap::new(), &roles(&[]), "default/job1"),
        Ok(None)
    );
}

#[test]
fn invalid_annotation_names_the_first_unknown_task() {
    let got = read_topology(
        &annotations(
            "$%GF$^trtqwrg^",
            "ps;worker,chief;#@FGEW^vfa897bgs;;",
            "ps,worker,chief,evaluator,,,",
        ),
        &roles(JOB1_ROLES),
        "default/job1",
    );
    assert_eq!(
        got,
        Err("task $%GF$^trtqwrg^ does not exist in job <default/job1>".to_string())
    );
}

#[test]
fn task_order_naming_an_unknown_task_is_invalid() {
    let got = read_topology(
        &annotations("ps,worker", "ps", "ps,worker,chief"),
        &roles(&["ps", "ps", "worker", "worker"]),
        "default/job1",
    );
    assert_eq!(
        got,
        Err("task chief does not exist in job <default/job1>".to_string())
    );
}

#[test]
fn duplicate_task_in_a_group_is_invalid() {
    let got = read_topology(
        &annotations("ps,worker", "ps,ps", "ps,worker"),
        &roles(&["ps", "ps", "worker", "worker"]),
        "default/job1",
    );
    assert_eq!(
        got,
        Err("task ps is duplicate in job <default/job1>".to_string())
    );
}

#[test]
fn redundant_punctuation_keeps_empty_names() {
    let got = read_topology(
        &annotations(
            "ps,worker;ps,,chief,;",
            "ps;worker,chief;;;",
            "ps,worker,chief,evaluator,,,",
        ),
        &roles(JOB1_ROLES),
        "default/job1",
    );
    let want = Topology {
        affinity: groups(&[&["ps", "worker"], &["ps", "", "chief", ""], &[""]]),
        anti_affinity: groups(&[&["ps"], &["worker", "chief"], &[""], &[""], &[""]]),
        task_order: list(&["ps", "worker", "chief", "evaluator", "", "", ""]),
    };
    assert_eq!(got, Ok(Some(want)));
}

#[test]
fn one_annotation_alone_is_enough() {
    let only_order = BTreeMap::from([(
        keys::TASK_TOPOLOGY_TASK_ORDER.to_string(),
        "worker".to_string(),
    )]);
    let got = read_topology(&only_order, &roles(&["worker"]), "ns/job");
    assert_eq!(
        got,
        Ok(Some(Topology {
            task_order: list(&["worker"]),
            ..Topology::default()
        }))
    );
}

#[test]
fn priorities_take_the_strongest_relation() {
    let m = JobManager::new(&Topology {
        affinity: groups(&[&["ps", "worker"], &["ps", "chief"]]),
        anti_affinity: groups(&[&["ps"], &["worker", "chief"]]),
        task_order: list(&["ps", "worker", "chief", "evaluator"]),
    });
    assert_eq!(m.priority.get("ps"), Some(&4));
    assert_eq!(m.priority.get("worker"), Some(&3));
    assert_eq!(m.priority.get("chief"), Some(&3));
    assert_eq!(m.priority.get("evaluator"), None);
    assert_eq!(m.order.get("ps"), Some(&4));
    assert_eq!(m.order.get("evaluator"), Some(&1));
}

// ---- sessions (T1–T10) -----------------------------------------------------------------------

/// Nodes n1 (8 cpu), n2 (2 cpu), n3 (0.5 cpu) and n4 (4 cpu), all with 8Gi and 110 pods.
fn cluster() -> TestCluster {
    let mut c = TestCluster::new();
    for (name, cpu) in [("n1", "8"), ("n2", "2"), ("n3", "500m"), ("n4", "4")] {
        c.node(name, json!({"cpu": cpu, "memory": "8Gi", "pods": "110"}));
    }
    c
}

/// PodGroup `ns/<group>` with the given annotations (pairs of key, value).
fn group(c: &mut TestCluster, group: &str, annotations: &[(&str, &str)]) {
    let mut pg = pod_group("ns", group, 1);
    let map: serde_json::Map<String, Value> = annotations
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    pg["metadata"]["annotations"] = Value::Object(map);
    c.pod_group(pg);
}

/// A pod `ns/<name>` of `group` with task annotation `role`, asking 1 cpu; `node` makes it
/// Running there.
fn task(c: &mut TestCluster, group: &str, name: &str, role: &str, node: Option<&str>) {
    let phase = if node.is_some() { "Running" } else { "Pending" };
    let mut p = pod("ns", name, Some(group), phase, node, json!({"cpu": "1"}));
    p["metadata"]["annotations"][keys::TASK_SPEC] = json!(role);
    c.pod(p);
}

/// The spec's job: ps-0 (ps), worker-0 and worker-1 (worker), all pending, in PodGroup `job`.
fn ps_worker_job(annotations: &[(&str, &str)]) -> TestCluster {
    let mut c = cluster();
    group(&mut c, "job", annotations);
    task(&mut c, "job", "ps-0", "ps", None);
    task(&mut c, "job", "worker-0", "worker", None);
    task(&mut c, "job", "worker-1", "worker", None);
    c
}

const AFFINITY: &str = keys::TASK_TOPOLOGY_AFFINITY;
const ANTI: &str = keys::TASK_TOPOLOGY_ANTI_AFFINITY;
const ORDER: &str = keys::TASK_TOPOLOGY_TASK_ORDER;

/// A session without plugins plus a task-topology instance opened over it, so the tests can
/// look inside the plugin.
struct Fixture {
    ssn: Session,
    plugin: TaskTopology,
}

impl Fixture {
    fn open(c: &TestCluster) -> Self {
        Self::open_with(c, &Arguments::new())
    }

    fn open_with(c: &TestCluster, args: &Arguments) -> Self {
        let mut ssn = c.session(&[]);
        let mut plugin = TaskTopology::from_arguments(args);
        plugin.on_session_open(&mut ssn.state);
        Fixture { ssn, plugin }
    }

    fn job(&self, key: &str) -> JobId {
        self.ssn.state.job_by_key(key)
    }

    fn manager(&self, key: &str) -> &JobManager {
        &self.plugin.managers[&self.job(key)]
    }

    fn bucket_index(&self, pod: &str) -> Option<usize> {
        let t = self.ssn.state.task_by_key(pod);
        let job = self.ssn.state.task(t).job?;
        self.plugin.managers.get(&job)?.bucket(t).map(|b| b.index)
    }

    fn score(&self, pod: &str, node: &str) -> f64 {
        let s = &self.ssn.state;
        self.plugin
            .node_order(s, s.task_by_key(pod), s.node_by_key(node))
            .expect("node order never fails")
    }

    fn order(&self, l: &str, r: &str) -> Ordering {
        let s = &self.ssn.state;
        self.plugin
            .task_order(s, s.task_by_key(l), s.task_by_key(r))
    }

    /// Allocates through the session, then tells the plugin, as the statement would.
    fn allocate(&mut self, pod: &str, node: &str) {
        allocate(&mut self.ssn, pod, node);
        let t = self.ssn.state.task_by_key(pod);
        self.plugin
            .on_allocate(&self.ssn.state, t)
            .expect("allocate handler never fails");
    }
}

fn assert_close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
}

#[test]
fn t1_affinity_builds_one_bucket() {
    let f = Fixture::open(&ps_worker_job(&[(AFFINITY, "ps,worker")]));
    let m = f.manager("ns/job");
    assert_eq!(m.buckets.len(), 1);
    assert_eq!(m.bucket_max_size, 3);
    assert_eq!(m.priority.get("ps"), Some(&INTER_AFFINITY));
    assert_eq!(m.priority.get("worker"), Some(&INTER_AFFINITY));
    for p in ["ns/ps-0", "ns/worker-0", "ns/worker-1"] {
        assert_eq!(f.bucket_index(p), Some(0), "{p}");
    }
    // 3000 millicores + 0 MiB + 3 pods.
    assert_close(m.buckets[0].req_score, 3003.0);
}

#[test]
fn t1_node_scores() {
    let f = Fixture::open(&ps_worker_job(&[(AFFINITY, "ps,worker")]));
    // a: the whole bucket fits.
    assert_close(f.score("ns/worker-0", "n1"), 100.0);
    // b: one other member has to be left out.
    assert_close(f.score("ns/worker-0", "n2"), 200.0 / 3.0);
    // c: the task itself does not fit.
    assert_close(f.score("ns/worker-0", "n3"), 0.0);
}

#[test]
fn t2_placed_members_attract() {
    let mut f = Fixture::open(&ps_worker_job(&[(AFFINITY, "ps,worker")]));
    f.allocate("ns/ps-0", "n1");
    let b = &f.manager("ns/job").buckets[0];
    assert_eq!((b.pending.len(), b.bound), (2, 1));
    assert_eq!(b.on_node.get("n1"), Some(&1));
    assert_close(b.req_score, 2002.0);
    assert_eq!(
        f.manager("ns/job").node_tasks["n1"],
        BTreeMap::from([("ps".to_string(), 1)])
    );
    // n1: 1 placed + 2 pending; n4: 2 pending.
    assert_close(f.score("ns/worker-0", "n1"), 100.0);
    assert_close(f.score("ns/worker-0", "n4"), 200.0 / 3.0);
}

#[test]
fn t3_self_anti_affinity_spreads() {
    let mut c = cluster();
    group(&mut c, "job", &[(ANTI, "worker")]);
    task(&mut c, "job", "worker-0", "worker", None);
    task(&mut c, "job", "worker-1", "worker", None);
    let mut f = Fixture::open(&c);
    let m = f.manager("ns/job");
    assert_eq!((m.buckets.len(), m.bucket_max_size), (2, 1));
    assert_eq!(f.bucket_index("ns/worker-0"), Some(0));
    assert_eq!(f.bucket_index("ns/worker-1"), Some(1));
    assert_eq!(f.order("ns/worker-0", "ns/worker-1"), Ordering::Less);

    f.allocate("ns/worker-0", "n1");
    // 0 placed in its bucket − 1 repelled worker + 1 pending.
    assert_close(f.score("ns/worker-1", "n1"), 0.0);
    assert_close(f.score("ns/worker-1", "n2"), 100.0);
    // The emptied bucket now sorts after the one still pending.
    assert_eq!(f.order("ns/worker-0", "ns/worker-1"), Ordering::Greater);
}

#[test]
fn t4_task_order_alone_puts_everything_out_of_bucket() {
    let f = Fixture::open(&ps_worker_job(&[(ORDER, "ps,worker")]));
    let m = f.manager("ns/job");
    assert!(m.buckets.is_empty());
    assert_eq!(m.bucket_max_size, 0);
    assert_eq!(f.bucket_index("ns/ps-0"), None);
    assert_eq!(f.order("ns/ps-0", "ns/worker-0"), Ordering::Equal);
    assert_close(f.score("ns/ps-0", "n1"), 0.0);
}

#[test]
fn t5_unknown_task_skips_the_job() {
    let f = Fixture::open(&ps_worker_job(&[(AFFINITY, "ps,chief")]));
    assert!(f.plugin.managers.is_empty());
    assert_eq!(f.order("ns/ps-0", "ns/worker-0"), Ordering::Equal);
    assert_close(f.score("ns/worker-0", "n1"), 0.0);
}

#[test]
fn t6_inter_anti_affinity_opens_a_new_bucket() {
    let f = Fixture::open(&ps_worker_job(&[(ANTI, "ps,worker")]));
    let m = f.manager("ns/job");
    assert_eq!(m.priority.get("ps"), Some(&INTER_ANTI_AFFINITY));
    assert_eq!(m.priority.get("worker"), Some(&INTER_ANTI_AFFINITY));
    assert_eq!(f.bucket_index("ns/ps-0"), Some(0));
    assert_eq!(f.bucket_index("ns/worker-0"), Some(1));
    // worker-1 is neutral to the other worker (0) and repelled by ps (−1).
    assert_eq!(f.bucket_index("ns/worker-1"), Some(1));
    assert_eq!(m.bucket_max_size, 2);
}

#[test]
fn t7_user_order_leads_construction_and_bucket_order() {
    let f = Fixture::open(&ps_worker_job(&[
        (AFFINITY, "ps,worker"),
        (ORDER, "worker,ps"),
    ]));
    let m = f.manager("ns/job");
    let s = &f.ssn.state;
    let mut members = candidates(s, f.job("ns/job"));
    members.sort_by(|a, b| m.construction_order(a, b));
    let names: Vec<&str> = members.iter().map(|c| c.pod_name).collect();
    assert_eq!(names, ["worker-0", "worker-1", "ps-0"]);
    assert_eq!(m.buckets.len(), 1);
    assert_eq!(f.order("ns/worker-0", "ns/ps-0"), Ordering::Less);
    assert_eq!(f.order("ns/ps-0", "ns/worker-1"), Ordering::Greater);
    assert_eq!(f.order("ns/worker-0", "ns/worker-1"), Ordering::Equal);
}

/// Job `ns/job` (affinity ps,worker) and job `ns/other` with pod b-ps-0 and the given
/// annotations.
fn two_jobs(other: &[(&str, &str)]) -> Fixture {
    let mut c = ps_worker_job(&[(AFFINITY, "ps,worker")]);
    group(&mut c, "other", other);
    task(&mut c, "other", "b-ps-0", "ps", None);
    task(&mut c, "other", "b-worker-0", "worker", None);
    Fixture::open(&c)
}

#[test]
fn t8_bucket_first_across_jobs_only_when_both_have_managers() {
    let f = two_jobs(&[(ORDER, "ps")]);
    assert_eq!(f.bucket_index("ns/b-ps-0"), None);
    assert_eq!(f.order("ns/worker-0", "ns/b-ps-0"), Ordering::Less);
    assert_eq!(f.order("ns/b-ps-0", "ns/worker-0"), Ordering::Greater);

    let f = two_jobs(&[]);
    assert!(!f.plugin.managers.contains_key(&f.job("ns/other")));
    assert_eq!(f.order("ns/worker-0", "ns/b-ps-0"), Ordering::Equal);
}

#[test]
fn t9_buckets_of_different_jobs_are_not_compared() {
    let f = two_jobs(&[(AFFINITY, "ps,worker")]);
    assert_eq!(f.bucket_index("ns/b-ps-0"), Some(0));
    assert_eq!(f.order("ns/worker-0", "ns/b-ps-0"), Ordering::Equal);
}

#[test]
fn t10_weight_scales_the_score() {
    let c = ps_worker_job(&[(AFFINITY, "ps,worker")]);
    let f = Fixture::open_with(
        &c,
        &Arguments::from_pairs(&[(WEIGHT_KEY, ArgValue::Int(10))]),
    );
    assert_close(f.score("ns/worker-0", "n1"), 1000.0);
    let f = Fixture::open_with(
        &c,
        &Arguments::from_pairs(&[(WEIGHT_KEY, ArgValue::Int(-1))]),
    );
    assert_close(f.score("ns/worker-0", "n1"), -100.0);
}

#[test]
fn weight_of_the_wrong_type_keeps_the_default() {
    let args = Arguments::from_pairs(&[(WEIGHT_KEY, ArgValue::Float(5.0))]);
    assert_eq!(TaskTopology::from_arguments(&args).weight, 1);
    let args = Arguments::from_pairs(&[(WEIGHT_KEY, ArgValue::Str("5".into()))]);
    assert_eq!(TaskTopology::from_arguments(&args).weight, 1);
    assert_eq!(TaskTopology::from_arguments(&Arguments::new()).weight, 1);
}

#[test]
fn jobs_without_pending_tasks_get_no_manager() {
    let mut c = cluster();
    group(&mut c, "job", &[(AFFINITY, "ps,worker")]);
    task(&mut c, "job", "ps-0", "ps", Some("n1"));
    task(&mut c, "job", "worker-0", "worker", Some("n1"));
    let f = Fixture::open(&c);
    assert!(f.plugin.managers.is_empty());
}

#[test]
fn placed_tasks_seed_buckets_by_node() {
    let mut c = cluster();
    group(&mut c, "job", &[(AFFINITY, "ps,worker")]);
    task(&mut c, "job", "ps-0", "ps", Some("n4"));
    task(&mut c, "job", "ps-1", "ps", Some("n2"));
    task(&mut c, "job", "worker-0", "worker", None);
    let f = Fixture::open(&c);
    let m = f.manager("ns/job");
    // Placed tasks first, by node name: ps-1 (n2) opens b0, ps-0 (n4) opens b1; the worker
    // likes both equally and both weigh nothing pending, so it joins the first.
    assert_eq!(f.bucket_index("ns/ps-1"), Some(0));
    assert_eq!(f.bucket_index("ns/ps-0"), Some(1));
    assert_eq!(f.bucket_index("ns/worker-0"), Some(0));
    assert_eq!(m.buckets[0].bound, 1);
    assert_eq!(m.bucket_max_size, 2);
    // On n2: 1 placed member + 1 pending = 2 of the largest bucket's 2.
    assert_close(f.score("ns/worker-0", "n2"), 100.0);
    assert_close(f.score("ns/worker-0", "n1"), 50.0);
}

#[test]
fn lighter_bucket_wins_a_tie() {
    let mut c = cluster();
    group(&mut c, "job", &[(AFFINITY, "ps,worker"), (ANTI, "ps")]);
    for (name, role) in [
        ("ps-0", "ps"),
        ("ps-1", "ps"),
        ("worker-0", "worker"),
        ("worker-1", "worker"),
    ] {
        task(&mut c, "job", name, role, None);
    }
    let f = Fixture::open(&c);
    // ps-1 is repelled by ps-0; worker-0 likes both ps buckets and takes the first; worker-1
    // then takes the lighter second one.
    assert_eq!(f.bucket_index("ns/ps-0"), Some(0));
    assert_eq!(f.bucket_index("ns/ps-1"), Some(1));
    assert_eq!(f.bucket_index("ns/worker-0"), Some(0));
    assert_eq!(f.bucket_index("ns/worker-1"), Some(1));
}

#[test]
fn pipelining_counts_like_allocation() {
    let mut f = Fixture::open(&ps_worker_job(&[(AFFINITY, "ps,worker")]));
    pipeline(&mut f.ssn, "ns/ps-0", "n1");
    let t = f.ssn.state.task_by_key("ns/ps-0");
    f.plugin.on_allocate(&f.ssn.state, t).expect("no error");
    assert_eq!(f.manager("ns/job").buckets[0].on_node.get("n1"), Some(&1));
}

#[test]
fn role_label_passes_validation_but_only_the_annotation_names_a_task() {
    let mut c = cluster();
    group(&mut c, "job", &[(AFFINITY, "ps,worker")]);
    task(&mut c, "job", "ps-0", "ps", None);
    let mut p = pod(
        "ns",
        "worker-0",
        Some("job"),
        "Pending",
        None,
        json!({"cpu": "1"}),
    );
    p["metadata"]["labels"][keys::TASK_SPEC] = json!("worker");
    c.pod(p);
    let f = Fixture::open(&c);
    assert_eq!(f.bucket_index("ns/ps-0"), Some(0));
    assert_eq!(f.bucket_index("ns/worker-0"), None);
    // In a bucket before out of bucket.
    assert_eq!(f.order("ns/ps-0", "ns/worker-0"), Ordering::Less);
}

#[test]
fn trimming_goes_by_pod_name() {
    // Bucket {ps-0 (1 cpu), worker-0 (1 cpu), worker-1 (3 cpu)}; n4 has 4 cpu. Scoring ps-0
    // leaves out worker-0 first (4 cpu remain, fits): 3 − 1 = 2.
    let mut c = cluster();
    group(&mut c, "job", &[(AFFINITY, "ps,worker")]);
    task(&mut c, "job", "ps-0", "ps", None);
    task(&mut c, "job", "worker-0", "worker", None);
    let mut p = pod(
        "ns",
        "worker-1",
        Some("job"),
        "Pending",
        None,
        json!({"cpu": "3"}),
    );
    p["metadata"]["annotations"][keys::TASK_SPEC] = json!("worker");
    c.pod(p);
    let f = Fixture::open(&c);
    assert_close(f.score("ns/ps-0", "n4"), 200.0 / 3.0);
    // For worker-1 the first one left out is ps-0, which is enough as well.
    assert_close(f.score("ns/worker-1", "n4"), 200.0 / 3.0);
    // On n2 (2 cpu) ps-0 must drop both others: 3 − 2 = 1.
    assert_close(f.score("ns/ps-0", "n2"), 100.0 / 3.0);
}

#[test]
fn session_close_drops_the_managers() {
    let mut f = Fixture::open(&ps_worker_job(&[(AFFINITY, "ps,worker")]));
    assert!(!f.plugin.managers.is_empty());
    f.plugin.on_session_close(&mut f.ssn.state);
    assert!(f.plugin.managers.is_empty());
}

#[test]
fn role_falls_back_to_the_label_when_the_annotation_is_empty() {
    let p: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": "p",
            "annotations": {"volcano.sh/task-spec": ""},
            "labels": {"volcano.sh/task-spec": "worker"}
        }
    }))
    .expect("valid pod");
    assert_eq!(task_role(&p), "worker");
    assert_eq!(task_name(&p), "");
}

#[test]
fn a_requested_scalar_the_node_lacks_scores_zero_even_at_zero() {
    let mut c = ps_worker_job(&[(AFFINITY, "ps,worker")]);
    let mut p = pod(
        "ns",
        "worker-2",
        Some("job"),
        "Pending",
        None,
        json!({"cpu": "1", "example.com/gpu": "0"}),
    );
    p["metadata"]["annotations"][keys::TASK_SPEC] = json!("worker");
    c.pod(p);
    let f = Fixture::open(&c);
    assert_eq!(f.bucket_index("ns/worker-2"), Some(0));
    assert_close(f.score("ns/worker-2", "n1"), 0.0);
    assert_close(f.score("ns/worker-0", "n1"), 100.0);
}
