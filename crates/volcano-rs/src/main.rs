//! The `volcano-rs` command.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use k8s_openapi::jiff::Timestamp;
use volcano_rs::daemon::RunArgs;
use volcano_rs::go_flags;
use volcano_rs::simulate::filter::{self, ReportFilter};
use volcano_rs::simulate::{self, ConfFile, SimError, SimInput, SimOptions};

#[derive(Parser)]
#[command(
    name = "volcano-rs",
    version,
    about = "Volcano-compatible Kubernetes batch scheduler"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Schedule an in-memory cluster read from Kubernetes YAML/JSON and report the outcome.
    ///
    /// FILEs hold Nodes, Pods, PodGroups, Queues, PriorityClasses, PodDisruptionBudgets,
    /// ResourceQuotas, Namespaces, PersistentVolumeClaims, PersistentVolumes, StorageClasses,
    /// CSINodes, HyperNodes, Numatopologies and ConfigMaps (the vGPU device configuration) as
    /// `kubectl get -o yaml` prints them (`kind: List` included); `-` reads standard input. Sessions run until one changes nothing, at most
    /// --cycles.
    Simulate(Box<SimulateArgs>),
    /// Run the scheduler against a Kubernetes API server.
    ///
    /// Watches Pods, Nodes, PodGroups, Queues, PriorityClasses, PodDisruptionBudgets,
    /// ResourceQuotas, Namespaces and the storage objects (claims, volumes, storage classes,
    /// CSI nodes), runs a session every --schedule-period (sooner when pods wait, capacity
    /// frees up or a PodGroup changes) while holding the leader Lease, and writes binds, evictions and
    /// status back. Logs go to stderr; levels from RUST_LOG (default info).
    Run {
        #[command(flatten)]
        args: Box<RunArgs>,
        /// Log format.
        #[arg(long, value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
    },
}

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
struct SimulateArgs {
    /// Volcano scheduler configuration (`actions:` + `tiers:`); default: Volcano's embedded one.
    #[arg(long, value_name = "FILE")]
    scheduler_conf: Option<PathBuf>,

    /// Refuse a configuration that names a plugin this build lacks (default: skip it with a
    /// warning, as Volcano does).
    #[arg(long)]
    strict_config: bool,

    /// Run at most N sessions (the run ends earlier after a session that changed nothing).
    #[arg(long, value_name = "N", default_value_t = simulate::DEFAULT_MAX_CYCLES,
          value_parser = parse_cycles)]
    cycles: usize,

    /// Move the clock on by this much before each session after the first (Go duration, e.g.
    /// `30s`, `10m`); the run then goes on to --cycles, as time alone can change decisions.
    #[arg(long, value_name = "DURATION", value_parser = parse_period)]
    cycle_period: Option<std::time::Duration>,

    /// Recreate each evicted pod as a new Pending pod (`<name>-r1`, `-r2`, ...), as its
    /// controller would, to see what the following sessions do with it.
    #[arg(long)]
    recreate_evicted: bool,

    /// The clock the sessions see (RFC 3339, e.g. 2026-01-01T00:00:00Z); default: now.
    #[arg(long, value_name = "RFC3339", value_parser = parse_timestamp)]
    now: Option<Timestamp>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,

    /// Pods with this `spec.schedulerName` are scheduled (repeatable) [default: volcano-rs, volcano].
    #[arg(long = "scheduler-name", value_name = "NAME")]
    scheduler_names: Vec<String>,

    /// Show only pods that are not bound (and PodGroups not Running or Completed).
    #[arg(long)]
    pending: bool,

    /// Show only this namespace's pods and PodGroups.
    #[arg(long, value_name = "NAMESPACE")]
    namespace: Option<String>,

    /// Show only this queue's pods, PodGroups and figures.
    #[arg(long, value_name = "QUEUE")]
    queue: Option<String>,

    /// Show only this job: `namespace/podgroup` (`namespace/podgroup-<pod uid>` for a pod
    /// without a PodGroup).
    #[arg(long, value_name = "NAMESPACE/NAME")]
    job: Option<String>,

    /// Also run the input under this second configuration and list the pods whose node or
    /// phase differs between the two (instead of the report).
    #[arg(long, value_name = "FILE")]
    compare: Option<PathBuf>,

    /// Cluster objects (YAML or JSON); `-` for standard input.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
}

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

fn main() -> ExitCode {
    // Volcano's command line (single-dash flags, -v, klog and chart flags) becomes ours.
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let translated = match go_flags::translate(argv) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if translated.print_version {
        println!("volcano-rs {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse_from(&translated.args);
    let pages = volcano_rs::small_pages_only();
    match cli.command {
        Command::Simulate(args) => {
            init_logging(LogFormat::Text, "warn", None);
            simulate_command(*args)
        }
        Command::Run { args, log_format } => {
            init_logging(log_format, "info", translated.verbosity);
            for warning in &translated.warnings {
                tracing::warn!("{warning}");
            }
            if let Err(e) = pages {
                tracing::debug!(error = %e, "transparent huge pages stay on");
            }
            run_command(*args)
        }
    }
}

/// Our crates, whose levels `-v` raises.
const OWN_TARGETS: [&str; 5] = [
    "volcano_rs",
    "volcano_rs_cluster",
    "volcano_rs_engine",
    "volcano_rs_plugins",
    "volcano_rs_apis",
];
/// Libraries whose debug lines are HTTP plumbing, quiet unless RUST_LOG names them.
const PLUMBING: [&str; 8] = [
    "hyper",
    "hyper_util",
    "h2",
    "rustls",
    "tower",
    "tower_http",
    "reqwest",
    "kube_client",
];

/// The filter: RUST_LOG if set, else the default level raised by `-v` for our crates only
/// ([`go_flags::Verbosity`]); HTTP plumbing stays at info either way unless RUST_LOG names it.
fn log_filter(
    rust_log: Option<&str>,
    default_level: &str,
    verbosity: Option<go_flags::Verbosity>,
) -> String {
    let mut directives: Vec<String> = match rust_log {
        Some(v) if !v.trim().is_empty() => vec![v.to_string()],
        _ => {
            let mut d = vec![default_level.to_string()];
            let v = verbosity.map(|v| v.0).unwrap_or(0);
            if v >= 3 {
                d.push("decisions=debug".into());
            }
            let own = match v {
                0..=3 => None,
                4 => Some("debug"),
                _ => Some("trace"),
            };
            if let Some(level) = own {
                d.extend(OWN_TARGETS.iter().map(|t| format!("{t}={level}")));
            }
            d
        }
    };
    let asked = rust_log.unwrap_or("");
    for lib in PLUMBING {
        if !asked.contains(lib) {
            directives.push(format!("{lib}=info"));
        }
    }
    // kube's client logs every failed request at error level; each failure is already reported
    // once by our own code (bind failed, status not written, watch broken), and during an API
    // server outage the duplicates ran to thousands of lines.
    if !asked.contains("kube_client") {
        directives.push("kube_client::client::builder=off".into());
    }
    directives.join(",")
}

fn init_logging(format: LogFormat, default_level: &str, verbosity: Option<go_flags::Verbosity>) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let filter = tracing_subscriber::EnvFilter::try_new(log_filter(
        rust_log.as_deref(),
        default_level,
        verbosity,
    ))
    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn run_command(args: RunArgs) -> ExitCode {
    // Half the cores for the async workers (watches, writes, HTTP): the other half is the
    // sessions' (their rayon pool). On a 2-core machine a second worker only added thread
    // switches: 9 % more CPU under a steady stream, no lower latency (docs/benchmarks.md).
    let workers = std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // The daemon runs as a task on the workers, not on this thread: the scheduler loop hands
    // writes and sessions to tasks and threads, and from a thread outside the runtime each
    // hand-over woke a worker through the kernel (docs/benchmarks.md).
    let daemon = runtime.spawn(volcano_rs::daemon::run(args));
    match runtime.block_on(daemon) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            // Once: the log goes to stderr too.
            tracing::error!("{e:#}");
            ExitCode::from(1)
        }
        Err(e) => {
            tracing::error!("the daemon task ended abnormally: {e}");
            ExitCode::from(1)
        }
    }
}

fn simulate_command(args: SimulateArgs) -> ExitCode {
    match run_simulation(&args) {
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = stdout
                .write_all(output.as_bytes())
                .and_then(|()| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn parse_period(text: &str) -> Result<std::time::Duration, String> {
    simulate::parse_cycle_period(text)
}

fn parse_cycles(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("at least one cycle is needed".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_timestamp(text: &str) -> Result<Timestamp, String> {
    text.parse::<Timestamp>().map_err(|e| e.to_string())
}

/// The current time (jiff's own clock is not compiled into k8s-openapi's copy).
fn wall_clock() -> Timestamp {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
    Timestamp::new(seconds, 0).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn read_conf(path: &std::path::Path) -> Result<ConfFile, SimError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| SimError::Io {
        file: name.clone(),
        message: e.to_string(),
    })?;
    Ok(ConfFile { name, text })
}

fn run_simulation(args: &SimulateArgs) -> Result<String, SimError> {
    let scheduler_conf = match &args.scheduler_conf {
        Some(path) => Some(read_conf(path)?),
        None => None,
    };
    let input = SimInput::from_files(&args.files)?;
    for warning in &input.warnings {
        eprintln!("warning: {warning}");
    }
    let mut opts = SimOptions::new(args.now.unwrap_or_else(wall_clock));
    opts.scheduler_conf = scheduler_conf;
    opts.max_cycles = args.cycles;
    opts.strict_config = args.strict_config;
    opts.cycle_period = args.cycle_period.unwrap_or_default();
    opts.recreate_evicted = args.recreate_evicted;
    if !args.scheduler_names.is_empty() {
        opts.scheduler_names = args.scheduler_names.clone();
    }
    let report = simulate::run(&input, &opts)?;
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    let filter = ReportFilter {
        pending: args.pending,
        namespace: args.namespace.clone(),
        queue: args.queue.clone(),
        job: args.job.clone(),
    };
    let mut out = match &args.compare {
        Some(path) => {
            let other = read_conf(path)?;
            let b_name = other.name.clone();
            let a_name = opts
                .scheduler_conf
                .as_ref()
                .map(|c| c.name.clone())
                .unwrap_or_else(|| "the default configuration".into());
            let mut b_opts = opts.clone();
            b_opts.scheduler_conf = Some(other);
            let b = simulate::run(&input, &b_opts)?;
            let (a, b) = (filter.apply(report), filter.apply(b));
            let diff = filter::compare(&a, &b);
            match args.format {
                Format::Text => filter::comparison_text(&a_name, &b_name, &diff),
                Format::Json => serde_json::to_string_pretty(&serde_json::json!({
                    "a": a_name, "b": b_name, "differences": diff
                }))
                .unwrap_or_default(),
            }
        }
        None => {
            let report = filter.apply(report);
            match args.format {
                Format::Text => report.to_text(),
                Format::Json => report.to_json(),
            }
        }
    };
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}
