//! End-to-end tests of node pressure and of the start check of the reservations:
//!
//! - disk pressure from the real image filesystem: on a private containerd, an
//!   `imagefs.available` threshold above what the filesystem the runtime names in
//!   ImageFsInfo has free (and an `imagefs.inodesFree` one above its free inodes) makes
//!   `DiskPressure` true in `tinylet get node` (table and JSON, with the thresholds
//!   met), and image GC runs at once and removes the unused test image (`minAge` 0);
//! - the agent refuses to start when `systemReserved` + `kubeReserved` + the hard
//!   memory threshold exceed the machine's memory, and starts with a warning naming the
//!   figures when they leave the pods less than 32 MiB (no runtime needed: both happen
//!   before the agent waits for it).
//!
//! Every wait is "eventually, within a generous deadline".

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const T: Duration = Duration::from_secs(90);

/// (available bytes, free inodes) of the filesystem holding `dir`, from `stat -f`.
fn fs_free(dir: &Path) -> (u64, u64) {
    let out = Command::new("stat")
        .args(["-f", "-c", "%a %S %d"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let n: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    (n[0] * n[1], n[2])
}

fn disk_condition(node: &Node) -> Option<Value> {
    let v: Value = serde_json::from_str(&node.tinylet_ok(&["get", "node", "-o", "json"])).ok()?;
    v["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "DiskPressure")
        .cloned()
}

#[test]
fn a_real_image_filesystem_under_its_thresholds_is_disk_pressure_and_image_gc_runs() {
    let c = Containerd::start();
    let node = Node::new(&c, "disk");
    let image = node.image().to_string();
    let listed = |c: &Containerd| c.ctr_ok(&["-n", "k8s.io", "images", "ls", "-q"]);
    assert!(listed(&c).contains(&image), "{}", listed(&c));
    // Above what is free now, with a margin no other process frees meanwhile.
    let (bytes, inodes) = fs_free(c.dir());
    node.set_config(
        "evictionHard",
        json!({
            "memory.available": "1Ki",
            "imagefs.available": (bytes + (8 << 30)).to_string(),
            "imagefs.inodesFree": (inodes + 1_000_000).to_string(),
        }),
    );
    node.set_config("imageGC", json!({"minAge": "0s"}));
    node.start_agent();
    let cond = wait_for("DiskPressure in get node", T, || {
        disk_condition(&node).filter(|c| c["status"] == "True")
    });
    let met: Vec<&str> = cond["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        met.iter().any(|t| t.starts_with("imagefs.available<")),
        "{cond}"
    );
    if inodes > 0 {
        assert!(
            met.iter().any(|t| t.starts_with("imagefs.inodesFree<")),
            "{cond}"
        );
    }
    assert!(
        !met.iter().any(|t| t.starts_with("nodefs.")),
        "no nodefs threshold is set: {cond}"
    );
    let table = node.tinylet_ok(&["get", "node"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("DiskPressure"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.contains("True") && row.contains("imagefs.available<"),
        "{table}"
    );
    let memory = table.lines().find(|l| l.starts_with("MemoryPressure"));
    assert!(memory.is_some_and(|l| l.contains("False")), "{table}");
    // Image GC at once: the test image, used by no pod, goes (the sandbox image stays).
    wait_for("image GC to remove the unused image", T, || {
        (!listed(&c).contains(&image)).then_some(())
    });
    assert!(listed(&c).contains(c.sandbox_image()), "{}", listed(&c));
    node.assert_agent_alive();
}

/// MemTotal in bytes.
fn mem_total() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Starts `tinylet run` with `reserved` as systemReserved (no runtime at the endpoint,
/// no pod cgroups); its stderr goes to `log`.
fn run_with(dir: &Path, reserved: u64, log: &Path) -> std::process::Child {
    let cfg = json!({
        "runtimeEndpoint": format!("unix://{}", dir.join("none.sock").display()),
        "stateDir": dir.join("state"),
        "podsDir": dir.join("pods"),
        "podLogsDir": dir.join("logs"),
        "manifestDirs": [],
        "cgroupsPerQOS": false,
        "systemReserved": {"memory": reserved.to_string()},
        "evictionHard": {"memory.available": "4Mi"},
    });
    let config = dir.join("config.json");
    std::fs::write(&config, serde_json::to_vec(&cfg).unwrap()).unwrap();
    Command::new(env!("CARGO_BIN_EXE_tinylet"))
        .arg("run")
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

#[test]
fn reservations_over_memory_refuse_to_start_and_a_thin_remainder_warns() {
    let dir = std::env::temp_dir().join(format!("tinylet-reserved-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("agent.log");
    let total = mem_total();
    let mut over = run_with(&dir, total, &log);
    let st = over.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(st.code(), Some(1), "{text}");
    assert!(
        text.contains("invalid node allocatable: memory reserved")
            && text.contains(&format!("capacity of {total}")),
        "{text}"
    );
    // 4 MiB threshold + MemTotal - 20 MiB: 16 MiB left.
    let mut thin = run_with(&dir, total - (20 << 20), &log);
    let warned = wait_for("the warning about the pods' memory", T, || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .find(|l| l.contains("pods are left"))
            .map(str::to_string)
    });
    assert!(thin.try_wait().unwrap().is_none(), "the agent ran on");
    let _ = thin.kill();
    let _ = thin.wait();
    assert!(
        warned.contains("pods are left 16 MiB of memory") && warned.contains("under the 32 MiB"),
        "{warned}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
