//! volcano-rs: a Volcano-compatible Kubernetes batch scheduler.
//!
//! The library holds what the binary's subcommands are made of, so that tests and benches can
//! drive them directly: [`simulate`] runs the engine on a cluster read from YAML.

pub mod simulate;
