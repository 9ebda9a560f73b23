//! kubelet's kuberuntime, reduced: pods to CRI sandbox/container configs, status back.
pub mod labels;
pub mod observed;
