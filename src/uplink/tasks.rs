//! Starts the uplink's tasks: kept apart from [`super::agent::Uplink`], which every task
//! holds, so the tasks' modules depend on the shared state and not on each other.

use super::agent::Uplink;
use super::pods_bound::Bound;
use std::rc::Rc;

/// Spawns the uplink's tasks on the agent's executor; they run as long as the agent.
/// `bound` is what the pod tasks learn of the pods bound to the node (shared with the
/// kubelet API: [`super::mirror::ApiMirrors`]).
pub fn start(uplink: &Rc<Uplink>, bound: Rc<Bound>) {
    // Each piece of the uplink adds its task here.
    crate::rt::spawn(super::node::run(uplink.clone())).detach();
    crate::rt::spawn(super::node::watch::run(uplink.clone())).detach();
    crate::rt::spawn(super::events_post::run(uplink.clone())).detach();
    start_pods(uplink, bound);
}

/// The pod side: the pod source (with the configMap and secret watches) and status up
/// (with the mirror pods of the local pods).
fn start_pods(uplink: &Rc<Uplink>, bound: Rc<Bound>) {
    let wake = uplink.ctx.store.borrow_mut().subscribe_status();
    super::pods::start(uplink.clone(), bound.clone()).detach();
    crate::rt::spawn(super::status::run(uplink.clone(), bound, wake)).detach();
}
