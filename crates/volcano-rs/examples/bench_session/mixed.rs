//! The mixed workload: a cluster closer to a shared batch cluster than the uniform one.
//!
//! * Nodes of 16, 32 or 64 cpu (4 GiB per cpu, 110 pods) in 10 zones; every tenth node is
//!   tainted `dedicated=special:NoSchedule`.
//! * 8 queues of weights 1–8.
//! * Jobs of 1 to 512 pods (small ones most often), in 6 resource shapes from 250m / 512 MiB to
//!   4 cpu / 16 GiB; half are gangs (`minMember` = size), half take what fits (`minMember` 1).
//! * Of the jobs: 15 % require two of the zones (node affinity), 10 % tolerate the taint, 3 %
//!   want one pod per node (required pod anti-affinity on their own label, at most 64 pods),
//!   2 % spread over the zones (`DoNotSchedule`, max skew 1, at most 64 pods); the rest ask
//!   only for resources.
//!
//! Every pod is pending. The job mix is fixed by a hash of the job's index, so a size always
//! builds the same cluster.

use std::collections::BTreeMap;

use engine::state::{ClusterState, StateOptions};
use serde_json::{Value, json};

const ZONES: u64 = 10;
const QUEUES: u64 = 8;
const SIZES: [usize; 12] = [1, 1, 1, 2, 4, 8, 8, 16, 32, 64, 128, 512];
const SHAPES: [(&str, &str); 6] = [
    ("250m", "512Mi"),
    ("500m", "1Gi"),
    ("1", "2Gi"),
    ("1", "4Gi"),
    ("2", "8Gi"),
    ("4", "16Gi"),
];

/// SplitMix64: a fixed, well-spread hash of an index.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// What kind of job index `j` is.
#[derive(Copy, Clone, PartialEq)]
enum Kind {
    Plain,
    ZoneAffinity,
    Tolerating,
    AntiAffinity,
    Spread,
}

struct JobPlan {
    size: usize,
    gang: bool,
    kind: Kind,
    shape: usize,
    queue: u64,
    zones: [u64; 2],
}

fn plan(j: u64) -> JobPlan {
    let h = mix(j);
    let kind = match h % 100 {
        0..=69 => Kind::Plain,
        70..=84 => Kind::ZoneAffinity,
        85..=94 => Kind::Tolerating,
        95..=97 => Kind::AntiAffinity,
        _ => Kind::Spread,
    };
    let mut size = SIZES[(h >> 8) as usize % SIZES.len()];
    if matches!(kind, Kind::AntiAffinity | Kind::Spread) {
        size = size.min(64);
    }
    JobPlan {
        size,
        gang: (h >> 16).is_multiple_of(2),
        kind,
        shape: (h >> 24) as usize % SHAPES.len(),
        queue: (h >> 32) % QUEUES,
        zones: [
            (h >> 40) % ZONES,
            ((h >> 40) + 1 + (h >> 48) % (ZONES - 1)) % ZONES,
        ],
    }
}

/// The jobs that make up `pods` pods (the last one cut to fit).
fn plans(pods: usize) -> Vec<JobPlan> {
    let mut out = Vec::new();
    let mut total = 0;
    let mut j = 0;
    while total < pods {
        let mut p = plan(j);
        p.size = p.size.min(pods - total);
        total += p.size;
        out.push(p);
        j += 1;
    }
    out
}

/// How many jobs the mixed workload of `pods` pods has.
pub fn job_count(pods: usize) -> usize {
    plans(pods).len()
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("the bench builds well-formed objects")
}

fn node(i: usize) -> Value {
    let cpu = [16u64, 32, 64][mix(1_000_000 + i as u64) as usize % 3];
    let name = format!("node-{i:05}");
    let list = json!({"cpu": cpu.to_string(), "memory": format!("{}Gi", cpu * 4), "pods": "110"});
    let taints = if i % 10 == 9 {
        json!([{"key": "dedicated", "value": "special", "effect": "NoSchedule"}])
    } else {
        json!([])
    };
    json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": {
            "kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": format!("zone-{}", i as u64 % ZONES)}},
        "spec": {"taints": taints},
        "status": {"allocatable": list, "capacity": list},
    })
}

fn pod_spec(p: &JobPlan, app: &str) -> Value {
    let (cpu, memory) = SHAPES[p.shape];
    let mut spec = json!({
        "schedulerName": "volcano-rs",
        "containers": [{"name": "main", "image": "registry.local/train:1",
            "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    });
    let own = json!({"matchLabels": {"app": app}});
    match p.kind {
        Kind::Plain => {}
        Kind::ZoneAffinity => {
            let zones: Vec<String> = p.zones.iter().map(|z| format!("zone-{z}")).collect();
            spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{
                    "key": "topology.kubernetes.io/zone", "operator": "In", "values": zones}]}]}}});
        }
        Kind::Tolerating => {
            spec["tolerations"] = json!([{"key": "dedicated", "operator": "Equal",
                "value": "special", "effect": "NoSchedule"}]);
        }
        Kind::AntiAffinity => {
            spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": own, "topologyKey": "kubernetes.io/hostname"}]}});
        }
        Kind::Spread => {
            spec["topologySpreadConstraints"] = json!([{"maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": own}]);
        }
    }
    spec
}

/// Builds the mixed cluster of `nodes` nodes and `pods` pending pods.
pub fn build(nodes: usize, pods: usize) -> ClusterState {
    let mut state = ClusterState::new(StateOptions::default());
    for q in 0..QUEUES {
        state.upsert_queue(decode(json!({
            "metadata": {"name": format!("queue-{q}"), "uid": format!("uid-queue-{q}")},
            "spec": {"weight": q + 1},
        })));
    }
    for i in 0..nodes {
        state.upsert_node(decode(node(i)));
    }
    for (j, p) in plans(pods).iter().enumerate() {
        let name = format!("job-{j:05}");
        state.upsert_pod_group(decode(json!({
            "metadata": {"name": name, "namespace": "bench", "uid": format!("uid-{name}")},
            "spec": {"minMember": if p.gang { p.size } else { 1 },
                     "queue": format!("queue-{}", p.queue)},
        })));
        let spec = pod_spec(p, &name);
        for t in 0..p.size {
            let pod_name = format!("{name}-task-{t}");
            let labels = BTreeMap::from([("app", name.as_str()), ("volcano.sh/job-name", &name)]);
            state.upsert_pod(decode(json!({
                "metadata": {"name": pod_name, "namespace": "bench",
                    "uid": format!("uid-{pod_name}"), "labels": labels,
                    "annotations": {"scheduling.k8s.io/group-name": name}},
                "spec": spec,
                "status": {"phase": "Pending"},
            })));
        }
    }
    state
}
