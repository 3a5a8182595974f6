//! `resource-quota`: the `resourcequota` plugin against a real ResourceQuota whose status is kept
//! by the real quota controller (kube-controller-manager, started by e2e/cluster-up.sh).
//!
//! As Volcano's job controller does, the test creates a PodGroup first and its pods only once
//! it is Inqueue (the apiserver's quota admission would refuse pods beyond the quota anyway).
//! With `hard: cpu: 4`:
//!
//! 1. PodGroup `a` asks `minResources: cpu: 3` and is admitted (0 + 3 ≤ 4); its three 1-cpu
//!    pods are created and bound, and the controller counts them in `status.used`.
//! 2. PodGroup `b` asks the same and waits (3 used + 3 > 4): it stays Pending, session after
//!    session, with a Normal `Unschedulable` event naming the quota.
//! 3. `a`'s pods are deleted; once the controller lowers `status.used`, `b` is admitted.
//!
//! Volcano's plugin counts an admitted PodGroup against the quota only in the session that
//! admits it; afterwards only `status.used` counts (its pods). Two PodGroups admitted in one
//! session, and the reservation of the first, are covered by the unit tests and the
//! `resourcequota-*` scenarios.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use apis::{PodGroup, PodGroupSpec};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ResourceQuota, ResourceQuotaSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};

use crate::harness::{Env, TestCtx};

const NAME: &str = "resource-quota";
const QUOTA: &str = "team-quota";
/// Quota status and PodGroup phases move within a few sessions and controller syncs.
const WAIT: Duration = Duration::from_secs(45);

pub fn resource_quota(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    ctx.nodes("n", 2, "8", "16Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;

    let quotas: Api<ResourceQuota> = Api::namespaced(env.client.clone(), &ctx.ns);
    let quota = ResourceQuota {
        metadata: ObjectMeta {
            name: Some(QUOTA.to_string()),
            ..Default::default()
        },
        spec: Some(ResourceQuotaSpec {
            hard: Some(BTreeMap::from([("cpu".to_string(), Quantity("4".into()))])),
            ..Default::default()
        }),
        status: None,
    };
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .context("creating the ResourceQuota")?;
    // The plugin reads status.hard, which only the quota controller fills in.
    ctx.wait_for(
        "the quota controller to publish status.hard of the ResourceQuota",
        WAIT,
        || async {
            let q = quotas.get(QUOTA).await.map_err(|e| e.to_string())?;
            let hard = q.status.and_then(|s| s.hard).unwrap_or_default();
            if hard.contains_key("cpu") {
                Ok(())
            } else {
                Err(format!("status.hard is {hard:?}"))
            }
        },
    )
    .await?;

    let conf = env.log_dir.join(format!("{NAME}.conf"));
    std::fs::write(&conf, CONF).context("writing the scheduler configuration")?;
    let conf = conf.display().to_string();
    let _daemon = ctx.daemon(&["--scheduler-conf", &conf]).await?;

    // 1. a is admitted and runs; the controller counts its pods.
    ctx.create_pod_group(pod_group("a", &queue)).await?;
    wait_phase(&ctx, "a", "Inqueue").await?;
    for i in 0..3 {
        ctx.pod(&format!("a-{i}"))
            .cpu("1")
            .memory("1Gi")
            .group("a")
            .create(&ctx)
            .await?;
    }
    ctx.wait_for("a's three pods bound", WAIT, || async {
        let bound = ctx.bound_pods().await.map_err(|e| e.to_string())?;
        let n = bound.keys().filter(|p| p.starts_with("a-")).count();
        if n == 3 {
            Ok(())
        } else {
            Err(format!("{n} of 3 bound"))
        }
    })
    .await?;
    wait_used_cpu(&ctx, &quotas, "3").await?;
    // Let the daemon's watch see the new status before b exists.
    tokio::time::sleep(Duration::from_secs(1)).await;

    // 2. b waits for the quota, and says so.
    ctx.create_pod_group(pod_group("b", &queue)).await?;
    let event = wait_quota_event(&ctx, "b").await?;
    ensure!(
        event.contains("resource quota insufficient") && event.contains("cpu"),
        "the Unschedulable event of b should say the quota is insufficient in cpu: {event:?}"
    );
    wait_phase(&ctx, "b", "Pending").await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let now = phase(&ctx, "b").await?;
    ensure!(
        now == "Pending",
        "b must stay Pending while the quota controller reports 3 of 4 cpu used; its phase is \
         {now:?}"
    );

    // 3. a's pods go; the controller lowers status.used and b is admitted.
    ctx.pods_api()
        .delete_collection(
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
            &Default::default(),
        )
        .await
        .context("deleting a's pods")?;
    wait_used_cpu(&ctx, &quotas, "0").await?;
    wait_phase(&ctx, "b", "Inqueue").await?;
    Ok(())
}

/// The plugin under test with the default configuration's other plugins.
const CONF: &str = r#"actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: resourcequota
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"#;

fn pod_group(name: &str, queue: &str) -> PodGroup {
    PodGroup {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: PodGroupSpec {
            min_member: 3,
            queue: queue.to_string(),
            min_resources: Some(BTreeMap::from([(
                "cpu".to_string(),
                Quantity("3".to_string()),
            )])),
            ..Default::default()
        },
        status: None,
    }
}

async fn phase(ctx: &TestCtx, name: &str) -> anyhow::Result<String> {
    let pg = ctx
        .pod_groups_api()
        .get(name)
        .await
        .with_context(|| format!("reading PodGroup {name}"))?;
    Ok(pg.status.map(|s| s.phase).unwrap_or_default())
}

async fn wait_phase(ctx: &TestCtx, name: &str, want: &str) -> anyhow::Result<()> {
    ctx.wait_for(&format!("PodGroup {name} {want}"), WAIT, || async {
        let got = phase(ctx, name).await.map_err(|e| e.to_string())?;
        if got == want {
            Ok(())
        } else {
            Err(format!("phase {got:?}"))
        }
    })
    .await
}

/// The message of the Unschedulable event the quota rejection records on the PodGroup.
async fn wait_quota_event(ctx: &TestCtx, name: &str) -> anyhow::Result<String> {
    ctx.wait_for(
        &format!("an Unschedulable event on PodGroup {name} naming the quota"),
        WAIT,
        || async {
            let events = ctx
                .events_for("PodGroup", name)
                .await
                .map_err(|e| e.to_string())?;
            events
                .into_iter()
                .find(|(reason, message)| reason == "Unschedulable" && message.contains("quota"))
                .map(|(_, message)| message)
                .ok_or_else(|| "no such event yet".to_string())
        },
    )
    .await
}

async fn wait_used_cpu(
    ctx: &TestCtx,
    quotas: &Api<ResourceQuota>,
    want: &str,
) -> anyhow::Result<()> {
    ctx.wait_for(
        &format!("the quota controller to report cpu {want} used"),
        WAIT,
        || async {
            let q = quotas.get(QUOTA).await.map_err(|e| e.to_string())?;
            let used = q
                .status
                .and_then(|s| s.used)
                .and_then(|u| u.get("cpu").cloned());
            match used {
                Some(Quantity(v)) if v == want => Ok(()),
                other => Err(format!("status.used cpu is {other:?}")),
            }
        },
    )
    .await
}
