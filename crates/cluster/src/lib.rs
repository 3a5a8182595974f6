//! Kubernetes I/O for volcano-rs (DESIGN.md "Kubernetes notes"; spec/kubernetes.md).
//!
//! * [`watch`]: kube-rs watchers mirror Pods, Nodes, PodGroups, Queues, PriorityClasses, PDBs,
//!   ResourceQuotas, Namespaces, PersistentVolumeClaims, PersistentVolumes, StorageClasses and
//!   CSINodes into the engine's `ClusterState`, event by event.
//! * [`shared`]: the state shared between watchers, the session loop and the executor.
//! * [`executor`]: turns a session's decisions into API calls (binds, evictions, status,
//!   events) with bounded concurrency and a client-side rate limit.
//! * [`leader`]: leader election on a coordination.k8s.io Lease.
//! * [`conf_watch`]: the scheduler configuration file with hot reload.
//! * [`metrics`], [`http`]: Volcano's Prometheus metrics and the metrics/health HTTP servers.
//! * [`scheduler`]: the scheduling loop (one cycle: configuration, session, assume, write),
//!   writing through a [`scheduler::WriteSink`] — the executor here, memory in the simulator.
//! * [`invariants`]: the runtime invariant checker's reporting (once per finding, with grace).

pub mod api_client;
pub mod conf_watch;
pub mod device_config;
pub mod dump;
pub mod errors;
pub mod executor;
pub mod http;
pub mod http_caller;
pub mod invariants;
pub mod leader;
pub mod metrics;
pub mod node_metrics;
pub mod queues;
pub mod ratelimit;
pub mod scheduler;
pub mod shared;
pub mod watch;
