//! `gang-preemption`: the `gangpreempt` action against the real API server (issue 14;
//! spec/framework.md §6.7; crates/engine/src/actions/gang_eviction/).
//!
//! One 8-cpu node holds two gangs at exactly their minimum, a low-priority and a
//! mid-priority one, four 1-cpu pods each. A high-priority gang of four arrives. Normal
//! preemption cannot help it (gang never lets a victim job drop below its minimum); gang
//! preemption evicts a whole job: the lowest-priority one, all four of its pods, and nothing
//! of the mid gang. The test checks what the evictions look like from outside (Evict events,
//! the eviction conditions, deletion, metrics by action), that the high gang binds onto the
//! freed room without the node ever holding more than 8 cpus, and that nothing else is evicted
//! for ten further seconds.

use anyhow::Result;
use futures::future::BoxFuture;

use super::evict::{
    ConfFile, PodHistory, SHORT, bound_after, bound_pods, check_evictions, check_peak_cpu,
    create_pods, job, priority_class, single, stay_quiet, wait_running,
};
use crate::harness::{Env, TestCtx};

const NAME: &str = "gang-preemption";
const NODE_MILLIS: i64 = 8000;
const GANG: usize = 4;

pub fn gang_preemption(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let node = single(ctx.nodes("n", 1, "8", "16Gi", 110).await?)?;
    let queue = ctx.queue("q", 1).await?;
    let low = priority_class(&ctx, "low", 10).await?;
    let mid = priority_class(&ctx, "mid", 500).await?;
    let high = priority_class(&ctx, "high", 1000).await?;
    let conf = ConfFile::write(&ctx, "enqueue, allocate, gangpreempt, backfill")?;
    let daemon = ctx.daemon(&["--scheduler-conf", &conf.arg()]).await?;

    job(&ctx, "low", GANG as i32, &queue, &low).await?;
    let low_pods = create_pods(&ctx, "low", GANG, "1", &low).await?;
    job(&ctx, "mid", GANG as i32, &queue, &mid).await?;
    let mid_pods = create_pods(&ctx, "mid", GANG, "1", &mid).await?;
    wait_running(&ctx, &low_pods, &node).await?;
    wait_running(&ctx, &mid_pods, &node).await?;

    let history = PodHistory::start(&ctx).await?;
    job(&ctx, "high", GANG as i32, &queue, &high).await?;
    let high_pods = create_pods(&ctx, "high", GANG, "1", &high).await?;
    ctx.wait_for(
        &format!("the high-priority gang bound to {node}"),
        SHORT,
        || async {
            let bound = bound_pods(&ctx).await?;
            if high_pods.iter().all(|p| bound.get(p) == Some(&node)) {
                Ok(())
            } else {
                Err(format!("bound pods {bound:?}"))
            }
        },
    )
    .await?;

    // Exactly the low gang, all of it: only its pods were candidates of the right cost.
    let evicted = check_evictions(&ctx, &daemon, &history, "gangpreempt", &low_pods, GANG).await?;
    anyhow::ensure!(
        evicted.iter().all(|p| low_pods.contains(p)),
        "expected only the low gang {low_pods:?} evicted, got {evicted:?}"
    );
    let mut expected_bound = bound_after(&low_pods, &evicted, &high_pods, &node);
    for p in &mid_pods {
        expected_bound.insert(p.clone(), node.clone());
    }
    stay_quiet(
        &ctx,
        &daemon,
        &history,
        &evicted,
        &expected_bound,
        std::time::Duration::from_secs(10),
    )
    .await?;
    check_peak_cpu(&history, &node, NODE_MILLIS)?;
    drop(daemon);
    Ok(())
}
