//! `make bench-e2e`: the daemon on the local control plane, measured against the API server's
//! own limit (docs/benchmarks.md, "End to end").
//!
//! On 500 KWOK nodes of 32 cpu, with the daemon run as Volcano's chart runs its scheduler (1 s
//! period, client QPS and burst 2,000):
//!
//! 1. **ceiling**: pods of no scheduler bound by a bare client, 32 binding POSTs at a time: the
//!    most binds per second this API server takes; measured again after the gang (the ratios
//!    are to the higher of the two);
//! 2. **backlog**: 10 gangs of 500 pods, all created before the daemon starts; pods bound per
//!    second from the daemon's start to the last bind, and from the first bind to the last
//!    (the bind rate, timed as the ceiling is), each against the ceiling;
//! 3. **gang**: one gang of 5,000 pods, likewise;
//! 4. **steady**: a single-pod job every 1/rate seconds for a while, with the daemon running:
//!    create → bind latency (the create call's return to the watch seeing `nodeName`).
//!
//! For each phase with the daemon: its CPU seconds (`/proc/<pid>/stat`), its peak RSS (VmHWM)
//! and its sessions that decided something or nothing (`volcano_sessions_total`), over the
//! daemon's whole life for the phases that start it, and from the phase's start (peak RSS reset
//! through `clear_refs`) for the steady one. Prints a table and one JSON document.
//!
//! Both schedulers get Volcano's chart configuration (`config/volcano-chart.conf`). With
//! `BENCH_VOLCANO_SCHEDULER` set to Volcano's `vc-scheduler` (`make bench-e2e-volcano` builds
//! it), each daemon phase runs again right after, on the same cluster and load, with Volcano's
//! scheduler in the daemon's place (phases `vc-backlog`, `vc-gang`, `vc-steady`); the daemon's
//! CPU seconds are then also given as a ratio to Volcano's for the same phase. Volcano's
//! scheduler has no count of sessions that decided nothing: its figure is all its sessions
//! (`volcano_e2e_scheduling_latency_milliseconds_count`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};

use crate::harness::{Daemon, Env, TestCtx};

/// What a run measures; sizes from the environment (see [`Sizes::from_env`]).
#[derive(Clone, Debug)]
pub struct Sizes {
    pub nodes: usize,
    pub gangs: usize,
    pub gang_size: usize,
    pub big_gang: usize,
    pub concurrency: usize,
    pub steady_rate: f64,
    pub steady_seconds: u64,
    /// Volcano's scheduler to run each daemon phase again with (`BENCH_VOLCANO_SCHEDULER`).
    pub volcano: Option<std::path::PathBuf>,
    /// The phases to run (`BENCH_PHASES`, comma-separated; default [`DEFAULT_PHASES`]). The
    /// ceiling runs whenever a backlog or gang phase does (their ratios are to it).
    pub phases: Vec<String>,
}

/// The phases a run has unless `BENCH_PHASES` says otherwise. `ceiling-watched` (not among
/// them) is the ceiling again with an idle daemon running beside the bare client, watching
/// every pod as it does while it binds: what the daemon's watches alone cost the API server.
pub const DEFAULT_PHASES: &str = "ceiling,backlog,gang,steady";
const KNOWN_PHASES: [&str; 5] = ["ceiling", "ceiling-watched", "backlog", "gang", "steady"];

impl Sizes {
    /// `BENCH_NODES` (500), `BENCH_GANGS` (10), `BENCH_GANG_SIZE` (500), `BENCH_BIG_GANG`
    /// (5000), `BENCH_CONCURRENCY` (32), `BENCH_STEADY_RATE` (20 per second),
    /// `BENCH_STEADY_SECONDS` (60), `BENCH_VOLCANO_SCHEDULER` (none), `BENCH_PHASES`
    /// ([`DEFAULT_PHASES`]).
    pub fn from_env() -> anyhow::Result<Sizes> {
        fn var<T: std::str::FromStr>(name: &str, default: T) -> anyhow::Result<T> {
            match std::env::var(name) {
                Ok(v) => v
                    .parse()
                    .map_err(|_| anyhow::anyhow!("{name}={v:?} is not a number")),
                Err(_) => Ok(default),
            }
        }
        Ok(Sizes {
            nodes: var("BENCH_NODES", 500)?,
            gangs: var("BENCH_GANGS", 10)?,
            gang_size: var("BENCH_GANG_SIZE", 500)?,
            big_gang: var("BENCH_BIG_GANG", 5000)?,
            concurrency: var("BENCH_CONCURRENCY", 32)?,
            steady_rate: var("BENCH_STEADY_RATE", 20.0)?,
            steady_seconds: var("BENCH_STEADY_SECONDS", 60)?,
            volcano: std::env::var_os("BENCH_VOLCANO_SCHEDULER")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from),
            phases: phases_from(
                &std::env::var("BENCH_PHASES").unwrap_or_else(|_| DEFAULT_PHASES.to_string()),
            )?,
        })
    }

    fn runs(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }
}

fn phases_from(list: &str) -> anyhow::Result<Vec<String>> {
    let mut phases = Vec::new();
    for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if !KNOWN_PHASES.contains(&p) {
            bail!(
                "BENCH_PHASES: unknown phase {p:?} (known: {})",
                KNOWN_PHASES.join(", ")
            );
        }
        phases.push(p.to_string());
    }
    if phases.iter().any(|p| p == "backlog" || p == "gang")
        && !phases.iter().any(|p| p == "ceiling")
    {
        phases.push("ceiling".to_string());
    }
    Ok(phases)
}

/// The figures of one phase.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Phase {
    pub name: String,
    /// `volcano-rs`, or `volcano` for Volcano's scheduler.
    pub scheduler: &'static str,
    pub pods: usize,
    pub seconds: f64,
    pub pods_per_sec: f64,
    pub ratio_to_ceiling: Option<f64>,
    /// From the daemon's start to the first bind seen: start-up, the initial lists and the
    /// first session.
    pub first_bind_seconds: Option<f64>,
    /// Pods over the time from the first bind to the last: the bind rate itself, like for like
    /// with the ceiling (which is timed from the first binding POST to the last).
    pub binding_pods_per_sec: Option<f64>,
    pub binding_ratio_to_ceiling: Option<f64>,
    pub latency_ms_p50: Option<f64>,
    pub latency_ms_p90: Option<f64>,
    pub latency_ms_p99: Option<f64>,
    pub cpu_seconds: Option<f64>,
    pub peak_rss_mib: Option<f64>,
    pub sessions_decided: Option<f64>,
    pub sessions_empty: Option<f64>,
    /// Volcano's scheduler: all its sessions (it does not tell the empty ones apart).
    pub sessions_all: Option<f64>,
    /// The sessions' own time over the phase, from the start of each to its end
    /// (`volcano_e2e_scheduling_latency_milliseconds_sum`, which both schedulers export): the
    /// share of the CPU seconds the sessions take, less noisy than the whole process's figure.
    pub session_seconds: Option<f64>,
    /// The daemon's CPU seconds over Volcano's for the same phase, when both ran.
    pub cpu_ratio_to_volcano: Option<f64>,
    /// The daemon's API writes over the phase, by kind (`volcano_api_writes_total`).
    pub writes: BTreeMap<&'static str, f64>,
}

/// When each pod was first seen bound, by name.
type BindTimes = Arc<Mutex<HashMap<String, Instant>>>;

/// Watches the namespace's pods and records when each is first seen with a node.
fn watch_binds(ctx: &TestCtx) -> (BindTimes, tokio::task::JoinHandle<()>) {
    let times: BindTimes = Arc::default();
    let api = ctx.pods_api();
    let sink = times.clone();
    let task = tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default()).applied_objects();
        futures::pin_mut!(stream);
        while let Ok(Some(pod)) = stream.try_next().await {
            let bound = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_ref())
                .is_some();
            if let (true, Some(name)) = (bound, pod.metadata.name) {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entry(name)
                    .or_insert_with(Instant::now);
            }
        }
    });
    (times, task)
}

fn bound_count(times: &BindTimes, prefix: &str) -> (usize, Option<Instant>) {
    let (count, span) = bound_span(times, prefix);
    (count, span.map(|(_, last)| last))
}

/// How many pods of the prefix are bound, and when the first and the last were seen bound.
fn bound_span(times: &BindTimes, prefix: &str) -> (usize, Option<(Instant, Instant)>) {
    let times = times.lock().unwrap_or_else(PoisonError::into_inner);
    let mine = times.iter().filter(|(n, _)| n.starts_with(prefix));
    let mut count = 0;
    let mut span: Option<(Instant, Instant)> = None;
    for (_, &t) in mine {
        count += 1;
        span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
    }
    (count, span)
}

/// The daemon's CPU seconds so far (user + system), from `/proc/<pid>/stat`.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // /proc counts in USER_HZ ticks, 100 per second on Linux.
    Some(ticks / 100.0)
}

fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// Resets the peak RSS the kernel keeps for the process.
fn reset_peak_rss(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// Which scheduler a phase runs.
#[derive(Clone, Copy)]
enum Scheduler<'a> {
    VolcanoRs,
    /// Volcano's `vc-scheduler` at this path.
    Volcano(&'a std::path::Path),
}

impl Scheduler<'_> {
    fn name(self) -> &'static str {
        match self {
            Scheduler::VolcanoRs => "volcano-rs",
            Scheduler::Volcano(_) => "volcano",
        }
    }

    /// The phase's name for this scheduler: Volcano's phases are prefixed `vc-`, which also
    /// keeps their pods' names apart from the daemon's phase's.
    fn phase(self, name: &str) -> String {
        match self {
            Scheduler::VolcanoRs => name.to_string(),
            Scheduler::Volcano(_) => format!("vc-{name}"),
        }
    }
}

/// Sessions so far: (decided, empty) for the daemon, (all, 0) for Volcano's scheduler.
/// The `write` labels of `volcano_api_writes_total` (`cluster::api_client::classify`).
const WRITE_KINDS: [&str; 7] = [
    "bind",
    "event",
    "pod status",
    "pod delete",
    "podgroup status",
    "queue status",
    "other",
];

/// The daemon's writes so far by kind; empty for Volcano's scheduler.
fn writes(text: &str, scheduler: Scheduler<'_>) -> BTreeMap<&'static str, f64> {
    if !matches!(scheduler, Scheduler::VolcanoRs) {
        return BTreeMap::new();
    }
    WRITE_KINDS
        .iter()
        .filter_map(|&k| {
            Daemon::metric_value(text, "volcano_api_writes_total", &[("write", k)]).map(|v| (k, v))
        })
        .collect()
}

/// The sessions so far: decided and empty (the daemon), or all of them (Volcano's scheduler).
fn sessions_in(text: &str, scheduler: Scheduler<'_>) -> (f64, f64) {
    match scheduler {
        Scheduler::VolcanoRs => {
            let get = |outcome| {
                Daemon::metric_value(text, "volcano_sessions_total", &[("outcome", outcome)])
                    .unwrap_or(0.0)
            };
            (get("decided"), get("empty"))
        }
        Scheduler::Volcano(_) => {
            let all = Daemon::metric_value(
                text,
                "volcano_e2e_scheduling_latency_milliseconds_count",
                &[],
            );
            (all.unwrap_or(0.0), 0.0)
        }
    }
}

/// The sessions' time so far, in seconds (see [`Phase::session_seconds`]).
fn session_seconds_in(text: &str) -> Option<f64> {
    Daemon::metric_value(text, "volcano_e2e_scheduling_latency_milliseconds_sum", &[])
        .map(|ms| ms / 1000.0)
}

/// The daemon's figures over a phase.
struct Meter<'a> {
    pid: u32,
    scheduler: Scheduler<'a>,
    cpu: Option<f64>,
    sessions: (f64, f64),
    session_seconds: Option<f64>,
    writes: BTreeMap<&'static str, f64>,
}

impl<'a> Meter<'a> {
    /// From the daemon's start: its whole life so far is the phase's (the start-up, the
    /// initial lists and a first session that may run before any figure could be read).
    fn from_start(daemon: &Daemon, scheduler: Scheduler<'a>) -> Meter<'a> {
        Meter {
            pid: daemon.pid(),
            scheduler,
            cpu: Some(0.0),
            sessions: (0.0, 0.0),
            session_seconds: Some(0.0),
            writes: BTreeMap::new(),
        }
    }

    /// From now on, for a daemon already running.
    async fn start(daemon: &Daemon, scheduler: Scheduler<'a>) -> Meter<'a> {
        reset_peak_rss(daemon.pid());
        let cpu = cpu_seconds(daemon.pid());
        let text = daemon.metrics().await.unwrap_or_default();
        Meter {
            pid: daemon.pid(),
            scheduler,
            cpu,
            sessions: sessions_in(&text, scheduler),
            session_seconds: session_seconds_in(&text),
            writes: writes(&text, scheduler),
        }
    }

    async fn finish(&self, daemon: &Daemon, phase: &mut Phase) {
        phase.scheduler = self.scheduler.name();
        phase.cpu_seconds = cpu_seconds(self.pid).zip(self.cpu).map(|(b, a)| b - a);
        phase.peak_rss_mib = peak_rss_mib(self.pid);
        let text = daemon.metrics().await.unwrap_or_default();
        let (a, b) = sessions_in(&text, self.scheduler);
        phase.session_seconds = session_seconds_in(&text)
            .zip(self.session_seconds)
            .map(|(b, a)| b - a);
        phase.writes = writes(&text, self.scheduler)
            .into_iter()
            .map(|(k, v)| (k, v - self.writes.get(k).copied().unwrap_or(0.0)))
            .filter(|&(_, v)| v > 0.0)
            .collect();
        match self.scheduler {
            Scheduler::VolcanoRs => {
                phase.sessions_decided = Some(a - self.sessions.0);
                phase.sessions_empty = Some(b - self.sessions.1);
            }
            Scheduler::Volcano(_) => phase.sessions_all = Some(a - self.sessions.0),
        }
    }
}

/// Runs `n` futures made by `make`, `concurrency` at a time; fails on the first error.
async fn concurrently<F, Fut>(n: usize, concurrency: usize, make: F) -> anyhow::Result<()>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    futures::stream::iter((0..n).map(make))
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await
        .map(|_| ())
}

fn pod(ctx: &TestCtx, name: &str, group: Option<&str>, scheduler: &str) -> Pod {
    let mut b = ctx
        .pod(name)
        .cpu("1")
        .memory("1Gi")
        .scheduler_name(scheduler);
    if let Some(g) = group {
        b = b.group(g);
    }
    b.build()
}

async fn create_pods(
    ctx: &TestCtx,
    prefix: &str,
    count: usize,
    group: impl Fn(usize) -> Option<String>,
    scheduler: &str,
    concurrency: usize,
) -> anyhow::Result<()> {
    concurrently(count, concurrency, |i| {
        let p = pod(
            ctx,
            &format!("{prefix}-{i}"),
            group(i).as_deref(),
            scheduler,
        );
        async move { ctx.create_pod(p).await.map(|_| ()) }
    })
    .await
}

async fn delete_all_pods(ctx: &TestCtx) -> anyhow::Result<()> {
    let params = DeleteParams::default().grace_period(0);
    delete_all(ctx, ctx.pods_api(), &params, "pod").await
}

async fn delete_all_pod_groups(ctx: &TestCtx) -> anyhow::Result<()> {
    let params = DeleteParams::default();
    delete_all(ctx, ctx.pod_groups_api(), &params, "PodGroup").await
}

/// Times a collection delete is asked for before a run fails.
const DELETE_ATTEMPTS: u32 = 5;

/// Deletes every object of the namespace's `api` and waits until none is listed.
async fn delete_all<K>(
    ctx: &TestCtx,
    api: kube::Api<K>,
    params: &DeleteParams,
    kind: &str,
) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    // A large collection's delete can outlast the connection it went out on (the API server
    // closed one after a 5,000-pod phase): asked again, a few times, before the run fails.
    let mut attempt = 1;
    while let Err(e) = api.delete_collection(params, &ListParams::default()).await {
        if attempt == DELETE_ATTEMPTS {
            return Err(e).with_context(|| format!("deleting every {kind}"));
        }
        eprintln!("deleting every {kind} (attempt {attempt}): {e}; asking again");
        attempt += 1;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    ctx.wait_for(
        &format!("every {kind} gone"),
        Duration::from_secs(300),
        || async {
            let items = api.list(&ListParams::default()).await.ok()?.items;
            items.is_empty().then_some(())
        },
    )
    .await?;
    Ok(())
}

/// The raw bind ceiling: `n` pods of no scheduler (named `<name>-<i>`), bound by a bare client.
async fn ceiling(
    ctx: &TestCtx,
    name: &str,
    nodes: &[String],
    n: usize,
    concurrency: usize,
) -> anyhow::Result<Phase> {
    create_pods(ctx, name, n, |_| None, "nobody", concurrency).await?;
    let api = ctx.pods_api();
    let start = Instant::now();
    concurrently(n, concurrency, |i| {
        let api = api.clone();
        let pod = format!("{name}-{i}");
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(pod.clone()),
                namespace: Some(ctx.ns.clone()),
                ..Default::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(nodes[i % nodes.len()].clone()),
                ..Default::default()
            },
        };
        async move {
            let _: serde_json::Value = api
                .create_subresource("binding", &pod, &PostParams::default(), &binding)
                .await
                .context("binding")?;
            Ok(())
        }
    })
    .await?;
    let seconds = start.elapsed().as_secs_f64();
    delete_all_pods(ctx).await?;
    Ok(Phase {
        name: name.into(),
        scheduler: "bare client",
        pods: n,
        seconds,
        pods_per_sec: n as f64 / seconds,
        ..Phase::default()
    })
}

/// The ceiling with an idle daemon beside the bare client: it binds none of these pods (they
/// name no scheduler of its) but watches and mirrors them, as it does its own.
async fn ceiling_watched(
    ctx: &TestCtx,
    nodes: &[String],
    n: usize,
    concurrency: usize,
) -> anyhow::Result<Phase> {
    let mut daemon = start_daemon(ctx, Scheduler::VolcanoRs).await?;
    let meter = Meter::start(&daemon, Scheduler::VolcanoRs).await;
    let mut phase = ceiling(ctx, "ceiling-watched", nodes, n, concurrency).await?;
    meter.finish(&daemon, &mut phase).await;
    phase.scheduler = "bare client";
    daemon.terminate().await?;
    Ok(phase)
}

/// Volcano's chart configuration, which both schedulers get.
const CHART_CONF: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../config/volcano-chart.conf"
);

/// The scheduler with Volcano's chart settings. The daemon's log filter is `BENCH_DAEMON_LOG`
/// (default `warn`), so that a run can look at where a phase's time goes; Volcano's scheduler
/// keeps its default log level (its chart's `-v=3` would log more).
async fn start_daemon(ctx: &TestCtx, scheduler: Scheduler<'_>) -> anyhow::Result<Daemon> {
    let conf = format!("--scheduler-conf={CHART_CONF}");
    let args = [
        "--schedule-period=1s",
        "--kube-api-qps=2000",
        "--kube-api-burst=2000",
        &conf,
    ];
    match scheduler {
        Scheduler::VolcanoRs => {
            let log = std::env::var("BENCH_DAEMON_LOG").unwrap_or_else(|_| "warn".to_string());
            ctx.daemon_logging(&log, &args).await
        }
        Scheduler::Volcano(bin) => ctx.volcano_scheduler(bin, &args).await,
    }
}

/// `groups` gangs of `size` created first, then the scheduler started; until the last bind.
async fn backlog(
    ctx: &TestCtx,
    scheduler: Scheduler<'_>,
    (name, queue): (&str, &str),
    (groups, size): (usize, usize),
    sizes: &Sizes,
    times: &BindTimes,
) -> anyhow::Result<Phase> {
    let name = &scheduler.phase(name);
    for g in 0..groups {
        ctx.pod_group(&format!("{name}-{g}"), size as i32, queue)
            .await?;
    }
    let scheduler_name = ctx.scheduler.clone();
    create_pods(
        ctx,
        name,
        groups * size,
        |i| Some(format!("{name}-{}", i / size)),
        &scheduler_name,
        sizes.concurrency,
    )
    .await?;
    let start = Instant::now();
    let mut daemon = start_daemon(ctx, scheduler).await?;
    let meter = Meter::from_start(&daemon, scheduler);
    let total = groups * size;
    let deadline = start + Duration::from_secs(600);
    loop {
        let (bound, _) = bound_count(times, &format!("{name}-"));
        if bound >= total {
            break;
        }
        if Instant::now() > deadline {
            bail!("{name}: {bound} of {total} pods bound after 600 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, span) = bound_span(times, &format!("{name}-"));
    let (first, last) = span.unwrap_or_else(|| (Instant::now(), Instant::now()));
    let seconds = last.duration_since(start).as_secs_f64();
    let binding = last.duration_since(first).as_secs_f64();
    let mut phase = Phase {
        name: name.into(),
        pods: total,
        seconds,
        pods_per_sec: total as f64 / seconds,
        first_bind_seconds: Some(first.duration_since(start).as_secs_f64()),
        binding_pods_per_sec: (binding > 0.0).then(|| total as f64 / binding),
        ..Phase::default()
    };
    meter.finish(&daemon, &mut phase).await;
    daemon.terminate().await?;
    delete_all_pods(ctx).await?;
    delete_all_pod_groups(ctx).await?;
    Ok(phase)
}

fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.saturating_sub(1).min(sorted.len() - 1))
        .copied()
}

/// Single-pod jobs at a fixed rate with the daemon running.
async fn steady(
    ctx: &TestCtx,
    scheduler: Scheduler<'_>,
    queue: &str,
    sizes: &Sizes,
    times: &BindTimes,
) -> anyhow::Result<Phase> {
    let phase_name = scheduler.phase("steady");
    let prefix = format!("{phase_name}-");
    let mut daemon = start_daemon(ctx, scheduler).await?;
    // Let the first sessions settle before measuring.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let meter = Meter::start(&daemon, scheduler).await;
    let n = (sizes.steady_rate * sizes.steady_seconds as f64) as usize;
    let period = Duration::from_secs_f64(1.0 / sizes.steady_rate);
    let start = Instant::now();
    let created: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        tokio::time::sleep_until((start + period * i as u32).into()).await;
        let name = format!("{prefix}{i}");
        let (ctx_pods, ctx_groups) = (ctx.pods_api(), ctx.pod_groups_api());
        let pg = apis::PodGroup {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ctx.ns.clone()),
                ..Default::default()
            },
            spec: apis::PodGroupSpec {
                min_member: 1,
                queue: queue.to_string(),
                ..Default::default()
            },
            status: None,
        };
        let mut p = pod(ctx, &name, Some(&name), &ctx.scheduler);
        p.metadata.namespace = Some(ctx.ns.clone());
        let created = created.clone();
        tasks.push(tokio::spawn(async move {
            ctx_groups.create(&PostParams::default(), &pg).await?;
            ctx_pods.create(&PostParams::default(), &p).await?;
            created
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(name, Instant::now());
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    ctx.wait_for(
        "every steady pod bound",
        Duration::from_secs(120),
        || async { (bound_count(times, &prefix).0 >= n).then_some(()) },
    )
    .await?;
    let seconds = start.elapsed().as_secs_f64();
    let mut phase = Phase {
        name: phase_name,
        pods: n,
        seconds,
        pods_per_sec: n as f64 / seconds,
        ..Phase::default()
    };
    meter.finish(&daemon, &mut phase).await;
    let mut latencies: Vec<f64> = {
        let created = created.lock().unwrap_or_else(PoisonError::into_inner);
        let bound = times.lock().unwrap_or_else(PoisonError::into_inner);
        created
            .iter()
            .filter_map(|(name, c)| {
                let b = bound.get(name)?;
                Some(b.saturating_duration_since(*c).as_secs_f64() * 1e3)
            })
            .collect()
    };
    latencies.sort_by(f64::total_cmp);
    phase.latency_ms_p50 = percentile(&latencies, 50.0);
    phase.latency_ms_p90 = percentile(&latencies, 90.0);
    phase.latency_ms_p99 = percentile(&latencies, 99.0);
    daemon.terminate().await?;
    // The next scheduler starts from the same cluster.
    delete_all_pods(ctx).await?;
    delete_all_pod_groups(ctx).await?;
    Ok(phase)
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| format!("{v:.digits$}"))
}

/// Prints the table.
pub fn print_table(phases: &[Phase]) {
    println!(
        "| phase | pods | seconds | pods/s | of ceiling | first bind s | pods/s while binding | of ceiling | p50 / p90 / p99 ms | CPU s | sessions' s | CPU / Volcano's | peak RSS MiB | sessions decided / empty |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let percent = |r: Option<f64>| r.map_or("–".into(), |r| format!("{:.0} %", r * 100.0));
    for p in phases {
        println!(
            "| {} | {} | {:.1} | {:.0} | {} | {} | {} | {} | {} / {} / {} | {} | {} | {} | {} | {} |",
            p.name,
            p.pods,
            p.seconds,
            p.pods_per_sec,
            percent(p.ratio_to_ceiling),
            fmt(p.first_bind_seconds, 2),
            fmt(p.binding_pods_per_sec, 0),
            percent(p.binding_ratio_to_ceiling),
            fmt(p.latency_ms_p50, 0),
            fmt(p.latency_ms_p90, 0),
            fmt(p.latency_ms_p99, 0),
            fmt(p.cpu_seconds, 2),
            fmt(p.session_seconds, 2),
            fmt(p.cpu_ratio_to_volcano, 2),
            fmt(p.peak_rss_mib, 0),
            match p.sessions_all {
                Some(all) => format!("{all:.0} in all"),
                None => format!(
                    "{} / {}",
                    fmt(p.sessions_decided, 0),
                    fmt(p.sessions_empty, 0)
                ),
            },
        );
    }
}

/// The whole run: nodes, the four phases, cleanup.
pub async fn run(env: &Env, sizes: &Sizes) -> anyhow::Result<Vec<Phase>> {
    let ctx = TestCtx::new(env, "bench").await?;
    let result = phases(&ctx, sizes).await;
    if let Err(e) = ctx.cleanup().await {
        eprintln!("cleanup: {e:#}");
    }
    result
}

async fn phases(ctx: &TestCtx, sizes: &Sizes) -> anyhow::Result<Vec<Phase>> {
    eprintln!("creating {} nodes", sizes.nodes);
    let nodes = ctx.nodes("n", sizes.nodes, "32", "256Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;
    let (times, watch) = watch_binds(ctx);
    // The daemon first, then (when asked) Volcano's scheduler on the same phase.
    let mut schedulers = vec![Scheduler::VolcanoRs];
    if let Some(bin) = &sizes.volcano {
        schedulers.push(Scheduler::Volcano(bin));
    }
    let mut out = Vec::new();
    let n = sizes.gangs * sizes.gang_size;
    if sizes.runs("ceiling") {
        eprintln!("ceiling");
        out.push(ceiling(ctx, "ceiling", &nodes, n, sizes.concurrency).await?);
    }
    if sizes.runs("ceiling-watched") {
        eprintln!("ceiling-watched");
        out.push(ceiling_watched(ctx, &nodes, n, sizes.concurrency).await?);
    }
    for &s in &schedulers {
        if sizes.runs("backlog") {
            eprintln!("{}", s.phase("backlog"));
            let shape = (sizes.gangs, sizes.gang_size);
            out.push(backlog(ctx, s, ("backlog", &queue), shape, sizes, &times).await?);
        }
    }
    for &s in &schedulers {
        if sizes.runs("gang") {
            eprintln!("{}", s.phase("gang"));
            let shape = (1, sizes.big_gang);
            out.push(backlog(ctx, s, ("gang", &queue), shape, sizes, &times).await?);
        }
    }
    // Measured again once the cluster has settled: the first measurement, right after the
    // nodes are made, has come out lower than the daemon's own rate. The ratios are taken to
    // the higher of the two.
    if sizes.runs("backlog") || sizes.runs("gang") {
        eprintln!("ceiling again");
        out.push(ceiling(ctx, "ceiling-again", &nodes, n, sizes.concurrency).await?);
    }
    let ceiling_rate = out
        .iter()
        .filter(|p| p.name == "ceiling" || p.name == "ceiling-again")
        .map(|p| p.pods_per_sec)
        .fold(0.0, f64::max);
    for &s in &schedulers {
        if sizes.runs("steady") {
            eprintln!("{}", s.phase("steady"));
            out.push(steady(ctx, s, &queue, sizes, &times).await?);
        }
    }
    watch.abort();
    for p in out.iter_mut().filter(|p| p.name == "ceiling-watched") {
        p.ratio_to_ceiling = (ceiling_rate > 0.0).then(|| p.pods_per_sec / ceiling_rate);
    }
    for p in out
        .iter_mut()
        // The phases that start a scheduler and wait for its binds (backlog, gang).
        .filter(|p| p.first_bind_seconds.is_some())
    {
        p.ratio_to_ceiling = Some(p.pods_per_sec / ceiling_rate);
        p.binding_ratio_to_ceiling = p.binding_pods_per_sec.map(|r| r / ceiling_rate);
    }
    let volcano_cpu: HashMap<String, f64> = out
        .iter()
        .filter_map(|p| Some((p.name.strip_prefix("vc-")?.to_string(), p.cpu_seconds?)))
        .collect();
    for p in &mut out {
        if let (Some(cpu), Some(&theirs)) = (p.cpu_seconds, volcano_cpu.get(&p.name)) {
            p.cpu_ratio_to_volcano = (theirs > 0.0).then(|| cpu / theirs);
        }
    }
    Ok(out)
}
