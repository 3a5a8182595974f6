//! `device-share`: GPU sharing with the `deviceshare` plugin on the real API server.
//!
//! A KWOK node offers two GPU cards sharing `volcano.sh/gpu-memory: 2000`. Three pods ask 600
//! each. Two bind, each on its own card: the binding carries `volcano.sh/gpu-index` and
//! `volcano.sh/predicate-time`, and the API server copies them onto the pods. The third waits
//! with the device's reason although the node has 800 left in total (no card has 600).
//!
//! `device-share-vgpu`: the vGPU device. A KWOK node registers two cards of 16384 MiB in
//! `volcano.sh/node-vgpu-register`. Under `binpack`, pods created one at a time fill the first
//! card before the second: each later session reads the cards taken from the bound pods'
//! `volcano.sh/vgpu-ids-new`, which the binding wrote. A pod wanting two cards of 3000 MiB then
//! waits with the device's reason: only one card has that much left, though the node has
//! 6768 MiB in all. A second node registers an A100 in MIG mode, whose geometries the test's
//! device configuration ConfigMap gives: a pod asking `volcano.sh/vgpu-mode: mig` gets a MIG
//! instance named by them. `/metrics` shows Volcano's card gauges.
//!
//! `device-share-node-lock`: with `deviceshare.NodeLockEnable`, the first vGPU pod's bind sets
//! the node's `hamivgpu` annotation to the time; the second pod waits, saying the node is
//! locked, until the annotation goes (as the device plugin removes it once it has served the
//! first pod), and its own bind takes the lock again.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, ensure};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};

use crate::harness::{Env, TestCtx};

const NAME: &str = "device-share";
const WAIT: Duration = Duration::from_secs(30);
const GPU_MEMORY: &str = "volcano.sh/gpu-memory";
const GPU_NUMBER: &str = "volcano.sh/gpu-number";
const GPU_INDEX: &str = "volcano.sh/gpu-index";

/// The configuration with `deviceshare` given these arguments (YAML lines, indented).
pub(crate) fn conf(arguments: &str) -> String {
    format!(
        r#"actions: "enqueue, allocate, backfill"
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
{arguments}"#
    )
}

const SHARING_ARGS: &str = "      deviceshare.GPUSharingEnable: true\n";
const VGPU_ARGS: &str = "      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolicy: binpack
      deviceshare.ScheduleWeight: 10
      deviceshare.KnownGeometriesCMName: e2e-device-share-vgpu
";
/// vGPU with the node lock.
const NODE_LOCK_ARGS: &str = "      deviceshare.VGPUEnable: true
      deviceshare.NodeLockEnable: true
";
/// The node annotation the vGPU device locks a node with.
const VGPU_LOCK: &str = "hamivgpu";
/// The test's device configuration ConfigMap (in kube-system): the MIG geometries of an A100.
const DEVICE_CONFIG: &str = "e2e-device-share-vgpu";
const DEVICE_CONFIG_YAML: &str = "nvidia:
  resourceCountName: volcano.sh/vgpu-number
  resourceMemoryName: volcano.sh/vgpu-memory
  resourceCoreName: volcano.sh/vgpu-cores
  knownMigGeometries:
  - models: [A100-SXM4-40GB]
    allowedGeometries:
    - group: group1
      geometries:
      - {name: 1g.5gb, memory: 5120, count: 7}
    - group: group2
      geometries:
      - {name: 2g.10gb, memory: 10240, count: 3}
";

pub fn device_share(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let node = gpu_node(
        &ctx,
        "gpu",
        &[(GPU_MEMORY, "2000"), (GPU_NUMBER, "2")],
        BTreeMap::new(),
    )
    .await?;
    let queue = ctx.queue("q", 1).await?;
    let _daemon = ctx.daemon_with_conf(&conf(SHARING_ARGS)).await?;

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

pub fn device_share_vgpu(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run_vgpu(env).await })
}

async fn run_vgpu(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, "device-share-vgpu").await?;
    let register =
        "GPU-0,4,16384,NVIDIA-A10,true,hami-core:GPU-1,4,16384,NVIDIA-A10,true,hami-core:";
    let node = vgpu_node(&ctx, "vgpu", ["8", "32768", "200"], register).await?;
    let queue = ctx.queue("q", 1).await?;
    let mig_node = vgpu_node(
        &ctx,
        "mig",
        ["7", "40960", "100"],
        "GPU-m0,7,40960,NVIDIA-A100-SXM4-40GB,true,mig:",
    )
    .await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.env.client.clone(), "kube-system");
    let _ = config_maps
        .delete(DEVICE_CONFIG, &DeleteParams::default())
        .await;
    config_maps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some(DEVICE_CONFIG.into()),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([(
                    "device-config.yaml".to_string(),
                    DEVICE_CONFIG_YAML.to_string(),
                )])),
                ..Default::default()
            },
        )
        .await
        .context("creating the device configuration ConfigMap")?;
    let outcome = run_vgpu_pods(&ctx, &queue, (&node, &mig_node)).await;
    let _ = config_maps
        .delete(DEVICE_CONFIG, &DeleteParams::default())
        .await;
    outcome
}

/// The pods of `device-share-vgpu` on the HAMi-core node and the MIG node.
async fn run_vgpu_pods(
    ctx: &TestCtx,
    queue: &str,
    (node, mig_node): (&str, &str),
) -> anyhow::Result<()> {
    let daemon = ctx.daemon_with_conf(&conf(VGPU_ARGS)).await?;
    ctx.wait_for("the device configuration read", WAIT, || async {
        if daemon.log().contains("device configuration read") {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    })
    .await?;

    // (pod, cards, MiB per card, the card expected)
    let placed = [
        ("a", "1", "8000", "GPU-0"),
        ("b", "1", "8000", "GPU-0"),
        ("c", "1", "10000", "GPU-1"),
    ];
    for (name, cards, memory, card) in placed {
        vgpu_pod(ctx, queue, name, cards, memory).await?;
        wait_bound(ctx, name).await?;
        let pod = ctx.get_pod(name).await?;
        let annotations = pod.metadata.annotations.unwrap_or_default();
        let get = |k: &str| annotations.get(k).map(String::as_str);
        let want = format!("{card},NVIDIA,{memory},0:");
        ensure!(
            get("volcano.sh/vgpu-ids-new") == Some(want.as_str())
                && get("volcano.sh/devices-to-allocate") == Some(want.as_str()),
            "pod {name} should hold {want}: {annotations:?}"
        );
        ensure!(
            get("volcano.sh/vgpu-node") == Some(node)
                && get("volcano.sh/bind-phase") == Some("allocating")
                && get("volcano.sh/vgpu-time").is_some(),
            "pod {name} lacks the assignment annotations: {annotations:?}"
        );
    }
    vgpu_pod(ctx, queue, "d", "2", "3000").await?;
    ctx.wait_unschedulable(
        "d",
        "hami-vgpuDeviceSharing error: not enough gpu fitted on this node",
        WAIT,
    )
    .await?;
    // A pod that insists on MIG gets an instance of the A100 by the ConfigMap's geometries:
    // group1's 1g.5gb is too small for 8000 MiB, so group2's 2g.10gb, position 0.
    ctx.pod("m")
        .cpu("1")
        .request("volcano.sh/vgpu-number", "1")
        .limit("volcano.sh/vgpu-number", "1")
        .request("volcano.sh/vgpu-memory", "8000")
        .limit("volcano.sh/vgpu-memory", "8000")
        .annotation("volcano.sh/vgpu-mode", "mig")
        .queue_annotation(queue)
        .create(ctx)
        .await?;
    wait_bound(ctx, "m").await?;
    let m = ctx.get_pod("m").await?;
    let ids = m
        .metadata
        .annotations
        .unwrap_or_default()
        .remove("volcano.sh/vgpu-ids-new");
    ensure!(
        m.spec.and_then(|s| s.node_name).as_deref() == Some(mig_node)
            && ids.as_deref() == Some("GPU-m0[group2-0],NVIDIA,8000,0:"),
        "pod m should hold GPU-m0[group2-0] on {mig_node}: {ids:?}"
    );
    // Volcano's card gauges: GPU-0 shared by a and b, GPU-1 holding c's 10000 MiB.
    let want = [
        ("volcano_vgpu_device_shared_number", "GPU-0", "2"),
        ("volcano_vgpu_device_allocated_memory", "GPU-1", "10000"),
        ("volcano_vgpu_device_memory_limit", "GPU-1", "16384"),
    ];
    ctx.wait_for("the vGPU card gauges", WAIT, || async {
        let text = daemon.metrics().await.map_err(|e| e.to_string())?;
        for (name, card, value) in want {
            let found = text.lines().any(|l| {
                l.starts_with(&format!("{name}{{"))
                    && l.contains(&format!("devID=\"{card}\""))
                    && l.contains(&format!("NodeName=\"{node}\""))
                    && l.ends_with(&format!(" {value}"))
            });
            if !found {
                return Err(format!("no {name} of {card} at {value}"));
            }
        }
        Ok(())
    })
    .await
}

async fn vgpu_pod(
    ctx: &TestCtx,
    queue: &str,
    name: &str,
    cards: &str,
    memory: &str,
) -> anyhow::Result<()> {
    ctx.pod(name)
        .cpu("1")
        .request("volcano.sh/vgpu-number", cards)
        .limit("volcano.sh/vgpu-number", cards)
        .request("volcano.sh/vgpu-memory", memory)
        .limit("volcano.sh/vgpu-memory", memory)
        .queue_annotation(queue)
        .create(ctx)
        .await?;
    Ok(())
}

/// A [`gpu_node`] with vGPU cards: `cards`, `memory` and `cores` allocatable in all, the cards
/// as the device plugin registers them (`volcano.sh/node-vgpu-register`).
pub(crate) async fn vgpu_node(
    ctx: &TestCtx,
    name: &str,
    [cards, memory, cores]: [&str; 3],
    register: &str,
) -> anyhow::Result<String> {
    gpu_node(
        ctx,
        name,
        &[
            ("volcano.sh/vgpu-number", cards),
            ("volcano.sh/vgpu-memory", memory),
            ("volcano.sh/vgpu-cores", cores),
        ],
        BTreeMap::from([(
            "volcano.sh/node-vgpu-register".to_string(),
            register.to_string(),
        )]),
    )
    .await
}

/// A KWOK node of 8 cpu with these extra allocatable resources and annotations.
pub(crate) async fn gpu_node(
    ctx: &TestCtx,
    name: &str,
    extra: &[(&str, &str)],
    annotations: BTreeMap<String, String>,
) -> anyhow::Result<String> {
    let q = |s: &str| Quantity(s.to_string());
    let mut allocatable = BTreeMap::from([
        ("cpu".to_string(), q("8")),
        ("memory".to_string(), q("16Gi")),
        ("pods".to_string(), q("110")),
    ]);
    allocatable.extend(extra.iter().map(|(k, v)| (k.to_string(), q(v))));
    ctx.node_with(Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: None,
        status: Some(NodeStatus {
            allocatable: Some(allocatable),
            ..Default::default()
        }),
    })
    .await
}

pub fn device_share_node_lock(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run_node_lock(env).await })
}

async fn run_node_lock(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, "device-share-node-lock").await?;
    let node = vgpu_node(
        &ctx,
        "lock",
        ["4", "16384", "100"],
        "GPU-L0,4,16384,NVIDIA-A10,true,hami-core:",
    )
    .await?;
    let queue = ctx.queue("q", 1).await?;
    let _daemon = ctx.daemon_with_conf(&conf(NODE_LOCK_ARGS)).await?;
    let nodes: Api<Node> = Api::all(ctx.env.client.clone());
    let lock_of = |n: Node| n.metadata.annotations.and_then(|mut a| a.remove(VGPU_LOCK));

    vgpu_pod(&ctx, &queue, "a", "1", "1000").await?;
    wait_bound(&ctx, "a").await?;
    let first = lock_of(nodes.get(&node).await?)
        .with_context(|| format!("node {node} has no {VGPU_LOCK} lock after a's bind"))?;
    ensure!(
        first.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
        "the lock should be a time: {first:?}"
    );
    vgpu_pod(&ctx, &queue, "b", "1", "1000").await?;
    ctx.wait_unschedulable("b", "has been locked within 5 minutes", WAIT)
        .await?;
    // The device plugin gives the lock back once it has served a.
    let unlock = serde_json::json!({"metadata": {"annotations": {VGPU_LOCK: null}}});
    nodes
        .patch(&node, &PatchParams::default(), &Patch::Merge(&unlock))
        .await?;
    wait_bound(&ctx, "b").await?;
    ensure!(
        lock_of(nodes.get(&node).await?).is_some(),
        "b's bind should take the lock again"
    );
    Ok(())
}
