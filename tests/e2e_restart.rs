//! End-to-end tests of `tinylet run` across restarts, each on its own private containerd
//! (they restart or reboot the runtime, or need to be the only agent on it): the agent
//! killed and started again (adoption with zero restarts, orphans removed), containerd
//! restarted (recovery without duplicate sandboxes), and a simulated device reboot with
//! the registry down (every cached pod runs again, the `Always` pod on its local image).

mod agent_support;
mod common;

use agent_support::*;
use common::{Containerd, ImageBuilder, Registry};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

const START: Duration = Duration::from_secs(60);

/// Container ids and restart counts of every pod in `names`.
fn snapshot(n: &Node, names: &[&str]) -> BTreeMap<String, (String, i64)> {
    names
        .iter()
        .map(|name| {
            let p = n.pod(name).unwrap();
            (
                name.to_string(),
                (container_id(&p, "app"), restarts(&p, "app")),
            )
        })
        .collect()
}

/// Exactly one READY sandbox for each pod, and none of any other pod.
fn assert_one_ready_sandbox_each(n: &Node, names: &[&str]) {
    let cri = n.cri();
    for name in names {
        let uid = n.uid(name);
        let ready: Vec<_> = cri
            .sandboxes(&uid)
            .into_iter()
            .filter(sandbox_ready)
            .collect();
        assert_eq!(ready.len(), 1, "pod {name}: ready sandboxes {ready:?}");
    }
}

#[test]
fn agent_restart_adopts_pods_and_removes_orphans() {
    let c = Containerd::start();
    let n = Node::new(&c, "adopt");
    n.start_agent();
    for name in ["keep", "keep-host", "orphan"] {
        let mut spec = json!({"containers": [sh("app", n.image(), "exec sleep 3600")]});
        if name == "keep-host" {
            spec["hostNetwork"] = json!(true);
        }
        n.apply(&pod(name, spec));
    }
    for name in ["keep", "keep-host", "orphan"] {
        n.wait_running(name, START);
    }
    let before = snapshot(&n, &["keep", "keep-host"]);
    let orphan_uid = n.uid("orphan");
    let cri = n.cri();
    let sandboxes_before: Vec<String> = ["keep", "keep-host"]
        .iter()
        .map(|name| cri.sandboxes(&n.uid(name))[0].id.clone())
        .collect();

    n.kill_agent();
    n.delete_pod("orphan"); // while the agent is down: it never hears of the delete
    n.start_agent();

    wait_for("the orphan's containers and sandbox removed", START, || {
        (cri.containers(&orphan_uid).is_empty() && cri.sandboxes(&orphan_uid).is_empty())
            .then_some(())
    });
    // Through a few relists and syncs: the same containers, no restarts.
    holds_for(
        "adopted pods kept as they were",
        Duration::from_secs(3),
        || {
            let now = snapshot(&n, &["keep", "keep-host"]);
            (now != before).then(|| format!("{before:?} -> {now:?}"))
        },
    );
    for name in ["keep", "keep-host"] {
        n.wait_running(name, START);
    }
    assert_eq!(
        snapshot(&n, &["keep", "keep-host"]),
        before,
        "same containers, no restarts"
    );
    let sandboxes_after: Vec<String> = ["keep", "keep-host"]
        .iter()
        .map(|name| cri.sandboxes(&n.uid(name))[0].id.clone())
        .collect();
    assert_eq!(sandboxes_after, sandboxes_before);
    for name in ["keep", "keep-host"] {
        assert_eq!(
            cri.containers(&n.uid(name)).len(),
            1,
            "{name}: no second container"
        );
    }
    assert_one_ready_sandbox_each(&n, &["keep", "keep-host"]);
}

/// Agents beside each other on one runtime: another tinylet's pod (its own state
/// directory) and a kubelet's pod (kubelet's labels, no tinylet mark) survive this
/// agent's orphan removal and its relists, while its own orphan, and an orphan an older
/// tinylet made (no mark, tinylet's sandbox annotation), are removed.
#[test]
fn another_agents_pods_on_the_runtime_are_left_alone() {
    let c = Containerd::start();
    let other = Node::new(&c, "other-agent");
    other.start_agent();
    other.apply(&pod(
        "theirs",
        json!({"containers": [sh("app", other.image(), "exec sleep 3600")]}),
    ));
    other.wait_running("theirs", START);
    let theirs = other.uid("theirs");
    other.kill_agent(); // its pod keeps running, as after a crash
    let n = Node::new(&c, "beside");
    let cri = n.cri();
    let kubelet = cri.run_as_another_client("kubelet-pod-uid", n.image(), BTreeMap::new());
    let old_tinylet = cri.run_as_another_client(
        "old-tinylet-orphan-uid",
        n.image(),
        [("tinylet.io/sandbox-hash".to_string(), "0".to_string())].into(),
    );
    n.serve_status();
    n.start_agent();
    n.apply(&pod(
        "mine",
        json!({"containers": [sh("app", n.image(), "exec sleep 3600")]}),
    ));
    n.wait_running("mine", START);
    let mine = n.uid("mine");
    n.kill_agent();
    n.delete_pod("mine");
    n.start_agent();
    wait_for("this agent's orphans removed", START, || {
        [mine.as_str(), "old-tinylet-orphan-uid"]
            .iter()
            .all(|uid| cri.sandboxes(uid).is_empty() && cri.containers(uid).is_empty())
            .then_some(())
    });
    assert!(!cri.all_sandboxes().iter().any(|s| s.id == old_tinylet.0));
    n.wait_relists(3);
    for (who, uid) in [
        ("the other tinylet's", theirs.as_str()),
        ("kubelet's", "kubelet-pod-uid"),
    ] {
        let sandboxes = cri.sandboxes(uid);
        assert!(
            sandboxes.len() == 1 && sandboxes.iter().all(sandbox_ready),
            "{who} sandbox: {sandboxes:?}"
        );
        let containers = cri.containers(uid);
        assert!(
            containers.len() == 1 && containers.iter().all(container_running),
            "{who} container: {containers:?}"
        );
    }
    assert_eq!(cri.containers("kubelet-pod-uid")[0].id, kubelet.1);
    // This agent's own objects carry its mark; the other agent's carry another.
    let mark = |uid: &str| {
        cri.sandboxes(uid)[0]
            .labels
            .get("tinylet.io/agent")
            .cloned()
    };
    assert_eq!(
        mark(&theirs).as_deref(),
        Some(other.dir.join("state").to_str().unwrap())
    );
}

#[test]
fn containerd_restart_recovers_without_duplicates() {
    let c = Containerd::start();
    let n = Node::new(&c, "crestart");
    n.start_agent();
    let names = ["cr-a", "cr-b"];
    for name in names {
        n.apply(&pod(
            name,
            json!({"containers": [sh("app", n.image(), "exec sleep 3600")]}),
        ));
    }
    for name in names {
        n.wait_running(name, START);
    }
    let before = snapshot(&n, &names);
    c.restart();
    // Shims and containers live through a containerd restart: the same containers run.
    for name in names {
        n.wait_running(name, START);
    }
    holds_for(
        "containers kept after the runtime restart",
        Duration::from_secs(3),
        || {
            n.assert_agent_alive();
            let now = snapshot(&n, &names);
            (now != before).then(|| format!("{before:?} -> {now:?}"))
        },
    );
    assert_one_ready_sandbox_each(&n, &names);
    assert_eq!(
        snapshot(&n, &names),
        before,
        "containers kept across the runtime restart"
    );
    // An outage while a pod is applied: the agent waits and starts it afterwards.
    c.stop();
    n.apply(&pod(
        "cr-late",
        json!({"containers": [sh("app", n.image(), "exec sleep 3600")]}),
    ));
    holds_for(
        "the agent lives through the outage",
        Duration::from_secs(2),
        || {
            n.assert_agent_alive();
            None
        },
    );
    c.start_again();
    n.wait_running("cr-late", START);
    assert_one_ready_sandbox_each(&n, &["cr-a", "cr-b", "cr-late"]);
}

#[test]
fn reboot_with_registry_down_runs_every_cached_pod() {
    let c = Containerd::start();
    let reg = Registry::start(&c);
    let image = ImageBuilder::new("localhost/e2e/offline:1")
        .cmd(&["sh"])
        .build();
    let remote = reg.push(&image.tar, "e2e/offline:1");
    let n = Node::new(&c, "reboot");
    n.start_agent();
    let auth = format!("{}:{}", reg.user(), reg.password());
    let config = json!({"auths": {reg.addr(): {"username": reg.user(), "password": reg.password(),
        "auth": b64(auth.as_bytes())}}});
    n.apply(
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "regcred", "namespace": NS},
        "stringData": {".dockerconfigjson": config.to_string()}}),
    );
    let mut always = sh("app", &remote, "exec sleep 3600");
    always["imagePullPolicy"] = json!("Always");
    n.apply(&pod(
        "pulls",
        json!({"containers": [always], "imagePullSecrets": [{"name": "regcred"}]}),
    ));
    n.apply(&pod(
        "local",
        json!({"containers": [sh("app", n.image(), "exec sleep 3600")]}),
    ));
    let host = sh("app", n.image(), "exec sleep 3600");
    n.apply(&pod(
        "hostnet",
        json!({"hostNetwork": true, "containers": [host]}),
    ));
    let names = ["pulls", "local", "hostnet"];
    for name in names {
        n.wait_running(name, START);
    }
    let p = n.pod("pulls").unwrap();
    assert_eq!(
        p["status"]["reason"].as_str().unwrap_or(""),
        "",
        "online: {}",
        p["status"]
    );
    let before = snapshot(&n, &names);

    reg.stop();
    c.reboot();
    // Every pod comes back by itself, in new containers.
    for name in names {
        n.wait_pod(name, "running again after the reboot", START, |p| {
            is_running_ready(p) && container_id(p, "app") != before[name].0
        });
    }
    assert_one_ready_sandbox_each(&n, &names);
    let p = n.wait_pod("pulls", "marked OfflineImage", START, |p| {
        p["status"]["reason"] == "OfflineImage"
    });
    let msg = p["status"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("container app runs its local image"),
        "message: {msg}"
    );
    // The registry returns: the agent pulls again and the reason clears.
    reg.start_again();
    let p = n.wait_pod(
        "pulls",
        "online again",
        Duration::from_secs(90),
        |p: &Value| p["status"]["reason"].as_str().unwrap_or("").is_empty(),
    );
    assert!(is_running_ready(&p), "{}", p["status"]);
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
