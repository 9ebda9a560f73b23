//! The node's side of the pods, as kubelet's container manager: pod cgroups in QoS
//! tiers under one parent limited to node allocatable. Workers ask it for a pod's
//! cgroup parent; it never drives them.

pub mod capacity;
pub mod cgroup_name;
pub mod hierarchy;
pub mod pod_cgroups;
pub mod pod_resources;

pub use capacity::{reserved_memory, Resources};
pub use pod_cgroups::PodCgroups;
