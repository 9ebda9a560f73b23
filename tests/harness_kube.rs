//! Tests of the control-plane harness (tests/harness/kube.sh + tests/common/kube.rs)
//! against the real kube-apiserver v1.20.2: a node identity made the way a tinylet user
//! makes one can do exactly what a kubelet may (its own Node, its pods, what they
//! reference) and no more; pods get the service-account volume shape the feature gate
//! selects; the relay's cut drops a live watch; a fleet's certificates come in one call;
//! a restarted API server serves on; teardown leaves nothing, also after the test
//! process died.

mod common;

use common::kube::{Kube, NodeIdentity};
use serde_json::Value;
use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Polls `f` every 100 ms until it gives a value; panics naming `what` after `secs`.
fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {secs}s: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Pod `name` in namespace default, bound to `node` (skips the scheduler), whose container
/// reads key `greeting` of ConfigMap `config_map` into its environment.
fn pod_manifest(name: &str, node: &str, config_map: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "containers": [{
                "name": "main",
                "image": "localhost/tinylet/busybox:1",
                "command": ["sleep", "3600"],
                "env": [{"name": "GREETING", "valueFrom": {"configMapKeyRef": {
                    "name": config_map, "key": "greeting"}}}]
            }]
        }
    })
    .to_string()
}

fn config_map_manifest(name: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"greeting": format!("hello from {name}")}
    })
    .to_string()
}

fn get_pod(kube: &Kube, name: &str) -> Value {
    json(&kube.kubectl_ok(&["get", "pod", name, "-n", "default", "-o", "json"]))
}

/// The node registers its own Node object (as kubelet does on start).
fn register_node(id: &NodeIdentity) {
    let node = serde_json::json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": id.name, "labels": {"kubernetes.io/hostname": id.name}}
    });
    let (code, body) = id.request("POST", "/api/v1/nodes", Some(&node.to_string()));
    assert_eq!(code, 201, "{} creating its Node: {body}", id.name);
}

/// A `curl` watch started in the background: its lines arrive on the receiver, then a
/// `None` when the stream ends.
struct Watch {
    child: std::process::Child,
    lines: mpsc::Receiver<Option<String>>,
}

impl Watch {
    fn start(id: &NodeIdentity, path: &str) -> Watch {
        let mut child = id.curl(path).spawn().expect("curl starts");
        let out = child.stdout.take().expect("curl stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(Some(l)).is_err() {
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            let _ = tx.send(None);
        });
        Watch { child, lines }
    }

    /// The next watch event, or `None` when the stream ended; panics after `secs`.
    fn next(&self, secs: u64) -> Option<Value> {
        match self.lines.recv_timeout(Duration::from_secs(secs)) {
            Ok(Some(line)) => Some(json(&line)),
            Ok(None) => None,
            Err(e) => panic!("no watch event within {secs}s: {e}"),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn node_identity_is_what_a_user_makes() {
    let kube = Kube::shared();
    let id = kube.node_identity("gw-files");
    let mode = std::fs::metadata(&id.key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{} mode {mode:o}", id.key.display());
    let subject = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-subject", "-in"])
        .arg(&id.cert)
        .output()
        .unwrap();
    let subject = String::from_utf8_lossy(&subject.stdout);
    assert!(
        subject.contains("CN = system:node:gw-files") && subject.contains("O = system:nodes"),
        "{subject}"
    );
    let kc = std::fs::read_to_string(&id.kubeconfig).unwrap();
    assert!(kc.contains("certificate-authority-data:"), "{kc}");
    assert!(kc.contains(&format!("server: {}", kube.api_url())), "{kc}");
    register_node(&id);
    let (code, body) = id.request("GET", "/api/v1/nodes/gw-files", None);
    assert_eq!(code, 200, "{body}");
    // kubectl takes the kubeconfig as it is.
    let out = kube.kubectl_as(&id.kubeconfig, &["get", "--raw", "/api/v1/nodes/gw-files"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        json(&String::from_utf8_lossy(&out.stdout))["metadata"]["name"],
        "gw-files"
    );
    assert_eq!(json(&body)["metadata"]["name"], "gw-files");
}

#[test]
fn node_may_touch_its_own_objects_only() {
    let kube = Kube::shared();
    let id = kube.node_identity("gw1");
    register_node(&id);
    let stranger = serde_json::json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gw1-stranger"}});
    let (code, body) = id.request("POST", "/api/v1/nodes", Some(&stranger.to_string()));
    assert_eq!(code, 403, "a node created another Node: {body}");

    kube.apply(&config_map_manifest("gw1-config"));
    kube.apply(&config_map_manifest("gw1-unreferenced"));
    kube.apply(&pod_manifest("gw1-a", "gw1", "gw1-config"));
    kube.apply(&pod_manifest(
        "elsewhere-a",
        "gw1-other",
        "gw1-unreferenced",
    ));

    let selector = "fieldSelector=spec.nodeName%3Dgw1";
    let (code, body) = id.request("GET", &format!("/api/v1/pods?{selector}"), None);
    assert_eq!(code, 200, "{body}");
    let list = json(&body);
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gw1-a"]);

    // Watch from the list's version: the next pod bound to gw1 arrives, others do not.
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap();
    let watch = Watch::start(
        &id,
        &format!("/api/v1/pods?{selector}&watch=1&resourceVersion={rv}"),
    );
    kube.apply(&pod_manifest(
        "elsewhere-b",
        "gw1-other",
        "gw1-unreferenced",
    ));
    kube.apply(&pod_manifest("gw1-b", "gw1", "gw1-config"));
    let ev = watch.next(30).expect("watch stream open");
    assert_eq!(ev["type"], "ADDED", "{ev}");
    assert_eq!(ev["object"]["metadata"]["name"], "gw1-b", "{ev}");
    assert_eq!(ev["object"]["spec"]["nodeName"], "gw1", "{ev}");

    // The ConfigMap its pod references becomes readable once the node authorizer's graph
    // has the pod; one no pod of gw1 references stays forbidden.
    let cm = wait_for("gw1 reads gw1-config", 30, || {
        let (code, body) = id.request(
            "GET",
            "/api/v1/namespaces/default/configmaps/gw1-config",
            None,
        );
        (code == 200).then_some(body)
    });
    assert_eq!(json(&cm)["data"]["greeting"], "hello from gw1-config");
    let (code, body) = id.request(
        "GET",
        "/api/v1/namespaces/default/configmaps/gw1-unreferenced",
        None,
    );
    assert_eq!(code, 403, "{body}");

    let (code, body) = id.request("GET", "/api/v1/secrets", None);
    assert_eq!(code, 403, "listing all secrets: {body}");
    let msg = json(&body)["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("system:node:gw1") && msg.contains("secrets"),
        "{msg}"
    );

    // A bound service-account token for its pod (TokenRequest with boundObjectRef).
    let uid = get_pod(kube, "gw1-a")["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let req = serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": ["https://kubernetes.default.svc.cluster.local"],
                 "expirationSeconds": 3600,
                 "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "gw1-a", "uid": uid}}
    });
    let (code, body) = id.request(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/default/token",
        Some(&req.to_string()),
    );
    assert_eq!(code, 201, "TokenRequest: {body}");
    assert!(!json(&body)["status"]["token"]
        .as_str()
        .unwrap_or_default()
        .is_empty());
}

#[test]
fn bound_tokens_give_the_projected_volume() {
    let kube = Kube::shared();
    assert!(kube.bound_tokens());
    kube.apply(&config_map_manifest("bound-config"));
    kube.apply(&pod_manifest("bound-pod", "gw-bound", "bound-config"));
    let pod = get_pod(kube, "bound-pod");
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    let vol = volumes
        .iter()
        .find(|v| {
            v["name"]
                .as_str()
                .unwrap_or_default()
                .starts_with("kube-api-access-")
        })
        .unwrap_or_else(|| panic!("no kube-api-access-* volume: {volumes:?}"));
    let sources = vol["projected"]["sources"].as_array().unwrap();
    assert!(
        sources
            .iter()
            .any(|s| s["serviceAccountToken"]["path"] == "token"),
        "{sources:?}"
    );
    assert!(
        sources
            .iter()
            .any(|s| s["configMap"]["name"] == "kube-root-ca.crt"),
        "{sources:?}"
    );
    assert!(
        sources.iter().any(|s| s["downwardAPI"].is_object()),
        "{sources:?}"
    );
    let mounts = &pod["spec"]["containers"][0]["volumeMounts"];
    assert_eq!(
        mounts[0]["mountPath"],
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    assert_eq!(mounts[0]["name"], vol["name"]);
}

/// Also checks teardown: after drop nothing of the instance is left.
#[test]
fn legacy_tokens_give_the_secret_volume_and_down_leaves_nothing() {
    let kube = Kube::start_with_bound_tokens(false);
    assert!(!kube.bound_tokens());
    kube.kubectl_ok(&["create", "namespace", "legacy"]);
    kube.wait_namespace("legacy");
    kube.kubectl_ok(&[
        "run",
        "legacy-pod",
        "-n",
        "legacy",
        "--image=localhost/tinylet/busybox:1",
        "--restart=Never",
        "--overrides={\"spec\":{\"nodeName\":\"gw-legacy\"}}",
    ]);
    let pod = json(&kube.kubectl_ok(&["get", "pod", "legacy-pod", "-n", "legacy", "-o", "json"]));
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 1, "{volumes:?}");
    let name = volumes[0]["name"].as_str().unwrap();
    assert!(name.starts_with("default-token-"), "{volumes:?}");
    assert_eq!(volumes[0]["secret"]["secretName"], name);
    assert!(pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"]
        .as_str()
        .unwrap()
        .ends_with("serviceaccount"));

    let dir = kube.dir().to_path_buf();
    let api = kube.api_url().to_string();
    drop(kube);
    assert_gone(&dir);
    let refused = std::process::Command::new("curl")
        .args(["-sk", "--max-time", "5", &format!("{api}/readyz")])
        .status()
        .unwrap();
    assert_eq!(refused.code(), Some(7), "{api} still answers after down");
}

#[test]
fn relay_cut_drops_a_live_watch_and_refuses_until_restored() {
    let kube = Kube::shared();
    let relay = kube.relay();
    let id = relay.node_identity("gw-relay");
    assert_eq!(id.server, relay.url());
    assert!(std::fs::read_to_string(&id.kubeconfig)
        .unwrap()
        .contains(&format!("server: {}", relay.url())));
    kube.apply(&config_map_manifest("relay-config"));
    kube.apply(&pod_manifest("relay-pod", "gw-relay", "relay-config"));

    // Without a resourceVersion the watch starts with the existing pod: it is live.
    let watch = Watch::start(
        &id,
        "/api/v1/pods?fieldSelector=spec.nodeName%3Dgw-relay&watch=1",
    );
    let ev = watch.next(30).expect("watch stream open");
    assert_eq!(ev["object"]["metadata"]["name"], "relay-pod", "{ev}");

    let t = Instant::now();
    relay.cut();
    let end = watch.next(10);
    assert!(
        end.is_none(),
        "watch still delivering after the cut: {end:?}"
    );
    let dropped = t.elapsed();
    assert!(
        dropped < Duration::from_secs(5),
        "watch ended {dropped:?} after the cut"
    );
    let new = id
        .curl("/api/v1/nodes")
        .args(["--max-time", "5"])
        .output()
        .unwrap();
    assert_eq!(
        new.status.code(),
        Some(7),
        "a new connection was not refused: {new:?}"
    );
    // The API server itself is unaffected.
    assert_eq!(kube.kubectl_ok(&["get", "--raw", "/readyz"]), "ok");

    relay.restore();
    let (code, body) = id.request("GET", "/api/v1/namespaces/default/pods/relay-pod", None);
    assert_eq!(code, 200, "{body}");
}

/// GET `path` with node `name`'s client certificate from `kube.sh node-certs`; the
/// HTTP status.
fn get_as_node(kube: &Kube, name: &str, path: &str) -> u16 {
    let d = kube.dir().join("nodes").join(name);
    let out = std::process::Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "10",
            "--cacert",
        ])
        .arg(d.join("ca.crt"))
        .arg("--cert")
        .arg(d.join("client.crt"))
        .arg("--key")
        .arg(d.join("client.key"))
        .arg(format!("{}{path}", kube.api_url()))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0)
}

#[test]
fn node_certs_make_a_fleet_of_identities_in_one_call() {
    let kube = Kube::shared();
    let names = ["fleet-a".to_string(), "fleet-b".to_string()];
    kube.node_certs(&names);
    for n in &names {
        let d = kube.dir().join("nodes").join(n);
        let key = std::fs::read_to_string(d.join("client.key")).unwrap();
        assert!(key.contains("PRIVATE KEY"), "{key}");
        let mode = std::fs::metadata(d.join("client.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(d.join("serving.crt").is_file() && !d.join("kubeconfig").exists());
        // Authenticated as the node: the Node authorizer lets it read its own Node
        // (none yet) and no other.
        assert_eq!(get_as_node(kube, n, &format!("/api/v1/nodes/{n}")), 404);
    }
    assert_eq!(get_as_node(kube, "fleet-a", "/api/v1/secrets"), 403);
}

#[test]
fn apiserver_restart_comes_back_on_the_same_port_with_the_same_data() {
    let kube = Kube::start();
    kube.apply(&config_map_manifest("before-restart"));
    let pid = |k: &Kube| std::fs::read_to_string(k.dir().join("kube-apiserver.pid")).unwrap();
    let old = pid(&kube);
    let before = std::time::SystemTime::now();
    let gone = kube.restart_apiserver();
    assert!(
        before <= gone && gone <= std::time::SystemTime::now(),
        "the old server was gone during the restart: {gone:?}"
    );
    assert_ne!(pid(&kube), old, "a new API server process");
    assert_eq!(kube.kubectl_ok(&["get", "--raw", "/readyz"]), "ok");
    let cm = kube.kubectl_ok(&["get", "configmap", "before-restart", "-o", "name"]);
    assert_eq!(cm.trim(), "configmap/before-restart");
}

/// Processes (other than this one) whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) {
            found.push(format!("{pid}: {cmd}"));
        }
    }
    found
}

fn assert_gone(dir: &Path) {
    let procs = processes_mentioning(&format!("{}/", dir.display()));
    assert!(procs.is_empty(), "processes left behind: {procs:#?}");
    assert!(!dir.exists(), "{} still exists", dir.display());
}

/// Child of `watchdog_stops_the_control_plane_after_the_process_dies`: starts the shared
/// control plane, prints its directory and URL, aborts (no destructors run).
#[test]
#[ignore = "run only as a child of watchdog_stops_the_control_plane_after_the_process_dies"]
fn watchdog_child() {
    if std::env::var_os("TINYLET_WATCHDOG_CHILD").is_none() {
        return;
    }
    let kube = Kube::shared();
    let relay = kube.relay();
    println!("INSTANCE={} RELAY={}", kube.dir().display(), relay.url());
    std::process::abort();
}

#[test]
fn watchdog_stops_the_control_plane_after_the_process_dies() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "watchdog_child", "--ignored", "--nocapture"])
        .env("TINYLET_WATCHDOG_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("INSTANCE="))
        .unwrap_or_else(|| {
            panic!(
                "child printed no instance: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let (dir, relay) = line.split_once(' ').unwrap();
    let dir = Path::new(dir.trim_start_matches("INSTANCE="));
    let relay = relay.trim_start_matches("RELAY=").replace("https://", "");
    let session = dir.parent().unwrap();
    wait_for("the watchdog removes the session", 60, || {
        (!session.exists()).then_some(())
    });
    assert_gone(dir);
    let refused = std::process::Command::new("curl")
        .args(["-sk", "--max-time", "5", &format!("https://{relay}/")])
        .status()
        .unwrap();
    assert_eq!(refused.code(), Some(7), "relay {relay} still listens");
}
