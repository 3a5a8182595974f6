//! `tdm-zone`: a revocable zone empties when its window closes (issue 14; spec/plugins-more.md
//! §10; crates/plugins/src/tdm.rs, crates/engine/src/actions/shuffle.rs).
//!
//! Two 4-cpu nodes: `rz` labelled `volcano.sh/revocable-zone: rz1`, and `plain`. The zone's
//! window runs from midnight to a minute one to two minutes from now, in the daemon's local
//! time zone (the test runs in the same environment). While it is open, three pods marked
//! `volcano.sh/revocable-zone: "*"` (one PodGroup, default budget: one pod per eviction
//! round) land on `rz`, where tdm scores them 100, and a plain pod lands on `plain` (tdm's
//! predicate keeps it off the zone). Nothing is evicted while the window is open. Once it
//! closes, `shuffle` evicts the three zone pods (an Evict event "because of shuffle", then
//! deletion), at most one per `tdm.evict.period` (1s here), and the plain pod stays.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use apis::{PodGroup, PodGroupSpec};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Event as CoreEvent, Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{Timestamp, tz::TimeZone};
use kube::Api;
use kube::api::ListParams;

use crate::harness::{Env, TestCtx};

const NAME: &str = "tdm-zone";
const ZONE_LABEL: &str = "volcano.sh/revocable-zone";
const ZONE_PODS: usize = 3;

pub fn tdm_zone(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

fn node(name: &str, zone: Option<&str>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: zone.map(|z| BTreeMap::from([(ZONE_LABEL.to_string(), z.to_string())])),
            ..Default::default()
        },
        spec: None,
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([
                ("cpu".to_string(), Quantity("4".into())),
                ("memory".to_string(), Quantity("8Gi".into())),
                ("pods".to_string(), Quantity("110".into())),
            ])),
            ..Default::default()
        }),
    }
}

/// The window `0:00-HH:MM`, ending at the start of the minute that begins at least 30 s from
/// now (local time); `None` within 90 s of midnight, where the window would wrap.
fn window(now: Timestamp) -> Option<(String, Timestamp)> {
    let tz = TimeZone::try_system().unwrap_or(TimeZone::UTC);
    let at = now.to_zoned(tz.clone());
    let end = (at.clone() + k8s_openapi::jiff::SignedDuration::from_secs(90))
        .with()
        .second(0)
        .subsec_nanosecond(0)
        .build()
        .ok()?;
    // Past midnight the window would wrap to the next day. (Just after midnight it is fine:
    // `0:00-0:MM`.)
    if end.date() != at.date() {
        return None;
    }
    // Open through hh:mm:00 inclusive; closed from the next second.
    let closes = end.timestamp() + k8s_openapi::jiff::SignedDuration::from_secs(1);
    Some((format!("0:00-{}:{:02}", end.hour(), end.minute()), closes))
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    // Within 90 s of midnight no same-day window fits: wait for the new day.
    let (window, closes) = loop {
        if let Some(found) = window(Timestamp::now()) {
            break found;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    };
    let rz = ctx.node_with(node("rz", Some("rz1"))).await?;
    let plain = ctx.node_with(node("plain", None)).await?;
    let conf = env.log_dir.join(format!("{NAME}.conf"));
    std::fs::write(
        &conf,
        format!(
            r#"actions: "enqueue, allocate, backfill, shuffle"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: nodeorder
  - name: tdm
    arguments:
      tdm.revocable-zone.rz1: "{window}"
      tdm.evict.period: 1s
"#
        ),
    )
    .context("writing the scheduler configuration")?;
    let conf = conf.display().to_string();
    let daemon = ctx.daemon(&["--scheduler-conf", &conf]).await?;
    let queue = ctx.queue("q", 1).await?;

    ctx.create_pod_group(PodGroup {
        metadata: ObjectMeta {
            name: Some("zone".into()),
            ..Default::default()
        },
        spec: PodGroupSpec {
            min_member: 1,
            queue: queue.clone(),
            ..Default::default()
        },
        status: None,
    })
    .await?;
    let mut zone_pods = Vec::new();
    for i in 0..ZONE_PODS {
        let name = format!("zone-{i}");
        ctx.pod(&name)
            .cpu("1")
            .memory("1Gi")
            .group("zone")
            .annotation(ZONE_LABEL, "*")
            .create(&ctx)
            .await?;
        zone_pods.push(name);
    }
    ctx.pod("plain")
        .cpu("1")
        .memory("1Gi")
        .queue_annotation(&queue)
        .create(&ctx)
        .await?;

    let mut expected = BTreeMap::new();
    for p in &zone_pods {
        expected.insert(p.clone(), rz.clone());
    }
    expected.insert("plain".to_string(), plain.clone());
    ctx.wait_for(
        &format!("zone pods on {rz} and the plain pod on {plain}"),
        Duration::from_secs(30),
        || async {
            let bound = ctx.bound_pods().await.map_err(|e| format!("{e:#}"))?;
            if bound == expected {
                Ok(())
            } else {
                Err(format!("bound pods {bound:?}"))
            }
        },
    )
    .await?;

    // Open: nothing moves until the window closes.
    while Timestamp::now() < closes {
        let bound = ctx.bound_pods().await?;
        ensure!(
            bound == expected,
            "while {window} is open, expected the pods to stay {expected:?}, got {bound:?}"
        );
        ensure!(
            evicted_by_shuffle(&ctx).await?.is_empty(),
            "a pod was evicted while the window {window} was open"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let closed_at = Instant::now();
    ctx.wait_for(
        "the zone's pods evicted once its window closed",
        Duration::from_secs(30),
        || async {
            let bound = ctx.bound_pods().await.map_err(|e| format!("{e:#}"))?;
            let left: Vec<&String> = zone_pods
                .iter()
                .filter(|p| bound.contains_key(*p))
                .collect();
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("still bound: {left:?}"))
            }
        },
    )
    .await?;
    let emptied_in = closed_at.elapsed();
    let with_event = evicted_by_shuffle(&ctx).await?;
    ensure!(
        with_event.len() == ZONE_PODS && zone_pods.iter().all(|p| with_event.contains_key(p)),
        "expected an Evict event because of shuffle on each of {zone_pods:?}, got {with_event:?}"
    );
    let bound = ctx.bound_pods().await?;
    ensure!(
        bound == BTreeMap::from([("plain".to_string(), plain.clone())]),
        "expected only the plain pod to remain, on {plain}, got {bound:?}"
    );
    // One pod per round of the default budget and a 1s period: not all at once.
    ensure!(
        emptied_in >= Duration::from_secs(1),
        "the zone emptied in {emptied_in:?}; the budget allows one pod per 1s round"
    );
    eprintln!("tdm-zone: window {window}; the zone emptied {emptied_in:?} after it closed");
    drop(daemon);
    Ok(())
}

/// Pods with an `Evict` event saying "because of shuffle".
async fn evicted_by_shuffle(ctx: &TestCtx) -> Result<BTreeMap<String, String>> {
    let api: Api<CoreEvent> = Api::namespaced(ctx.env.client.clone(), &ctx.ns);
    let list = api
        .list(&ListParams::default().fields("reason=Evict,involvedObject.kind=Pod"))
        .await
        .context("listing Evict events")?;
    Ok(list
        .items
        .into_iter()
        .filter(|e| e.message.as_deref() == Some("Pod is evicted, because of shuffle"))
        .filter_map(|e| Some((e.involved_object.name?, e.message.unwrap_or_default())))
        .collect())
}
