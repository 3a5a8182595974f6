//! The session's way out to HTTP services ([`engine::framework::HttpCaller`]), for the
//! `extender` plugin (spec/plugins-more.md §7.2): a POST of JSON with one time limit for the
//! whole exchange (connect, headers and body, as Go's `http.Client.Timeout`), any status but 200
//! an error, and the answer's body read up to a cap.
//!
//! Sessions run on blocking threads; each call blocks its thread on the runtime's handle until
//! the answer or the time limit, whichever comes first, so no call outlives its timeout.

use std::sync::OnceLock;
use std::time::Duration;

use engine::framework::{CallError, HttpCaller};
use tokio::runtime::Handle;

/// An [`HttpCaller`] over one pooled HTTP client.
pub struct ReqwestCaller {
    /// Made on the first call: making it reads and parses the system's root certificates,
    /// tens of milliseconds that held up the watches' first lists when it was made at
    /// start-up, and most configurations never call out.
    client: OnceLock<Result<reqwest::Client, String>>,
    runtime: Handle,
}

impl ReqwestCaller {
    /// Uses the current runtime; call it from within one.
    pub fn new() -> Result<ReqwestCaller, String> {
        let runtime = Handle::try_current().map_err(|e| format!("HTTP client: {e}"))?;
        Ok(ReqwestCaller {
            client: OnceLock::new(),
            runtime,
        })
    }

    fn client(&self) -> Result<&reqwest::Client, CallError> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .build()
                    .map_err(|e| format!("HTTP client: {e}"))
            })
            .as_ref()
            .map_err(|message| CallError {
                message: message.clone(),
                unreachable: true,
            })
    }

    async fn exchange(
        &self,
        url: &str,
        body: &[u8],
        read_body: bool,
        max_bytes: usize,
    ) -> Result<Vec<u8>, CallError> {
        let bad = |message: String| CallError {
            message,
            unreachable: false,
        };
        let mut response = self
            .client()?
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| CallError {
                message: format!("POST {url}: {}", crate::errors::chain(&e)),
                unreachable: true,
            })?;
        let status = response.status();
        if status != reqwest::StatusCode::OK {
            return Err(bad(format!("POST {url}: status code {}", status.as_u16())));
        }
        let mut answer = Vec::new();
        if !read_body {
            return Ok(answer);
        }
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            bad(format!(
                "POST {url}: reading the answer: {}",
                crate::errors::chain(&e)
            ))
        })? {
            if answer.len() + chunk.len() > max_bytes {
                return Err(bad(format!(
                    "POST {url}: answer larger than {max_bytes} bytes (request body too large)"
                )));
            }
            answer.extend_from_slice(&chunk);
        }
        Ok(answer)
    }
}

impl HttpCaller for ReqwestCaller {
    fn post_json(
        &self,
        url: &str,
        body: &[u8],
        timeout: Duration,
        read_body: bool,
        max_bytes: usize,
    ) -> Result<Vec<u8>, CallError> {
        // Sessions run on blocking threads (`spawn_blocking`), where waiting is allowed.
        let exchange = self.exchange(url, body, read_body, max_bytes);
        self.runtime
            .block_on(async { tokio::time::timeout(timeout, exchange).await })
            .unwrap_or_else(|_| {
                Err(CallError {
                    message: format!("POST {url}: no answer within {timeout:?}"),
                    unreachable: true,
                })
            })
    }
}

#[cfg(test)]
mod tests;
