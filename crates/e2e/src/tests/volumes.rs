//! Pods with PersistentVolumeClaims on the real API server, with kube-controller-manager's
//! volume controller binding claims (spec kubernetes.md §7.9.4): a missing claim keeps its pod
//! pending with the claim's name; a bound volume pinned to one node takes its pod there; a
//! `WaitForFirstConsumer` claim gets a static volume on the node the scheduler chose, through
//! the claimRef volcano-rs writes before the bind; a gang with one claim per pod lands where
//! each pod's volume is; a CSI attach limit stops the pod that would exceed it.

use std::time::Duration;

use anyhow::{Result, ensure};
use futures::TryFutureExt as _;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

use crate::harness::{Env, TestCtx};

const WAIT: Duration = Duration::from_secs(60);
const CSI_DRIVER: &str = "e2e.csi.volcano-rs.io";

pub fn volumes(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, "volumes").await?;
    let nodes = ctx.nodes("n", 2, "8", "16Gi", 110).await?;
    let class = format!("{}-local", ctx.name);
    create(&ctx, storage_class(&class)).await?;
    let _daemon = ctx.daemon(&[]).await?;
    missing_claim_waits(&ctx).await?;
    pinned_volume_takes_its_pod(&ctx, &nodes[1]).await?;
    first_consumer_gets_a_static_volume(&ctx, &class, &nodes[0]).await?;
    gang_follows_its_volumes(&ctx, &class, &nodes).await?;
    attach_limit_stops_the_third_pod(&ctx, &nodes[0]).await
}

/// Creates a storage object given as JSON, labelled for the test's cleanup.
async fn create(ctx: &TestCtx, mut object: Value) -> Result<()> {
    object["metadata"]["labels"][&ctx.label.0] = json!(ctx.label.1);
    let client = ctx.env.client.clone();
    let params = PostParams::default();
    match object["kind"].as_str() {
        Some("PersistentVolume") => {
            let pv: PersistentVolume = serde_json::from_value(object)?;
            Api::<PersistentVolume>::all(client)
                .create(&params, &pv)
                .await?;
        }
        Some("PersistentVolumeClaim") => {
            let pvc: PersistentVolumeClaim = serde_json::from_value(object)?;
            Api::<PersistentVolumeClaim>::namespaced(client, &ctx.ns)
                .create(&params, &pvc)
                .await?;
        }
        Some("StorageClass") => {
            let class: StorageClass = serde_json::from_value(object)?;
            Api::<StorageClass>::all(client)
                .create(&params, &class)
                .await?;
        }
        Some("CSINode") => {
            let csi: CSINode = serde_json::from_value(object)?;
            Api::<CSINode>::all(client).create(&params, &csi).await?;
        }
        other => anyhow::bail!("no such storage kind {other:?}"),
    }
    Ok(())
}

fn storage_class(name: &str) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
           "metadata": {"name": name}, "provisioner": "kubernetes.io/no-provisioner",
           "volumeBindingMode": "WaitForFirstConsumer"})
}

/// A 1Gi volume of `class`, pinned to `node`, optionally pre-bound to `claim`.
fn volume(name: &str, class: &str, node: &str, claim: Option<(&str, &str)>) -> Value {
    let mut pv = json!({"apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": class, "hostPath": {"path": format!("/data/{name}")},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}});
    if let Some((ns, claim)) = claim {
        pv["spec"]["claimRef"] = json!({"namespace": ns, "name": claim});
    }
    pv
}

fn claim(name: &str, class: &str, volume: Option<&str>) -> Value {
    let mut pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class,
                 "resources": {"requests": {"storage": "1Gi"}}}});
    if let Some(v) = volume {
        pvc["spec"]["volumeName"] = json!(v);
    }
    pvc
}

async fn wait_node(ctx: &TestCtx, pod: &str) -> Result<String> {
    ctx.wait_for(&format!("pod {pod} bound"), WAIT, || async {
        let bound = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
        bound
            .get(pod)
            .cloned()
            .ok_or_else(|| format!("bound: {bound:?}"))
    })
    .await
}

/// "A pod with a missing claim stays Pending with the reason."
async fn missing_claim_waits(ctx: &TestCtx) -> Result<()> {
    ctx.pod("no-claim")
        .cpu("100m")
        .claim("absent")
        .create(ctx)
        .await?;
    ctx.wait_unschedulable(
        "no-claim",
        r#"persistentvolumeclaim "absent" not found"#,
        WAIT,
    )
    .await?;
    Ok(())
}

/// "A pod with a local PV pinned to one fake node lands there." The claim is bound to the
/// volume by the volume controller (the volume names the claim).
async fn pinned_volume_takes_its_pod(ctx: &TestCtx, node: &str) -> Result<()> {
    let pv = format!("{}-pinned", ctx.name);
    create(ctx, volume(&pv, "", node, Some((&ctx.ns, "pinned")))).await?;
    create(ctx, claim("pinned", "", Some(&pv))).await?;
    ctx.pod("pinned")
        .cpu("100m")
        .claim("pinned")
        .create(ctx)
        .await?;
    let placed = wait_node(ctx, "pinned").await?;
    ensure!(
        placed == node,
        "pod pinned on {placed}, its volume is on {node}"
    );
    Ok(())
}

/// "A WaitForFirstConsumer claim binds to a static PV the controller matches", once
/// volcano-rs chose the node and wrote the volume's claimRef.
async fn first_consumer_gets_a_static_volume(ctx: &TestCtx, class: &str, node: &str) -> Result<()> {
    let pv = format!("{}-static", ctx.name);
    create(ctx, volume(&pv, class, node, None)).await?;
    create(ctx, claim("late", class, None)).await?;
    ctx.pod("late")
        .cpu("100m")
        .claim("late")
        .create(ctx)
        .await?;
    let placed = wait_node(ctx, "late").await?;
    ensure!(
        placed == node,
        "pod late on {placed}, the only volume is on {node}"
    );
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.env.client.clone(), &ctx.ns);
    let bound = claims.get("late").await?;
    let volume_name = bound.spec.and_then(|s| s.volume_name).unwrap_or_default();
    ensure!(
        volume_name == pv,
        "claim late bound to {volume_name:?}, expected {pv}"
    );
    Ok(())
}

/// "A gang of pods with per-pod claims": each member's claim selects a volume on a different
/// node, and the gang is placed only with both.
async fn gang_follows_its_volumes(ctx: &TestCtx, class: &str, nodes: &[String]) -> Result<()> {
    let queue = ctx.queue("q", 1).await?;
    ctx.pod_group("gang", 2, &queue).await?;
    for (i, node) in nodes.iter().enumerate() {
        // Each claim selects its own volume by label, so each member has one possible node.
        let pv = format!("{}-gang-{i}", ctx.name);
        let mut v = volume(&pv, class, node, None);
        v["metadata"]["labels"] = json!({"e2e-volume": format!("gang-{i}")});
        create(ctx, v).await?;
        let mut c = claim(&format!("gang-{i}"), class, None);
        c["spec"]["selector"] = json!({"matchLabels": {"e2e-volume": format!("gang-{i}")}});
        create(ctx, c).await?;
    }
    for i in 0..nodes.len() {
        let name = format!("gang-{i}");
        ctx.pod(&name)
            .cpu("100m")
            .group("gang")
            .claim(&name)
            .create(ctx)
            .await?;
    }
    for (i, node) in nodes.iter().enumerate() {
        let placed = wait_node(ctx, &format!("gang-{i}")).await?;
        ensure!(
            &placed == node,
            "gang-{i} on {placed}, its volume is on {node}"
        );
    }
    Ok(())
}

/// "A CSI attach limit stops the n+1-th pod": the node's CSINode allows two volumes of the
/// driver; three pods each need one.
async fn attach_limit_stops_the_third_pod(ctx: &TestCtx, node: &str) -> Result<()> {
    create(
        ctx,
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
               "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": node,
                                     "allocatable": {"count": 2}}]}}),
    )
    .await?;
    for i in 0..3 {
        let pv = format!("{}-csi-{i}", ctx.name);
        let claim_name = format!("csi-{i}");
        let mut v = json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "csi": {"driver": CSI_DRIVER, "volumeHandle": pv},
                     "claimRef": {"namespace": ctx.ns, "name": claim_name},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}});
        v["spec"]["storageClassName"] = json!("");
        create(ctx, v).await?;
        create(ctx, claim(&claim_name, "", Some(&pv))).await?;
    }
    for i in 0..2 {
        let name = format!("csi-{i}");
        ctx.pod(&name).cpu("100m").claim(&name).create(ctx).await?;
        wait_node(ctx, &name).await?;
    }
    ctx.pod("csi-2")
        .cpu("100m")
        .claim("csi-2")
        .create(ctx)
        .await?;
    ctx.wait_unschedulable("csi-2", "node(s) exceed max volume count", WAIT)
        .await?;
    Ok(())
}
