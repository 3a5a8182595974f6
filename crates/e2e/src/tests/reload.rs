//! `config-reload`: the scheduler configuration is hot-reloaded from `--scheduler-conf`
//! (spec/framework.md §1.1, §1.9; crates/cluster/src/conf_watch.rs).
//!
//! The file is served the way the kubelet mounts a ConfigMap: `scheduler.conf → ..data/…`,
//! `..data → ..<timestamp>/`, and an update swaps the `..data` symlink atomically. The test
//! shows three things without restarting the daemon:
//!
//! 1. The first configuration (Volcano's default: `nodeorder` with `leastrequested`) spreads two
//!    pods over two empty nodes.
//! 2. After the swap to `binpack` (with `leastrequested`/`balancedresource` weighted 0) new pods
//!    go to the fuller node, where `leastrequested` would have sent them to the emptier one.
//! 3. A malformed file (a flag that is not a boolean) is refused: a log line, the
//!    `volcano_config_reloads_total{result="failure"}` counter, a Warning `ConfigRefused` event
//!    on the daemon's Lease, and the binpack configuration keeps scheduling.
//! 4. A file naming a plugin this build lacks is applied with that plugin skipped, as Volcano
//!    does: a Warning `PluginSkipped` event naming it, `volcano_config_skipped_plugins{plugin}`
//!    at 1, and the rest of the file (binpack) schedules.
//! 5. Files that used to stall the scheduling loop, which read and parsed the file itself, are
//!    refused by the background reader while sessions go on: 200 KB of nested brackets (the
//!    YAML parser needs close to a minute for it; the depth limit refuses it unparsed) and a
//!    FIFO (a reader would wait for a writer forever; it is refused from its metadata). After
//!    each, a new pod binds promptly on the fuller node: binpack is still in force.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use futures::future::BoxFuture;

use crate::harness::{Daemon, Env, TestCtx};

const NAME: &str = "config-reload";

/// Volcano's embedded default: `nodeorder` scores with `leastrequested` (weight 1), so a pod
/// goes to the emptier node.
const SPREAD: &str = r#"actions: "enqueue, allocate, backfill"
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

/// Packing: `binpack` prefers the fuller node; the spreading scores of `nodeorder` are off so
/// that nothing pulls the other way.
const BINPACK: &str = r#"actions: "enqueue, allocate, backfill"
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
    arguments:
      leastrequested.weight: 0
      balancedresource.weight: 0
  - name: binpack
    arguments:
      binpack.weight: 10
"#;

/// A plugin no build knows: skipped, the rest of the file runs.
const UNKNOWN_PLUGIN: &str = "no-such-plugin-e2e";

/// A flag that is not a boolean: the file is refused as a whole.
const MALFORMED_FLAG: &str = "enableNodeOrder: maybe-e2e";

/// How long a reload or a bind may take to show (the daemon polls the file every session).
const SHORT: Duration = Duration::from_secs(20);

pub fn config_reload(env: Env) -> BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(async move { run(env).await })
}

async fn run(env: Env) -> anyhow::Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    // Pods ask cpu:memory in the nodes' proportion (1 cpu : 2Gi), so BalancedAllocation scores
    // both nodes alike and only the strategy under test decides.
    let nodes = ctx.nodes("n", 2, "8", "16Gi", 110).await?;
    let queue = ctx.queue("q", 1).await?;

    let mut conf_dir = ConfigMapDir::create(env.log_dir.join(format!("{NAME}-conf")), SPREAD)?;
    let conf_path = conf_dir.file().display().to_string();
    let daemon = ctx.daemon(&["--scheduler-conf", &conf_path]).await?;

    // 1. Spread: a 2-cpu and a 1-cpu pod on two empty nodes land on different nodes.
    for (pod, cpu, memory) in [("big", "2", "4Gi"), ("small", "1", "2Gi")] {
        ctx.pod(pod)
            .cpu(cpu)
            .memory(memory)
            .queue_annotation(&queue)
            .create(&ctx)
            .await?;
    }
    let bound = wait_bound(&ctx, &["big", "small"]).await?;
    let (full, empty) = (&bound["big"], &bound["small"]);
    ensure!(
        full != empty,
        "with the spreading configuration the pods big and small should be on different nodes \
         of {nodes:?}, but both are on {full}"
    );

    // 2. Binpack: both new pods go to the fuller node. With the previous configuration the
    //    first of them would have gone to the emptier one (1 cpu used against 2).
    let successes_before = reloads(&daemon, "success").await?;
    conf_dir.update(BINPACK)?;
    wait_reload(&ctx, &daemon, "success", successes_before + 1.0).await?;
    for pod in ["pack-1", "pack-2"] {
        ctx.pod(pod)
            .cpu("1")
            .memory("2Gi")
            .queue_annotation(&queue)
            .create(&ctx)
            .await?;
    }
    let bound = wait_bound(&ctx, &["pack-1", "pack-2"]).await?;
    for pod in ["pack-1", "pack-2"] {
        ensure!(
            bound[pod] == *full,
            "after the reload to binpack, pod {pod} should be on the fuller node {full}, \
             but it is on {}",
            bound[pod]
        );
    }

    // 3. A malformed file is refused and binpack stays in force.
    let failures_before = reloads(&daemon, "failure").await?;
    let invalid = format!("{BINPACK}    {MALFORMED_FLAG}\n");
    conf_dir.update(&invalid)?;
    wait_reload(&ctx, &daemon, "failure", failures_before + 1.0).await?;
    let log = daemon.log();
    ensure!(
        log.lines().any(|l| l.contains("scheduler configuration refused")
            && l.contains("enableNodeOrder")),
        "the daemon log {} should have a line saying the configuration with {MALFORMED_FLAG:?} \
         was refused, naming the field",
        daemon.log_path().display()
    );
    let refusal = wait_lease_event(&ctx, "ConfigRefused").await?;
    ensure!(
        refusal.1.contains("enableNodeOrder"),
        "the ConfigRefused event should name the field enableNodeOrder; its message is {:?}",
        refusal.1
    );

    ctx.pod("after-refusal")
        .cpu("1")
        .memory("2Gi")
        .queue_annotation(&queue)
        .create(&ctx)
        .await?;
    let bound = wait_bound(&ctx, &["after-refusal"]).await?;
    ensure!(
        bound["after-refusal"] == *full,
        "after the refused reload the binpack configuration should still be in force and put \
         pod after-refusal on the fuller node {full}, but it is on {}",
        bound["after-refusal"]
    );
    let successes = reloads(&daemon, "success").await?;
    ensure!(
        successes == successes_before + 1.0,
        "the refused file must not count as a successful reload: \
         volcano_config_reloads_total{{result=\"success\"}} is {successes}, expected {}",
        successes_before + 1.0
    );
    ensure!(
        daemon.ready().await,
        "the daemon should still be running and ready after the refused configuration"
    );

    // 4. An unknown plugin is skipped: the file applies, binpack keeps packing.
    let successes_before = successes;
    conf_dir.update(&format!("{BINPACK}  - name: {UNKNOWN_PLUGIN}\n"))?;
    wait_reload(&ctx, &daemon, "success", successes_before + 1.0).await?;
    let skipped = wait_lease_event(&ctx, "PluginSkipped").await?;
    ensure!(
        skipped.1.contains(UNKNOWN_PLUGIN),
        "the PluginSkipped event should name {UNKNOWN_PLUGIN}; its message is {:?}",
        skipped.1
    );
    let text = daemon.metrics().await?;
    let gauge = Daemon::metric_value(
        &text,
        "volcano_config_skipped_plugins",
        &[("plugin", UNKNOWN_PLUGIN)],
    );
    ensure!(
        gauge == Some(1.0),
        "volcano_config_skipped_plugins{{plugin=\"{UNKNOWN_PLUGIN}\"}} should be 1, found {gauge:?}"
    );
    ctx.pod("after-skip")
        .cpu("1")
        .memory("2Gi")
        .queue_annotation(&queue)
        .create(&ctx)
        .await?;
    let bound = wait_bound(&ctx, &["after-skip"]).await?;
    ensure!(
        bound["after-skip"] == *full,
        "with {UNKNOWN_PLUGIN} skipped the rest of the binpack configuration should run and put \
         pod after-skip on the fuller node {full}, but it is on {}",
        bound["after-skip"]
    );

    // 5. A nested-bracket bomb and a FIFO: refused, and scheduling never pauses.
    stalling_files_are_refused(&ctx, &daemon, &mut conf_dir, &queue, full).await?;

    drop(daemon);
    conf_dir.remove();
    Ok(())
}

/// Step 5: each file is refused with a message naming the limit, and a pod created right after
/// the file is installed binds within [`SHORT`] (the old in-loop read stalled 44 s on the bomb
/// and for ever on the FIFO) on the fuller node.
async fn stalling_files_are_refused(
    ctx: &TestCtx,
    daemon: &Daemon,
    conf_dir: &mut ConfigMapDir,
    queue: &str,
    full: &str,
) -> anyhow::Result<()> {
    let bomb = "[".repeat(200_000);
    let steps: [(&str, Content<'_>, &str); 2] = [
        (
            "after-bomb",
            Content::Text(&bomb),
            "nested deeper than the limit",
        ),
        ("after-fifo", Content::Fifo, "not a regular file (a FIFO)"),
    ];
    for (pod, content, refusal) in steps {
        let failures_before = reloads(daemon, "failure").await?;
        conf_dir.update_with(content)?;
        // Small enough that the fuller node still has room.
        ctx.pod(pod)
            .cpu("500m")
            .memory("1Gi")
            .queue_annotation(queue)
            .create(ctx)
            .await?;
        let bound = wait_bound(ctx, &[pod]).await?;
        ensure!(
            bound[pod] == *full,
            "with the refused file the binpack configuration should still be in force and put \
             pod {pod} on the fuller node {full}, but it is on {}",
            bound[pod]
        );
        wait_reload(ctx, daemon, "failure", failures_before + 1.0).await?;
        let event = wait_lease_event_with(ctx, "ConfigRefused", refusal).await?;
        ensure!(
            event.1.contains(ConfigMapDir::KEY),
            "the ConfigRefused event should name the file; its message is {:?}",
            event.1
        );
    }
    ensure!(
        daemon.ready().await,
        "the daemon should still be running and ready after the refused files"
    );
    Ok(())
}

/// The first event with this reason on the daemon's Lease: `(reason, message)`.
async fn wait_lease_event(ctx: &TestCtx, reason: &str) -> anyhow::Result<(String, String)> {
    wait_lease_event_with(ctx, reason, "").await
}

/// The first event with this reason on the daemon's Lease whose message contains `text`.
async fn wait_lease_event_with(
    ctx: &TestCtx,
    reason: &str,
    text: &str,
) -> anyhow::Result<(String, String)> {
    let lease = ctx.lease_name();
    ctx.wait_for(
        &format!("a Warning event {reason} on Lease {lease} with {text:?} in its message"),
        SHORT,
        || async {
            let events = ctx.events_for("Lease", &lease).await?;
            anyhow::Ok(
                events
                    .into_iter()
                    .find(|(r, m)| r == reason && m.contains(text)),
            )
        },
    )
    .await
}

/// `volcano_config_reloads_total{result}`; a series not exported yet counts as 0.
async fn reloads(daemon: &Daemon, result: &str) -> anyhow::Result<f64> {
    let text = daemon.metrics().await?;
    Ok(
        Daemon::metric_value(&text, "volcano_config_reloads_total", &[("result", result)])
            .unwrap_or(0.0),
    )
}

/// Waits until `volcano_config_reloads_total{result}` reaches `at_least`.
async fn wait_reload(
    ctx: &TestCtx,
    daemon: &Daemon,
    result: &str,
    at_least: f64,
) -> anyhow::Result<()> {
    ctx.wait_for(
        &format!("volcano_config_reloads_total{{result=\"{result}\"}} >= {at_least}"),
        SHORT,
        || async {
            let seen = reloads(daemon, result).await;
            match seen {
                Ok(v) if v >= at_least => Ok(()),
                Ok(v) => Err(format!("{v}")),
                Err(e) => Err(format!("error: {e:#}")),
            }
        },
    )
    .await
}

/// Waits until every pod of `pods` is bound; returns pod → node for the whole namespace.
async fn wait_bound(
    ctx: &TestCtx,
    pods: &[&str],
) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    ctx.wait_for(&format!("pods {pods:?} bound"), SHORT, || async {
        let bound = ctx.bound_pods().await?;
        anyhow::Ok(pods.iter().all(|p| bound.contains_key(*p)).then_some(bound))
    })
    .await
}

/// What a generation of [`ConfigMapDir`] holds under its key.
#[derive(Clone, Copy)]
enum Content<'a> {
    Text(&'a str),
    /// A named pipe with no writer: reading it would wait for ever.
    Fifo,
}

/// A directory laid out like a mounted ConfigMap with the single key `scheduler.conf`:
/// `scheduler.conf → ..data/scheduler.conf`, `..data → ..<generation>/`. Updates write a new
/// generation and swap `..data` with one `rename`, so a reader sees the old or the new file,
/// never a half-written one.
struct ConfigMapDir {
    root: PathBuf,
    generation: u32,
}

impl ConfigMapDir {
    const KEY: &'static str = "scheduler.conf";

    fn create(root: PathBuf, content: &str) -> anyhow::Result<ConfigMapDir> {
        if root.exists() {
            std::fs::remove_dir_all(&root)
                .with_context(|| format!("removing the leftover {}", root.display()))?;
        }
        std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        let mut dir = ConfigMapDir {
            root,
            generation: 0,
        };
        dir.write_generation(Content::Text(content))?;
        let key = dir.root.join(Self::KEY);
        std::os::unix::fs::symlink(Path::new("..data").join(Self::KEY), &key)
            .with_context(|| format!("linking {}", key.display()))?;
        Ok(dir)
    }

    /// The path the daemon is given.
    fn file(&self) -> PathBuf {
        self.root.join(Self::KEY)
    }

    fn generation_name(generation: u32) -> String {
        format!("..2026_01_01_00_00_00.{generation:04}")
    }

    /// Writes generation `n+1` and points `..data` at it atomically; removes generation `n`.
    fn update(&mut self, content: &str) -> anyhow::Result<()> {
        self.update_with(Content::Text(content))
    }

    /// [`update`](Self::update) with any content; text is read back, a FIFO is not (that
    /// would wait for a writer).
    fn update_with(&mut self, content: Content<'_>) -> anyhow::Result<()> {
        let old = self.root.join(Self::generation_name(self.generation));
        self.write_generation(content)?;
        std::fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
        let Content::Text(content) = content else {
            return Ok(());
        };
        let seen = std::fs::read_to_string(self.file())
            .with_context(|| format!("reading back {}", self.file().display()))?;
        if seen != content {
            bail!(
                "{} does not show the new content after the swap",
                self.file().display()
            );
        }
        Ok(())
    }

    fn write_generation(&mut self, content: Content<'_>) -> anyhow::Result<()> {
        self.generation += 1;
        let name = Self::generation_name(self.generation);
        let dir = self.root.join(&name);
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let file = dir.join(Self::KEY);
        match content {
            Content::Text(text) => std::fs::write(&file, text)
                .with_context(|| format!("writing {}", file.display()))?,
            Content::Fifo => {
                let status = std::process::Command::new("mkfifo")
                    .arg(&file)
                    .status()
                    .with_context(|| format!("running mkfifo {}", file.display()))?;
                ensure!(
                    status.success(),
                    "mkfifo {} failed: {status}",
                    file.display()
                );
            }
        }
        let tmp = self.root.join("..data_tmp");
        if tmp.symlink_metadata().is_ok() {
            std::fs::remove_file(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
        }
        std::os::unix::fs::symlink(&name, &tmp)
            .with_context(|| format!("linking {}", tmp.display()))?;
        let data = self.root.join("..data");
        std::fs::rename(&tmp, &data)
            .with_context(|| format!("swapping {} to {name}", data.display()))
    }

    /// Best effort: the directory is only test input.
    fn remove(self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
