//! `make bench-pressure` (part of `make bench`): what the agent's pressure check costs
//! at 50 pods, in CPU time and memory, beside the 0.2 %-of-a-core idle target.
//!
//! The check as the agent runs it every 10 s (`src/agent/pressure_check.rs`), minus the
//! context: the signal reads (/proc/meminfo, /proc/loadavg, statvfs of the pods' and
//! the image filesystem), the thresholds and conditions, and the comparison with what
//! `node-pressure.json` holds. Two cases:
//! - idle: no threshold met (kubelet's default thresholds, on this machine);
//! - memory pressure: `memory.available` met on every check, so each check also reads
//!   the 50 pods' real cgroups (working set: usage and memory.stat) and ranks them;
//!   a fresh check each time, so every pod is a candidate (the agent's own check skips
//!   pods it already evicted, so this is its worst case).
//!
//! The 50 pod cgroups are real: made with the agent's own `PodCgroups` under a private
//! `cgroupRoot` (`/tinylet-bench-PID`, no limits enforced), removed at the end. Needs
//! root and a cgroup v1 or v2 mount with the memory controller.
//!
//! CPU is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID, not wall time: the machine
//! may be shared and busy). Memory: heap bytes allocated per check and the heap still
//! held after the checks (a counting global allocator), and what the check keeps
//! between ticks.

use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use tinylet::agent::pressure_check::PressureCheck;
use tinylet::config::Config;
use tinylet::model::Pod;
use tinylet::node::pressure_file::Recorded;
use tinylet::node::{signals, NodeResources, PodCgroups};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(l.size() as u64, Relaxed);
        LIVE.fetch_add(l.size() as i64, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as i64, Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new as u64, Relaxed);
        LIVE.fetch_add(new as i64 - l.size() as i64, Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const PODS: usize = 50;
const CHECKS: u32 = 2000;
/// The agent's pressure check period.
const PERIOD: Duration = Duration::from_secs(10);
/// The project's idle CPU target, in percent of one core.
const IDLE_TARGET_PCT: f64 = 0.2;

fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// 50 pods: a third best-effort, the rest burstable with requests (the ranking reads
/// both kinds).
fn pods() -> Vec<Pod> {
    (0..PODS)
        .map(|i| {
            let resources = if i % 3 == 0 {
                json!({})
            } else {
                json!({"requests": {"memory": format!("{}Mi", 4 + i)}})
            };
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("p{i}"), "namespace": "bench",
                             "uid": format!("bench-{:04}-{}", i, std::process::id())},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                          "resources": resources}]}
            }))
            .expect("a bench pod")
        })
        .collect()
}

/// Removes the bench's cgroup tree from every hierarchy (deepest first).
fn drop_cgroups(root: &str) {
    let Ok(mounts) = std::fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    let mut tops = vec![Path::new("/sys/fs/cgroup").join(root.trim_start_matches('/'))];
    for m in mounts.flatten() {
        tops.push(m.path().join(root.trim_start_matches('/')));
    }
    fn rm(dir: &Path) {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    rm(&e.path());
                }
            }
        }
        let _ = std::fs::remove_dir(dir);
    }
    for t in tops.iter().filter(|t| t.is_dir()) {
        rm(t);
    }
}

/// Runs `check` CHECKS times; (CPU per check, allocations and bytes per check).
fn measure(mut check: impl FnMut(u32)) -> (Duration, f64, f64) {
    check(0);
    let (a0, b0, c0) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed), thread_cpu());
    for k in 1..=CHECKS {
        check(k);
    }
    let cpu = (thread_cpu() - c0) / CHECKS;
    let per = |n: u64| n as f64 / f64::from(CHECKS);
    (
        cpu,
        per(ALLOCS.load(Relaxed) - a0),
        per(BYTES.load(Relaxed) - b0),
    )
}

fn main() {
    let root = format!("/tinylet-bench-{}", std::process::id());
    let state = std::env::temp_dir().join(format!("tinylet-bench-pressure-{}", std::process::id()));
    std::fs::create_dir_all(&state).expect("state dir");
    let base = json!({
        "cgroupRoot": root, "podsCgroupName": "benchpods",
        "enforceNodeAllocatable": ["none"],
        "stateDir": state, "podsDir": state,
    });
    let idle_cfg = Config::parse(&base.to_string()).expect("config");
    let mut pressed = base.clone();
    pressed["evictionHard"] = json!({"memory.available": "1Pi"});
    let pressed_cfg = Config::parse(&pressed.to_string()).expect("config");
    let capacity =
        NodeResources::capacity(tinylet::kuberuntime::resources::mem_capacity(), &idle_cfg);
    let Ok(Some(cgroups)) = PodCgroups::setup(&idle_cfg, &capacity) else {
        eprintln!("bench-pressure: no usable cgroup hierarchy here (root needed)");
        std::process::exit(1);
    };
    let pods = pods();
    for p in &pods {
        if let Err(e) = cgroups.ensure(p) {
            drop_cgroups(&root);
            eprintln!(
                "bench-pressure: making pod cgroup of {}: {e}",
                p.metadata.name
            );
            std::process::exit(1);
        }
    }
    let desired: Vec<&Pod> = pods.iter().collect();
    let image_fs = Path::new("/var/lib/containerd");
    let image_fs = if image_fs.exists() {
        image_fs
    } else {
        Path::new("/")
    };
    let t0 = Instant::now();
    let live0 = LIVE.load(Relaxed);

    // Idle: what runs every 10 s on a node with no pressure.
    let mut check = PressureCheck::new(&idle_cfg);
    let mut recorded = Recorded::default();
    let mut evictions = 0usize;
    let (idle_cpu, idle_allocs, idle_bytes) = measure(|k| {
        let r = signals::read(&idle_cfg, &capacity, image_fs);
        let now = t0 + PERIOD * k;
        let out = check.decide(&idle_cfg, &r, Some(&cgroups), &desired, now);
        let rec = Recorded::of(&idle_cfg, &out.pressure, &recorded, "2026-01-01T00:00:00Z");
        if !rec.same_as(&recorded) {
            recorded = rec;
        }
        evictions += usize::from(out.evict.is_some());
    });
    let idle_evictions = evictions;
    let held = LIVE.load(Relaxed) - live0;

    // Memory pressure: every check reads and ranks the 50 pods' cgroups.
    let (mem_cpu, mem_allocs, mem_bytes) = measure(|k| {
        let mut fresh = PressureCheck::new(&pressed_cfg);
        let r = signals::read(&pressed_cfg, &capacity, image_fs);
        let now = t0 + PERIOD * k;
        let out = fresh.decide(&pressed_cfg, &r, Some(&cgroups), &desired, now);
        evictions += usize::from(out.evict.is_some());
    });
    let chosen = evictions - idle_evictions;

    for p in &pods {
        cgroups.remove(&p.metadata.uid);
    }
    drop_cgroups(&root);
    let _ = std::fs::remove_dir_all(&state);

    let pct = |cpu: Duration| cpu.as_secs_f64() / PERIOD.as_secs_f64() * 100.0;
    let verdict = |cpu: Duration| {
        if pct(cpu) <= IDLE_TARGET_PCT {
            "within"
        } else {
            "OVER"
        }
    };
    println!("pressure check at {PODS} pods, {CHECKS} checks per case (CPU time of the thread, one check per 10 s in the agent)");
    println!(
        "  idle (no threshold met):     {:>8.1} us CPU/check = {:.5} % of a core; {:.1} allocations, {:.0} B allocated per check [{} the {IDLE_TARGET_PCT} % idle target]",
        idle_cpu.as_secs_f64() * 1e6,
        pct(idle_cpu),
        idle_allocs,
        idle_bytes,
        verdict(idle_cpu)
    );
    println!(
        "  memory pressure (50 cgroups): {:>8.1} us CPU/check = {:.5} % of a core; {:.1} allocations, {:.0} B allocated per check ({chosen} of {} checks chose a pod)",
        mem_cpu.as_secs_f64() * 1e6,
        pct(mem_cpu),
        mem_allocs,
        mem_bytes,
        CHECKS + 1
    );
    println!(
        "  memory kept between checks: PressureCheck {} B inline, heap held after the idle checks {} B",
        std::mem::size_of::<PressureCheck>(),
        held
    );
    assert!(idle_evictions == 0, "no pod is chosen without pressure");
}
