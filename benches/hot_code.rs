//! `make hot-functions`: which functions the agent runs in its steady state, written to
//! cross/order/hot-functions.txt, from which the static release builds lay out their
//! code (cross/README.md says why).
//!
//! The agent measured is an unstripped static x86_64 build (TINYLET_PROFILE_BIN, made
//! by `make hot-functions`) of the release profile: the same code as the shipped
//! binary, with its symbols. It runs under valgrind's callgrind, which counts every
//! function executed, joined as a Node to the project's control plane
//! (tests/harness/kube.sh) on a private containerd, with its local status endpoint and
//! the kubelet API on, as bench-uplink runs it:
//! 1. The agent starts and registers; 20 pods are created at once and run; it settles.
//! 2. The counts are zeroed (`callgrind_control -z`): everything before is start-up.
//! 3. TINYLET_PROFILE_SECS (default 330 s, past the image and container GC periods and a
//!    trim of `code_pages`): the pods idle, and every 15 s what a fleet's monitoring
//!    asks: the status endpoint's /healthz, /metrics and /pods, and through the API
//!    server the kubelet API's /healthz and /metrics/resource.
//! 4. The counts are dumped; every function with a count is listed (v0 names demangled,
//!    crate disambiguators dropped, sorted), the list written with a header.
//!
//! Rare events (a pod's start or restart, an apply, `kubectl logs`) are left out on
//! purpose: their code is paged back in when they happen and given back by the next trim.

#[path = "../tests/common/mod.rs"]
mod common;

#[path = "agent/figures.rs"]
#[allow(dead_code)]
mod figures;
#[path = "agent/node.rs"]
#[allow(dead_code)]
mod node;

#[path = "uplink/cluster.rs"]
#[allow(dead_code)]
mod cluster;
#[path = "uplink/relay.rs"]
#[allow(dead_code)]
mod relay;
#[path = "uplink/streams.rs"]
#[allow(dead_code)]
mod streams;
#[path = "uplink/watch.rs"]
#[allow(dead_code)]
mod watch;

use common::kube::Kube;
use common::Containerd;
use figures::env_u64;
use node::NS;
use relay::Relay;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use watch::{running_ready, PodWatch};

/// Node.rs names its node so.
const NODE: &str = "bench-node";
const PODS: usize = 20;
/// Everything runs many times slower under callgrind.
const WAIT: Duration = Duration::from_secs(600);
const SETTLE: Duration = Duration::from_secs(30);
const SCRAPE_EVERY: Duration = Duration::from_secs(15);

fn main() {
    figures::bench_main("hot-code", "hot-functions", run);
}

fn run() -> Result<(), String> {
    let secs = env_u64("TINYLET_PROFILE_SECS", 330)?;
    let bin = PathBuf::from(
        std::env::var_os("TINYLET_PROFILE_BIN")
            .ok_or("TINYLET_PROFILE_BIN: the unstripped static agent to profile")?,
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::var_os("TINYLET_HOT_LIST")
        .map_or_else(|| root.join("cross/order/hot-functions.txt"), PathBuf::from);
    // The dumps are kept here: TINYLET_PROFILE_REUSE=1 lists them again without a run.
    let kept = root.join("target/hot-code");
    if std::env::var_os("TINYLET_PROFILE_REUSE").is_some() {
        let hot = hot_functions(&kept)?;
        write_list(&out, &hot, secs)?;
        eprintln!("hot-code: {} functions -> {}", hot.len(), out.display());
        return Ok(());
    }
    eprintln!("hot-code: starting the control plane and containerd");
    let kube = Kube::start();
    let ctd = Containerd::start();
    cluster::namespace(&kube);
    let relay = Relay::start(cluster::api_addr(kube.api_url())?)?;
    let dir = ctd.dir().join("hot-code");
    let mut node = cluster::joined_node(&kube, &ctd, &relay.url(), &bin, &dir, NODE, 8)?;
    let counts = dir.join("callgrind.out");
    let prefix: Vec<String> = ["valgrind", "--tool=callgrind", "--demangle=no"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--callgrind-out-file={}", counts.display())])
        .collect();
    let pid = node.start_agent_via(&prefix, &bin)?;
    node.wait_ready(WAIT)?;
    cluster::wait_node_ready(&kube, NODE, WAIT)?;
    eprintln!("hot-code: {PODS} pods");
    let pods = PodWatch::start(cluster::admin(&kube), NS);
    let manifests: Vec<_> = (0..PODS)
        .map(|i| cluster::pod(NODE, ctd.test_image(), &format!("hot-{i:02}"), "hot"))
        .collect();
    let pods_dir = dir.join("pods-hot");
    cluster::write_pods(&pods_dir, &manifests)?;
    cluster::create(&kube, &pods_dir)?;
    pods.wait("the pods Running and Ready", WAIT, |p| {
        (p.values().filter(|s| running_ready(&s.pod)).count() == PODS).then_some(())
    })
    .map_err(|e| format!("{e}\n{}", node.log_tail()))?;
    std::thread::sleep(SETTLE);
    eprintln!("hot-code: counting for {secs} s");
    callgrind_control(&["-z"], pid)?;
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        scrape(&kube, node.status);
        std::thread::sleep(SCRAPE_EVERY.min(until.saturating_duration_since(Instant::now())));
    }
    callgrind_control(&["-d"], pid)?;
    node.stop_agent();
    drop(pods);
    keep_dumps(&dir, &kept)?;
    let hot = hot_functions(&kept)?;
    write_list(&out, &hot, secs)?;
    eprintln!("hot-code: {} functions -> {}", hot.len(), out.display());
    Ok(())
}

/// What a fleet's monitoring asks of a node, locally and through the API server. Under
/// callgrind an answer may miss the endpoint's 10 s deadline: said, not fatal (the code
/// ran all the same).
fn scrape(kube: &Kube, status: std::net::SocketAddr) {
    for path in ["/healthz", "/metrics", "/pods"] {
        if let Err(e) = node::http_get(status, path) {
            eprintln!("hot-code: {e}");
        }
    }
    for path in ["healthz", "metrics/resource"] {
        let raw = format!("/api/v1/nodes/{NODE}/proxy/{path}");
        let out = kube.kubectl(&["get", "--raw", &raw]);
        if !out.status.success() {
            eprintln!(
                "hot-code: GET {raw}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
}

fn callgrind_control(args: &[&str], pid: u32) -> Result<(), String> {
    let out = Command::new("callgrind_control")
        .args(args)
        .arg(pid.to_string())
        .output()
        .map_err(|e| format!("callgrind_control: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "callgrind_control {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Copies the callgrind dumps in `dir` to `kept` (emptied first).
fn keep_dumps(dir: &Path, kept: &Path) -> Result<(), String> {
    let io = |e: std::io::Error| format!("{}: {e}", kept.display());
    let _ = std::fs::remove_dir_all(kept);
    std::fs::create_dir_all(kept).map_err(io)?;
    for e in std::fs::read_dir(dir).map_err(io)?.flatten() {
        if e.file_name().to_string_lossy().starts_with("callgrind.out") {
            std::fs::copy(e.path(), kept.join(e.file_name())).map_err(io)?;
        }
    }
    Ok(())
}

/// The demangled names of the functions with a count in the dumps under `dir`.
fn hot_functions(dir: &Path) -> Result<BTreeSet<String>, String> {
    let mut mangled = BTreeSet::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with("callgrind.out") {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).map_err(|e| e.to_string())?;
        mangled.extend(functions_in_dump(&text));
    }
    if mangled.is_empty() {
        return Err(format!(
            "no counted function in {}/callgrind.out*",
            dir.display()
        ));
    }
    demangle(&mangled)
}

/// The names of the functions with costs of their own in a callgrind dump: those of its
/// `fn=` lines. With name compression a name is given once, at its first use in a `fn=`
/// or `cfn=` (callee) line, as `(ID) NAME`, and by `(ID)` alone after that.
fn functions_in_dump(text: &str) -> BTreeSet<String> {
    let mut names = std::collections::HashMap::new();
    let mut ran = Vec::new();
    for line in text.lines() {
        let (is_fn, rest) = match (line.strip_prefix("fn="), line.strip_prefix("cfn=")) {
            (Some(rest), _) => (true, rest),
            (None, Some(rest)) => (false, rest),
            _ => continue,
        };
        let (id, name) = match rest.strip_prefix('(').and_then(|r| r.split_once(')')) {
            Some((id, name)) => (id.to_string(), name.trim()),
            None => (rest.trim().to_string(), rest.trim()),
        };
        if !name.is_empty() {
            names.insert(id.clone(), name.to_string());
        }
        if is_fn {
            ran.push(id);
        }
    }
    ran.iter()
        .filter_map(|id| names.get(id))
        // A recursion's deeper levels are `NAME'2`.
        .map(|n| n.split_once('\'').map_or(n.as_str(), |(name, _)| name))
        // Code without a symbol is named by its address, valgrind's own by a
        // parenthesis (`(below main)`): nothing to order them by.
        .filter(|n| !n.starts_with("0x") && !n.starts_with('('))
        .map(str::to_string)
        .collect()
}

/// v0 names through c++filt, with crates' disambiguators (`tinylet[5855a8496e57c46f]`)
/// dropped, as cross/order/order_file.py matches them.
fn demangle(mangled: &BTreeSet<String>) -> Result<BTreeSet<String>, String> {
    let mut child = Command::new("c++filt")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("c++filt: {e}"))?;
    let input: String = mangled.iter().map(|m| format!("{m}\n")).collect();
    let mut stdin = child.stdin.take().ok_or("c++filt: no stdin")?;
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(drop_disambiguators)
        .collect())
}

/// `a[0123abcd]::b` -> `a::b`.
fn drop_disambiguators(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']').map(|c| open + c);
        match close {
            Some(c) if rest[open + 1..c].bytes().all(|b| b.is_ascii_hexdigit()) && c > open + 1 => {
                out.push_str(&rest[..open]);
                rest = &rest[c + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn write_list(path: &Path, hot: &BTreeSet<String>, secs: u64) -> Result<(), String> {
    let mut text = format!(
        "# The functions the agent ran in {secs} s of steady state with {PODS} pods, the uplink,\n\
         # the status endpoint and the kubelet API on (scraped every {}s): made by\n\
         # `make hot-functions` (benches/hot_code.rs). cross/order/link.sh lays them out first.\n",
        SCRAPE_EVERY.as_secs()
    );
    for name in hot {
        text.push_str(name);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
