//! End-to-end tests of pod cgroups and node allocatable on a private containerd (runc,
//! cgroupfs driver: the harness sets `SystemdCgroup = false`), each test with its own
//! instance and agent:
//!
//! - every sandbox and container runs below its pod's cgroup (`cgroup_parent`, seen in
//!   the runtime's OCI spec), pod cgroups carry the summed limits in their QoS tier, the
//!   pods' parent carries node allocatable; all pod cgroups go with their pods, and a
//!   pod deleted while the agent is down loses its cgroup to the sweep after the
//!   restart.
//! - a best-effort pod that allocates without end is OOM-killed inside the pods'
//!   parent (allocatable made 48 MiB by `systemReserved`) while this test process,
//!   outside it, keeps a larger buffer; bounded (the hog stops doubling at 256 MiB).
//! - a fork bomb (bounded at 400 processes) stops at the parent's pids limit and the
//!   agent keeps answering.
//!
//! Every wait is "eventually, within a generous deadline".

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tinylet::node::hierarchy::Hierarchy;

const T: Duration = Duration::from_secs(90);
/// The fork bomb's waits: its CPU-limited loop crawls on a loaded machine.
const SLOW: Duration = Duration::from_secs(240);

/// The node's cgroup path of its pods' parent (`cgroupRoot` + `podsCgroupName`).
fn pods_rel(node: &Node) -> String {
    let cfg: Value = serde_json::from_slice(&std::fs::read(&node.config).unwrap()).unwrap();
    format!(
        "{}/{}",
        cfg["cgroupRoot"].as_str().unwrap(),
        cfg["podsCgroupName"].as_str().unwrap()
    )
}

fn dir(controller: &str, rel: &str) -> PathBuf {
    Hierarchy::detect()
        .expect("a cgroup hierarchy")
        .dir(controller, rel)
        .unwrap_or_else(|| panic!("no {controller} controller here"))
}

fn read(controller: &str, rel: &str, file: &str) -> Option<String> {
    std::fs::read_to_string(dir(controller, rel).join(file))
        .ok()
        .map(|s| s.trim().to_string())
}

fn v2() -> bool {
    matches!(Hierarchy::detect(), Some(Hierarchy::V2(_)))
}

/// The memory limit of cgroup `rel` (None: unlimited).
fn memory_limit(rel: &str) -> Option<i64> {
    let (file, none) = if v2() {
        ("memory.max", "max")
    } else {
        ("memory.limit_in_bytes", "9223372036854771712")
    };
    let v = read("memory", rel, file).unwrap_or_else(|| panic!("{rel}: no {file}"));
    (v != none).then(|| v.parse().unwrap())
}

fn cpu_shares(rel: &str) -> i64 {
    let (file, conv): (&str, fn(i64) -> i64) = if v2() {
        ("cpu.weight", |w| w)
    } else {
        ("cpu.shares", |s| s)
    };
    conv(read("cpu", rel, file).unwrap().parse().unwrap())
}

/// The v1 value, or its v2 weight.
fn shares_here(shares: i64) -> i64 {
    if v2() {
        tinylet::node::hierarchy::shares_to_weight(shares)
    } else {
        shares
    }
}

/// The CFS quota of `rel` in microseconds per 100 ms (None: no quota).
fn cpu_quota(rel: &str) -> Option<i64> {
    if v2() {
        let v = read("cpu", rel, "cpu.max").unwrap();
        let q = v.split(' ').next().unwrap();
        (q != "max").then(|| q.parse().unwrap())
    } else {
        let q: i64 = read("cpu", rel, "cpu.cfs_quota_us")
            .unwrap()
            .parse()
            .unwrap();
        (q > 0).then_some(q)
    }
}

/// A `/proc/meminfo` field (`MemTotal`, `MemAvailable`) in bytes.
fn meminfo(field: &str) -> i64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: i64 = text
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

fn mem_total() -> i64 {
    meminfo("MemTotal")
}

fn pid_capacity() -> i64 {
    let r = |f: &str| -> i64 { std::fs::read_to_string(f).unwrap().trim().parse().unwrap() };
    r("/proc/sys/kernel/pid_max").min(r("/proc/sys/kernel/threads-max"))
}

/// The cgroups path of the runtime's container `id` (from its OCI spec).
fn cgroups_path(c: &Containerd, id: &str) -> String {
    let info: Value =
        serde_json::from_str(&c.ctr_ok(&["-n", "k8s.io", "containers", "info", id])).unwrap();
    info["Spec"]["linux"]["cgroupsPath"]
        .as_str()
        .unwrap_or_else(|| panic!("{id}: no cgroupsPath in {info}"))
        .to_string()
}

fn limited(name: &str, image: &str, script: &str, res: Value) -> Value {
    let mut c = sh(name, image, script);
    c["resources"] = res;
    c
}

/// Starts an agent on `c` with `reserved` as systemReserved and no hard eviction
/// threshold (a test that wants one sets it): the default `memory.available<100Mi`
/// counts as reserved too, and the agent refuses reservations over the capacity, as
/// kubelet does, so it would refuse the OOM test's "all but 48 MiB".
fn node_with(c: &Containerd, name: &str, reserved: Value) -> Node {
    let node = Node::new(c, name);
    node.set_config("systemReserved", reserved);
    node.set_config("evictionHard", json!({}));
    node.start_agent();
    let rel = pods_rel(&node);
    wait_for("the agent to make the pods' parent cgroup", T, || {
        read("pids", &rel, "pids.max")
            .filter(|v| v != "max")
            .map(|_| ())
    });
    node
}

#[test]
fn pods_run_in_their_cgroups_with_summed_limits_and_the_cgroups_go_with_them() {
    let c = Containerd::start();
    let node = node_with(&c, "limits", json!({"memory": "1Gi", "pid": "100"}));
    let img = node.image().to_string();
    let pods = pods_rel(&node);
    // The pods' parent: node allocatable.
    let want = mem_total() - (1 << 30);
    let got = memory_limit(&pods).expect("a memory limit on the pods' parent");
    assert!((want - got).abs() < 4096, "pods' memory {got}, want {want}");
    assert_eq!(
        read("pids", &pods, "pids.max").unwrap(),
        (pid_capacity() - 100).to_string()
    );
    let cl = |cpu: &str, mem: &str| json!({"limits": {"cpu": cpu, "memory": mem}});
    node.apply(&pod(
        "gua",
        json!({
            "initContainers": [limited("init", &img, "true", cl("300m", "40Mi"))],
            "containers": [
                limited("a", &img, "sleep 3600", cl("100m", "16Mi")),
                limited("b", &img, "sleep 3600", cl("100m", "16Mi")),
            ],
        }),
    ));
    node.apply(&pod(
        "bur",
        json!({"containers": [
            limited("a", &img, "sleep 3600",
                json!({"requests": {"cpu": "200m"}, "limits": {"memory": "24Mi"}})),
            sh("b", &img, "sleep 3600"),
        ]}),
    ));
    node.apply(&pod(
        "be",
        json!({"containers": [sh("a", &img, "sleep 3600")]}),
    ));
    let cri = node.cri();
    let mut rels = Vec::new();
    for (name, tier) in [("gua", ""), ("bur", "burstable/"), ("be", "besteffort/")] {
        node.wait_running(name, T);
        let uid = node.uid(name);
        let rel = format!("{pods}/{tier}pod{uid}");
        // Sandbox and containers are below the pod's cgroup, in the runtime's spec.
        let sandboxes = cri.sandboxes(&uid);
        assert_eq!(sandboxes.len(), 1, "{name}");
        let ids = std::iter::once(sandboxes[0].id.clone())
            .chain(cri.containers(&uid).into_iter().map(|c| c.id));
        for id in ids {
            let path = cgroups_path(&c, &id);
            assert_eq!(path, format!("{rel}/{id}"), "{name}");
        }
        rels.push(rel);
    }
    // guaranteed: max(sum of apps, largest init): cpu 300m, memory 40Mi.
    assert_eq!(memory_limit(&rels[0]), Some(40 << 20));
    assert_eq!(cpu_quota(&rels[0]), Some(30_000));
    assert_eq!(cpu_shares(&rels[0]), shares_here(307));
    // burstable: not every container has a memory or cpu limit: shares only.
    assert_eq!(memory_limit(&rels[1]), None);
    assert_eq!(cpu_quota(&rels[1]), None);
    assert_eq!(cpu_shares(&rels[1]), shares_here(204));
    assert_eq!(cpu_shares(&format!("{pods}/burstable")), shares_here(204));
    // best-effort: the least shares, in its pod and its tier.
    assert_eq!(cpu_shares(&rels[2]), shares_here(2));
    assert_eq!(cpu_shares(&format!("{pods}/besteffort")), shares_here(2));

    node.delete_pod("gua");
    wait_for("the guaranteed pod's cgroup to go", T, || {
        (!dir("memory", &rels[0]).exists()).then_some(())
    });
    // Deleted while the agent is away: the sweep after the restart removes it
    // (containerGC.period of 2 s makes the sweep come soon).
    node.kill_agent();
    node.delete_pod("bur");
    node.set_config("containerGC", json!({"period": "2s"}));
    node.start_agent();
    for rel in &rels[1..2] {
        wait_for(
            "the burstable pod's cgroup to go after a restart",
            T,
            || (!dir("memory", rel).exists()).then_some(()),
        );
    }
    // Adopted, not remade: the best-effort pod keeps its sandbox and cgroup.
    let uid = node.uid("be");
    assert_eq!(cri.sandboxes(&uid).len(), 1);
    assert!(dir("memory", &rels[2]).exists());
    node.delete_pod("be");
    wait_for("the best-effort pod's cgroup to go", T, || {
        (!dir("memory", &rels[2]).exists()).then_some(())
    });
}

#[test]
fn a_memory_hog_is_oom_killed_inside_the_pods_parent_and_the_host_keeps_its_memory() {
    let c = Containerd::start();
    // Pods together get 48 MiB.
    let reserve = mem_total() - (48 << 20);
    let node = node_with(&c, "oom", json!({"memory": reserve.to_string()}));
    let pods = pods_rel(&node);
    assert!(memory_limit(&pods).unwrap() <= 48 << 20);
    // Outside the pods' parent: 64 MiB, more than all pods may have, kept throughout.
    let outside: Vec<u8> = (0..64usize << 20).map(|i| (i % 251) as u8).collect();
    // Doubles a string until killed; stops (and says so) at 256 MiB, should the limit
    // not hold, so a broken build cannot eat this shared machine.
    let hog = "a=0123456789abcdef; i=0; while [ $i -lt 24 ]; do a=\"$a$a\"; i=$((i+1)); done; \
               echo survived; sleep 3600";
    let mut spec = pod("hog", json!({"containers": [sh("hog", node.image(), hog)]}));
    spec["spec"]["restartPolicy"] = json!("Never");
    node.apply(&spec);
    let p = node.wait_pod("hog", "terminated", T, |p| {
        cstatus(p, "hog")["state"]["terminated"].is_object()
    });
    let term = &cstatus(&p, "hog")["state"]["terminated"];
    assert_eq!(term["exitCode"], 137, "killed by SIGKILL: {term}");
    // The parent's limit is what was hit (v1: its failcnt; v2: its hierarchical
    // oom_kill count).
    let hits: i64 = if v2() {
        let events = read("memory", &pods, "memory.events").unwrap();
        events
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .unwrap_or("0")
            .parse()
            .unwrap()
    } else {
        read("memory", &pods, "memory.failcnt")
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(hits >= 1, "the pods' parent hit its memory limit");
    assert!(!node.tinylet_ok(&["logs", "e2e/hog"]).contains("survived"));
    assert!(
        outside
            .iter()
            .enumerate()
            .all(|(i, b)| *b == (i % 251) as u8),
        "the host's memory is intact"
    );
    node.assert_agent_alive();
    assert!(node.tinylet_ok(&["get", "pods", "-A"]).contains("hog"));
}

#[test]
fn a_fork_bomb_stops_at_the_pods_pids_limit_and_the_agent_keeps_answering() {
    let c = Containerd::start();
    let reserve = pid_capacity() - 60;
    let node = node_with(&c, "forks", json!({"pid": reserve.to_string()}));
    let pods = pods_rel(&node);
    assert_eq!(read("pids", &pods, "pids.max").unwrap(), "60");
    // 400 sleepers at most; a CPU limit keeps the failing loop from spinning a core.
    // The loop runs in a subshell and the container's process becomes a `sleep`: a
    // shell whose fork fails exits, and were it the container's first process, its
    // death would kill every sleeper and the pids would fall back before the test saw
    // them at the limit (it did, once in a few runs). The sleepers stay, adopted by it.
    let bomb = "(i=0; while [ $i -lt 400 ]; do sleep 600 & i=$((i+1)); done) & exec sleep 3600";
    let res = json!({"limits": {"cpu": "100m", "memory": "64Mi"}});
    node.apply(&pod(
        "bomb",
        json!({"containers": [limited("bomb", node.image(), bomb, res)]}),
    ));
    wait_for("the pods to reach their pids limit", SLOW, || {
        let cur: i64 = read("pids", &pods, "pids.current")?.parse().ok()?;
        (cur >= 58).then_some(())
    });
    let cur: i64 = read("pids", &pods, "pids.current")
        .unwrap()
        .parse()
        .unwrap();
    assert!(cur <= 60, "{cur} tasks in the pods' parent");
    wait_for("the pids limit to refuse a fork", SLOW, || {
        (refused_forks(&dir("pids", &pods)) >= 1).then_some(())
    });
    let logs = wait_for("the bomb's log", SLOW, || {
        let out = node.tinylet(&["logs", "e2e/bomb"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        text.contains("fork").then_some(text)
    });
    assert!(logs.contains("can't fork"), "forks were refused: {logs}");
    // The agent answers at once and still sees the pod.
    let started = std::time::Instant::now();
    assert!(node.tinylet_ok(&["get", "pods", "-A"]).contains("bomb"));
    assert!(started.elapsed() < Duration::from_secs(10));
    node.assert_agent_alive();
    let uid = node.uid("bomb");
    node.delete_pod("bomb");
    let rel = format!("{pods}/pod{uid}");
    wait_for("the bomb's cgroup to go", SLOW, || {
        (!dir("pids", &rel).exists()).then_some(())
    });
}

/// Forks refused by a pids limit in the cgroup tree at `path`: the kernel counts a
/// refusal in the `pids.events` of the task's own cgroup on v1 (and on v2 before
/// hierarchical events), not in the one whose limit was hit, so the tree is summed.
fn refused_forks(path: &Path) -> i64 {
    let own = std::fs::read_to_string(path.join("pids.events"))
        .ok()
        .and_then(|e| {
            e.lines()
                .find_map(|l| l.strip_prefix("max ")?.trim().parse().ok())
        })
        .unwrap_or(0);
    let children = std::fs::read_dir(path).into_iter().flatten().flatten();
    own + children
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| refused_forks(&e.path()))
        .sum::<i64>()
}

/// MemAvailable in bytes.
fn mem_available() -> i64 {
    meminfo("MemAvailable")
}

fn is_evicted(p: &Value) -> bool {
    phase(p) == "Failed" && p["status"]["reason"] == "Evicted"
}

#[test]
fn under_memory_pressure_best_effort_goes_before_burstable_and_critical_never() {
    let c = Containerd::start();
    let node = node_with(&c, "evict", json!({}));
    let img = node.image().to_string();
    // A pod holding `mib` MiB in a memory-backed emptyDir (charged to its cgroup).
    let holder = |name: &str, mib: u32, res: Value| {
        let script = format!("busybox dd if=/dev/zero of=/m/x bs=1048576 count={mib}; sleep 3600");
        let mut c = limited("a", &img, &script, res);
        c["volumeMounts"] = json!([{"name": "m", "mountPath": "/m"}]);
        pod(
            name,
            json!({"containers": [c], "volumes": [{"name": "m", "emptyDir": {"medium": "Memory"}}]}),
        )
    };
    let mut crit = holder("crit", 16, json!({}));
    crit["spec"]["priorityClassName"] = json!("system-node-critical");
    node.apply(&crit);
    node.apply(&holder("be", 8, json!({})));
    node.apply(&holder("bur", 4, json!({"requests": {"memory": "1Mi"}})));
    let pods = pods_rel(&node);
    for (name, tier, mib) in [
        ("crit", "besteffort/", 16),
        ("be", "besteffort/", 8),
        ("bur", "burstable/", 4),
    ] {
        node.wait_running(name, T);
        let rel = format!("{pods}/{tier}pod{}", node.uid(name));
        wait_for(&format!("{name} to hold {mib} MiB"), T, || {
            let used: i64 = read(
                "memory",
                &rel,
                if v2() {
                    "memory.current"
                } else {
                    "memory.usage_in_bytes"
                },
            )?
            .parse()
            .ok()?;
            (used >= (i64::from(mib) << 20) * 3 / 4).then_some(())
        });
    }
    // The node is now "short of memory": the threshold is above what is available
    // (nothing runs in 64 MiB) and, with the reservations, still within the capacity
    // (the agent refuses to start on more, as kubelet does).
    node.kill_agent();
    let threshold = mem_total() - (64 << 20);
    assert!(
        threshold > mem_available(),
        "MemAvailable within 64 MiB of MemTotal?"
    );
    node.set_config(
        "evictionHard",
        json!({"memory.available": threshold.to_string()}),
    );
    node.start_agent();
    let be = node.wait_pod("be", "evicted", T, is_evicted);
    let msg = be["status"]["message"].as_str().unwrap_or("");
    assert!(
        msg.starts_with("The node was low on resource: memory."),
        "{msg}"
    );
    assert_eq!(
        phase(&node.pod("bur").unwrap()),
        "Running",
        "burstable after best-effort"
    );
    node.wait_pod("bur", "evicted", T, is_evicted);
    holds_for(
        "the critical pod keeps running",
        Duration::from_secs(25),
        || {
            let p = node.pod("crit")?;
            (!is_running_ready(&p)).then(|| format!("crit is {}", phase(&p)))
        },
    );
    // Evicted pods stay down.
    let uid = node.uid("be");
    assert!(node
        .cri()
        .containers(&uid)
        .iter()
        .all(|c| !container_running(c)));
}

/// One agent per pods' parent cgroup: a second one on the same parent refuses to start,
/// naming the first, before it writes any limit there; and the sweep leaves alone a pod cgroup it never made (another
/// agent's, or kubelet's, under the same tier) while it removes its own.
#[test]
fn another_agents_cgroups_are_never_touched() {
    let c = Containerd::start();
    let node = node_with(&c, "owner", json!({"memory": "1Gi"}));
    let pods = pods_rel(&node);
    // Someone else's pod cgroup in the best-effort tier.
    let foreign = format!("{pods}/besteffort/pod00000000-0000-0000-0000-f0re1gn00000");
    std::fs::create_dir_all(dir("memory", &foreign)).unwrap();
    // A second agent with the same cgroupRoot and podsCgroupName (its own state).
    let second = Node::new(&c, "second");
    let cfg: Value = serde_json::from_slice(&std::fs::read(&node.config).unwrap()).unwrap();
    second.set_config("cgroupRoot", cfg["cgroupRoot"].clone());
    second.set_config("podsCgroupName", cfg["podsCgroupName"].clone());
    second.set_config("evictionHard", json!({}));
    // Its own reservation: had it written its limits before finding the lock held, the
    // parent would show its (smaller) allocatable from then on.
    second.set_config("systemReserved", json!({"memory": "1500Mi", "cpu": "100m"}));
    let (limit, shares) = (memory_limit(&pods), cpu_shares(&pods));
    let out = second.tinylet(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is held by another agent, pid"), "{err}");
    assert!(err.contains("podsCgroupName of its own"), "{err}");
    assert_eq!(
        (memory_limit(&pods), cpu_shares(&pods)),
        (limit, shares),
        "the refused agent rewrote the first one's node allocatable"
    );
    // Its own pods' cgroups come and go; the foreign one stays through sweeps.
    node.kill_agent();
    node.set_config("containerGC", json!({"period": "1s"}));
    node.start_agent();
    let img = node.image().to_string();
    node.apply(&pod(
        "be",
        json!({"containers": [sh("main", &img, "exec sleep 3600")]}),
    ));
    node.wait_running("be", T);
    let uid = node.uid("be");
    let own = format!("{pods}/besteffort/pod{uid}");
    node.delete_pod("be");
    wait_for("the agent's own pod cgroup to go", T, || {
        (!dir("memory", &own).exists()).then_some(())
    });
    // Two sweeps more: the foreign cgroup is still there.
    let sweeps = || {
        std::fs::read_to_string(node.agent_log_path())
            .unwrap_or_default()
            .matches("pod cgroups swept")
            .count()
    };
    let seen = sweeps();
    wait_for("two more sweeps", T, || {
        (sweeps() >= seen + 2).then_some(())
    });
    assert!(
        dir("memory", &foreign).exists(),
        "another's pod cgroup removed"
    );
    std::fs::remove_dir(dir("memory", &foreign)).unwrap();
}
