//! The session framework: plugins, tier dispatch, statements, and session open/close
//! (spec/framework.md §2–§4).

mod close;
pub mod decisions;
mod dispatch;
mod eviction;
pub mod heap;
pub mod memory;
mod network_topology;
pub mod outside;
pub mod plugin;
mod rows;
pub mod session;
pub mod session_state;
pub mod statement;
pub mod table_build;

pub use decisions::{
    Decisions, Event, EventType, JobFigures, JobMetrics, NumaAssignment, ObjectRef, PreBindWrites,
    QueueMetrics, VgpuCard, VolumeWrite,
};
pub use dispatch::default_task_less;
pub(crate) use dispatch::pod_index as dispatch_pod_index;
pub use heap::PriorityQueue;
pub use memory::PluginMemory;
pub use outside::{CallError, HttpCaller};
pub use plugin::{
    ABSTAIN, EvictionContext, EvictionKind, ExtensionPoints, PERMIT, Plugin, PluginBuilder,
    PluginRegistry, REJECT, ValidateResult, take_defaults_run,
};
pub use session::{Clock, Session};
pub use session_state::{SearchStamps, SearchTouch, SessionOptions, SessionState};
pub use statement::{OpKind, Operation, Statement};
pub use table_build::TableMemo;

#[cfg(test)]
mod tests;
