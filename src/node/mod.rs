//! The node's side of the pods, as kubelet's container manager: pod cgroups in QoS
//! tiers under one parent limited to node allocatable, node pressure (signals,
//! thresholds, conditions) and eviction. Workers ask it for a pod's cgroup parent; it
//! never drives them.

pub mod admit;
pub mod capacity;
pub mod cgroup_name;
pub mod eviction;
pub mod hierarchy;
pub mod pod_cgroups;
pub mod pod_resources;
pub mod pressure;
pub mod pressure_file;
pub mod signals;

pub use capacity::{check_reservations, reserved_memory, NodeResources};
pub use pod_cgroups::PodCgroups;
pub use pressure::Pressure;
