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
use std::time::Duration;

use anyhow::Context;
use cluster::api_client::{self, WritePolicy};
use cluster::conf_watch::ConfSource;
use cluster::executor::{Executor, ExecutorConfig};
use cluster::http::{self, Health};
use cluster::leader::{self, LeaderConfig};
use cluster::metrics::Metrics;
use cluster::ratelimit::RateLimiter;
use cluster::scheduler::{FencedLeader, Scheduler, SchedulerParts, WriteSink};
use cluster::shared::Shared;
use engine::conf::KnownNames;
use engine::framework::{Event as SchedEvent, ObjectRef, SessionOptions};
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
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", action = clap::ArgAction::Set, value_parser = parse_go_bool)]
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
    /// The API server's address; overrides the kubeconfig's.
    #[arg(long, value_name = "URL")]
    pub master: Option<String>,
    /// Client-side queries per second for API writes (Volcano's default).
    #[arg(long, default_value_t = 2000.0)]
    pub kube_api_qps: f64,
    /// Client-side burst for API writes.
    #[arg(long, default_value_t = 2000)]
    pub kube_api_burst: u32,
    /// Concurrent bind requests.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub bind_workers: u32,
    /// Run only while holding the leader Lease (`--leader-elect` alone means true).
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL",
          value_parser = parse_go_bool)]
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
    /// Namespace of the leader Lease; default: the pod's own namespace (POD_NAMESPACE, else the
    /// service account's namespace file), else the kubeconfig context's namespace.
    #[arg(long, value_name = "NAMESPACE")]
    pub leader_elect_resource_namespace: Option<String>,
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

/// Go's duration syntax (`time.ParseDuration`: "1m30s", "500ms", "1.5h"), not negative.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    match engine::conf::parse_go_duration(s) {
        Some(nanos) if nanos >= 0 => Ok(Duration::from_nanos(nanos as u64)),
        Some(_) => Err(format!("{s:?}: must be a non-negative duration")),
        None => Err(format!(
            "{s:?}: not a duration (Go syntax: a number and a unit, e.g. 1s, 500ms, 1m30s)"
        )),
    }
}

/// Go's `strconv.ParseBool`, as Go's flag package reads boolean flags.
pub fn parse_go_bool(s: &str) -> Result<bool, String> {
    engine::model::task::parse_go_bool(s)
        .ok_or_else(|| format!("{s:?}: not a boolean (true, false, 1, 0, t, f)"))
}

/// The Lease namespace when none is given: the pod's own (downward API `POD_NAMESPACE`, else
/// the service account's namespace file), else the kubeconfig context's.
pub fn default_lease_namespace(client_default: &str) -> String {
    if let Ok(ns) = std::env::var("POD_NAMESPACE")
        && !ns.trim().is_empty()
    {
        return ns.trim().to_string();
    }
    const SA_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
    if let Ok(ns) = std::fs::read_to_string(SA_NAMESPACE)
        && !ns.trim().is_empty()
    {
        return ns.trim().to_string();
    }
    client_default.to_string()
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

async fn build_client(
    kubeconfig: Option<&PathBuf>,
    master: Option<&str>,
    policy: WritePolicy,
) -> anyhow::Result<Client> {
    let mut config = match kubeconfig {
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
    if let Some(master) = master.filter(|m| !m.trim().is_empty()) {
        config.cluster_url = master
            .trim()
            .parse()
            .with_context(|| format!("--master {master:?} is not a URL"))?;
    }
    api_client::build(config, policy).context("building the API client")
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
fn self_reference(args: &RunArgs, lease_namespace: &str) -> ObjectRef {
    match (std::env::var("POD_NAME"), std::env::var("POD_NAMESPACE")) {
        (Ok(name), Ok(ns)) if !name.is_empty() => ObjectRef {
            kind: "Pod",
            namespace: Some(ns),
            name,
            uid: String::new(),
        },
        _ => ObjectRef {
            kind: "Lease",
            namespace: Some(lease_namespace.to_string()),
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
    let conf = ConfSource::load(args.scheduler_conf.clone(), &known)?;
    let listen = parse_addr(&args.listen_address)?;
    let debug_addr = parse_debug_addr(&args.debug_state_address)?;
    let healthz = parse_addr(&args.healthz_address)?;
    // One identity for the process: the Lease holder, the events' reporting instance and the
    // prefix of session UIDs (PodGroup condition transitionIDs) all name this replica.
    let identity = leader::default_identity();
    let mut leader_cfg = leader_config(&args, &identity);
    let metrics = Metrics::new();
    // Every write checks it just before it is sent: only a replica that renewed its Lease within
    // the renew deadline writes, whatever the session loop believes.
    let fence = if args.leader_elect {
        leader::Fence::elected()
    } else {
        leader::Fence::always()
    };
    let limiter = Arc::new(RateLimiter::new(args.kube_api_qps, args.kube_api_burst));
    // One client for watches, the elector and the executor; writes pass its policy layers.
    let client = build_client(
        args.kubeconfig.as_ref(),
        args.master.as_deref(),
        WritePolicy {
            limiter: limiter.clone(),
            fence: fence.clone(),
            metrics: metrics.clone(),
        },
    )
    .await?;
    tracing::debug!("API client built");
    if leader_cfg.namespace.is_empty() {
        leader_cfg.namespace = default_lease_namespace(client.default_namespace());
    }
    if args.leader_elect {
        leader_cfg
            .validate()
            .map_err(|e| anyhow::anyhow!("leader election: {e}"))?;
        tracing::info!(lease = %format!("{}/{}", leader_cfg.namespace, leader_cfg.name), "leader election");
    }
    let lease_namespace = leader_cfg.namespace.clone();

    let shared = Shared::new(ClusterState::new(StateOptions {
        scheduler_names: args.scheduler_names.clone(),
        default_queue: args.default_queue.clone(),
        node_selector: parse_node_selector(&args.node_selector)?,
    }));
    let health = Arc::new(Health::new(args.leader_elect));

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let wait_shutdown = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    // HTTP servers and the node-load collector: every replica runs them, leader or not.
    let (conf_tx, conf_rx) = watch::channel(conf.current());
    let mut servers = spawn_servers(
        (listen, debug_addr, healthz),
        &metrics,
        &health,
        &shared,
        conf_rx,
        &shutdown_rx,
    )
    .await?;

    // Volcano's device configuration, read once vGPU runs.
    servers.spawn(cluster::device_config::run(
        client.clone(),
        shared.clone(),
        (
            conf_tx.subscribe(),
            plugins::deviceshare::device_config_source,
        ),
        wait_shutdown(shutdown_rx.clone()),
    ));

    // Watchers.
    let (problems_tx, problems_rx) = mpsc::unbounded_channel::<SchedEvent>();
    let watchers = cluster::watch::spawn_all(client.clone(), shared.clone(), problems_tx);
    tracing::debug!(watches = watchers.len(), "watches started");
    spawn_queues_while_syncing(&client, &args, &conf.current());

    // Leader election. The lease is released only after in-flight writes have drained, so a
    // standby never writes while we still do.
    let (leader_tx, leader_rx) = watch::channel(!args.leader_elect);
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

    let executor = build_executor(&args, &client, &shared, limiter, &metrics, &identity);
    let session_options = session_options(&args)?;
    let registry = Arc::new(registry);

    let signal = tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        let _ = shutdown_tx.send(true);
    });

    wait_synced(&shared, &health, shutdown_rx.clone()).await;

    let sink: Arc<dyn WriteSink> = Arc::new(executor.clone());
    let mut scheduler = Scheduler::new(SchedulerParts {
        shared: shared.clone(),
        sink: sink.clone(),
        conf,
        registry,
        session_options,
        leader: Box::new(FencedLeader {
            elected: leader_rx,
            fence: fence.clone(),
        }),
        metrics: metrics.clone(),
        clock: Arc::new(k8s_openapi::jiff::Timestamp::now),
        identity,
        default_queue: args.default_queue.clone(),
        self_ref: self_reference(&args, &lease_namespace),
        period: args.schedule_period,
    })
    .with_problems(problems_rx)
    .with_health(health.clone())
    .with_conf_updates(conf_tx);
    let result = scheduler.run(shutdown_rx.clone()).await;

    // Shutdown: let in-flight writes finish (bounded), then release the lease.
    if !sink.drain(Duration::from_secs(10)).await {
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
    result
}

/// Starts the metrics, debug-state and health servers and the node-load collector. A port
/// that cannot be bound aborts start-up.
async fn spawn_servers(
    (listen, debug_addr, healthz): (SocketAddr, Option<SocketAddr>, SocketAddr),
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
    shared: &Arc<Shared>,
    conf_rx: watch::Receiver<Arc<engine::conf::SchedulerConf>>,
    shutdown_rx: &watch::Receiver<bool>,
) -> anyhow::Result<tokio::task::JoinSet<()>> {
    let wait_shutdown = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let mut servers = tokio::task::JoinSet::new();
    {
        let (m, h, rx) = (metrics.clone(), health.clone(), shutdown_rx.clone());
        // A metrics port that cannot be bound aborts start-up, as the health port does.
        let listener = http::bind(listen)
            .await
            .with_context(|| format!("--listen-address {listen}"))?;
        servers.spawn(async move {
            if let Err(e) = http::serve_on(listener, m, h, wait_shutdown(rx)).await {
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
            conf_rx.clone(),
            wait_shutdown(shutdown_rx.clone()),
        ));
    }
    // Node load for `usage`, from the `metrics:` section in force; every replica keeps it, so
    // a standby that takes over decides with current data.
    servers.spawn(cluster::node_metrics::run(
        shared.clone(),
        conf_rx,
        metrics.clone(),
        wait_shutdown(shutdown_rx.clone()),
    ));
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
    Ok(servers)
}

/// The executor that writes binds, evictions, statuses and events.
fn build_executor(
    args: &RunArgs,
    client: &kube::Client,
    shared: &Arc<Shared>,
    limiter: Arc<RateLimiter>,
    metrics: &Arc<Metrics>,
    identity: &str,
) -> Arc<Executor> {
    Arc::new(Executor::new(
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
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| identity.to_string()),
            // Volcano writes a Queue's status at most once per session, so once per period.
            queue_status_rest: args.schedule_period,
        },
    ))
}

/// The session options from the command line (and the process's local time zone).
fn session_options(args: &RunArgs) -> anyhow::Result<SessionOptions> {
    Ok(SessionOptions {
        minimum_feasible_nodes: args.minimum_feasible_nodes as usize,
        minimum_percentage_nodes_to_find: args.minimum_percentage_nodes_to_find as usize,
        percentage_nodes_to_find: args.percentage_nodes_to_find as usize,
        scheduler_name: executor_name(args),
        http: Some(Arc::new(
            cluster::http_caller::ReqwestCaller::new().map_err(|e| anyhow::anyhow!(e))?,
        )),
        memory: Arc::default(),
        // Volcano reads tdm's windows in its process's local zone (TZ, else the system's).
        time_zone: k8s_openapi::jiff::tz::TimeZone::try_system().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "no local time zone; time windows are read in UTC");
            k8s_openapi::jiff::tz::TimeZone::UTC
        }),
        search_memo: true,
        tables: Arc::default(),
        carry_rows: true,
    })
}

/// The Lease settings from the command line; an empty namespace is filled in once the client
/// knows its own.
fn leader_config(args: &RunArgs, identity: &str) -> LeaderConfig {
    LeaderConfig {
        namespace: args
            .leader_elect_resource_namespace
            .clone()
            .unwrap_or_default(),
        name: args.leader_elect_resource_name.clone(),
        identity: identity.to_string(),
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
    }
}

/// Makes the start-up queues while the caches sync rather than after them (the first session
/// would wait for them, and the initial lists take most of a start). The scheduler ensures
/// them again before its first session, without a request when its mirror shows them, so a
/// failure here (a standby's writes are fenced) is only retried there.
fn spawn_queues_while_syncing(client: &Client, args: &RunArgs, conf: &engine::conf::SchedulerConf) {
    let wanted = cluster::scheduler::wanted_queues(&args.default_queue, conf);
    let c = client.clone();
    tokio::spawn(async move {
        for (name, reclaimable) in wanted {
            if let Err(e) = cluster::queues::ensure_queue(&c, &name, reclaimable).await {
                tracing::debug!(queue = %name, error = %e, "start-up queue not made yet; the scheduler tries again");
            }
        }
    });
}

/// Waits until every watch has listed once (or shutdown), then reports the caches synced.
async fn wait_synced(shared: &Shared, health: &Health, mut shutdown: watch::Receiver<bool>) {
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
            cluster::scheduler::wanted_queues("default", &flat),
            [("default".to_string(), true)]
        );
        let hierarchy = conf(
            "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n",
        )
        .unwrap();
        assert_eq!(
            cluster::scheduler::wanted_queues("default", &hierarchy),
            [
                ("default".to_string(), true),
                (apis::ROOT_QUEUE.to_string(), false)
            ]
        );
    }
}
