//! CPU time and allocations of one GC pass's policy computation over 100 images and 200
//! containers (50 pods x 4 containers, each with 1 running + 3 dead instances' worth of
//! containers spread over them), without the runtime: the inputs are the CRI listings a
//! pass receives. Counts allocations with a counting global allocator.
//!
//! Run: `make bench-gc` (or `cargo bench --bench gc`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, HashSet};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use tinylet::config::{ContainerGcConfig, ImageGcConfig};
use tinylet::cri::pb;
use tinylet::gc::container_policy;
use tinylet::gc::image_policy::{self, Candidate, Usage};
use tinylet::gc::image_records::ImageRecords;
use tinylet::gc::image_ref::ImageIndex;
use tinylet::kuberuntime::labels;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(l.size() as u64, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new as u64, Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const IMAGES: usize = 100;
const PODS: usize = 50;
const CONTAINERS: usize = 200;
const NOW_S: u64 = 2_000_000_000;

fn hex(i: usize) -> String {
    format!("sha256:{i:064x}")
}

fn images() -> Vec<pb::Image> {
    (0..IMAGES)
        .map(|i| pb::Image {
            id: hex(i),
            repo_tags: vec![format!("registry.local:5000/team/app-{i}:v{}", i % 7)],
            repo_digests: vec![format!(
                "registry.local:5000/team/app-{i}@{}",
                hex(i + 1000)
            )],
            size: 20_000_000 + i as u64 * 1000,
            ..Default::default()
        })
        .collect()
}

fn containers() -> Vec<pb::Container> {
    (0..CONTAINERS)
        .map(|i| {
            let pod = i % PODS;
            let mut l = BTreeMap::new();
            l.insert(labels::POD_UID.to_string(), format!("uid-{pod:04}"));
            l.insert(labels::POD_NAME.to_string(), format!("pod-{pod}"));
            l.insert(labels::POD_NAMESPACE.to_string(), "default".to_string());
            l.insert(
                labels::CONTAINER_NAME.to_string(),
                format!("c{}", i / PODS % 2),
            );
            pb::Container {
                id: format!("{i:064x}"),
                pod_sandbox_id: format!("sb-{pod}"),
                metadata: Some(pb::ContainerMetadata {
                    name: format!("c{}", i / PODS % 2),
                    attempt: (i / (2 * PODS)) as u32,
                }),
                image: Some(pb::ImageSpec {
                    image: format!("registry.local:5000/team/app-{}:v{}", i % 60, i % 60 % 7),
                    ..Default::default()
                }),
                image_ref: hex(i % 60),
                state: if i < PODS * 2 { 1 } else { 2 },
                created_at: (NOW_S as i64 - 3600 + i as i64) * 1_000_000_000,
                labels: l,
                ..Default::default()
            }
        })
        .collect()
}

fn sandboxes() -> Vec<pb::PodSandbox> {
    (0..PODS)
        .map(|p| {
            let mut l = BTreeMap::new();
            l.insert(labels::POD_UID.to_string(), format!("uid-{p:04}"));
            pb::PodSandbox {
                id: format!("sb-{p}"),
                metadata: Some(pb::PodSandboxMetadata {
                    uid: format!("uid-{p:04}"),
                    ..Default::default()
                }),
                state: 0,
                created_at: (NOW_S as i64 - 7200) * 1_000_000_000,
                labels: l,
                ..Default::default()
            }
        })
        .collect()
}

/// One pass's decisions: what the image and container passes compute between their
/// CRI listings and their removals. Returns counts so nothing is optimized away.
fn one_pass(
    imgs: &[pb::Image],
    ctrs: &[pb::Container],
    sbs: &[pb::PodSandbox],
    desired_refs: &[String],
    desired_uids: &HashSet<&str>,
    records: &mut ImageRecords,
    now: u64,
) -> (usize, usize, usize) {
    let icfg = ImageGcConfig {
        high_threshold_percent: 100,
        low_threshold_percent: 80,
        max_bytes: 1_500_000_000,
        ..Default::default()
    };
    let ix = ImageIndex::new(imgs);
    let in_use = image_policy::in_use_ids(&ix, ctrs);
    let present: HashSet<&str> = imgs.iter().map(|i| i.id.as_str()).collect();
    records.observe(&present, &in_use, now);
    let _ = records.pending_write().map(|_| records.saved());
    let used: u64 = imgs.iter().map(|i| i.size).sum();
    let (to_free, _) = image_policy::bytes_to_free(
        &icfg,
        Usage {
            used,
            capacity: 8 << 30,
        },
    )
    .unwrap_or((0, image_policy::Trigger::Budget));
    let refs = desired_refs
        .iter()
        .map(String::as_str)
        .chain(["registry.k8s.io/pause:3.9"]);
    let (kept, unresolved) = image_policy::kept_ids(&ix, imgs, refs);
    let cands: Vec<Candidate<'_>> = imgs
        .iter()
        .filter(|i| !in_use.contains(i.id.as_str()) && !kept.contains(i.id.as_str()))
        .map(|i| {
            let r = records.get(&i.id);
            Candidate {
                id: &i.id,
                size: i.size,
                first_detected: r.map_or(now, |r| r.first_detected),
                last_used: r.map_or(0, |r| r.last_used),
            }
        })
        .collect();
    let order = image_policy::eviction_order(cands, now, 120);
    let victims = image_policy::plan(&order, to_free).len();
    let ccfg = ContainerGcConfig::default();
    let dead = container_policy::containers_to_remove(
        ctrs,
        desired_uids,
        (now * 1_000_000_000) as i64,
        &ccfg,
    );
    let removed: HashSet<&str> = dead.iter().map(|v| v.id).collect();
    let sb = container_policy::sandboxes_to_remove(sbs, ctrs, &removed, desired_uids);
    (victims + unresolved.len(), dead.len(), sb.len())
}

fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn main() {
    let (imgs, ctrs, sbs) = (images(), containers(), sandboxes());
    // Desired pods: 40 of the 50 pods, their images named by short tag.
    let desired_refs: Vec<String> = (0..40)
        .map(|i| format!("registry.local:5000/team/app-{i}:v{}", i % 7))
        .collect();
    let uids: Vec<String> = (0..40).map(|p| format!("uid-{p:04}")).collect();
    let desired_uids: HashSet<&str> = uids.iter().map(String::as_str).collect();
    let mut records = ImageRecords::from_file(None, NOW_S, "bench");
    // Warm-up: the first pass records every image (and would write the file once).
    let first = one_pass(
        &imgs,
        &ctrs,
        &sbs,
        &desired_refs,
        &desired_uids,
        &mut records,
        NOW_S,
    );
    const N: u32 = 2000;
    let (a0, b0, cpu0) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed), thread_cpu());
    let mut sink = 0;
    for k in 0..N {
        let r = one_pass(
            &imgs,
            &ctrs,
            &sbs,
            &desired_refs,
            &desired_uids,
            &mut records,
            NOW_S + 300 * u64::from(k + 1),
        );
        sink += r.0 + r.1 + r.2;
    }
    let cpu = thread_cpu() - cpu0;
    let (allocs, bytes) = (ALLOCS.load(Relaxed) - a0, BYTES.load(Relaxed) - b0);
    black_box(sink);
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "smoke run (cargo test, unoptimised): figures are not the bench's; see make bench"
        );
    }
    println!("gc pass policy over {IMAGES} images, {CONTAINERS} containers, {PODS} sandboxes (mean of {N} passes):");
    println!(
        "  decisions: {} images to remove, {} dead containers, {} sandboxes",
        first.0, first.1, first.2
    );
    println!(
        "  cpu time per pass:     {:.1} us",
        cpu.as_secs_f64() * 1e6 / f64::from(N)
    );
    println!("  allocations per pass:  {}", allocs / u64::from(N));
    println!("  bytes allocated/pass:  {}", bytes / u64::from(N));
    println!(
        "  records file writes after the first pass: {}",
        records.writes.saturating_sub(1)
    );
}
