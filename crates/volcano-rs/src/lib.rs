//! volcano-rs: a Volcano-compatible Kubernetes batch scheduler.
//!
//! The library holds what the binary's subcommands are made of, so that tests and benches can
//! drive them directly: [`simulate`] runs the engine on a cluster read from YAML; [`daemon`] is
//! the scheduler on a real API server; [`go_flags`] reads Volcano's command line.

pub mod daemon;
pub mod go_flags;
pub mod simulate;
