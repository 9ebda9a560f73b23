//! The flat-file store through its public API, on scratch directories: layout and
//! permissions, idempotent apply (zero bytes written), uid rules, quarantine, the
//! firmware-directory precedence rule, status write-on-change, temp files, change watch.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tinylet::model::status::PodPhase;
use tinylet::model::{parse_object, Object, PodStatus};
use tinylet::store::{Applied, Deleted, Kind, Origin, Store, StoreError};

/// A fresh directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("tinylet-store-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
    fn state(&self) -> PathBuf {
        self.0.join("state")
    }
    fn firmware(&self) -> PathBuf {
        self.0.join("firmware")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pod_json(ns: &str, name: &str, image: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{ns}"}},
            "spec":{{"containers":[{{"name":"c","image":"{image}"}}]}}}}"#
    )
}

fn pod(ns: &str, name: &str, image: &str) -> Object {
    parse_object("test", pod_json(ns, name, image).as_bytes()).unwrap()
}

fn configmap(name: &str, value: &str) -> Object {
    let j = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"{value}"}}}}"#
    );
    parse_object("test", j.as_bytes()).unwrap()
}

fn secret(name: &str) -> Object {
    let j = format!(
        r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"{name}"}},"data":{{"password":"aHVudGVyMg=="}}}}"#
    );
    parse_object("test", j.as_bytes()).unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn image_of(store: &mut Store, ns: &str, name: &str) -> String {
    match store.get(Kind::Pod, ns, name).unwrap().unwrap().object {
        Object::Pod(p) => p.spec.containers[0].image.clone(),
        _ => unreachable!(),
    }
}

fn uid_of(store: &mut Store, kind: Kind, ns: &str, name: &str) -> String {
    store
        .get(kind, ns, name)
        .unwrap()
        .unwrap()
        .object
        .meta()
        .uid
        .clone()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn layout_and_permissions() {
    let s = Scratch::new("layout");
    let mut store = Store::open_at(&s.state(), &[]).unwrap();
    store.apply(pod("kube-system", "web", "nginx")).unwrap();
    store.apply(configmap("cfg", "v")).unwrap();
    store.apply(secret("creds")).unwrap();
    let st = s.state();
    assert!(st.join("desired/pods/kube-system_web.json").is_file());
    assert!(st.join("desired/configmaps/default_cfg.json").is_file());
    assert!(st.join("desired/secrets/default_creds.json").is_file());
    assert_eq!(mode(&st), 0o700, "state dir created 0700");
    assert_eq!(mode(&st.join("desired/secrets")), 0o700);
    assert_eq!(mode(&st.join("desired/secrets/default_creds.json")), 0o600);
    assert_eq!(mode(&st.join("quarantine")), 0o700);
    // Plain files are 0644 (less under a stricter umask): never writable by others.
    let plain = mode(&st.join("desired/pods/kube-system_web.json"));
    assert_eq!((plain & !0o644, plain & 0o600), (0, 0o600), "{plain:o}");
    // A secrets directory loosened by hand is tightened again at open.
    std::fs::set_permissions(
        st.join("desired/secrets"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    drop(Store::open_at(&st, &[]).unwrap());
    assert_eq!(mode(&st.join("desired/secrets")), 0o700);
    // The stored file is the object as the model serializes it, with uid and time.
    let text = std::fs::read_to_string(st.join("desired/pods/kube-system_web.json")).unwrap();
    let back = parse_object("stored", text.as_bytes()).unwrap();
    assert_eq!(back.name(), "web");
    assert!(!back.meta().uid.is_empty());
    assert!(back.meta().creation_timestamp.is_some());
}

#[test]
fn reapply_is_unchanged_and_writes_zero_bytes() {
    let s = Scratch::new("idem");
    let mut store = Store::open_at(&s.state(), &[]).unwrap();
    assert_eq!(
        store.apply(pod("default", "web", "nginx:1")).unwrap(),
        Applied::Created
    );
    let written = store.bytes_written();
    assert!(written > 0);
    let path = s.state().join("desired/pods/default_web.json");
    let before = std::fs::metadata(&path).unwrap();
    for _ in 0..5 {
        assert_eq!(
            store.apply(pod("default", "web", "nginx:1")).unwrap(),
            Applied::Unchanged
        );
    }
    // Another process (a new Store) re-applying writes nothing either.
    let mut other = Store::open_at(&s.state(), &[]).unwrap();
    assert_eq!(
        other.apply(pod("default", "web", "nginx:1")).unwrap(),
        Applied::Unchanged
    );
    assert_eq!(store.bytes_written(), written);
    assert_eq!(other.bytes_written(), 0);
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(
        (before.ino(), before.mtime_nsec()),
        (after.ino(), after.mtime_nsec())
    );
    assert_eq!(
        store.apply(pod("default", "web", "nginx:2")).unwrap(),
        Applied::Updated
    );
    assert!(store.bytes_written() > written);
}

#[test]
fn uid_and_creation_time_are_kept_for_the_pods_life() {
    let s = Scratch::new("uid");
    let mut store = Store::open_at(&s.state(), &[]).unwrap();
    store.apply(pod("default", "web", "nginx:1")).unwrap();
    let uid = uid_of(&mut store, Kind::Pod, "default", "web");
    assert_eq!(uid.len(), 36);
    assert_eq!(uid.as_bytes()[14], b'4', "random uids are UUID v4: {uid}");
    let created = store
        .get(Kind::Pod, "default", "web")
        .unwrap()
        .unwrap()
        .object
        .meta()
        .creation_timestamp
        .clone();
    assert_eq!(
        store.apply(pod("default", "web", "nginx:2")).unwrap(),
        Applied::Updated
    );
    assert_eq!(uid_of(&mut store, Kind::Pod, "default", "web"), uid);
    let after = store.get(Kind::Pod, "default", "web").unwrap().unwrap();
    assert_eq!(after.object.meta().creation_timestamp, created);
    // The same uid given explicitly is an update too.
    let mut same = pod("default", "web", "nginx:3");
    same.meta_mut().uid = uid.clone();
    assert_eq!(store.apply(same).unwrap(), Applied::Updated);
    // A different explicit uid is a new pod under the same name.
    let mut other = pod("default", "web", "nginx:3");
    other.meta_mut().uid = "0a0a0a0a-0000-4000-8000-000000000001".into();
    assert_eq!(store.apply(other).unwrap(), Applied::Replaced);
    assert_eq!(
        uid_of(&mut store, Kind::Pod, "default", "web"),
        "0a0a0a0a-0000-4000-8000-000000000001"
    );
    // Two pods never share a uid.
    store.apply(pod("default", "db", "postgres")).unwrap();
    assert_ne!(uid_of(&mut store, Kind::Pod, "default", "db"), uid);
}

#[test]
fn bad_files_are_quarantined_and_the_rest_keep_working() {
    let s = Scratch::new("quarantine");
    let mut store = Store::open_at(&s.state(), &[]).unwrap();
    store.apply(pod("default", "good", "nginx")).unwrap();
    let pods = s.state().join("desired/pods");
    std::fs::write(pods.join("default_garbage.json"), b"{not json").unwrap();
    let no_containers = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"invalid"},"spec":{"containers":[]}}"#;
    std::fs::write(pods.join("default_invalid.json"), no_containers).unwrap();
    std::fs::write(
        pods.join("default_other.json"),
        pod_json("default", "mismatch", "x").as_bytes(),
    )
    .unwrap();
    std::fs::write(
        pods.join("nonsense.json"),
        pod_json("default", "x", "x").as_bytes(),
    )
    .unwrap();
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}"#;
    std::fs::write(pods.join("default_cm.json"), cm).unwrap();
    std::fs::write(pods.join("README"), b"not an object file: ignored").unwrap();

    let desired = store.desired_pods();
    let got: Vec<&str> = desired.iter().map(|p| p.metadata.name.as_str()).collect();
    assert_eq!(got, ["good"]);
    assert_eq!(names(&pods), ["README", "default_good.json"]);
    let q = names(&s.state().join("quarantine"));
    assert_eq!(q.len(), 5, "{q:?}");
    for suffix in [
        "-pods-default_garbage.json",
        "-pods-default_invalid.json",
        "-pods-default_other.json",
        "-pods-nonsense.json",
        "-pods-default_cm.json",
    ] {
        assert!(q.iter().any(|n| n.ends_with(suffix)), "{suffix} in {q:?}");
    }
    // Quarantine keeps only the newest 32 files.
    for i in 0..40 {
        std::fs::write(pods.join(format!("default_bad{i}.json")), b"[]").unwrap();
    }
    assert_eq!(store.desired_pods().len(), 1);
    assert_eq!(names(&s.state().join("quarantine")).len(), 32);
    // A pod whose file went bad can be applied again.
    std::fs::write(pods.join("default_good.json"), b"\0\0\0").unwrap();
    assert!(store.get(Kind::Pod, "default", "good").unwrap().is_none());
    assert_eq!(
        store.apply(pod("default", "good", "nginx")).unwrap(),
        Applied::Created
    );
}

#[test]
fn firmware_pods_are_overridden_by_apply_and_come_back_on_delete() {
    let s = Scratch::new("firmware");
    let fw = s.firmware();
    std::fs::create_dir_all(&fw).unwrap();
    std::fs::write(
        fw.join("10-agent.json"),
        pod_json("default", "agent", "agent:1"),
    )
    .unwrap();
    std::fs::write(fw.join("20-broken.json"), b"{").unwrap();
    std::fs::write(
        fw.join("30-dup.json"),
        pod_json("default", "agent", "agent:dup"),
    )
    .unwrap();
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"agent-cfg"},"data":{"a":"1"}}"#;
    std::fs::write(fw.join("40-cfg.json"), cm).unwrap();
    let dirs = [fw.clone(), s.0.join("missing-dir")];

    let mut store = Store::open_at(&s.state(), &dirs).unwrap();
    let pods = store.list(Kind::Pod);
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0].origin, Origin::Firmware(fw.join("10-agent.json")));
    let fw_uid = pods[0].object.meta().uid.clone();
    assert_eq!(fw_uid.as_bytes()[14], b'8', "derived uid: {fw_uid}");
    assert!(pods[0].object.meta().creation_timestamp.is_some());
    assert_eq!(image_of(&mut store, "default", "agent"), "agent:1");
    // The uid is derived, not stored: the same after a "reboot".
    let mut again = Store::open_at(&s.state(), &dirs).unwrap();
    assert_eq!(uid_of(&mut again, Kind::Pod, "default", "agent"), fw_uid);
    assert!(names(&s.state().join("desired/pods")).is_empty());
    assert!(store.get_configmap("default", "agent-cfg").is_some());

    // Applying the firmware pod as it is writes nothing.
    assert_eq!(
        store.apply(pod("default", "agent", "agent:1")).unwrap(),
        Applied::Unchanged
    );
    assert_eq!(store.bytes_written(), 0);
    // An override wins and keeps the firmware pod's uid.
    assert_eq!(
        store.apply(pod("default", "agent", "agent:2")).unwrap(),
        Applied::Updated
    );
    assert_eq!(image_of(&mut store, "default", "agent"), "agent:2");
    assert_eq!(uid_of(&mut store, Kind::Pod, "default", "agent"), fw_uid);
    let desired = store.desired_pods();
    assert_eq!(desired.len(), 1);
    assert_eq!(desired[0].spec.containers[0].image, "agent:2");
    assert_eq!(store.list(Kind::Pod)[0].origin, Origin::State);
    // Deleting the override brings the firmware pod back; deleting that is refused.
    assert_eq!(
        store.delete(Kind::Pod, "default", "agent").unwrap(),
        Deleted::FirmwareRestored(fw.join("10-agent.json"))
    );
    assert_eq!(image_of(&mut store, "default", "agent"), "agent:1");
    match store.delete(Kind::Pod, "default", "agent") {
        Err(e @ StoreError::ReadOnly { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("10-agent.json") && msg.contains("read-only"),
                "{msg}"
            );
        }
        other => panic!("expected ReadOnly, got {other:?}"),
    }
    // Bad firmware files stay where they are.
    assert!(fw.join("20-broken.json").exists());
    assert!(names(&s.state().join("quarantine")).is_empty());
}

#[test]
fn status_is_written_only_when_it_changes() {
    let s = Scratch::new("status");
    let mut store = Store::open_at(&s.state(), &[]).unwrap();
    let mut st = PodStatus {
        phase: Some(PodPhase::Pending),
        ..Default::default()
    };
    assert!(store.write_status("default", "web", &st).unwrap());
    let first = store.bytes_written();
    assert!(first > 0);
    let path = s.state().join("status/default_web.json");
    let ino = std::fs::metadata(&path).unwrap().ino();
    for _ in 0..100 {
        assert!(!store.write_status("default", "web", &st).unwrap());
    }
    assert_eq!(
        store.bytes_written(),
        first,
        "unchanged status writes 0 bytes"
    );
    // After a restart the first unchanged report reads the file and writes nothing.
    let mut restarted = Store::open_at(&s.state(), &[]).unwrap();
    assert!(!restarted.write_status("default", "web", &st).unwrap());
    assert_eq!(restarted.bytes_written(), 0);
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);
    st.phase = Some(PodPhase::Running);
    assert!(restarted.write_status("default", "web", &st).unwrap());
    assert_eq!(restarted.read_status("default", "web"), Some(st.clone()));
    assert_eq!(
        restarted.status_names().unwrap(),
        [("default".to_string(), "web".to_string())]
    );
    assert!(restarted.remove_status("default", "web").unwrap());
    assert!(!restarted.remove_status("default", "web").unwrap());
    assert_eq!(restarted.read_status("default", "web"), None);
    // Written again after removal, even though the content was seen before.
    assert!(restarted.write_status("default", "web", &st).unwrap());
    // A damaged status file reads as absent and is replaced by the next report.
    std::fs::write(&path, b"garbage").unwrap();
    let mut third = Store::open_at(&s.state(), &[]).unwrap();
    assert_eq!(third.read_status("default", "web"), None);
    assert!(third.write_status("default", "web", &st).unwrap());
    assert_eq!(third.read_status("default", "web"), Some(st));
}

/// A sparse file of `len` bytes starting with `head`: the size of the issue's 300 MB
/// file without writing 300 MB to the test machine's disk.
fn huge_file(path: &Path, head: &str, len: u64) {
    std::fs::write(path, head).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

#[test]
fn oversized_and_special_files_are_refused_unread() {
    const HUGE: u64 = 300 << 20;
    let s = Scratch::new("oversized");
    let fw = s.firmware();
    std::fs::create_dir_all(&fw).unwrap();
    huge_file(
        &fw.join("10-huge.json"),
        &pod_json("default", "fw-huge", "x"),
        HUGE,
    );
    std::fs::write(fw.join("20-ok.json"), pod_json("default", "fw-ok", "x")).unwrap();
    let mut store = Store::open_at(&s.state(), std::slice::from_ref(&fw)).unwrap();
    store.apply(pod("default", "good", "nginx")).unwrap();
    let pods = s.state().join("desired/pods");
    // A valid object at the limit is read; one byte more is refused without parsing.
    let padded = |n: usize| {
        let mut text = pod_json("default", "edge", "nginx");
        text.push_str(&" ".repeat(n - text.len()));
        text
    };
    std::fs::write(pods.join("default_edge.json"), padded(1 << 20)).unwrap();
    huge_file(
        &pods.join("default_huge.json"),
        &pod_json("default", "huge", "x"),
        HUGE,
    );
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        pods.join("default_fifo.json"),
        rustix::fs::Mode::from(0o644),
    )
    .unwrap();

    let start = std::time::Instant::now();
    let desired = store.desired_pods();
    let got: Vec<&str> = desired.iter().map(|p| p.metadata.name.as_str()).collect();
    assert_eq!(got, ["edge", "fw-ok", "good"]);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    // The huge file is quarantined (moved, not copied); the FIFO is skipped, never
    // opened for a blocking read; the firmware's is left where it is.
    let q = names(&s.state().join("quarantine"));
    assert!(
        q.len() == 1 && q[0].ends_with("-pods-default_huge.json"),
        "{q:?}"
    );
    assert_eq!(
        names(&pods),
        [
            "default_edge.json",
            "default_fifo.json",
            "default_good.json"
        ]
    );
    assert!(fw.join("10-huge.json").exists());
    std::fs::write(pods.join("default_edge.json"), padded((1 << 20) + 1)).unwrap();
    assert_eq!(store.desired_pods().len(), 2);
    assert_eq!(names(&s.state().join("quarantine")).len(), 2);

    // A huge status file reads as absent and is replaced by the next report.
    let st = PodStatus {
        phase: Some(PodPhase::Running),
        ..Default::default()
    };
    let status = s.state().join("status/default_good.json");
    huge_file(&status, "{}", HUGE);
    assert_eq!(store.read_status("default", "good"), None);
    assert!(store.write_status("default", "good", &st).unwrap());
    assert_eq!(store.read_status("default", "good"), Some(st));
}

#[test]
fn temp_files_are_skipped_and_stale_ones_cleaned() {
    let s = Scratch::new("temps");
    drop(Store::open_at(&s.state(), &[]).unwrap());
    let pods = s.state().join("desired/pods");
    // A dead writer's leftover (pid far above pid_max) and a live one's (pid 1).
    std::fs::write(pods.join(".tmp-2147483646-7"), b"{half a fi").unwrap();
    std::fs::write(pods.join(".tmp-1-3"), b"{in flight").unwrap();
    std::fs::write(s.state().join("status/.tmp-2147483646-1"), b"x").unwrap();
    let mut store = Store::open_at(&s.state(), &[]).unwrap();
    assert_eq!(names(&pods), [".tmp-1-3"]);
    assert!(names(&s.state().join("status")).is_empty());
    store.apply(pod("default", "web", "nginx")).unwrap();
    assert_eq!(store.desired_pods().len(), 1);
    assert_eq!(names(&pods), [".tmp-1-3", "default_web.json"]);
    assert!(
        names(&s.state().join("quarantine")).is_empty(),
        "temp files are never quarantined"
    );
}

#[test]
fn change_watch_sees_other_writers_only_when_something_changed() {
    let s = Scratch::new("watch");
    let fw = s.firmware();
    std::fs::create_dir_all(&fw).unwrap();
    let mut agent = Store::open_at(&s.state(), std::slice::from_ref(&fw)).unwrap();
    assert!(agent.changed(), "first poll");
    assert!(!agent.changed());
    assert!(agent.watch_fd().is_some(), "inotify is available here");
    let mut cli = Store::open_at(&s.state(), &[]).unwrap();
    cli.apply(pod("default", "web", "nginx")).unwrap();
    assert!(agent.changed());
    assert!(!agent.changed());
    cli.apply(pod("default", "web", "nginx")).unwrap();
    assert!(!agent.changed(), "an unchanged apply is no change");
    agent
        .write_status("default", "web", &PodStatus::default())
        .unwrap();
    assert!(!agent.changed(), "status files are not desired state");
    cli.apply(secret("s")).unwrap();
    assert!(agent.changed());
    std::fs::write(fw.join("p.json"), pod_json("default", "fw", "x")).unwrap();
    assert!(agent.changed(), "firmware directories are watched too");
    cli.delete(Kind::Pod, "default", "web").unwrap();
    assert!(agent.changed());
    assert!(!agent.changed());
}

#[test]
fn names_are_checked_at_the_path_boundary() {
    let s = Scratch::new("names");
    let mut store = Store::open_at(&s.state(), &[]).unwrap();
    for (ns, name) in [
        ("default", "../../etc"),
        ("..", "x"),
        ("a_b", "c"),
        ("default", ".hidden"),
    ] {
        let mut obj = pod("default", "ok", "nginx");
        obj.meta_mut().namespace = ns.into();
        obj.meta_mut().name = name.into();
        match store.apply(obj) {
            Err(StoreError::Invalid(_)) => {}
            other => panic!("{ns}/{name}: expected Invalid, got {other:?}"),
        }
        assert!(matches!(
            store.delete(Kind::Pod, ns, name),
            Err(StoreError::Invalid(_))
        ));
        assert!(store.write_status(ns, name, &PodStatus::default()).is_err());
    }
    assert_eq!(store.bytes_written(), 0);
    assert!(names(&s.state().join("desired/pods")).is_empty());
    assert!(!s.0.join("etc").exists());
}

#[test]
fn configmaps_and_secrets_for_the_agent() {
    let s = Scratch::new("data");
    let mut store = Store::open_at(&s.state(), &[]).unwrap();
    store.apply(configmap("cfg", "one")).unwrap();
    store.apply(secret("creds")).unwrap();
    let cm = store.get_configmap("default", "cfg").unwrap();
    assert_eq!(cm.get("k"), Some(b"one".to_vec()));
    let sec = store.get_secret("default", "creds").unwrap();
    assert_eq!(sec.get("password"), Some(b"hunter2".to_vec()));
    assert!(store.get_configmap("default", "missing").is_none());
    assert!(store.get_secret("other", "creds").is_none());
    assert_eq!(
        store.apply(configmap("cfg", "two")).unwrap(),
        Applied::Updated
    );
    assert_eq!(
        store.get_configmap("default", "cfg").unwrap().get("k"),
        Some(b"two".to_vec())
    );
    assert_eq!(
        store.delete(Kind::Secret, "default", "creds").unwrap(),
        Deleted::Removed
    );
    assert!(matches!(
        store.delete(Kind::Secret, "default", "creds"),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn read_only_store_changes_nothing() {
    let s = Scratch::new("readonly");
    let mut ro = Store::open_read_only_at(&s.state(), &[]);
    assert!(ro.list(Kind::Pod).is_empty());
    assert!(ro.get(Kind::Pod, "default", "web").unwrap().is_none());
    assert!(!s.state().exists(), "nothing created");
    let mut rw = Store::open_at(&s.state(), &[]).unwrap();
    rw.apply(pod("default", "web", "nginx")).unwrap();
    let pods = s.state().join("desired/pods");
    std::fs::write(pods.join("default_bad.json"), b"{").unwrap();
    std::fs::write(pods.join(".tmp-2147483646-0"), b"{").unwrap();
    let mut ro = Store::open_read_only_at(&s.state(), &[]);
    let names_seen: Vec<String> = ro
        .list(Kind::Pod)
        .iter()
        .map(|e| e.object.name().to_string())
        .collect();
    assert_eq!(names_seen, ["web"]);
    assert_eq!(
        names(&pods),
        [".tmp-2147483646-0", "default_bad.json", "default_web.json"]
    );
    assert!(matches!(
        ro.apply(pod("default", "x", "y")),
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        ro.delete(Kind::Pod, "default", "web"),
        Err(StoreError::Invalid(_))
    ));
    assert!(ro
        .write_status("default", "web", &PodStatus::default())
        .is_err());
    assert!(names(&s.state().join("status")).is_empty());
}

fn pod_with_uid(ns: &str, name: &str, uid: &str) -> Object {
    let j = format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{ns}","uid":"{uid}"}},
            "spec":{{"containers":[{{"name":"c","image":"nginx"}}]}}}}"#
    );
    parse_object("test", j.as_bytes()).unwrap()
}

/// Two pods never share a uid. `apply` refuses the second (against
/// stored and firmware pods); files that share one anyway (written by hand, baked into
/// firmware) load only the first in namespace/name order.
#[test]
fn two_pods_never_share_a_uid() {
    let s = Scratch::new("shared-uid");
    let fw = s.firmware();
    std::fs::create_dir_all(&fw).unwrap();
    let fw_pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fw","namespace":"default","uid":"fw_uid-1"},
        "spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;
    std::fs::write(fw.join("fw.json"), fw_pod).unwrap();
    let mut store = Store::open_at(&s.state(), std::slice::from_ref(&fw)).unwrap();
    assert_eq!(
        store
            .apply(pod_with_uid("default", "a", "my_pod-1"))
            .unwrap(),
        Applied::Created
    );
    // Re-applying the same pod with its uid is fine; another pod with it is not.
    assert_eq!(
        store
            .apply(pod_with_uid("default", "a", "my_pod-1"))
            .unwrap(),
        Applied::Unchanged
    );
    for (ns, name, uid, owner) in [
        ("default", "b", "my_pod-1", "pod default/a ("),
        ("other", "a", "my_pod-1", "default_a.json"),
        ("default", "c", "fw_uid-1", "pod default/fw ("),
    ] {
        let e = store.apply(pod_with_uid(ns, name, uid)).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(uid) && msg.contains(owner) && msg.contains("cannot share a uid"),
            "{msg}"
        );
        assert!(
            store.get(Kind::Pod, ns, name).unwrap().is_none(),
            "{ns}/{name} not stored"
        );
    }
    // Replacing a pod by its own name with a fresh explicit uid is still fine.
    assert_eq!(
        store
            .apply(pod_with_uid("default", "a", "my_pod-2"))
            .unwrap(),
        Applied::Replaced
    );

    // Files sharing a uid anyway: the first in namespace/name order wins.
    let pods = s.state().join("desired/pods");
    let by_hand = |ns: &str, name: &str, uid: &str| {
        let o = pod_with_uid(ns, name, uid);
        std::fs::write(pods.join(format!("{ns}_{name}.json")), o.to_json_pretty()).unwrap();
    };
    by_hand("default", "z-late", "my_pod-2");
    by_hand("aaa", "early", "fw_uid-1");
    let desired = store.desired_pods();
    let got: Vec<(String, String)> = desired
        .iter()
        .map(|p| (p.metadata.name.clone(), p.metadata.uid.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("early".to_string(), "fw_uid-1".to_string()),
            ("a".to_string(), "my_pod-2".to_string()),
        ],
        "z-late (same uid as default/a) and the firmware pod (same uid as aaa/early) skipped"
    );
    // Nothing was moved: the files are valid on their own.
    assert!(pods.join("default_z-late.json").exists());
}

/// A status file changed by someone else (garbage written in place,
/// truncated, removed, replaced by a symlink) is rewritten by the next `changes()`; the
/// agent's own writes and a steady state rewrite nothing.
#[test]
fn status_files_changed_by_others_are_repaired() {
    use std::io::Write;
    let s = Scratch::new("status-repair");
    let mut store = Store::open_at(&s.state(), &[]).unwrap();
    store.changes(); // the first poll: everything
    let st = PodStatus {
        phase: Some(PodPhase::Running),
        ..Default::default()
    };
    assert!(store.write_status("default", "web", &st).unwrap());
    let path = s.state().join("status/default_web.json");
    let good = std::fs::read(&path).unwrap();
    // A pod of another agent life, never written by this store: left alone.
    std::fs::write(s.state().join("status/default_old.json"), b"junk").unwrap();
    let written = store.bytes_written();
    store.changes();
    assert_eq!(
        store.bytes_written(),
        written,
        "own write and unknown file: no rewrite"
    );
    let mut garble = |f: &dyn Fn()| {
        f();
        let before = store.bytes_written();
        store.changes();
        assert_eq!(std::fs::read(&path).unwrap(), good, "repaired");
        assert!(store.bytes_written() > before);
        // Steady state again: nothing written.
        let after = store.bytes_written();
        for _ in 0..5 {
            store.changes();
        }
        assert_eq!(store.bytes_written(), after);
    };
    // Same size garbage, in place, file kept open (no close event).
    garble(&|| {
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all(&vec![b'x'; good.len()]).unwrap();
        std::mem::forget(f); // still open: only IN_MODIFY tells
    });
    garble(&|| {
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
    });
    garble(&|| std::fs::remove_file(&path).unwrap());
    garble(&|| {
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &path).unwrap();
    });
    assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(
        std::fs::read(s.state().join("status/default_old.json")).unwrap(),
        b"junk"
    );
    // A removed status (pod deleted) is not brought back.
    assert!(store.remove_status("default", "web").unwrap());
    let before = store.bytes_written();
    store.changes();
    assert!(!path.exists());
    assert_eq!(store.bytes_written(), before);
}

/// For the agent, a damaged pod file stays in place and is reported
/// (shadowing its firmware pod); `restore_pod` quarantines it and writes the good spec
/// back, but never over a file that was fixed or removed meanwhile.
#[test]
fn damaged_pod_files_are_reported_and_restored_not_dropped() {
    let s = Scratch::new("damaged");
    let fw = s.firmware();
    std::fs::create_dir_all(&fw).unwrap();
    std::fs::write(
        fw.join("agent.json"),
        pod_json("default", "agent", "agent:fw"),
    )
    .unwrap();
    let mut store = Store::open_at(&s.state(), std::slice::from_ref(&fw)).unwrap();
    store.apply(pod("default", "web", "nginx:1")).unwrap();
    store
        .apply(pod("default", "agent", "agent:override"))
        .unwrap();
    store.apply(pod("default", "db", "db:1")).unwrap();
    let found = store.desired_pods_keeping_damaged();
    assert!(found.damaged.is_empty());
    let web = found
        .pods
        .iter()
        .find(|p| p.metadata.name == "web")
        .unwrap()
        .clone();
    let agent = found
        .pods
        .iter()
        .find(|p| p.metadata.name == "agent")
        .unwrap()
        .clone();
    let dir = s.state().join("desired/pods");
    let good = std::fs::read(dir.join("default_web.json")).unwrap();
    // A bit flip in one, a torn write in the other, a stray bad file beside them.
    let mut flipped = good.clone();
    let at = flipped.iter().position(|b| *b == b'{').unwrap() + 3;
    flipped[at] ^= 0x40;
    std::fs::write(dir.join("default_web.json"), &flipped).unwrap();
    let ov = std::fs::read(dir.join("default_agent.json")).unwrap();
    std::fs::write(dir.join("default_agent.json"), &ov[..ov.len() / 2]).unwrap();
    std::fs::write(dir.join("stray.json"), b"{").unwrap();

    let found = store.desired_pods_keeping_damaged();
    let running: Vec<&str> = found
        .pods
        .iter()
        .map(|p| p.metadata.name.as_str())
        .collect();
    assert_eq!(
        running,
        ["db"],
        "the firmware agent pod stays shadowed by its damaged override"
    );
    let damaged: Vec<(&str, &str)> = found
        .damaged
        .iter()
        .map(|d| {
            (
                d.name.as_str(),
                d.path.file_name().unwrap().to_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        damaged,
        [("agent", "default_agent.json"), ("web", "default_web.json")]
    );
    assert!(found.damaged.iter().all(|d| !d.reason.is_empty()));
    assert!(dir.join("default_web.json").exists(), "left in place");
    let q = names(&s.state().join("quarantine"));
    assert_eq!(q.len(), 1, "only the stray file went: {q:?}");

    // Restored: the damaged copy goes to quarantine, the good spec is back.
    let moved = store.restore_pod(&web).unwrap().expect("restored");
    assert_eq!(std::fs::read(&moved).unwrap(), flipped);
    assert_eq!(std::fs::read(dir.join("default_web.json")).unwrap(), good);
    // Fixed meanwhile (applied) or removed: left as it is.
    store.apply(pod("default", "agent", "agent:new")).unwrap();
    assert_eq!(store.restore_pod(&agent).unwrap(), None);
    assert_eq!(image_of(&mut store, "default", "agent"), "agent:new");
    store.delete(Kind::Pod, "default", "web").unwrap();
    assert_eq!(store.restore_pod(&web).unwrap(), None);
    assert!(!dir.join("default_web.json").exists());
    let found = store.desired_pods_keeping_damaged();
    assert!(found.damaged.is_empty());
    assert_eq!(found.pods.len(), 2);
}
