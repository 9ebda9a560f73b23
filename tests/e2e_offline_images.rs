//! Pods whose images the policy pulls (`Always`) after a device reboot while their
//! registry is unreachable, each test on its own private containerd
//! with the harness's registry and the timing settings of a board config:
//!
//! - a registry that hangs (frozen with SIGSTOP: connections are accepted, nothing
//!   answers): every pod runs its local copy within seconds of the agent's start, its
//!   status never shows a container running that does not exist, and once the registry
//!   answers again the containers whose image changed in the registry meanwhile are
//!   replaced while the others keep running;
//! - a registry that is down (connections refused), with an init container.
//!
//! Each test prints a `MEASURED` line: the time from the agent's start to every pod
//! Running after the reboot.

mod agent_support;
mod common;

use agent_support::*;
use common::{Containerd, Image, ImageBuilder, Registry};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The board config whose settings the tests use: the one with the slowest relist
/// (`plegPeriod` 2 s) and the longest `imagePullTimeout` (30 min).
/// `TINYLET_BOARD_CONFIG` names another file of `board-configs/`.
const BOARD: &str = "openwrt-armv7-256m.json";
/// The target: every pod Running this long after the agent starts.
const TARGET: Duration = Duration::from_secs(10);
const START: Duration = Duration::from_secs(60);

fn board_file() -> String {
    std::env::var("TINYLET_BOARD_CONFIG").unwrap_or_else(|_| BOARD.to_string())
}

/// A node on `c` with the board config's timing settings.
fn board_node(c: &Containerd, name: &str) -> Node {
    let n = Node::new(c, name);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("board-configs")
        .join(board_file());
    let board: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut cfg: Value = serde_json::from_slice(&std::fs::read(&n.config).unwrap()).unwrap();
    for key in [
        "plegPeriod",
        "runtimeRequestTimeout",
        "imagePullTimeout",
        "imagePullFallbackTimeout",
    ] {
        let v = board.get(key).unwrap_or_else(|| {
            panic!("{}: {key} is not set", path.display());
        });
        cfg[key] = v.clone();
    }
    std::fs::write(&n.config, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
    n
}

/// The registry's pull secret, applied.
fn apply_regcred(n: &Node, reg: &Registry) {
    let auth = format!("{}:{}", reg.user(), reg.password());
    let config = json!({"auths": {reg.addr(): {"username": reg.user(), "password": reg.password(),
        "auth": b64(auth.as_bytes())}}});
    n.apply(
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "regcred", "namespace": NS},
        "stringData": {".dockerconfigjson": config.to_string()}}),
    );
}

/// A container of `image` with pull policy Always that sleeps.
fn always(name: &str, image: &str) -> Value {
    let mut c = sh(name, image, "exec sleep 3600");
    c["imagePullPolicy"] = json!("Always");
    c
}

/// A pod with the registry's secret.
fn pulling_pod(name: &str, mut spec: Value) -> Value {
    spec["imagePullSecrets"] = json!([{"name": "regcred"}]);
    pod(name, spec)
}

/// A test image with `V=value` in its environment: same layers, another image id.
fn variant(name: &str, value: &str) -> Image {
    ImageBuilder::new(name)
        .cmd(&["sh"])
        .env(&format!("V={value}"))
        .build()
}

/// Container ids that `p`'s status shows running, with whether each is an init
/// container (those may have exited by the time the runtime is asked).
fn shown_running(p: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for (key, init) in [
        ("initContainerStatuses", true),
        ("containerStatuses", false),
    ] {
        for c in p["status"][key].as_array().into_iter().flatten() {
            if c["state"]["running"].is_object() {
                let id = c["containerID"].as_str().unwrap_or("");
                out.push((id.rsplit("://").next().unwrap_or("").to_string(), init));
            }
        }
    }
    out
}

/// What `get pods` said about one pod: READY (ready, total) and STATUS.
#[derive(Debug)]
struct Row {
    ready: (usize, usize),
    status: String,
}

/// `tinylet get pods -n NS`, parsed: pod name -> row.
fn table(n: &Node) -> BTreeMap<String, Row> {
    let out = n.tinylet_ok(&["get", "pods", "-n", NS]);
    out.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (ready, total) = f.get(1)?.split_once('/')?;
            Some((
                f.first()?.to_string(),
                Row {
                    ready: (ready.parse().ok()?, total.parse().ok()?),
                    status: f.get(2)?.to_string(),
                },
            ))
        })
        .collect()
}

/// Watches the node from the agent's start until every pod in `names` is Running and
/// Ready with `status.reason` `OfflineImage`, checking on every look that neither the
/// status files (`get pods -o json`) nor the `get pods` table claim a container running
/// that the runtime does not run. `before`: the container ids the pods ran before the
/// reboot; the agent must have replaced a status still showing them within `rewrite`
/// of its start (before a pull could have ended). Returns the time each pod took.
fn watch_start(
    n: &Node,
    names: &[&str],
    before: &BTreeSet<String>,
    started: Instant,
    rewrite: Duration,
) -> BTreeMap<String, Duration> {
    let cri = n.cri();
    let uids: BTreeMap<String, String> = names.iter().map(|p| (n.uid(p), p.to_string())).collect();
    let mut stale: BTreeSet<&str> = names.iter().copied().collect();
    let mut took: BTreeMap<String, Duration> = BTreeMap::new();
    loop {
        n.assert_agent_alive();
        // Status files first, then the table (as new or newer), then the runtime: an app
        // container that runs now ran when the status was read (nothing stops them).
        let list: Value =
            serde_json::from_str(&n.tinylet_ok(&["get", "pods", "-n", NS, "-o", "json"])).unwrap();
        let rows = table(n);
        let mut running: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        let mut exist: BTreeSet<String> = BTreeSet::new();
        for c in cri.containers_all() {
            let pod = c
                .labels
                .get("io.kubernetes.pod.uid")
                .and_then(|u| uids.get(u));
            exist.insert(c.id.clone());
            if let (Some(pod), true) = (pod, container_running(&c)) {
                running
                    .entry(pod.as_str())
                    .or_default()
                    .insert(c.id.clone());
            }
        }
        let empty = BTreeSet::new();
        let items = list["items"].as_array().cloned().unwrap_or_default();
        for p in &items {
            let name = p["metadata"]["name"].as_str().unwrap_or("");
            if !names.contains(&name) {
                continue;
            }
            let shown = shown_running(p);
            let runs = running.get(name).unwrap_or(&empty);
            if stale.contains(name) {
                if shown.iter().any(|(id, _)| before.contains(id)) {
                    assert!(
                        started.elapsed() < rewrite,
                        "pod {name}: its status still shows the containers from before the \
                         reboot running {:?} after the agent's start:\n{}\n{}",
                        started.elapsed(),
                        serde_json::to_string_pretty(&p["status"]).unwrap(),
                        n.agent_log_tail()
                    );
                    continue;
                }
                stale.remove(name);
            }
            for (id, init) in &shown {
                // An init container may have run and exited since: it must exist, and
                // be no leftover from before the reboot.
                let ok = if *init {
                    exist.contains(id) && !before.contains(id)
                } else {
                    runs.contains(id)
                };
                assert!(
                    ok,
                    "pod {name}: status shows container {id} running, the runtime runs {runs:?}:\n{}",
                    serde_json::to_string_pretty(&p["status"]).unwrap()
                );
            }
            let row = &rows[name];
            assert!(
                row.ready.0 <= runs.len(),
                "pod {name}: get pods says {row:?}, the runtime runs {runs:?}"
            );
            assert!(
                row.status != "Running" || runs.len() == row.ready.1,
                "pod {name}: get pods says {row:?}, the runtime runs {runs:?}"
            );
            if is_running_ready(p) && p["status"]["reason"] == "OfflineImage" {
                took.entry(name.to_string())
                    .or_insert_with(|| started.elapsed());
            }
        }
        if took.len() == names.len() {
            return took;
        }
        assert!(
            started.elapsed() < START,
            "not all of {names:?} Running with OfflineImage within {START:?}:\n{}\n{}",
            serde_json::to_string_pretty(&list).unwrap(),
            n.agent_log_tail()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Agent log lines of short (fallback) pulls that pod `name` started after line `from`.
fn short_pulls(n: &Node, name: &str, from: usize) -> usize {
    let log = std::fs::read_to_string(n.agent_log_path()).unwrap();
    let fallback = board_fallback(n);
    let needle = format!("pod {NS}/{name}: pulling image");
    log.lines()
        .skip(from)
        .filter(|l| l.contains(&needle) && l.ends_with(&format!("(within {fallback})")))
        .count()
}

/// The node's imagePullFallbackTimeout as the agent prints durations.
fn board_fallback(n: &Node) -> String {
    let cfg: Value = serde_json::from_slice(&std::fs::read(&n.config).unwrap()).unwrap();
    cfg["imagePullFallbackTimeout"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn log_lines(n: &Node) -> usize {
    std::fs::read_to_string(n.agent_log_path())
        .unwrap_or_default()
        .lines()
        .count()
}

/// (container id, restart count) of every app container of the pods.
fn snapshot(n: &Node, names: &[&str]) -> BTreeMap<String, (String, i64)> {
    let mut out = BTreeMap::new();
    for name in names {
        let p = n.pod(name).unwrap();
        for c in p["status"]["containerStatuses"].as_array().unwrap() {
            let cname = c["name"].as_str().unwrap();
            out.insert(
                format!("{name}/{cname}"),
                (container_id(&p, cname), restarts(&p, cname)),
            );
        }
    }
    out
}

/// Every container id on the node's runtime.
fn runtime_ids(n: &Node) -> BTreeSet<String> {
    n.cri().containers_all().into_iter().map(|c| c.id).collect()
}

/// The value of `$V` in a running container.
fn env_v(n: &Node, pod: &str, container: &str) -> String {
    let (code, out, err) = n.exec(pod, container, &["sh", "-c", "echo $V"]);
    assert_eq!(code, 0, "{err}");
    out.trim().to_string()
}

/// Waits until no pod of `names` is marked OfflineImage and all are Running and Ready.
fn wait_online(n: &Node, names: &[&str], timeout: Duration) {
    for name in names {
        n.wait_pod(name, "online and running again", timeout, |p| {
            p["status"]["reason"].as_str().unwrap_or("").is_empty() && is_running_ready(p)
        });
    }
}

#[test]
fn frozen_registry_after_reboot_runs_local_images_at_once_and_catches_up_after() {
    let c = Containerd::start();
    let reg = Registry::start(&c);
    let a1 = variant("localhost/e2e/app-a:1", "a1");
    let a2 = variant("localhost/e2e/app-a:1", "a2");
    let b = variant("localhost/e2e/app-b:1", "b");
    let ra = reg.push(&a1.tar, "e2e/app-a:1");
    let rb = reg.push(&b.tar, "e2e/app-b:1");
    let n = board_node(&c, "frozen");
    n.start_agent();
    apply_regcred(&n, &reg);
    n.apply(&pulling_pod(
        "alpha",
        json!({"containers": [always("app", &ra)]}),
    ));
    n.apply(&pulling_pod(
        "beta",
        json!({"containers": [always("app", &rb)]}),
    ));
    n.apply(&pulling_pod(
        "gamma",
        json!({"containers": [always("app", &rb), always("side", &ra)]}),
    ));
    let mut init = always("init", &rb);
    init["command"] = json!(["true"]);
    n.apply(&pulling_pod(
        "delta",
        json!({"initContainers": [init], "containers": [always("app", &rb)]}),
    ));
    let names = ["alpha", "beta", "gamma", "delta"];
    for name in names {
        let p = n.wait_running(name, START);
        assert_eq!(p["status"]["reason"].as_str().unwrap_or(""), "", "online");
    }
    let before = runtime_ids(&n);

    // The device reboots; its uplink drops every packet to the registry.
    n.kill_agent();
    reg.freeze();
    c.reboot();
    let from = log_lines(&n);
    let started = Instant::now();
    n.start_agent();
    let times = watch_start(&n, &names, &before, started, Duration::from_secs(2));
    let took = ["alpha", "beta", "gamma"]
        .iter()
        .map(|p| times[*p])
        .max()
        .unwrap();
    eprintln!(
        "MEASURED {}: agent start to 3 pods (4 containers) Running after a reboot with a \
         frozen registry: {} ms; with a 4th pod (an init container, then 1 container) \
         Running after {} ms",
        board_file(),
        took.as_millis(),
        times["delta"].as_millis()
    );
    assert!(took <= TARGET, "{times:?} > {TARGET:?}");
    assert!(times["delta"] <= TARGET, "{times:?} > {TARGET:?}");
    // Each pod waited for at most one short pull: neither gamma's second container nor
    // delta's app container after its init container did.
    for name in names {
        assert!(short_pulls(&n, name, from) <= 1, "{}", n.agent_log_tail());
    }
    let p = n.pod("gamma").unwrap();
    let msg = p["status"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("container app runs its local image")
            && msg.contains("container side runs its local image"),
        "{msg}"
    );
    let offline = snapshot(&n, &names);
    assert_eq!(env_v(&n, "alpha", "app"), "a1");
    let image_id = |p: &Value| {
        cstatus(p, "app")["imageID"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let alpha_image = image_id(&n.pod("alpha").unwrap());

    // While it hangs, the registry gets a new image for app-a (pushed from elsewhere).
    assert_eq!(reg.push(&a2.tar, "e2e/app-a:1"), ra);
    reg.thaw();
    wait_online(&n, &names, START);
    let after = snapshot(&n, &names);
    for (key, changed) in [
        ("alpha/app", true),
        ("gamma/side", true),
        ("beta/app", false),
        ("gamma/app", false),
        ("delta/app", false),
    ] {
        let (id0, r0) = &offline[key];
        let (id1, r1) = &after[key];
        if changed {
            assert_ne!(id0, id1, "{key} not replaced");
            assert_eq!(*r1, r0 + 1, "{key}: one new instance");
        } else {
            assert_eq!((id0, r0), (id1, r1), "{key} restarted");
        }
    }
    assert_eq!(env_v(&n, "alpha", "app"), "a2");
    assert_eq!(env_v(&n, "gamma", "side"), "a2");
    assert_eq!(env_v(&n, "gamma", "app"), "b");
    let now = image_id(&n.pod("alpha").unwrap());
    assert!(
        !now.is_empty() && now != alpha_image,
        "{alpha_image} -> {now}"
    );
    let log = std::fs::read_to_string(n.agent_log_path()).unwrap();
    assert!(
        !log.contains("CrashLoopBackOff"),
        "a replacement is not a crash"
    );
    // For the reader of --nocapture output: what the agent did about images.
    for l in log.lines().skip(from) {
        if ["image", "registry", "replacing"]
            .iter()
            .any(|w| l.contains(w))
        {
            eprintln!("agent: {l}");
        }
    }
}

#[test]
fn stopped_registry_after_reboot_runs_local_images_with_init_containers() {
    let c = Containerd::start();
    let reg = Registry::start(&c);
    let a1 = variant("localhost/e2e/stop-a:1", "a1");
    let a2 = variant("localhost/e2e/stop-a:1", "a2");
    let b = variant("localhost/e2e/stop-b:1", "b");
    let ra = reg.push(&a1.tar, "e2e/stop-a:1");
    let rb = reg.push(&b.tar, "e2e/stop-b:1");
    let n = board_node(&c, "stopped");
    n.start_agent();
    apply_regcred(&n, &reg);
    let mut init = always("init", &rb);
    init["command"] = json!(["true"]);
    n.apply(&pulling_pod(
        "one",
        json!({"initContainers": [init], "containers": [always("app", &rb), always("side", &ra)]}),
    ));
    n.apply(&pulling_pod(
        "two",
        json!({"containers": [always("app", &ra)]}),
    ));
    let names = ["one", "two"];
    for name in names {
        n.wait_running(name, START);
    }
    let before = runtime_ids(&n);

    n.kill_agent();
    reg.stop();
    c.reboot();
    let started = Instant::now();
    n.start_agent();
    let took = *watch_start(&n, &names, &before, started, Duration::from_secs(2))
        .values()
        .max()
        .unwrap();
    eprintln!(
        "MEASURED {}: agent start to 2 pods (an init container, 3 app containers) Running \
         after a reboot with a stopped registry: {} ms",
        board_file(),
        took.as_millis()
    );
    assert!(took <= TARGET, "{took:?} > {TARGET:?}");
    let offline = snapshot(&n, &names);

    // A new image for stop-a while the registry is down; then it comes back.
    assert_eq!(reg.push(&a2.tar, "e2e/stop-a:1"), ra);
    reg.start_again();
    // Refused pulls back off (10 s doubling): the next background pull may be a while.
    wait_online(&n, &names, Duration::from_secs(180));
    let after = snapshot(&n, &names);
    for (key, changed) in [("one/side", true), ("two/app", true), ("one/app", false)] {
        let (id0, r0) = &offline[key];
        let (id1, r1) = &after[key];
        if changed {
            assert_ne!(id0, id1, "{key} not replaced");
            assert_eq!(*r1, r0 + 1, "{key}: one new instance");
        } else {
            assert_eq!((id0, r0), (id1, r1), "{key} restarted");
        }
    }
    assert_eq!(env_v(&n, "two", "app"), "a2");
    assert_eq!(env_v(&n, "one", "app"), "b");
}

/// Standard base64 (the `auth` field of a docker config).
fn b64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
