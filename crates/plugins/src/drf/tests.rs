use super::*;
use crate::testutil::{StateLookup, TestCluster, allocate, pod, pod_group};
use engine::conf::PluginOption;
use engine::framework::{Session, Statement};
use proptest::prelude::*;
use serde_json::{Value, json};

fn res(cpu: f64, memory: f64) -> Resource {
    Resource::from_pairs(cpu, memory, &[])
}

fn share_of(allocated: &Resource, total: &Resource) -> DominantShare {
    ShareBasis::new(total.clone()).share_of(allocated)
}

fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() < 1e-9,
        "expected {expected}, got {actual}"
    );
}

// ---- flat DRF (§3.3, §3.5, §3.6) ---------------------------------------------------------

#[test]
fn d1_dominant_share_of_the_seed_example() {
    let total = res(100.0, 400.0);
    let a = share_of(&res(30.0, 40.0), &total);
    assert_eq!(a.resource, "cpu");
    assert_close(a.share, 0.30);
    let b = share_of(&res(10.0, 200.0), &total);
    assert_eq!(b.resource, "memory");
    assert_close(b.share, 0.50);
    // cpu and memory are both 0.2: cpu is examined first and keeps the title.
    let c = share_of(&res(20.0, 80.0), &total);
    assert_eq!(
        c,
        DominantShare {
            share: 0.2,
            resource: "cpu"
        }
    );
}

#[test]
fn d2_resources_missing_from_the_cluster_are_ignored() {
    let total = res(100.0, 0.0);
    let allocated = Resource::from_pairs(10.0, 0.0, &[("nvidia.com/gpu", 1000.0)]);
    let s = share_of(&allocated, &total);
    assert_eq!(s.resource, "cpu");
    assert_close(s.share, 0.10);
    // Nothing allocated: share 0 and no dominant resource.
    assert_eq!(share_of(&Resource::empty(), &total), DominantShare::ZERO);
}

#[test]
fn d3_share_helper_guards_division_by_zero() {
    assert_eq!(share(5.0, 0.0), 1.0);
    assert_eq!(share(0.0, 0.0), 0.0);
    assert_eq!(share(1.0, 4.0), 0.25);
}

#[test]
fn d6_pods_can_dominate() {
    let total = Resource::from_pairs(100_000.0, 0.0, &[("pods", 110.0)]);
    let allocated = Resource::from_pairs(1_000.0, 0.0, &[("pods", 10.0)]);
    let s = share_of(&allocated, &total);
    assert_eq!(s.resource, "pods");
    assert_close(s.share, 10.0 / 110.0);
}

#[test]
fn dimensions_follow_volcano_order_and_skip_tiny_values() {
    let total = Resource::from_pairs(
        0.05,
        10.0,
        &[
            ("pods", 110.0),
            ("example.com/zz", 1000.0),
            ("example.com/aa", 0.0),
        ],
    );
    let names: Vec<&str> = dimensions(&total).iter().map(|d| d.name()).collect();
    assert_eq!(names, vec!["memory", "example.com/zz", "pods"]);
}

#[test]
fn share_comparison_is_exact() {
    assert_eq!(compare_shares(0.3, 0.3), Ordering::Equal);
    assert_eq!(compare_shares(0.3, 0.3 + 1e-12), Ordering::Less);
    assert_eq!(compare_shares(0.5, 0.3), Ordering::Greater);
}

/// One node with the given allocatable; PodGroups `ns/<job>` in the default queue, each with
/// running pods of the given (cpu, memory) requests on the node.
fn cluster(allocatable: Value, jobs: &[(&str, &[(&str, &str)])]) -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", allocatable);
    for (job, pods) in jobs {
        c.pod_group(pod_group("ns", job, 1));
        for (i, (cpu, memory)) in pods.iter().enumerate() {
            c.pod(pod(
                "ns",
                &format!("{job}-{i}"),
                Some(job),
                "Running",
                Some("n1"),
                json!({"cpu": cpu, "memory": memory}),
            ));
        }
    }
    c
}

fn sorted_jobs(ssn: &Session) -> Vec<String> {
    let mut jobs: Vec<JobId> = ssn.state.job_ids().collect();
    jobs.sort_by(|&a, &b| {
        if ssn.job_order(a, b) {
            Ordering::Less
        } else if ssn.job_order(b, a) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    });
    jobs.iter()
        .map(|&j| ssn.state.job(j).spec.name.clone())
        .collect()
}

#[test]
fn seed_000_job_order_c_before_a_before_b() {
    // Seed 000's table: cluster 100 CPU / 400 GB. A (30, 40) 0.30; B (10, 200) 0.50;
    // C (20, 80) 0.20.
    let c = cluster(
        json!({"cpu": "100", "memory": "400Gi"}),
        &[
            ("job-a", &[("30", "40Gi")]),
            ("job-b", &[("10", "200Gi")]),
            ("job-c", &[("20", "80Gi")]),
        ],
    );
    let ssn = c.session(&[&[NAME]]);
    assert_eq!(sorted_jobs(&ssn), vec!["job-c", "job-a", "job-b"]);
    let (a, b) = (
        ssn.state.job_by_key("ns/job-a"),
        ssn.state.job_by_key("ns/job-b"),
    );
    assert_eq!(ssn.job_order_compare(a, b), Ordering::Less);
    assert_eq!(ssn.job_order_compare(b, a), Ordering::Greater);
    assert_eq!(ssn.job_order_compare(a, a), Ordering::Equal);
}

/// D-4/D-5 set-up: total (cpu 10, memory 10Gi); the preemptor job holds cpu 2 and asks for
/// `preemptor_cpu` more; the victim job runs the given cpu amounts.
fn preemption_cluster(preemptor_cpu: &str, victim_pods: &[&str]) -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "10Gi"}));
    c.pod_group(pod_group("ns", "hungry", 1));
    c.pod(pod(
        "ns",
        "hungry-0",
        Some("hungry"),
        "Running",
        Some("n1"),
        json!({"cpu": "2"}),
    ));
    c.pod(pod(
        "ns",
        "hungry-1",
        Some("hungry"),
        "Pending",
        None,
        json!({"cpu": preemptor_cpu}),
    ));
    c.pod_group(pod_group("ns", "rich", 1));
    for (i, cpu) in victim_pods.iter().enumerate() {
        c.pod(pod(
            "ns",
            &format!("rich-{i}"),
            Some("rich"),
            "Running",
            Some("n1"),
            json!({"cpu": cpu}),
        ));
    }
    c
}

fn keys(ssn: &Session, tasks: Vec<TaskId>) -> Vec<String> {
    tasks
        .into_iter()
        .map(|t| ssn.state.task(t).key().to_string())
        .collect()
}

fn task_ids(ssn: &Session, keys: &[&str]) -> Vec<TaskId> {
    keys.iter().map(|k| ssn.state.task_by_key(k)).collect()
}

fn victims(ssn: &Session, preemptor: &str, candidates: &[&str]) -> Vec<String> {
    let preemptor = ssn.state.task_by_key(preemptor);
    keys(ssn, ssn.preemptable(preemptor, &task_ids(ssn, candidates)))
}

#[test]
fn d4_preemption_is_cumulative_per_victim_job() {
    // ls = (2 + 1) / 10 = 0.3; rich holds 6: without t1 0.4 (victim), without t1 and t2 0.2.
    let c = preemption_cluster("1", &["2", "2", "2"]);
    let ssn = c.session(&[&[NAME]]);
    assert_eq!(
        victims(&ssn, "ns/hungry-1", &["ns/rich-0", "ns/rich-1"]),
        vec!["ns/rich-0"]
    );
    // Order matters: the first candidate of the job is the one judged against 0.4.
    assert_eq!(
        victims(&ssn, "ns/hungry-1", &["ns/rich-1", "ns/rich-0"]),
        vec!["ns/rich-1"]
    );
}

#[test]
fn d5_equal_shares_allow_preemption() {
    // ls = 0.3; rich holds 6 and loses 3: rs = 0.3.
    let c = preemption_cluster("1", &["3", "3"]);
    let ssn = c.session(&[&[NAME]]);
    assert_eq!(
        victims(&ssn, "ns/hungry-1", &["ns/rich-0"]),
        vec!["ns/rich-0"]
    );
    // A preemptor asking for 1.1 cpu (ls 0.31) is richer than the victim would be.
    let c = preemption_cluster("1100m", &["3", "3"]);
    let ssn = c.session(&[&[NAME]]);
    assert!(victims(&ssn, "ns/hungry-1", &["ns/rich-0"]).is_empty());
}

#[test]
fn preemption_tolerance_is_share_delta() {
    let basis = ShareBasis::new(res(1_000_000_000.0, 0.0));
    let ls = basis.share_of(&res(300_000_000.0, 0.0)).share;
    let rs_close = basis.share_of(&res(299_999_500.0, 0.0)).share;
    let rs_far = basis.share_of(&res(299_998_000.0, 0.0)).share;
    assert!(ls - rs_close <= SHARE_DELTA);
    assert!(ls - rs_far > SHARE_DELTA);
}

#[test]
fn event_handlers_keep_shares_current() {
    // a runs 3 cpu, b runs 1 cpu and has a pending 4-cpu task: b goes first until it gets it.
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "10Gi"}));
    c.pod_group(pod_group("ns", "a", 1));
    c.pod(pod(
        "ns",
        "a-0",
        Some("a"),
        "Running",
        Some("n1"),
        json!({"cpu": "3"}),
    ));
    c.pod_group(pod_group("ns", "b", 1));
    c.pod(pod(
        "ns",
        "b-0",
        Some("b"),
        "Running",
        Some("n1"),
        json!({"cpu": "1"}),
    ));
    c.pod(pod(
        "ns",
        "b-1",
        Some("b"),
        "Pending",
        None,
        json!({"cpu": "4"}),
    ));
    let mut ssn = c.session(&[&[NAME]]);
    let (a, b) = (ssn.state.job_by_key("ns/a"), ssn.state.job_by_key("ns/b"));
    assert!(ssn.job_order(b, a));

    let task = ssn.state.task_by_key("ns/b-1");
    let node = ssn.state.node_by_key("n1");
    let mut stmt = Statement::new();
    ssn.allocate(&mut stmt, task, node)
        .expect("allocation succeeds");
    assert!(ssn.job_order(a, b), "b now holds 5 of 10 cpu");

    // Discarding the statement deallocates: b is back at 0.1.
    ssn.discard(stmt);
    assert!(ssn.job_order(b, a));

    // A committed allocation through the shared helper has the same effect.
    allocate(&mut ssn, "ns/b-1", "n1");
    assert!(ssn.job_order(a, b));
}

#[test]
fn open_hook_counts_only_allocated_tasks() {
    // Pending and succeeded tasks hold nothing; the running one holds 2 of 10 cpu.
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10"}));
    c.pod_group(pod_group("ns", "j", 1));
    c.pod(pod(
        "ns",
        "j-0",
        Some("j"),
        "Running",
        Some("n1"),
        json!({"cpu": "2"}),
    ));
    c.pod(pod(
        "ns",
        "j-1",
        Some("j"),
        "Pending",
        None,
        json!({"cpu": "3"}),
    ));
    c.pod(pod(
        "ns",
        "j-2",
        Some("j"),
        "Succeeded",
        Some("n1"),
        json!({"cpu": "4"}),
    ));
    let mut ssn = c.session(&[]);
    let mut drf = Drf::default();
    drf.on_session_open(&mut ssn.state);
    let job = ssn.state.job_by_key("ns/j");
    let attr = drf.attr(job).expect("every job is tracked");
    assert_close(attr.dominant.share, 0.2);
    assert_eq!(attr.dominant.resource, "cpu");
}

#[test]
fn close_reports_every_job_share() {
    let c = cluster(
        json!({"cpu": "100", "memory": "400Gi"}),
        &[("job-a", &[("30", "40Gi")]), ("job-c", &[("20", "80Gi")])],
    );
    let mut ssn = c.session(&[]);
    let mut drf = Drf::default();
    drf.on_session_open(&mut ssn.state);
    drf.on_session_close(&mut ssn.state);
    let a = ssn.state.job_by_key("ns/job-a");
    let share = ssn.state.job_metrics(a).and_then(|m| m.share);
    assert_close(share.expect("share reported"), 0.3);
    let reported = ssn
        .state
        .job_ids()
        .filter(|j| ssn.state.job_metrics(*j).is_some());
    assert_eq!(reported.count(), 2);
}

// ---- HDRF tree (§3.8, §3.9) --------------------------------------------------------------

/// One job of a tree test: its queue's annotations, what it holds and its total request.
struct Row {
    hierarchy: &'static str,
    weights: &'static str,
    allocated: Resource,
    request: Resource,
}

fn row(hierarchy: &'static str, weights: &'static str, allocated: Resource) -> Row {
    Row {
        hierarchy,
        weights,
        request: allocated.clone(),
        allocated,
    }
}

impl Row {
    fn requesting(mut self, request: Resource) -> Row {
        self.request = request;
        self
    }

    fn path(&self) -> QueuePath<'static> {
        QueuePath {
            queue: "q",
            hierarchy: self.hierarchy,
            weights: self.weights,
        }
    }
}

/// The tree the open hook builds for these jobs (job ids are row indices).
fn tree_of(basis: &ShareBasis, rows: &[Row]) -> HdrfTree {
    let mut tree = HdrfTree::default();
    for (i, r) in rows.iter().enumerate() {
        let attr = JobAttr::new(r.allocated.clone(), basis);
        tree.total_allocated.add(&r.allocated);
        tree.place_job(JobId::from_index(i), &attr, &r.request, r.path());
    }
    tree.recompute_all(basis);
    tree
}

/// The inner node at `path` (`root/a/b`).
fn node<'t>(tree: &'t HdrfTree, path: &str) -> &'t TreeNode {
    let mut n = ROOT;
    for name in path.split('/').skip(1) {
        n = tree
            .group(n, name)
            .unwrap_or_else(|| panic!("no node {name} on {path}"));
    }
    &tree.nodes[n]
}

fn leaf(tree: &HdrfTree, job: usize) -> &TreeNode {
    tree.nodes
        .iter()
        .find(|n| matches!(n.kind, NodeKind::Leaf { job: j, .. } if j.index() == job))
        .unwrap_or_else(|| panic!("no leaf for job {job}"))
}

/// D-7 set-up: total (10, 10); qa `root/a` weights `1/1` holds cpu 4 of a request of 8; qb
/// `root/b` weights `1/2` holds memory 6 of 9.
fn d7_rows() -> Vec<Row> {
    vec![
        row("root/a", "1/1", res(4.0, 0.0)).requesting(res(8.0, 0.0)),
        row("root/b", "1/2", res(0.0, 6.0)).requesting(res(0.0, 9.0)),
    ]
}

#[test]
fn d7_hierarchical_shares_and_queue_order() {
    let basis = ShareBasis::new(res(10.0, 10.0));
    let tree = tree_of(&basis, &d7_rows());
    assert_close(node(&tree, "root/a").share.share, 0.4);
    assert_close(node(&tree, "root/b").share.share, 0.6);
    assert_eq!(node(&tree, "root/b").weight, 2.0);
    // Root: mdr = 0.4; a unscaled (4, 0), b scaled by 0.4/0.6 to (0, 4).
    let root = node(&tree, "root");
    assert_close(root.allocated.milli_cpu, 4.0);
    assert_close(root.allocated.memory, 4.0);
    assert_close(root.share.share, 0.4);
    assert!(!root.saturated);
    // 0.4/1 − 0.6/2 = +0.1: qb first.
    let d = tree.compare_queues("root/a", "root/b").expect("both exist");
    assert_close(d, 0.1);
    assert_eq!(order_from_difference(Some(d)), Ordering::Greater);
    assert_eq!(
        order_from_difference(tree.compare_queues("root/b", "root/a")),
        Ordering::Less
    );
    assert_eq!(tree.compare_queues("root/a", "root/a"), Some(0.0));
}

#[test]
fn d8_saturated_subtrees_go_last() {
    let basis = ShareBasis::new(res(10.0, 10.0));
    // job1 got all it asked for: saturated, and so is node a, although 0.4 vs 0.3 or even a
    // smaller share would put it first.
    let mut rows = d7_rows();
    rows[0] = row("root/a", "1/1", res(1.0, 0.0));
    let tree = tree_of(&basis, &rows);
    assert!(leaf(&tree, 0).saturated);
    assert!(node(&tree, "root/a").saturated);
    assert!(!node(&tree, "root").saturated, "b still demands");
    assert_eq!(tree.compare_queues("root/a", "root/b"), Some(1.0));
    assert_eq!(tree.compare_queues("root/b", "root/a"), Some(-1.0));

    // Request 8, but the cluster's cpu is fully allocated (a third queue holds the rest):
    // job1 holds a resource that is exhausted and that it requests, so it is saturated.
    let mut rows = d7_rows();
    rows.push(row("root/c", "1/1", res(6.0, 0.0)));
    let tree = tree_of(&basis, &rows);
    assert_eq!(tree.total_allocated.milli_cpu, 10.0);
    assert_eq!(tree.demanding, Some(vec![Dimension::Memory]));
    assert!(leaf(&tree, 0).saturated);
    assert!(!leaf(&tree, 1).saturated, "memory is still demanding");
    assert_eq!(tree.compare_queues("root/a", "root/b"), Some(1.0));
}

#[test]
fn d9_rescaling_brings_children_to_a_common_share() {
    let basis = ShareBasis::new(res(10.0, 10.0));
    let want = res(10.0, 10.0);
    let tree = tree_of(
        &basis,
        &[
            row("root/sci", "100/50", res(3.0, 3.0)).requesting(want.clone()),
            row("root/eng/dev", "100/50/50", res(2.0, 0.0)).requesting(want.clone()),
            row("root/eng/prod", "100/50/50", res(0.0, 4.0)).requesting(want),
        ],
    );
    assert_close(node(&tree, "root/eng/dev").share.share, 0.2);
    assert_close(node(&tree, "root/eng/prod").share.share, 0.4);
    // eng: mdr 0.2; dev (2, 0) × 1 + prod (0, 4) × 0.5 = (2, 2).
    let eng = node(&tree, "root/eng");
    assert_close(eng.allocated.milli_cpu, 2.0);
    assert_close(eng.allocated.memory, 2.0);
    assert_close(eng.share.share, 0.2);
    // root: mdr 0.2; sci (3, 3) × 2/3 + eng (2, 2) = (4, 4).
    let root = node(&tree, "root");
    assert_close(root.allocated.milli_cpu, 4.0);
    assert_close(root.allocated.memory, 4.0);
    // sci 0.3/50 vs eng 0.2/50: dev's queue first.
    let d = tree
        .compare_queues("root/sci", "root/eng/dev")
        .expect("both exist");
    assert_close(d, 0.002);
    // dev vs prod tie at eng and are decided one level down: 0.2/50 < 0.4/50.
    let d = tree
        .compare_queues("root/eng/dev", "root/eng/prod")
        .expect("both exist");
    assert_close(d, -0.004);
}

/// Seed 000's example tree: root → dept-a (4) → team-1 (2) {A, B}, team-2 (3) {C};
/// root → dept-b (2) → team-3 (1) {D}. Cluster 100 cpu / 400 memory.
#[test]
fn seed_000_hierarchy_tree_example() {
    let basis = ShareBasis::new(res(100.0, 400.0));
    let want = res(100.0, 400.0);
    let team1 = ("root/dept-a/team-1", "1/4/2");
    let team2 = ("root/dept-a/team-2", "1/4/3");
    let team3 = ("root/dept-b/team-3", "1/2/1");
    let rows = [
        // A 0.1, B 0.2, C 0.45, D 0.5 (memory).
        row(team1.0, team1.1, res(10.0, 40.0)).requesting(want.clone()),
        row(team1.0, team1.1, res(20.0, 40.0)).requesting(want.clone()),
        row(team2.0, team2.1, res(45.0, 60.0)).requesting(want.clone()),
        row(team3.0, team3.1, res(20.0, 200.0)).requesting(want),
    ];
    let tree = tree_of(&basis, &rows);

    let weights: Vec<f64> = ["root", "root/dept-a", "root/dept-b"]
        .iter()
        .chain(&[team1.0, team2.0, team3.0])
        .map(|p| node(&tree, p).weight)
        .collect();
    assert_eq!(weights, vec![1.0, 4.0, 2.0, 2.0, 3.0, 1.0]);
    assert_eq!(tree.children(ROOT).map(|c| c.groups.len()), Some(2));
    assert_eq!(
        tree.children(tree.group(ROOT, "dept-a").expect("dept-a"))
            .map(|c| (c.groups.len(), c.jobs.len())),
        Some((2, 0))
    );

    // team-1: mdr 0.1 ⇒ A (10, 40) + B (20, 40) × 0.5 = (20, 60), share 0.2.
    let t1 = node(&tree, team1.0);
    assert_close(t1.allocated.milli_cpu, 20.0);
    assert_close(t1.allocated.memory, 60.0);
    assert_close(t1.share.share, 0.2);
    // dept-a: mdr 0.2 ⇒ team-1 (20, 60) + team-2 (45, 60) × 0.2/0.45 = (40, 86.67), 0.4.
    assert_close(node(&tree, "root/dept-a").share.share, 0.4);
    assert_close(node(&tree, "root/dept-b").share.share, 0.5);
    // root: mdr 0.4 ⇒ (40, 86.67) + (20, 200) × 0.8 = (56, 246.67), share 0.6167 (memory).
    let root = node(&tree, "root");
    assert_close(root.share.share, (86.0 + 2.0 / 3.0 + 160.0) / 400.0);
    assert_eq!(root.share.resource, "memory");

    // Weighted: dept-a 0.4/4 = 0.1 < dept-b 0.5/2 = 0.25; within dept-a team-1 0.2/2 = 0.1
    // < team-2 0.45/3 = 0.15. Queue order: team-1, team-2, team-3.
    let mut queues = vec![team3.0, team2.0, team1.0];
    queues.sort_by(|l, r| order_from_difference(tree.compare_queues(l, r)));
    assert_eq!(queues, vec![team1.0, team2.0, team3.0]);
    assert_close(
        tree.compare_queues(team1.0, team3.0).expect("exist"),
        0.1 - 0.25,
    );
    assert_close(
        tree.compare_queues(team1.0, team2.0).expect("exist"),
        0.1 - 0.15,
    );
}

#[test]
fn resource_saturation_rules() {
    let total = Resource::from_pairs(10.0, 10.0, &[("pods", 110.0)]);
    let basis = ShareBasis::new(total);
    let all = basis.demanding(&Resource::empty());
    let no_cpu = basis.demanding(&res(10.0, 0.0));
    assert_eq!(no_cpu.len(), 2);
    let job = |cpu, pods| Resource::from_pairs(cpu, 0.0, &[("pods", pods)]);

    // Holding nothing: never saturated, even with the cluster exhausted.
    assert!(!resource_saturated(&Resource::empty(), &job(4.0, 1.0), &[]));
    // Some of the request held: not saturated.
    assert!(!resource_saturated(&job(2.0, 1.0), &job(4.0, 2.0), &all));
    // Every task allocated: saturated through pods alone.
    assert!(resource_saturated(&job(2.0, 2.0), &job(4.0, 2.0), &all));
    // cpu fully granted.
    assert!(resource_saturated(&job(4.0, 1.0), &job(4.0, 2.0), &all));
    // cpu exhausted cluster-wide and requested.
    assert!(resource_saturated(&job(2.0, 1.0), &job(4.0, 2.0), &no_cpu));
    // A held resource the request does not name saturates nothing, exhausted or not.
    assert!(!resource_saturated(&res(2.0, 0.0), &res(0.0, 5.0), &[]));
    // Below ε a held amount does not count.
    assert!(!resource_saturated(&res(0.05, 0.0), &res(0.05, 0.0), &[]));
    // A held resource no node offers is never demanding.
    let gpu = Resource::from_pairs(1.0, 0.0, &[("nvidia.com/gpu", 1000.0)]);
    let gpu_request = Resource::from_pairs(4.0, 0.0, &[("nvidia.com/gpu", 4000.0)]);
    assert!(resource_saturated(&gpu, &gpu_request, &all));
}

#[test]
fn empty_children_are_skipped_but_keep_their_parent_unsaturated() {
    let basis = ShareBasis::new(res(10.0, 10.0));
    let tree = tree_of(
        &basis,
        &[
            // Fully granted (saturated) job and a job holding nothing under node x.
            row("root/x", "1/1", res(2.0, 0.0)),
            row("root/x", "1/1", Resource::empty()).requesting(res(1.0, 0.0)),
            // A second queue with a job holding 0.5.
            row("root/y", "1/1", res(5.0, 0.0)).requesting(res(9.0, 0.0)),
        ],
    );
    assert!(leaf(&tree, 0).saturated);
    assert!(!leaf(&tree, 1).saturated);
    let x = node(&tree, "root/x");
    assert!(!x.saturated, "the empty job still demands");
    // Only the saturated child counts, unscaled.
    assert_close(x.allocated.milli_cpu, 2.0);
    assert_close(x.share.share, 0.2);
    // Root: mdr over unsaturated non-empty children = min(0.2, 0.5) = 0.2.
    let root = node(&tree, "root");
    assert_close(root.allocated.milli_cpu, 2.0 + 5.0 * 0.2 / 0.5);
}

#[test]
fn mdr_starts_at_one() {
    // Node a holds 15 of 10 cpu (a saturated job added unscaled) and stays unsaturated
    // through an empty job: share 1.5. At the root mdr = min(1, 1.5) = 1, so a is scaled
    // by 1 / 1.5 (starting from the smallest share instead would leave it at 1.5).
    let basis = ShareBasis::new(res(10.0, 10.0));
    let tree = tree_of(
        &basis,
        &[
            row("root/a", "1/1", res(15.0, 0.0)),
            row("root/a", "1/1", Resource::empty()).requesting(res(1.0, 0.0)),
        ],
    );
    let a = node(&tree, "root/a");
    assert!(!a.saturated);
    assert_close(a.share.share, 1.5);
    let root = node(&tree, "root");
    assert_close(root.allocated.milli_cpu, 10.0);
    assert_close(root.share.share, 1.0);
}

#[test]
fn weights_parse_like_volcano() {
    let path = |weights| QueuePath {
        queue: "q",
        hierarchy: "root/a/b",
        weights,
    };
    assert_eq!(node_weight(path("1/4/2"), 1), 4.0);
    assert_eq!(node_weight(path("1/4/2"), 2), 2.0);
    assert_eq!(node_weight(path("1/2.5/2"), 1), 2.5);
    assert_eq!(node_weight(path("1/1e2/2"), 1), 100.0);
    // Below 1, negative or unparsable: 1.
    assert_eq!(node_weight(path("1/0.5/2"), 1), 1.0);
    assert_eq!(node_weight(path("1/-3/2"), 1), 1.0);
    assert_eq!(node_weight(path("1/x/2"), 1), 1.0);
    assert_eq!(node_weight(path("1//2"), 1), 1.0);
    assert_eq!(node_weight(path("1/ 4/2"), 1), 1.0);
    // Missing (fewer weights than path elements): 1.
    assert_eq!(node_weight(path("1/4"), 2), 1.0);
    assert_eq!(node_weight(path(""), 1), 1.0);
    // Go's ParseFloat accepts these too.
    assert_eq!(node_weight(path("1/+Inf/2"), 1), f64::INFINITY);
    assert!(node_weight(path("1/NaN/2"), 1).is_nan());
}

#[test]
fn a_nan_weight_makes_that_level_inconclusive() {
    let basis = ShareBasis::new(res(10.0, 10.0));
    let want = res(10.0, 10.0);
    let tree = tree_of(
        &basis,
        &[
            row("root/a", "1/NaN", res(1.0, 0.0)).requesting(want.clone()),
            row("root/b", "1/1", res(5.0, 0.0)).requesting(want),
        ],
    );
    let d = tree.compare_queues("root/a", "root/b");
    assert!(d.is_some_and(f64::is_nan));
    assert_eq!(order_from_difference(d), Ordering::Equal);
}

#[test]
fn first_job_sets_a_nodes_weight_and_leaves_are_replaced() {
    let basis = ShareBasis::new(res(10.0, 10.0));
    let want = res(10.0, 10.0);
    let mut tree = tree_of(
        &basis,
        &[
            row("root/a", "1/3", res(1.0, 0.0)).requesting(want.clone()),
            row("root/a", "1/7", res(2.0, 0.0)).requesting(want.clone()),
        ],
    );
    assert_eq!(node(&tree, "root/a").weight, 3.0);
    let nodes = tree.nodes.len();

    // Updating job 0 replaces its leaf in place and refreshes its request.
    let attr = JobAttr::new(res(4.0, 0.0), &basis);
    tree.total_allocated.add(&res(3.0, 0.0));
    tree.update_job(
        &basis,
        JobId::from_index(0),
        &attr,
        &res(4.0, 0.0),
        QueuePath {
            queue: "q",
            hierarchy: "root/a",
            weights: "1/9",
        },
    );
    assert_eq!(tree.nodes.len(), nodes);
    assert_eq!(node(&tree, "root/a").weight, 3.0);
    let job0 = leaf(&tree, 0);
    assert_close(job0.share.share, 0.4);
    assert!(job0.saturated, "its new request is fully held");
    // a: job 1 unsaturated (0.2) alone sets mdr; job 0 is added unscaled.
    assert_close(node(&tree, "root/a").allocated.milli_cpu, 6.0);
}

#[test]
fn unannotated_queues_hang_under_the_root_and_compare_equal() {
    let basis = ShareBasis::new(res(10.0, 10.0));
    let want = res(10.0, 10.0);
    let tree = tree_of(
        &basis,
        &[
            row("", "", res(1.0, 0.0)).requesting(want.clone()),
            row("root/a", "1/1", res(5.0, 0.0)).requesting(want),
        ],
    );
    assert!(tree.children(ROOT).is_some_and(|c| c.jobs.len() == 1));
    assert_eq!(tree.compare_queues("", "root/a"), Some(0.0));
    assert_eq!(tree.compare_queues("root/a", ""), Some(0.0));
    // The first element is not checked: any name stands for the root.
    assert_eq!(tree.compare_queues("top/a", "root/a"), Some(0.0));
}

#[test]
fn a_path_without_nodes_gives_no_opinion() {
    let basis = ShareBasis::new(res(10.0, 10.0));
    let want = res(10.0, 10.0);
    let tree = tree_of(
        &basis,
        &[
            row("root/a/x", "1/1/1", res(1.0, 0.0)).requesting(want.clone()),
            row("root/b", "1/1", res(1.0, 0.0)).requesting(want),
        ],
    );
    // a and b tie at the top, so the walk needs a/y, which does not exist.
    assert_eq!(tree.compare_queues("root/a/y", "root/b/z"), None);
    assert_eq!(tree.compare_queues("root/zz", "root/a"), None);
    assert_eq!(order_from_difference(None), Ordering::Equal);
    // A decision above the missing level is still made.
    let tree = tree_of(
        &basis,
        &[row("root/a/x", "1/1/1", res(1.0, 0.0)).requesting(res(10.0, 10.0))],
    );
    assert_eq!(tree.compare_queues("root/a/missing", "root/a/x"), None);
}

#[test]
fn deep_paths_do_not_recurse() {
    // A path of 50 000 elements would overflow the stack of a recursive update.
    let basis = ShareBasis::new(res(10.0, 10.0));
    let deep: &'static str = Box::leak(
        std::iter::once("root")
            .chain(std::iter::repeat_n("n", 50_000))
            .collect::<Vec<_>>()
            .join("/")
            .into_boxed_str(),
    );
    let tree = tree_of(
        &basis,
        &[
            row(deep, "", res(1.0, 0.0)).requesting(res(10.0, 10.0)),
            row("root/b", "1/1", res(2.0, 0.0)).requesting(res(10.0, 10.0)),
        ],
    );
    assert_eq!(tree.nodes.len(), 50_000 + 1 + 1 + 1 + 1);
    // The chain carries 0.1 up to the root, where mdr = min(0.1, 0.2): 1 + 2 × 0.5 = 2 cpu.
    assert_close(node(&tree, "root").share.share, 0.2);
    assert_eq!(
        order_from_difference(tree.compare_queues(deep, "root/b")),
        Ordering::Less
    );
}

// ---- HDRF through a session (§3.7, §3.9, §3.10) -----------------------------------------

fn hierarchical() -> Vec<Vec<PluginOption>> {
    let mut option = PluginOption::new(NAME);
    option.enable_hierarchy = true;
    vec![vec![option]]
}

fn hdrf_queue(c: &mut TestCluster, name: &str, hierarchy: &str, weights: &str) {
    c.queue(json!({
        "metadata": {"name": name, "annotations": {
            "volcano.sh/hierarchy": hierarchy,
            "volcano.sh/hierarchy-weights": weights,
        }},
        "spec": {"weight": 1}
    }));
}

/// PodGroup `ns/<job>` in `queue`, with running pods (on n1) and pending pods of the given
/// requests, named `<job>-r<i>` and `<job>-p<i>`.
fn job_in(c: &mut TestCluster, queue: &str, job: &str, running: &[Value], pending: &[Value]) {
    let mut pg = pod_group("ns", job, 1);
    pg["spec"]["queue"] = json!(queue);
    c.pod_group(pg);
    for (i, r) in running.iter().enumerate() {
        let name = format!("{job}-r{i}");
        c.pod(pod(
            "ns",
            &name,
            Some(job),
            "Running",
            Some("n1"),
            r.clone(),
        ));
    }
    for (i, r) in pending.iter().enumerate() {
        let name = format!("{job}-p{i}");
        c.pod(pod("ns", &name, Some(job), "Pending", None, r.clone()));
    }
}

fn queue_id(ssn: &Session, name: &str) -> QueueId {
    ssn.state.queue_id(name).expect("queue")
}

/// Whether the session orders queue `l` before `r` and not the other way round.
fn queue_first(ssn: &Session, l: &str, r: &str) -> bool {
    let (l, r) = (queue_id(ssn, l), queue_id(ssn, r));
    ssn.queue_order(l, r) && !ssn.queue_order(r, l)
}

/// D-7 as a cluster: cpu 10, memory 10Gi, plenty of pod slots.
fn d7_cluster() -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "10Gi", "pods": "1000"}));
    hdrf_queue(&mut c, "qa", "root/a", "1/1");
    hdrf_queue(&mut c, "qb", "root/b", "1/2");
    job_in(
        &mut c,
        "qa",
        "job1",
        &[json!({"cpu": "4"})],
        &[json!({"cpu": "4"})],
    );
    job_in(
        &mut c,
        "qb",
        "job2",
        &[json!({"memory": "6Gi"})],
        &[json!({"memory": "3Gi"}), json!({"memory": "1Gi"})],
    );
    c
}

#[test]
fn extension_points_depend_on_hierarchy_mode() {
    let c = d7_cluster();
    for hierarchy in [false, true] {
        let mut option = PluginOption::new(NAME);
        option.enable_hierarchy = hierarchy;
        let mut ssn = c.session_with(vec![vec![option]]);
        let mut drf = Drf::default();
        drf.on_session_open(&mut ssn.state);
        let points = drf.extension_points();
        for flat in [
            ExtensionPoints::JOB_ORDER,
            ExtensionPoints::PREEMPTABLE,
            ExtensionPoints::EVENT_HANDLER,
        ] {
            assert!(points.contains(flat));
        }
        assert_eq!(points.contains(ExtensionPoints::QUEUE_ORDER), hierarchy);
        assert_eq!(points.contains(ExtensionPoints::RECLAIMABLE), hierarchy);
    }
    // Without hierarchy the queue order is the framework's fallback (qa is older by name).
    let ssn = c.session(&[&[NAME]]);
    assert!(queue_first(&ssn, "qa", "qb"));
}

#[test]
fn d7_queue_order_in_a_session_follows_events() {
    let c = d7_cluster();
    let mut ssn = c.session_with(hierarchical());
    // qa 0.4/1 vs qb 0.6/2 = 0.3.
    assert!(queue_first(&ssn, "qb", "qa"));

    // qb gets 3Gi more: 0.9/2 = 0.45 > 0.4, and it still wants 1Gi.
    let task = ssn.state.task_by_key("ns/job2-p0");
    let node = ssn.state.node_by_key("n1");
    let mut stmt = Statement::new();
    ssn.allocate(&mut stmt, task, node)
        .expect("allocation succeeds");
    assert!(queue_first(&ssn, "qa", "qb"));
    ssn.discard(stmt);
    assert!(queue_first(&ssn, "qb", "qa"));

    // Evicting job1's running task empties qa: 0 < 0.3.
    let mut stmt = Statement::new();
    ssn.evict(&mut stmt, ssn.state.task_by_key("ns/job1-r0"), "test");
    assert!(queue_first(&ssn, "qa", "qb"));
}

/// qa `root/a` (weight 1) runs job1 with 2 of 10 cpu; qb `root/b` (weight 2) runs job2
/// with 6Gi of 10Gi and wants 3Gi more (0.6 / 2 = 0.3).
fn d8_cluster(job1_pending: &[Value]) -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "memory": "10Gi", "pods": "1000"}));
    hdrf_queue(&mut c, "qa", "root/a", "1/1");
    hdrf_queue(&mut c, "qb", "root/b", "1/2");
    job_in(&mut c, "qa", "job1", &[json!({"cpu": "2"})], job1_pending);
    job_in(
        &mut c,
        "qb",
        "job2",
        &[json!({"memory": "6Gi"})],
        &[json!({"memory": "3Gi"})],
    );
    c
}

#[test]
fn d8_saturated_queue_goes_last_in_a_session() {
    // job1 has nothing pending: saturated, so qa goes last despite 0.2 < 0.3.
    let c = d8_cluster(&[]);
    let ssn = c.session_with(hierarchical());
    assert!(queue_first(&ssn, "qb", "qa"));

    // A second job in qa that holds nothing yet keeps node a unsaturated: 0.2 < 0.3.
    let mut c = d8_cluster(&[]);
    job_in(&mut c, "qa", "job3", &[], &[json!({"cpu": "1"})]);
    let ssn = c.session_with(hierarchical());
    assert!(queue_first(&ssn, "qa", "qb"));

    // So does job1 wanting more itself.
    let c = d8_cluster(&[json!({"cpu": "1"})]);
    let ssn = c.session_with(hierarchical());
    assert!(queue_first(&ssn, "qa", "qb"));
}

/// D-10 as a cluster: cpu 10; job A in `root/a` runs three 2-cpu tasks and wants two more;
/// job B in `root/b` runs one 2-cpu task and has pending tasks of 1, 2 and 5 cpu.
fn d10_cluster() -> TestCluster {
    let mut c = TestCluster::new();
    c.node("n1", json!({"cpu": "10", "pods": "110"}));
    hdrf_queue(&mut c, "a", "root/a", "1/1");
    hdrf_queue(&mut c, "b", "root/b", "1/1");
    let two = json!({"cpu": "2"});
    job_in(
        &mut c,
        "a",
        "ja",
        &[two.clone(), two.clone(), two.clone()],
        &[two.clone(), two.clone()],
    );
    job_in(
        &mut c,
        "b",
        "jb",
        &[two],
        &[
            json!({"cpu": "1"}),
            json!({"cpu": "2"}),
            json!({"cpu": "5"}),
        ],
    );
    c
}

fn reclaim_victims(ssn: &Session, reclaimer: &str, candidates: &[&str]) -> Vec<String> {
    let reclaimer = ssn.state.task_by_key(reclaimer);
    keys(ssn, ssn.reclaimable(reclaimer, &task_ids(ssn, candidates)))
}

#[test]
fn d10_reclaim_simulation() {
    let c = d10_cluster();
    let ssn = c.session_with(hierarchical());
    let a_tasks = ["ns/ja-r0", "ns/ja-r1", "ns/ja-r2"];
    // Reclaimer 1 cpu: b 0.3 vs a without one task 0.4 ⇒ −0.1 ⇒ victim. Each candidate is
    // judged alone (not cumulatively), so all three are victims.
    assert_eq!(reclaim_victims(&ssn, "ns/jb-p0", &a_tasks), a_tasks);
    // Reclaimer 2 cpu: 0.4 vs 0.4 ⇒ 0 ⇒ strict comparison, no victim.
    assert!(reclaim_victims(&ssn, "ns/jb-p1", &a_tasks).is_empty());
    // A candidate of the reclaimer's own queue is never a victim.
    assert_eq!(
        reclaim_victims(&ssn, "ns/jb-p0", &["ns/jb-r0", "ns/ja-r0"]),
        vec!["ns/ja-r0"]
    );
}

#[test]
fn reclaim_leaves_the_live_tree_alone() {
    let c = d10_cluster();
    let mut ssn = c.session_with(hierarchical());
    let mut drf = Drf::default();
    drf.on_session_open(&mut ssn.state);
    let before = drf.hierarchy.clone();
    let reclaimer = ssn.state.task_by_key("ns/jb-p2");
    let candidates = task_ids(&ssn, &["ns/ja-r0", "ns/ja-r1", "ns/jb-r0"]);
    let (victims, vote) = drf.reclaimable(&ssn.state, reclaimer, &candidates);
    assert_eq!(vote, PERMIT);
    // b would hold 7 of 10: more than a's 4, no victims.
    assert!(victims.is_empty());
    assert_eq!(drf.hierarchy, before);
    // Flat mode does not answer.
    let mut flat = Drf::default();
    let mut ssn = c.session(&[]);
    flat.on_session_open(&mut ssn.state);
    assert_eq!(
        flat.reclaimable(&ssn.state, reclaimer, &candidates),
        (Vec::new(), ABSTAIN)
    );
}

#[test]
fn open_tracks_the_cluster_allocation_in_hierarchy_mode() {
    let c = d10_cluster();
    let mut ssn = c.session_with(hierarchical());
    let mut drf = Drf::default();
    drf.on_session_open(&mut ssn.state);
    let tree = drf.hierarchy.as_ref().expect("hierarchy mode");
    assert_close(tree.total_allocated.milli_cpu, 8000.0);
    assert_close(tree.total_allocated.scalar(ResourceName::PODS), 4.0);
    assert_close(node(tree, "root/a").share.share, 0.6);
    assert_close(node(tree, "root/b").share.share, 0.2);
    // Committing an allocation moves the running total along.
    allocate(&mut ssn, "ns/jb-p0", "n1");
    drf.on_allocate(&ssn.state, ssn.state.task_by_key("ns/jb-p0"))
        .expect("no error");
    let tree = drf.hierarchy.as_ref().expect("hierarchy mode");
    assert_close(tree.total_allocated.milli_cpu, 9000.0);
    assert_close(node(tree, "root/b").share.share, 0.3);
}

// ---- properties --------------------------------------------------------------------------

/// Integral amounts, as quantities are once converted.
fn amount(max: u32) -> impl Strategy<Value = f64> {
    (0..=max).prop_map(f64::from)
}

proptest! {
    /// Job order is a total preorder consistent with dominant shares: antisymmetric,
    /// transitive, and a strictly smaller share (computed here independently) goes first.
    #[test]
    fn job_order_is_a_total_preorder_by_dominant_share(
        total in (amount(20_000), amount(20_000), amount(8_000), amount(110)),
        jobs in prop::collection::vec(
            (amount(20_000), amount(20_000), amount(8_000), amount(110)),
            1..8,
        ),
    ) {
        let r = |(cpu, mem, gpu, pods): (f64, f64, f64, f64)| {
            Resource::from_pairs(cpu, mem, &[("nvidia.com/gpu", gpu), ("pods", pods)])
        };
        let basis = ShareBasis::new(r(total));
        let drf = Drf {
            jobs: jobs.iter().map(|&j| JobAttr::new(r(j), &basis)).collect(),
            basis,
            hierarchy: None,
        };
        // max over the dimensions the cluster offers of allocated / total.
        let reference = |(cpu, mem, gpu, pods): (f64, f64, f64, f64)| {
            [(cpu, total.0), (mem, total.1), (gpu, total.2), (pods, total.3)]
                .iter()
                .filter(|&&(_, t)| t >= MIN_RESOURCE)
                .map(|&(a, t)| a / t)
                .fold(0.0, f64::max)
        };
        let ids: Vec<JobId> = (0..jobs.len()).map(JobId::from_index).collect();
        for &a in &ids {
            for &b in &ids {
                let ab = drf.compare_jobs(a, b);
                prop_assert_eq!(ab, drf.compare_jobs(b, a).reverse());
                if reference(jobs[a.index()]) < reference(jobs[b.index()]) {
                    prop_assert_eq!(ab, Ordering::Less);
                }
                for &c in &ids {
                    if ab.is_le() && drf.compare_jobs(b, c).is_le() {
                        prop_assert!(drf.compare_jobs(a, c).is_le());
                    }
                }
            }
        }
    }

    /// The incremental update gives exactly the tree Volcano's full recomputation gives, and
    /// building the tree once at open equals updating it job by job.
    #[test]
    fn incremental_updates_match_full_recomputation(
        jobs in prop::collection::vec(
            (0..6usize, amount(6), amount(6), amount(4), amount(4)),
            1..10,
        ),
        updates in prop::collection::vec((0..10usize, amount(8), amount(8)), 0..20),
    ) {
        const PATHS: [(&str, &str); 6] = [
            ("root/a", "1/2"),
            ("root/a/x", "1/2/1"),
            ("root/a/y", "1/2/3"),
            ("root/b", "1/1"),
            ("", ""),
            ("root/b/z/w", "1/1/5/0.5"),
        ];
        let basis = ShareBasis::new(Resource::from_pairs(20.0, 20.0, &[("pods", 30.0)]));
        let make = |cpu: f64, mem: f64| Resource::from_pairs(cpu, mem, &[("pods", 1.0)]);
        let rows: Vec<(QueuePath<'static>, Resource, Resource)> = jobs
            .iter()
            .map(|&(p, cpu, mem, more_cpu, more_mem)| {
                let (hierarchy, weights) = PATHS[p];
                let path = QueuePath { queue: "q", hierarchy, weights };
                (path, make(cpu, mem), make(cpu + more_cpu, mem + more_mem))
            })
            .collect();

        let mut built = HdrfTree::default();
        let mut sequential = HdrfTree::default();
        let mut attrs = Vec::new();
        for (i, (path, allocated, request)) in rows.iter().enumerate() {
            let attr = JobAttr::new(allocated.clone(), &basis);
            built.total_allocated.add(allocated);
            built.place_job(JobId::from_index(i), &attr, request, *path);
            sequential.total_allocated.add(allocated);
            sequential.update_job(&basis, JobId::from_index(i), &attr, request, *path);
            attrs.push(attr);
        }
        built.recompute_all(&basis);
        prop_assert_eq!(&built, &sequential);

        let mut tree = built;
        for (j, cpu, mem) in updates {
            let j = j % rows.len();
            let (path, _, request) = &rows[j];
            let next = make(cpu, mem);
            tree.total_allocated.sub(&attrs[j].allocated);
            tree.total_allocated.add(&next);
            attrs[j] = JobAttr::new(next, &basis);
            tree.update_job(&basis, JobId::from_index(j), &attrs[j], request, *path);
            let mut full = tree.clone();
            full.recompute_all(&basis);
            prop_assert_eq!(&tree, &full);
        }
    }
}
