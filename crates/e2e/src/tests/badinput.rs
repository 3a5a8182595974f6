//! Bad input through the API: each mistake is refused by the API server or reported by the
//! scheduler on the object, and the daemon keeps scheduling everything else.

use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use apis::{PodGroup, PodGroupSpec};
use futures::TryFutureExt as _;
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};

use crate::harness::{Daemon, Env, TestCtx, pod_scheduled};

const SHORT: Duration = Duration::from_secs(30);

/// Waits for an event with `reason` regarding `kind`/`name` whose message contains `needle`.
async fn wait_event(
    ctx: &TestCtx,
    kind: &str,
    name: &str,
    reason: &str,
    needle: &str,
) -> Result<String> {
    ctx.wait_for(
        &format!("a {reason} event on {kind} {name} mentioning {needle:?}"),
        SHORT,
        || async {
            let events = ctx
                .events_for(kind, name)
                .map_err(|e| format!("{e:#}"))
                .await?;
            events
                .iter()
                .find(|(r, m)| r == reason && m.contains(needle))
                .map(|(_, m)| m.clone())
                .ok_or_else(|| format!("events {events:?}"))
        },
    )
    .await
}

/// "Bad input through the API: a PodGroup naming a missing queue, a Queue with weight 0, a pod
/// with an absurd request, an unknown PriorityClass — each gives an event or condition that says
/// what is wrong; the daemon keeps scheduling everything else." Also a Queue with a negative
/// capability, which the API server accepts: an `InvalidValue` event names the field; and a
/// HyperNode whose name pattern does not compile (the CRD only asks for a non-empty one).
pub fn bad_input(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, "bad-input").await?;
    ctx.nodes("a", 1, "4", "8Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;
    let daemon = ctx.daemon(&[]).await?;

    missing_queue_is_reported(&ctx).await?;
    let raw = raw_queues_api(&ctx);
    zero_weight_queue_is_refused(&ctx, &raw).await?;
    negative_capability_is_reported(&ctx, &raw).await?;
    bad_hyper_node_pattern_is_reported(&ctx).await?;
    absurd_request_names_cpu(&ctx).await?;
    unknown_group_priority_class_is_reported(&ctx, &queue).await?;
    unknown_pod_priority_class_is_refused(&ctx).await?;
    ordinary_work_still_scheduled(&ctx, &daemon).await
}

/// A PodGroup naming a queue that does not exist: skipped, with a Warning saying why.
async fn missing_queue_is_reported(ctx: &TestCtx) -> Result<()> {
    ctx.pod_group("no-queue", 1, "nope").await?;
    ctx.pod("no-queue-0")
        .cpu("1")
        .group("no-queue")
        .create(ctx)
        .await?;
    wait_event(ctx, "PodGroup", "no-queue", "QueueNotFound", "nope").await?;
    Ok(())
}

/// Queues as untyped objects, so that a test can send fields the typed Queue would change.
fn raw_queues_api(ctx: &TestCtx) -> Api<DynamicObject> {
    let queue_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(apis::GROUP, apis::VERSION, "Queue"),
        "queues",
    );
    Api::all_with(ctx.env.client.clone(), &queue_resource)
}

/// A Queue with weight 0: the CRD's schema (minimum 1) refuses it. Sent as raw JSON, since the
/// typed Queue leaves a zero weight out (and the CRD would default it to 1).
async fn zero_weight_queue_is_refused(ctx: &TestCtx, raw: &Api<DynamicObject>) -> Result<()> {
    let zero: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": apis::API_VERSION,
        "kind": "Queue",
        "metadata": {
            "name": format!("{}-zero", ctx.name),
            "labels": {ctx.label.0.as_str(): ctx.label.1.as_str()},
        },
        "spec": {"weight": 0},
    }))
    .context("building the weight-0 queue")?;
    match raw.create(&PostParams::default(), &zero).await {
        Ok(_) => {
            bail!("expected the API server to refuse a Queue with weight 0, it was created")
        }
        Err(e) => {
            let message = e.to_string();
            ensure!(
                message.contains("spec.weight"),
                "expected the refusal of a weight-0 Queue to name spec.weight, got {message:?}"
            );
        }
    }
    Ok(())
}

/// A Queue with a negative capability: the CRD's pattern allows it; the scheduler uses no limit
/// on cpu (as Volcano reads a capability cpu ≤ 0) and says so on the Queue.
async fn negative_capability_is_reported(ctx: &TestCtx, raw: &Api<DynamicObject>) -> Result<()> {
    let negative_name = format!("{}-negative", ctx.name);
    let negative: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": apis::API_VERSION,
        "kind": "Queue",
        "metadata": {
            "name": negative_name,
            "labels": {ctx.label.0.as_str(): ctx.label.1.as_str()},
        },
        "spec": {"weight": 1, "capability": {"cpu": "-4"}},
    }))
    .context("building the negative-capability queue")?;
    raw.create(&PostParams::default(), &negative)
        .await
        .context("creating the negative-capability queue")?;
    wait_event(
        ctx,
        "Queue",
        &negative_name,
        "InvalidValue",
        "spec.capability.cpu: \"-4\" is negative",
    )
    .await?;
    Ok(())
}

/// A HyperNode member whose name pattern does not compile selects no node, as in Volcano, and
/// an `InvalidValue` event on the HyperNode says so.
async fn bad_hyper_node_pattern_is_reported(ctx: &TestCtx) -> Result<()> {
    let name = format!("{}-pattern", ctx.name);
    let hn: apis::HyperNode = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {ctx.label.0.as_str(): ctx.label.1.as_str()}},
        "spec": {"tier": 1, "members": [
            {"type": "Node", "selector": {"regexMatch": {"pattern": "node[("}}}
        ]}
    }))
    .context("building the HyperNode")?;
    kube::Api::<apis::HyperNode>::all(ctx.env.client.clone())
        .create(&PostParams::default(), &hn)
        .await
        .context("creating the HyperNode")?;
    wait_event(
        ctx,
        "HyperNode",
        &name,
        "InvalidValue",
        "spec.members[0].selector.regexMatch.pattern: \"node[(\" does not compile",
    )
    .await?;
    Ok(())
}

/// An absurd request: stays Pending, and something on the pod says that cpu is what is short:
/// the PodScheduled message ("… Insufficient cpu") when the pod is tried on the nodes, or an
/// event such as overcommit's "resource in cluster is overused: overused cpu" when its job is
/// refused admission first.
async fn absurd_request_names_cpu(ctx: &TestCtx) -> Result<()> {
    ctx.pod("huge").cpu("100000").create(ctx).await?;
    ctx.wait_for(
        "pod huge PodScheduled=False, with its message or an event naming cpu",
        SHORT,
        || async {
            let pod = ctx.get_pod("huge").map_err(|e| format!("{e:#}")).await?;
            let condition = pod_scheduled(&pod);
            let events = ctx
                .events_for("Pod", "huge")
                .map_err(|e| format!("{e:#}"))
                .await?;
            let unschedulable = condition.as_ref().is_some_and(|(s, _, _)| s == "False");
            let says_cpu = condition
                .as_ref()
                .is_some_and(|(_, _, m)| m.contains("cpu"))
                || events.iter().any(|(_, m)| m.contains("cpu"));
            if unschedulable && says_cpu {
                Ok(())
            } else {
                Err(format!("PodScheduled = {condition:?}; events {events:?}"))
            }
        },
    )
    .await
}

/// A PodGroup naming an unknown PriorityClass: scheduled with the default priority, and a
/// Warning says so.
async fn unknown_group_priority_class_is_reported(ctx: &TestCtx, queue: &str) -> Result<()> {
    ctx.create_pod_group(PodGroup {
        metadata: ObjectMeta {
            name: Some("no-class".into()),
            ..Default::default()
        },
        spec: PodGroupSpec {
            min_member: 1,
            queue: queue.to_string(),
            priority_class_name: "does-not-exist".into(),
            ..Default::default()
        },
        status: None,
    })
    .await?;
    ctx.pod("no-class-0")
        .cpu("1")
        .group("no-class")
        .create(ctx)
        .await?;
    wait_event(
        ctx,
        "PodGroup",
        "no-class",
        "PriorityClassNotFound",
        "does-not-exist",
    )
    .await?;
    Ok(())
}

/// A pod naming an unknown PriorityClass: the Priority admission plugin refuses it.
async fn unknown_pod_priority_class_is_refused(ctx: &TestCtx) -> Result<()> {
    match ctx
        .pod("bad-class")
        .cpu("1")
        .priority_class("does-not-exist")
        .create(ctx)
        .await
    {
        Ok(_) => bail!("expected the API server to refuse a pod with an unknown PriorityClass"),
        Err(e) => {
            let message = format!("{e:#}");
            ensure!(
                message.contains("no PriorityClass with name does-not-exist"),
                "expected the refusal to name the missing PriorityClass, got {message:?}"
            );
        }
    }
    Ok(())
}

/// After all that, ordinary work is still scheduled.
async fn ordinary_work_still_scheduled(ctx: &TestCtx, daemon: &Daemon) -> Result<()> {
    ctx.pod("normal").cpu("1").create(ctx).await?;
    let bound = ctx
        .wait_for("pods normal and no-class-0 bound", SHORT, || async {
            let bound = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
            if bound.contains_key("normal") && bound.contains_key("no-class-0") {
                Ok(bound)
            } else {
                Err(format!("bound {bound:?}"))
            }
        })
        .await?;
    for skipped in ["no-queue-0", "huge"] {
        ensure!(
            !bound.contains_key(skipped),
            "expected pod {skipped} unbound, got it on {:?}",
            bound.get(skipped)
        );
    }
    ensure!(
        daemon.ready().await,
        "expected the daemon still ready after the bad input (log {})",
        daemon.log_path().display()
    );
    Ok(())
}
