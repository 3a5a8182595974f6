//! The volcano-rs scheduling engine.
//!
//! Pure code only: no async runtime, no Kubernetes client, no clock reads (the caller passes
//! "now"). The daemon and the simulator both drive it the same way:
//!
//! 1. feed Kubernetes objects into a [`state::ClusterState`] (upsert/delete, one at a time);
//! 2. take a cheap [`state::Snapshot`];
//! 3. open a [`framework::Session`] on it with a configuration and the plugin registry, run the
//!    configured actions, close it, and read the [`framework::Decisions`] it produced.

pub mod actions;
pub mod conf;
pub mod framework;
pub mod model;
pub mod state;
