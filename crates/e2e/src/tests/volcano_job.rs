//! `volcano-job`: a Volcano Job (`batch.volcano.sh/v1alpha1`) run by Volcano's own
//! controller-manager (built by e2e/build-volcano.sh; its Job and Command CRDs are installed by
//! cluster-up.sh) with volcano-rs as the Job's scheduler, as a Volcano user who swaps only the
//! scheduler runs it. The job controller creates the PodGroup, waits for it to leave Pending
//! (volcano-rs enqueues it), creates the pods; volcano-rs binds the gang; the PodGroup and then
//! the Job become Running; deleting the Job removes its pods and PodGroup.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use futures::TryFutureExt as _;
use futures::future::BoxFuture;
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
    PropagationPolicy,
};
use serde_json::json;

use crate::harness::{Env, TestCtx};

const NAME: &str = "volcano-job";
const WAIT: Duration = Duration::from_secs(90);
/// The label Volcano's job controller puts on a Job's pods.
const JOB_NAME_LABEL: &str = "volcano.sh/job-name";

pub fn volcano_job(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

/// What build-volcano.sh built: `VOLCANO_E2E_VOLCANO_DIR` (run-shards.sh sets it).
fn volcano_dir() -> Result<PathBuf> {
    let dir = std::env::var_os("VOLCANO_E2E_VOLCANO_DIR")
        .map(PathBuf::from)
        .context("VOLCANO_E2E_VOLCANO_DIR is not set: run e2e/build-volcano.sh and export what it prints (e2e/run-shards.sh does)")?;
    ensure!(
        dir.join("vc-controller-manager").is_file(),
        "{} has no vc-controller-manager: run e2e/build-volcano.sh",
        dir.display()
    );
    Ok(dir)
}

/// Volcano's controller-manager with its Job and PodGroup controllers, for pods of this test's
/// scheduler only; killed when dropped. The queue controller stays off: it would manage every
/// test's Queues.
fn start_controllers(env: &Env, scheduler: &str) -> Result<tokio::process::Child> {
    let bin = volcano_dir()?.join("vc-controller-manager");
    let log = std::fs::File::create(env.log_dir.join(format!("{NAME}-controllers.log")))?;
    tokio::process::Command::new(bin)
        .arg(format!("--kubeconfig={}", env.kubeconfig.display()))
        .arg(format!("--scheduler-name={scheduler}"))
        .arg("--controllers=job-controller,pg-controller")
        .arg("--leader-elect=false")
        .arg("--v=2")
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .context("starting Volcano's controller-manager")
}

fn jobs_api(ctx: &TestCtx) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("batch.volcano.sh", "v1alpha1", "Job");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "jobs");
    Api::namespaced_with(ctx.env.client.clone(), &ctx.ns, &resource)
}

fn task(name: &str, replicas: i32) -> serde_json::Value {
    json!({"name": name, "replicas": replicas,
           "template": {"spec": {
               "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
               "containers": [{"name": "main", "image": "registry.invalid/e2e/fake:1",
                               "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}})
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    ctx.nodes("n", 2, "4", "8Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;
    let _controllers = start_controllers(&env, &ctx.scheduler)?;
    let _daemon = ctx.daemon(&[]).await?;

    // No admission webhook runs, so everything it would default is given.
    let job: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "train", "namespace": ctx.ns},
        "spec": {"minAvailable": 3, "schedulerName": ctx.scheduler, "queue": queue,
                 "maxRetry": 3, "tasks": [task("ps", 1), task("worker", 2)]}
    }))?;
    let jobs = jobs_api(&ctx);
    let created = jobs.create(&PostParams::default(), &job).await?;
    let uid = created.metadata.uid.clone().unwrap_or_default();

    // The job controller's PodGroup: `<job>-<uid>`, the gang of three, owned by the Job.
    let pg_name = format!("train-{uid}");
    let pg = ctx
        .wait_for("the controller's PodGroup", WAIT, || async {
            ctx.pod_groups_api()
                .get_opt(&pg_name)
                .map_err(|e| format!("{e:#}"))
                .await?
                .ok_or_else(|| format!("no PodGroup {pg_name}"))
        })
        .await?;
    ensure!(
        pg.spec.min_member == 3 && pg.spec.queue == queue,
        "the PodGroup asks for the gang in the Job's queue: {:?}",
        pg.spec
    );
    let owners = pg.metadata.owner_references.unwrap_or_default();
    ensure!(
        owners.iter().any(|o| o.kind == "Job" && o.name == "train"),
        "the PodGroup is owned by the Job: {owners:?}"
    );

    // volcano-rs enqueues the PodGroup, the controller creates the pods, volcano-rs binds all.
    let want = ["train-ps-0", "train-worker-0", "train-worker-1"];
    ctx.wait_for("the Job's three pods bound", WAIT, || async {
        let bound = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
        if want.iter().all(|p| bound.contains_key(*p)) {
            Ok(())
        } else {
            Err(format!("bound: {bound:?}"))
        }
    })
    .await?;
    ctx.wait_for("the PodGroup Running", WAIT, || async {
        let pg = ctx
            .pod_groups_api()
            .get(&pg_name)
            .map_err(|e| format!("{e:#}"))
            .await?;
        let phase = pg.status.map(|s| s.phase).unwrap_or_default();
        if phase == "Running" {
            Ok(())
        } else {
            Err(format!("phase {phase:?}"))
        }
    })
    .await?;
    ctx.wait_for("the Job Running", WAIT, || async {
        let job = jobs.get("train").map_err(|e| format!("{e:#}")).await?;
        let phase = job.data["status"]["state"]["phase"].as_str().unwrap_or("");
        if phase == "Running" {
            Ok(())
        } else {
            Err(format!("Job status: {}", job.data["status"]))
        }
    })
    .await?;

    // Deleting the Job removes its pods and its PodGroup (their owner is gone).
    let background = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    jobs.delete("train", &background).await?;
    let of_job = ListParams::default().labels(&format!("{JOB_NAME_LABEL}=train"));
    ctx.wait_for("the Job's pods and PodGroup deleted", WAIT, || async {
        let pods = ctx
            .pods_api()
            .list(&of_job)
            .map_err(|e| format!("{e:#}"))
            .await?;
        let pg = ctx
            .pod_groups_api()
            .get_opt(&pg_name)
            .map_err(|e| format!("{e:#}"))
            .await?;
        if pods.items.is_empty() && pg.is_none() {
            Ok(())
        } else {
            Err(format!(
                "{} pods left, PodGroup left: {}",
                pods.items.len(),
                pg.is_some()
            ))
        }
    })
    .await
}
