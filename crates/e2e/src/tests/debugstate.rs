//! `debug-state`: `/debug/state` is off unless asked for, carries no secrets, and replays.
//!
//! A daemon starts as a standby (the test holds its Lease), with `--debug-state-address`. It
//! watches a gang of three pods, a pod with a literal `DB_PASSWORD` env value and a
//! `last-applied-configuration` annotation, and a HyperNode over the test's nodes, but binds
//! nothing. Then:
//!
//! 1. The metrics port does not serve `/debug/state`; the debug address does, and the dump
//!    holds the HyperNode but neither the password nor the annotation.
//! 2. `volcano-rs simulate` on the dump (with the configuration the dump carries) decides where
//!    each pod goes.
//! 3. The test releases the Lease; the daemon leads and binds every pod exactly where the
//!    simulator put it.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use apis::{PodGroup, PodGroupSpec};
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::EnvVar;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};

use crate::harness::{Env, LEASE_NAMESPACE, TestCtx, free_port, http_get};

const NAME: &str = "debug-state";
const SECRET: &str = "hunter2-e2e-secret";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const WAIT: Duration = Duration::from_secs(30);

pub fn debug_state(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    ctx.nodes("n", 3, "4", "8Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;
    hold_lease(&env, &ctx).await?;

    let debug_addr = format!("127.0.0.1:{}", free_port()?);
    let daemon = ctx
        .daemon(&[
            "--leader-elect=true",
            "--leader-elect-lease-duration=4s",
            "--leader-elect-renew-deadline=3s",
            "--leader-elect-retry-period=500ms",
            "--debug-state-address",
            &debug_addr,
        ])
        .await?;

    ctx.create_pod_group(PodGroup {
        metadata: ObjectMeta {
            name: Some("g".into()),
            ..Default::default()
        },
        spec: PodGroupSpec {
            min_member: 3,
            queue: queue.clone(),
            ..Default::default()
        },
        status: None,
    })
    .await?;
    let mut pods = Vec::new();
    for i in 0..3 {
        let name = format!("g-{i}");
        ctx.pod(&name)
            .cpu("1")
            .memory("1Gi")
            .group("g")
            .create(&ctx)
            .await?;
        pods.push(name);
    }
    let mut secret = ctx
        .pod("secret")
        .cpu("2")
        .memory("1Gi")
        .queue_annotation(&queue)
        .annotation(LAST_APPLIED, &format!("{{\"password\":\"{SECRET}\"}}"))
        .build();
    if let Some(c) = secret.spec.as_mut().and_then(|s| s.containers.first_mut()) {
        c.env = Some(vec![EnvVar {
            name: "DB_PASSWORD".into(),
            value: Some(SECRET.into()),
            value_from: None,
        }]);
    }
    ctx.create_pod(secret).await?;
    pods.push("secret".into());

    let hyper_node = format!("e2e-{NAME}-rack");
    let members: Vec<serde_json::Value> = (0..3)
        .map(|i| serde_json::json!({"type": "Node", "selector": {"exactMatch": {"name": format!("{NAME}-n-{i}")}}}))
        .collect();
    let hn: apis::HyperNode = serde_json::from_value(serde_json::json!({
        "metadata": {"name": hyper_node, "labels": {ctx.label.0.clone(): ctx.label.1.clone()}},
        "spec": {"tier": 1, "members": members}
    }))?;
    Api::<apis::HyperNode>::all(env.client.clone())
        .create(&PostParams::default(), &hn)
        .await
        .context("creating the HyperNode")?;

    // 1. Where the dump is served, and what it leaves out.
    let (status, _) = http_get(daemon.metrics_addr(), "/debug/state").await?;
    ensure!(
        status == 404,
        "the metrics port must not serve /debug/state (got {status})"
    );
    let addr = debug_addr.parse().context("debug address")?;
    let dump = ctx
        .wait_for("a dump with every pod", WAIT, || async {
            let (status, body) = http_get(addr, "/debug/state")
                .await
                .map_err(|e| e.to_string())?;
            if status != 200 {
                return Err(format!("status {status}"));
            }
            let all = pods.iter().all(|p| body.contains(&format!("name: {p}\n")))
                && body.contains(&format!("name: {hyper_node}\n"));
            if all {
                Ok(body)
            } else {
                Err("not every pod and the HyperNode yet".into())
            }
        })
        .await?;
    ensure!(
        !dump.contains(SECRET),
        "the dump leaks the env value or the annotation"
    );
    ensure!(
        !dump.contains(LAST_APPLIED),
        "the dump keeps last-applied-configuration"
    );
    ensure!(
        ctx.bound_pods().await?.is_empty(),
        "the standby must not bind anything"
    );

    // 2. The simulator's decisions on the dump.
    let file = env.log_dir.join(format!("{NAME}-dump.yaml"));
    std::fs::write(&file, &dump).context("writing the dump")?;
    let expected = simulate(&env, &ctx.scheduler, &file)?;
    ensure!(
        expected.len() == pods.len(),
        "the simulator should bind all {} pods from the dump, bound {expected:?}",
        pods.len()
    );

    // The filters on a real dump: this namespace's pods only; none left pending.
    let only_ours = simulate_report(&env, &ctx.scheduler, &file, &["--namespace", &ctx.ns])?;
    let keys: Vec<String> = only_ours["pods"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    ensure!(
        keys.len() == pods.len() && keys.iter().all(|k| k.starts_with(&format!("{}/", ctx.ns))),
        "--namespace {} kept {keys:?}",
        ctx.ns
    );
    let pending = simulate_report(&env, &ctx.scheduler, &file, &["--pending"])?;
    ensure!(
        pending["pods"].as_object().is_some_and(|m| m.is_empty()),
        "--pending kept pods the simulator binds: {}",
        pending["pods"]
    );

    // 3. The daemon leads and decides the same.
    Api::<Lease>::namespaced(env.client.clone(), LEASE_NAMESPACE)
        .delete(&ctx.lease_name(), &DeleteParams::default())
        .await
        .context("releasing the Lease")?;
    let bound = ctx
        .wait_for("every pod bound by the new leader", WAIT, || async {
            let bound = ctx.bound_pods().await.map_err(|e| e.to_string())?;
            if bound.len() == pods.len() {
                Ok(bound)
            } else {
                Err(format!("bound so far: {bound:?}"))
            }
        })
        .await?;
    let actual: BTreeMap<String, String> = bound
        .into_iter()
        .map(|(pod, node)| (format!("{}/{pod}", ctx.ns), node))
        .collect();
    ensure!(
        actual == expected,
        "the daemon bound {actual:?}, but the simulator on its dump decided {expected:?}"
    );
    Ok(())
}

/// A Lease held by someone else for long enough that the daemon stays a standby.
async fn hold_lease(env: &Env, ctx: &TestCtx) -> anyhow::Result<()> {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .context("clock before 1970")?;
    let now = Timestamp::new(i64::try_from(since_epoch.as_secs())?, 0)?;
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(ctx.lease_name()),
            namespace: Some(LEASE_NAMESPACE.into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("e2e-someone-else".into()),
            lease_duration_seconds: Some(600),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            ..Default::default()
        }),
    };
    Api::<Lease>::namespaced(env.client.clone(), LEASE_NAMESPACE)
        .create(&PostParams::default(), &lease)
        .await
        .context("creating the Lease held by another identity")?;
    Ok(())
}

/// `volcano-rs simulate --format json` on the dump with `extra` arguments: the JSON report.
fn simulate_report(
    env: &Env,
    scheduler: &str,
    file: &std::path::Path,
    extra: &[&str],
) -> anyhow::Result<serde_json::Value> {
    let out = std::process::Command::new(&env.daemon_bin)
        .arg("simulate")
        .args(["--format", "json", "--scheduler-name", scheduler])
        .args(extra)
        .arg(file)
        .output()
        .context("running volcano-rs simulate")?;
    if !out.status.success() {
        bail!(
            "simulate failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).context("reading the simulator's JSON")
}

/// `volcano-rs simulate --format json` on the dump: the binds of every cycle, `ns/pod → node`.
fn simulate(
    env: &Env,
    scheduler: &str,
    file: &std::path::Path,
) -> anyhow::Result<BTreeMap<String, String>> {
    let report = simulate_report(env, scheduler, file, &[])?;
    let mut binds = BTreeMap::new();
    for cycle in report["cycles"].as_array().into_iter().flatten() {
        for b in cycle["binds"].as_array().into_iter().flatten() {
            if let (Some(pod), Some(node)) = (b["pod"].as_str(), b["node"].as_str()) {
                binds.insert(pod.to_string(), node.to_string());
            }
        }
    }
    Ok(binds)
}
