//! kubelet's kuberuntime, reduced: pods to CRI sandbox/container configs, status back.
pub mod dns;
pub mod hash;
pub mod labels;
pub mod observed;
pub mod sandbox;
