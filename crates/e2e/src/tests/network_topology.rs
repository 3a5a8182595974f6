//! `network-topology`: gangs with a hard network-topology constraint over real HyperNodes.
//!
//! Five 4-cpu nodes: `a-0`, `a-1` labelled into rack `a`, and `b-0` … `b-2` into rack `b`.
//! HyperNodes: `rack-a` (tier 1, nodes by label), `rack-b` (tier 1, nodes by name pattern) and
//! `spine` (tier 2, over both racks). Every pod asks for 3 cpu, so a node holds one. With the
//! `network-topology-aware` plugin configured:
//!
//! 1. A gang of 4 with `mode: hard, highestTierAllowed: 1` fits no rack: nothing binds, and the
//!    PodGroup's Unschedulable condition and the pods' `PodScheduled` message name the tier.
//! 2. The same gang allowed tier 2 (`highestTierName: spine-tier`) binds, across both racks.
//! 3. Once it is gone, a gang of 3 allowed tier 1 binds, all in rack `b` (the only rack with
//!    three nodes).
//! 4. Once that is gone, a job of two sub-groups (`subGroupPolicy` by a `part` label, two pods
//!    each, each sub-group limited to tier 1, the job to tier 2) binds with each sub-group
//!    inside one rack.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, ensure};
use apis::{NetworkTopologySpec, PodGroup, PodGroupSpec};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};

use crate::harness::{Env, TestCtx};

const NAME: &str = "network-topology";
const RACK_LABEL: &str = "e2e.volcano-rs/rack";
const PART_LABEL: &str = "e2e.volcano-rs/part";
const WAIT: Duration = Duration::from_secs(30);

const CONF: &str = r#"actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"#;

pub fn network_topology(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let mut rack_a = BTreeSet::new();
    let mut rack_b = BTreeSet::new();
    for i in 0..2 {
        rack_a.insert(ctx.node_with(node(&format!("a-{i}"), "a")).await?);
    }
    for i in 0..3 {
        rack_b.insert(ctx.node_with(node(&format!("b-{i}"), "b")).await?);
    }
    let queue = ctx.queue("q", 1).await?;
    create_hyper_nodes(&env, &ctx).await?;

    let _daemon = ctx.daemon_with_conf(CONF).await?;

    // 1. Tier 1 only: no rack has four nodes.
    gang(&ctx, &queue, "wide", 4, tier(1)).await?;
    let condition = ctx
        .wait_for(
            "the PodGroup's Unschedulable condition naming tier 1",
            WAIT,
            || async {
                let pg = ctx
                    .pod_groups_api()
                    .get("wide")
                    .await
                    .map_err(|e| e.to_string())?;
                let conditions = pg.status.map(|s| s.conditions).unwrap_or_default();
                conditions
                    .into_iter()
                    .find(|c| {
                        c.type_ == "Unschedulable"
                            && c.message.contains("no HyperNode of tier 1 or below")
                    })
                    .ok_or_else(|| "no such condition yet".to_string())
            },
        )
        .await?;
    let message = condition.message.clone();
    ensure!(
        message.contains("highestTierAllowed 1"),
        "the condition should give the constraint: {message}"
    );
    // The pods without an error of their own say the same (not where a dry run put them);
    // which pod failed on a node depends on the task order, so any of them may be the one.
    ctx.wait_for("a wide pod's message naming the tier", WAIT, || async {
        for i in 0..4 {
            let pod = ctx
                .get_pod(&format!("wide-{i}"))
                .await
                .map_err(|e| e.to_string())?;
            if let Some((status, _, message)) = crate::harness::pod_scheduled(&pod)
                && status == "False"
                && message.contains("no HyperNode of tier 1 or below")
            {
                return Ok(());
            }
        }
        Err("no pod says it yet".to_string())
    })
    .await?;
    ensure!(condition.status == "True", "condition: {condition:?}");
    ensure!(
        ctx.bound_pods().await?.is_empty(),
        "nothing may bind while the gang fits no tier-1 HyperNode"
    );

    // 2. The same gang allowed the spine (by tier name) spans both racks.
    delete_gang(&ctx, "wide", 4).await?;
    let spine = NetworkTopologySpec {
        mode: "hard".into(),
        highest_tier_allowed: None,
        highest_tier_name: "spine-tier".into(),
    };
    gang(&ctx, &queue, "spine", 4, spine).await?;
    let bound = wait_bound(&ctx, "spine", 4).await?;
    let nodes: BTreeSet<&String> = bound.values().collect();
    ensure!(
        nodes.iter().any(|n| rack_a.contains(*n)) && nodes.iter().any(|n| rack_b.contains(*n)),
        "a gang of four allowed tier 2 spans both racks: {bound:?}"
    );
    delete_gang(&ctx, "spine", 4).await?;

    // 3. A gang of three allowed tier 1 lands in rack b.
    gang(&ctx, &queue, "rack", 3, tier(1)).await?;
    let bound = wait_bound(&ctx, "rack", 3).await?;
    ensure!(
        bound.values().all(|n| rack_b.contains(n)),
        "a gang of three allowed tier 1 must stay in rack b ({rack_b:?}): {bound:?}"
    );
    delete_gang(&ctx, "rack", 3).await?;

    // 4. Two sub-groups of two, each kept inside one rack.
    sub_grouped(&ctx, &queue).await?;
    let bound = wait_bound(&ctx, "parts", 4).await?;
    for part in 0..2 {
        let nodes: Vec<&String> = (0..2)
            .filter_map(|i| bound.get(&format!("parts-{}", part * 2 + i)))
            .collect();
        let same_rack =
            nodes.iter().all(|n| rack_a.contains(*n)) || nodes.iter().all(|n| rack_b.contains(*n));
        ensure!(
            nodes.len() == 2 && same_rack,
            "sub-group {part} must stay inside one rack: {bound:?}"
        );
    }
    Ok(())
}

/// A job of four 3-cpu pods in two sub-groups by the `part` label (pods 0–1 and 2–3), each
/// sub-group limited to tier 1 and the job to tier 2.
async fn sub_grouped(ctx: &TestCtx, queue: &str) -> anyhow::Result<()> {
    let policy: apis::SubGroupPolicySpec = serde_json::from_value(serde_json::json!({
        "name": "part",
        "subGroupSize": 2,
        "matchLabelKeys": [PART_LABEL],
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1}
    }))?;
    ctx.create_pod_group(PodGroup {
        metadata: ObjectMeta {
            name: Some("parts".into()),
            ..Default::default()
        },
        spec: PodGroupSpec {
            min_member: 4,
            queue: queue.to_string(),
            network_topology: Some(tier(2)),
            sub_group_policy: vec![policy],
            ..Default::default()
        },
        status: None,
    })
    .await?;
    for i in 0..4 {
        ctx.pod(&format!("parts-{i}"))
            .cpu("3")
            .memory("1Gi")
            .group("parts")
            .label(PART_LABEL, &(i / 2).to_string())
            .create(ctx)
            .await?;
    }
    Ok(())
}

fn tier(t: i64) -> NetworkTopologySpec {
    NetworkTopologySpec {
        mode: "hard".into(),
        highest_tier_allowed: Some(t),
        highest_tier_name: String::new(),
    }
}

/// A 4-cpu node in a rack.
fn node(name: &str, rack: &str) -> Node {
    let q = |s: &str| Quantity(s.to_string());
    let allocatable = BTreeMap::from([
        ("cpu".to_string(), q("4")),
        ("memory".to_string(), q("8Gi")),
        ("pods".to_string(), q("110")),
    ]);
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(RACK_LABEL.to_string(), rack.to_string())])),
            ..Default::default()
        },
        spec: None,
        status: Some(NodeStatus {
            allocatable: Some(allocatable),
            ..Default::default()
        }),
    }
}

/// `rack-a` selects its nodes by label, `rack-b` by name pattern, `spine` holds both racks.
async fn create_hyper_nodes(env: &Env, ctx: &TestCtx) -> anyhow::Result<()> {
    let name = |n: &str| format!("e2e-{NAME}-{n}");
    let labels = serde_json::json!({ctx.label.0.clone(): ctx.label.1.clone()});
    let objects = [
        serde_json::json!({
            "metadata": {"name": name("rack-a"), "labels": labels},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"labelMatch": {
                "matchLabels": {RACK_LABEL: "a", ctx.label.0.clone(): ctx.label.1.clone()}}}}]}
        }),
        serde_json::json!({
            "metadata": {"name": name("rack-b"), "labels": labels},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {
                "pattern": format!("^{NAME}-b-[0-9]+$")}}}]}
        }),
        serde_json::json!({
            "metadata": {"name": name("spine"), "labels": labels},
            "spec": {"tier": 2, "tierName": "spine-tier", "members": [
                {"type": "HyperNode", "selector": {"exactMatch": {"name": name("rack-a")}}},
                {"type": "HyperNode", "selector": {"exactMatch": {"name": name("rack-b")}}}]}
        }),
    ];
    let api = Api::<apis::HyperNode>::all(env.client.clone());
    for object in objects {
        let hn: apis::HyperNode = serde_json::from_value(object)?;
        api.create(&PostParams::default(), &hn)
            .await
            .context("creating a HyperNode")?;
    }
    Ok(())
}

/// A PodGroup of `size` 3-cpu pods `<name>-<i>` with the given constraint.
async fn gang(
    ctx: &TestCtx,
    queue: &str,
    name: &str,
    size: i32,
    topology: NetworkTopologySpec,
) -> anyhow::Result<()> {
    ctx.create_pod_group(PodGroup {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: PodGroupSpec {
            min_member: size,
            queue: queue.to_string(),
            network_topology: Some(topology),
            ..Default::default()
        },
        status: None,
    })
    .await?;
    for i in 0..size {
        ctx.pod(&format!("{name}-{i}"))
            .cpu("3")
            .memory("1Gi")
            .group(name)
            .create(ctx)
            .await?;
    }
    Ok(())
}

/// Waits until the gang's `size` pods are bound; their nodes by pod.
async fn wait_bound(
    ctx: &TestCtx,
    name: &str,
    size: usize,
) -> anyhow::Result<BTreeMap<String, String>> {
    let prefix = format!("{name}-");
    ctx.wait_for(
        &format!("the {size} pods of {name} bound"),
        WAIT,
        || async {
            let bound: BTreeMap<String, String> = ctx
                .bound_pods()
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .filter(|(p, _)| p.starts_with(&prefix))
                .collect();
            if bound.len() == size {
                Ok(bound)
            } else {
                Err(format!("bound so far: {bound:?}"))
            }
        },
    )
    .await
}

/// Deletes the gang's pods and PodGroup and waits until the pods are gone.
async fn delete_gang(ctx: &TestCtx, name: &str, size: i32) -> anyhow::Result<()> {
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    for i in 0..size {
        ctx.pods_api()
            .delete(&format!("{name}-{i}"), &now)
            .await
            .with_context(|| format!("deleting {name}-{i}"))?;
    }
    ctx.pod_groups_api()
        .delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("deleting PodGroup {name}"))?;
    let prefix = format!("{name}-");
    ctx.wait_for(&format!("the pods of {name} gone"), WAIT, || async {
        let left = ctx
            .pods_api()
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|p| {
                p.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .count();
        if left == 0 {
            Ok(())
        } else {
            Err(format!("{left} left"))
        }
    })
    .await
}
