//! `numa-aware`: NUMA placement from real Numatopology objects.
//!
//! Two KWOK nodes of 8 CPUs over two NUMA nodes (CPUs 0-3 and 4-7), each with a Numatopology
//! report (static CPU manager, single-numa-node topology policy): `a` has 3 CPUs free in each
//! NUMA node, `b` 4 free in NUMA node 1. A Guaranteed pod asking 4 CPUs with the
//! single-numa-node policy binds on `b`. A second such pod then waits: `b`'s report does not
//! list the first pod yet, so its CPUs stay taken, and `a` has no NUMA node with 4 free.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use crate::harness::{Env, TestCtx};

const NAME: &str = "numa-aware";
const WAIT: Duration = Duration::from_secs(30);
const POLICY: &str = "volcano.sh/numa-topology-policy";

const CONF: &str = r#"actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: numa-aware
"#;

pub fn numa_aware(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

fn node(name: &str) -> Node {
    let q = |s: &str| Quantity(s.to_string());
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: None,
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([
                ("cpu".to_string(), q("8")),
                ("memory".to_string(), q("16Gi")),
                ("pods".to_string(), q("110")),
            ])),
            ..Default::default()
        }),
    }
}

/// The report of `node`: 8 CPUs over two NUMA nodes, `free` of them allocatable.
fn report(ctx: &TestCtx, node: &str, free: &str) -> anyhow::Result<apis::Numatopology> {
    let detail: serde_json::Map<String, serde_json::Value> = (0..8)
        .map(|i| {
            (
                i.to_string(),
                serde_json::json!({"numa": i / 4, "socket": i / 4, "core": i}),
            )
        })
        .collect();
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": {"name": node, "labels": {ctx.label.0.clone(): ctx.label.1.clone()}},
        "spec": {
            "policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
            "numares": {"cpu": {"allocatable": free, "capacity": 8}},
            "cpuDetail": detail
        }
    }))?)
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let a = ctx.node_with(node("a")).await?;
    let b = ctx.node_with(node("b")).await?;
    let reports = Api::<apis::Numatopology>::all(env.client.clone());
    for (n, free) in [(&a, "0-2,4-6"), (&b, "0-1,4-7")] {
        reports
            .create(&PostParams::default(), &report(&ctx, n, free)?)
            .await
            .context("creating a Numatopology")?;
    }
    let queue = ctx.queue("q", 1).await?;
    let _daemon = ctx.daemon_with_conf(CONF).await?;

    for name in ["first", "second"] {
        ctx.pod(name)
            .cpu("4")
            .memory("1Gi")
            .limit("cpu", "4")
            .limit("memory", "1Gi")
            .annotation(POLICY, "single-numa-node")
            .queue_annotation(&queue)
            .create(&ctx)
            .await?;
        if name == "first" {
            let node = ctx
                .wait_for("the first pod bound", WAIT, || async {
                    let bound = ctx.bound_pods().await.map_err(|e| e.to_string())?;
                    bound
                        .get("first")
                        .cloned()
                        .ok_or_else(|| format!("bound so far: {bound:?}"))
                })
                .await?;
            ensure!(node == b, "the first pod must go to {b}, went to {node}");
        }
    }
    ctx.wait_unschedulable("second", "cannot be assigned by numa", WAIT)
        .await?;
    ensure!(
        !ctx.bound_pods().await?.contains_key("second"),
        "the second pod must wait"
    );
    Ok(())
}
