//! The node-load collector (spec/plugins-more.md §4.1): the `metrics:` section of the
//! configuration in force names a source; this task asks it for every node's CPU and memory
//! load, off the session thread, and puts the answers on the state, where the next session's
//! `usage` plugin finds them. A session never waits for it.
//!
//! Settings (flat keys, as Volcano reads them): `type`, `address`, `interval` (Go duration;
//! missing, invalid or not positive: 30 s, the wait starting after each run),
//! `tls.insecureSkipVerify` (`"true"` skips certificate checks). Source types:
//!
//! * `prometheus`: two instant queries per node, Volcano's, with the node name as the
//!   node-exporter `instance` label (10-minute averages of CPU and memory use, in percent).
//!
//! `prometheus_adaptor` and `elasticsearch` are not built: such a `type`, or any other, is a
//! warning (once per configuration) and counted, and no load is collected, so every node's
//! load goes stale and `usage` passes and scores 0 as it does in Volcano with stale data.
//! A run is bounded by 60 s. A run in which no query was answered is discarded, so the last
//! samples age; a node whose two queries were not answered keeps its last sample.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use engine::conf::SchedulerConf;
use engine::model::NodeUsage;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;
use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::shared::Shared;

/// The wait between runs when `interval` gives none.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);
/// A run longer than this is abandoned (Volcano's context timeout).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// Queries in flight at once.
const CONCURRENT_QUERIES: usize = 8;
/// The largest query answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The collector's settings, from the `metrics:` section.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub source: Source,
    pub interval: Duration,
    pub insecure_skip_verify: bool,
}

/// What to ask.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// No `type`: nothing is collected (as in Volcano).
    None,
    Prometheus {
        address: String,
    },
    /// A type this build cannot ask, or a source without an address: the message says which.
    Unusable(String),
}

impl Settings {
    pub fn from_conf(metrics: &BTreeMap<String, String>) -> Settings {
        let interval = metrics
            .get("interval")
            .and_then(|v| engine::conf::parse_go_duration(v))
            .filter(|nanos| *nanos > 0)
            .map(|nanos| Duration::from_nanos(nanos as u64))
            .unwrap_or(DEFAULT_INTERVAL);
        let address = metrics.get("address").map(|a| a.trim().to_string());
        let source = match metrics.get("type").map(String::as_str).unwrap_or("") {
            "" => Source::None,
            "prometheus" => match address {
                Some(address) if !address.is_empty() => Source::Prometheus { address },
                _ => Source::Unusable(
                    "metrics.address: the prometheus source needs an address".into(),
                ),
            },
            t @ ("prometheus_adaptor" | "elasticsearch") => Source::Unusable(format!(
                "metrics.type: {t} is not supported by this build (prometheus is); no node load is collected"
            )),
            other => Source::Unusable(format!(
                "metrics.type: unknown metrics source {:?} (known: prometheus, prometheus_adaptor, elasticsearch); no node load is collected",
                engine::conf::shorten(other)
            )),
        };
        Settings {
            source,
            interval,
            insecure_skip_verify: metrics.get("tls.insecureSkipVerify").map(String::as_str)
                == Some("true"),
        }
    }
}

/// Volcano's CPU query for one node: percent busy, averaged over 10 minutes.
pub fn cpu_query(node: &str) -> String {
    format!(
        "avg_over_time(clamp_min(100 - (avg by (instance) (rate(node_cpu_seconds_total{{mode=\"idle\",instance=\"{node}\"}}[5m])) * 100), 0)[10m:30s])"
    )
}

/// Volcano's memory query for one node: percent used, averaged over 10 minutes.
pub fn memory_query(node: &str) -> String {
    format!(
        "100*avg_over_time(((1-node_memory_MemAvailable_bytes{{instance=\"{node}\"}}/node_memory_MemTotal_bytes{{instance=\"{node}\"}}))[10m:30s])"
    )
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    data: Option<AnswerData>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct AnswerData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: serde_json::Value,
}

/// The first sample's value of an instant-vector answer: `Some(None)` for an empty or
/// non-vector result (Volcano skips those: the load reads 0), `None` when the query failed.
/// A value that does not parse reads 0, as in Volcano.
pub fn first_sample(body: &[u8]) -> Result<Option<f64>, String> {
    let answer: Answer =
        serde_json::from_slice(body).map_err(|e| format!("not a Prometheus answer: {e}"))?;
    if answer.status != "success" {
        return Err(answer.error.unwrap_or_else(|| "query failed".into()));
    }
    let Some(data) = answer.data else {
        return Ok(None);
    };
    if data.result_type != "vector" {
        return Ok(None);
    }
    let value = data
        .result
        .as_array()
        .and_then(|samples| samples.first())
        .and_then(|s| s.get("value"))
        .and_then(|v| v.get(1))
        .and_then(|v| v.as_str());
    Ok(value.map(|v| v.parse::<f64>().unwrap_or(0.0)))
}

/// One instant query; `Err` when it was not answered.
async fn query(client: &reqwest::Client, address: &str, promql: &str) -> Result<f64, String> {
    let url = format!("{}/api/v1/query", address.trim_end_matches('/'));
    let mut response = client
        .get(&url)
        .query(&[("query", promql)])
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(format!("answer larger than {MAX_ANSWER_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(first_sample(&body)?.unwrap_or(0.0))
}

/// One collection over `nodes`: each answered node's load, or `Err` when nothing was answered.
pub async fn collect_prometheus(
    client: &reqwest::Client,
    address: &str,
    nodes: Vec<String>,
    now: impl Fn() -> Timestamp,
) -> Result<Vec<(String, NodeUsage)>, String> {
    let asked = nodes.len();
    let mut last_error = None;
    let mut answered = Vec::new();
    let mut results = futures::stream::iter(nodes)
        .map(|node| async move {
            let cpu = query(client, address, &cpu_query(&node)).await;
            let mem = query(client, address, &memory_query(&node)).await;
            (node, cpu, mem)
        })
        .buffer_unordered(CONCURRENT_QUERIES);
    while let Some((node, cpu, mem)) = results.next().await {
        match (cpu, mem) {
            (Err(e), Err(_)) => last_error = Some(e),
            (cpu, mem) => {
                for e in [&cpu, &mem].into_iter().filter_map(|r| r.as_ref().err()) {
                    tracing::debug!(node = %node, error = %e, "node load query failed; read as 0");
                }
                let usage = NodeUsage {
                    cpu_percent: cpu.unwrap_or(0.0),
                    memory_percent: mem.unwrap_or(0.0),
                    metrics_time: now(),
                };
                answered.push((node, usage));
            }
        }
    }
    match last_error {
        Some(e) if answered.is_empty() && asked > 0 => Err(e),
        _ => Ok(answered),
    }
}

/// Runs until `shutdown` resolves: a collection per interval under the configuration in force.
pub async fn run(
    shared: Arc<Shared>,
    mut conf: watch::Receiver<Arc<SchedulerConf>>,
    metrics: Arc<Metrics>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let mut reported: Option<Result<(), String>> = None;
    loop {
        let settings = Settings::from_conf(&conf.borrow_and_update().metrics);
        let outcome = match &settings.source {
            Source::None => None,
            Source::Unusable(why) => Some(Err(why.clone())),
            Source::Prometheus { address } => Some(collect_once(&shared, address, &settings).await),
        };
        if let Some(outcome) = outcome {
            metrics.node_metrics_collected(outcome.as_ref().map(|n| *n).map_err(|_| ()));
            let state = outcome.map(|_| ());
            // One line per change of state, not per run.
            if reported.as_ref() != Some(&state) {
                match &state {
                    Ok(()) => tracing::info!(source = ?settings.source, "collecting node load"),
                    Err(e) => {
                        tracing::warn!(error = %e, "node load not collected; usage sees stale data")
                    }
                }
                reported = Some(state);
            }
        }
        tokio::select! {
            _ = &mut shutdown => return,
            changed = conf.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(settings.interval), if settings.source != Source::None => {}
        }
    }
}

async fn collect_once(shared: &Shared, address: &str, s: &Settings) -> Result<usize, String> {
    let client = reqwest::Client::builder()
        .danger_accept_invalid_certs(s.insecure_skip_verify)
        .timeout(RUN_TIMEOUT)
        .build()
        .map_err(|e| format!("metrics client: {e}"))?;
    let nodes: Vec<String> = shared
        .lock()
        .nodes_in_order()
        .iter()
        .map(|n| n.name.clone())
        .collect();
    let run = collect_prometheus(&client, address, nodes, Timestamp::now);
    let usage = tokio::time::timeout(RUN_TIMEOUT, run)
        .await
        .map_err(|_| format!("no answer within {RUN_TIMEOUT:?} from {address}"))??;
    let count = usage.len();
    shared.lock().set_node_usage(usage);
    Ok(count)
}

#[cfg(test)]
mod tests;
