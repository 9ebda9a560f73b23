//! kubelet's kuberuntime, reduced: pods to CRI sandbox/container configs, status back.
