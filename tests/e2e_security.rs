//! End-to-end tests of what a hostile pod must not get, on this binary's own private
//! containerd with one agent (`tinylet run`, default `seccompDefault: true`):
//!
//! - /proc and /sys: kubelet's masked and read-only paths for a root container
//!   (`/proc/sys` not writable, `/proc/kcore` masked), none for a privileged container
//!   or `procMount: Unmasked`.
//! - seccomp: the runtime's default profile when nothing is chosen, the container's
//!   profile over the pod's, Unconfined, a Localhost profile from `seccompProfileRoot`,
//!   and the sandbox always under the default profile.
//! - AppArmor on this host: without AppArmor only a container that asks for a profile
//!   fails; with AppArmor the runtime default profile confines.
//! - `$(VAR)` expansion bombs fail their container only, fast and with little memory.
//! - image references outside the docker grammar are refused at apply.
//!
//! Every wait is "eventually, within a generous deadline".

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The node shared by the tests of this binary, with a seccomp profile root of its own.
fn node() -> &'static Node {
    static NODE: OnceLock<&'static Node> = OnceLock::new();
    NODE.get_or_init(|| {
        agent_support::node_for_the_process(|| {
            let node = Node::new(Containerd::shared(), "security");
            let root = profile_root(&node);
            std::fs::create_dir_all(&root).unwrap();
            // Allows everything but mkdir/mkdirat, which fail with EPERM (errno 1).
            let deny_mkdir = json!({
                "defaultAction": "SCMP_ACT_ALLOW",
                "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
            });
            write_file(&root, "deny-mkdir.json", &deny_mkdir.to_string());
            let mut cfg: Value =
                serde_json::from_slice(&std::fs::read(&node.config).unwrap()).unwrap();
            cfg["seccompProfileRoot"] = json!(root);
            std::fs::write(&node.config, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
            node.start_agent();
            node
        })
    })
}

fn profile_root(n: &Node) -> PathBuf {
    n.dir.join("seccomp")
}

const START: Duration = Duration::from_secs(60);

/// A root busybox container that sleeps.
fn sleeper(name: &str, image: &str, security: Value) -> Value {
    let mut c = sh(name, image, "exec sleep 3600");
    if !security.is_null() {
        c["securityContext"] = security;
    }
    c
}

/// Runs `cmd` in a container; (exit code, stdout, stderr).
fn run(pod: &str, c: &str, cmd: &str) -> (i32, String, String) {
    node().exec(pod, c, &["sh", "-c", cmd])
}

/// The container's mount table, as (mount point, options) pairs.
fn mounts(pod: &str, c: &str) -> Vec<(String, String)> {
    let (code, out, err) = run(pod, c, "cat /proc/self/mounts");
    assert_eq!(code, 0, "{err}");
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Some((f.get(1)?.to_string(), f.get(3)?.to_string()))
        })
        .collect()
}

fn mounted_at<'a>(table: &'a [(String, String)], at: &str) -> Option<&'a str> {
    table
        .iter()
        .rev()
        .find(|(p, _)| p == at)
        .map(|(_, o)| o.as_str())
}

/// `Seccomp:` of the container's main process (0 none, 2 filter).
fn seccomp_mode(pod: &str, c: &str) -> String {
    let (code, out, err) = run(pod, c, "grep '^Seccomp:' /proc/1/status");
    assert_eq!(code, 0, "{err}");
    out.split_whitespace().nth(1).unwrap_or("").to_string()
}

/// Writes a namespaced sysctl of the pod's own network namespace (never the host's:
/// these pods have no hostNetwork), the write a read-only /proc/sys must stop.
const WRITE_SYSCTL: &str = "echo 63 > /proc/sys/net/ipv4/ip_default_ttl";

#[test]
fn proc_is_masked_and_read_only_for_a_root_container() {
    let n = node();
    n.apply(&pod(
        "masked",
        json!({"containers": [sleeper("app", n.image(), Value::Null)]}),
    ));
    n.wait_running("masked", START);
    let (code, out, _) = run("masked", "app", "id -u");
    assert_eq!(
        (code, out.as_str()),
        (0, "0\n"),
        "the container runs as root"
    );
    let (code, _, err) = run("masked", "app", WRITE_SYSCTL);
    assert_ne!(code, 0, "a root container wrote /proc/sys");
    assert!(err.contains("Read-only file system"), "{err}");
    let (code, out, err) = run("masked", "app", "cat /proc/kcore | wc -c");
    assert_eq!((code, out.trim()), (0, "0"), "/proc/kcore readable: {err}");
    let table = mounts("masked", "app");
    for masked in [
        "/proc/kcore",
        "/proc/keys",
        "/proc/timer_list",
        "/sys/firmware",
    ] {
        if Path::new(masked).exists() {
            assert!(
                mounted_at(&table, masked).is_some(),
                "{masked} not masked: {table:?}"
            );
        }
    }
    for ro in [
        "/proc/sys",
        "/proc/sysrq-trigger",
        "/proc/bus",
        "/proc/fs",
        "/proc/irq",
    ] {
        if Path::new(ro).exists() {
            let opts = mounted_at(&table, ro).unwrap_or_else(|| panic!("{ro}: {table:?}"));
            assert!(opts.split(',').any(|o| o == "ro"), "{ro}: {opts}");
        }
    }
    n.delete_pod("masked");
}

#[test]
fn privileged_and_unmasked_containers_see_proc_whole() {
    let n = node();
    n.apply(&pod(
        "unmasked",
        json!({"containers": [
            sleeper("priv", n.image(), json!({"privileged": true})),
            sleeper("open", n.image(), json!({"procMount": "Unmasked"})),
        ]}),
    ));
    n.wait_running("unmasked", START);
    for c in ["priv", "open"] {
        let table = mounts("unmasked", c);
        assert_eq!(mounted_at(&table, "/proc/kcore"), None, "{c}: {table:?}");
        let proc_sys = mounted_at(&table, "/proc/sys");
        assert!(
            proc_sys.is_none_or(|o| o.split(',').any(|o| o == "rw")),
            "{c}: {proc_sys:?}"
        );
        let (code, _, err) = run("unmasked", c, WRITE_SYSCTL);
        assert_eq!(code, 0, "{c}: {err}");
    }
    // Unmasked is not privileged: the default seccomp profile still applies.
    assert_eq!(seccomp_mode("unmasked", "open"), "2");
    assert_eq!(seccomp_mode("unmasked", "priv"), "0");
    n.delete_pod("unmasked");
}

#[test]
fn seccomp_follows_the_container_then_the_pod_then_the_default() {
    let n = node();
    let img = n.image();
    n.apply(&pod(
        "sc-default",
        json!({"containers": [sleeper("app", img, Value::Null)]}),
    ));
    n.apply(&pod(
        "sc-chosen",
        json!({
            "securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "containers": [
                sleeper("inherits", img, Value::Null),
                sleeper("runtime", img, json!({"seccompProfile": {"type": "RuntimeDefault"}})),
                sleeper("local", img, json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "deny-mkdir.json"}})),
            ],
        }),
    ));
    n.wait_running("sc-default", START);
    n.wait_running("sc-chosen", START);
    assert_eq!(seccomp_mode("sc-default", "app"), "2");
    assert_eq!(seccomp_mode("sc-chosen", "inherits"), "0");
    assert_eq!(seccomp_mode("sc-chosen", "runtime"), "2");
    assert_eq!(seccomp_mode("sc-chosen", "local"), "2");
    let (code, _, err) = run("sc-chosen", "local", "mkdir /tmp/denied");
    assert_ne!(code, 0, "mkdir allowed under the Localhost profile");
    assert!(err.contains("not permitted"), "{err}");
    assert_eq!(run("sc-chosen", "inherits", "mkdir /tmp/fine").0, 0);
    // Each sandbox (pause) runs under the runtime's default profile.
    for p in ["sc-default", "sc-chosen"] {
        let pid = sandbox_pid(n, p);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let mode = status.lines().find(|l| l.starts_with("Seccomp:"));
        assert_eq!(
            mode.map(|l| l.split_whitespace().nth(1)),
            Some(Some("2")),
            "{p}"
        );
    }
    n.delete_pod("sc-default");
    n.delete_pod("sc-chosen");
}

/// The host pid of the pod's ready sandbox, from containerd's task list.
fn sandbox_pid(n: &Node, pod: &str) -> u32 {
    let uid = n.uid(pod);
    let sb = n
        .cri()
        .sandboxes(&uid)
        .into_iter()
        .find(sandbox_ready)
        .expect("a ready sandbox");
    let tasks = Containerd::shared().ctr_ok(&["-n", "k8s.io", "tasks", "ls"]);
    tasks
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&sb.id.as_str())).then(|| f[1].parse().unwrap())
        })
        .unwrap_or_else(|| panic!("sandbox {} not in {tasks}", sb.id))
}

#[test]
fn apparmor_fails_only_the_container_that_asks_for_it_on_a_host_without_it() {
    let n = node();
    let img = n.image();
    let host_has_apparmor = std::fs::read_to_string("/sys/module/apparmor/parameters/enabled")
        .is_ok_and(|s| s.starts_with('Y'));
    n.apply(&pod(
        "aa",
        json!({"containers": [
            sleeper("none", img, Value::Null),
            sleeper("unconfined", img, json!({"appArmorProfile": {"type": "Unconfined"}})),
            sleeper("runtime", img, json!({"appArmorProfile": {"type": "RuntimeDefault"}})),
        ]}),
    ));
    let running = |p: &Value, c: &str| cstatus(p, c)["state"]["running"].is_object();
    if host_has_apparmor {
        n.wait_running("aa", START);
        let (code, out, _) = run("aa", "runtime", "cat /proc/1/attr/current");
        assert_eq!(code, 0);
        assert!(out.contains("cri-containerd.apparmor.d"), "{out}");
    } else {
        let p = n.wait_pod("aa", "AppArmor refused for one container", START, |p| {
            running(p, "none")
                && running(p, "unconfined")
                && cstatus(p, "runtime")["state"]["waiting"]["reason"] == "CreateContainerError"
        });
        let msg = cstatus(&p, "runtime")["state"]["waiting"]["message"]
            .as_str()
            .unwrap_or("");
        assert!(msg.contains("apparmor is not supported"), "{msg}");
    }
    n.delete_pod("aa");
}

/// The agent's peak resident memory in KiB (VmHWM).
fn agent_peak_kib(n: &Node) -> u64 {
    let pid = n.agent_pid().expect("the agent runs");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// 8 variables of 16 references each would expand to 4 GiB.
#[test]
fn an_env_reference_bomb_fails_its_container_only() {
    let n = node();
    let img = n.image();
    n.apply(&pod(
        "calm",
        json!({"containers": [sleeper("app", img, Value::Null)]}),
    ));
    n.wait_running("calm", START);
    let mut env = vec![json!({"name": "V0", "value": "x"})];
    for i in 1..=8 {
        env.push(json!({"name": format!("V{i}"), "value": format!("$(V{})", i - 1).repeat(16)}));
    }
    let mut bomb = sleeper("bomb", img, Value::Null);
    bomb["env"] = json!(env);
    bomb["args"] = json!(["$(V8)"]);
    let applied = Instant::now();
    n.apply(&pod("bomb", json!({"containers": [bomb]})));
    let p = n.wait_pod("bomb", "CreateContainerConfigError", START, |p| {
        cstatus(p, "bomb")["state"]["waiting"]["reason"] == "CreateContainerConfigError"
    });
    let took = applied.elapsed();
    assert_eq!(
        cstatus(&p, "bomb")["state"]["waiting"]["message"],
        "env var \"V5\" is longer than 131072 bytes (the kernel's limit for one variable or argument)"
    );
    // Nothing of it reached the runtime; the other pod runs on; the agent stays small.
    assert!(n.cri().containers(&n.uid("bomb")).is_empty());
    n.wait_running("calm", START);
    n.assert_agent_alive();
    let peak = agent_peak_kib(n);
    assert!(peak < 64 * 1024, "the agent peaked at {peak} KiB");
    eprintln!("bomb refused {took:?} after apply; agent peak {peak} KiB");
    n.delete_pod("bomb");
    n.delete_pod("calm");
}

/// References outside the docker grammar never reach the store.
#[test]
fn invalid_image_references_are_refused_at_apply() {
    let n = node();
    let dir = n.dir.join("bad-images");
    std::fs::create_dir_all(&dir).unwrap();
    for (i, image) in [
        "localhost/busybox v1",
        "localhost/BusyBox:1",
        "busybox:1\nrm",
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("badimg-{i}");
        let mut c = sleeper("app", image, Value::Null);
        c["imagePullPolicy"] = json!("Never");
        let file = write_file(
            &dir,
            &format!("{name}.json"),
            &pod(&name, json!({"containers": [c]})).to_string(),
        );
        let out = n.tinylet(&["apply", "-f", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{image:?}: {err}");
        assert!(
            err.contains("spec.containers[0].image: must be an image reference"),
            "{err}"
        );
        assert!(n.pod(&name).is_none(), "{image:?} stored");
    }
}
