//! The e2e tests, one module per area. Every test is a `TestFn` listed in `TESTS`
//! (src/main.rs) under the same name it passes to `TestCtx::new`.

pub mod badinput;
pub mod basic;
pub mod debugstate;
pub mod device_share;
pub mod evict;
pub mod extender;
pub mod faults;
pub mod fencing;
pub mod gang_evict;
pub mod killloop;
pub mod leader;
pub mod network_topology;
pub mod nodegroup;
pub mod numa;
pub mod operator;
pub mod owners;
pub mod quota;
pub mod rbac;
pub mod reload;
pub mod restart;
pub mod tap;
pub mod tdm;
pub mod usage;
pub mod volcano_job;
pub mod volumes;
pub mod writerate;
