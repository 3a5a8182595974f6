//! `device-share`: GPU sharing with the `deviceshare` plugin on the real API server.
//!
//! A KWOK node offers two GPU cards sharing `volcano.sh/gpu-memory: 2000`. Three pods ask 600
//! each. Two bind, each on its own card: the binding carries `volcano.sh/gpu-index` and
//! `volcano.sh/predicate-time`, and the API server copies them onto the pods. The third waits
//! with the device's reason although the node has 800 left in total (no card has 600).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, ensure};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ObjectMeta;

use crate::harness::{Env, TestCtx};

const NAME: &str = "device-share";
const WAIT: Duration = Duration::from_secs(30);
const GPU_MEMORY: &str = "volcano.sh/gpu-memory";
const GPU_NUMBER: &str = "volcano.sh/gpu-number";
const GPU_INDEX: &str = "volcano.sh/gpu-index";

const CONF: &str = r#"actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: deviceshare
    arguments:
      deviceshare.GPUSharingEnable: true
"#;

pub fn device_share(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let q = |s: &str| Quantity(s.to_string());
    let allocatable = BTreeMap::from([
        ("cpu".to_string(), q("8")),
        ("memory".to_string(), q("16Gi")),
        ("pods".to_string(), q("110")),
        (GPU_MEMORY.to_string(), q("2000")),
        (GPU_NUMBER.to_string(), q("2")),
    ]);
    let node = ctx
        .node_with(Node {
            metadata: ObjectMeta {
                name: Some("gpu".into()),
                ..Default::default()
            },
            spec: None,
            status: Some(NodeStatus {
                allocatable: Some(allocatable),
                ..Default::default()
            }),
        })
        .await?;
    let queue = ctx.queue("q", 1).await?;
    let _daemon = ctx.daemon_with_conf(CONF).await?;

    for name in ["a", "b", "c"] {
        ctx.pod(name)
            .cpu("1")
            .request(GPU_MEMORY, "600")
            .limit(GPU_MEMORY, "600")
            .queue_annotation(&queue)
            .create(&ctx)
            .await?;
        // One at a time, so that which two bind is known.
        if name != "c" {
            wait_bound(&ctx, name).await?;
        }
    }
    let mut cards = BTreeSet::new();
    for name in ["a", "b"] {
        let pod = ctx.get_pod(name).await?;
        ensure!(
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node.as_str()),
            "pod {name} should be on {node}"
        );
        let annotations = pod.metadata.annotations.unwrap_or_default();
        let index = annotations
            .get(GPU_INDEX)
            .with_context(|| format!("pod {name} has no {GPU_INDEX}: {annotations:?}"))?;
        ensure!(
            annotations.contains_key("volcano.sh/predicate-time"),
            "pod {name} has no predicate time: {annotations:?}"
        );
        cards.insert(index.clone());
    }
    ensure!(
        cards == BTreeSet::from(["0".to_string(), "1".to_string()]),
        "the two pods should share no card: {cards:?}"
    );
    ctx.wait_unschedulable("c", "GpuShare no enough gpu memory", WAIT)
        .await?;
    Ok(())
}

async fn wait_bound(ctx: &TestCtx, name: &str) -> anyhow::Result<()> {
    ctx.wait_for(&format!("pod {name} bound"), WAIT, || async {
        let bound = ctx.bound_pods().await.map_err(|e| e.to_string())?;
        if bound.contains_key(name) {
            Ok(())
        } else {
            Err(format!("bound so far: {bound:?}"))
        }
    })
    .await
}
