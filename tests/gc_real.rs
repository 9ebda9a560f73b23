//! Image GC, container GC and log rotation against the real private containerd
//! (tests/common): images of known sizes, sandboxes and containers made directly through
//! the CRI client, GC passes run as the agent runs them.

mod common;

use common::{build_image, Containerd, Image};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use tinylet::config::Config;
use tinylet::cri::{pb, CriClient};
use tinylet::gc::image::ImageGc;
use tinylet::gc::logs::LogRotator;
use tinylet::kuberuntime::{agent_mark, labels, termination};
use tinylet::logs::{files, read};
use tinylet::rt::block_on;

/// A config pointing at `c`, with state, pods and log dirs in a fresh scratch directory.
fn config(c: &Containerd, tag: &str) -> Config {
    let root = c.dir().join(format!("tinylet-{tag}"));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    Config {
        runtime_endpoint: c.endpoint(),
        state_dir: root.join("state"),
        pods_dir: root.join("pods"),
        pod_logs_dir: root.join("logs"),
        sandbox_image: c.sandbox_image().to_string(),
        ..Config::default()
    }
}

fn client(cfg: &Config) -> CriClient {
    CriClient::from_config(cfg).unwrap()
}

/// Our labels for pod `uid` (plus the container name when given).
fn our_labels(
    uid: &str,
    ns: &str,
    name: &str,
    container: Option<&str>,
) -> BTreeMap<String, String> {
    let mut l = BTreeMap::new();
    l.insert(labels::POD_UID.to_string(), uid.to_string());
    l.insert(labels::POD_NAMESPACE.to_string(), ns.to_string());
    l.insert(labels::POD_NAME.to_string(), name.to_string());
    if let Some(c) = container {
        l.insert(labels::CONTAINER_NAME.to_string(), c.to_string());
    }
    l
}

/// A host-network sandbox config for pod `ns/name` with `uid`, with kubelet's pod
/// labels; `ours` adds this agent's mark.
fn sandbox_config(
    cfg: &Config,
    ns: &str,
    name: &str,
    uid: &str,
    ours: bool,
) -> pb::PodSandboxConfig {
    pb::PodSandboxConfig {
        metadata: Some(pb::PodSandboxMetadata {
            name: name.into(),
            uid: uid.into(),
            namespace: ns.into(),
            attempt: 0,
        }),
        // Host network: the runtime refuses a hostname without a UTS namespace.
        log_directory: cfg
            .pod_logs_dir
            .join(format!("{ns}_{name}_{uid}"))
            .display()
            .to_string(),
        // Another agent's (a kubelet's) sandbox has the same pod labels, not our mark.
        labels: {
            let mut l = our_labels(uid, ns, name, None);
            if ours {
                l.insert(agent_mark::AGENT.into(), agent_mark::mark(&cfg.state_dir));
            }
            l
        },
        linux: Some(pb::LinuxPodSandboxConfig {
            security_context: Some(pb::LinuxSandboxSecurityContext {
                namespace_options: Some(pb::NamespaceOption {
                    network: pb::NamespaceMode::Node as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Creates and starts container `name` (restart `attempt`) running `cmd` from `image`.
#[allow(clippy::too_many_arguments)]
async fn run_container(
    cri: &CriClient,
    sb: &str,
    sb_cfg: &pb::PodSandboxConfig,
    name: &str,
    attempt: u32,
    image: &str,
    cmd: &[&str],
    ours: bool,
) -> String {
    let meta = sb_cfg.metadata.clone().unwrap();
    // Our containers get a termination-message file as the agent makes them, under the
    // config's podsDir (the sibling of the sandbox's log root, see `config`).
    let mut mounts = Vec::new();
    let mut annotations = BTreeMap::new();
    if ours {
        let root = Path::new(&sb_cfg.log_directory)
            .parent()
            .unwrap()
            .parent()
            .unwrap();
        let file = termination::create_file(&root.join("pods"), &meta.uid, name).unwrap();
        mounts.push(termination::mount(&file, "/dev/termination-log"));
        annotations.insert(
            labels::CONTAINER_TERMINATION_MESSAGE_PATH.to_string(),
            "/dev/termination-log".to_string(),
        );
    }
    let config = pb::ContainerConfig {
        mounts,
        annotations,
        metadata: Some(pb::ContainerMetadata {
            name: name.into(),
            attempt,
        }),
        image: Some(pb::ImageSpec {
            image: image.into(),
            ..Default::default()
        }),
        command: cmd.iter().map(|s| s.to_string()).collect(),
        log_path: format!("{name}/{attempt}.log"),
        // Unmarked: a container is the agent's when its sandbox is.
        labels: our_labels(&meta.uid, &meta.namespace, &meta.name, Some(name)),
        ..Default::default()
    };
    let id = cri
        .runtime
        .create_container(sb, config, sb_cfg.clone())
        .await
        .unwrap();
    cri.runtime.start_container(&id).await.unwrap();
    id
}

async fn wait_exited(cri: &CriClient, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = cri.runtime.container_status(id).await.unwrap();
        if st.state == pb::ContainerState::ContainerExited as i32 {
            return;
        }
        assert!(Instant::now() < deadline, "container {id} did not exit");
        async_io::Timer::after(Duration::from_millis(100)).await;
    }
}

async fn image_ids(cri: &CriClient) -> HashSet<String> {
    cri.image
        .list_images()
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect()
}

/// ImageFsInfo's used bytes once two readings 11 s apart agree (containerd refreshes
/// snapshot usage every 10 s).
async fn settled_used(cri: &CriClient) -> u64 {
    let read = || async {
        let info = cri.image.image_fs_info().await.unwrap();
        info.image_filesystems[0].used_bytes.as_ref().unwrap().value
    };
    let mut last = read().await;
    for _ in 0..10 {
        async_io::Timer::after(Duration::from_secs(11)).await;
        let now = read().await;
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("image filesystem usage did not settle");
}

#[test]
fn image_gc_removes_lru_unprotected_images_down_to_the_low_mark() {
    let c = Containerd::start();
    let _ = env_logger::builder().is_test(true).try_init();
    let mut cfg = config(&c, "imagegc");
    const MB: u64 = 1 << 20;
    // Pads dominate the sizes: CRI sizes include the busybox layer all these images
    // share, which removing one image does not free (the policy estimates with CRI
    // sizes, as kubelet does; the next pass corrects an overestimate).
    let img = |n: &str| build_image(&format!("localhost/gc/{n}:1"), 16 * MB, &["true"]);
    let [in_use, desired, pinned, never, older, newer]: [Image; 6] =
        ["in-use", "desired", "pinned", "never", "older", "newer"].map(img);
    for i in [&in_use, &desired, &pinned, &never, &older, &newer] {
        c.import(&i.tar);
    }
    cfg.image_gc.pinned_images = vec![pinned.name.clone()];
    cfg.image_gc.high_threshold_percent = 100; // percentages off: the budget decides
    cfg.image_gc.low_threshold_percent = 90;
    cfg.image_gc.max_bytes = u64::MAX / 4; // no pressure while last-use times are recorded
    let cri = client(&cfg);
    block_on(async {
        let t0 = SystemTime::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let keep_desired = [desired.name.as_str(), c.test_image()];
        let sb_cfg = sandbox_config(&cfg, "default", "imgs", "uid-imgs", true);
        let sb = cri
            .runtime
            .run_pod_sandbox(sb_cfg.clone(), "")
            .await
            .unwrap();
        let mut gc = ImageGc::new(&cfg);
        // Containers: `in-use` stays; `older` and `newer` are used, then removed in turn,
        // so their last-use times differ (passes at simulated times).
        let keep =
            run_container(&cri, &sb, &sb_cfg, "keep", 0, &in_use.name, &["true"], true).await;
        let c_older =
            run_container(&cri, &sb, &sb_cfg, "older", 0, &older.name, &["true"], true).await;
        let c_newer =
            run_container(&cri, &sb, &sb_cfg, "newer", 0, &newer.name, &["true"], true).await;
        let r = gc.pass(&cri, &keep_desired, at(0)).await.unwrap();
        assert!(r.to_free.is_none() && r.removed.is_empty(), "{r:?}");
        assert!(r.records_written, "the first listing is saved");
        wait_exited(&cri, &c_older).await;
        cri.runtime.remove_container(&c_older).await.unwrap();
        let r = gc.pass(&cri, &keep_desired, at(100)).await.unwrap();
        assert!(r.records_written, "an image stopped being used: saved");
        wait_exited(&cri, &c_newer).await;
        cri.runtime.remove_container(&c_newer).await.unwrap();
        gc.pass(&cri, &keep_desired, at(200)).await.unwrap();
        let writes = gc.records_writes();
        for s in [300, 600, 900] {
            let r = gc.pass(&cri, &keep_desired, at(s)).await.unwrap();
            assert!(!r.records_written, "nothing changed: no write at t+{s}");
        }
        assert_eq!(gc.records_writes(), writes);
        assert_eq!(gc.records().get(&older.id).unwrap().last_used, unix(at(0)));
        assert_eq!(
            gc.records().get(&newer.id).unwrap().last_used,
            unix(at(100))
        );

        // An agent restart (records come from the state dir) with a budget that needs
        // `never` and `older` gone but not `newer`: LRU order is never, older, newer.
        let used = settled_used(&cri).await;
        let target = used - never.size - older.size + newer.size / 2;
        cfg.image_gc.max_bytes = target * 100 / 90;
        let mut gc = ImageGc::new(&cfg);
        let before = image_ids(&cri).await;
        let r = gc.pass(&cri, &keep_desired, at(1000)).await.unwrap();
        let removed: Vec<&str> = r.removed.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(removed, [never.id.as_str(), older.id.as_str()], "{r:?}");
        assert!(r.failed.is_empty(), "{r:?}");
        let after = image_ids(&cri).await;
        assert_eq!(before.len() - 2, after.len());
        for kept in [&in_use, &desired, &pinned, &newer] {
            assert!(after.contains(&kept.id), "{} was removed", kept.name);
        }
        // Down to the low mark: once containerd has counted again, usage is under it and
        // the next pass has nothing to do.
        let used_after = settled_used(&cri).await;
        assert!(
            used_after <= target,
            "used {used_after} > low mark {target}"
        );
        let r = gc.pass(&cri, &keep_desired, at(1300)).await.unwrap();
        assert!(r.to_free.is_none(), "{r:?}");

        // The desired pod goes away: its image becomes removable (never used: first in
        // LRU order), everything protected stays.
        cfg.image_gc.max_bytes = (used_after - desired.size / 2) * 100 / 90;
        let mut gc = ImageGc::new(&cfg);
        let r = gc.pass(&cri, &[c.test_image()], at(1600)).await.unwrap();
        let removed: Vec<&str> = r.removed.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(removed, [desired.id.as_str()], "{r:?}");
        // Under heavy pressure, protected images still stay.
        cfg.image_gc.max_bytes = 1;
        let mut gc = ImageGc::new(&cfg);
        gc.pass(&cri, &[c.test_image()], at(1900)).await.unwrap();
        let left = image_ids(&cri).await;
        for kept in [&in_use, &pinned] {
            assert!(left.contains(&kept.id), "{} was removed", kept.name);
        }
        let names: Vec<String> = cri
            .image
            .list_images()
            .await
            .unwrap()
            .into_iter()
            .flat_map(|i| i.repo_tags)
            .collect();
        assert!(names.iter().any(|n| n == c.sandbox_image()), "{names:?}");
        assert!(names.iter().any(|n| n == c.test_image()), "{names:?}");
        assert!(
            !left.contains(&newer.id),
            "newer is unprotected and should go under pressure"
        );
        wait_exited(&cri, &keep).await;
        cri.runtime.remove_container(&keep).await.unwrap();
    });
}

/// An image already present when the agent first starts (no
/// images.json yet) is first seen at that pass, so minAge protects it like any other.
#[test]
fn image_gc_min_age_protects_images_present_at_the_first_start() {
    let c = Containerd::start();
    let mut cfg = config(&c, "firststart");
    let early = build_image("localhost/gc/early:1", 1 << 20, &["true"]);
    c.import(&early.tar);
    cfg.image_gc.high_threshold_percent = 100;
    cfg.image_gc.low_threshold_percent = 90;
    cfg.image_gc.max_bytes = 1; // under pressure from the first pass on
    cfg.image_gc.min_age = Duration::from_secs(120);
    let cri = client(&cfg);
    block_on(async {
        // containerd counts snapshot usage every 10 s: wait for a first count, so the
        // pass sees the pressure.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let info = cri.image.image_fs_info().await.unwrap();
            if info.image_filesystems[0].used_bytes.as_ref().unwrap().value > 0 {
                break;
            }
            assert!(Instant::now() < deadline, "image filesystem usage stays 0");
            async_io::Timer::after(Duration::from_millis(200)).await;
        }
        let t0 = SystemTime::now();
        let mut gc = ImageGc::new(&cfg);
        let r = gc.pass(&cri, &[c.test_image()], t0).await.unwrap();
        assert!(r.to_free.is_some(), "{r:?}");
        assert!(
            r.removed.iter().all(|(id, _)| id != &early.id),
            "removed at the first pass despite minAge: {r:?}"
        );
        assert_eq!(
            gc.records().get(&early.id).unwrap().first_detected,
            unix(t0)
        );
        // The first-seen time is saved: an agent restart does not make it young again
        // nor old, and once minAge has passed the image may go.
        let mut gc = ImageGc::new(&cfg);
        let r = gc
            .pass(&cri, &[c.test_image()], t0 + Duration::from_secs(60))
            .await
            .unwrap();
        assert!(r.removed.iter().all(|(id, _)| id != &early.id), "{r:?}");
        let r = gc
            .pass(&cri, &[c.test_image()], t0 + Duration::from_secs(121))
            .await
            .unwrap();
        assert!(
            r.removed.iter().any(|(id, _)| id == &early.id),
            "not removed once older than minAge: {r:?}"
        );
        assert!(!image_ids(&cri).await.contains(&early.id));
    });
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()
}

#[test]
fn container_gc_keeps_the_newest_dead_and_cleans_deleted_pods() {
    // A private instance: container GC acts on every pod of ours that is not desired,
    // which on the shared instance would include other tests' pods.
    let c = &Containerd::start();
    let cfg = config(c, "ctrgc");
    let cri = client(&cfg);
    block_on(async {
        let uid = "uid-ctrgc";
        let sb_cfg = sandbox_config(&cfg, "default", "crash", uid, true);
        let sb = cri
            .runtime
            .run_pod_sandbox(sb_cfg.clone(), "")
            .await
            .unwrap();
        let mut ids = Vec::new();
        for attempt in 0..4 {
            let id = run_container(
                &cri,
                &sb,
                &sb_cfg,
                "app",
                attempt,
                c.test_image(),
                &["sh", "-c", "echo run; exit 3"],
                true,
            )
            .await;
            wait_exited(&cri, &id).await;
            ids.push(id);
        }
        // A foreign sandbox and container (another agent's: kubelet's labels, a pod uid
        // not desired here, not our mark) that must never be touched.
        let mut f_cfg = sandbox_config(&cfg, "default", "foreign", "uid-foreign", false);
        f_cfg.log_directory = c.dir().join("foreign-logs").display().to_string();
        let f_sb = cri
            .runtime
            .run_pod_sandbox(f_cfg.clone(), "")
            .await
            .unwrap();
        let f_ctr = run_container(
            &cri,
            &f_sb,
            &f_cfg,
            "x",
            0,
            c.test_image(),
            &["true"],
            false,
        )
        .await;
        wait_exited(&cri, &f_ctr).await;
        // Volume data of the pod.
        let vol = cfg
            .pods_dir
            .join(uid)
            .join("volumes/kubernetes.io~empty-dir/data");
        std::fs::create_dir_all(&vol).unwrap();
        std::fs::write(vol.join("f"), b"data").unwrap();
        let log_dir = cfg.pod_logs_dir.join(format!("default_crash_{uid}"));

        let desired = HashSet::from([uid]);
        let r = tinylet::gc::container::pass(&cri.runtime, &cfg, &desired, SystemTime::now())
            .await
            .unwrap();
        assert_eq!(r.removed_containers, ids[..3], "{r:?}");
        assert!(
            r.removed_sandboxes.is_empty() && r.failed.is_empty(),
            "{r:?}"
        );
        let left: HashSet<String> = cri
            .runtime
            .list_containers(None)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert!(left.contains(&ids[3]) && left.contains(&f_ctr));
        for gone in &ids[..3] {
            assert!(!left.contains(gone));
        }
        // Their log files went with them; the newest stays for --previous.
        let mut logs: Vec<_> = std::fs::read_dir(log_dir.join("app"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        logs.sort();
        assert_eq!(logs, ["3.log"]);
        assert!(vol.exists(), "a desired pod's volumes stay");
        // So did their termination-message files: the newest container's is left.
        let term_dir = termination::container_dir(&cfg.pods_dir, uid, "app");
        let left_files = std::fs::read_dir(&term_dir).unwrap().count();
        assert_eq!(left_files, 1, "{}", term_dir.display());
        let newest = cri.runtime.container_status(&ids[3]).await.unwrap();
        let file = termination::agent_file(&newest, &cfg.pods_dir).unwrap();
        assert!(file.exists(), "{}", file.display());

        // A second pass changes nothing.
        let r = tinylet::gc::container::pass(&cri.runtime, &cfg, &desired, SystemTime::now())
            .await
            .unwrap();
        assert!(r.removed_containers.is_empty() && r.removed_sandboxes.is_empty());

        // The pod is deleted: the agent stops its sandbox; GC removes the rest.
        cri.runtime.stop_pod_sandbox(&sb).await.unwrap();
        let r =
            tinylet::gc::container::pass(&cri.runtime, &cfg, &HashSet::new(), SystemTime::now())
                .await
                .unwrap();
        assert_eq!(r.removed_containers, [ids[3].clone()], "{r:?}");
        assert_eq!(r.removed_sandboxes, std::slice::from_ref(&sb), "{r:?}");
        assert!(!log_dir.exists(), "log dir of the deleted pod remains");
        assert!(
            !cfg.pods_dir.join(uid).exists(),
            "volumes of the deleted pod remain"
        );
        let sandboxes: Vec<String> = cri
            .runtime
            .list_pod_sandbox(None)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert!(sandboxes.contains(&f_sb) && !sandboxes.contains(&sb));
        let containers: Vec<String> = cri
            .runtime
            .list_containers(None)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert!(containers.contains(&f_ctr), "foreign container removed");
        cri.runtime.remove_container(&f_ctr).await.unwrap();
        cri.runtime.stop_pod_sandbox(&f_sb).await.unwrap();
        cri.runtime.remove_pod_sandbox(&f_sb).await.unwrap();
    });
}

/// The sequence numbers of `line N` lines in `text`.
///
/// The first line may be the tail of a line whose head was rotated away: containerd's
/// ReopenContainerLog closes the old logger mid-chunk, which writes what it holds as a
/// `P` record into the (now rotated) old file and the rest as an `F` record into the new
/// one. The reader joins them across files, but once the old file is deleted only the
/// tail remains (kubelet shows the same). Such a tail must end the line just before the
/// next complete one.
fn sequence(text: &str) -> Vec<u64> {
    let mut lines: Vec<&str> = text.lines().collect();
    if let [first, second, ..] = lines[..] {
        if !first.starts_with("line ") {
            let next: u64 = second
                .strip_prefix("line ")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unexpected line {second:?}"));
            let whole = format!("line {}", next.wrapping_sub(1));
            assert!(
                !first.is_empty() && whole.ends_with(first),
                "first line {first:?} is not the tail of {whole:?}"
            );
            lines.remove(0);
        }
    }
    lines
        .into_iter()
        .map(|l| {
            l.strip_prefix("line ")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unexpected line {l:?}"))
        })
        .collect()
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn log_rotation_bounds_files_and_loses_no_lines() {
    let c = Containerd::shared();
    let cfg = config(c, "logrot");
    let cri = client(&cfg);
    const LINES: u64 = 300_000;
    const MAX_FILES: u32 = 4;
    block_on(async {
        let sb_cfg = sandbox_config(&cfg, "default", "chatty", "uid-logrot", true);
        let sb = cri
            .runtime
            .run_pod_sandbox(sb_cfg.clone(), "")
            .await
            .unwrap();
        // A pause every 20,000 lines: the writer spans several rotation passes even on
        // a fast, idle machine (a writer done before the third pass rotates too little
        // for old files to go).
        let script = format!(
            "i=0; while [ $i -lt {LINES} ]; do echo line $i; i=$((i+1)); \
             [ $((i % 20000)) -eq 0 ] && sleep 0.2; done"
        );
        let id = run_container(
            &cri,
            &sb,
            &sb_cfg,
            "writer",
            0,
            c.test_image(),
            &["sh", "-c", &script],
            true,
        )
        .await;
        let dir: PathBuf = cfg.pod_logs_dir.join("default_chatty_uid-logrot/writer");
        let mut rot = LogRotator::new(64 << 10, MAX_FILES, agent_mark::mark(&cfg.state_dir));
        let (mut rotations, mut max_seen) = (0, 0);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let st = cri.runtime.container_status(&id).await.unwrap();
            let running = st.state == pb::ContainerState::ContainerRunning as i32;
            let r = rot.pass(&cri.runtime).await.unwrap();
            assert!(r.failed.is_empty(), "{r:?}");
            rotations += r.rotated.len();
            max_seen = max_seen.max(count_files(&dir));
            assert!(
                count_files(&dir) <= MAX_FILES as usize,
                "{:?}",
                std::fs::read_dir(&dir).unwrap().collect::<Vec<_>>()
            );
            if !running {
                break;
            }
            assert!(Instant::now() < deadline, "writer did not finish");
            async_io::Timer::after(Duration::from_millis(300)).await;
        }
        assert!(rotations >= 2, "only {rotations} rotations");
        assert!(max_seen >= 2);
        // What `tinylet logs` shows: contiguous numbers ending with the last line.
        let files = files::instance_files(&dir, 0).unwrap();
        let mut out = Vec::new();
        let st = read::read_files(&files, &read::ReadOptions::default(), &mut out).unwrap();
        assert_eq!(st.bad, 0);
        let seq = sequence(&String::from_utf8(out).unwrap());
        let first = *seq.first().unwrap();
        assert!(
            first > 0 || rotations < MAX_FILES as usize,
            "{rotations} rotations, so old files should have been removed"
        );
        let want: Vec<u64> = (first..LINES).collect();
        assert!(
            seq == want,
            "lines lost: {} lines from {first}, want {}",
            seq.len(),
            want.len()
        );
        cri.runtime.remove_container(&id).await.unwrap();
        cri.runtime.stop_pod_sandbox(&sb).await.unwrap();
        cri.runtime.remove_pod_sandbox(&sb).await.unwrap();
    });
}
