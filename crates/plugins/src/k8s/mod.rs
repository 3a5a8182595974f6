//! Kubernetes scheduling semantics the plugins share: node affinity, taints, host ports,
//! label selectors, inter-pod affinity, topology spread and the node resource scores, written
//! against k8s-openapi types to match upstream Kubernetes v1.36.

pub mod labels;
pub mod node_affinity;
pub mod node_columns;
pub mod pod_affinity;
pub mod pod_view;
pub mod ports;
pub mod qos;
pub mod resources;
pub mod taints;
pub mod topology_spread;
pub mod unschedulable;
pub mod volumes;
