//! The CRI labels and annotations kubelet (and so tinylet) puts on sandboxes and
//! containers; GC only ever acts on objects that carry [`POD_UID`].

pub const POD_NAME: &str = "io.kubernetes.pod.name";
pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
pub const POD_UID: &str = "io.kubernetes.pod.uid";
pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
