//! The steady workload: what a daemon's session sees under a stream of single-pod jobs.
//!
//! `--nodes` nodes of 32 cpu, `--pods` running pods (1 cpu / 1 GiB, each in its own PodGroup
//! whose status says Running, spread round robin over the nodes), and one new pending
//! single-pod job per session. Each of `--sessions` sessions is what the daemon does: a
//! snapshot, open, the actions, close; then the pod shows bound and running, each PodGroup
//! shows the status the session wrote, and the next job arrives. The figures are per session (means).
//! With `--evict-mib`, memory is written at random before each session, outside its timing.

use std::time::{Duration, Instant};

use engine::conf::SchedulerConf;
use engine::framework::{PluginRegistry, Session, SessionOptions};
use engine::state::{ClusterState, StateOptions};
use serde_json::{Value, json};
use std::sync::Arc;

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("the bench builds well-formed objects")
}

fn pod_group(i: usize, running: bool) -> apis::PodGroup {
    let name = format!("job-{i:06}");
    // What the daemon wrote once the pod ran.
    let status = if running {
        json!({"phase": "Running", "running": 1, "conditions": [{"type": "Scheduled",
            "status": "True", "reason": "tasks in gang are ready to be scheduled",
            "transitionID": "bench", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
    } else {
        json!({})
    };
    decode(json!({
        "metadata": {"name": name, "namespace": "bench", "uid": format!("uid-{name}"),
            "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"minMember": 1, "queue": "default"},
        "status": status,
    }))
}

fn pod(i: usize, node: Option<String>) -> k8s_openapi::api::core::v1::Pod {
    let name = format!("job-{i:06}-0");
    decode(json!({
        "metadata": {"name": name, "namespace": "bench", "uid": format!("uid-{name}"),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {"scheduling.k8s.io/group-name": format!("job-{i:06}")}},
        "spec": {"schedulerName": "volcano-rs", "nodeName": node,
            "containers": [{"name": "main", "image": "registry.local/app:1",
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
        "status": {"phase": if node.is_some() { "Running" } else { "Pending" }},
    }))
}

pub fn build(nodes: usize, running: usize) -> ClusterState {
    let mut state = ClusterState::new(StateOptions::default());
    state.upsert_queue(decode(json!({
        "metadata": {"name": "default", "uid": "uid-default"},
        "spec": {"weight": 1},
    })));
    for i in 0..nodes {
        let name = format!("node-{i:05}");
        let list = json!({"cpu": "32", "memory": "256Gi", "pods": "110"});
        state.upsert_node(decode(json!({
            "metadata": {"name": name, "uid": format!("uid-{name}"),
                "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": list, "capacity": list},
        })));
    }
    for i in 0..running {
        state.upsert_pod_group(pod_group(i, true));
        state.upsert_pod(pod(i, Some(format!("node-{:05}", i % nodes.max(1)))));
    }
    state
}

/// Mean time per session of open, actions and close, and the pods bound in all.
pub struct Figures {
    pub open: Duration,
    pub actions: Duration,
    pub close: Duration,
    pub bound: usize,
    /// PodGroup status writes in all.
    pub status_writes: usize,
}

/// Writes one byte in each of as many random cache lines of `memory` as it has lines, which
/// leaves little else in the processor's caches (a xorshift sequence: the same every run).
fn evict_caches(memory: &mut [u8], seed: &mut u64) {
    if memory.is_empty() {
        return;
    }
    for _ in 0..memory.len() / 64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let i = (*seed % memory.len() as u64) as usize;
        memory[i] = memory[i].wrapping_add(1);
    }
    std::hint::black_box(&*memory);
}

pub fn run(
    state: &mut ClusterState,
    first: usize,
    sessions: usize,
    evict_mib: usize,
    conf: &Arc<SchedulerConf>,
    registry: &PluginRegistry,
    options: &SessionOptions,
) -> Figures {
    let (mut open, mut actions, mut close) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut bound = 0;
    let mut status_writes = 0;
    let now = k8s_openapi::jiff::Timestamp::UNIX_EPOCH;
    let mut eviction = vec![0u8; evict_mib << 20];
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    for s in 0..sessions {
        evict_caches(&mut eviction, &mut seed);
        let i = first + s;
        state.upsert_pod_group(pod_group(i, false));
        state.upsert_pod(pod(i, None));
        let start = Instant::now();
        let snapshot = state.snapshot();
        let mut ssn = Session::open(
            &snapshot,
            conf.clone(),
            registry,
            options.clone(),
            now,
            format!("bench-{s}"),
        );
        let opened = start.elapsed();
        engine::actions::run_configured_actions(&mut ssn, &|| start.elapsed());
        let acted = start.elapsed();
        let decisions = ssn.close();
        drop(snapshot);
        let total = start.elapsed();
        open += opened;
        actions += acted - opened;
        close += total - acted;
        // What the watches show next: the pod bound and running, the PodGroup Running.
        for b in &decisions.binds {
            state.upsert_pod(pod(i, Some(b.node.clone())));
            bound += 1;
        }
        status_writes += decisions.pod_group_statuses.len();
        for update in &decisions.pod_group_statuses {
            let Some(pg) = state.pod_group(&update.pod_group) else {
                continue;
            };
            let mut pg = apis::PodGroup::clone(pg);
            pg.status = Some(engine::model::job::job_status_to_api(&update.status));
            state.upsert_pod_group(pg);
        }
    }
    let n = sessions.max(1) as u32;
    Figures {
        open: open / n,
        actions: actions / n,
        close: close / n,
        bound,
        status_writes,
    }
}
