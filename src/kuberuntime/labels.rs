//! The labels and annotations that tie CRI objects to pods. The `io.kubernetes.*` names
//! are kubelet's (so tools like crictl show them as they would for kubelet); the
//! `tinylet.io/*` ones are ours.

/// On sandboxes and containers: the owning pod.
pub const POD_NAME: &str = "io.kubernetes.pod.name";
/// Label: the pod's namespace.
pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
/// Label: the pod's UID.
pub const POD_UID: &str = "io.kubernetes.pod.uid";
/// On containers: the container's name in the pod spec.
pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";

/// Container annotations (kubelet's names).
pub const CONTAINER_HASH: &str = "io.kubernetes.container.hash";
/// Annotation: the container's restart count.
pub const CONTAINER_RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
/// Annotation: the container's terminationMessagePath.
pub const CONTAINER_TERMINATION_MESSAGE_PATH: &str =
    "io.kubernetes.container.terminationMessagePath";
/// Annotation: the container's terminationMessagePolicy.
pub const CONTAINER_TERMINATION_MESSAGE_POLICY: &str =
    "io.kubernetes.container.terminationMessagePolicy";
/// Annotation: the pod's terminationGracePeriodSeconds.
pub const POD_TERMINATION_GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";
/// kubelet's label marking a sandbox as a pod sandbox (vs a container).
pub const KUBERNETES_CONTAINER_TYPE: &str = "io.kubernetes.container.type";

/// Sandbox annotation: hash of the sandbox-level spec; a change recreates the pod.
pub const SANDBOX_HASH: &str = "tinylet.io/sandbox-hash";
/// Container annotation: whether the image actually run is a stale local copy because the
/// registry could not be reached (offline start).
pub const IMAGE_OFFLINE: &str = "tinylet.io/image-offline";
