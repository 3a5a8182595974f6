//! `volcano-rs simulate` calls a real HTTP extender reachable from where it runs: a small
//! HTTP server on loopback (a thread of this test) filters out node n1, so the simulated pod
//! goes to n2, where without the extender it would go to n1 (first in node order).

use std::io::{Read, Write};
use std::net::TcpListener;

use k8s_openapi::jiff::Timestamp;
use volcano_rs::simulate::{self, ConfFile, SimInput, SimOptions};

const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default, uid: uid-p}
spec:
  schedulerName: volcano-rs
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
status: {phase: Pending}
"#;

/// Answers every request on one connection at a time: `filter` rejects n1.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                loop {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 65536];
                    let head_end = loop {
                        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&got[..head_end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while got.len() < head_end + length {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let request: serde_json::Value =
                        serde_json::from_slice(&got[head_end..head_end + length])
                            .unwrap_or_default();
                    let answer = if request["node"]["Name"] == "n1" {
                        r#"{"status":"n1 is reserved","code":2}"#
                    } else {
                        r#"{"status":"","code":0}"#
                    };
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if stream.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

fn run(conf: String) -> String {
    let mut input = SimInput::default();
    input
        .add_reader("cluster.yaml", CLUSTER.as_bytes())
        .expect("input");
    let mut opts = SimOptions::new("2026-01-01T00:00:00Z".parse::<Timestamp>().expect("time"));
    opts.scheduler_conf = Some(ConfFile {
        name: "extender.conf".into(),
        text: conf,
    });
    let report = simulate::run(&input, &opts).expect("simulated");
    report.pods["default/p"].node.clone().expect("bound")
}

#[test]
fn the_simulator_asks_a_reachable_extender() {
    let url = serve();
    let base = "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins: [{name: gang}, {name: predicates}]\n";
    assert_eq!(run(base.to_string()), "n1");
    let with_extender = format!(
        "{base}- plugins:\n  - name: extender\n    arguments:\n      extender.urlPrefix: {url}\n      extender.predicateVerb: filter\n"
    );
    assert_eq!(run(with_extender), "n2");
}
