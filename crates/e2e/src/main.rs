//! `volcano-rs-e2e [--list | --cleanup] [FILTER...]`: runs the e2e tests against the cluster in
//! `$KUBECONFIG` (`--cleanup`: only deletes what they may have left behind).
//!
//! Every test whose name contains one of the FILTER substrings (all without filters) runs, at
//! most `E2E_PARALLEL` at a time, each within `E2E_TIMEOUT` seconds (180). Results are
//! printed as the tests finish (`PASS <name> (<secs>s)` / `FAIL <name>: <error>`), then the line
//! `N passed, N failed`. Exit code 0 when all passed, 1 when one failed, 2 when the run could not
//! start. Each test's objects are deleted after it, pass or fail.
//!
//! Why one test at a time by default: namespaces, scheduler names, node selectors and queue
//! names keep the tests' pods and nodes apart, but not their accounting. As in Volcano
//! (spec/kubernetes.md §4.2, §13 item 1), every daemon reads every PodGroup and Queue, and
//! attaches another scheduler's *bound* pods to their PodGroups; so a test's bound gangs count
//! as allocated in their queue in every other test's daemon, whose proportion plugin then
//! shrinks its own queues' deserved share (of its own few nodes) and refuses tasks that would
//! fit. Tests that assert queue shares, or that a pod was tried on the nodes, are then flaky.
//! `E2E_PARALLEL=3` is faster for tests known not to interfere. `make e2e` instead runs two
//! runners at once, each on its own control plane (e2e/run-shards.sh, `--skip`).
//!
//! Environment: `KUBECONFIG` (required; `source e2e/env.sh`), `VOLCANO_RS_BIN` (default
//! `<target>/debug/volcano-rs`), `CARGO_TARGET_DIR`, `E2E_LOG_DIR` (default
//! `<target>/e2e-logs`), `E2E_TIMEOUT`, `E2E_PARALLEL`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use futures::StreamExt as _;
use volcano_rs_e2e::harness::{self, Env};
use volcano_rs_e2e::{TestFn, tests};

/// Every test, by name. Names are DNS labels: they name the test's namespace, scheduler, nodes.
pub const TESTS: &[(&str, TestFn)] = &[
    ("plain-pod", tests::basic::plain_pod),
    ("gang", tests::basic::gang),
    ("queues", tests::basic::queues),
    ("placement", tests::basic::placement),
    ("bad-input", tests::badinput::bad_input),
    ("config-reload", tests::reload::config_reload),
    ("restart-safety", tests::restart::restart_safety),
    ("leader-election", tests::leader::leader_election),
    ("preemption", tests::evict::preemption),
    ("reclaim", tests::evict::reclaim),
    ("gang-preemption", tests::gang_evict::gang_preemption),
    (
        "topology-aware-preemption",
        tests::tap::topology_aware_preemption,
    ),
    ("tdm-zone", tests::tdm::tdm_zone),
    ("rbac", tests::rbac::rbac),
    ("resource-quota", tests::quota::resource_quota),
    ("node-group", tests::nodegroup::node_group),
    ("debug-state", tests::debugstate::debug_state),
    ("leader-pause", tests::fencing::leader_pause),
    ("kill-loop", tests::killloop::kill_loop),
    ("low-write-rate", tests::writerate::low_write_rate),
    ("usage-prometheus", tests::usage::usage_prometheus),
    ("extender-http", tests::extender::extender_http),
    ("volcano-arguments", tests::operator::volcano_arguments),
    ("volumes", tests::volumes::volumes),
    ("owned-pods", tests::owners::owned_pods),
    ("volcano-job", tests::volcano_job::volcano_job),
    (
        "network-topology",
        tests::network_topology::network_topology,
    ),
    ("device-share", tests::device_share::device_share),
    ("device-share-vgpu", tests::device_share::device_share_vgpu),
    (
        "device-share-node-lock",
        tests::device_share::device_share_node_lock,
    ),
    ("numa-aware", tests::numa::numa_aware),
    // Last: it restarts the API server under every other client of the cluster.
    ("apiserver-restart", tests::faults::apiserver_restart),
];

const USAGE: &str = "usage: volcano-rs-e2e [--list | --cleanup] [--skip NAME]... [FILTER...]
Runs the e2e tests whose names contain a FILTER (all without one) and no --skip NAME against
$KUBECONFIG; --cleanup only deletes what those tests may have left in the cluster.
Environment: VOLCANO_RS_BIN, E2E_LOG_DIR, E2E_TIMEOUT (s, default 180), E2E_PARALLEL (default 1).";

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// True when every selected test passed.
async fn run() -> anyhow::Result<bool> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(true);
    }
    if args.iter().any(|a| a == "--list") {
        for (name, _) in TESTS {
            println!("{name}");
        }
        return Ok(true);
    }
    let cleanup_only = args.iter().any(|a| a == "--cleanup");
    let (filters, skips) = split_skips(args.into_iter().filter(|a| a != "--cleanup"))?;
    let selected: Vec<(&'static str, TestFn)> = TESTS
        .iter()
        .filter(|(name, _)| {
            (filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
                && !skips.iter().any(|s| name.contains(s.as_str()))
        })
        .copied()
        .collect();
    if selected.is_empty() {
        bail!("no test matches {filters:?} without {skips:?}; see --list");
    }
    let timeout = Duration::from_secs(env_number("E2E_TIMEOUT", 180)?);
    let parallel = env_number("E2E_PARALLEL", 1)?.max(1) as usize;
    let env = harness::environment().await?;
    let leftovers = harness::kill_leftover_daemons(&env.log_dir, &env.kubeconfig);
    if leftovers > 0 {
        eprintln!("killed {leftovers} daemon(s) left over from an earlier run");
    }
    if cleanup_only {
        let mut ok = true;
        for (name, _) in &selected {
            if let Err(e) = harness::cleanup_test(&env, name).await {
                eprintln!("cleanup of {name}: {e:#}");
                ok = false;
            }
        }
        return Ok(ok);
    }

    let started = Instant::now();
    let mut passed = 0;
    let mut failed = 0;
    let mut results = futures::stream::iter(selected.iter().copied())
        .map(|(name, test)| run_one(env.clone(), name, test, timeout))
        .buffer_unordered(parallel);
    while let Some((name, secs, result)) = results.next().await {
        match result {
            Ok(()) => {
                passed += 1;
                println!("PASS {name} ({secs:.1}s)");
            }
            Err(e) => {
                failed += 1;
                println!(
                    "FAIL {name}: {e:#} (daemon logs: {}/{name}*.log)",
                    env.log_dir.display()
                );
            }
        }
    }
    drop(results);
    // A test that called TestCtx::new with another name than its TESTS entry.
    let names: Vec<&str> = selected.iter().map(|(n, _)| *n).collect();
    for other in harness::started_tests() {
        if !names.contains(&other.as_str())
            && let Err(e) = harness::cleanup_test(&env, &other).await
        {
            eprintln!("cleanup of {other}: {e:#}");
        }
    }
    harness::kill_leftover_daemons(&env.log_dir, &env.kubeconfig);
    eprintln!("e2e wall time {:.1}s", started.elapsed().as_secs_f64());
    println!("{passed} passed, {failed} failed");
    Ok(failed == 0)
}

/// Splits the arguments into filters and `--skip` values; any other option is refused.
fn split_skips(
    mut args: impl Iterator<Item = String>,
) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let (mut filters, mut skips) = (Vec::new(), Vec::new());
    while let Some(a) = args.next() {
        if a == "--skip" {
            skips.push(
                args.next()
                    .with_context(|| format!("--skip needs a name\n{USAGE}"))?,
            );
        } else if a.starts_with('-') {
            bail!("unknown option {a}\n{USAGE}");
        } else {
            filters.push(a);
        }
    }
    Ok((filters, skips))
}

/// Runs one test on its own task (a panic fails the test, not the runner), within `timeout`,
/// then cleans up after it. Returns the name, the seconds taken, and the outcome.
async fn run_one(
    env: Env,
    name: &'static str,
    test: TestFn,
    timeout: Duration,
) -> (&'static str, f64, anyhow::Result<()>) {
    let start = Instant::now();
    let started_at = std::time::SystemTime::now();
    let mut task = tokio::spawn(test(env.clone()));
    let outcome = match tokio::time::timeout(timeout, &mut task).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(anyhow!("panicked: {}", panic_message(join))),
        Err(_) => {
            // Dropping the test's future kills its daemon before the cleanup starts.
            task.abort();
            let _ = task.await;
            Err(anyhow!("timed out after {}s", timeout.as_secs()))
        }
    };
    let secs = start.elapsed().as_secs_f64();
    // Every test also checks the daemons' runtime invariants and sessions: any violation or
    // failed session they logged fails it.
    let outcome = outcome.and_then(|()| {
        let found = harness::invariant_violations(&env.log_dir, name, started_at);
        if found.is_empty() {
            Ok(())
        } else {
            Err(anyhow!(
                "the daemon reported {} invariant violation(s) or failed session(s), first: {}",
                found.len(),
                found[0]
            ))
        }
    });
    let cleaned = harness::cleanup_test(&env, name).await;
    let result = match (outcome, cleaned) {
        (Ok(()), Ok(())) => Ok(()),
        (Ok(()), Err(c)) => Err(c.context("cleanup")),
        (Err(e), Ok(())) => Err(e),
        (Err(e), Err(c)) => Err(e.context(format!("(cleanup failed too: {c:#})"))),
    };
    (name, secs, result)
}

fn panic_message(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-text panic payload)".into()),
        Err(e) => e.to_string(),
    }
}

fn env_number(name: &str, default: u64) -> anyhow::Result<u64> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .with_context(|| format!("{name}={v:?} is not a whole number")),
        Err(_) => Ok(default),
    }
}
