//! Property tests of the engine, driven through the simulator library (DESIGN.md "Tests"):
//! random small clusters, one scheduling session with the embedded default configuration, and
//! the invariants every session must keep whatever the input:
//!
//! * no node holds more than its allocatable cpu, memory or pod count (pods already there —
//!   ours, other schedulers', terminating ones — plus the pods bound by the session);
//! * the session never binds part of a gang: a PodGroup that got binds has at least `minMember`
//!   members running or bound afterwards;
//! * no pod is bound twice, and no pod that already had a node is bound;
//! * a bound pod never lands on a node whose `NoSchedule` taint it does not tolerate;
//! * the outcome is deterministic: the same input gives byte-identical JSON.
//!
//! Gang members always request resources: a pending best-effort member counts as ready for the
//! gang (spec/plugins-core.md §1.6), which lets Volcano itself bind a gang below `minMember`
//! when that member then finds no node — not a property of the engine worth asserting.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::jiff::Timestamp;
use proptest::prelude::*;
use serde_json::{Value, json};
use volcano_rs::simulate::{self, Report, SimInput, SimOptions};

/// Node taint that only some pods tolerate.
const TAINT_KEY: &str = "dedicated";
const TAINT_VALUE: &str = "batch";

/// Most proptest cases per property: the suite must stay fast.
const CASES: u32 = 48;

#[derive(Clone, Debug)]
struct NodeGen {
    cpu_milli: u64,
    memory_mi: u64,
    pods: u64,
    tainted: bool,
}

#[derive(Clone, Debug)]
struct JobGen {
    replicas: usize,
    min_member: usize,
    queue: usize,
    cpu_milli: u64,
    memory_mi: u64,
    tolerates: bool,
    with_min_resources: bool,
    /// PodGroup `priorityClassName`: none, "low" or "high".
    priority_class: Option<&'static str>,
    /// Members already running (placed first-fit while building the cluster, if they fit).
    running: usize,
}

#[derive(Clone, Debug)]
struct StandaloneGen {
    /// 0 means best effort (no requests at all).
    cpu_milli: u64,
    memory_mi: u64,
    /// `None`: no queue annotation (the default queue).
    queue: Option<usize>,
    tolerates: bool,
}

#[derive(Clone, Debug)]
struct ForeignGen {
    cpu_milli: u64,
    memory_mi: u64,
    terminating: bool,
}

#[derive(Clone, Debug)]
struct ClusterGen {
    nodes: Vec<NodeGen>,
    queue_weights: Vec<i32>,
    jobs: Vec<JobGen>,
    standalone: Vec<StandaloneGen>,
    foreign: Vec<ForeignGen>,
}

fn node_gen() -> impl Strategy<Value = NodeGen> {
    (2u64..=16, 1u64..=16, 1u64..=10, prop::bool::weighted(0.25)).prop_map(
        |(half_cores, gib, pods, tainted)| NodeGen {
            cpu_milli: half_cores * 500,
            memory_mi: gib * 1024,
            pods,
            tainted,
        },
    )
}

fn job_gen() -> impl Strategy<Value = JobGen> {
    (
        1usize..=4,
        1usize..=4,
        0usize..3,
        (1u64..=6, 1u64..=8),
        any::<bool>(),
        prop::bool::weighted(0.3),
        prop_oneof![Just(None), Just(Some("low")), Just(Some("high"))],
        0usize..=2,
    )
        .prop_map(
            |(
                replicas,
                min,
                queue,
                (cpu, mem),
                tolerates,
                with_min_resources,
                priority_class,
                running,
            )| {
                JobGen {
                    replicas,
                    min_member: min.min(replicas),
                    queue,
                    cpu_milli: cpu * 250,
                    memory_mi: mem * 256,
                    tolerates,
                    with_min_resources,
                    priority_class,
                    running: running.min(replicas),
                }
            },
        )
}

fn standalone_gen() -> impl Strategy<Value = StandaloneGen> {
    (
        prop_oneof![Just(0u64), 1u64..=6],
        1u64..=8,
        prop::option::of(0usize..3),
        any::<bool>(),
    )
        .prop_map(|(cpu, mem, queue, tolerates)| StandaloneGen {
            cpu_milli: cpu * 250,
            memory_mi: if cpu == 0 { 0 } else { mem * 256 },
            queue,
            tolerates,
        })
}

fn foreign_gen() -> impl Strategy<Value = ForeignGen> {
    (1u64..=8, 1u64..=8, prop::bool::weighted(0.3)).prop_map(|(cpu, mem, terminating)| ForeignGen {
        cpu_milli: cpu * 250,
        memory_mi: mem * 256,
        terminating,
    })
}

fn cluster_gen() -> impl Strategy<Value = ClusterGen> {
    (
        prop::collection::vec(node_gen(), 1..=6),
        prop::collection::vec(1i32..=4, 1..=3),
        prop::collection::vec(job_gen(), 1..=8),
        prop::collection::vec(standalone_gen(), 0..=4),
        prop::collection::vec(foreign_gen(), 0..=3),
    )
        .prop_map(
            |(nodes, queue_weights, jobs, standalone, foreign)| ClusterGen {
                nodes,
                queue_weights,
                jobs,
                standalone,
                foreign,
            },
        )
}

/// What a pod asks for, in the units the checks use.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Usage {
    cpu_milli: u64,
    memory_mi: u64,
    pods: u64,
}

impl Usage {
    fn of(cpu_milli: u64, memory_mi: u64) -> Usage {
        Usage {
            cpu_milli,
            memory_mi,
            pods: 1,
        }
    }

    fn plus(self, o: Usage) -> Usage {
        Usage {
            cpu_milli: self.cpu_milli + o.cpu_milli,
            memory_mi: self.memory_mi + o.memory_mi,
            pods: self.pods + o.pods,
        }
    }

    fn fits_in(self, cap: Usage) -> bool {
        self.cpu_milli <= cap.cpu_milli && self.memory_mi <= cap.memory_mi && self.pods <= cap.pods
    }
}

/// Facts about one pod of ours the checks need.
#[derive(Clone, Debug)]
struct PodFacts {
    usage: Usage,
    /// The PodGroup it belongs to (`ns/name`), if any.
    pod_group: Option<String>,
    tolerates: bool,
    /// Node it already had before the session.
    pre_node: Option<String>,
}

/// The built cluster: the simulator input and what the checks need to know about it.
#[derive(Clone)]
struct Built {
    input: SimInput,
    allocatable: BTreeMap<String, Usage>,
    tainted: BTreeSet<String>,
    /// Usage of pods that are not ours, per node.
    foreign_usage: BTreeMap<String, Usage>,
    pods: BTreeMap<String, PodFacts>,
    /// PodGroup `ns/name` → minMember.
    min_member: BTreeMap<String, usize>,
}

fn timestamp(seq: usize) -> String {
    format!(
        "2025-12-31T{:02}:{:02}:{:02}Z",
        seq / 3600 % 24,
        seq / 60 % 60,
        seq % 60
    )
}

fn resources(cpu_milli: u64, memory_mi: u64) -> Value {
    if cpu_milli == 0 && memory_mi == 0 {
        json!({})
    } else {
        json!({"requests": {"cpu": format!("{cpu_milli}m"), "memory": format!("{memory_mi}Mi")}})
    }
}

fn toleration(tolerates: bool) -> Value {
    if tolerates {
        json!([{"key": TAINT_KEY, "operator": "Equal", "value": TAINT_VALUE, "effect": "NoSchedule"}])
    } else {
        json!([])
    }
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("the test builds well-formed objects")
}

/// Places a pod first-fit on a node it may use, if any; records the usage.
fn first_fit(
    used: &mut BTreeMap<String, Usage>,
    allocatable: &BTreeMap<String, Usage>,
    tainted: &BTreeSet<String>,
    usage: Usage,
    tolerates: bool,
) -> Option<String> {
    let node = allocatable.iter().find_map(|(name, cap)| {
        let current = used.get(name).copied().unwrap_or_default();
        let allowed = tolerates || !tainted.contains(name);
        (allowed && current.plus(usage).fits_in(*cap)).then(|| name.clone())
    })?;
    let entry = used.entry(node.clone()).or_default();
    *entry = entry.plus(usage);
    Some(node)
}

fn build(cluster: &ClusterGen) -> Built {
    let mut input = SimInput::default();
    let mut allocatable = BTreeMap::new();
    let mut tainted = BTreeSet::new();
    for (i, n) in cluster.nodes.iter().enumerate() {
        let name = format!("n{i}");
        let taints = if n.tainted {
            json!([{"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"}])
        } else {
            json!([])
        };
        let list = json!({
            "cpu": format!("{}m", n.cpu_milli),
            "memory": format!("{}Mi", n.memory_mi),
            "pods": n.pods.to_string(),
        });
        input.nodes.push(decode(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": taints},
            "status": {"allocatable": list, "capacity": list},
        })));
        allocatable.insert(
            name.clone(),
            Usage {
                cpu_milli: n.cpu_milli,
                memory_mi: n.memory_mi,
                pods: n.pods,
            },
        );
        if n.tainted {
            tainted.insert(name);
        }
    }

    let queue_names: Vec<String> = (0..cluster.queue_weights.len())
        .map(|i| format!("q{i}"))
        .collect();
    for (i, (name, weight)) in queue_names.iter().zip(&cluster.queue_weights).enumerate() {
        input.queues.push(decode(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": name, "creationTimestamp": timestamp(i)},
            "spec": {"weight": weight, "reclaimable": true},
            "status": {"state": "Open"},
        })));
    }
    for (name, value) in [("low", 10), ("high", 1000)] {
        input.priority_classes.push(decode(json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value,
        })));
    }

    // Pods already on nodes go first, so that the cluster starts within its capacity.
    let mut used: BTreeMap<String, Usage> = BTreeMap::new();
    let mut foreign_usage: BTreeMap<String, Usage> = BTreeMap::new();
    for (i, f) in cluster.foreign.iter().enumerate() {
        let usage = Usage::of(f.cpu_milli, f.memory_mi);
        let Some(node) = first_fit(&mut used, &allocatable, &tainted, usage, false) else {
            continue;
        };
        let entry = foreign_usage.entry(node.clone()).or_default();
        *entry = entry.plus(usage);
        let mut metadata = json!({
            "name": format!("foreign-{i}"), "namespace": "other", "uid": format!("uid-foreign-{i}"),
            "creationTimestamp": timestamp(i),
        });
        if f.terminating {
            metadata["deletionTimestamp"] = json!("2025-12-31T23:00:00Z");
        }
        input.pods.push(decode(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"schedulerName": "default-scheduler", "nodeName": node,
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": resources(f.cpu_milli, f.memory_mi)}]},
            "status": {"phase": "Running"},
        })));
    }

    let mut pods = BTreeMap::new();
    let mut min_member = BTreeMap::new();
    let mut seq = 0;
    for (j, job) in cluster.jobs.iter().enumerate() {
        let pg = format!("job-{j}");
        let key = format!("default/{pg}");
        let queue = &queue_names[job.queue % queue_names.len()];
        let usage = Usage::of(job.cpu_milli, job.memory_mi);
        let mut running = 0;
        for r in 0..job.replicas {
            let name = format!("{pg}-{r}");
            let node = if r < job.running {
                first_fit(&mut used, &allocatable, &tainted, usage, job.tolerates)
            } else {
                None
            };
            running += usize::from(node.is_some());
            seq += 1;
            let mut spec = json!({
                "schedulerName": "volcano-rs",
                "tolerations": toleration(job.tolerates),
                "containers": [{"name": "main", "image": "busybox",
                                "resources": resources(job.cpu_milli, job.memory_mi)}],
            });
            if let Some(n) = &node {
                spec["nodeName"] = json!(n);
            }
            input.pods.push(decode(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                             "creationTimestamp": timestamp(seq),
                             "annotations": {"scheduling.k8s.io/group-name": pg}},
                "spec": spec,
                "status": {"phase": if node.is_some() { "Running" } else { "Pending" }},
            })));
            pods.insert(
                format!("default/{name}"),
                PodFacts {
                    usage,
                    pod_group: Some(key.clone()),
                    tolerates: job.tolerates,
                    pre_node: node,
                },
            );
        }
        let mut pg_spec = json!({"minMember": job.min_member, "queue": queue});
        if job.with_min_resources {
            let n = job.min_member as u64;
            pg_spec["minResources"] = json!({
                "cpu": format!("{}m", job.cpu_milli * n),
                "memory": format!("{}Mi", job.memory_mi * n),
            });
        }
        if let Some(class) = job.priority_class {
            pg_spec["priorityClassName"] = json!(class);
        }
        let phase = match running {
            0 => "Pending",
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
        min_member.insert(key, job.min_member);
    }

    for (i, s) in cluster.standalone.iter().enumerate() {
        let name = format!("solo-{i}");
        seq += 1;
        let mut metadata = json!({
            "name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "creationTimestamp": timestamp(seq),
        });
        if let Some(q) = s.queue {
            let queue = &queue_names[q % queue_names.len()];
            metadata["annotations"] = json!({"scheduling.volcano.sh/queue-name": queue});
        }
        input.pods.push(decode(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"schedulerName": "volcano-rs", "tolerations": toleration(s.tolerates),
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": resources(s.cpu_milli, s.memory_mi)}]},
            "status": {"phase": "Pending"},
        })));
        pods.insert(
            format!("default/{name}"),
            PodFacts {
                usage: Usage::of(s.cpu_milli, s.memory_mi),
                pod_group: None,
                tolerates: s.tolerates,
                pre_node: None,
            },
        );
    }

    Built {
        input,
        allocatable,
        tainted,
        foreign_usage,
        pods,
        min_member,
    }
}

/// One session with the embedded default configuration.
fn one_session(input: &SimInput) -> Report {
    let now: Timestamp = "2026-01-01T00:00:00Z".parse().expect("valid timestamp");
    let mut opts = SimOptions::new(now);
    opts.max_cycles = 1;
    simulate::run(input, &opts).expect("the default configuration and built objects are valid")
}

/// The node of a pod of ours after the session.
fn final_node<'r>(report: &'r Report, pod: &str) -> Option<&'r str> {
    report.pods.get(pod).and_then(|p| p.node.as_deref())
}

/// No node holds more than its allocatable cpu, memory or pod count.
fn check_capacity(built: &Built, report: &Report) -> Result<(), String> {
    let mut usage = built.foreign_usage.clone();
    for (key, facts) in &built.pods {
        if let Some(node) = final_node(report, key) {
            let entry = usage.entry(node.to_string()).or_default();
            *entry = entry.plus(facts.usage);
        }
    }
    for (node, used) in &usage {
        let cap = built.allocatable.get(node).copied().unwrap_or_default();
        if !used.fits_in(cap) {
            return Err(format!("node {node}: {used:?} exceeds {cap:?}"));
        }
    }
    Ok(())
}

/// A PodGroup that got binds has at least minMember members running or bound.
fn check_gangs(built: &Built, report: &Report) -> Result<(), String> {
    let mut bound: BTreeMap<&str, usize> = BTreeMap::new();
    for b in report.cycles.iter().flat_map(|c| &c.binds) {
        if let Some(pg) = built.pods.get(&b.pod).and_then(|f| f.pod_group.as_deref()) {
            *bound.entry(pg).or_default() += 1;
        }
    }
    for (pg, n) in bound {
        let running_before = built
            .pods
            .values()
            .filter(|f| f.pod_group.as_deref() == Some(pg) && f.pre_node.is_some())
            .count();
        let min = built.min_member.get(pg).copied().unwrap_or(0);
        if running_before + n < min {
            return Err(format!(
                "{pg}: {running_before} running + {n} bound < minMember {min}"
            ));
        }
    }
    Ok(())
}

/// Every bind is of a pending pod of ours, once, to a known node it may use, and the pod ends
/// up there.
fn check_binds(built: &Built, report: &Report) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for b in report.cycles.iter().flat_map(|c| &c.binds) {
        if !seen.insert(b.pod.as_str()) {
            return Err(format!("{} bound twice", b.pod));
        }
        let facts = built
            .pods
            .get(&b.pod)
            .ok_or_else(|| format!("{} is not a pod of ours", b.pod))?;
        if facts.pre_node.is_some() {
            return Err(format!("{} already had a node", b.pod));
        }
        if !built.allocatable.contains_key(&b.node) {
            return Err(format!("{} bound to unknown node {}", b.pod, b.node));
        }
        if !facts.tolerates && built.tainted.contains(&b.node) {
            return Err(format!(
                "{} bound to tainted {} without toleration",
                b.pod, b.node
            ));
        }
        if final_node(report, &b.pod) != Some(b.node.as_str()) {
            return Err(format!(
                "{} was bound to {} but is not there",
                b.pod, b.node
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn no_node_exceeds_its_allocatable(cluster in cluster_gen()) {
        let built = build(&cluster);
        let report = one_session(&built.input);
        prop_assert_eq!(report.cycles.len(), 1);
        let checked = check_capacity(&built, &report);
        prop_assert!(checked.is_ok(), "{:?}", checked);
    }

    #[test]
    fn a_session_never_binds_part_of_a_gang(cluster in cluster_gen()) {
        let built = build(&cluster);
        let report = one_session(&built.input);
        let checked = check_gangs(&built, &report);
        prop_assert!(checked.is_ok(), "{:?}", checked);
    }

    #[test]
    fn binds_are_unique_new_and_respect_taints(cluster in cluster_gen()) {
        let built = build(&cluster);
        let report = one_session(&built.input);
        let checked = check_binds(&built, &report);
        prop_assert!(checked.is_ok(), "{:?}", checked);
    }

    #[test]
    fn the_same_input_gives_the_same_report(cluster in cluster_gen()) {
        let built = build(&cluster);
        let first = one_session(&built.input).to_json();
        let second = one_session(&built.input).to_json();
        prop_assert_eq!(first, second);
    }
}

/// A fixed cluster: one tainted 2-cpu node and a gang of two 1-cpu pods (minMember 2) that
/// tolerates the taint.
fn small_gang_cluster() -> ClusterGen {
    ClusterGen {
        nodes: vec![NodeGen {
            cpu_milli: 2000,
            memory_mi: 4096,
            pods: 10,
            tainted: true,
        }],
        queue_weights: vec![1],
        jobs: vec![JobGen {
            replicas: 2,
            min_member: 2,
            queue: 0,
            cpu_milli: 1000,
            memory_mi: 1024,
            tolerates: true,
            with_min_resources: false,
            priority_class: None,
            running: 0,
        }],
        standalone: Vec::new(),
        foreign: Vec::new(),
    }
}

/// The generator builds clusters the engine schedules (so the properties are not vacuous), and
/// the checks pass on the real outcome.
#[test]
fn a_built_gang_is_bound_and_passes_every_check() {
    let built = build(&small_gang_cluster());
    let report = one_session(&built.input);
    let bound: Vec<&str> = report.cycles[0]
        .binds
        .iter()
        .map(|b| b.pod.as_str())
        .collect();
    assert_eq!(bound, ["default/job-0-0", "default/job-0-1"]);
    assert_eq!(check_capacity(&built, &report), Ok(()));
    assert_eq!(check_gangs(&built, &report), Ok(()));
    assert_eq!(check_binds(&built, &report), Ok(()));
}

/// Each check reports the violation it exists for.
#[test]
fn the_checks_catch_violations() {
    let built = build(&small_gang_cluster());
    let report = one_session(&built.input);

    // A third 1-cpu pod on the full 2-cpu node.
    let mut overfull = report.clone();
    let mut built_overfull = built.clone();
    built_overfull.pods.insert(
        "default/extra".to_string(),
        PodFacts {
            usage: Usage::of(1000, 1024),
            pod_group: None,
            tolerates: true,
            pre_node: None,
        },
    );
    if let Some(p) = overfull.pods.get("default/job-0-0").cloned() {
        overfull.pods.insert("default/extra".to_string(), p);
    }
    assert!(check_capacity(&built_overfull, &overfull).is_err());

    // Only one member of the minMember-2 gang bound.
    let mut partial = report.clone();
    partial.cycles[0].binds.truncate(1);
    assert!(check_gangs(&built, &partial).is_err());

    // The same pod bound twice.
    let mut twice = report.clone();
    let first = twice.cycles[0].binds[0].clone();
    twice.cycles[0].binds.push(first);
    assert!(check_binds(&built, &twice).is_err());

    // A pod without toleration on the tainted node.
    let mut intolerant = built.clone();
    for facts in intolerant.pods.values_mut() {
        facts.tolerates = false;
    }
    assert!(check_binds(&intolerant, &report).is_err());
}
