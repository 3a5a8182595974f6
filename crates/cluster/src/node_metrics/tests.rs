//! Settings, answer parsing, and a collection against a small HTTP server on loopback that
//! answers as Prometheus's query API does.

use std::collections::BTreeMap;

use axum::extract::Query;
use axum::routing::get;

use super::*;

fn settings(pairs: &[(&str, &str)]) -> Settings {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Settings::from_conf(&map)
}

#[test]
fn settings_follow_volcano_defaults() {
    let s = settings(&[]);
    assert_eq!(s.source, Source::None);
    assert_eq!(s.interval, DEFAULT_INTERVAL);
    let s = settings(&[
        ("type", "prometheus"),
        ("address", "http://127.0.0.1:9090"),
        ("interval", "5s"),
        ("tls.insecureSkipVerify", "true"),
    ]);
    assert_eq!(
        s.source,
        Source::Prometheus {
            address: "http://127.0.0.1:9090".into()
        }
    );
    assert_eq!(s.interval, Duration::from_secs(5));
    assert!(s.insecure_skip_verify);
    for bad in ["-5s", "0", "soon"] {
        assert_eq!(
            settings(&[("interval", bad)]).interval,
            DEFAULT_INTERVAL,
            "{bad}"
        );
    }
    for (pairs, says) in [
        (&[("type", "prometheus")][..], "needs an address"),
        (
            &[("type", "elasticsearch"), ("address", "x")][..],
            "not supported",
        ),
        (&[("type", "graphite")][..], "unknown metrics source"),
    ] {
        match settings(pairs).source {
            Source::Unusable(why) => assert!(why.contains(says), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn queries_are_volcanos() {
    assert_eq!(
        cpu_query("n1"),
        "avg_over_time(clamp_min(100 - (avg by (instance) (rate(node_cpu_seconds_total{mode=\"idle\",instance=\"n1\"}[5m])) * 100), 0)[10m:30s])"
    );
    assert_eq!(
        memory_query("n1"),
        "100*avg_over_time(((1-node_memory_MemAvailable_bytes{instance=\"n1\"}/node_memory_MemTotal_bytes{instance=\"n1\"}))[10m:30s])"
    );
}

#[test]
fn answers_are_read_as_volcano_reads_them() {
    let vector = br#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"instance":"n1"},"value":[1700000000.1,"42.5"]},
        {"metric":{"instance":"n2"},"value":[1700000000.1,"7"]}]}}"#;
    assert_eq!(first_sample(vector), Ok(Some(42.5)));
    let empty = br#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
    assert_eq!(first_sample(empty), Ok(None));
    let scalar = br#"{"status":"success","data":{"resultType":"scalar","result":[1,"3"]}}"#;
    assert_eq!(first_sample(scalar), Ok(None));
    let nan = br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}"#;
    assert_eq!(first_sample(nan), Ok(Some(0.0)));
    let failed = br#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
    assert_eq!(first_sample(failed), Err("parse error".into()));
    assert!(first_sample(b"<html>").is_err());
}

/// A query API answering from a table: node → (cpu, memory); other nodes get an empty vector.
async fn serve(table: &'static [(&'static str, f64, f64)]) -> String {
    let app = axum::Router::new().route(
        "/api/v1/query",
        get(
            move |Query(q): Query<BTreeMap<String, String>>| async move {
                let query = q.get("query").cloned().unwrap_or_default();
                let hit = table
                    .iter()
                    .find(|(node, ..)| query.contains(&format!("instance=\"{node}\"")));
                let result = match hit {
                    Some((_, cpu, mem)) => {
                        let v = if query.contains("node_cpu_seconds_total") {
                            cpu
                        } else {
                            mem
                        };
                        serde_json::json!([{"metric": {}, "value": [1.0, v.to_string()]}])
                    }
                    None => serde_json::json!([]),
                };
                axum::Json(serde_json::json!({
                    "status": "success",
                    "data": {"resultType": "vector", "result": result}
                }))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_collection_reports_each_answered_node() {
    let address = serve(&[("n1", 85.0, 10.0), ("n2", 40.0, 60.0)]).await;
    let client = reqwest::Client::new();
    let now = Timestamp::from_second(1_700_000_000).unwrap();
    let nodes = vec!["n1".to_string(), "n2".to_string(), "n3".to_string()];
    let mut got = collect_prometheus(&client, &address, nodes, || now)
        .await
        .expect("collected");
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let flat: Vec<(&str, f64, f64)> = got
        .iter()
        .map(|(n, u)| (n.as_str(), u.cpu_percent, u.memory_percent))
        .collect();
    // n3 has no series: an empty answer reads 0, as in Volcano.
    assert_eq!(
        flat,
        [("n1", 85.0, 10.0), ("n2", 40.0, 60.0), ("n3", 0.0, 0.0)]
    );
    assert!(got.iter().all(|(_, u)| u.metrics_time == now));
}

#[tokio::test]
async fn an_unreachable_source_fails_the_run_and_keeps_the_last_samples() {
    // A port nothing listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let client = reqwest::Client::new();
    let run = collect_prometheus(&client, &address, vec!["n1".into()], Timestamp::now).await;
    assert!(run.is_err(), "{run:?}");
}
