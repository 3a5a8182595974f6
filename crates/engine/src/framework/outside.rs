//! Services outside the cluster that a plugin may call during a session (the `extender`
//! plugin's HTTP extender). The engine only names the call; the I/O layer makes it, with a
//! time limit it enforces, and hands back the answer (spec/plugins-more.md §7.2).

use std::time::Duration;

/// Why a call failed.
#[derive(Clone, Debug, PartialEq)]
pub struct CallError {
    pub message: String,
    /// No answer at all (refused, unreachable, timed out), as opposed to a bad answer.
    pub unreachable: bool,
}

/// POSTs JSON to a URL and returns the answer's body. Implemented by the cluster crate (a real
/// HTTP client) and by tests.
pub trait HttpCaller: Send + Sync {
    /// Sends `body` as `application/json` to `url` and waits at most `timeout` for the whole
    /// exchange. Any status other than 200 is an error naming it. With `read_body` the answer is
    /// read, failing once it exceeds `max_bytes`; without, an empty body is returned.
    fn post_json(
        &self,
        url: &str,
        body: &[u8],
        timeout: Duration,
        read_body: bool,
        max_bytes: usize,
    ) -> Result<Vec<u8>, CallError>;
}
