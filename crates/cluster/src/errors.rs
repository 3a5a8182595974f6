//! API errors as sentences for logs, conditions and `/readyz`: kube's own `Display` of an API
//! error appends the whole `Status` struct in Rust debug form.

use kube::runtime::watcher;

/// An error and its causes, joined by ": ".
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

fn status(s: &kube::core::Status) -> String {
    let message = if s.message.is_empty() {
        "the API server refused the request"
    } else {
        s.message.as_str()
    };
    match (s.reason.is_empty(), s.code) {
        (false, 0) => format!("{message} ({})", s.reason),
        (false, code) => format!("{message} ({}, HTTP {code})", s.reason),
        (true, 0) => message.to_string(),
        (true, code) => format!("{message} (HTTP {code})"),
    }
}

/// A client error in words: the API server's message, reason and code, or what failed on the
/// way there.
pub fn kube(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => status(s),
        kube::Error::HyperError(h) => format!("connection to the API server failed: {}", chain(h)),
        kube::Error::Service(s) => chain(s.as_ref()),
        other => chain(other),
    }
}

/// A watch error in words.
pub fn watch(e: &watcher::Error) -> String {
    match e {
        watcher::Error::InitialListFailed(e) => format!("listing failed: {}", kube(e)),
        watcher::Error::WatchStartFailed(e) => format!("starting the watch failed: {}", kube(e)),
        watcher::Error::WatchError(s) => format!("the API server ended the watch: {}", status(s)),
        watcher::Error::WatchFailed(e) => format!("the watch failed: {}", kube(e)),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_read_as_sentences() {
        let e = kube::Error::Api(
            kube::core::Status::failure("namespaces \"volcano-system\" not found", "NotFound")
                .with_code(404)
                .boxed(),
        );
        assert_eq!(
            kube(&e),
            "namespaces \"volcano-system\" not found (NotFound, HTTP 404)"
        );
        assert!(!kube(&e).contains("Status {"));
        let w = watcher::Error::InitialListFailed(e);
        assert!(watch(&w).starts_with("listing failed: namespaces"));
    }
}
