//! The CRI runtime handler a pod's sandbox runs under (kubelet takes it from the pod's
//! RuntimeClass). Its own room: the sandbox config and the sandbox hash both read it.

use crate::model::pod::Source;
use crate::model::Pod;

/// The CRI runtime handler of the pod's sandbox: a local pod's `runtimeClassName`
/// names it (a device has no RuntimeClass objects; admission refuses it on a cluster
/// pod); "" is the runtime's default. A handler the runtime lacks fails the sandbox,
/// which the pod's status says; it never runs under the default instead.
pub fn runtime_handler(pod: &Pod) -> &str {
    match pod.source() {
        Source::File => &pod.spec.runtime_class_name,
        Source::Api => "",
    }
}
