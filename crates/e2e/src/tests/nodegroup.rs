//! `node-group`: the `nodegroup` plugin with real Queue and Node objects.
//!
//! Three nodes: `ga` (label `volcano.sh/nodegroup-name=group-a`), `gb` (`group-b`) and `plain`
//! (no group label), 8 cpu each. With `nodegroup` in strict mode (the default):
//!
//! 1. Queue `qa` requires `group-a` and limits it to 2 cpu through the
//!    `volcano.sh/nodegroup-resource-limits` annotation: of three 1-cpu pods, two bind on `ga`
//!    (never on `gb` or `plain`, where the spreading node order would otherwise put them) and
//!    the third waits with "node group resource limit exceeded" in its PodScheduled message.
//! 2. Queue `qnone` has no affinity: its pod fits every node but stays Pending, and its message
//!    says why for each node ("node group affinity not specified", "node group label not
//!    found").

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use apis::{Affinity, NodeGroupAffinity, QueueSpec};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ObjectMeta;

use crate::harness::{Env, TestCtx, pod_scheduled};

const NAME: &str = "node-group";
const GROUP_LABEL: &str = "volcano.sh/nodegroup-name";
const LIMITS_ANNOTATION: &str = "volcano.sh/nodegroup-resource-limits";
const WAIT: Duration = Duration::from_secs(30);

pub fn node_group(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let ga = ctx.node_with(node("ga", Some("group-a"))).await?;
    let gb = ctx.node_with(node("gb", Some("group-b"))).await?;
    let plain = ctx.node_with(node("plain", None)).await?;

    let affinity = Affinity {
        node_group_affinity: Some(NodeGroupAffinity {
            required_during_scheduling_ignored_during_execution: vec!["group-a".into()],
            ..Default::default()
        }),
        node_group_anti_affinity: None,
    };
    let qa = queue(
        &ctx,
        "qa",
        Some(affinity),
        Some(r#"{"group-a":{"cpu":"2"}}"#),
    )
    .await?;
    let qnone = queue(&ctx, "qnone", None, None).await?;

    let conf = env.log_dir.join(format!("{NAME}.conf"));
    std::fs::write(&conf, CONF).context("writing the scheduler configuration")?;
    let conf = conf.display().to_string();
    let _daemon = ctx.daemon(&["--scheduler-conf", &conf]).await?;

    // 1. Required group and its resource limit.
    for i in 0..3 {
        ctx.pod(&format!("a-{i}"))
            .cpu("1")
            .memory("1Gi")
            .queue_annotation(&qa)
            .create(&ctx)
            .await?;
    }
    let bound = ctx
        .wait_for("two of qa's pods bound", WAIT, || async {
            let bound = ctx.bound_pods().await.map_err(|e| e.to_string())?;
            let mine: BTreeMap<String, String> = bound
                .into_iter()
                .filter(|(p, _)| p.starts_with("a-"))
                .collect();
            if mine.len() >= 2 {
                Ok(mine)
            } else {
                Err(format!("bound so far: {mine:?}"))
            }
        })
        .await?;
    for (pod, node) in &bound {
        ensure!(
            *node == ga,
            "pod {pod} of queue qa (required group-a) is on {node}, not on {ga}"
        );
    }
    let waiting = ["a-0", "a-1", "a-2"]
        .into_iter()
        .find(|p| !bound.contains_key(*p))
        .context("one of qa's pods should be left over the group-a limit")?;
    wait_message(&ctx, waiting, &["node group resource limit exceeded"]).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        ctx.get_pod(waiting)
            .await?
            .spec
            .and_then(|s| s.node_name)
            .is_none(),
        "pod {waiting} must stay unbound: group-a is limited to 2 cpu for queue qa"
    );

    // 2. A queue without affinity: strict mode places its pods nowhere, and says why.
    ctx.pod("none-0")
        .cpu("1")
        .memory("1Gi")
        .queue_annotation(&qnone)
        .create(&ctx)
        .await?;
    wait_message(
        &ctx,
        "none-0",
        &[
            "node group affinity not specified",
            "node group label not found",
        ],
    )
    .await?;
    ensure!(
        ctx.get_pod("none-0")
            .await?
            .spec
            .and_then(|s| s.node_name)
            .is_none(),
        "pod none-0 must not be bound to any of {ga}, {gb}, {plain}"
    );
    Ok(())
}

const CONF: &str = r#"actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: nodegroup
"#;

fn node(name: &str, group: Option<&str>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: group.map(|g| BTreeMap::from([(GROUP_LABEL.to_string(), g.to_string())])),
            ..Default::default()
        },
        spec: None,
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([
                ("cpu".to_string(), Quantity("8".into())),
                ("memory".to_string(), Quantity("16Gi".into())),
                ("pods".to_string(), Quantity("110".into())),
            ])),
            ..Default::default()
        }),
    }
}

/// A Queue `<test>-<name>` with the given node-group affinity and limits annotation.
async fn queue(
    ctx: &TestCtx,
    name: &str,
    affinity: Option<Affinity>,
    limits: Option<&str>,
) -> anyhow::Result<String> {
    let spec = QueueSpec {
        weight: 1,
        affinity,
        ..Default::default()
    };
    let annotations = limits
        .map(|l| BTreeMap::from([(LIMITS_ANNOTATION.to_string(), l.to_string())]))
        .unwrap_or_default();
    ctx.queue_with(name, spec, annotations).await
}

/// Waits until the pod's `PodScheduled=False` message contains every one of `parts`.
async fn wait_message(ctx: &TestCtx, pod: &str, parts: &[&str]) -> anyhow::Result<()> {
    ctx.wait_for(
        &format!("pod {pod}'s PodScheduled message to contain {parts:?}"),
        WAIT,
        || async {
            let p = ctx.get_pod(pod).await.map_err(|e| e.to_string())?;
            match pod_scheduled(&p) {
                Some((status, _, message))
                    if status == "False" && parts.iter().all(|x| message.contains(x)) =>
                {
                    Ok(())
                }
                other => Err(format!("PodScheduled is {other:?}")),
            }
        },
    )
    .await
}
