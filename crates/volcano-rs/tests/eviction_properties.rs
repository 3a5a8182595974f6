//! Property tests of eviction over many sessions (docs/fairness.md, "Preemption and reclaim
//! without storms"): random clusters of queues (weights, capabilities, guarantees, queue
//! priorities, reclaimable or not) and gangs of several priorities, some running and some
//! waiting, scheduled for up to twelve sessions in a row with preempt and reclaim enabled and
//! every evicted pod recreated Pending by a stand-in controller. Whatever the cluster:
//!
//! * no eviction is undone by the next session: while the pod the room was freed for still
//!   waits, the victim's side (its queue for reclaim, its job for preempt) does not get as much
//!   back on that node as it lost there;
//! * no pod is evicted twice from the same node (a pod and its recreations count as one);
//! * no pair of jobs ping-pongs: if job A lost a pod to job B, B never loses a pod to A;
//! * evictions stop: the run ends with sessions that evict nothing.
//!
//! The checks run with preempt in normal and in topology-aware mode.
//!
//! The same checks fail on the run Volcano's decisions give (`refuseTakeBack: false`) for a
//! cluster from Volcano's own reclaim tests: see `the_checks_catch_a_ping_pong`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use k8s_openapi::jiff::Timestamp;
use proptest::prelude::*;
use serde_json::{Value, json};
use volcano_rs::simulate::{self, ConfFile, Report, SimInput, SimOptions};

/// Proptest cases per property: each runs up to [`SESSIONS`] sessions.
const CASES: u32 = 40;
/// Sessions per run.
const SESSIONS: usize = 12;
/// The final sessions that must evict nothing.
const QUIET_TAIL: usize = 3;

#[derive(Clone, Debug)]
struct QueueGen {
    weight: i32,
    /// Queue priority (orders victims across queues).
    priority: i32,
    reclaimable: bool,
    /// Whole cpus; `None`: no capability.
    capability: Option<u64>,
    /// Whole cpus guaranteed / deserved (capacity); `None`: none.
    deserved: Option<u64>,
}

#[derive(Clone, Debug)]
struct JobGen {
    queue: usize,
    replicas: usize,
    min_member: usize,
    /// Milli-cpu per pod.
    cpu_milli: u64,
    /// 0: no class, 1: low, 2: high.
    priority: usize,
    running: usize,
    preemptable: bool,
}

#[derive(Clone, Debug)]
struct ClusterGen {
    /// Whole cpus per node.
    nodes: Vec<u64>,
    queues: Vec<QueueGen>,
    jobs: Vec<JobGen>,
    capacity_plugin: bool,
}

fn queue_gen() -> impl Strategy<Value = QueueGen> {
    (
        1..4i32,
        0..3i32,
        prop::bool::weighted(0.85),
        prop::option::weighted(0.3, 2..10u64),
        prop::option::weighted(0.6, 1..8u64),
    )
        .prop_map(
            |(weight, priority, reclaimable, capability, deserved)| QueueGen {
                weight,
                priority,
                reclaimable,
                capability,
                deserved,
            },
        )
}

fn job_gen() -> impl Strategy<Value = JobGen> {
    (0..3usize, 1..4usize, 0..3usize, prop::bool::weighted(0.9))
        .prop_flat_map(|(queue, replicas, priority, preemptable)| {
            (
                Just(queue),
                Just(replicas),
                // Half the jobs are loose gangs (minimum one): their pods may be victims.
                prop_oneof![Just(1), 1..=replicas],
                prop::sample::select(vec![500u64, 1000, 1500, 2000, 3000]),
                Just(priority),
                0..=replicas,
                Just(preemptable),
            )
        })
        .prop_map(
            |(queue, replicas, min_member, cpu_milli, priority, running, preemptable)| JobGen {
                queue,
                replicas,
                min_member,
                cpu_milli,
                priority,
                running,
                preemptable,
            },
        )
}

fn cluster_gen() -> impl Strategy<Value = ClusterGen> {
    (
        prop::collection::vec(2..7u64, 1..4),
        prop::collection::vec(queue_gen(), 1..4),
        prop::collection::vec(job_gen(), 1..9),
        any::<bool>(),
    )
        .prop_map(|(nodes, queues, jobs, capacity_plugin)| ClusterGen {
            nodes,
            queues,
            jobs,
            capacity_plugin,
        })
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("the test builds well-formed objects")
}

fn timestamp(seq: usize) -> String {
    format!("2025-12-31T00:{:02}:{:02}Z", seq / 60 % 60, seq % 60)
}

/// Who a pod is: its job (PodGroup name) and queue, by the name of its first incarnation.
#[derive(Clone, Debug)]
struct PodFacts {
    job: String,
    queue: String,
    cpu_milli: u64,
}

struct Built {
    input: SimInput,
    /// Keyed by the first incarnation's `namespace/name`.
    pods: BTreeMap<String, PodFacts>,
}

fn build(cluster: &ClusterGen) -> Built {
    let mut input = SimInput::default();
    let mut free: Vec<(String, u64)> = Vec::new();
    for (i, &cpus) in cluster.nodes.iter().enumerate() {
        let name = format!("n{i}");
        let list = json!({"cpu": cpus.to_string(), "memory": "64Gi", "pods": "110"});
        input.nodes.push(decode(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": list, "capacity": list},
        })));
        free.push((name, cpus * 1000));
    }
    for (i, q) in cluster.queues.iter().enumerate() {
        let mut spec = json!({"weight": q.weight, "reclaimable": q.reclaimable,
                              "priority": q.priority});
        if let Some(cap) = q.capability {
            spec["capability"] = json!({"cpu": cap.to_string()});
        }
        if cluster.capacity_plugin
            && let Some(d) = q.deserved
        {
            let d = q.capability.map_or(d, |c| d.min(c));
            spec["deserved"] = json!({"cpu": d.to_string()});
            spec["guarantee"] = json!({"resource": {"cpu": (d / 2).to_string()}});
        }
        input.queues.push(decode(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": format!("q{i}"), "creationTimestamp": timestamp(i)},
            "spec": spec, "status": {"state": "Open"},
        })));
    }
    for (name, value) in [("low", 10), ("high", 1000)] {
        input.priority_classes.push(decode(json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value,
        })));
    }
    let mut pods = BTreeMap::new();
    let mut seq = 0;
    for (j, job) in cluster.jobs.iter().enumerate() {
        let pg = format!("job{j}");
        let queue = format!("q{}", job.queue % cluster.queues.len());
        let mut running = 0;
        for r in 0..job.replicas {
            seq += 1;
            let name = format!("{pg}-{r}");
            let node = (r < job.running)
                .then(|| free.iter_mut().find(|(_, left)| *left >= job.cpu_milli))
                .flatten()
                .map(|(node, left)| {
                    *left -= job.cpu_milli;
                    node.clone()
                });
            running += usize::from(node.is_some());
            let mut spec = json!({
                "schedulerName": "volcano-rs",
                "containers": [{"name": "main", "image": "busybox",
                    "resources": {"requests": {"cpu": format!("{}m", job.cpu_milli),
                                               "memory": "256Mi"}}}],
            });
            if let Some(n) = &node {
                spec["nodeName"] = json!(n);
            }
            input.pods.push(decode(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                    "creationTimestamp": timestamp(seq),
                    "labels": {"volcano.sh/preemptable": job.preemptable.to_string()},
                    "annotations": {"scheduling.k8s.io/group-name": pg}},
                "spec": spec,
                "status": {"phase": if node.is_some() { "Running" } else { "Pending" }},
            })));
            pods.insert(
                format!("default/{name}"),
                PodFacts {
                    job: pg.clone(),
                    queue: queue.clone(),
                    cpu_milli: job.cpu_milli,
                },
            );
        }
        let mut pg_spec = json!({"minMember": job.min_member, "queue": queue});
        match job.priority {
            1 => pg_spec["priorityClassName"] = json!("low"),
            2 => pg_spec["priorityClassName"] = json!("high"),
            _ => {}
        }
        let phase = match running {
            0 => "Inqueue",
            r if r >= job.min_member => "Running",
            _ => "Inqueue",
        };
        input.pod_groups.push(decode(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": pg, "namespace": "default", "uid": format!("uid-pg-{j}"),
                         "creationTimestamp": timestamp(j)},
            "spec": pg_spec,
            "status": {"phase": phase, "running": running},
        })));
    }
    Built { input, pods }
}

/// Volcano's default tiers with preempt and reclaim, and proportion or capacity.
fn conf(capacity_plugin: bool, refuse_take_back: bool) -> ConfFile {
    conf_with(capacity_plugin, refuse_take_back, false)
}

/// [`conf`], with preempt in topology-aware mode when asked, every feasible node a candidate
/// (so the node choice compares them all).
fn conf_with(capacity_plugin: bool, refuse_take_back: bool, topology_aware: bool) -> ConfFile {
    let queue_plugin = if capacity_plugin {
        "capacity"
    } else {
        "proportion"
    };
    let text = format!(
        r#"actions: "enqueue, allocate, preempt, reclaim, backfill"
configurations:
- name: preempt
  arguments: {{refuseTakeBack: {refuse_take_back}, enableTopologyAwarePreemption: {topology_aware}, minCandidateNodesPercentage: 100}}
- name: reclaim
  arguments: {{refuseTakeBack: {refuse_take_back}}}
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: {queue_plugin}
  - name: nodeorder
  - name: binpack
"#
    );
    ConfFile {
        name: "eviction-properties.conf".into(),
        text,
    }
}

fn run(input: &SimInput, conf: ConfFile) -> Report {
    let now: Timestamp = "2026-01-01T00:00:00Z".parse().expect("valid timestamp");
    let mut opts = SimOptions::new(now);
    opts.scheduler_conf = Some(conf);
    opts.max_cycles = SESSIONS;
    opts.recreate_evicted = true;
    simulate::run(input, &opts).expect("the configuration and built objects are valid")
}

/// The first incarnation of a pod: `ns/job0-1-r2` → `ns/job0-1`.
fn lineage(pod: &str) -> &str {
    match pod.rfind("-r") {
        Some(i) if pod[i + 2..].chars().all(|c| c.is_ascii_digit()) && i + 2 < pod.len() => {
            lineage(&pod[..i])
        }
        _ => pod,
    }
}

fn facts<'a>(pods: &'a BTreeMap<String, PodFacts>, pod: &str) -> Result<&'a PodFacts, String> {
    pods.get(lineage(pod))
        .ok_or_else(|| format!("{pod}: not a pod of the cluster"))
}

/// The side an eviction takes from: the victim's queue (reclaim) or job (anything else).
fn side(f: &PodFacts, action: &str) -> String {
    if action == "reclaim" {
        format!("queue {}", f.queue)
    } else {
        format!("job {}", f.job)
    }
}

/// Every check; the first violation found.
fn check(pods: &BTreeMap<String, PodFacts>, report: &Report) -> Result<(), String> {
    let cycles = &report.cycles;
    let mut evicted_from: BTreeSet<(String, String)> = BTreeSet::new();
    let mut lost_to: BTreeSet<(String, String)> = BTreeSet::new();
    for (k, cycle) in cycles.iter().enumerate() {
        // What each side lost on each node in this cycle, and for whom.
        let mut lost: BTreeMap<(String, String), (u64, String, BTreeSet<String>)> = BTreeMap::new();
        for e in &cycle.evictions {
            let victim = facts(pods, &e.pod)?;
            if !evicted_from.insert((lineage(&e.pod).to_string(), e.node.clone())) {
                return Err(format!(
                    "cycle {}: {} evicted from {} a second time",
                    cycle.cycle, e.pod, e.node
                ));
            }
            // The pod it made room for (recorded with the eviction by preempt and reclaim).
            let Some(p) = &e.preemptor else {
                return Err(format!(
                    "cycle {}: {} evicted for no pod",
                    cycle.cycle, e.pod
                ));
            };
            let winner = facts(pods, p)?;
            if lost_to.contains(&(winner.job.clone(), victim.job.clone())) {
                return Err(format!(
                    "cycle {}: job {} loses {} to job {}, which lost a pod to it before",
                    cycle.cycle, victim.job, e.pod, winner.job
                ));
            }
            lost_to.insert((victim.job.clone(), winner.job.clone()));
            let entry = lost
                .entry((e.node.clone(), side(victim, &e.action)))
                .or_insert((0, e.action.clone(), BTreeSet::new()));
            entry.0 += victim.cpu_milli;
            entry.2.insert(p.clone());
        }
        // Undone: in the next session, while the pods the room was freed for still wait, the
        // victims' side gets at least as much back on that node as it lost there.
        let Some(next) = cycles.get(k + 1) else {
            continue;
        };
        for ((node, victim_side), (amount, action, preemptors)) in &lost {
            let waiting: Vec<&String> = preemptors
                .iter()
                .filter(|p| !next.binds.iter().any(|b| &b.pod == *p))
                .collect();
            if waiting.is_empty() {
                continue;
            }
            let mut back = 0;
            for b in next.binds.iter().filter(|b| &b.node == node) {
                let f = facts(pods, &b.pod)?;
                if side(f, action) == *victim_side {
                    back += f.cpu_milli;
                }
            }
            if back >= *amount {
                return Err(format!(
                    "cycle {}: {victim_side} takes back on {node} the {amount}m cpu {action} \
                     freed in cycle {}, while {waiting:?} still wait",
                    next.cycle, cycle.cycle
                ));
            }
        }
    }
    let tail = cycles.len().saturating_sub(QUIET_TAIL);
    if cycles.len() == SESSIONS && cycles[tail..].iter().any(|c| !c.evictions.is_empty()) {
        return Err(format!(
            "evictions still happen in the last {QUIET_TAIL} of {SESSIONS} sessions"
        ));
    }
    Ok(())
}

proptest! {
    // A fixed seed keeps `make test` reproducible; PROPTEST_RNG_SEED is not read here, so to
    // explore more clusters raise PROPTEST_CASES or change the seed.
    #![proptest_config(ProptestConfig {
        cases: CASES,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x005e_ed14),
        ..ProptestConfig::default()
    })]

    #[test]
    fn evictions_last_and_never_ping_pong(cluster in cluster_gen()) {
        let built = build(&cluster);
        let report = run(&built.input, conf(cluster.capacity_plugin, true));
        if let Err(problem) = check(&built.pods, &report) {
            let cycles: Vec<_> = report.cycles.iter().map(|c| (&c.binds, &c.pipelined, &c.evictions)).collect();
            prop_assert!(false, "{problem}\ncycles: {cycles:#?}");
        }
    }

    #[test]
    fn topology_aware_evictions_last_and_never_ping_pong(cluster in cluster_gen()) {
        let built = build(&cluster);
        let report = run(&built.input, conf_with(cluster.capacity_plugin, true, true));
        if let Err(problem) = check(&built.pods, &report) {
            let cycles: Vec<_> = report.cycles.iter().map(|c| (&c.binds, &c.pipelined, &c.evictions)).collect();
            prop_assert!(false, "{problem}\ncycles: {cycles:#?}");
        }
    }
}

/// A fixed cluster where a high-priority pod preempts one of a low-priority job's two pods
/// (its gang minimum of one allows it): the eviction happens and passes the checks.
#[test]
fn a_preemption_passes_the_checks() {
    let cluster = ClusterGen {
        nodes: vec![4],
        queues: vec![QueueGen {
            weight: 1,
            priority: 0,
            reclaimable: true,
            capability: None,
            deserved: None,
        }],
        jobs: vec![
            JobGen {
                queue: 0,
                replicas: 2,
                min_member: 1,
                cpu_milli: 2000,
                priority: 1,
                running: 2,
                preemptable: true,
            },
            JobGen {
                queue: 0,
                replicas: 1,
                min_member: 1,
                cpu_milli: 2000,
                priority: 2,
                running: 0,
                preemptable: true,
            },
        ],
        capacity_plugin: false,
    };
    let built = build(&cluster);
    let report = run(&built.input, conf(false, true));
    let evictions: usize = report.cycles.iter().map(|c| c.evictions.len()).sum();
    assert_eq!(evictions, 1, "{:#?}\n{:#?}", report.cycles, report.pods);
    check(&built.pods, &report).expect("a lasting preemption");
    assert_eq!(report.pods["default/job1-0"].phase, "Running");
}

/// What a fixed sample of generated clusters gives: runs that evict, evictions by action,
/// and the violations found.
struct Sample {
    runs: usize,
    runs_with_evictions: usize,
    by_action: BTreeMap<String, usize>,
    violations: Vec<String>,
}

fn sample(refuse_take_back: bool, topology_aware: bool) -> Sample {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let mut out = Sample {
        runs: 40,
        runs_with_evictions: 0,
        by_action: BTreeMap::new(),
        violations: Vec::new(),
    };
    for _ in 0..out.runs {
        let cluster = cluster_gen()
            .new_tree(&mut runner)
            .expect("a cluster")
            .current();
        let built = build(&cluster);
        let report = run(
            &built.input,
            conf_with(cluster.capacity_plugin, refuse_take_back, topology_aware),
        );
        let mut any = false;
        for e in report.cycles.iter().flat_map(|c| &c.evictions) {
            *out.by_action.entry(e.action.clone()).or_default() += 1;
            any = true;
        }
        out.runs_with_evictions += usize::from(any);
        if let Err(problem) = check(&built.pods, &report) {
            out.violations.push(problem);
        }
    }
    out
}

/// The generated clusters do evict, by preempt and by reclaim, so the property is not vacuous;
/// and with the take-back rule off (Volcano's decisions) the same sample breaks it.
#[test]
fn the_generator_makes_evictions_that_the_rule_keeps_lasting() {
    let on = sample(true, false);
    println!(
        "rule on: {} of {} runs evict: {:?}",
        on.runs_with_evictions, on.runs, on.by_action
    );
    assert!(on.violations.is_empty(), "{:#?}", on.violations);
    assert!(
        on.runs_with_evictions >= on.runs / 8,
        "{}",
        on.runs_with_evictions
    );
    for action in ["preempt", "reclaim"] {
        assert!(
            on.by_action.get(action).is_some_and(|&n| n > 0),
            "{:?}",
            on.by_action
        );
    }
    let off = sample(false, false);
    println!(
        "rule off: {} of {} runs evict: {:?}; violations: {:#?}",
        off.runs_with_evictions, off.runs, off.by_action, off.violations
    );
    assert!(
        !off.violations.is_empty(),
        "Volcano's decisions should take back"
    );
}

/// Volcano's decision on a case of its own reclaim tests, followed with the evicted pods
/// recreated: the checks see the take-back and the ping-pong.
#[test]
fn the_checks_catch_a_ping_pong() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/scenarios/reclaim-pingpong-node-idle-counts");
    let input = SimInput::from_files(&[dir.join("cluster.yaml")]).expect("the scenario loads");
    let text = std::fs::read_to_string(dir.join("scheduler.conf")).expect("the scenario's conf");
    let report = run(
        &input,
        ConfFile {
            name: "scheduler.conf".into(),
            text,
        },
    );
    let mut pods = BTreeMap::new();
    for (pod, job, queue) in [
        ("c1/preemptee1-1", "pg1", "q1"),
        ("c1/preemptee2-1", "pg2", "q2"),
        ("c1/preemptor1", "pg3", "q3"),
    ] {
        pods.insert(
            pod.to_string(),
            PodFacts {
                job: job.into(),
                queue: queue.into(),
                cpu_milli: 1000,
            },
        );
    }
    let problem = check(&pods, &report).expect_err("Volcano's decisions ping-pong");
    assert!(problem.contains("takes back"), "{problem}");
    assert_eq!(lineage("c1/preemptee1-1-r12"), "c1/preemptee1-1");
    assert_eq!(lineage("c1/a-r1-r2"), "c1/a");
    assert_eq!(lineage("c1/web-rx"), "c1/web-rx");
}

/// The same sample with preempt in topology-aware mode: it preempts too, so its property is not
/// vacuous either, and breaks none of the checks.
#[test]
fn the_generator_makes_topology_aware_preemptions() {
    let tap = sample(true, true);
    println!(
        "topology-aware: {} of {} runs evict: {:?}",
        tap.runs_with_evictions, tap.runs, tap.by_action
    );
    assert!(tap.violations.is_empty(), "{:#?}", tap.violations);
    assert!(
        tap.by_action.get("preempt").is_some_and(|&n| n > 0),
        "{:?}",
        tap.by_action
    );
}
