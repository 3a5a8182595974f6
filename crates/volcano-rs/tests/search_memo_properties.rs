//! The allocate search memo changes no decision: random clusters, run for several sessions with
//! the memo on and off, give identical reports (binds, pipelines, evictions, pod phases and
//! messages, PodGroup and queue status), under Volcano's default configuration and under one
//! with preempt and reclaim.
//!
//! The clusters mix what the memo must get right: identical pods across jobs (one scheduling
//! class shared by several jobs), pods that differ only in what the memo may ignore (the task
//! index), node selectors, preferred node affinity, `NoSchedule` and `PreferNoSchedule` taints,
//! cordoned nodes, required pod anti-affinity (with selectors the label index narrows and one
//! it cannot) and preferred pod affinity, topology spread of both kinds (with nodes lacking the
//! zone label), host ports, images, several queues and priorities, gangs that cannot all fit,
//! pods already running, and task roles (whose error cache wants every failure's reasons).
//!
//! The memo switch also turns off what `predicates` keeps per scheduling class for the session
//! (the stable filters' verdicts, with the nodes no cordon or taint can refuse and the node
//! affinity matched through label columns; the spread domains, shared by pods that read the
//! same of the nodes), its index of placed pods' required anti-affinity terms by label, the
//! inter-pod affinity counts looked up by node position, and what `nodeorder` keeps per class
//! (images, pod requests unless a container status reports resources) or skips (nodes without
//! a `PreferNoSchedule` taint): with it off, every node and every placed pod is looked at
//! afresh, as Volcano does, so these tests cover those too. For that the clusters also have
//! required node affinity (with a term on the node name, which no label column holds),
//! anti-affinity over zones as well as nodes, and running pods whose status reports resized
//! requests.
//!
//! The same clusters also show that the rows a session's build takes over from the session
//! before (`framework::table_build`: the rows of unchanged pods, PodGroups and nodes that the
//! last session left unchanged) change no decision: the `carried_rows_*` properties run each
//! cluster with every build made afresh and with rows taken over, under the same three
//! configurations. The simulator assumes each session's binds and evictions before the next,
//! as the daemon does, so every build after the first takes some rows over and makes the rest.

use proptest::prelude::*;
use serde_json::{Value, json};
use volcano_rs::simulate::{self, ConfFile, SimInput, SimOptions};

const CASES: u32 = 40;
const SESSIONS: usize = 4;

#[derive(Clone, Debug)]
struct NodeGen {
    cpu: u64,
    pods: u64,
    /// 3: no zone label (spread constraints then miss their key there).
    zone: usize,
    /// 0 none, 1 `NoSchedule` dedicated, 2 `PreferNoSchedule` soft.
    taint: u8,
    has_image: bool,
    /// `spec.unschedulable` (cordoned).
    cordoned: bool,
}

#[derive(Clone, Debug)]
struct JobGen {
    replicas: usize,
    min_member: usize,
    queue: usize,
    /// Index into [`SHAPES`]: few shapes, so jobs often share a class.
    shape: usize,
    /// Label `app` value: shared between jobs when equal.
    app: usize,
    tolerate_dedicated: bool,
    tolerate_soft: bool,
    zone_selector: Option<usize>,
    preferred_zone: Option<usize>,
    anti_affinity: bool,
    preferred_pod_affinity: bool,
    /// 0 none, 1 `DoNotSchedule`, 2 `ScheduleAnyway`.
    spread: u8,
    host_port: bool,
    high_priority: bool,
    running: usize,
    /// A task role (`volcano.sh/task-spec`): the role's error cache then keeps the reasons of
    /// every failing node, which the searches otherwise work out only when nothing fits.
    role: bool,
    /// Required node affinity: 0 none, 1 `In` two zones, 2 `NotIn` one zone and `Exists`,
    /// 3 a term on the node name OR-ed with a zone term (the name is not in a label column).
    node_affinity: u8,
    /// The required anti-affinity's topology is the zone rather than the node.
    anti_affinity_zone: bool,
    /// The running members' container status reports resources (an in-place resize), which
    /// the scores' pod requests then read.
    resized: bool,
    /// Odd members take the next shape: a job of two classes, where one may fit after the
    /// other failed (a failed search is reused only for a task answered alike).
    mixed_shapes: bool,
    /// Members' labels: 0 their index as a label too, 1 the job's `app` label alone (a spread
    /// or anti-affinity task's failed search may then be reused by the next), 2 odd members
    /// with the next `app` (the same class, answered differently by spread).
    labels: u8,
}

const SHAPES: [(u64, u64); 3] = [(500, 512), (1000, 1024), (250, 256)];

fn node_gen() -> impl Strategy<Value = NodeGen> {
    (
        prop::sample::select(vec![2000u64, 4000, 8000]),
        3u64..12,
        prop::sample::select(vec![0usize, 1, 2, 0, 1, 2, 3]),
        prop::sample::select(vec![0u8, 0, 0, 1, 2]),
        any::<bool>(),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(cpu, pods, zone, taint, has_image, cordoned)| NodeGen {
            cpu,
            pods,
            zone,
            taint,
            has_image,
            cordoned,
        })
}

fn job_gen(replicas: std::ops::Range<usize>) -> impl Strategy<Value = JobGen> {
    (
        (replicas, 0usize..3, 0usize..3, 0usize..3),
        (
            any::<bool>(),
            any::<bool>(),
            prop::option::weighted(0.2, 0usize..3),
        ),
        (
            prop::option::weighted(0.2, 0usize..3),
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.15),
            prop::bool::weighted(0.3),
        ),
        (
            prop::sample::select(vec![0u8, 0, 0, 1, 2]),
            prop::bool::weighted(0.15),
            prop::bool::weighted(0.3),
            0usize..3,
            0usize..7,
        ),
        (
            prop::sample::select(vec![0u8, 0, 0, 1, 2, 3]),
            prop::bool::weighted(0.3),
            prop::bool::weighted(0.3),
        ),
        (
            prop::bool::weighted(0.3),
            prop::sample::select(vec![0u8, 1, 1, 2, 2]),
        ),
    )
        .prop_map(
            |(
                (replicas, queue, shape, app),
                (tolerate_dedicated, tolerate_soft, zone_selector),
                (preferred_zone, anti_affinity, preferred_pod_affinity, role),
                (spread, host_port, high_priority, running, min_seed),
                (node_affinity, anti_affinity_zone, resized),
                (mixed_shapes, labels),
            )| JobGen {
                replicas,
                min_member: 1 + min_seed % replicas,
                queue,
                shape,
                app,
                tolerate_dedicated,
                tolerate_soft,
                zone_selector,
                preferred_zone,
                anti_affinity,
                preferred_pod_affinity,
                spread,
                host_port,
                high_priority,
                running: running.min(replicas),
                role,
                node_affinity,
                anti_affinity_zone,
                resized,
                mixed_shapes,
                labels,
            },
        )
}

fn cluster_gen() -> impl Strategy<Value = (Vec<NodeGen>, Vec<JobGen>)> {
    (
        prop::collection::vec(node_gen(), 2..10),
        prop::collection::vec(job_gen(1..7), 1..9),
    )
}

/// Clusters large enough, and jobs long enough, that classes keep an index and catch up with a
/// few touched nodes at a time rather than forgetting every leaf (the small clusters above make
/// an index forget every leaf at almost every look). A refused node that was only given tasks
/// then stays refused; the random clusters reach that in a few cases only, so the index's own
/// unit tests cover it directly.
fn indexed_cluster_gen() -> impl Strategy<Value = (Vec<NodeGen>, Vec<JobGen>)> {
    (
        prop::collection::vec(node_gen(), 12..28),
        prop::collection::vec(job_gen(4..18), 3..10),
    )
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("the test builds well-formed objects")
}

fn node(i: usize, n: &NodeGen) -> Value {
    let name = format!("n{i}");
    let taints = match n.taint {
        1 => json!([{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]),
        2 => json!([{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]),
        _ => json!([]),
    };
    let images = if n.has_image {
        json!([{"names": ["registry/img-a:1"], "sizeBytes": 600_000_000}])
    } else {
        json!([])
    };
    let list = json!({"cpu": format!("{}m", n.cpu), "memory": format!("{}Mi", n.cpu * 2), "pods": n.pods.to_string()});
    let mut labels = json!({"kubernetes.io/hostname": name});
    if n.zone < 3 {
        labels["topology.kubernetes.io/zone"] = json!(format!("z{}", n.zone));
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints, "unschedulable": n.cordoned},
        "status": {"allocatable": list, "capacity": list, "images": images},
    })
}

/// A selector of the pods labelled `app: a<app>`, written in one of the forms the label index
/// narrows by (`matchLabels`, `In`) or in one it cannot (`Exists` plus `In`, read as a whole).
fn selector(app: usize) -> Value {
    match app {
        0 => json!({"matchLabels": {"app": "a0"}}),
        1 => {
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a1", "a9"]}]})
        }
        _ => json!({"matchExpressions": [{"key": "app", "operator": "Exists"},
            {"key": "app", "operator": "NotIn", "values": ["a0", "a1"]}]}),
    }
}

fn affinity(j: &JobGen) -> Value {
    let mut affinity = json!({});
    if let Some(z) = j.preferred_zone {
        affinity["nodeAffinity"] = json!({"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 10, "preference": {"matchExpressions": [{
                "key": "topology.kubernetes.io/zone", "operator": "In", "values": [format!("z{z}")]}]}}]});
    }
    let zone = |op: &str, values: Value| json!({"key": "topology.kubernetes.io/zone", "operator": op, "values": values});
    let terms = match j.node_affinity {
        1 => json!([{"matchExpressions": [zone("In", json!(["z0", "z2"]))]}]),
        2 => json!([{"matchExpressions": [zone("NotIn", json!(["z1"])),
            {"key": "topology.kubernetes.io/zone", "operator": "Exists"}]}]),
        3 => {
            json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]},
            {"matchExpressions": [zone("In", json!(["z1"]))]}])
        }
        _ => Value::Null,
    };
    if !terms.is_null() {
        affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
            json!({"nodeSelectorTerms": terms});
    }
    let own = selector(j.app);
    if j.anti_affinity {
        let key = if j.anti_affinity_zone {
            "topology.kubernetes.io/zone"
        } else {
            "kubernetes.io/hostname"
        };
        affinity["podAntiAffinity"] = json!({"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": own, "topologyKey": key}]});
    }
    if j.preferred_pod_affinity {
        affinity["podAffinity"] = json!({"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 5, "podAffinityTerm": {"labelSelector": own,
                "topologyKey": "topology.kubernetes.io/zone"}}]});
    }
    affinity
}

fn pod_spec(j: &JobGen, index: usize, node: Option<String>) -> Value {
    let shape = if j.mixed_shapes && index % 2 == 1 {
        (j.shape + 1) % SHAPES.len()
    } else {
        j.shape
    };
    let (cpu, memory) = SHAPES[shape];
    let mut tolerations = Vec::new();
    if j.tolerate_dedicated {
        tolerations.push(json!({"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}));
    }
    if j.tolerate_soft {
        tolerations.push(json!({"key": "soft", "operator": "Exists"}));
    }
    let image = if shape == 0 {
        "registry/img-a:1"
    } else {
        "registry/img-b:1"
    };
    let mut container = json!({
        "name": "main", "image": image,
        "env": [{"name": "TASK_INDEX", "value": index.to_string()}],
        "resources": {"requests": {"cpu": format!("{cpu}m"), "memory": format!("{memory}Mi")}},
    });
    if j.host_port {
        container["ports"] = json!([{"containerPort": 8080, "hostPort": 8080}]);
    }
    let mut spec = json!({
        "schedulerName": "volcano-rs",
        "containers": [container],
        "tolerations": tolerations,
        "affinity": affinity(j),
        "priority": if j.high_priority { 1000 } else { 0 },
    });
    if let Some(z) = j.zone_selector {
        spec["nodeSelector"] = json!({"topology.kubernetes.io/zone": format!("z{z}")});
    }
    if j.spread != 0 {
        spec["topologySpreadConstraints"] = json!([{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": if j.spread == 1 { "DoNotSchedule" } else { "ScheduleAnyway" },
            "labelSelector": selector(j.app)}]);
    }
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    spec
}

fn build(nodes: &[NodeGen], jobs: &[JobGen]) -> SimInput {
    let mut input = SimInput::default();
    for (i, n) in nodes.iter().enumerate() {
        input.nodes.push(decode(node(i, n)));
    }
    for q in 0..3 {
        input.queues.push(decode(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": format!("q{q}")},
            "spec": {"weight": q + 1, "reclaimable": true},
        })));
    }
    let mut seq = 0;
    for (ji, j) in jobs.iter().enumerate() {
        let group = format!("j{ji}");
        input.pod_groups.push(decode(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": group, "namespace": "default", "uid": format!("pg-{ji}"),
                "creationTimestamp": format!("2025-12-31T00:00:{:02}Z", ji)},
            "spec": {"minMember": j.min_member, "queue": format!("q{}", j.queue)},
        })));
        for t in 0..j.replicas {
            seq += 1;
            // Running members sit on a node chosen round-robin (the simulator accepts
            // overcommitted nodes as given).
            let running = t < j.running;
            let node = running.then(|| format!("n{}", (ji + t) % nodes.len()));
            let phase = if running { "Running" } else { "Pending" };
            let mut status = json!({"phase": phase});
            if running && j.resized {
                status["containerStatuses"] = json!([{"name": "main", "image": "registry/img-a:1",
                    "imageID": "", "ready": true, "restartCount": 0,
                    "resources": {"requests": {"cpu": "1500m", "memory": "100Mi"}}}]);
            }
            let mut annotations = json!({"scheduling.k8s.io/group-name": group});
            if j.role {
                annotations["volcano.sh/task-spec"] = json!("worker");
            }
            let app = if j.labels == 2 && t % 2 == 1 {
                j.app + 1
            } else {
                j.app
            };
            let mut labels = json!({"app": format!("a{app}")});
            if j.labels == 0 {
                labels["volcano.sh/task-index"] = json!(t.to_string());
            }
            input.pods.push(decode(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {
                    "name": format!("{group}-{t}"), "namespace": "default",
                    "uid": format!("pod-{ji}-{t}"),
                    "creationTimestamp": format!("2025-12-31T00:{:02}:{:02}Z", seq / 60, seq % 60),
                    "labels": labels,
                    "annotations": annotations,
                },
                "spec": pod_spec(j, t, node),
                "status": status,
            })));
        }
    }
    input
}

fn with_eviction() -> ConfFile {
    ConfFile {
        name: "search-memo-properties.conf".into(),
        text: r#"actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"#
        .into(),
    }
}

/// Volcano's chart configuration: binpack scores beside nodeorder, overcommit gates enqueue.
fn volcano_chart() -> ConfFile {
    ConfFile {
        name: "volcano-chart.conf".into(),
        text: include_str!("../../../config/volcano-chart.conf").into(),
    }
}

fn run(input: &SimInput, conf: Option<ConfFile>, memo: bool) -> String {
    run_with(input, conf, memo, true)
}

/// `carry`: whether each build takes over the last session's unchanged rows.
fn run_with(input: &SimInput, conf: Option<ConfFile>, memo: bool, carry: bool) -> String {
    let now = "2026-01-01T00:00:00Z".parse().expect("valid timestamp");
    let mut opts = SimOptions::new(now);
    opts.scheduler_conf = conf;
    opts.max_cycles = SESSIONS;
    opts.recreate_evicted = true;
    opts.search_memo = memo;
    opts.carry_rows = carry;
    simulate::run(input, &opts)
        .expect("the configuration and built objects are valid")
        .to_json()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn the_memo_changes_no_decision_under_the_default_configuration(
        (nodes, jobs) in cluster_gen()
    ) {
        let input = build(&nodes, &jobs);
        prop_assert_eq!(run(&input, None, true), run(&input, None, false));
    }

    #[test]
    fn the_memo_changes_no_decision_where_classes_keep_an_index(
        (nodes, jobs) in indexed_cluster_gen()
    ) {
        let input = build(&nodes, &jobs);
        prop_assert_eq!(run(&input, None, true), run(&input, None, false));
    }

    #[test]
    fn the_memo_changes_no_decision_with_preempt_and_reclaim((nodes, jobs) in cluster_gen()) {
        let input = build(&nodes, &jobs);
        let conf = with_eviction();
        prop_assert_eq!(run(&input, Some(conf.clone()), true), run(&input, Some(conf), false));
    }

    #[test]
    fn the_memo_changes_no_decision_under_volcanos_chart_configuration(
        (nodes, jobs) in cluster_gen()
    ) {
        let input = build(&nodes, &jobs);
        let conf = volcano_chart();
        prop_assert_eq!(run(&input, Some(conf.clone()), true), run(&input, Some(conf), false));
    }

    #[test]
    fn carried_rows_change_no_decision_under_the_default_configuration(
        (nodes, jobs) in cluster_gen()
    ) {
        let input = build(&nodes, &jobs);
        prop_assert_eq!(run_with(&input, None, true, true), run_with(&input, None, true, false));
    }

    #[test]
    fn carried_rows_change_no_decision_with_preempt_and_reclaim((nodes, jobs) in cluster_gen()) {
        let input = build(&nodes, &jobs);
        let conf = with_eviction();
        prop_assert_eq!(
            run_with(&input, Some(conf.clone()), true, true),
            run_with(&input, Some(conf), true, false)
        );
    }

    #[test]
    fn carried_rows_change_no_decision_under_volcanos_chart_configuration(
        (nodes, jobs) in cluster_gen()
    ) {
        let input = build(&nodes, &jobs);
        let conf = volcano_chart();
        prop_assert_eq!(
            run_with(&input, Some(conf.clone()), true, true),
            run_with(&input, Some(conf), true, false)
        );
    }
}
