//! `volcano-arguments`: the daemon started the way Volcano's chart starts `vc-scheduler`
//! (`--logtostderr`, `-v=3`, `--enable-healthz=true`, `--plugins-dir`, Go durations, …)
//! schedules, warns once per flag that does nothing here, and at `-v=3` logs each bind as one
//! line without HTTP-library noise; its events carry `source`, `count` and first/last
//! timestamps as `kubectl get events` reads them. Then leader election with a Lease namespace that does not
//! exist: `/readyz` fails saying so, the log says it once, and creating the namespace lets the
//! replica lead.

use std::time::Duration;

use anyhow::{Result, ensure};
use futures::TryFutureExt as _;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};

use crate::harness::{Daemon, Env, TestCtx, http_get};

const NAME: &str = "volcano-arguments";
const SHORT: Duration = Duration::from_secs(30);

pub fn volcano_arguments(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let nodes = ctx.nodes("n", 1, "8", "16Gi", 110).await?;
    let daemon = start_with_chart_flags(&ctx).await?;
    ctx.pod("first").cpu("1").create(&ctx).await?;
    ctx.wait_for("pod first bound", SHORT, || async {
        let b = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
        b.get("first").cloned().ok_or_else(|| "not yet".to_string())
    })
    .await?;
    check_scheduled_event(&ctx).await?;
    check_log(&ctx, &daemon, &nodes[0]).await?;
    check_missing_objects_explained(&ctx).await?;
    check_process_metrics(&daemon).await?;
    drop(daemon);
    check_metrics_port_taken(&ctx).await?;
    check_lease_namespace_missing(&ctx).await
}

/// The daemon started with the flags Volcano's chart gives `vc-scheduler`.
async fn start_with_chart_flags(ctx: &TestCtx) -> Result<Daemon> {
    // RUST_LOG empty: -v decides.
    ctx.daemon_logging(
        "",
        &[
            "--logtostderr",
            "-v=3",
            "--enable-healthz=true",
            "--enable-metrics=true",
            "--plugins-dir=/plugins",
            "-node-worker-threads=20",
            "--schedule-period=0h0m0.2s",
            "--kube-api-qps=2000",
        ],
    )
    .await
}

/// The Scheduled event as `kubectl get events` reads it (core/v1): source, count, times.
async fn check_scheduled_event(ctx: &TestCtx) -> Result<()> {
    let core_events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(ctx.env.client.clone(), &ctx.ns);
    let scheduler = ctx.scheduler.clone();
    ctx.wait_for(
        "a core/v1 Scheduled event with source and timestamps",
        SHORT,
        || async {
            let list = core_events
                .list(&Default::default())
                .await
                .map_err(|e| format!("{e:#}"))?;
            let found = list.items.iter().find(|e| {
                e.reason.as_deref() == Some("Scheduled")
                    && e.involved_object.name.as_deref() == Some("first")
            });
            match found {
                Some(e)
                    if e.source.as_ref().and_then(|s| s.component.as_deref())
                        == Some(scheduler.as_str())
                        && e.count == Some(1)
                        && e.first_timestamp.is_some()
                        && e.last_timestamp.is_some() =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await
}

/// At -v=3 the bind of `first` to `node` is logged, each flag that does nothing here is warned
/// about once, and the HTTP libraries log no debug lines.
async fn check_log(ctx: &TestCtx, daemon: &Daemon, node: &str) -> Result<()> {
    let line = format!("bound {}/first to node {node}", ctx.ns);
    let log = ctx
        .wait_for("the bind logged at -v=3", SHORT, || async {
            let log = daemon.log();
            if log.contains(&line) {
                Ok(log)
            } else {
                Err("not yet".to_string())
            }
        })
        .await?;
    for flag in [
        "--logtostderr",
        "--enable-healthz",
        "--enable-metrics",
        "--plugins-dir",
        "--node-worker-threads",
    ] {
        let warnings = log
            .lines()
            .filter(|l| l.contains("WARN") && l.contains(&format!("{flag}: accepted")))
            .count();
        ensure!(warnings == 1, "{flag}: {warnings} warnings, want 1");
    }
    let noisy: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("DEBUG") && (l.contains("hyper") || l.contains("h2::")))
        .take(3)
        .collect();
    ensure!(
        noisy.is_empty(),
        "HTTP-library debug lines at -v=3: {noisy:?}"
    );
    Ok(())
}

/// Pods waiting for objects that do not exist say which, in their PodScheduled condition.
async fn check_missing_objects_explained(ctx: &TestCtx) -> Result<()> {
    ctx.pod("no-group")
        .cpu("1")
        .group("ghost")
        .create(ctx)
        .await?;
    ctx.pod("no-queue")
        .cpu("1")
        .queue_annotation("nowhere")
        .create(ctx)
        .await?;
    for (pod, needle) in [
        ("no-group", format!("pod group {}/ghost", ctx.ns)),
        ("no-queue", "queue nowhere does not exist".to_string()),
    ] {
        ctx.wait_for(&format!("{pod} explained: {needle}"), SHORT, || async {
            let p = ctx.get_pod(pod).map_err(|e| format!("{e:#}")).await?;
            match crate::harness::pod_scheduled(&p) {
                Some((status, _, message)) if status == "False" && message.contains(&needle) => {
                    Ok(())
                }
                other => Err(format!("PodScheduled = {other:?}")),
            }
        })
        .await?;
    }
    Ok(())
}

/// The scheduler's own process metrics, as Volcano's Go binary exports them.
async fn check_process_metrics(daemon: &Daemon) -> Result<()> {
    let text = daemon.metrics().await?;
    for family in [
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_cpu_seconds_total",
    ] {
        ensure!(
            text.contains(&format!("\n{family} ")),
            "/metrics lacks {family}"
        );
    }
    Ok(())
}

/// A metrics port already taken ends the start with the flag named.
async fn check_metrics_port_taken(ctx: &TestCtx) -> Result<()> {
    let taken = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = taken.local_addr()?.port();
    let busy = ctx
        .daemon_unready(&[&format!("--listen-address=127.0.0.1:{port}")])
        .await;
    match busy {
        Ok(_) => anyhow::bail!("the daemon started with its metrics port taken"),
        Err(e) => ensure!(
            format!("{e:#}").contains("--listen-address"),
            "the start failed without naming --listen-address: {e:#}"
        ),
    }
    drop(taken);
    Ok(())
}

/// Leader election in a namespace that does not exist yet.
async fn check_lease_namespace_missing(ctx: &TestCtx) -> Result<()> {
    // A fresh name each run: a namespace deleted by an earlier run may still be terminating.
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() % 1_000_000)
        .unwrap_or_default();
    let lease_ns = format!("{NAME}-lease-{stamp}");
    let namespaces: Api<Namespace> = Api::all(ctx.env.client.clone());
    let _ = namespaces.delete(&lease_ns, &DeleteParams::default()).await;
    let elected = ctx
        .daemon_unready(&[
            "--leader-elect",
            &format!("--leader-elect-resource-namespace={lease_ns}"),
            "--leader-elect-retry-period=500ms",
            "--leader-elect-renew-deadline=2s",
            "--leader-elect-lease-duration=3s",
        ])
        .await;
    let result = check_missing_namespace(ctx, &namespaces, &lease_ns, elected).await;
    let _ = namespaces.delete(&lease_ns, &DeleteParams::default()).await;
    result
}

async fn check_missing_namespace(
    ctx: &TestCtx,
    namespaces: &Api<Namespace>,
    lease_ns: &str,
    elected: Result<Daemon>,
) -> Result<()> {
    let daemon = elected?;
    let addr = daemon.healthz_addr();
    ctx.wait_for(
        "/readyz saying the Lease namespace is missing",
        SHORT,
        || async {
            let (code, body) = http_get(addr, "/readyz")
                .await
                .map_err(|e| format!("{e:#}"))?;
            if code == 503 && body.contains("does not exist") {
                Ok(())
            } else {
                Err(format!("{code}: {body}"))
            }
        },
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let said = daemon
        .log()
        .lines()
        .filter(|l| l.contains("does not exist"))
        .count();
    ensure!(
        said == 1,
        "the missing namespace was logged {said} times, want once"
    );
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(lease_ns.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces.create(&PostParams::default(), &ns).await?;
    ctx.wait_for(
        "/readyz ok and leading once the namespace exists",
        SHORT,
        || async {
            let (code, body) = http_get(addr, "/readyz")
                .await
                .map_err(|e| format!("{e:#}"))?;
            if code == 200 && body.contains("role: leader") {
                Ok(())
            } else {
                Err(format!("{code}: {body}"))
            }
        },
    )
    .await?;
    Ok(())
}
