//! The node's side of the uplink on REAL parts: `tinylet run` on a private containerd of
//! the harness, joined to the harness's kube-apiserver v1.20.2 (Node authorizer and
//! NodeRestriction on) with a `system:node:NAME` identity. Checked with kubectl as an
//! operator sees it: the Node registers Ready with kubelet's labels, addresses,
//! capacity and nodeInfo (runtime version from containerd), its Lease renews every
//! 24 s, containerd stopped turns it NotReady with kubelet's reason and back; an agent
//! restart keeps its condition history and brings kubelet's labels back; through a relay
//! that the test cuts, the lease and readiness come back within one renew period, also
//! after the node controller marked the Node Unknown. The agent never exits.
//!
//! Also: what one renewal and one status report cost on the wire, and (ignored, long)
//! the bytes per hour of registration + lease + status at steady state.
#![cfg(feature = "uplink")]

mod agent_support;
mod common;

use agent_support::Node;
use common::kube::{Kube, NodeIdentity};
use common::Containerd;
use serde_json::{json, Value};
use std::time::{Duration, Instant, SystemTime};
use tinylet::agent::host::go_arch;
use tinylet::model::time::{format_rfc3339, parse_rfc3339};
use tinylet::uplink::node::status::binary_si;

/// The Lease's renew interval: 60 % of its default 40 s duration.
const RENEW: Duration = Duration::from_secs(24);

/// Polls `f` every 250 ms until it gives a value; panics naming `what` after `timeout`
/// (with the agent's log when there is an agent). Checks the agent is alive meanwhile.
fn wait_for<T>(what: &str, timeout: Duration, node: &Node, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        node.assert_agent_alive();
        if Instant::now() > deadline {
            panic!(
                "not within {timeout:?}: {what}\nagent log:\n{}",
                node.agent_log_tail()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn get_json(kube: &Kube, args: &[&str]) -> Option<Value> {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let out = kube.kubectl(&all);
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn node_object(kube: &Kube, name: &str) -> Option<Value> {
    get_json(kube, &["node", name])
}

fn lease_object(kube: &Kube, name: &str) -> Option<Value> {
    get_json(kube, &["lease", "-n", "kube-node-lease", name])
}

/// The node's condition of `kind` (Null when absent).
fn condition<'a>(node: &'a Value, kind: &str) -> &'a Value {
    node["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

fn ready_status(node: &Value) -> &str {
    condition(node, "Ready")["status"].as_str().unwrap_or("")
}

fn time(v: &Value) -> SystemTime {
    parse_rfc3339(v.as_str().unwrap_or("")).unwrap_or(SystemTime::UNIX_EPOCH)
}

fn renew_time(lease: &Value) -> SystemTime {
    time(&lease["spec"]["renewTime"])
}

/// A tinylet node named `node-TAG` on `c`, joined through `id` (made for that name).
fn joined_node(c: &Containerd, tag: &str, id: &NodeIdentity, extra: Value) -> Node {
    joined_node_with(c, tag, id, extra, json!({}))
}

/// As [`joined_node`], with `top` keys at the config's top level.
fn joined_node_with(
    c: &Containerd,
    tag: &str,
    id: &NodeIdentity,
    extra: Value,
    top: Value,
) -> Node {
    let node = Node::new(c, tag);
    for (k, v) in top.as_object().into_iter().flatten() {
        node.set_config(k, v.clone());
    }
    assert_eq!(id.name, format!("node-{tag}"));
    let mut api = json!({"kubeconfig": id.kubeconfig});
    if let (Some(a), Value::Object(more)) = (api.as_object_mut(), extra) {
        a.extend(more);
    }
    node.set_config("apiServer", api);
    node.start_agent();
    node
}

/// Waits until the Node is Ready; returns it.
fn wait_ready(kube: &Kube, node: &Node, name: &str, timeout: Duration) -> Value {
    wait_for(&format!("node {name} Ready"), timeout, node, || {
        node_object(kube, name).filter(|n| ready_status(n) == "True")
    })
}

/// Waits until the Lease's renewTime is at or after `after`; returns the Lease.
fn wait_renewed(
    kube: &Kube,
    node: &Node,
    name: &str,
    after: SystemTime,
    timeout: Duration,
) -> Value {
    wait_for("lease renewed", timeout, node, || {
        lease_object(kube, name).filter(|l| renew_time(l) >= after)
    })
}

/// Waits until the agent holds an established TCP connection to `url`'s port (the
/// relay): the client reconnected, after its own back-off (1-8 s ±25 % in the first two
/// minutes). Returns how long that took.
fn wait_connected(node: &Node, url: &str, timeout: Duration) -> Duration {
    let port = url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let pid = format!("pid={},", node.agent_pid().expect("the agent runs"));
    let t = Instant::now();
    wait_for("the agent reconnected", timeout, node, || {
        let ss = std::process::Command::new("ss")
            .args([
                "-Htnp",
                "state",
                "established",
                "dst",
                &format!("127.0.0.1:{port}"),
            ])
            .output()
            .ok()?;
        String::from_utf8_lossy(&ss.stdout)
            .lines()
            .any(|l| l.contains(&pid))
            .then_some(())
    });
    t.elapsed()
}

fn first_line(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// `containerd://VERSION` as containerd reports itself over CRI.
fn runtime_version(c: &Containerd) -> String {
    let rc = tinylet::cri::RuntimeClient::new(
        tinylet::cri::Channel::new(&c.endpoint()).unwrap(),
        Duration::from_secs(10),
    );
    let v = tinylet::rt::block_on(rc.version()).expect("CRI Version");
    format!("{}://{}", v.runtime_name, v.runtime_version)
}

#[test]
fn a_gateway_joins_as_a_ready_node_with_a_renewing_lease() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let name = "node-join";
    let id = kube.node_identity(name);
    let node = joined_node_with(
        &c,
        "join",
        &id,
        json!({
            "nodeLabels": {"example.com/site": "lab"},
            "registerWithTaints": [{"key": "example.com/gateway", "effect": "NoSchedule"}],
        }),
        json!({"maxPods": 42}),
    );
    let n = wait_ready(kube, &node, name, Duration::from_secs(60));

    // As an operator sees it.
    let table = kube.kubectl_ok(&["get", "nodes"]);
    assert!(
        table.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.first() == Some(&name) && f.get(1) == Some(&"Ready")
        }),
        "{table}"
    );
    let ready = condition(&n, "Ready");
    assert_eq!(ready["reason"], "KubeletReady");
    assert_eq!(ready["message"], "kubelet is posting ready status");
    for (kind, reason) in [
        ("MemoryPressure", "KubeletHasSufficientMemory"),
        ("DiskPressure", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "KubeletHasSufficientPID"),
    ] {
        let cond = condition(&n, kind);
        assert_eq!(
            (cond["status"].as_str(), cond["reason"].as_str()),
            (Some("False"), Some(reason)),
            "{n}"
        );
    }
    let arch = go_arch();
    assert_eq!(
        n["metadata"]["labels"],
        json!({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": arch, "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": arch, "example.com/site": "lab"})
    );
    assert_eq!(
        n["spec"]["taints"],
        json!([{"key": "example.com/gateway", "effect": "NoSchedule"}])
    );
    let host =
        tinylet::agent::host::HostFacts::detect(&tinylet::config::Config::default()).unwrap();
    let mut addresses = vec![json!({"type": "Hostname", "address": name})];
    if !host.host_ip.is_empty() {
        addresses.insert(0, json!({"type": "InternalIP", "address": host.host_ip}));
    }
    assert_eq!(n["status"]["addresses"], Value::Array(addresses));
    let cpus = String::from_utf8(
        std::process::Command::new("getconf")
            .arg("_NPROCESSORS_ONLN")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let fs = rustix::fs::statvfs(&node.dir).unwrap();
    let capacity = json!({
        "cpu": cpus.trim(),
        "memory": binary_si(host.mem_capacity as u64),
        "pods": "42",
        "ephemeral-storage": binary_si(fs.f_blocks * fs.f_frsize),
    });
    assert_eq!(n["status"]["capacity"], capacity);
    // Allocatable is capacity less the reservations (none here) and the hard eviction
    // threshold of memory (kubelet's default 100Mi), as kubelet reports it.
    let mut allocatable = capacity.clone();
    allocatable["memory"] = json!(binary_si(host.mem_capacity as u64 - (100 << 20)));
    assert_eq!(n["status"]["allocatable"], allocatable);
    let info = &n["status"]["nodeInfo"];
    assert_eq!(
        info["containerRuntimeVersion"],
        runtime_version(&c).as_str()
    );
    assert!(
        info["containerRuntimeVersion"]
            .as_str()
            .unwrap()
            .starts_with("containerd://1."),
        "{info}"
    );
    let kubelet = info["kubeletVersion"].as_str().unwrap();
    assert!(kubelet.starts_with("v1.20.0+tinylet."), "{kubelet}");
    assert_eq!(info["machineID"], first_line("/etc/machine-id").as_str());
    assert_eq!(
        info["bootID"],
        first_line("/proc/sys/kernel/random/boot_id").as_str()
    );
    let release = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    assert_eq!(info["kernelVersion"], release.as_str());
    assert!(!info["osImage"].as_str().unwrap().is_empty(), "{info}");
    assert_eq!(info["operatingSystem"], "linux");
    assert_eq!(info["architecture"], arch);
    assert_eq!(n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], 0);
    // kubectl prints the version and runtime columns from nodeInfo.
    let wide = kube.kubectl_ok(&["get", "node", name, "-o", "wide"]);
    assert!(
        wide.contains(kubelet) && wide.contains("containerd://"),
        "{wide}"
    );

    // The Lease: owned by the Node, renewed every 60 % of leaseDuration = 24 s.
    let lease = wait_for("lease", Duration::from_secs(20), &node, || {
        lease_object(kube, name)
    });
    assert_eq!(
        lease["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Node", "name": name,
            "uid": n["metadata"]["uid"]}])
    );
    assert_eq!(lease["spec"]["holderIdentity"], name);
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 40);
    let mut times = vec![renew_time(&lease)];
    while times.len() < 3 {
        let last = *times.last().unwrap();
        let l = wait_for("next renewal", Duration::from_secs(30), &node, || {
            lease_object(kube, name).filter(|l| renew_time(l) > last)
        });
        // Renewals clear the managedFields (half of each answer otherwise).
        assert!(l["metadata"].get("managedFields").is_none(), "{l}");
        times.push(renew_time(&l));
    }
    for w in times[1..].windows(2) {
        let gap = w[1].duration_since(w[0]).unwrap();
        assert!(
            gap >= Duration::from_secs(23) && gap <= Duration::from_secs(26),
            "renewals {gap:?} apart: {times:?}"
        );
    }

    // containerd stops: NotReady with kubelet's reason once its last answer is 30 s old;
    // the lease goes on (the node is reachable, its runtime is not).
    let ready_since = time(&condition(&n, "Ready")["lastTransitionTime"]);
    c.stop();
    let stopped = SystemTime::now();
    let down = wait_for("Ready False", Duration::from_secs(75), &node, || {
        node_object(kube, name).filter(|n| ready_status(n) == "False")
    });
    let cond = condition(&down, "Ready");
    assert_eq!(cond["reason"], "KubeletNotReady", "{cond}");
    assert_eq!(cond["message"], "container runtime is down", "{cond}");
    let turned = time(&cond["lastTransitionTime"]);
    assert!(turned + Duration::from_secs(1) >= stopped && turned > ready_since);
    wait_renewed(
        kube,
        &node,
        name,
        SystemTime::now(),
        RENEW + Duration::from_secs(4),
    );
    c.start_again();
    let back = wait_ready(kube, &node, name, Duration::from_secs(30));
    assert_eq!(condition(&back, "Ready")["reason"], "KubeletReady");
    assert!(time(&condition(&back, "Ready")["lastTransitionTime"]) > turned);
    let ready_since = time(&condition(&back, "Ready")["lastTransitionTime"]);

    // An operator changed kubelet's own label and added one; the agent restarts: its
    // label comes back, the operator's stays, and Ready keeps its transition time.
    kube.kubectl_ok(&[
        "label",
        "node",
        name,
        "kubernetes.io/arch=s390x",
        "--overwrite",
    ]);
    kube.kubectl_ok(&["label", "node", name, "example.com/owner=ops"]);
    node.kill_agent();
    node.start_agent();
    let again = wait_for(
        "kubelet's label back",
        Duration::from_secs(30),
        &node,
        || {
            node_object(kube, name)
                .filter(|n| n["metadata"]["labels"]["kubernetes.io/arch"] == arch)
        },
    );
    assert_eq!(again["metadata"]["labels"]["example.com/owner"], "ops");
    assert_eq!(again["metadata"]["labels"]["example.com/site"], "lab");
    assert_eq!(ready_status(&again), "True");
    assert_eq!(
        time(&condition(&again, "Ready")["lastTransitionTime"]),
        ready_since
    );
    assert_eq!(again["metadata"]["uid"], n["metadata"]["uid"]);
    wait_renewed(
        kube,
        &node,
        name,
        SystemTime::now(),
        RENEW + Duration::from_secs(4),
    );
    node.assert_agent_alive();
}

/// A status report is a heartbeat too (the node lifecycle controller takes a Ready
/// condition with a new `lastHeartbeatTime` as one): with reports every few seconds
/// the Lease is not renewed after it is made, and the Node stays Ready past the
/// controller's 40 s grace.
#[test]
fn status_reports_stand_in_for_lease_renewals() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let name = "node-beats";
    let id = kube.node_identity(name);
    let every = json!({"nodeStatusUpdateFrequency": "2s", "nodeStatusReportFrequency": "4s"});
    let node = joined_node(&c, "beats", &id, every);
    wait_ready(kube, &node, name, Duration::from_secs(60));
    let lease = wait_for("the lease", Duration::from_secs(30), &node, || {
        lease_object(kube, name)
    });
    let made = renew_time(&lease);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(50) {
        let n = node_object(kube, name).expect("the Node");
        assert_eq!(ready_status(&n), "True", "after {:?}: {n}", t.elapsed());
        let l = lease_object(kube, name).expect("the Lease");
        assert_eq!(
            renew_time(&l),
            made,
            "renewed after {:?} though a status went out every 4 s",
            t.elapsed()
        );
        node.assert_agent_alive();
        std::thread::sleep(Duration::from_secs(2));
    }
}

#[test]
fn lease_and_readiness_come_back_within_one_renew_period_after_uplink_cuts() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let relay = kube.relay();
    let name = "node-cut";
    let id = relay.node_identity(name);
    let node = joined_node(&c, "cut", &id, json!({}));
    wait_ready(kube, &node, name, Duration::from_secs(60));
    wait_renewed(
        kube,
        &node,
        name,
        SystemTime::UNIX_EPOCH,
        Duration::from_secs(30),
    );
    let period = RENEW;
    let slack = Duration::from_secs(1);

    // A short cut (well within the node controller's 40 s grace): the client's back-off
    // is still short, and the lease is current again within one renew period.
    relay.cut();
    std::thread::sleep(Duration::from_secs(12));
    let restored = SystemTime::now();
    relay.restore();
    let t = Instant::now();
    let connected = wait_connected(&node, relay.url(), Duration::from_secs(35));
    let t_conn = Instant::now();
    wait_renewed(kube, &node, name, restored, period);
    println!(
        "short cut: reconnected {connected:?} after the restore, lease renewed {:?} later",
        t_conn.elapsed()
    );
    assert!(t.elapsed() <= Duration::from_secs(35));
    assert_eq!(ready_status(&node_object(kube, name).unwrap()), "True");

    // A long cut: the node controller marks the Node Unknown. When the link is back,
    // the first renewal reconnects (after the client's back-off, at most 10 s this early)
    // and the node is Ready again within one renew period of it.
    relay.cut();
    let unknown = wait_for("Ready Unknown", Duration::from_secs(90), &node, || {
        node_object(kube, name).filter(|n| ready_status(n) == "Unknown")
    });
    assert_eq!(condition(&unknown, "Ready")["reason"], "NodeStatusUnknown");
    let restored = SystemTime::now();
    relay.restore();
    // Down for less than two minutes: attempts are at most 10 s apart (not 30 s), so the
    // node is back well within the node controller's grace of the server being there.
    let connected = wait_connected(&node, relay.url(), Duration::from_secs(15));
    let t = Instant::now();
    wait_renewed(kube, &node, name, restored, period);
    let renewed_after = t.elapsed();
    let back = wait_ready(kube, &node, name, period.saturating_sub(t.elapsed()));
    println!(
        "long cut: reconnected {connected:?} after the restore; lease renewed {renewed_after:?} \
         and Ready {:?} after reconnecting",
        t.elapsed()
    );
    let cond = condition(&back, "Ready");
    assert_eq!(cond["reason"], "KubeletReady");
    // Unknown -> True is a transition, dated when the node came back.
    assert!(
        time(&cond["lastTransitionTime"]) + slack >= restored,
        "{cond}"
    );

    // The node controller, catching up late (as after an API-server restart), marks the
    // Node Unknown after the node's status went out: for a while after an outage the
    // node reads its Node before each status, sees it and sends its own again.
    let late = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown",
        "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
        "lastTransitionTime": format_rfc3339(SystemTime::now())}]}});
    kube.patch_as_admin(&format!("/api/v1/nodes/{name}/status"), &late.to_string());
    assert_eq!(ready_status(&node_object(kube, name).unwrap()), "Unknown");
    wait_ready(kube, &node, name, Duration::from_secs(20));
    assert!(node
        .agent_log_tail()
        .lines()
        .all(|l| !l.contains("panicked")));
    node.assert_agent_alive();
}

#[test]
fn a_node_refused_by_the_cluster_is_logged_once_and_retried_slowly() {
    // The credentials are another node's: NodeRestriction refuses the registration.
    let kube = Kube::shared();
    let id = kube.node_identity("node-someone-else");
    let node = Node::new(Containerd::shared(), "refused");
    node.set_config("apiServer", json!({"kubeconfig": id.kubeconfig}));
    node.start_agent();
    let log = || std::fs::read_to_string(node.agent_log_path()).unwrap_or_default();
    let refusal = "node status: HTTP 403 Forbidden";
    wait_for("the refusal logged", Duration::from_secs(30), &node, || {
        log().contains(refusal).then_some(())
    });
    let first = Instant::now();
    // The next attempt a minute later, logged at debug only.
    wait_for("the second attempt", Duration::from_secs(75), &node, || {
        log().contains("(failure 2 in a row)").then_some(())
    });
    assert!(
        first.elapsed() >= Duration::from_secs(55),
        "{:?}",
        first.elapsed()
    );
    let text = log();
    let seen: Vec<&str> = text.lines().filter(|l| l.contains(refusal)).collect();
    // A line is `[TIME LEVEL target] message`.
    let level = |l: &str| l.split_whitespace().nth(1).unwrap_or("").to_string();
    let warned: Vec<&&str> = seen.iter().filter(|l| level(l) == "WARN").collect();
    assert_eq!(warned.len(), 1, "{seen:#?}");
    assert!(warned[0].contains("node-someone-else"), "{}", warned[0]);
    // The repeats went to debug.
    assert!(
        seen.len() >= 2 && seen[1..].iter().all(|l| level(l) == "DEBUG"),
        "{seen:#?}"
    );
    assert!(node_object(kube, "node-refused").is_none());
    node.assert_agent_alive();
}

/// Bytes on the wire (both directions) and requests between two snapshots.
fn cost(
    a: tinylet::tls::counters::Snapshot,
    b: tinylet::tls::counters::Snapshot,
) -> (u64, u64, u64) {
    (
        b.bytes_sent - a.bytes_sent,
        b.bytes_received - a.bytes_received,
        b.requests - a.requests,
    )
}

#[test]
fn one_renewal_and_one_status_report_cost_little_on_the_wire() {
    use tinylet::tls::kubeconfig;
    use tinylet::uplink::node::{lease::Lease, machine::Machine, send_status, status};
    use tinylet::uplink::{resource_path, ApiClient, ClientOptions};
    let kube = Kube::shared();
    let name = "node-bytes";
    let id = kube.node_identity(name);
    let client = ApiClient::new(
        &kubeconfig::load(&id.kubeconfig).unwrap(),
        ClientOptions::default(),
    )
    .unwrap();
    const FOUR_CPUS: tinylet::model::NodeResources = tinylet::model::NodeResources {
        cpu_milli: 4000,
        memory: 2 << 30,
        pids: 4 << 20,
        ephemeral_storage: 7 << 30,
    };
    let m = Machine {
        hostname: name.into(),
        host_ip: "192.0.2.15".into(),
        capacity: FOUR_CPUS,
        allocatable: FOUR_CPUS,
        max_pods: 110,
        machine_id: first_line("/etc/machine-id"),
        boot_id: first_line("/proc/sys/kernel/random/boot_id"),
        kernel_version: "6.1.0".into(),
        os_image: "OpenWrt 23.05.2".into(),
        ..Default::default()
    };
    let observed = status::Observed {
        runtime_version: "containerd://1.6.20".into(),
        ..Default::default()
    };
    let now = || tinylet::model::time::format_rfc3339(SystemTime::now());
    tinylet::rt::block_on(async {
        let nodes = resource_path("v1", None, "nodes", None, None);
        let created: Value = client
            .create(&nodes, &json!({"metadata": {"name": name}}))
            .await
            .unwrap();
        let uid = created["metadata"]["uid"].as_str().unwrap().to_string();
        let mut lease = Lease::new(name, 40);
        let s = status::build(&m, &observed, &[], &now());
        let none = Default::default();
        // Warm up: the Lease made, HTTP/2 header tables filled.
        for _ in 0..2 {
            lease.renew(&client, &uid, SystemTime::now()).await.unwrap();
            send_status(&client, name, &s, &none).await.unwrap();
        }
        let a = client.counters();
        lease.renew(&client, &uid, SystemTime::now()).await.unwrap();
        let b = client.counters();
        let s = status::build(&m, &observed, &status::priors(&s), &now());
        send_status(&client, name, &s, &none).await.unwrap();
        let c = client.counters();
        let (lease_out, lease_in, lease_n) = cost(a, b);
        let (status_out, status_in, status_n) = cost(b, c);
        println!(
            "one lease renewal: {lease_out} B sent, {lease_in} B received; \
             one status report: {status_out} B sent, {status_in} B received"
        );
        assert_eq!((lease_n, status_n), (1, 1));
        // A renewal whose answer carried managedFields would be about twice this.
        assert!(lease_out + lease_in < 1000, "{lease_out} + {lease_in}");
        assert!(status_out + status_in < 6000, "{status_out} + {status_in}");
    });
}

/// Registration + lease + node status of the real node task at steady state, in
/// process (so the client's counters can be read), on the real containerd: bytes and
/// requests per hour, extrapolated from `TINYLET_MEASURE_SECS` (default 600).
/// `cargo test --test uplink_node -- --ignored --nocapture`
#[test]
#[ignore = "takes 10 minutes; run by hand for the bandwidth figures"]
fn steady_state_bytes_per_hour() {
    use std::cell::RefCell;
    use std::rc::Rc;
    use tinylet::agent::context::Context;
    let secs: u64 = std::env::var("TINYLET_MEASURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let kube = Kube::shared();
    let c = Containerd::shared();
    let name = "node-measure";
    let id = kube.node_identity(name);
    let dir = c.dir().join("measure");
    let cfg = tinylet::config::Config::parse(
        &json!({
            "nodeName": name,
            "runtimeEndpoint": c.endpoint(),
            "stateDir": dir.join("state"),
            "podsDir": dir.join("pods"),
            "manifestDirs": [],
            "apiServer": {"kubeconfig": id.kubeconfig},
        })
        .to_string(),
    )
    .unwrap();
    let ctx = Rc::new(Context {
        cri: tinylet::cri::CriClient::from_config(&cfg).unwrap(),
        store: RefCell::new(tinylet::store::Store::open(&cfg).unwrap()),
        host: tinylet::agent::host::HostFacts::detect(&cfg).unwrap(),
        runtime_name: Default::default(),
        cgroups: None,
        pressure: Default::default(),
        node_labels: Default::default(),
        silent_registries: Default::default(),
        tokens: Default::default(),
        events: Default::default(),
        services: Default::default(),
        claims: Default::default(),
        verdicts: Default::default(),
        cfg,
    });
    let up = tinylet::uplink::agent::new(&ctx).unwrap().unwrap();
    tinylet::rt::block_on(async {
        let _task = tinylet::rt::spawn(tinylet::uplink::node::run(up.clone()));
        let t0 = Instant::now();
        while lease_object(kube, name).is_none() {
            assert!(t0.elapsed() < Duration::from_secs(60), "no lease");
            async_io::Timer::after(Duration::from_millis(500)).await;
        }
        let start = up.client.counters();
        println!(
            "registration + first renewal: {start:?} in {:?}",
            t0.elapsed()
        );
        let t1 = Instant::now();
        async_io::Timer::after(Duration::from_secs(secs)).await;
        let end = up.client.counters();
        let (out, inn, n) = cost(start, end);
        let per_hour = |x: u64| x as f64 * 3600.0 / t1.elapsed().as_secs_f64();
        println!(
            "steady state over {:?}: {n} requests, {out} B sent, {inn} B received; \
             per hour: {:.0} requests, {:.0} B sent, {:.0} B received, {:.1} KiB total; \
             {:.0} B/request out, {:.0} B/request in; {} reconnects",
            t1.elapsed(),
            per_hour(n),
            per_hour(out),
            per_hour(inn),
            per_hour(out + inn) / 1024.0,
            out as f64 / n.max(1) as f64,
            inn as f64 / n.max(1) as f64,
            end.reconnects,
        );
        assert!(per_hour(out + inn) <= 512.0 * 1024.0);
        assert_eq!(end.reconnects, 0);
    });
}
