//! `extender-http`: the `extender` plugin against a real HTTP extender this test serves on
//! loopback (a small HTTP/1.1 server in the test process), one daemon per case:
//!
//! * a working extender: its filter keeps pods off node 0 and its scores send them to node 2;
//! * a slow one (answers after 3 s, timeout 300 ms): with `ignorable: true` pods still bind, and
//!   within a second or two rather than the 9 s three waits would take; with `false` they wait,
//!   and the pod's `PodScheduled` message says the extender did not answer;
//! * one that answers garbage: `ignorable: true` binds, `false` waits and the message says why;
//! * one that is down: `ignorable: true` binds, `false` waits with the URL in the message.

use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use futures::TryFutureExt as _;
use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{Env, TestCtx, pod_scheduled};

const NAME: &str = "extender-http";
const SHORT: Duration = Duration::from_secs(30);

pub fn extender_http(env: Env) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(env))
}

/// Reads one HTTP request (head and content-length body); the path and the body.
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let head_end = loop {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&got[..head_end]).to_string();
    let path = head.split_whitespace().nth(1)?.to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while got.len() < head_end + length {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    Some((path, got[head_end..head_end + length].to_vec()))
}

/// The extender: `/<mode>/<verb>` with mode `ok`, `slow` or `garbage`. `ok/filter` rejects
/// `blocked`; `ok/score` gives `preferred` 100 and the others 0.
async fn serve_extender(blocked: String, preferred: String) -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_connection(stream, blocked.clone(), preferred.clone()));
        }
    });
    Ok(port)
}

/// Answers the requests of one connection, each with `200 OK` and a JSON body.
async fn serve_connection(mut stream: TcpStream, blocked: String, preferred: String) {
    // Keep-alive: answer requests on this connection until it closes.
    while let Some((path, body)) = read_request(&mut stream).await {
        let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let answer = answer_body(&path, &request, &blocked, &preferred).await;
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if stream.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The body answering `request` on `path` (see [`serve_extender`]).
async fn answer_body(
    path: &str,
    request: &serde_json::Value,
    blocked: &str,
    preferred: &str,
) -> String {
    match path {
        "/ok/filter" => filter_answer(request, blocked),
        "/ok/score" => score_answer(request, preferred),
        "/slow/filter" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            serde_json::json!({"status": ""}).to_string()
        }
        _ => "this is not JSON {".to_string(),
    }
}

/// `ok/filter`: the node passes unless it is `blocked`.
fn filter_answer(request: &serde_json::Value, blocked: &str) -> String {
    let node = request["node"]["Name"].as_str().unwrap_or_default();
    if node == blocked {
        serde_json::json!({"status": "node reserved by the extender", "code": 2})
    } else {
        serde_json::json!({"status": "", "code": 0})
    }
    .to_string()
}

/// `ok/score`: 100 for `preferred`, 0 for every other node of the request.
fn score_answer(request: &serde_json::Value, preferred: &str) -> String {
    let scores: serde_json::Map<String, serde_json::Value> = request["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["Name"].as_str())
        .map(|n| {
            let s = if n == preferred { 100.0 } else { 0.0 };
            (n.to_string(), serde_json::json!(s))
        })
        .collect();
    serde_json::json!({"nodeScore": scores, "errorMessage": ""}).to_string()
}

fn conf(url: &str, ignorable: bool, prioritize: bool) -> String {
    let score = if prioritize {
        "      extender.prioritizeVerb: score\n"
    } else {
        ""
    };
    format!(
        "actions: \"enqueue, allocate, backfill\"\n\
         tiers:\n\
         - plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]\n\
         - plugins:\n\
         \x20 - name: predicates\n\
         \x20 - name: proportion\n\
         \x20 - name: extender\n\
         \x20   arguments:\n\
         \x20     extender.urlPrefix: {url}\n\
         \x20     extender.httpTimeout: 300ms\n\
         \x20     extender.predicateVerb: filter\n\
         {score}\
         \x20     extender.ignorable: {ignorable}\n"
    )
}

/// One case: a daemon with the configuration, pods `names`; returns pod → node once all bound.
async fn bound_with(
    ctx: &TestCtx,
    case: &str,
    conf_text: String,
    names: &[&str],
) -> Result<(std::collections::BTreeMap<String, String>, Duration)> {
    let path = std::env::temp_dir().join(format!("volcano-rs-e2e-{NAME}-{case}.conf"));
    std::fs::write(&path, conf_text)?;
    let _daemon = ctx
        .daemon(&["--scheduler-conf", &path.display().to_string()])
        .await?;
    let started = Instant::now();
    for n in names {
        ctx.pod(n).cpu("1").create(ctx).await?;
    }
    let bound = ctx
        .wait_for(&format!("{case}: pods {names:?} bound"), SHORT, || async {
            let b = ctx.bound_pods().map_err(|e| format!("{e:#}")).await?;
            if names.iter().all(|n| b.contains_key(*n)) {
                Ok(b)
            } else {
                Err(format!("bound so far: {b:?}"))
            }
        })
        .await?;
    Ok((bound, started.elapsed()))
}

/// One case whose pod must wait with a `PodScheduled` message containing `needle`.
async fn waits_with(ctx: &TestCtx, case: &str, conf_text: String, needle: &str) -> Result<()> {
    let path = std::env::temp_dir().join(format!("volcano-rs-e2e-{NAME}-{case}.conf"));
    std::fs::write(&path, conf_text)?;
    let _daemon = ctx
        .daemon(&["--scheduler-conf", &path.display().to_string()])
        .await?;
    let pod = format!("wait-{case}");
    ctx.pod(&pod).cpu("1").create(ctx).await?;
    let message = ctx
        .wait_for(
            &format!("{case}: {pod} unschedulable, saying {needle:?}"),
            SHORT,
            || async {
                let p = ctx.get_pod(&pod).map_err(|e| format!("{e:#}")).await?;
                match pod_scheduled(&p) {
                    Some((status, _, message)) if status == "False" && message.contains(needle) => {
                        Ok(message)
                    }
                    other => Err(format!("PodScheduled = {other:?}")),
                }
            },
        )
        .await?;
    println!("{NAME}: {case}: {message}");
    // Still unbound: the pod waits; it is deleted so the next case starts clean.
    ensure!(
        !ctx.bound_pods().await?.contains_key(&pod),
        "{case}: {pod} was bound"
    );
    ctx.pods_api()
        .delete(&pod, &Default::default())
        .await
        .map(|_| ())
        .or_else(|e| match e {
            kube::Error::Api(s) if s.code == 404 => Ok(()),
            e => Err(e),
        })?;
    Ok(())
}

async fn run(env: Env) -> Result<()> {
    let ctx = TestCtx::new(&env, NAME).await?;
    let nodes = ctx.nodes("n", 3, "8", "16Gi", 110).await?;
    let port = serve_extender(nodes[0].clone(), nodes[2].clone()).await?;
    let base = format!("http://127.0.0.1:{port}");

    // A working extender decides: never node 0, node 2 first.
    let (bound, _) = bound_with(
        &ctx,
        "ok",
        conf(&format!("{base}/ok"), false, true),
        &["ok-0", "ok-1", "ok-2"],
    )
    .await?;
    ensure!(
        bound.values().all(|n| *n != nodes[0]),
        "a pod landed on the node the extender filters out: {bound:?}"
    );
    ensure!(
        bound["ok-0"] == nodes[2],
        "ok-0 went to {}, not to the extender's choice {}",
        bound["ok-0"],
        nodes[2]
    );

    // Slow and ignorable: the filter times out and passes; one timeout per session, not per node.
    let (_, took) = bound_with(
        &ctx,
        "slow-ignorable",
        conf(&format!("{base}/slow"), true, false),
        &["slow-0"],
    )
    .await?;
    println!(
        "{NAME}: slow extender, ignorable: bound after {:.1}s",
        took.as_secs_f64()
    );
    ensure!(
        took < Duration::from_secs(3),
        "binding waited {took:?} on a slow extender"
    );

    waits_with(
        &ctx,
        "slow-strict",
        conf(&format!("{base}/slow"), false, false),
        "no answer within",
    )
    .await?;
    waits_with(
        &ctx,
        "garbage",
        conf(&format!("{base}/garbage"), false, false),
        "decoding the answer",
    )
    .await?;

    // Down: nothing listens on the port.
    let closed = TcpListener::bind("127.0.0.1:0").await?;
    let down = format!("http://{}", closed.local_addr()?);
    drop(closed);
    bound_with(
        &ctx,
        "down-ignorable",
        conf(&down, true, false),
        &["down-0"],
    )
    .await?;
    waits_with(&ctx, "down-strict", conf(&down, false, false), &down).await?;
    Ok(())
}
