//! `low-write-rate`: at `--kube-api-qps 10` (a write every 100 ms), ten gangs of three pods are
//! bound and every PodGroup's phase follows its binds within a period: binds take the rate
//! limit's tokens first, then status writes, then events (docs/architecture.md), so status is
//! never queued behind the events of the binds before it.
//!
//! The test polls every 100 ms and notes when each pod is first seen bound and each PodGroup is
//! first seen with phase Running; a PodGroup must show Running no later than one period (1 s),
//! plus its status write's wait for a token (behind at most two binds: three tokens, 300 ms),
//! plus two polls, after the last of its pods was seen bound: the session that sees the pods
//! running is the next periodic one, since a pod starting to run changes no decision. A status
//! queued behind the events of the binds before it would take seconds.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::ensure;
use futures::future::BoxFuture;

use crate::harness::{Env, TestCtx};

const NAME: &str = "low-write-rate";
const GANGS: usize = 10;
const GANG_SIZE: usize = 3;
const POLL: Duration = Duration::from_millis(100);
const PERIOD: Duration = Duration::from_secs(1);
/// A status write's longest wait for a token at 10 writes/s: after at most two binds.
const STATUS_TOKEN_WAIT: Duration = Duration::from_millis(300);

pub fn low_write_rate(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    ctx.nodes("n", 4, "32", "64Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;
    for g in 0..GANGS {
        let group = format!("g{g}");
        ctx.pod_group(&group, GANG_SIZE as i32, &queue).await?;
        for i in 0..GANG_SIZE {
            ctx.pod(&format!("{group}-{i}"))
                .cpu("1")
                .memory("1Gi")
                .group(&group)
                .create(&ctx)
                .await?;
        }
    }
    let _daemon = ctx
        .daemon(&[
            "--kube-api-qps",
            "10",
            "--kube-api-burst",
            "1",
            "--schedule-period",
            "1s",
        ])
        .await?;

    let start = Instant::now();
    let mut bound_at: BTreeMap<String, Duration> = BTreeMap::new();
    let mut running_at: BTreeMap<String, Duration> = BTreeMap::new();
    while running_at.len() < GANGS {
        ensure!(
            start.elapsed() < Duration::from_secs(60),
            "after 60 s only {} of {GANGS} PodGroups are Running ({} pods bound)",
            running_at.len(),
            bound_at.len()
        );
        let now = start.elapsed();
        for pod in ctx.bound_pods().await?.into_keys() {
            bound_at.entry(pod).or_insert(now);
        }
        for pg in ctx.pod_groups_api().list(&Default::default()).await?.items {
            let phase = pg.status.as_ref().map(|s| s.phase.as_str()).unwrap_or("");
            if phase == "Running"
                && let Some(name) = pg.metadata.name
            {
                running_at.entry(name).or_insert(now);
            }
        }
        tokio::time::sleep(POLL).await;
    }
    let mut slowest = Duration::ZERO;
    for g in 0..GANGS {
        let group = format!("g{g}");
        let binds: Vec<Duration> = (0..GANG_SIZE)
            .filter_map(|i| bound_at.get(&format!("{group}-{i}")).copied())
            .collect();
        ensure!(
            binds.len() == GANG_SIZE,
            "PodGroup {group} is Running but only {} of its pods were seen bound ({:?})",
            binds.len(),
            bound_at.keys().collect::<Vec<_>>()
        );
        let last_bind = binds.iter().copied().max().unwrap_or_default();
        let lag = running_at[&group].saturating_sub(last_bind);
        slowest = slowest.max(lag);
        ensure!(
            lag <= PERIOD + STATUS_TOKEN_WAIT + 2 * POLL,
            "PodGroup {group} showed Running {lag:?} after its last pod was bound (at {:?} and \
             {last_bind:?} since the start; at most one period, {PERIOD:?}, its status write's \
             token and two polls expected)",
            running_at[&group]
        );
    }
    println!(
        "{NAME}: {GANGS} gangs at 10 writes/s; slowest PodGroup phase after its binds {slowest:?}"
    );
    Ok(())
}
