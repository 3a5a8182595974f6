//! `preemption` and `reclaim`: the two eviction actions against the real API server (issue 6;
//! spec/framework.md §6.4, §6.5; crates/engine/src/actions/{preempt,reclaim,victims}.rs;
//! docs/fairness.md, "Preemption and reclaim without storms").
//!
//! Each test fills one 4-cpu node with a victim job of 1-cpu pods, then submits the job that
//! should take room from it, and checks what an eviction looks like from outside, as Volcano
//! writes it: a Warning event `Evict` on the pod ("Pod is evicted, because of <action>"), the
//! conditions `Ready=False`/`Evict` and `DisruptionTarget=True`/`PreemptionByScheduler`, then the
//! deletion (bare pods: nothing recreates them); the waiting pods bind once their victims are
//! gone; `/metrics` counts the evictions by action. All pods ask whole cpus, so the number of
//! victims needed is exact, and the tests require exactly that many: an extra victim would be
//! an eviction that achieved nothing.
//!
//! The eviction conditions live only between the status write and the delete, so each test
//! watches the namespace's pods from before the evicting job arrives and checks the recorded
//! history. Watch events come in the API server's order; replaying them also shows that the
//! node never held more than its cpu, i.e. that no pod was bound onto room a victim still held.
//!
//! Both tests depend on queue shares (`proportion`), so they must not run next to tests that
//! hold bound pods in queues of their own: every daemon accounts every queue in the cluster
//! (see `E2E_PARALLEL` in src/main.rs). Run side by side, each shrinks the other's deserved
//! share and neither evicts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use apis::{PodGroup, PodGroupSpec};
use futures::StreamExt as _;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Event as CoreEvent, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};

use crate::harness::{Daemon, Env, TestCtx, cpu_millis};

const PREEMPTION: &str = "preemption";
const RECLAIM: &str = "reclaim";

/// The one node of each test: four 1-cpu victims fill it.
const NODE_CPU: &str = "4";
const NODE_MILLIS: i64 = 4000;
const NODE_MEMORY: &str = "8Gi";
/// Pods of the victim jobs.
const VICTIMS: usize = 4;

/// How long a bind, an eviction or a metric may take to show.
pub(crate) const SHORT: Duration = Duration::from_secs(30);
/// How long the preemption test watches for evictions that should not come.
const PREEMPTION_QUIET: Duration = Duration::from_secs(3);
/// The reclaim test's "no ping-pong" window (issue 6: ten further seconds).
const RECLAIM_QUIET: Duration = Duration::from_secs(10);
/// Sessions the daemon must run within a quiet window, so that "nothing happened" is about
/// scheduling cycles that ran, not only about time (the period is 200 ms).
const QUIET_SESSIONS: f64 = 10.0;

const SESSIONS_METRIC: &str = "volcano_e2e_scheduling_latency_milliseconds_count";
const EVICTED_METRIC: &str = "volcano_pods_evicted_total";
const TRANSACTIONS_METRIC: &str = "volcano_eviction_transactions_total";
const ATTEMPTS_METRIC: &str = "volcano_total_preemption_attempts";
const PROPOSED_METRIC: &str = "volcano_pod_preemption_victims";

/// Volcano's default tiers (priority, gang, conformance / overcommit, drf, predicates,
/// proportion, nodeorder) with the given actions.
fn scheduler_conf(actions: &str) -> String {
    format!(
        r#"actions: "{actions}"
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
"#
    )
}

/// "One node; a low-priority job fills it; then a high-priority job in the same queue
/// arrives": the low job's pods are preempted, exactly as many as the high pod needs.
pub fn preemption(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run_preemption(env))
}

/// "Two queues with equal weight, one node; queue A's job fills the node while B is empty;
/// then B's job arrives": A's pods above its deserved share are reclaimed, B's pods bind, A
/// keeps what it deserves, and nothing else is evicted afterwards.
pub fn reclaim(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run_reclaim(env))
}

async fn run_preemption(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, PREEMPTION).await?;
    let node = single(ctx.nodes("n", 1, NODE_CPU, NODE_MEMORY, 110).await?)?;
    let queue = ctx.queue("q", 1).await?;
    let low = priority_class(&ctx, "low", 10).await?;
    let high = priority_class(&ctx, "high", 1000).await?;
    let conf = ConfFile::write(&ctx, "enqueue, allocate, preempt, backfill")?;
    let daemon = ctx.daemon(&["--scheduler-conf", &conf.arg()]).await?;

    // The victim job fills the node. minMember 1: gang lets it lose up to three pods, so only
    // the eviction rules limit how many go.
    job(&ctx, "low", 1, &queue, &low).await?;
    let low_pods = create_pods(&ctx, "low", VICTIMS, "1", &low).await?;
    wait_running(&ctx, &low_pods, &node).await?;

    let history = PodHistory::start(&ctx).await?;
    // One 2-cpu pod: one 1-cpu victim is not enough, three would be one too many.
    job(&ctx, "high", 1, &queue, &high).await?;
    let high_pods = create_pods(&ctx, "high", 1, "2", &high).await?;
    ctx.wait_for(
        &format!("the high-priority pod bound to {node}"),
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

    let evicted = check_evictions(&ctx, &daemon, &history, "preempt", &low_pods, 2).await?;
    let metrics = daemon.metrics().await?;
    let attempts = Daemon::metric_value(&metrics, ATTEMPTS_METRIC, &[]).unwrap_or(0.0);
    ensure!(
        attempts >= 1.0,
        "expected {ATTEMPTS_METRIC} >= 1 after a preemption, got {attempts}"
    );
    // The gauge holds the victims the plugins proposed on the last node tried; the evicted
    // pods were chosen among them.
    let proposed = Daemon::metric_value(&metrics, PROPOSED_METRIC, &[]).unwrap_or(0.0);
    ensure!(
        proposed >= evicted.len() as f64,
        "expected {PROPOSED_METRIC} to be at least the {} pods evicted, got {proposed}",
        evicted.len()
    );

    let expected_bound = bound_after(&low_pods, &evicted, &high_pods, &node);
    stay_quiet(
        &ctx,
        &daemon,
        &history,
        &evicted,
        &expected_bound,
        PREEMPTION_QUIET,
    )
    .await?;
    check_peak_cpu(&history, &node, NODE_MILLIS)?;
    drop(daemon);
    Ok(())
}

async fn run_reclaim(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, RECLAIM).await?;
    let node = single(ctx.nodes("n", 1, NODE_CPU, NODE_MEMORY, 110).await?)?;
    let queue_a = ctx.queue("a", 1).await?;
    let queue_b = ctx.queue("b", 1).await?;
    let conf = ConfFile::write(&ctx, "enqueue, allocate, reclaim, backfill")?;
    let daemon = ctx.daemon(&["--scheduler-conf", &conf.arg()]).await?;

    // A takes the whole node while B asks for nothing (A deserves all 4 cpus then).
    job(&ctx, "a", 1, &queue_a, "").await?;
    let a_pods = create_pods(&ctx, "a", VICTIMS, "1", "").await?;
    wait_running(&ctx, &a_pods, &node).await?;

    let history = PodHistory::start(&ctx).await?;
    // B: a gang of two and one pod more. With equal weights each queue deserves 2 cpus (A asks
    // 4, B 3), so two of A's pods are above its share and the gang can take their room. The
    // third pod stays pending: B is then at its share, A at its own, and nothing may be
    // reclaimed for it; it keeps asking every cycle of the quiet window.
    job(&ctx, "b", 2, &queue_b, "").await?;
    let b_pods = create_pods(&ctx, "b", 3, "1", "").await?;
    let b_bound = ctx
        .wait_for(
            &format!("two of B's pods {b_pods:?} bound to {node}"),
            SHORT,
            || async {
                let bound = bound_pods(&ctx).await?;
                let on_node: Vec<String> = b_pods
                    .iter()
                    .filter(|p| bound.get(*p) == Some(&node))
                    .cloned()
                    .collect();
                if on_node.len() >= 2 {
                    Ok(on_node)
                } else {
                    Err(format!("bound pods {bound:?}"))
                }
            },
        )
        .await?;

    let evicted = check_evictions(&ctx, &daemon, &history, "reclaim", &a_pods, 2).await?;
    // The daemon's own account agrees: each queue holds its deserved 2 cpus.
    for queue in [&queue_a, &queue_b] {
        wait_queue_cpu(&ctx, queue, 2000).await?;
    }

    let expected_bound = bound_after(&a_pods, &evicted, &b_bound, &node);
    stay_quiet(
        &ctx,
        &daemon,
        &history,
        &evicted,
        &expected_bound,
        RECLAIM_QUIET,
    )
    .await?;
    check_peak_cpu(&history, &node, NODE_MILLIS)?;
    drop(daemon);
    Ok(())
}

/// [`TestCtx::bound_pods`] as a poll observation.
pub(crate) async fn bound_pods(
    ctx: &TestCtx,
) -> std::result::Result<BTreeMap<String, String>, String> {
    ctx.bound_pods().await.map_err(|e| format!("{e:#}"))
}

pub(crate) fn single(names: Vec<String>) -> Result<String> {
    names.into_iter().next().context("no node was created")
}

/// Creates the cluster-scoped PriorityClass `<test>-<name>`, labelled for the test's cleanup.
pub(crate) async fn priority_class(ctx: &TestCtx, name: &str, value: i32) -> Result<String> {
    let full = format!("{}-{name}", ctx.name);
    let class = PriorityClass {
        metadata: ObjectMeta {
            name: Some(full.clone()),
            labels: Some(BTreeMap::from([ctx.label.clone()])),
            ..Default::default()
        },
        value: Some(value),
        ..Default::default()
    };
    Api::<PriorityClass>::all(ctx.env.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .with_context(|| format!("creating PriorityClass {full}"))?;
    Ok(full)
}

/// A PodGroup; `priority_class` may be empty.
pub(crate) async fn job(
    ctx: &TestCtx,
    name: &str,
    min_member: i32,
    queue: &str,
    priority_class: &str,
) -> Result<()> {
    ctx.create_pod_group(PodGroup {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: PodGroupSpec {
            min_member,
            queue: queue.to_string(),
            priority_class_name: priority_class.to_string(),
            ..Default::default()
        },
        status: None,
    })
    .await
}

/// `count` pods `<group>-<i>` of PodGroup `group`, each asking `cpu` and 1Gi; returns the names.
pub(crate) async fn create_pods(
    ctx: &TestCtx,
    group: &str,
    count: usize,
    cpu: &str,
    priority_class: &str,
) -> Result<Vec<String>> {
    let mut names = Vec::with_capacity(count);
    for i in 0..count {
        let name = format!("{group}-{i}");
        let mut pod = ctx.pod(&name).cpu(cpu).memory("1Gi").group(group);
        if !priority_class.is_empty() {
            pod = pod.priority_class(priority_class);
        }
        pod.create(ctx).await?;
        names.push(name);
    }
    Ok(names)
}

/// Waits until every pod of `names` is bound to `node` and Running (only running or bound
/// pods can be victims).
pub(crate) async fn wait_running(ctx: &TestCtx, names: &[String], node: &str) -> Result<()> {
    ctx.wait_for(
        &format!("pods {names:?} Running on {node}"),
        SHORT,
        || async {
            let list = ctx
                .pods_api()
                .list(&ListParams::default())
                .await
                .map_err(|e| format!("listing pods: {e}"))?;
            let not_yet: Vec<String> = names
                .iter()
                .filter_map(|name| {
                    let pod = list
                        .items
                        .iter()
                        .find(|p| p.metadata.name.as_ref() == Some(name));
                    let (at, phase) = pod.map(|p| (node_name(p), phase(p))).unwrap_or_default();
                    (at != node || phase != "Running")
                        .then(|| format!("{name}: node {at:?}, phase {phase:?}"))
                })
                .collect();
            if not_yet.is_empty() {
                Ok(())
            } else {
                Err(not_yet.join("; "))
            }
        },
    )
    .await
}

/// Waits until the daemon has written `status.allocated.cpu` = `millis` on `queue`.
async fn wait_queue_cpu(ctx: &TestCtx, queue: &str, millis: i64) -> Result<()> {
    ctx.wait_for(
        &format!("queue {queue} status.allocated.cpu = {millis}m"),
        SHORT,
        || async {
            let q = ctx
                .queues_api()
                .get(queue)
                .await
                .map_err(|e| format!("reading queue {queue}: {e}"))?;
            let allocated = q.status.map(|s| s.allocated).unwrap_or_default();
            let cpu = allocated.get("cpu").map(|c| c.0.clone());
            if cpu.as_deref().and_then(cpu_millis) == Some(millis) {
                Ok(())
            } else {
                Err(format!("status.allocated {allocated:?}"))
            }
        },
    )
    .await
}

/// What the namespace should look like once the evictions are done: the victims' survivors
/// and the pods that took the room, all on `node`.
pub(crate) fn bound_after(
    victims: &[String],
    evicted: &BTreeSet<String>,
    newcomers: &[String],
    node: &str,
) -> BTreeMap<String, String> {
    victims
        .iter()
        .filter(|p| !evicted.contains(*p))
        .chain(newcomers)
        .map(|p| (p.clone(), node.to_string()))
        .collect()
}

/// Checks the evictions of `action` after the evicting job's pods were bound: exactly `count`
/// pods were deleted, all from `candidates`, each after the `Evict` event and the eviction
/// conditions, and the daemon's metrics say the same. Returns the evicted pods.
pub(crate) async fn check_evictions(
    ctx: &TestCtx,
    daemon: &Daemon,
    history: &PodHistory,
    action: &str,
    candidates: &[String],
    count: usize,
) -> Result<BTreeSet<String>> {
    // The deletions came before the binds; the watch may still be delivering them.
    let evicted = ctx
        .wait_for(
            &format!("{count} pods deleted by {action}"),
            SHORT,
            || async {
                let changes = history.changes().map_err(|e| format!("{e:#}"))?;
                let deleted = deleted_pods(&changes);
                if deleted.len() >= count {
                    Ok(deleted)
                } else {
                    Err(format!("deleted so far: {deleted:?}"))
                }
            },
        )
        .await?;
    ensure!(
        evicted.len() == count,
        "expected exactly {count} pods evicted by {action} (the fewest that make room), \
         got {} deleted: {evicted:?}",
        evicted.len()
    );
    let strangers: Vec<&String> = evicted
        .iter()
        .filter(|p| !candidates.contains(*p))
        .collect();
    ensure!(
        strangers.is_empty(),
        "only pods of {candidates:?} could be victims, but {strangers:?} were deleted"
    );

    let message = format!("Pod is evicted, because of {action}");
    let changes = history.changes()?;
    for pod in &evicted {
        eviction_conditions_seen(&changes, pod, &message)
            .map_err(|seen| anyhow::anyhow!("evicted pod {pod}: {seen}"))?;
    }

    let events = ctx
        .wait_for(
            &format!("an Evict event on each of {evicted:?}"),
            SHORT,
            || async {
                let events = evict_events(ctx).await.map_err(|e| format!("{e:#}"))?;
                if evicted.iter().all(|p| events.contains_key(p)) {
                    Ok(events)
                } else {
                    Err(format!("Evict events (pod → messages) {events:?}"))
                }
            },
        )
        .await?;
    let with_event: BTreeSet<String> = events.keys().cloned().collect();
    ensure!(
        with_event == evicted,
        "expected Evict events exactly on the deleted pods {evicted:?}, got them on \
         {with_event:?}"
    );
    for (pod, messages) in &events {
        ensure!(
            messages.iter().all(|m| *m == message),
            "expected the Evict events of pod {pod} to say {message:?}, got {messages:?}"
        );
    }

    let evicted_metric = ctx
        .wait_for(
            &format!("{EVICTED_METRIC}{{action=\"{action}\"}} >= {count}"),
            SHORT,
            || async {
                let v = metric(daemon, EVICTED_METRIC, &[("action", action)])
                    .await
                    .map_err(|e| format!("{e:#}"))?;
                if v >= count as f64 {
                    Ok(v)
                } else {
                    Err(format!("{v}"))
                }
            },
        )
        .await?;
    ensure!(
        evicted_metric == count as f64,
        "expected {EVICTED_METRIC}{{action=\"{action}\"}} = {count}, got {evicted_metric}"
    );
    // One transaction per committed statement in Volcano, one per pod in volcano-rs today
    // (docs/metrics.md); either way between one and the number of pods.
    let transactions = metric(daemon, TRANSACTIONS_METRIC, &[("action", action)]).await?;
    ensure!(
        (1.0..=count as f64).contains(&transactions),
        "expected {TRANSACTIONS_METRIC}{{action=\"{action}\"}} between 1 and {count}, got \
         {transactions}"
    );
    let other = if action == "preempt" {
        "reclaim"
    } else {
        "preempt"
    };
    let others = metric(daemon, EVICTED_METRIC, &[("action", other)]).await?;
    ensure!(
        others == 0.0,
        "expected no eviction by {other} (not configured), {EVICTED_METRIC} says {others}"
    );
    Ok(evicted)
}

/// For at least `window` and [`QUIET_SESSIONS`] sessions: no further pod is deleted or gets an
/// `Evict` event, the bound pods stay exactly `bound`, and the eviction counter stays put.
pub(crate) async fn stay_quiet(
    ctx: &TestCtx,
    daemon: &Daemon,
    history: &PodHistory,
    evicted: &BTreeSet<String>,
    bound: &BTreeMap<String, String>,
    window: Duration,
) -> Result<()> {
    let start = Instant::now();
    let sessions_before = metric(daemon, SESSIONS_METRIC, &[]).await?;
    let evictions_before = metric(daemon, EVICTED_METRIC, &[]).await?;
    loop {
        let at = start.elapsed().as_secs_f64();
        let deleted = deleted_pods(&history.changes()?);
        ensure!(
            deleted == *evicted,
            "{at:.1}s after the evictions: expected no further deletion, deleted pods are \
             {deleted:?}, the evictions were {evicted:?}"
        );
        let now_bound = ctx.bound_pods().await?;
        ensure!(
            now_bound == *bound,
            "{at:.1}s after the evictions: expected the bound pods to stay {bound:?}, got \
             {now_bound:?}"
        );
        let with_event: BTreeSet<String> = evict_events(ctx).await?.into_keys().collect();
        ensure!(
            with_event == *evicted,
            "{at:.1}s after the evictions: expected Evict events only on {evicted:?}, got them \
             on {with_event:?}"
        );
        let evictions = metric(daemon, EVICTED_METRIC, &[]).await?;
        ensure!(
            evictions == evictions_before,
            "{at:.1}s after the evictions: {EVICTED_METRIC} went from {evictions_before} to \
             {evictions}"
        );
        let sessions = metric(daemon, SESSIONS_METRIC, &[]).await? - sessions_before;
        if start.elapsed() >= window && sessions >= QUIET_SESSIONS {
            return Ok(());
        }
        ensure!(
            start.elapsed() < window + SHORT,
            "the daemon ran only {sessions} sessions in {at:.1}s; the quiet window needs \
             {QUIET_SESSIONS}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The node never held more cpu than it has, at any point of the watched history.
pub(crate) fn check_peak_cpu(history: &PodHistory, node: &str, node_millis: i64) -> Result<()> {
    let changes = history.changes()?;
    let (peak, at) = peak_cpu(&history.initial, &changes, node)?;
    ensure!(
        peak <= node_millis,
        "node {node} ({node_millis}m cpu) held pods asking {peak}m cpu together after watch \
         event {at} (a pod was bound before its victims were gone)"
    );
    Ok(())
}

/// Replays the history and returns the largest cpu (millicores) that pods bound to `node`
/// requested together, with the index of the change after which it was reached (0 = before
/// any change).
fn peak_cpu(initial: &[Pod], changes: &[Change], node: &str) -> Result<(i64, usize)> {
    let mut on_node: BTreeMap<String, i64> = BTreeMap::new();
    for pod in initial {
        track(&mut on_node, pod, false, node)?;
    }
    let mut peak = (on_node.values().sum(), 0);
    for (i, change) in changes.iter().enumerate() {
        track(
            &mut on_node,
            &change.pod,
            change.kind == ChangeKind::Deleted,
            node,
        )?;
        let total: i64 = on_node.values().sum();
        if total > peak.0 {
            peak = (total, i + 1);
        }
    }
    Ok(peak)
}

/// Records a pod's latest version in `on_node` (pod → cpu millicores of the pods bound to
/// `node`): kept while bound there, dropped when deleted or elsewhere.
fn track(on_node: &mut BTreeMap<String, i64>, pod: &Pod, deleted: bool, node: &str) -> Result<()> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    if !deleted && node_name(pod) == node {
        on_node.insert(name, cpu_request(pod)?);
    } else {
        on_node.remove(&name);
    }
    Ok(())
}

/// The pod's cpu request in millicores (all containers).
fn cpu_request(pod: &Pod) -> Result<i64> {
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let mut total = 0;
    for c in containers {
        let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
        if let Some(q) = requests.and_then(|r| r.get("cpu")) {
            total += cpu_millis(&q.0).with_context(|| format!("cpu request {:?}", q.0))?;
        }
    }
    Ok(total)
}

fn node_name(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn phase(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default()
}

/// Pods the history saw deleted.
fn deleted_pods(changes: &[Change]) -> BTreeSet<String> {
    changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Deleted)
        .filter_map(|c| c.pod.metadata.name.clone())
        .collect()
}

/// Some version of `pod` in the history carries both eviction conditions as the executor
/// writes them; otherwise describes the conditions its versions had.
fn eviction_conditions_seen(
    changes: &[Change],
    pod: &str,
    message: &str,
) -> std::result::Result<(), String> {
    let versions: Vec<&Pod> = changes
        .iter()
        .filter(|c| c.pod.metadata.name.as_deref() == Some(pod))
        .map(|c| &c.pod)
        .collect();
    let has = |p: &Pod, type_: &str, status: &str, reason: &str, message: Option<&str>| {
        p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.type_ == type_
                        && c.status == status
                        && c.reason.as_deref() == Some(reason)
                        && message.is_none_or(|m| c.message.as_deref() == Some(m))
                })
            })
    };
    let seen = versions.iter().any(|p| {
        has(p, "Ready", "False", "Evict", Some(message))
            && has(p, "DisruptionTarget", "True", "PreemptionByScheduler", None)
    });
    if seen {
        return Ok(());
    }
    let conditions: Vec<Vec<(String, String, String)>> = versions
        .iter()
        .map(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .map(|cs| {
                    cs.iter()
                        .map(|c| {
                            let reason = c.reason.clone().unwrap_or_default();
                            (c.type_.clone(), c.status.clone(), reason)
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    Err(format!(
        "expected a version with Ready=False (reason Evict, message {message:?}) and \
         DisruptionTarget=True (reason PreemptionByScheduler) before the deletion; the watched \
         versions had the conditions (type, status, reason) {conditions:?}"
    ))
}

/// Pod name → messages of the `Evict` events about it in the test namespace.
async fn evict_events(ctx: &TestCtx) -> Result<BTreeMap<String, Vec<String>>> {
    let api: Api<CoreEvent> = Api::namespaced(ctx.env.client.clone(), &ctx.ns);
    let list = api
        .list(&ListParams::default().fields("reason=Evict,involvedObject.kind=Pod"))
        .await
        .context("listing Evict events")?;
    let mut by_pod: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in list.items {
        if let Some(pod) = e.involved_object.name {
            by_pod
                .entry(pod)
                .or_default()
                .push(e.message.unwrap_or_default());
        }
    }
    Ok(by_pod)
}

/// One sample of the daemon's metrics; a series not exported yet counts as 0.
async fn metric(daemon: &Daemon, name: &str, labels: &[(&str, &str)]) -> Result<f64> {
    let text = daemon.metrics().await?;
    Ok(Daemon::metric_value(&text, name, labels).unwrap_or(0.0))
}

/// A scheduler configuration in a temporary file, removed on drop.
pub(crate) struct ConfFile {
    path: PathBuf,
}

impl ConfFile {
    pub(crate) fn write(ctx: &TestCtx, actions: &str) -> Result<ConfFile> {
        let path = std::env::temp_dir().join(format!(
            "volcano-rs-e2e-{}-{}.conf",
            ctx.name,
            std::process::id()
        ));
        std::fs::write(&path, scheduler_conf(actions))
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(ConfFile { path })
    }

    pub(crate) fn arg(&self) -> String {
        self.path.display().to_string()
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ConfFile {
    fn drop(&mut self) {
        // Best effort: only test input.
        let _ = std::fs::remove_file(self.path());
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One watch event of a pod.
#[derive(Clone, Debug)]
struct Change {
    kind: ChangeKind,
    pod: Pod,
}

/// Every change to the test namespace's pods from [`PodHistory::start`] on, in the API
/// server's order, recorded by a background watch (stopped on drop).
pub(crate) struct PodHistory {
    /// The pods as listed when the watch started.
    initial: Vec<Pod>,
    changes: Arc<Mutex<Vec<Change>>>,
    /// Why the watch stopped, if it did: the history is then incomplete.
    ended: Arc<Mutex<Option<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PodHistory {
    pub(crate) async fn start(ctx: &TestCtx) -> Result<PodHistory> {
        let api = ctx.pods_api();
        let list = api
            .list(&ListParams::default())
            .await
            .context("listing pods")?;
        let version = list
            .metadata
            .resource_version
            .clone()
            .context("the pod list has no resourceVersion")?;
        // Watching from the list's version delivers every change after it, none twice.
        let stream = api
            .watch(&WatchParams::default(), &version)
            .await
            .context("watching pods")?;
        let changes = Arc::new(Mutex::new(Vec::new()));
        let ended = Arc::new(Mutex::new(None));
        let task = tokio::spawn({
            let (changes, ended) = (changes.clone(), ended.clone());
            async move {
                let mut stream = std::pin::pin!(stream);
                let reason = loop {
                    let (kind, pod) = match stream.next().await {
                        None => break "the watch closed".to_string(),
                        Some(Err(e)) => break format!("watch failed: {e}"),
                        Some(Ok(WatchEvent::Error(status))) => {
                            break format!("watch error: {status:?}");
                        }
                        Some(Ok(WatchEvent::Bookmark(_))) => continue,
                        Some(Ok(WatchEvent::Added(pod))) => (ChangeKind::Added, pod),
                        Some(Ok(WatchEvent::Modified(pod))) => (ChangeKind::Modified, pod),
                        Some(Ok(WatchEvent::Deleted(pod))) => (ChangeKind::Deleted, pod),
                    };
                    locked(&changes).push(Change { kind, pod });
                };
                *locked(&ended) = Some(reason);
            }
        });
        Ok(PodHistory {
            initial: list.items,
            changes,
            ended,
            task,
        })
    }

    /// The changes so far; an error when the watch stopped, as later changes would be missed.
    fn changes(&self) -> Result<Vec<Change>> {
        if let Some(reason) = locked(&self.ended).clone() {
            anyhow::bail!("the pod watch of the test stopped: {reason}");
        }
        Ok(locked(&self.changes).clone())
    }
}

impl Drop for PodHistory {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A lock that survives a panic elsewhere (the data are plain lists).
fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: Option<&str>, cpu: &str, conditions: serde_json::Value) -> Pod {
        let mut spec = json!({"containers": [{"name": "main",
            "resources": {"requests": {"cpu": cpu}}}]});
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": spec,
            "status": {"conditions": conditions},
        }))
        .expect("a valid pod")
    }

    fn change(kind: ChangeKind, pod: Pod) -> Change {
        Change { kind, pod }
    }

    const MESSAGE: &str = "Pod is evicted, because of preempt";

    fn evicting_conditions() -> serde_json::Value {
        json!([
            {"type": "Ready", "status": "False", "reason": "Evict", "message": MESSAGE},
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
             "message": "e2e-x: preempting to accommodate a higher priority pod"},
        ])
    }

    #[test]
    fn peak_counts_only_pods_bound_to_the_node_and_drops_deleted_ones() {
        let initial = vec![
            pod("v-0", Some("n"), "1", json!([])),
            pod("v-1", Some("n"), "1", json!([])),
            pod("elsewhere", Some("m"), "3", json!([])),
        ];
        // v-1 goes, then a 2-cpu pod is bound: 1 + 2 = 3 at most.
        let good = [
            change(ChangeKind::Added, pod("p", None, "2", json!([]))),
            change(ChangeKind::Deleted, pod("v-1", Some("n"), "1", json!([]))),
            change(ChangeKind::Modified, pod("p", Some("n"), "2", json!([]))),
        ];
        assert_eq!(peak_cpu(&initial, &good, "n").ok(), Some((3000, 3)));
        // Bound before the victim left: 4 cpus on the node for a moment.
        let early = [
            change(ChangeKind::Modified, pod("p", Some("n"), "2", json!([]))),
            change(ChangeKind::Deleted, pod("v-1", Some("n"), "1", json!([]))),
        ];
        assert_eq!(peak_cpu(&initial, &early, "n").ok(), Some((4000, 1)));
        assert_eq!(peak_cpu(&initial, &[], "n").ok(), Some((2000, 0)));
        let bad = [change(
            ChangeKind::Modified,
            pod("q", Some("n"), "lots", json!([])),
        )];
        assert!(peak_cpu(&initial, &bad, "n").is_err());
    }

    #[test]
    fn eviction_conditions_need_both_in_one_version() {
        let evicted = [
            change(ChangeKind::Modified, pod("v", Some("n"), "1", json!([]))),
            change(
                ChangeKind::Modified,
                pod("v", Some("n"), "1", evicting_conditions()),
            ),
            change(ChangeKind::Deleted, pod("v", Some("n"), "1", json!([]))),
        ];
        assert!(eviction_conditions_seen(&evicted, "v", MESSAGE).is_ok());
        // The message names the action.
        assert!(
            eviction_conditions_seen(&evicted, "v", "Pod is evicted, because of reclaim").is_err()
        );
        // Another pod's history does not count.
        assert!(eviction_conditions_seen(&evicted, "w", MESSAGE).is_err());
        // Ready=False alone is not an eviction as Volcano writes it.
        let half = [change(
            ChangeKind::Deleted,
            pod(
                "v",
                Some("n"),
                "1",
                json!([{"type": "Ready", "status": "False", "reason": "Evict", "message": MESSAGE}]),
            ),
        )];
        let err = eviction_conditions_seen(&half, "v", MESSAGE).err();
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("(\"Ready\", \"False\", \"Evict\")")),
            "{err:?}"
        );
    }

    #[test]
    fn deleted_pods_and_expected_bound_set() {
        let changes = [
            change(ChangeKind::Added, pod("p", None, "1", json!([]))),
            change(ChangeKind::Deleted, pod("v-2", Some("n"), "1", json!([]))),
            change(ChangeKind::Deleted, pod("v-0", Some("n"), "1", json!([]))),
        ];
        let deleted = deleted_pods(&changes);
        assert_eq!(
            deleted,
            BTreeSet::from(["v-0".to_string(), "v-2".to_string()])
        );
        let victims: Vec<String> = (0..4).map(|i| format!("v-{i}")).collect();
        let bound = bound_after(&victims, &deleted, &["p".to_string()], "n");
        assert_eq!(
            bound,
            BTreeMap::from([
                ("p".to_string(), "n".to_string()),
                ("v-1".to_string(), "n".to_string()),
                ("v-3".to_string(), "n".to_string()),
            ])
        );
    }

    #[test]
    fn conf_names_the_actions_and_the_default_tiers() {
        let conf = scheduler_conf("enqueue, allocate, reclaim, backfill");
        assert!(conf.starts_with("actions: \"enqueue, allocate, reclaim, backfill\"\n"));
        for plugin in [
            "priority",
            "gang",
            "conformance",
            "overcommit",
            "drf",
            "predicates",
            "proportion",
            "nodeorder",
        ] {
            assert!(
                conf.contains(&format!("  - name: {plugin}\n")),
                "{plugin} missing"
            );
        }
    }
}
