//! Pods with real owners: a Job's controller creates its pods, volcano-rs binds them as plain
//! pods of its scheduler, and deleting the Job lets the garbage collector remove them
//! (kube-controller-manager's job controller and garbage collector, e2e/README.md).

use std::time::Duration;

use anyhow::{Result, ensure};
use futures::TryFutureExt as _;
use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams, PropagationPolicy};
use serde_json::json;

use crate::harness::{Env, TestCtx};

const WAIT: Duration = Duration::from_secs(60);

pub fn owned_pods(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, "owned-pods").await?;
    ctx.nodes("n", 1, "4", "8Gi", 110).await?;
    let _daemon = ctx.daemon(&[]).await?;
    let jobs: Api<Job> = Api::namespaced(ctx.env.client.clone(), &ctx.ns);
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "work"},
        "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0,
                 "template": {"spec": {
                     "schedulerName": ctx.scheduler, "restartPolicy": "Never",
                     "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "registry.invalid/e2e/fake:1",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}}
    }))?;
    jobs.create(&PostParams::default(), &job).await?;
    // The job controller creates the pods; volcano-rs binds both.
    let bound = ctx
        .wait_for("the Job's two pods bound", WAIT, || async {
            let bound = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
            if bound.keys().filter(|p| p.starts_with("work-")).count() == 2 {
                Ok(bound)
            } else {
                Err(format!("bound: {bound:?}"))
            }
        })
        .await?;
    let pod_name = bound.keys().find(|p| p.starts_with("work-")).cloned();
    let pod = ctx.get_pod(pod_name.as_deref().unwrap_or_default()).await?;
    let owner = pod.metadata.owner_references.unwrap_or_default();
    ensure!(
        owner.iter().any(|o| o.kind == "Job" && o.name == "work"),
        "the pod's owner is the Job: {owner:?}"
    );
    // Deleting the Job in the background leaves its pods to the garbage collector.
    let background = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    jobs.delete("work", &background).await?;
    ctx.wait_for(
        "the Job's pods deleted by the garbage collector",
        WAIT,
        || async {
            let pods = ctx
                .pods_api()
                .list(&ListParams::default().labels("job-name=work"))
                .map_err(|e| format!("{e:#}"))
                .await?;
            if pods.items.is_empty() {
                Ok(())
            } else {
                Err(format!("{} pods left", pods.items.len()))
            }
        },
    )
    .await
}
