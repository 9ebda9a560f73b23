//! The Node: registration, node status and the node Lease, as kubelet v1.20 does them,
//! as two tasks on the agent's executor.
//!
//! - The status task registers the Node (see [`register`]; retried forever), then every
//!   `nodeStatusUpdateFrequency` asks the runtime (CRI Status and Version) and builds the
//!   status ([`status`]); it sends it (a strategic-merge PATCH of `nodes/NAME/status`)
//!   only when it changed or `nodeStatusReportFrequency` passed, as kubelet does with
//!   leases on. Unlike kubelet it does not GET the Node before each update (kubelet's
//!   largest cost on the uplink): it compares with what it sent last.
//! - The lease task renews `kube-node-lease/NAME` every leaseDuration/2 ([`lease`]).
//!
//! When the API server is away both fail softly and try again ([`retry`]); the pods run
//! on from the store meanwhile. Once a renewal works again after failures (or came late:
//! a renewal waits for the link to be up), the lease task wakes the status task, which
//! reads the Node's conditions and sends the status at once: the node lifecycle controller may have marked the Node `Unknown` meanwhile, and
//! only a status update makes it Ready again (with a new transition time, as kubelet
//! would write it). A Node deleted in the API is registered again.

pub mod lease;
pub mod machine;
mod register;
mod retry;
mod runtime;
pub mod status;
pub mod watch;

use super::agent::Uplink;
use super::{resource_path, ApiClient, ApiError, PatchType};
use crate::config::ApiServerConfig;
use crate::model::time::format_rfc3339;
use async_io::Timer;
use lease::Lease;
use machine::Machine;
use register::ExistingNode;
use retry::Retry;
use runtime::RuntimeHealth;
use serde_json::{json, Value};
use smol::channel::{Receiver, Sender};
use status::{NodeStatus, Observed, PriorCondition};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

/// How long after an outage the Node is read before each status: longer than the node
/// lifecycle controller takes to catch up after an API-server restart (its informers
/// relist with a back-off of their own, then it looks every 5 s).
const WATCHFUL: Duration = Duration::from_secs(120);

/// Registers the Node, then keeps its status and Lease current; never returns.
pub async fn run(up: Rc<Uplink>) {
    let Some(api) = up.ctx.cfg.api_server.clone() else {
        return;
    };
    let node_uid = Rc::new(RefCell::new(String::new()));
    let heartbeat = Rc::new(Cell::new(None));
    let (wake_tx, wake_rx) = smol::channel::bounded(1);
    let mut node = StatusTask {
        machine: Machine::read(&up.ctx, up.ctx.cfg.max_pods),
        up: up.clone(),
        api,
        node_uid: node_uid.clone(),
        health: RuntimeHealth::default(),
        runtime_version: String::new(),
        priors: Vec::new(),
        sent: None,
        label_fixes: BTreeMap::new(),
        force: false,
        watchful_until: None,
        retry: Retry::new("node status"),
        wake: wake_rx,
        heartbeat: heartbeat.clone(),
    };
    node.register().await;
    let duration = node.api.node_lease_duration_seconds;
    let beats = Beats {
        node_uid,
        wake: wake_tx,
        status_sent: heartbeat,
    };
    crate::rt::spawn(renew_lease(up, duration, beats)).detach();
    node.run().await
}

/// The patch of `nodes/NAME/status` that sets `status` (addresses replaced as a whole:
/// a merge by type would keep an address this node no longer has) and, when given,
/// labels.
pub fn status_patch(status: &NodeStatus, labels: &BTreeMap<String, String>) -> Value {
    let mut body = json!({ "status": status });
    if let Some(list) = body["status"]["addresses"].as_array_mut() {
        list.insert(0, json!({"$patch": "replace"}));
    }
    if !labels.is_empty() {
        body["metadata"] = json!({ "labels": labels });
    }
    body
}

/// Sends a status (and label fixes) for node `name`; the answer (the Node) is not read.
pub async fn send_status(
    client: &ApiClient,
    name: &str,
    status: &NodeStatus,
    labels: &BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let path = resource_path("v1", None, "nodes", Some(name), Some("status"));
    let body = status_patch(status, labels);
    client
        .patch_ack(&path, PatchType::StrategicMerge, &body)
        .await
}

struct StatusTask {
    up: Rc<Uplink>,
    api: ApiServerConfig,
    machine: Machine,
    /// The Node's uid, for the Lease's owner reference.
    node_uid: Rc<RefCell<String>>,
    health: RuntimeHealth,
    runtime_version: String,
    /// The conditions last built (or found on the Node at registration).
    priors: Vec<PriorCondition>,
    /// The status last sent and when.
    sent: Option<(NodeStatus, Instant)>,
    /// Default labels to bring back on the next status patch (registration found the
    /// Node with other values).
    label_fixes: BTreeMap<String, String>,
    /// Send the next status even if unchanged.
    force: bool,
    /// Until when the Node is read before each status (see [`StatusTask::run`]).
    watchful_until: Option<Instant>,
    retry: Retry,
    /// Woken by the lease task when the API server answers again after an outage.
    wake: Receiver<()>,
    /// When a status (with the Ready condition's new heartbeat time) was last sent.
    heartbeat: Rc<Cell<Option<Instant>>>,
}

impl StatusTask {
    /// Creates the Node, or finds it and notes what to reconcile; tries until it worked.
    async fn register(&mut self) {
        let name = self.up.node_name.clone();
        let nodes = resource_path("v1", None, "nodes", None, None);
        let path = resource_path("v1", None, "nodes", Some(&name), None);
        loop {
            let status = self.observe().await;
            let node = register::new_node(&self.machine, &self.api, &status);
            let created = self.up.client.create::<_, Value>(&nodes, &node).await;
            let err = match created {
                Ok(n) => {
                    log::info!("node {name}: registered with the API server");
                    let n = ExistingNode::from_json(&n);
                    watch::keep_labels(&self.up, n.labels);
                    *self.node_uid.borrow_mut() = n.uid;
                    let now = Instant::now();
                    self.sent = Some((status, now));
                    self.heartbeat.set(Some(now));
                    self.retry.succeeded();
                    return;
                }
                Err(e) if e.is_conflict() => match self.up.client.get::<Value>(&path).await {
                    Ok(n) => {
                        log::info!("node {name}: registered before; reconciling it");
                        let n = ExistingNode::from_json(&n);
                        *self.node_uid.borrow_mut() = n.uid;
                        self.label_fixes = register::label_fixes(&self.machine, &n.labels);
                        watch::keep_labels(&self.up, n.labels);
                        self.priors = n.conditions;
                        self.sent = None;
                        self.retry.succeeded();
                        return;
                    }
                    Err(e) => e,
                },
                Err(e) => e,
            };
            Timer::after(self.retry.failed(&err)).await;
        }
    }

    /// Sends the status whenever due; never returns.
    ///
    /// After an outage (woken by the lease task) the status goes out at once, built on
    /// the conditions the API shows. For [`WATCHFUL`] after that the Node is read again
    /// at each step and the status sent when the API shows other conditions than the
    /// node's: the node lifecycle controller, catching up after an API-server restart,
    /// may mark the Node Unknown after that first status (kubelet, which reads its Node
    /// every 10 s, would see it too).
    async fn run(&mut self) -> ! {
        let every = self.api.node_status_update_frequency;
        loop {
            let watchful = self.watchful_until.is_some_and(|t| Instant::now() < t);
            if self.force || watchful {
                self.refresh_priors().await;
            }
            let status = self.observe().await;
            let due = match &self.sent {
                None => true,
                Some((old, at)) => {
                    self.force
                        || !self.label_fixes.is_empty()
                        || status::changed(old, &status)
                        || at.elapsed() >= self.api.node_status_report_frequency
                }
            };
            let mut pause = every;
            if due {
                let name = self.up.node_name.clone();
                match send_status(&self.up.client, &name, &status, &self.label_fixes).await {
                    Ok(()) => {
                        if self.force {
                            self.watchful_until = Some(Instant::now() + WATCHFUL);
                        }
                        let now = Instant::now();
                        self.sent = Some((status, now));
                        self.heartbeat.set(Some(now));
                        self.label_fixes.clear();
                        self.force = false;
                        self.retry.succeeded();
                    }
                    Err(e) if e.is_not_found() => {
                        log::warn!("node {name}: deleted from the cluster; registering again");
                        self.register().await;
                        continue;
                    }
                    Err(e) => pause = self.retry.failed(&e).min(every),
                }
            }
            if self.pause(pause).await {
                self.force = true;
            }
        }
    }

    /// Takes the conditions from the Node in the API as priors: after an outage the
    /// node controller may have set them Unknown, and coming back from Unknown is a
    /// transition (kubelet, which reads its Node before every update, sees it too).
    async fn refresh_priors(&mut self) {
        let path = resource_path("v1", None, "nodes", Some(&self.up.node_name), None);
        match self.up.client.get::<Value>(&path).await {
            Ok(n) => {
                self.priors = status::priors_from_json(&n["status"]["conditions"]);
                watch::keep_labels(&self.up, ExistingNode::from_json(&n).labels);
            }
            Err(e) => log::debug!("node status: reading the Node: {e}"),
        }
    }

    /// Asks the runtime and builds the status of now.
    async fn observe(&mut self) -> NodeStatus {
        let cri = &self.up.ctx.cri.runtime;
        let limit = self.api.node_status_update_frequency;
        match within(limit, cri.status()).await {
            Some(Ok(s)) => self.health.observe(Some(&s), Instant::now()),
            Some(Err(e)) => log::debug!("node status: CRI Status: {e}"),
            None => log::debug!("node status: CRI Status: no answer within {limit:?}"),
        }
        if let Some(Ok(v)) = within(limit, cri.version()).await {
            self.runtime_version = format!("{}://{}", v.runtime_name, v.runtime_version);
        }
        let observed = Observed {
            runtime_errors: self.health.errors(Instant::now()),
            runtime_version: self.runtime_version.clone(),
            pressure: {
                let p = self.up.ctx.pressure.get();
                status::Pressure {
                    memory: p.memory,
                    disk: p.disk,
                    pid: p.pid,
                }
            },
        };
        let now = format_rfc3339(SystemTime::now());
        // The kubelet API may start late (a serving certificate from a CSR).
        self.machine.kubelet_port = self.up.kubelet_port.get();
        let s = status::build(&self.machine, &observed, &self.priors, &now);
        self.log_readiness(&s);
        self.priors = status::priors(&s);
        s
    }

    /// Logs the Ready condition when it turns (kubelet records a NodeReady or
    /// NodeNotReady event then).
    fn log_readiness(&self, s: &NodeStatus) {
        let Some(ready) = s.conditions.iter().find(|c| c.kind == "Ready") else {
            return;
        };
        let before = self.priors.iter().find(|p| p.kind == "Ready");
        if before.is_some_and(|p| p.status == ready.status) {
            return;
        }
        let name = &self.up.node_name;
        if ready.status == "True" {
            log::info!("node {name}: Ready");
        } else {
            log::warn!("node {name}: not Ready: {}", ready.message);
        }
    }

    /// Waits `d`; true when woken by the lease task instead.
    async fn pause(&self, d: Duration) -> bool {
        smol::future::or(
            async {
                Timer::after(d).await;
                false
            },
            async {
                match self.wake.recv().await {
                    Ok(()) => true,
                    Err(_) => std::future::pending().await,
                }
            },
        )
        .await
    }
}

/// What the lease task shares with the status task.
struct Beats {
    /// The Node's uid, for the Lease's owner reference.
    node_uid: Rc<RefCell<String>>,
    /// Wakes the status task after an outage.
    wake: Sender<()>,
    /// When the status task last sent a status.
    status_sent: Rc<Cell<Option<Instant>>>,
}

/// Renews the Lease every 60 % of its duration, forever. Each renewal is made once
/// the link is up, so its time is that of sending. After failures, or a renewal that
/// came late (the link was down between two), the status task is woken.
///
/// A status report is a heartbeat too: the node lifecycle controller takes a Ready
/// condition with a new `lastHeartbeatTime` as one, as it takes a renewed Lease. So
/// the renewal a status report stands in for is not made: the next is due one
/// interval after whichever of the two came last. At idle that is the status report
/// every 5 minutes, which saves one Lease write in 15 (an etcd write each).
async fn renew_lease(up: Rc<Uplink>, duration_seconds: u32, beats: Beats) {
    let mut lease = Lease::new(&up.node_name, duration_seconds);
    let interval = lease.renew_interval();
    let late = lease.late_after();
    let mut retry = Retry::new("node lease");
    let mut last_renewed = Instant::now();
    let last_beat = |renewed: Instant| beats.status_sent.get().map_or(renewed, |s| s.max(renewed));
    loop {
        let renewed = match up.client.connected().await {
            Ok(()) => {
                let uid = beats.node_uid.borrow().clone();
                lease.renew(&up.client, &uid, SystemTime::now()).await
            }
            Err(e) => Err(e),
        };
        match renewed {
            Ok(()) => {
                if retry.failures() > 0 || last_beat(last_renewed).elapsed() > late {
                    let _ = beats.wake.try_send(());
                }
                retry.succeeded();
                last_renewed = Instant::now();
                // Until one interval after the last heartbeat of either kind.
                loop {
                    let due = last_beat(last_renewed) + interval;
                    if Instant::now() >= due {
                        break;
                    }
                    Timer::at(due).await;
                }
            }
            Err(e) => {
                Timer::after(retry.failed(&e)).await;
            }
        }
    }
}

/// `fut`'s output, or None when it takes longer than `limit`.
async fn within<T>(limit: Duration, fut: impl Future<Output = T>) -> Option<T> {
    smol::future::or(async { Some(fut.await) }, async {
        Timer::after(limit).await;
        None
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use status::build;

    #[test]
    fn the_status_patch_replaces_addresses_and_fixes_labels() {
        let m = Machine {
            hostname: "gw1".into(),
            host_ip: "192.0.2.15".into(),
            capacity: crate::model::NodeResources {
                cpu_milli: 1000,
                ..Default::default()
            },
            max_pods: 110,
            ..Default::default()
        };
        let s = build(&m, &Observed::default(), &[], "T");
        let p = status_patch(&s, &BTreeMap::new());
        assert_eq!(
            p["status"]["addresses"],
            json!([{"$patch": "replace"}, {"type": "InternalIP", "address": "192.0.2.15"},
                {"type": "Hostname", "address": "gw1"}])
        );
        assert!(p.get("metadata").is_none());
        assert_eq!(p["status"]["conditions"].as_array().unwrap().len(), 4);
        let fixes = [("kubernetes.io/arch".to_string(), "arm64".to_string())].into();
        let p = status_patch(&s, &fixes);
        assert_eq!(
            p["metadata"],
            json!({"labels": {"kubernetes.io/arch": "arm64"}})
        );
    }
}
