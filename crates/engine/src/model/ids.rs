//! Dense indices into the session's tables. A session stores tasks, jobs, nodes and queues in
//! vectors; plugins and actions refer to them by these small copyable ids instead of by name.

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
            pub fn from_index(i: usize) -> Self {
                Self(i as u32)
            }
        }
    };
}

id_type!(
    /// A task (one pod) of the session.
    TaskId
);
id_type!(
    /// A job (one PodGroup) of the session.
    JobId
);
id_type!(
    /// A node of the session.
    NodeId
);
id_type!(
    /// A queue of the session.
    QueueId
);
