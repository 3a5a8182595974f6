//! The job / task / node / queue model (spec/framework.md §5).

pub mod claim;
pub mod fit;
pub mod hypernode;
pub mod ids;
pub mod job;
pub mod job_spec;
pub mod labels;
pub mod node;
pub mod quantity;
pub mod queue;
pub mod resource;
pub mod sched_class;
pub mod status;
pub mod sub_job;
pub mod task;
pub mod topology;

pub use fit::{FitError, FitErrors, FitStatus, StatusCode};
pub use ids::{JobId, NodeId, QueueId, TaskId};
pub use job::JobInfo;
pub use job_spec::JobSpec;
pub use node::{NodeInfo, NodeUsage};
pub use queue::QueueInfo;
pub use resource::{DimensionDefault, Resource, ResourceName};
pub use sched_class::SchedClass;
pub use status::TaskStatus;
pub use sub_job::{SubJob, SubJobId};
pub use task::{TaskInfo, TaskSpec};
pub use topology::{HyperNodeId, SessionTopology, TopologyConstraint};
