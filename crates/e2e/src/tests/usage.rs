//! `usage-prometheus`: the `usage` plugin fed by a real Prometheus server (Debian's package,
//! installed by e2e/install-prometheus.sh) scraping a small exporter this test serves. The
//! exporter reports node-exporter series for the test's three KWOK nodes, `instance` = node
//! name: a hot node (90 % CPU), a warm one (50 %) and a cool one (10 %). With `metrics:` set to
//! that Prometheus, the first pod goes to the cool node and no pod ever lands on the hot one
//! (over the 80 % threshold). Then Prometheus is stopped: the daemon counts failed collections,
//! warns, and keeps scheduling.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use futures::TryFutureExt as _;
use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::harness::{Daemon, Env, TestCtx, free_port, http_get};

const NAME: &str = "usage-prometheus";
/// Prometheus needs two scrapes and a 30-second step of the queries' subquery before it
/// answers; give it room.
const PROMETHEUS_READY: Duration = Duration::from_secs(120);
const SHORT: Duration = Duration::from_secs(30);

pub fn usage_prometheus(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

/// The Prometheus binary: `VOLCANO_E2E_PROMETHEUS`, else where install-prometheus.sh puts it.
fn prometheus_bin() -> Result<PathBuf> {
    if let Ok(p) = std::env::var("VOLCANO_E2E_PROMETHEUS") {
        return Ok(PathBuf::from(p));
    }
    let cache = match std::env::var("VOLCANO_E2E_CACHE") {
        Ok(c) => PathBuf::from(c),
        Err(_) => {
            let home = std::env::var("HOME").context("HOME is not set")?;
            PathBuf::from(home).join(".cache/volcano-rs")
        }
    };
    let bin = cache.join("prometheus/current/prometheus");
    ensure!(
        bin.exists(),
        "{} is missing: run e2e/install-prometheus.sh",
        bin.display()
    );
    Ok(bin)
}

/// The timestamp (ms) of the next scrape's samples. The exporter replays history: its first
/// answer is dated 16 minutes ago and each later one a minute after the previous, until it
/// reaches the present, so that within seconds Prometheus holds the 10 minutes Volcano's queries
/// average over, each with its 5-minute `rate` window (a `rate` over seconds of data reads far
/// too low).
fn next_sample_time(last: Option<i64>, now_ms: i64) -> i64 {
    match last {
        None => now_ms - 16 * 60 * 1000,
        Some(l) => (l + 60_000).min(now_ms).max(l + 1),
    }
}

/// Serves node-exporter series for `nodes` (name, CPU %, memory %), each sample with its
/// timestamp: the idle-CPU counter grows at (1 − load) per second of sample time, so `rate`
/// gives the load; memory is a fixed ratio.
async fn serve_exporter(nodes: Vec<(String, f64, f64)>) -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let nodes = Arc::new(nodes);
    let clock: Arc<std::sync::Mutex<(Option<i64>, i64)>> = Arc::default();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (nodes, clock) = (nodes.clone(), clock.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis() as i64)
                    .unwrap_or_default();
                let (t, first) = {
                    let mut c = clock.lock().unwrap_or_else(|p| p.into_inner());
                    let t = next_sample_time(c.0, now_ms);
                    if c.0.is_none() {
                        c.1 = t;
                    }
                    c.0 = Some(t);
                    (t, c.1)
                };
                let elapsed = (t - first) as f64 / 1000.0;
                let mut body = String::from("# TYPE node_cpu_seconds_total counter\n");
                for (node, cpu, _) in nodes.iter() {
                    let idle = 1000.0 + elapsed * (1.0 - cpu / 100.0);
                    body.push_str(&format!(
                        "node_cpu_seconds_total{{cpu=\"0\",mode=\"idle\",instance=\"{node}\"}} {idle} {t}\n"
                    ));
                }
                body.push_str("# TYPE node_memory_MemTotal_bytes gauge\n");
                let total = 16.0 * 1024.0 * 1024.0 * 1024.0;
                for (node, _, _) in nodes.iter() {
                    body.push_str(&format!(
                        "node_memory_MemTotal_bytes{{instance=\"{node}\"}} {total} {t}\n"
                    ));
                }
                body.push_str("# TYPE node_memory_MemAvailable_bytes gauge\n");
                for (node, _, mem) in nodes.iter() {
                    let available = total * (1.0 - mem / 100.0);
                    body.push_str(&format!(
                        "node_memory_MemAvailable_bytes{{instance=\"{node}\"}} {available} {t}\n"
                    ));
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(body.as_bytes()).await;
            });
        }
    });
    Ok(port)
}

/// Percent-encodes a query-string value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A running Prometheus, killed when dropped.
struct Prometheus {
    child: tokio::process::Child,
    port: u16,
}

impl Prometheus {
    async fn start(env: &Env, exporter: u16) -> Result<Prometheus> {
        let dir = env.log_dir.join(format!("{NAME}-prometheus"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
                 scrape_configs:\n\
                 - job_name: nodes\n  honor_labels: true\n\
                 \x20 static_configs: [{{targets: ['127.0.0.1:{exporter}']}}]\n"
            ),
        )?;
        let port = free_port()?;
        let log = std::fs::File::create(env.log_dir.join(format!("{NAME}-prometheus.log")))?;
        let child = tokio::process::Command::new(prometheus_bin()?)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .context("starting prometheus")?;
        Ok(Prometheus { child, port })
    }

    fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The first sample of an instant query, if any.
    async fn query(&self, promql: &str) -> Result<Option<f64>> {
        let addr = format!("127.0.0.1:{}", self.port).parse()?;
        let (status, body) =
            http_get(addr, &format!("/api/v1/query?query={}", encode(promql))).await?;
        ensure!(status == 200, "query answered {status}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body)?;
        Ok(v["data"]["result"][0]["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok()))
    }
}

/// Volcano's CPU query (the daemon's own is unit-tested to be this text).
fn cpu_query(node: &str) -> String {
    format!(
        "avg_over_time(clamp_min(100 - (avg by (instance) (rate(node_cpu_seconds_total{{mode=\"idle\",instance=\"{node}\"}}[5m])) * 100), 0)[10m:30s])"
    )
}

async fn collections(daemon: &Daemon, result: &str) -> Result<f64> {
    let text = daemon.metrics().await?;
    Ok(Daemon::metric_value(
        &text,
        "volcano_node_metrics_collections_total",
        &[("result", result)],
    )
    .unwrap_or(0.0))
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let nodes = ctx.nodes("n", 3, "8", "16Gi", 110).await?;
    let (hot, warm, cool) = (nodes[0].clone(), nodes[1].clone(), nodes[2].clone());
    let exporter = serve_exporter(vec![
        (hot.clone(), 90.0, 30.0),
        (warm, 50.0, 50.0),
        (cool.clone(), 10.0, 20.0),
    ])
    .await?;
    let mut prometheus = Prometheus::start(&env, exporter).await?;
    let started = Instant::now();
    let hot_cpu = ctx
        .wait_for(
            "Prometheus answering the CPU query",
            PROMETHEUS_READY,
            || {
                let q = cpu_query(&hot);
                let p = &prometheus;
                async move {
                    // Early answers average over a partial history; wait for the full one.
                    match p.query(&q).await.map_err(|e| format!("{e:#}"))? {
                        Some(v) if (v - 90.0).abs() < 0.5 => Ok(v),
                        Some(v) => Err(format!("{v} % so far")),
                        None => Err("no sample yet".to_string()),
                    }
                }
            },
        )
        .await?;
    println!(
        "{NAME}: Prometheus answered {hot_cpu:.1} % for the hot node after {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let conf_path = std::env::temp_dir().join(format!("volcano-rs-e2e-{NAME}.conf"));
    std::fs::write(
        &conf_path,
        format!(
            "actions: \"enqueue, allocate, backfill\"\n\
             tiers:\n\
             - plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]\n\
             - plugins: [{{name: drf}}, {{name: predicates}}, {{name: proportion}}, {{name: usage}}]\n\
             metrics:\n  type: prometheus\n  address: {}\n  interval: 1s\n",
            prometheus.address()
        ),
    )?;
    let conf = conf_path.display().to_string();
    let daemon = ctx.daemon(&["--scheduler-conf", &conf]).await?;
    // A collection can succeed before Prometheus has a sample of every node; wait until the
    // last one reported all three, or the first pod may be placed without their loads.
    ctx.wait_for(
        "a node-load collection covering the three nodes",
        SHORT,
        || async {
            let ok = collections(&daemon, "ok")
                .map_err(|e| format!("{e:#}"))
                .await?;
            let text = daemon.metrics().map_err(|e| format!("{e:#}")).await?;
            let nodes =
                Daemon::metric_value(&text, "volcano_node_metrics_nodes", &[]).unwrap_or(0.0);
            if ok >= 1.0 && nodes >= 3.0 {
                Ok(())
            } else {
                Err(format!(
                    "{ok} successful collections, the last with {nodes} nodes"
                ))
            }
        },
    )
    .await?;

    // The least-used node wins.
    ctx.pod("first").cpu("1").memory("1Gi").create(&ctx).await?;
    let bound = ctx
        .wait_for("pod first bound", SHORT, || async {
            let b = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
            b.get("first").cloned().ok_or_else(|| "not yet".to_string())
        })
        .await?;
    ensure!(
        bound == cool,
        "the first pod went to {bound}, not the cool node {cool}"
    );

    // More pods: none lands on the hot node (the measured load does not change, so they all
    // go to the cool one once its shadow estimates age out after the 1 s metrics interval).
    let names: Vec<String> = (0..6).map(|i| format!("more-{i}")).collect();
    for n in &names {
        ctx.pod(n).cpu("1").memory("1Gi").create(&ctx).await?;
    }
    let all = ctx
        .wait_for("six more pods bound", SHORT, || async {
            let b = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
            if names.iter().all(|n| b.contains_key(n)) {
                Ok(b)
            } else {
                Err(format!("bound so far: {b:?}"))
            }
        })
        .await?;
    let on_hot: Vec<_> = all.iter().filter(|(_, n)| **n == hot).collect();
    ensure!(on_hot.is_empty(), "pods on the hot node: {on_hot:?}");

    // Prometheus goes away: collections fail and are counted; scheduling goes on.
    prometheus.child.kill().await?;
    ctx.wait_for("a failed node-load collection", SHORT, || async {
        let err = collections(&daemon, "error")
            .map_err(|e| format!("{e:#}"))
            .await?;
        if err >= 1.0 {
            Ok(())
        } else {
            Err("none yet".to_string())
        }
    })
    .await?;
    ctx.pod("after").cpu("1").memory("1Gi").create(&ctx).await?;
    ctx.wait_for("pod after bound", SHORT, || async {
        let b = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
        b.get("after").cloned().ok_or_else(|| "not yet".to_string())
    })
    .await?;
    if !daemon.ready().await {
        bail!("the daemon is not ready after its metrics source went away");
    }
    let _ = std::fs::remove_file(&conf_path);
    Ok(())
}
