//! End-to-end tests of `volcano-rs run` against the local control plane (e2e/README.md).
//!
//! [`harness`] gives each test its namespace, KWOK nodes, Queues, pods and a daemon of its own;
//! [`tests`] holds the tests; the runner (`src/main.rs`, binary `volcano-rs-e2e`) lists them in
//! `TESTS` and runs them in parallel with a timeout each. [`bench`] is the end-to-end
//! benchmark (binary `volcano-rs-bench-e2e`, `make bench-e2e`).

pub mod bench;
pub mod harness;
pub mod tests;

/// A test: gets the runner's [`harness::Env`], returns an error naming what was expected and
/// what was seen.
pub type TestFn = fn(harness::Env) -> futures::future::BoxFuture<'static, anyhow::Result<()>>;
