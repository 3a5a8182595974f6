//! `kill-loop`: the daemon is killed with SIGKILL up to ten times (at least five of them while
//! pods are still pending) while it binds a burst of 50 gangs, restarted each time, and the cluster still ends as if nothing had happened: every pod bound
//! exactly once (no failed bind in any daemon's log), every gang complete, no node over its
//! allocatable. The workload and the checks are those of `restart-safety`.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use futures::future::BoxFuture;

use super::restart::{
    bind_failures, check_node_capacity, create_workload, partial_gangs, scheduled_events_per_pod,
};
use crate::harness::{Env, TestCtx};

const NAME: &str = "kill-loop";
const TOTAL: usize = 510;
const KILLS: usize = 10;
/// Kill after each of these many more binds.
const STEP: usize = 30;
/// Half `restart-safety`'s write rate: between the test's look at the bound pods and its kill
/// a daemon keeps binding, and under the load of the other shard that lag let four daemons
/// bind all 510 pods at 100 writes a second.
const DAEMON_ARGS: &[&str] = &["--kube-api-qps", "50", "--kube-api-burst", "5"];

pub fn kill_loop(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    ctx.nodes("n", 20, "32", "256Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;
    create_workload(&ctx, &queue).await?;

    let mut killed = Vec::new();
    for kill in 1..=KILLS {
        let mut daemon = ctx.daemon(DAEMON_ARGS).await?;
        let start = ctx.bound_pods().await?.len();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let n = ctx.bound_pods().await?.len();
            if n >= start + STEP || n == TOTAL {
                break;
            }
            if Instant::now() > deadline {
                bail!("kill {kill}: only {n} of {TOTAL} pods bound after 60 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        daemon.kill9();
        killed.push(daemon);
        // How far a daemon gets between the check above and the kill depends on the machine's
        // load; once every pod is bound, more kills test nothing, but half of them must have
        // landed while pods were still pending.
        if ctx.bound_pods().await?.len() >= TOTAL {
            ensure!(
                kill > KILLS / 2,
                "kill {kill}: every pod was bound already; too few kills landed mid-burst \
                 (lower STEP)"
            );
            break;
        }
    }

    let last = ctx.daemon(DAEMON_ARGS).await?;
    ctx.wait_for(
        &format!("all {TOTAL} pods bound after {} kills", killed.len()),
        Duration::from_secs(90),
        || async {
            let n = ctx.bound_pods().await.map_err(|e| e.to_string())?.len();
            if n == TOTAL {
                Ok(())
            } else {
                Err(format!("{n} of {TOTAL} bound"))
            }
        },
    )
    .await?;
    let bound = ctx.bound_pods().await?;
    let partial = partial_gangs(&bound);
    ensure!(
        partial.is_empty(),
        "gangs left below minMember: {partial:?}"
    );
    for daemon in killed.iter().chain(std::iter::once(&last)) {
        let failures = bind_failures(daemon);
        ensure!(
            failures.is_empty(),
            "{} failed binds in {} (no pod may be bound twice):\n{}",
            failures.len(),
            daemon.log_path().display(),
            failures.join("\n")
        );
    }
    let twice: Vec<_> = scheduled_events_per_pod(&ctx)
        .await?
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .collect();
    ensure!(
        twice.is_empty(),
        "pods with more than one Scheduled event: {twice:?}"
    );
    check_node_capacity(&ctx).await?;
    Ok(())
}
