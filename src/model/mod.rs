//! The Kubernetes v1 objects the agent reads: Pod, ConfigMap, Secret; quantities; validation.
