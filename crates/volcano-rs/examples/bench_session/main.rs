//! Times one scheduling session of the default configuration on a synthetic cluster.
//!
//! `cargo run --release -p volcano-rs --example bench_session -- --nodes 1000 --pods 10000 --jobs 100 [--workload mixed|steady] [--search-memo off] [--sessions 200] [--evict-mib 64] [--dump-binds FILE]`
//!
//! Three workloads: `uniform` (gangs of equal size, every pod 1 cpu / 2 GiB, one queue),
//! `mixed` ([`mixed`]: jobs of many sizes and shapes in several queues, some with node
//! affinity, pod anti-affinity or topology spread, some nodes tainted), and `steady`
//! ([`steady`]: `--pods` running single-pod jobs and a new one per session, for `--sessions`
//! sessions; the times are per session). `--evict-mib N` (steady only) writes to N MiB of
//! memory at random between two sessions, untimed, so that each session starts with the
//! processor's caches holding little of the cluster, as a daemon's do: between its sessions the
//! watches, the writes and the API server beside it run.
//!
//! Prints one JSON line: build time (not part of the session), session open / actions / close
//! times, pods bound, pods placed per second, and the process's peak resident memory (read
//! from /proc/self/status; run each size in its own process to compare peaks), also per object
//! (node or pod). `make bench` runs the standard sizes; `RAYON_NUM_THREADS=1` gives the
//! one-core figure.

mod mixed;
mod steady;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use apis::{PodGroup, PodGroupSpec, Queue, QueueSpec};
use engine::conf::{DEFAULT_SCHEDULER_CONF, KnownNames, parse};
use engine::framework::{Session, SessionOptions};
use engine::state::{ClusterState, StateOptions};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeStatus, Pod, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

struct Args {
    nodes: usize,
    pods: usize,
    jobs: usize,
    workload: Workload,
    search_memo: bool,
    sessions: usize,
    /// MiB written at random between two steady sessions (0: none).
    evict_mib: usize,
    /// Where to write the session's decisions, one per line, to compare two builds.
    dump_binds: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    Uniform,
    Mixed,
    Steady,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Uniform => "uniform",
            Workload::Mixed => "mixed",
            Workload::Steady => "steady",
        }
    }
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        nodes: 1000,
        pods: 10_000,
        jobs: 100,
        workload: Workload::Uniform,
        search_memo: true,
        sessions: 200,
        evict_mib: 0,
        dump_binds: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match (flag.as_str(), value.as_str()) {
            ("--workload", "uniform") => args.workload = Workload::Uniform,
            ("--workload", "mixed") => args.workload = Workload::Mixed,
            ("--workload", "steady") => args.workload = Workload::Steady,
            ("--search-memo", "on") => args.search_memo = true,
            ("--search-memo", "off") => args.search_memo = false,
            ("--workload" | "--search-memo", other) => {
                return Err(format!("{flag}: unknown value {other}"));
            }
            ("--dump-binds", path) => args.dump_binds = Some(path.to_string()),
            _ => {}
        }
        if matches!(
            flag.as_str(),
            "--workload" | "--search-memo" | "--dump-binds"
        ) {
            continue;
        }
        let n: usize = value
            .parse()
            .map_err(|_| format!("{flag}: not a number: {value}"))?;
        match flag.as_str() {
            "--nodes" => args.nodes = n,
            "--pods" => args.pods = n,
            "--jobs" => args.jobs = n.max(1),
            "--sessions" => args.sessions = n.max(1),
            "--evict-mib" => args.evict_mib = n,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(args)
}

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

fn meta(name: String, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        uid: Some(format!("uid-{name}")),
        name: Some(name),
        namespace: namespace.map(str::to_string),
        ..Default::default()
    }
}

fn build_cluster(args: &Args) -> ClusterState {
    match args.workload {
        Workload::Mixed => return mixed::build(args.nodes, args.pods),
        Workload::Steady => return steady::build(args.nodes, args.pods),
        Workload::Uniform => {}
    }
    let mut state = ClusterState::new(StateOptions::default());
    let mut queue = Queue {
        metadata: meta("default".into(), None),
        spec: QueueSpec::default(),
        status: None,
    };
    queue.spec.weight = 1;
    state.upsert_queue(queue);
    for i in 0..args.nodes {
        state.upsert_node(Node {
            metadata: meta(format!("node-{i:05}"), None),
            status: Some(NodeStatus {
                allocatable: Some(quantities(&[
                    ("cpu", "32"),
                    ("memory", "128Gi"),
                    ("pods", "110"),
                ])),
                capacity: Some(quantities(&[
                    ("cpu", "32"),
                    ("memory", "128Gi"),
                    ("pods", "110"),
                ])),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    let per_job = args.pods.div_ceil(args.jobs);
    for j in 0..args.jobs {
        let name = format!("job-{j:04}");
        state.upsert_pod_group(PodGroup {
            metadata: meta(name.clone(), Some("bench")),
            spec: PodGroupSpec {
                min_member: per_job as i32,
                queue: "default".into(),
                ..Default::default()
            },
            status: None,
        });
    }
    for p in 0..args.pods {
        let job = p / per_job;
        let mut m = meta(format!("job-{job:04}-task-{p:06}"), Some("bench"));
        m.annotations = Some(BTreeMap::from([(
            "scheduling.k8s.io/group-name".to_string(),
            format!("job-{job:04}"),
        )]));
        state.upsert_pod(Pod {
            metadata: m,
            spec: Some(PodSpec {
                scheduler_name: Some("volcano-rs".into()),
                containers: vec![Container {
                    name: "main".into(),
                    resources: Some(ResourceRequirements {
                        requests: Some(quantities(&[("cpu", "1"), ("memory", "2Gi")])),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some("Pending".into()),
                ..Default::default()
            }),
        });
    }
    state
}

/// Writes what the session decided (binds in order, then the other writes), one per line, so
/// two builds' decisions can be compared with `cmp`.
fn dump_decisions(path: &str, d: &engine::framework::Decisions) {
    use std::fmt::Write as _;
    let mut out = String::new();
    for b in &d.binds {
        let _ = writeln!(out, "bind {} {}", b.pod, b.node);
    }
    let lines = d.evictions.iter().map(|x| format!("evict {x:?}"));
    let lines = lines.chain(d.pipelined.iter().map(|x| format!("pipeline {x:?}")));
    let lines = lines.chain(d.pod_group_statuses.iter().map(|x| format!("pg {x:?}")));
    let lines = lines.chain(d.pod_conditions.iter().map(|x| format!("cond {x:?}")));
    let lines = lines.chain(d.events.iter().map(|x| format!("event {x:?}")));
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "unschedulable_tasks {}", d.unschedulable_tasks);
    if let Err(e) = std::fs::write(path, out) {
        eprintln!("bench_session: cannot write {path}: {e}");
    }
}

/// The process's CPU time so far (user + system, in clock ticks of 10 ms, from
/// /proc/self/stat): on a shared machine it moves less than the wall clock with the load.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    Some((ticks(11)? + ticks(12)?) * 10.0)
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench_session: {e}");
            std::process::exit(2);
        }
    };
    let registry = plugins::registry();
    let plugin_names = registry.names();
    let known = KnownNames {
        actions: engine::actions::KNOWN_ACTIONS,
        plugins: &plugin_names,
        strict: true,
        check_arguments: Some(plugins::check_arguments),
    };
    let conf = match parse(DEFAULT_SCHEDULER_CONF, &known) {
        Ok(p) => Arc::new(p.conf),
        Err(e) => {
            eprintln!("bench_session: default configuration refused: {e}");
            std::process::exit(2);
        }
    };

    let t0 = Instant::now();
    let state = build_cluster(&args);
    let build = t0.elapsed();
    let rss_before = peak_rss_kib();

    let options = SessionOptions {
        search_memo: args.search_memo,
        ..SessionOptions::default()
    };
    if args.workload == Workload::Steady {
        let mut state = state;
        let f = steady::run(
            &mut state,
            args.pods,
            args.sessions,
            args.evict_mib,
            &conf,
            &registry,
            &options,
        );
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        println!(
            "{{\"workload\": \"steady\", \"nodes\": {}, \"running_pods\": {}, \"sessions\": {}, \"evict_mib\": {}, \"build_ms\": {:.1}, \"open_ms\": {:.3}, \"actions_ms\": {:.3}, \"close_ms\": {:.3}, \"session_ms\": {:.3}, \"bound\": {}, \"status_writes\": {}}}",
            args.nodes,
            args.pods,
            args.sessions,
            args.evict_mib,
            ms(build),
            ms(f.open),
            ms(f.actions),
            ms(f.close),
            ms(f.open + f.actions + f.close),
            f.bound,
            f.status_writes,
        );
        return;
    }
    let start = Instant::now();
    let cpu_start = cpu_ms();
    let snapshot = state.snapshot();
    let now = k8s_openapi::jiff::Timestamp::UNIX_EPOCH;
    let mut ssn = Session::open(&snapshot, conf, &registry, options, now, "bench".into());
    let opened = start.elapsed();
    engine::actions::run_configured_actions(&mut ssn, &|| start.elapsed());
    let acted = start.elapsed();
    let decisions = ssn.close();
    let total = start.elapsed();
    let cpu = cpu_ms()
        .zip(cpu_start)
        .map_or(0.0, |(end, start)| end - start);

    if let Some(path) = &args.dump_binds {
        dump_decisions(path, &decisions);
    }
    let bound = decisions.binds.len();
    let secs = total.as_secs_f64();
    let peak_kib = peak_rss_kib().unwrap_or(0);
    let objects = (args.nodes + args.pods).max(1);
    println!(
        "{{\"workload\": \"{}\", \"search_memo\": {}, \"nodes\": {}, \"pods\": {}, \"jobs\": {}, \"threads\": {}, \"build_ms\": {:.1}, \"open_ms\": {:.1}, \"actions_ms\": {:.1}, \"close_ms\": {:.1}, \"session_ms\": {:.1}, \"session_cpu_ms\": {:.0}, \"bound\": {}, \"pods_per_sec\": {:.0}, \"rss_before_session_mib\": {:.1}, \"peak_rss_mib\": {:.1}, \"peak_rss_per_object_kib\": {:.2}}}",
        args.workload.name(),
        args.search_memo,
        args.nodes,
        args.pods,
        if args.workload == Workload::Mixed {
            mixed::job_count(args.pods)
        } else {
            args.jobs
        },
        rayon::current_num_threads(),
        build.as_secs_f64() * 1e3,
        opened.as_secs_f64() * 1e3,
        (acted - opened).as_secs_f64() * 1e3,
        (total - acted).as_secs_f64() * 1e3,
        secs * 1e3,
        cpu,
        bound,
        if secs > 0.0 { bound as f64 / secs } else { 0.0 },
        rss_before.unwrap_or(0) as f64 / 1024.0,
        peak_kib as f64 / 1024.0,
        peak_kib as f64 / objects as f64,
    );
}
