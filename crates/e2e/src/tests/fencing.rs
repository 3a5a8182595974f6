//! `leader-pause`: a leader paused past its Lease (SIGSTOP) and resumed sends no write once the
//! standby has taken over (docs/operations.md, "High availability").
//!
//! Two replicas with a 4 s Lease, preemption and reclaim enabled, and a low write rate
//! (`--kube-api-qps 20`) so that writes queue up. Five rounds, the roles swapping each time: a
//! burst of pods arrives and the leader is stopped in the middle of binding it, with binds,
//! conditions and events still queued; the standby takes over and binds the rest; the old
//! leader is resumed and given time to act on what it had in hand. Every write a replica sends
//! is logged at trace level with its time (`sending write`): the old leader's log must show none
//! after the new leader acquired the Lease, and its `/readyz` must say `standby`.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;

use crate::harness::{Daemon, Env, LEASE_NAMESPACE, TestCtx, http_get};

const NAME: &str = "leader-pause";
const ELECTION_ARGS: &[&str] = &[
    "--leader-elect=true",
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=500ms",
    "--kube-api-qps=20",
    "--kube-api-burst=5",
    "--scheduler-conf",
];
const LOG: &str = "info,volcano_rs_cluster::executor=trace";
const ROUNDS: usize = 5;
const BURST: usize = 12;
const WAIT: Duration = Duration::from_secs(30);

const CONF: &str = r#"actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"#;

pub fn leader_pause(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

/// Resumes a stopped process when dropped, so that a failing test leaves nothing frozen.
struct Stopped(u32);

impl Stopped {
    fn stop(pid: u32) -> anyhow::Result<Stopped> {
        signal("-STOP", pid)?;
        Ok(Stopped(pid))
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = signal("-CONT", self.0);
    }
}

fn signal(sig: &str, pid: u32) -> anyhow::Result<()> {
    let status = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .context("running kill")?;
    ensure!(status.success(), "kill {sig} {pid} failed");
    Ok(())
}

async fn is_leader(d: &Daemon) -> bool {
    matches!(http_get(d.healthz_addr(), "/readyz").await,
        Ok((200, body)) if body.lines().any(|l| l.trim() == "role: leader"))
}

/// The times of the writes a replica logged as sent at or after `since`.
fn writes_since(d: &Daemon, since: Timestamp) -> Vec<String> {
    d.log()
        .lines()
        .filter(|l| l.contains("sending write"))
        .filter(|l| {
            l.split_whitespace()
                .next()
                .and_then(|t| t.parse::<Timestamp>().ok())
                .is_some_and(|t| t >= since)
        })
        .map(str::to_string)
        .collect()
}

async fn acquired_at(ctx: &TestCtx) -> anyhow::Result<Timestamp> {
    let lease = Api::<Lease>::namespaced(ctx.env.client.clone(), LEASE_NAMESPACE)
        .get(&ctx.lease_name())
        .await
        .context("reading the Lease")?;
    lease
        .spec
        .and_then(|s| s.acquire_time)
        .map(|t| t.0)
        .context("the Lease has no acquireTime")
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    ctx.nodes("n", 2, "64", "128Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;
    let conf = env.log_dir.join(format!("{NAME}.conf"));
    std::fs::write(&conf, CONF).context("writing the scheduler configuration")?;
    let conf = conf.display().to_string();
    let mut args: Vec<&str> = ELECTION_ARGS.to_vec();
    args.push(&conf);
    let replicas = [
        ctx.daemon_logging(LOG, &args).await?,
        ctx.daemon_logging(LOG, &args).await?,
    ];

    let mut leader = ctx
        .wait_for("one replica leading", WAIT, || async {
            for (i, d) in replicas.iter().enumerate() {
                if is_leader(d).await {
                    return Some(i);
                }
            }
            None
        })
        .await?;
    let mut created = 0;
    for round in 1..=ROUNDS {
        let (l, s) = (&replicas[leader], &replicas[1 - leader]);
        // A burst; the leader is stopped while it is still binding it.
        let before = ctx.bound_pods().await?.len();
        created = create_pods(&ctx, &queue, created, BURST).await?;
        ctx.wait_for(
            &format!("round {round}: the leader binding the burst"),
            WAIT,
            || async {
                let n = ctx.bound_pods().await.map_err(|e| e.to_string())?.len();
                if n > before {
                    Ok(())
                } else {
                    Err(format!("{n} bound"))
                }
            },
        )
        .await?;
        let paused = Stopped::stop(l.pid())?;

        ctx.wait_for(
            &format!("round {round}: the standby takes over"),
            WAIT,
            || async { is_leader(s).await.then_some(()) },
        )
        .await?;
        let takeover = acquired_at(&ctx).await?;
        ctx.wait_for(
            &format!("round {round}: the new leader binds every pod"),
            WAIT,
            || async {
                let n = ctx.bound_pods().await.map_err(|e| e.to_string())?.len();
                if n == created {
                    Ok(())
                } else {
                    Err(format!("{n} of {created} bound"))
                }
            },
        )
        .await?;
        drop(paused);
        // Long enough for the resumed replica to act on whatever it had in hand.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let late = writes_since(l, takeover);
        ensure!(
            late.is_empty(),
            "round {round}: the paused leader sent {} write(s) after the standby acquired the \
             Lease at {takeover}, first: {}",
            late.len(),
            late[0]
        );
        ensure!(
            !is_leader(l).await,
            "round {round}: the resumed replica still reports role leader"
        );
        leader = 1 - leader;
    }
    Ok(())
}

/// Creates `count` one-cpu pods numbered after `from`; returns the new total.
async fn create_pods(
    ctx: &TestCtx,
    queue: &str,
    from: usize,
    count: usize,
) -> anyhow::Result<usize> {
    for i in from..from + count {
        ctx.pod(&format!("p-{i}"))
            .cpu("1")
            .memory("1Gi")
            .queue_annotation(queue)
            .create(ctx)
            .await?;
    }
    Ok(from + count)
}
