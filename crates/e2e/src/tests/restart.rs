//! `restart-safety`: `kill -9` the daemon in the middle of binding hundreds of pods, start it
//! again, and check that the cluster ends as if nothing had happened (spec/kubernetes.md §7;
//! crates/volcano-rs/src/daemon.rs).
//!
//! 50 gangs of 10 one-cpu pods (minMember 10) and 10 standalone pods on 20 nodes of 32 cpu. The
//! daemon runs with a low client-side rate limit, so its binds stretch over seconds; it is
//! killed once some but not all pods are bound, then a second daemon is started. At the end:
//! every pod is bound exactly once (the second daemon bound exactly the pods the first left, with
//! no failed bind, and no pod has two `Scheduled` events), no node holds more than its
//! allocatable, and every gang is complete. The bound set is sampled all along; a gang caught
//! part-way (binds are separate API calls, and the kill cuts a gang's binds short) must be
//! complete at the end.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use futures::future::BoxFuture;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Event as CoreEvent, Node, Pod};
use kube::Api;
use kube::api::ListParams;

use crate::harness::{Daemon, Env, Observed, TestCtx, cpu_millis};

const NAME: &str = "restart-safety";
const NODES: usize = 20;
const NODE_CPU: &str = "32";
const GANGS: usize = 50;
const GANG_SIZE: usize = 10;
const STANDALONE: usize = 10;
const TOTAL: usize = GANGS * GANG_SIZE + STANDALONE;
/// Kill once at least this many pods are bound (and not all are).
const KILL_AFTER: usize = 100;
/// 100 writes/s with a small burst: binding (and the events that follow each bind) takes
/// seconds, long enough to kill the daemon in the middle.
const DAEMON_ARGS: &[&str] = &["--kube-api-qps", "100", "--kube-api-burst", "10"];
/// Interval at which the bound set must stay unchanged after the kill to count as settled.
const SETTLE: Duration = Duration::from_millis(500);

pub fn restart_safety(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

fn gang_name(g: usize) -> String {
    format!("g{g:02}")
}

/// The PodGroup a pod belongs to, from its name (`g07-3` → `g07`); standalone pods have none.
fn gang_of(pod: &str) -> Option<&str> {
    let (gang, _) = pod.split_once('-')?;
    gang.starts_with('g').then_some(gang)
}

/// Gangs with some but fewer than [`GANG_SIZE`] pods bound.
pub(super) fn partial_gangs(bound: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut per_gang: BTreeMap<String, usize> = BTreeMap::new();
    for pod in bound.keys() {
        if let Some(g) = gang_of(pod) {
            *per_gang.entry(g.to_string()).or_default() += 1;
        }
    }
    per_gang.retain(|_, n| *n < GANG_SIZE);
    per_gang
}

/// What the samples of the bound set showed.
#[derive(Default)]
struct Samples {
    count: usize,
    /// Samples that caught at least one gang part-way.
    with_partial: usize,
    /// Every gang ever seen part-way.
    partial_gangs: BTreeSet<String>,
}

impl Samples {
    fn record(&mut self, bound: &BTreeMap<String, String>) {
        self.count += 1;
        let partial = partial_gangs(bound);
        if !partial.is_empty() {
            self.with_partial += 1;
        }
        self.partial_gangs.extend(partial.into_keys());
    }
}

async fn run(env: Env) -> anyhow::Result<()> {
    let started = Instant::now();
    let ctx = TestCtx::new(&env, NAME).await?;
    let nodes = ctx.nodes("n", NODES, NODE_CPU, "256Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;
    create_workload(&ctx, &queue).await?;
    let created = started.elapsed();

    // First daemon: let it bind part of the pods, then SIGKILL it.
    let mut samples = Samples::default();
    let (first, bound_at_kill) = kill_first_daemon_midway(&ctx, &mut samples).await?;
    let killed_at = started.elapsed();
    ensure!(
        bound_at_kill < TOTAL,
        "the kill came too late to test anything: all {TOTAL} pods were already bound"
    );

    // Shared with the polling closures (the test future must be Send: a Mutex, not a RefCell;
    // never held across an await).
    let samples = Mutex::new(samples);
    let after_kill = wait_settled_after_kill(&ctx, &samples).await?;
    let left_partial = partial_gangs(&after_kill);
    ensure!(
        after_kill.len() < TOTAL,
        "every pod was bound before the second daemon started; the kill tested nothing"
    );

    // Second daemon: must finish exactly what the first left.
    let second = ctx.daemon(DAEMON_ARGS).await?;
    let bound = wait_all_bound(&ctx, &samples).await?;
    let samples = samples.into_inner().unwrap_or_else(|p| p.into_inner());
    let finished = started.elapsed();

    check_gangs_complete_on_our_nodes(&bound, &nodes)?;
    let scheduled = check_bound_exactly_once(&ctx, &first, &second, after_kill.len()).await?;
    check_node_capacity(&ctx).await?;
    drop(second);

    println!(
        "{NAME}: {TOTAL} pods on {NODES} nodes; created in {:.1}s; killed at {:.1}s with \
         {bound_at_kill} bound ({} after settling, {} gangs part-way); all bound at {:.1}s; \
         {} samples, {} caught a gang part-way ({} distinct gangs); {} pods without a Scheduled \
         event (published after the bind, lost with the kill)",
        created.as_secs_f64(),
        killed_at.as_secs_f64(),
        after_kill.len(),
        left_partial.len(),
        finished.as_secs_f64(),
        samples.count,
        samples.with_partial,
        samples.partial_gangs.len(),
        TOTAL - scheduled.len(),
    );
    Ok(())
}

/// Starts the first daemon and `kill -9`s it once at least [`KILL_AFTER`] pods are bound,
/// recording each sample of the bound set; the daemon and the number bound when it was killed.
async fn kill_first_daemon_midway(
    ctx: &TestCtx,
    samples: &mut Samples,
) -> anyhow::Result<(Daemon, usize)> {
    let mut first = ctx.daemon(DAEMON_ARGS).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let bound = ctx.bound_pods().await?;
        samples.record(&bound);
        if bound.len() >= KILL_AFTER {
            first.kill9();
            return Ok((first, bound.len()));
        }
        if Instant::now() > deadline {
            bail!(
                "only {} of {TOTAL} pods bound 60s after the first daemon started; end of {}:\n{}",
                bound.len(),
                first.log_path().display(),
                crate::harness::log_tail(first.log_path(), 20)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Requests the API server accepted before the kill may still complete; waits until the bound
/// set stops changing, which is what the second daemon will find.
async fn wait_settled_after_kill(
    ctx: &TestCtx,
    samples: &Mutex<Samples>,
) -> anyhow::Result<BTreeMap<String, String>> {
    let previous = Mutex::new(ctx.bound_pods().await?);
    ctx.wait_for(
        "the bound set to settle after the kill",
        Duration::from_secs(20),
        || async {
            tokio::time::sleep(SETTLE).await;
            let now = match ctx.bound_pods().await {
                Ok(now) => now,
                Err(e) => return Observed::Not(format!("error: {e:#}")),
            };
            locked(samples).record(&now);
            let count = now.len();
            let settled = {
                let mut previous = locked(&previous);
                let settled = now == *previous;
                *previous = now.clone();
                settled
            };
            if settled {
                Observed::Done(now)
            } else {
                Observed::Not(format!("{count} bound and still changing"))
            }
        },
    )
    .await
}

/// Waits for all [`TOTAL`] pods to be bound, recording each sample of the bound set.
async fn wait_all_bound(
    ctx: &TestCtx,
    samples: &Mutex<Samples>,
) -> anyhow::Result<BTreeMap<String, String>> {
    ctx.wait_for(
        &format!("all {TOTAL} pods bound after the restart"),
        Duration::from_secs(90),
        || async {
            match ctx.bound_pods().await {
                Ok(bound) => {
                    locked(samples).record(&bound);
                    if bound.len() == TOTAL {
                        Observed::Done(bound)
                    } else {
                        Observed::Not(format!("{} of {TOTAL} bound", bound.len()))
                    }
                }
                Err(e) => Observed::Not(format!("error: {e:#}")),
            }
        },
    )
    .await
}

/// Every gang complete; every pod on one of our nodes.
fn check_gangs_complete_on_our_nodes(
    bound: &BTreeMap<String, String>,
    nodes: &[String],
) -> anyhow::Result<()> {
    let ours: BTreeSet<&str> = nodes.iter().map(String::as_str).collect();
    for (pod, node) in bound {
        ensure!(
            ours.contains(node.as_str()),
            "pod {pod} is bound to {node}, which is not one of this test's nodes"
        );
    }
    let still_partial = partial_gangs(bound);
    ensure!(
        still_partial.is_empty(),
        "gangs left below minMember {GANG_SIZE} (gang → bound pods): {still_partial:?}"
    );
    Ok(())
}

/// Exactly once: the second daemon bound precisely the pods that were left (`TOTAL` minus
/// `bound_after_kill`), and nothing failed (a second bind of a bound pod is refused by the API
/// server and would count). Returns the number of `Scheduled` events per pod.
async fn check_bound_exactly_once(
    ctx: &TestCtx,
    first: &Daemon,
    second: &Daemon,
    bound_after_kill: usize,
) -> anyhow::Result<BTreeMap<String, usize>> {
    let metrics = second.metrics().await?;
    let bound_by_second =
        Daemon::metric_value(&metrics, "volcano_pods_bound_total", &[]).unwrap_or(0.0);
    let expected = (TOTAL - bound_after_kill) as f64;
    ensure!(
        bound_by_second == expected,
        "the second daemon should have bound exactly the {expected} pods the first left \
         unbound, but volcano_pods_bound_total is {bound_by_second}"
    );
    let bind_errors =
        Daemon::metric_value(&metrics, "volcano_bind_errors_total", &[]).unwrap_or(0.0);
    ensure!(
        bind_errors == 0.0,
        "the second daemon should have had no failed bind, volcano_bind_errors_total is \
         {bind_errors}"
    );
    for daemon in [first, second] {
        let failures = bind_failures(daemon);
        ensure!(
            failures.is_empty(),
            "{} failed binds in {} (none expected: no pod was ever bound twice by us):\n{}",
            failures.len(),
            daemon.log_path().display(),
            failures.join("\n")
        );
    }
    let scheduled = scheduled_events_per_pod(ctx).await?;
    let twice: Vec<_> = scheduled.iter().filter(|(_, n)| **n > 1).collect();
    ensure!(
        twice.is_empty(),
        "pods with more than one Scheduled event (pod → count): {twice:?}"
    );
    Ok(scheduled)
}

/// 50 PodGroups and their 500 pods, plus 10 standalone pods, created a few at a time.
pub(super) async fn create_workload(ctx: &TestCtx, queue: &str) -> anyhow::Result<()> {
    futures::stream::iter(
        (0..GANGS)
            .map(|g| async move { ctx.pod_group(&gang_name(g), GANG_SIZE as i32, queue).await }),
    )
    .buffer_unordered(8)
    .try_collect::<()>()
    .await?;
    let gang_pods = (0..GANGS).flat_map(|g| {
        (0..GANG_SIZE).map(move |i| (format!("{}-{i}", gang_name(g)), Some(gang_name(g))))
    });
    let standalone = (0..STANDALONE).map(|i| (format!("solo-{i}"), None));
    futures::stream::iter(gang_pods.chain(standalone).map(|(name, gang)| async move {
        let pod = ctx.pod(&name).cpu("1").memory("1Gi");
        let pod = match gang {
            Some(g) => pod.group(&g),
            None => pod.queue_annotation(queue),
        };
        pod.create(ctx).await.map(drop)
    }))
    .buffer_unordered(16)
    .try_collect::<()>()
    .await
}

/// A lock that survives a panic elsewhere (the data are plain counters and sets).
fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Lines of a daemon's log that report a failed bind.
pub(super) fn bind_failures(daemon: &Daemon) -> Vec<String> {
    daemon
        .log()
        .lines()
        .filter(|l| l.contains("bind failed"))
        .map(str::to_string)
        .collect()
}

/// Pod name → number of `Scheduled` events about it in the test namespace (pods with none are
/// absent).
pub(super) async fn scheduled_events_per_pod(
    ctx: &TestCtx,
) -> anyhow::Result<BTreeMap<String, usize>> {
    let api: Api<CoreEvent> = Api::namespaced(ctx.env.client.clone(), &ctx.ns);
    let list = api
        .list(&ListParams::default().fields("reason=Scheduled,involvedObject.kind=Pod"))
        .await
        .context("listing Scheduled events")?;
    let mut counts = BTreeMap::new();
    for e in list.items {
        if let Some(pod) = e.involved_object.name {
            *counts.entry(pod).or_default() += 1;
        }
    }
    Ok(counts)
}

/// For every node of the test, the bound pods' cpu and memory requests and their number stay
/// within the node's allocatable.
pub(super) async fn check_node_capacity(ctx: &TestCtx) -> anyhow::Result<()> {
    let nodes = ctx
        .nodes_api()
        .list(&ListParams::default().labels(&ctx.label_selector()))
        .await
        .context("listing nodes")?;
    let pods = ctx
        .pods_api()
        .list(&ListParams::default())
        .await
        .context("listing pods")?;
    let mut used: BTreeMap<String, Usage> = BTreeMap::new();
    for pod in &pods.items {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            continue;
        };
        let requests = pod_requests(pod).with_context(|| format!("pod {:?}", pod.metadata.name))?;
        used.entry(node).or_default().add(&requests);
    }
    for node in &nodes.items {
        let name = node.metadata.name.clone().unwrap_or_default();
        let allocatable = node_allocatable(node).with_context(|| format!("node {name}"))?;
        let u = used.get(&name).cloned().unwrap_or_default();
        ensure!(
            u.cpu_millis <= allocatable.cpu_millis
                && u.memory_bytes <= allocatable.memory_bytes
                && u.pods <= allocatable.pods,
            "node {name} is overcommitted: bound pods request {u:?}, allocatable is \
             {allocatable:?}"
        );
    }
    Ok(())
}

/// Requests (or allocatable) of the resources the check compares.
#[derive(Clone, Debug, Default)]
struct Usage {
    cpu_millis: i64,
    memory_bytes: i64,
    pods: i64,
}

impl Usage {
    fn add(&mut self, other: &Usage) {
        self.cpu_millis += other.cpu_millis;
        self.memory_bytes += other.memory_bytes;
        self.pods += other.pods;
    }
}

fn pod_requests(pod: &Pod) -> anyhow::Result<Usage> {
    let mut usage = Usage {
        pods: 1,
        ..Usage::default()
    };
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    for c in containers {
        let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
        if let Some(q) = requests.and_then(|r| r.get("cpu")) {
            usage.cpu_millis += cpu_millis(&q.0).with_context(|| format!("cpu {:?}", q.0))?;
        }
        if let Some(q) = requests.and_then(|r| r.get("memory")) {
            usage.memory_bytes +=
                memory_bytes(&q.0).with_context(|| format!("memory {:?}", q.0))?;
        }
    }
    Ok(usage)
}

fn node_allocatable(node: &Node) -> anyhow::Result<Usage> {
    let allocatable = node
        .status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .context("no status.allocatable")?;
    let get = |name: &str| {
        allocatable
            .get(name)
            .with_context(|| format!("no allocatable {name}"))
    };
    let pods = get("pods")?;
    Ok(Usage {
        cpu_millis: cpu_millis(&get("cpu")?.0).context("allocatable cpu")?,
        memory_bytes: memory_bytes(&get("memory")?.0).context("allocatable memory")?,
        pods: pods
            .0
            .trim()
            .parse()
            .with_context(|| format!("allocatable pods {:?}", pods.0))?,
    })
}

/// A memory quantity in bytes: a plain number or one with a binary (`Ki`…`Ei`) or decimal
/// (`k`…`E`) suffix; fractional results round up, as Kubernetes does for byte values.
fn memory_bytes(q: &str) -> Option<i64> {
    const SUFFIXES: [(&str, f64); 12] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let q = q.trim();
    let (number, scale) = SUFFIXES
        .iter()
        .find_map(|(s, f)| q.strip_suffix(s).map(|n| (n, *f)))
        .unwrap_or((q, 1.0));
    let value: f64 = number.parse().ok()?;
    let bytes = (value * scale).ceil();
    (bytes.is_finite() && bytes >= 0.0 && bytes < i64::MAX as f64).then_some(bytes as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_quantities() {
        assert_eq!(memory_bytes("1Gi"), Some(1 << 30));
        assert_eq!(memory_bytes("256Gi"), Some(256 << 30));
        assert_eq!(memory_bytes("512Mi"), Some(512 << 20));
        assert_eq!(memory_bytes("1k"), Some(1000));
        assert_eq!(memory_bytes("1.5Ki"), Some(1536));
        assert_eq!(memory_bytes("123"), Some(123));
        assert_eq!(memory_bytes("-1"), None);
        assert_eq!(memory_bytes("lots"), None);
    }

    #[test]
    fn gangs_part_way_are_found() {
        let bound: BTreeMap<String, String> = (0..GANG_SIZE)
            .map(|i| (format!("g00-{i}"), "n".to_string()))
            .chain((0..3).map(|i| (format!("g01-{i}"), "n".to_string())))
            .chain([("solo-0".to_string(), "n".to_string())])
            .collect();
        assert_eq!(
            partial_gangs(&bound),
            BTreeMap::from([("g01".to_string(), 3)])
        );
        assert_eq!(gang_of("g07-3"), Some("g07"));
        assert_eq!(gang_of("solo-1"), None);
    }
}
