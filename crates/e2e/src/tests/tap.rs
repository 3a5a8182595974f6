//! `topology-aware-preemption`: `preempt` with `enableTopologyAwarePreemption: true` against
//! the real API server (issue 14; spec/framework.md §6.4.4;
//! crates/engine/src/actions/preempt/topology_aware.rs).
//!
//! One 4-cpu node runs a low-priority job of three 1-cpu pods, one of them labelled
//! `app: db`. A high-priority pod of 1 cpu arrives with a required pod anti-affinity to
//! `app: db` on the node's hostname. Resources are not the obstacle (one cpu is free); only the
//! anti-affinity is, so the one victim worth evicting is the `db` pod, found by the dry run that
//! re-evaluates the predicate after each simulated removal. The test checks the eviction as it
//! looks from outside (Evict event, eviction conditions, deletion, metrics), that the other two
//! low pods are untouched, that the high pod binds to the node, and that nothing else is evicted
//! for ten further seconds.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Affinity, PodAffinityTerm, PodAntiAffinity};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::evict::{
    PodHistory, SHORT, bound_pods, check_evictions, check_peak_cpu, job, priority_class, single,
    stay_quiet, wait_running,
};
use crate::harness::{Env, TestCtx};

const NAME: &str = "topology-aware-preemption";
const NODE_MILLIS: i64 = 4000;

const CONF: &str = r#"actions: "enqueue, allocate, preempt, backfill"
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
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
"#;

pub fn topology_aware_preemption(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

fn anti_affinity_to_db() -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([("app".into(), "db".into())])),
                    ..Default::default()
                }),
                topology_key: "kubernetes.io/hostname".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let node = single(ctx.nodes("n", 1, "4", "8Gi", 110).await?)?;
    let queue = ctx.queue("q", 1).await?;
    let low = priority_class(&ctx, "low", 10).await?;
    let high = priority_class(&ctx, "high", 1000).await?;
    let conf = env.log_dir.join(format!("{NAME}.conf"));
    std::fs::write(&conf, CONF).context("writing the scheduler configuration")?;
    let conf = conf.display().to_string();
    let daemon = ctx.daemon(&["--scheduler-conf", &conf]).await?;

    // minMember 0: no gang budget. With a minimum, gang spends the job's budget on the
    // candidates in the order it is given them, before anyone knows which pod the predicate
    // needs gone (Volcano does the same, in random order); that is not what this test is about.
    job(&ctx, "low", 0, &queue, &low).await?;
    let low_pods: Vec<String> = ["low-db", "low-a", "low-b"].map(String::from).to_vec();
    for name in &low_pods {
        let mut pod = ctx
            .pod(name)
            .cpu("1")
            .memory("1Gi")
            .group("low")
            .priority_class(&low);
        if name == "low-db" {
            pod = pod.label("app", "db");
        }
        pod.create(&ctx).await?;
    }
    wait_running(&ctx, &low_pods, &node).await?;

    let history = PodHistory::start(&ctx).await?;
    job(&ctx, "web", 1, &queue, &high).await?;
    ctx.pod("web-0")
        .cpu("1")
        .memory("1Gi")
        .group("web")
        .priority_class(&high)
        .label("app", "web")
        .affinity(anti_affinity_to_db())
        .create(&ctx)
        .await?;
    ctx.wait_for(&format!("web-0 bound to {node}"), SHORT, || async {
        let bound = bound_pods(&ctx).await?;
        if bound.get("web-0") == Some(&node) {
            Ok(())
        } else {
            Err(format!("bound pods {bound:?}"))
        }
    })
    .await?;

    let evicted = check_evictions(&ctx, &daemon, &history, "preempt", &low_pods, 1).await?;
    ensure!(
        evicted.iter().all(|p| p == "low-db"),
        "expected the anti-affinity target low-db to be the one victim, got {evicted:?}"
    );
    let expected_bound: BTreeMap<String, String> = ["low-a", "low-b", "web-0"]
        .into_iter()
        .map(|p| (p.to_string(), node.clone()))
        .collect();
    stay_quiet(
        &ctx,
        &daemon,
        &history,
        &evicted,
        &expected_bound,
        Duration::from_secs(10),
    )
    .await?;
    check_peak_cpu(&history, &node, NODE_MILLIS)?;
    drop(daemon);
    Ok(())
}
