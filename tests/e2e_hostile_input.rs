//! Input the agent must not trust, on the harness's real containerd with one agent for
//! the whole binary (reproductions of reported attacks): a huge file dropped into the desired
//! state costs no memory, and a pull secret with an adversarial wildcard key does not
//! stall the agent's only thread.

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::json;
use std::sync::OnceLock;
use std::time::Duration;

/// The node shared by the tests of this binary (see e2e_agent.rs for why one agent).
fn node() -> &'static Node {
    static NODE: OnceLock<&'static Node> = OnceLock::new();
    NODE.get_or_init(|| {
        agent_support::node_for_the_process(|| {
            let node = Node::new(Containerd::shared(), "hostile");
            node.start_agent();
            node
        })
    })
}

const START: Duration = Duration::from_secs(40);

/// A value (in KiB) of the agent's /proc/PID/status, e.g. `VmHWM` (peak RSS).
fn proc_status_kib(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix(" kB")?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// The agent's user + system CPU time so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command (which may hold spaces) start at state, field 3.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // /proc counts in USER_HZ, which Linux fixes at 100 on every architecture.
    Duration::from_millis(ticks * 10)
}

/// The most of a device agent's RSS that its own code can be: the project's limit on
/// the static release binary (1.5 MiB, docs/install.md). The tests run the debug build, which
/// maps ~10 MiB of code, so the bound is checked on the agent's peak less its
/// file-backed pages, plus this.
const DEVICE_BINARY_KIB: u64 = 1536;

#[test]
fn a_300_mb_desired_file_is_quarantined_with_peak_rss_under_8_mib() {
    let n = node();
    n.apply(&pod(
        "steady",
        json!({"containers": [sh("main", n.image(), "exec sleep 3600")]}),
    ));
    n.wait_running("steady", START);
    let pid = n.agent_pid().unwrap();
    let code_kib = proc_status_kib(pid, "RssFile");
    // The file: a pod manifest's start, then 300 MB (sparse: the same bytes to
    // read, without writing 300 MB to the test machine's disk).
    let pods = n.dir.join("state/desired/pods");
    let huge = pods.join(format!("{NS}_huge.json"));
    let head = serde_json::to_vec(&pod("huge", json!({"containers": []}))).unwrap();
    // Made whole beside the directory, then moved in: the agent must never see the
    // short head alone (a bad file of a pod it never ran goes to quarantine at once).
    let staged = n.dir.join("state/huge.staged");
    std::fs::write(&staged, &head).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&staged)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    std::fs::rename(&staged, &huge).unwrap();
    let quarantine = n.dir.join("state/quarantine");
    let moved = wait_for("the 300 MB file quarantined", START, || {
        std::fs::read_dir(&quarantine)
            .ok()?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .find(|name| name.ends_with(&format!("-pods-{NS}_huge.json")))
    });
    assert!(!huge.exists());
    // Peak since the agent started (VmHWM), less its code as of before the file.
    let peak = proc_status_kib(pid, "VmHWM");
    let device_peak = peak - code_kib + DEVICE_BINARY_KIB;
    eprintln!(
        "agent VmHWM {peak} KiB with {code_kib} KiB of debug-build code pages: \
         {device_peak} KiB with the device binary"
    );
    assert!(
        device_peak < 8 << 10,
        "peak RSS {device_peak} KiB with the device binary, limit 8 MiB"
    );
    // The log names the file and why; the other pod runs on, the agent too.
    let log = std::fs::read_to_string(n.agent_log_path()).unwrap();
    assert!(
        log.lines().any(
            |l| l.contains(&format!("{NS}_huge.json: larger than 1048576 bytes"))
                && l.contains(&moved)
        ),
        "{log}"
    );
    n.assert_agent_alive();
    assert!(is_running_ready(&n.pod("steady").unwrap()));
}

#[test]
fn an_adversarial_pull_secret_key_does_not_stall_the_agent() {
    let n = node();
    let secret = |name: &str, key: &str| {
        let config = json!({"auths": {key: {"username": "u", "password": "p"}}});
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": NS},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": config.to_string()},
        })
    };
    // The key (15 '*') is refused at apply, naming the field.
    let file = n.dir.join("reported-secret.json");
    let reported = secret("reported", "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b:5000");
    std::fs::write(&file, reported.to_string()).unwrap();
    let out = n.tinylet(&["apply", "-f", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("data[.dockerconfigjson]: registry key") && err.contains("15 '*'"),
        "{err}"
    );
    // The most '*' a key may have: the recursive matcher took ~5 s of CPU (release
    // build) per lookup of this image; the agent looks it up at every pull attempt.
    n.apply(&secret("hostile", "*a*a*a*a*a*a*a*b:5000"));
    let pid = n.agent_pid().unwrap();
    let cpu_before = cpu_time(pid);
    let image = format!("{}:5000/busybox:v1", "a".repeat(45));
    let mut hostile = pod(
        "hostile-pull",
        json!({"containers": [{"name": "c", "image": image, "imagePullPolicy": "Always"}],
               "imagePullSecrets": [{"name": "hostile"}]}),
    );
    hostile["spec"]["restartPolicy"] = json!("Never");
    n.apply(&hostile);
    n.wait_pod("hostile-pull", "failing its pull", START, |p| {
        let reason = cstatus(p, "c")["state"]["waiting"]["reason"].as_str();
        matches!(reason, Some("ErrImagePull" | "ImagePullBackOff"))
    });
    // A pod applied after it starts at once: the agent's thread is free.
    n.apply(&pod(
        "after-hostile",
        json!({"containers": [sh("main", n.image(), "exec sleep 3600")]}),
    ));
    n.wait_running("after-hostile", START);
    let cpu = cpu_time(pid).saturating_sub(cpu_before);
    eprintln!("agent CPU while pulling with the hostile key and starting a pod: {cpu:?}");
    assert!(cpu < Duration::from_secs(3), "agent used {cpu:?} of CPU");
    n.assert_agent_alive();
}
