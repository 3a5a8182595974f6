//! `leader-election`: two replicas against one API server (spec/kubernetes.md §1;
//! crates/cluster/src/leader.rs).
//!
//! Both run with `--leader-elect=true` on the same Lease and short durations. Exactly one leads
//! (`/readyz` says `role: leader`, `volcano_leader` is 1, the Lease names it) and only it binds.
//! After `kill -9` of the leader the standby takes over once the Lease expires — measured, and
//! required within the lease duration plus a margin — and binds new pods. No pod is bound twice:
//! no failed bind in either log, and at most one `Scheduled` event per pod.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use super::restart::{bind_failures, scheduled_events_per_pod};
use crate::harness::{Daemon, Env, LEASE_NAMESPACE, Observed, TestCtx, http_get};

const NAME: &str = "leader-election";
const LEASE_DURATION: Duration = Duration::from_secs(4);
/// Allowed on top of the lease duration for the takeover: the standby's retry period (500 ms,
/// jittered), the first session and this test's polling.
const TAKEOVER_MARGIN: Duration = Duration::from_secs(3);
const ELECTION_ARGS: &[&str] = &[
    "--leader-elect=true",
    "--leader-elect-lease-duration",
    "4s",
    "--leader-elect-renew-deadline",
    "3s",
    "--leader-elect-retry-period",
    "500ms",
];
const PODS_PER_PHASE: usize = 4;

pub fn leader_election(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

/// What one replica reports about itself.
#[derive(Debug, PartialEq)]
struct Role {
    /// `/readyz` says `role: leader`.
    readyz_leader: bool,
    /// `volcano_leader` (absent counts as 0).
    metric_leader: f64,
    /// `volcano_pods_bound_total` (absent counts as 0).
    bound: f64,
}

async fn role(daemon: &Daemon) -> anyhow::Result<Role> {
    let (status, body) = http_get(daemon.healthz_addr(), "/readyz").await?;
    ensure!(status == 200, "/readyz answered {status}: {body}");
    let metrics = daemon.metrics().await?;
    Ok(Role {
        readyz_leader: body.lines().any(|l| l.trim() == "role: leader"),
        metric_leader: Daemon::metric_value(&metrics, "volcano_leader", &[]).unwrap_or(0.0),
        bound: Daemon::metric_value(&metrics, "volcano_pods_bound_total", &[]).unwrap_or(0.0),
    })
}

/// `true` when the replica consistently reports leading, `false` when it consistently reports
/// standby, `None` while `/readyz` and the metric disagree (they are updated one after the
/// other).
fn leading(r: &Role) -> Option<bool> {
    match (
        r.readyz_leader,
        r.metric_leader == 1.0,
        r.metric_leader == 0.0,
    ) {
        (true, true, _) => Some(true),
        (false, _, true) => Some(false),
        _ => None,
    }
}

async fn holder(ctx: &TestCtx) -> anyhow::Result<(String, i32)> {
    let api: Api<Lease> = Api::namespaced(ctx.env.client.clone(), LEASE_NAMESPACE);
    let lease = api
        .get(&ctx.lease_name())
        .await
        .with_context(|| format!("reading Lease {LEASE_NAMESPACE}/{}", ctx.lease_name()))?;
    let spec = lease.spec.unwrap_or_default();
    Ok((
        spec.holder_identity.unwrap_or_default(),
        spec.lease_transitions.unwrap_or(0),
    ))
}

/// The replica's log names `identity` in its "now leading" line.
fn logged_leading_as(daemon: &Daemon, identity: &str) -> bool {
    daemon
        .log()
        .lines()
        .any(|l| l.contains("now leading") && l.contains(identity))
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    ctx.nodes("n", 2, "8", "16Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;

    let mut replicas = [
        ctx.daemon(ELECTION_ARGS).await?,
        ctx.daemon(ELECTION_ARGS).await?,
    ];

    // Exactly one leads.
    let leader = wait_one_leader(&ctx, &replicas).await?;
    let standby = 1 - leader;
    let first = check_lease_names_leader(&ctx, &replicas[leader], &replicas[standby]).await?;

    // Only the leader binds.
    create_pods(&ctx, &queue, "before").await?;
    wait_bound(&ctx, "before").await?;
    check_only_leader_bound(&replicas[leader], &replicas[standby]).await?;

    // Kill the leader; the standby takes over once the Lease expires.
    replicas[leader].kill9();
    let killed = Instant::now();
    let survivor = &replicas[standby];
    let takeover = wait_takeover(&ctx, survivor, killed).await?;
    check_lease_moved(&ctx, survivor, &first).await?;

    // The new leader binds new pods.
    create_pods(&ctx, &queue, "after").await?;
    wait_bound(&ctx, "after").await?;
    let r = role(survivor).await?;
    ensure!(
        r.bound == PODS_PER_PHASE as f64,
        "the new leader should have bound the {PODS_PER_PHASE} new pods, \
         volcano_pods_bound_total is {}",
        r.bound
    );

    check_no_pod_bound_twice(&ctx, &replicas).await?;

    println!(
        "{NAME}: takeover {:.2}s after kill -9 (lease duration {LEASE_DURATION:?})",
        takeover.as_secs_f64()
    );
    Ok(())
}

/// Waits until exactly one replica leads and the other is on standby; the leader's index.
async fn wait_one_leader(ctx: &TestCtx, replicas: &[Daemon; 2]) -> anyhow::Result<usize> {
    ctx.wait_for(
        "exactly one replica leading and the other on standby",
        Duration::from_secs(20),
        || async {
            let roles = match (role(&replicas[0]).await, role(&replicas[1]).await) {
                (Ok(a), Ok(b)) => [a, b],
                (Err(e), _) | (_, Err(e)) => return Observed::Not(format!("error: {e:#}")),
            };
            match (leading(&roles[0]), leading(&roles[1])) {
                (Some(true), Some(false)) => Observed::Done(0),
                (Some(false), Some(true)) => Observed::Done(1),
                _ => Observed::Not(format!("{roles:?}")),
            }
        },
    )
    .await
}

/// The Lease's holder and transition count, as read after an election.
struct LeaseState {
    holder: String,
    transitions: i32,
}

/// The Lease names the leader, whose log says it leads; the standby's log never says so.
async fn check_lease_names_leader(
    ctx: &TestCtx,
    leader: &Daemon,
    standby: &Daemon,
) -> anyhow::Result<LeaseState> {
    let (first_holder, transitions) = holder(ctx).await?;
    ensure!(
        logged_leading_as(leader, &first_holder),
        "the Lease names {first_holder:?} as holder, but the leading replica's log {} has no \
         \"now leading\" line with that identity",
        leader.log_path().display()
    );
    ensure!(
        !standby.log().contains("now leading"),
        "the standby replica's log {} says it led",
        standby.log_path().display()
    );
    Ok(LeaseState {
        holder: first_holder,
        transitions,
    })
}

/// The leader bound every pod of the first phase, the standby none, and it is still on standby.
async fn check_only_leader_bound(leader: &Daemon, standby: &Daemon) -> anyhow::Result<()> {
    let (l, s) = (role(leader).await?, role(standby).await?);
    ensure!(
        l.bound == PODS_PER_PHASE as f64 && s.bound == 0.0,
        "the leader should have bound all {PODS_PER_PHASE} pods and the standby none; \
         volcano_pods_bound_total is {} on the leader and {} on the standby",
        l.bound,
        s.bound
    );
    ensure!(
        leading(&s) == Some(false),
        "the standby should still be on standby, it reports {s:?}"
    );
    Ok(())
}

/// Waits for `survivor` to lead, and requires that within the lease duration plus
/// [`TAKEOVER_MARGIN`] of `killed`; the time the takeover took.
async fn wait_takeover(
    ctx: &TestCtx,
    survivor: &Daemon,
    killed: Instant,
) -> anyhow::Result<Duration> {
    ctx.wait_for(
        "the standby to take over",
        LEASE_DURATION + TAKEOVER_MARGIN + Duration::from_secs(10),
        || async {
            match role(survivor).await {
                Ok(r) if leading(&r) == Some(true) => Observed::Done(()),
                Ok(r) => Observed::Not(format!("{r:?}")),
                Err(e) => Observed::Not(format!("error: {e:#}")),
            }
        },
    )
    .await?;
    let takeover = killed.elapsed();
    ensure!(
        takeover <= LEASE_DURATION + TAKEOVER_MARGIN,
        "the standby took over {:.1}s after the kill; at most the lease duration {:?} plus \
         {:?} expected",
        takeover.as_secs_f64(),
        LEASE_DURATION,
        TAKEOVER_MARGIN
    );
    Ok(takeover)
}

/// After the takeover the Lease names the survivor (as its log does) and counts one more
/// transition than `first`.
async fn check_lease_moved(
    ctx: &TestCtx,
    survivor: &Daemon,
    first: &LeaseState,
) -> anyhow::Result<()> {
    let (first_holder, transitions) = (&first.holder, first.transitions);
    let (second_holder, transitions_after) = holder(ctx).await?;
    ensure!(
        second_holder != *first_holder && logged_leading_as(survivor, &second_holder),
        "after the takeover the Lease should name the survivor; it names {second_holder:?} \
         (before: {first_holder:?})"
    );
    ensure!(
        transitions_after == transitions + 1,
        "leaseTransitions should have gone from {transitions} to {}, it is {transitions_after}",
        transitions + 1
    );
    Ok(())
}

/// No pod bound twice: no failed bind in either log, and at most one `Scheduled` event per pod
/// (once the new leader's pods all have theirs).
async fn check_no_pod_bound_twice(ctx: &TestCtx, replicas: &[Daemon; 2]) -> anyhow::Result<()> {
    for daemon in replicas {
        let failures = bind_failures(daemon);
        ensure!(
            failures.is_empty(),
            "failed binds in {}:\n{}",
            daemon.log_path().display(),
            failures.join("\n")
        );
    }
    let scheduled = ctx
        .wait_for(
            "a Scheduled event for every pod bound by the new leader",
            Duration::from_secs(10),
            || async {
                match scheduled_events_per_pod(ctx).await {
                    Ok(counts) => {
                        let missing: Vec<String> = pod_names("after")
                            .filter(|p| !counts.contains_key(p))
                            .collect();
                        if missing.is_empty() {
                            Observed::Done(counts)
                        } else {
                            Observed::Not(format!("no Scheduled event yet for {missing:?}"))
                        }
                    }
                    Err(e) => Observed::Not(format!("error: {e:#}")),
                }
            },
        )
        .await?;
    let twice: Vec<_> = scheduled.iter().filter(|(_, n)| **n > 1).collect();
    ensure!(
        twice.is_empty(),
        "pods with more than one Scheduled event (pod → count): {twice:?}"
    );
    Ok(())
}

fn pod_names(phase: &str) -> impl Iterator<Item = String> + '_ {
    (0..PODS_PER_PHASE).map(move |i| format!("{phase}-{i}"))
}

async fn create_pods(ctx: &TestCtx, queue: &str, phase: &str) -> anyhow::Result<()> {
    for name in pod_names(phase) {
        ctx.pod(&name)
            .cpu("1")
            .memory("1Gi")
            .queue_annotation(queue)
            .create(ctx)
            .await?;
    }
    Ok(())
}

async fn wait_bound(ctx: &TestCtx, phase: &str) -> anyhow::Result<()> {
    ctx.wait_for(
        &format!("the {phase}-* pods bound"),
        Duration::from_secs(20),
        || async {
            match ctx.bound_pods().await {
                Ok(bound) => {
                    let missing: Vec<String> = pod_names(phase)
                        .filter(|p| !bound.contains_key(p))
                        .collect();
                    if missing.is_empty() {
                        Observed::Done(())
                    } else {
                        Observed::Not(format!("unbound: {missing:?}"))
                    }
                }
                Err(e) => Observed::Not(format!("error: {e:#}")),
            }
        },
    )
    .await
}
