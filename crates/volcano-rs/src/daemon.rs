//! `volcano-rs run`: the scheduler daemon (spec/kubernetes.md §1, §2; spec/framework.md §2).
//!
//! Start-up: configuration, API client, watchers for every mirrored kind, HTTP servers, leader
//! election. No session runs before every watch has listed once (scheduling on a half-filled
//! cache overcommits nodes). Then, while this replica leads: a session every
//! `--schedule-period`, or sooner when pending work arrives (debounced), run on a blocking
//! thread so watch events keep flowing; its binds are assumed in the state at once and the
//! executor writes everything back. SIGTERM stops sessions, lets in-flight writes finish
//! (bounded), releases the lease and exits 0.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use cluster::conf_watch::{ConfSource, ReloadOutcome};
use cluster::executor::{Executor, ExecutorConfig};
use cluster::http::{self, Health};
use cluster::leader::{self, LeaderConfig};
use cluster::metrics::Metrics;
use cluster::ratelimit::RateLimiter;
use cluster::shared::Shared;
use engine::conf::KnownNames;
use engine::framework::{Event as SchedEvent, EventType, ObjectRef, Session, SessionOptions};
use engine::state::{ClusterState, StateOptions};
use kube::Client;
use tokio::sync::{mpsc, watch};

/// Flags of `volcano-rs run`, named as Volcano's scheduler names them where they apply.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Pods whose spec.schedulerName is one of these are scheduled (repeatable).
    #[arg(long = "scheduler-name", value_name = "NAME", default_values_t = ["volcano-rs".to_string()])]
    pub scheduler_names: Vec<String>,
    /// Volcano scheduler configuration file (actions + tiers); reloaded when it changes.
    /// Default: Volcano's embedded configuration.
    #[arg(long, value_name = "FILE")]
    pub scheduler_conf: Option<PathBuf>,
    /// Refuse a configuration that names a plugin this build lacks, or configures an unknown
    /// action, instead of skipping it with a warning (Volcano's behaviour, the default).
    #[arg(long)]
    pub strict_config: bool,
    /// Time between the end of one session and the start of the next.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub schedule_period: Duration,
    /// Queue for PodGroups with an empty spec.queue and pods without a queue annotation;
    /// created at start-up if missing.
    #[arg(long, default_value = "default")]
    pub default_queue: String,
    /// Path to a kubeconfig; default: $KUBECONFIG, ~/.kube/config, or the in-cluster config.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Client-side queries per second for API writes (Volcano's default).
    #[arg(long, default_value_t = 2000.0)]
    pub kube_api_qps: f64,
    /// Client-side burst for API writes.
    #[arg(long, default_value_t = 2000)]
    pub kube_api_burst: u32,
    /// Concurrent bind requests.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub bind_workers: u32,
    /// Run only while holding the leader Lease.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub leader_elect: bool,
    #[arg(long, default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_elect_lease_duration: Duration,
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_elect_renew_deadline: Duration,
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_elect_retry_period: Duration,
    /// Name of the leader Lease.
    #[arg(long, default_value = "volcano-rs")]
    pub leader_elect_resource_name: String,
    /// Namespace of the leader Lease.
    #[arg(long, default_value = "volcano-system")]
    pub leader_elect_resource_namespace: String,
    /// Address of the /metrics server.
    #[arg(long, default_value = ":8080")]
    pub listen_address: String,
    /// Serve /debug/state (the cluster as this replica sees it, for `volcano-rs simulate`) on
    /// this address; off when empty. `:PORT` means 127.0.0.1:PORT: the dump holds every pod
    /// and node of the cluster and is served without authentication.
    #[arg(long, default_value = "", value_name = "HOST:PORT")]
    pub debug_state_address: String,
    /// Address of the /healthz and /readyz server.
    #[arg(long, default_value = ":11251")]
    pub healthz_address: String,
    /// Percentage of nodes to evaluate per task; 0 = adaptive.
    #[arg(long, default_value_t = 0)]
    pub percentage_nodes_to_find: u32,
    /// Lower bound of the adaptive percentage.
    #[arg(long, default_value_t = 5)]
    pub minimum_percentage_nodes_to_find: u32,
    /// Lower bound of feasible nodes to find per task.
    #[arg(long, default_value_t = 100)]
    pub minimum_feasible_nodes: u32,
    /// Only nodes with at least one of these labels (key:value; repeatable or comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "KEY:VALUE")]
    pub node_selector: Vec<String>,
}

/// Parses "1s", "500ms", "2m", "1h", "1.5s" (Go-style duration, one unit).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| format!("{s:?}: missing unit (e.g. 1s)"))?;
    let (num, unit) = s.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("{s:?}: not a duration"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{s:?}: must be a non-negative duration"));
    }
    let secs = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m, h)")),
    };
    Ok(Duration::from_secs_f64(secs))
}

fn parse_addr(s: &str) -> anyhow::Result<SocketAddr> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .with_context(|| format!("invalid address {s:?}"))
}

/// `--debug-state-address`: empty = off; a bare `:PORT` binds loopback only.
fn parse_debug_addr(s: &str) -> anyhow::Result<Option<SocketAddr>> {
    if s.is_empty() {
        return Ok(None);
    }
    let full = if s.starts_with(':') {
        format!("127.0.0.1{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map(Some)
        .with_context(|| format!("invalid --debug-state-address {s:?}"))
}

fn parse_node_selector(items: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    items
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.split_once(':')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .with_context(|| format!("--node-selector {s:?}: expected key:value"))
        })
        .collect()
}

async fn build_client(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .with_context(|| format!("kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig and not running in a cluster")?,
    };
    Client::try_from(config).context("building the API client")
}

/// Resolves when SIGTERM or SIGINT arrives.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The object configuration events are recorded on: this pod when the downward API tells us
/// (the Helm chart sets POD_NAME/POD_NAMESPACE), else the leader Lease.
fn self_reference(args: &RunArgs) -> ObjectRef {
    match (std::env::var("POD_NAME"), std::env::var("POD_NAMESPACE")) {
        (Ok(name), Ok(ns)) if !name.is_empty() => ObjectRef {
            kind: "Pod",
            namespace: Some(ns),
            name,
            uid: String::new(),
        },
        _ => ObjectRef {
            kind: "Lease",
            namespace: Some(args.leader_elect_resource_namespace.clone()),
            name: args.leader_elect_resource_name.clone(),
            uid: String::new(),
        },
    }
}

/// Serves `/debug/state`: the state and the configuration in force, read at each request.
async fn serve_debug_state(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    conf: watch::Receiver<Arc<engine::conf::SchedulerConf>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let addr = listener.local_addr().ok();
    let dump: http::DumpFn = Arc::new(move || {
        let conf = conf.borrow().clone();
        cluster::dump::dump_yaml(&shared.lock(), Some(&conf))
    });
    if let Err(e) = http::serve_debug_on(listener, dump, shutdown).await {
        tracing::error!(address = ?addr, error = %e, "debug state server failed");
    }
}

/// Sessions whose events may be queued at once (see the session loop).
const MAX_EVENT_BATCHES: usize = 4;

/// Logs, counts and publishes what the configuration reader found; true when a new
/// configuration was applied.
async fn report_config_outcomes(
    outcomes: Vec<ReloadOutcome>,
    metrics: &Metrics,
    executor: &Executor,
    self_ref: &ObjectRef,
) -> bool {
    let mut applied = false;
    for outcome in outcomes {
        match outcome {
            ReloadOutcome::Applied { warnings } => {
                for w in &warnings {
                    tracing::warn!(warning = %w, "scheduler configuration");
                }
                tracing::info!("scheduler configuration reloaded");
                metrics.config_reload(true);
                applied = true;
            }
            ReloadOutcome::Refused { error } => {
                tracing::error!(%error, "scheduler configuration refused; the previous one stays in force");
                metrics.config_reload(false);
                executor
                    .publish(&SchedEvent {
                        object: self_ref.clone(),
                        type_: EventType::Warning,
                        reason: "ConfigRefused".into(),
                        message: error,
                    })
                    .await;
            }
        }
    }
    applied
}

/// Runs the state invariants off the async threads and reports what is new.
async fn check_state_invariants(
    shared: &Shared,
    tracker: &mut cluster::invariants::InvariantTracker,
    metrics: &Metrics,
) {
    let snapshot = shared.snapshot();
    if let Ok(found) =
        tokio::task::spawn_blocking(move || engine::state::invariants::check_state(&snapshot)).await
    {
        report_violations(metrics, tracker.observe_state(found, Instant::now()));
    }
}

/// Publishes a session's events without holding up the loop: they take the rate limit's
/// tokens last, and a session waiting for them would hold back the next session's status
/// writes. At most [`MAX_EVENT_BATCHES`] sessions' events are queued; beyond that a session's
/// own are dropped.
fn publish_in_background(
    in_flight: &mut tokio::task::JoinSet<()>,
    executor: &Arc<Executor>,
    batches: &Arc<std::sync::atomic::AtomicUsize>,
    events: Vec<SchedEvent>,
) {
    if events.is_empty() {
        return;
    }
    if batches.load(Ordering::SeqCst) >= MAX_EVENT_BATCHES {
        tracing::debug!(
            events = events.len(),
            "events of earlier sessions still queued; this session's are dropped"
        );
        return;
    }
    batches.fetch_add(1, Ordering::SeqCst);
    let (ex, batches) = (executor.clone(), batches.clone());
    in_flight.spawn(async move {
        for ev in &events {
            ex.publish(ev).await;
        }
        batches.fetch_sub(1, Ordering::SeqCst);
    });
}

/// Logs and counts runtime invariant violations (docs/operations.md).
fn report_violations(metrics: &Metrics, found: Vec<engine::state::invariants::Violation>) {
    for v in found {
        tracing::error!(
            kind = v.kind.as_str(),
            subject = %v.subject,
            detail = %v.detail,
            "invariant violation"
        );
        metrics.invariant_violation(v.kind.as_str());
    }
}

/// One Warning event per plugin the configuration names but this build lacks, so that
/// `kubectl get events` shows why a policy the file asks for does not apply.
fn skipped_plugin_events(
    object: &ObjectRef,
    file: Option<&std::path::Path>,
    skipped: &[String],
) -> Vec<SchedEvent> {
    let file = file.map_or_else(
        || "<embedded default>".to_string(),
        |p| p.display().to_string(),
    );
    skipped
        .iter()
        .map(|name| SchedEvent {
            object: object.clone(),
            type_: EventType::Warning,
            reason: "PluginSkipped".into(),
            message: format!(
                "{file}: plugin {name:?} is not provided by volcano-rs; it is skipped and the \
                 rest of the configuration runs (--strict-config refuses such a file)"
            ),
        })
        .collect()
}

/// Runs the daemon until SIGTERM/SIGINT.
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let registry = plugins::registry();
    let plugin_names = registry.names();
    let known = KnownNames {
        actions: engine::actions::KNOWN_ACTIONS,
        plugins: &plugin_names,
        strict: args.strict_config,
        check_arguments: Some(plugins::check_arguments),
    };
    let mut conf = ConfSource::load(args.scheduler_conf.clone(), &known)?;
    let listen = parse_addr(&args.listen_address)?;
    let debug_addr = parse_debug_addr(&args.debug_state_address)?;
    let healthz = parse_addr(&args.healthz_address)?;
    // One identity for the process: the Lease holder, the events' reporting instance and the
    // prefix of session UIDs (PodGroup condition transitionIDs) all name this replica.
    let identity = leader::default_identity();
    let leader_cfg = LeaderConfig {
        namespace: args.leader_elect_resource_namespace.clone(),
        name: args.leader_elect_resource_name.clone(),
        identity: identity.clone(),
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
    };
    if args.leader_elect {
        leader_cfg
            .validate()
            .map_err(|e| anyhow::anyhow!("leader election: {e}"))?;
    }
    let client = build_client(args.kubeconfig.as_ref()).await?;

    let shared = Shared::new(ClusterState::new(StateOptions {
        scheduler_names: args.scheduler_names.clone(),
        default_queue: args.default_queue.clone(),
        node_selector: parse_node_selector(&args.node_selector)?,
    }));
    let metrics = Metrics::new();
    let health = Arc::new(Health::new(args.leader_elect));

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let wait_shutdown = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    // HTTP servers: every replica serves them, leader or not.
    let (conf_tx, conf_rx) = watch::channel(conf.current());
    let mut servers = tokio::task::JoinSet::new();
    {
        let (m, h, rx) = (metrics.clone(), health.clone(), shutdown_rx.clone());
        servers.spawn(async move {
            if let Err(e) = http::serve(listen, m, h, wait_shutdown(rx)).await {
                tracing::error!(address = %listen, error = %e, "metrics server failed");
            }
        });
    }
    if let Some(addr) = debug_addr {
        let listener = http::bind(addr)
            .await
            .with_context(|| format!("--debug-state-address {addr}"))?;
        servers.spawn(serve_debug_state(
            listener,
            shared.clone(),
            conf_rx,
            wait_shutdown(shutdown_rx.clone()),
        ));
    }
    {
        let (h, rx) = (health.clone(), shutdown_rx.clone());
        // A health port that cannot be bound aborts start-up (as Volcano does).
        let listener = http::bind(healthz)
            .await
            .with_context(|| format!("--healthz-address {healthz}"))?;
        servers.spawn(async move {
            if let Err(e) = http::serve_health_on(listener, h, wait_shutdown(rx)).await {
                tracing::error!(address = %healthz, error = %e, "health server failed");
            }
        });
    }

    // Watchers.
    let (problems_tx, mut problems_rx) = mpsc::unbounded_channel::<SchedEvent>();
    let watchers = cluster::watch::spawn_all(client.clone(), shared.clone(), problems_tx);

    // Leader election. The lease is released only after in-flight writes have drained, so a
    // standby never writes while we still do.
    let (leader_tx, mut leader_rx) = watch::channel(!args.leader_elect);
    // Every write checks it: only a replica that renewed its Lease within the renew deadline
    // writes, whatever the session loop believes.
    let fence = if args.leader_elect {
        leader::Fence::elected()
    } else {
        leader::Fence::always()
    };
    health.set_fence(fence.clone());
    let (release_tx, release_rx) = watch::channel(false);
    let elector = if args.leader_elect {
        let c = client.clone();
        Some(tokio::spawn(leader::run(
            c,
            leader_cfg,
            leader_tx,
            fence.clone(),
            wait_shutdown(release_rx),
        )))
    } else {
        None
    };

    let limiter = Arc::new(RateLimiter::new(args.kube_api_qps, args.kube_api_burst));
    let executor = Arc::new(Executor::new(
        client.clone(),
        shared.clone(),
        limiter,
        metrics.clone(),
        ExecutorConfig {
            bind_workers: args.bind_workers as usize,
            scheduler_name: args
                .scheduler_names
                .first()
                .cloned()
                .unwrap_or_else(|| "volcano-rs".into()),
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| identity.clone()),
        },
        fence.clone(),
    ));
    let session_options = SessionOptions {
        minimum_feasible_nodes: args.minimum_feasible_nodes as usize,
        minimum_percentage_nodes_to_find: args.minimum_percentage_nodes_to_find as usize,
        percentage_nodes_to_find: args.percentage_nodes_to_find as usize,
        scheduler_name: executor_name(&args),
    };
    let registry = Arc::new(registry);

    let signal = tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        let _ = shutdown_tx.send(true);
    });

    // Wait for every watch to list once.
    let mut shutdown = shutdown_rx.clone();
    while !shared.all_synced() {
        tokio::select! {
            _ = shared.sync_done.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(5)) => {
                if !shared.all_synced() {
                    tracing::info!(waiting_for = ?shared.unsynced_kinds(), "waiting for the first list of every watch");
                }
            }
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
    health.synced.store(true, Ordering::SeqCst);
    tracing::info!("caches synced");

    let mut in_flight = tokio::task::JoinSet::new();
    let mut seen = SeenSeries::default();
    let mut queues_ensured = false;
    let mut cycle: u64 = 0;
    let self_ref = self_reference(&args);
    // The skipped plugins last reported as events; `None` until the leader first reports.
    let mut reported_skips: Option<Vec<String>> = None;
    let mut invariants = cluster::invariants::InvariantTracker::default();
    let mut sessions_paused = false;
    let event_batches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    metrics.set_skipped_plugins(&conf.current().skipped_plugins);
    loop {
        if *shutdown.borrow() {
            break;
        }
        // The elector only ends on shutdown; if it died (a panic), nobody renews or gives up
        // the Lease for us any more: stop, so that a restart campaigns again.
        if elector.as_ref().is_some_and(|e| e.is_finished()) {
            anyhow::bail!("the leader election task ended unexpectedly; exiting");
        }
        let leading = *leader_rx.borrow();
        health.leader.store(leading, Ordering::SeqCst);
        metrics.set_leader(leading);
        if !leading {
            queues_ensured = false;
            // Standby: keep the state warm, drop problem reports (the leader reports them).
            while problems_rx.try_recv().is_ok() {}
            tokio::select! {
                _ = leader_rx.changed() => {}
                _ = shutdown.wait_for(|s| *s) => break,
            }
            continue;
        }

        // Configuration reload: the background thread read and parsed the file; what it
        // accepted applies from this session on.
        let applied = report_config_outcomes(conf.poll(), &metrics, &executor, &self_ref).await;
        let current = conf.current();
        if applied {
            metrics.set_skipped_plugins(&current.skipped_plugins);
            conf_tx.send_replace(current.clone());
            // The new configuration may need a queue the old one did not (`root`).
            queues_ensured = false;
        }
        if reported_skips.as_ref() != Some(&current.skipped_plugins) {
            for event in skipped_plugin_events(&self_ref, conf.path(), &current.skipped_plugins) {
                executor.publish(&event).await;
            }
            reported_skips = Some(current.skipped_plugins.clone());
        }
        if !queues_ensured {
            queues_ensured = true;
            for (name, reclaimable) in wanted_queues(&args.default_queue, &current) {
                if let Err(e) = cluster::queues::ensure_queue(&client, &name, reclaimable).await {
                    tracing::warn!(queue = %name, error = %e, "could not ensure queue; retrying next cycle");
                    queues_ensured = false;
                }
            }
        }
        while let Ok(ev) = problems_rx.try_recv() {
            executor.publish(&ev).await;
        }

        // No session on a view that is going stale: wait while a watch is broken (its retries
        // come at least once a second; see `Shared::broken_watches`).
        let broken = shared.broken_watches();
        if !broken.is_empty() {
            if !sessions_paused {
                tracing::warn!(kinds = ?broken, "watches broken; sessions paused until they recover");
                sessions_paused = true;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = shutdown.wait_for(|s| *s) => break,
            }
            continue;
        }
        if sessions_paused {
            tracing::info!("watches working again; sessions resume");
            sessions_paused = false;
        }

        // One session, off the async worker threads.
        cycle += 1;
        let snapshot = shared.snapshot();
        let (reg, opts) = (registry.clone(), session_options.clone());
        let uid = format!("{identity}-{cycle}");
        let now = k8s_openapi::jiff::Timestamp::now();
        let session = tokio::task::spawn_blocking(move || {
            let start = Instant::now();
            let clock: engine::framework::Clock = Arc::new(move || start.elapsed());
            let mut ssn =
                Session::open_timed(&snapshot, current, &reg, opts, now, uid, Some(clock));
            let opened = start.elapsed();
            let timings = engine::actions::run_configured_actions(&mut ssn, &|| start.elapsed());
            let decisions = ssn.close();
            (decisions, opened, timings, start.elapsed())
        })
        .await;
        let (decisions, opened, timings, total) = match session {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "session failed; next one in a period");
                metrics.session_failed();
                tokio::time::sleep(args.schedule_period).await;
                continue;
            }
        };
        metrics.observe_session(opened, &timings, total);
        for t in &decisions.plugin_timings {
            metrics.observe_plugin(&t.plugin, t.on_session, t.duration);
        }
        metrics.record_decisions(&decisions);
        record_job_and_queue_lifecycle(&metrics, &decisions, &mut seen, now);
        {
            let state = shared.lock();
            for b in &decisions.binds {
                if let Some(created) = state.pod(&b.pod).and_then(|p| p.creation)
                    && let Ok(age) = Duration::try_from(now.duration_since(created))
                {
                    metrics.observe_task_stage(cluster::metrics::TaskStage::Assumed, age);
                }
            }
        }
        if !*leader_rx.borrow() {
            tracing::warn!("leadership lost during the session; its decisions are dropped");
            continue;
        }
        tracing::debug!(
            cycle,
            binds = decisions.binds.len(),
            evictions = decisions.evictions.len(),
            ms = total.as_millis() as u64,
            "session"
        );
        let binds: Vec<(&str, &str)> = decisions
            .binds
            .iter()
            .map(|b| (b.pod.as_str(), b.node.as_str()))
            .collect();
        report_violations(
            &metrics,
            engine::state::invariants::check_binds(&shared.lock(), binds),
        );
        executor.assume(&decisions);
        // Sessions run at least once a period, so this is also the periodic check.
        check_state_invariants(&shared, &mut invariants, &metrics).await;
        // Binds run in the background: they are assumed in the state, so no later session
        // decides them again. The other writes (PodGroup and Queue status, pod conditions,
        // evictions, events) finish before the next session, as Volcano writes job status at
        // session close. A session compares against what the watches show; writes still
        // waiting for the rate limiter would be decided again by every following session, pile
        // up without bound, starve the binds and land out of order.
        // Events go in the background too (see `publish_in_background`).
        let mut decisions = decisions;
        let binds = engine::framework::Decisions {
            binds: std::mem::take(&mut decisions.binds),
            ..Default::default()
        };
        let events = std::mem::take(&mut decisions.events);
        let ex = executor.clone();
        in_flight.spawn(async move { ex.execute(binds).await });
        publish_in_background(&mut in_flight, &executor, &event_batches, events);
        let ex = executor.clone();
        let mut writes = tokio::spawn(async move { ex.execute(decisions).await });
        tokio::select! {
            _ = &mut writes => {}
            _ = shutdown.wait_for(|s| *s) => {
                // Drained with the binds below.
                in_flight.spawn(async move {
                    let _ = writes.await;
                });
                break;
            }
        }
        while in_flight.try_join_next().is_some() {}

        // Next session after the period, or sooner when pending work arrives (debounced).
        tokio::select! {
            _ = tokio::time::sleep(args.schedule_period) => {}
            _ = shared.work.notified() => tokio::time::sleep(Duration::from_millis(20)).await,
            _ = shutdown.wait_for(|s| *s) => break,
            _ = leader_rx.changed() => {}
        }
    }

    // Shutdown: let in-flight writes finish (bounded), then release the lease.
    let drain = async { while in_flight.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(10), drain)
        .await
        .is_err()
    {
        tracing::warn!("in-flight writes did not finish within 10s");
    }
    let _ = release_tx.send(true);
    if let Some(e) = elector {
        let _ = tokio::time::timeout(Duration::from_secs(5), e).await;
    }
    for w in watchers {
        w.abort();
    }
    signal.abort();
    servers.abort_all();
    Ok(())
}

/// Queues and jobs reported by the previous session, to delete the series of those that are gone.
#[derive(Default)]
struct SeenSeries {
    queues: std::collections::BTreeSet<String>,
    jobs: std::collections::BTreeMap<String, (String, String, String)>,
}

/// Job e2e gauges for this session, and removal of the series of queues and jobs that left the
/// cluster (Volcano does it on informer deletes; we do it when a session no longer sees them).
fn record_job_and_queue_lifecycle(
    metrics: &Metrics,
    d: &engine::framework::Decisions,
    seen: &mut SeenSeries,
    now: k8s_openapi::jiff::Timestamp,
) {
    use cluster::metrics::JobLabels;
    for gone in seen
        .queues
        .iter()
        .filter(|q| !d.queue_metrics.contains_key(*q))
    {
        metrics.remove_queue(gone);
    }
    seen.queues = d.queue_metrics.keys().cloned().collect();
    for (uid, (ns, name, queue)) in &seen.jobs {
        if !d.job_metrics.contains_key(uid) {
            metrics.remove_job(JobLabels {
                namespace: ns,
                name,
                queue,
            });
        }
    }
    seen.jobs.clear();
    for (uid, m) in &d.job_metrics {
        let labels = JobLabels {
            namespace: &m.namespace,
            name: &m.name,
            queue: &m.queue,
        };
        if let Some(created) = m.creation {
            metrics.set_job_start_time(labels, created);
            if m.placed > 0
                && let Ok(age) = Duration::try_from(now.duration_since(created))
            {
                metrics.job_task_allocated(labels, age, now);
            }
        }
        seen.jobs.insert(
            uid.clone(),
            (m.namespace.clone(), m.name.clone(), m.queue.clone()),
        );
    }
}

/// The queues the daemon creates if missing (spec/kubernetes.md §4.8.3), reclaimable or not: the
/// default queue, and `root` when a plugin of the configuration runs in hierarchy mode. Ensured
/// when leadership is gained and after every applied reload.
fn wanted_queues(default_queue: &str, conf: &engine::conf::SchedulerConf) -> Vec<(String, bool)> {
    let mut wanted = vec![(default_queue.to_string(), true)];
    if conf.plugin_options().any(|p| p.enable_hierarchy) {
        wanted.push((apis::ROOT_QUEUE.to_string(), false));
    }
    wanted
}

fn executor_name(args: &RunArgs) -> String {
    args.scheduler_names
        .first()
        .cloned()
        .unwrap_or_else(|| "volcano-rs".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("1d").is_err());
    }

    #[test]
    fn addresses_and_selectors() {
        assert_eq!(parse_addr(":8080").ok(), "0.0.0.0:8080".parse().ok());
        assert_eq!(parse_addr("127.0.0.1:9").ok(), "127.0.0.1:9".parse().ok());
        // The state dump is off by default and loopback-only unless a host is given.
        assert_eq!(parse_debug_addr("").ok(), Some(None));
        assert_eq!(
            parse_debug_addr(":8081").ok(),
            Some("127.0.0.1:8081".parse().ok())
        );
        assert_eq!(
            parse_debug_addr("0.0.0.0:8081").ok(),
            Some("0.0.0.0:8081".parse().ok())
        );
        assert!(parse_debug_addr("nope").is_err());
        assert!(parse_addr("nonsense").is_err());
        assert_eq!(
            parse_node_selector(&["pool:batch".into(), "zone: a".into()]).ok(),
            Some(vec![
                ("pool".into(), "batch".into()),
                ("zone".into(), "a".into())
            ])
        );
        assert!(parse_node_selector(&["nocolon".into()]).is_err());
    }

    /// A reload that turns hierarchy on needs `root`, which only the daemon creates.
    #[test]
    fn a_hierarchy_configuration_wants_the_root_queue() {
        let registry = plugins::registry();
        let names = registry.names();
        let known = KnownNames {
            actions: engine::actions::KNOWN_ACTIONS,
            plugins: &names,
            strict: true,
            check_arguments: None,
        };
        let conf = |text: &str| engine::conf::parse(text, &known).map(|p| p.conf);
        let flat = conf("actions: allocate\ntiers:\n- plugins:\n  - name: drf\n").unwrap();
        assert_eq!(
            wanted_queues("default", &flat),
            [("default".to_string(), true)]
        );
        let hierarchy = conf(
            "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n",
        )
        .unwrap();
        assert_eq!(
            wanted_queues("default", &hierarchy),
            [
                ("default".to_string(), true),
                (apis::ROOT_QUEUE.to_string(), false)
            ]
        );
    }
}
