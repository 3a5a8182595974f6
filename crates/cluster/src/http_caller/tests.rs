//! The caller against a real HTTP server on loopback: answers, status codes, the body cap and
//! the time limit, each from a blocking thread as sessions call it.

use std::sync::Arc;

use axum::routing::post;

use super::*;

const CAP: usize = 10 << 20;

async fn serve() -> String {
    let app = axum::Router::new()
        .route("/echo", post(|body: String| async move { body }))
        .route("/big", post(|| async { "x".repeat(CAP + 1) }))
        .route("/exact", post(|| async { "x".repeat(CAP) }))
        .route(
            "/slow",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route(
            "/fail",
            post(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "no") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn call(
    caller: &Arc<ReqwestCaller>,
    url: String,
    timeout: Duration,
    read: bool,
) -> Result<Vec<u8>, String> {
    let caller = caller.clone();
    tokio::task::spawn_blocking(move || caller.post_json(&url, b"{\"a\":1}", timeout, read, CAP))
        .await
        .unwrap()
        .map_err(|e| {
            format!(
                "{}{}",
                e.message,
                if e.unreachable { " [unreachable]" } else { "" }
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_json_and_enforces_status_cap_and_time_limit() {
    let base = serve().await;
    let caller = Arc::new(ReqwestCaller::new().unwrap());
    let second = Duration::from_secs(1);
    assert_eq!(
        call(&caller, format!("{base}/echo"), second, true).await,
        Ok(b"{\"a\":1}".to_vec())
    );
    // Without reading, the body is not looked at.
    assert_eq!(
        call(&caller, format!("{base}/big"), second, false).await,
        Ok(Vec::new())
    );
    assert_eq!(
        call(&caller, format!("{base}/exact"), second, true)
            .await
            .map(|b| b.len()),
        Ok(CAP)
    );
    let too_big = call(&caller, format!("{base}/big"), second, true)
        .await
        .unwrap_err();
    assert!(too_big.contains("request body too large"), "{too_big}");
    let failed = call(&caller, format!("{base}/fail"), second, true)
        .await
        .unwrap_err();
    assert!(
        failed.contains("status code 500") && !failed.contains("[unreachable]"),
        "{failed}"
    );
    let started = std::time::Instant::now();
    let slow = call(
        &caller,
        format!("{base}/slow"),
        Duration::from_millis(300),
        true,
    )
    .await
    .unwrap_err();
    assert!(
        slow.contains("no answer within") && slow.contains("[unreachable]"),
        "{slow}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let down = format!("http://{}/x", closed.local_addr().unwrap());
    drop(closed);
    let down = call(&caller, down, second, true).await.unwrap_err();
    assert!(down.contains("[unreachable]"), "{down}");
}
