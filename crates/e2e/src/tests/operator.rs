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

use crate::harness::{Env, TestCtx, http_get};

const NAME: &str = "volcano-arguments";
const SHORT: Duration = Duration::from_secs(30);

pub fn volcano_arguments(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let nodes = ctx.nodes("n", 1, "8", "16Gi", 110).await?;
    // RUST_LOG empty: -v decides.
    let daemon = ctx
        .daemon_logging(
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
        .await?;
    ctx.pod("first").cpu("1").create(&ctx).await?;
    ctx.wait_for("pod first bound", SHORT, || async {
        let b = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
        b.get("first").cloned().ok_or_else(|| "not yet".to_string())
    })
    .await?;
    // The Scheduled event as `kubectl get events` reads it (core/v1): source, count, times.
    let core_events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(env.client.clone(), &ctx.ns);
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
    .await?;
    let line = format!("bound {}/first to node {}", ctx.ns, nodes[0]);
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
    // Pods waiting for objects that do not exist say which, in their PodScheduled condition.
    ctx.pod("no-group")
        .cpu("1")
        .group("ghost")
        .create(&ctx)
        .await?;
    ctx.pod("no-queue")
        .cpu("1")
        .queue_annotation("nowhere")
        .create(&ctx)
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

    // The scheduler's own process metrics, as Volcano's Go binary exports them.
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
    drop(daemon);

    // A metrics port already taken ends the start with the flag named.
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

    // Leader election in a namespace that does not exist yet.
    // A fresh name each run: a namespace deleted by an earlier run may still be terminating.
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() % 1_000_000)
        .unwrap_or_default();
    let lease_ns = format!("{NAME}-lease-{stamp}");
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
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
    let result = check_missing_namespace(&ctx, &namespaces, &lease_ns, elected).await;
    let _ = namespaces.delete(&lease_ns, &DeleteParams::default()).await;
    result
}

async fn check_missing_namespace(
    ctx: &TestCtx,
    namespaces: &Api<Namespace>,
    lease_ns: &str,
    elected: Result<crate::harness::Daemon>,
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
