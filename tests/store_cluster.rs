//! The store's cluster subtree through its public API, on scratch directories: cached
//! objects written only when their bytes change (secrets 0600 in 0700), desired pods as
//! local ∪ cluster with their source, a local pod's name winning over a cluster pod's,
//! lookups going to the pod's own source, `delete` refusing the cluster's objects, the
//! change watch seeing the cluster directories, and the notifications the uplink drains
//! (dirty statuses, finished terminations).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use tinylet::model::pod::Source;
use tinylet::model::{parse_object, PodStatus};
use tinylet::store::{Kind, Origin, Store, StoreError};

struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("tinylet-cluster-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
    fn open(&self) -> Store {
        Store::open_at(&self.0.join("state"), &[]).unwrap()
    }
    fn file(&self, tree: &str, kind: &str, ns: &str, name: &str) -> PathBuf {
        self.0.join(format!("state/{tree}/{kind}/{ns}_{name}.json"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pod(ns: &str, name: &str, uid: &str, extra_meta: &str) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{ns}",
            "uid":"{uid}"{extra_meta}}},
            "spec":{{"containers":[{{"name":"c","image":"busybox:1"}}]}}}}"#
    )
    .into_bytes()
}

fn configmap(ns: &str, name: &str, value: &str) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{ns}"}},
            "data":{{"k":"{value}"}}}}"#
    )
    .into_bytes()
}

fn apply(store: &mut Store, bytes: &[u8]) {
    store.apply(parse_object("test", bytes).unwrap()).unwrap();
}

#[test]
fn cached_objects_are_written_only_when_they_change() {
    let s = Scratch::new("writes");
    let mut store = s.open();
    let a = pod("d", "web", "u-1", "");
    assert!(store.put_cluster(Kind::Pod, "d", "web", &a).unwrap());
    let written = store.bytes_written();
    assert_eq!(written, a.len() as u64);
    for _ in 0..3 {
        assert!(!store.put_cluster(Kind::Pod, "d", "web", &a).unwrap());
    }
    assert_eq!(store.bytes_written(), written, "an echo costs no write");
    // A fresh store (agent restart) compares with the file: still nothing written.
    let mut again = s.open();
    assert!(!again.put_cluster(Kind::Pod, "d", "web", &a).unwrap());
    assert_eq!(again.bytes_written(), 0);
    let b = pod("d", "web", "u-1", r#","labels":{"x":"y"}"#);
    assert!(again.put_cluster(Kind::Pod, "d", "web", &b).unwrap());
    assert_eq!(
        std::fs::read(s.file("cluster", "pods", "d", "web")).unwrap(),
        b
    );

    let secret = br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"d"},"data":{"k":"dg=="}}"#;
    assert!(again.put_cluster(Kind::Secret, "d", "s", secret).unwrap());
    let file = s.file("cluster", "secrets", "d", "s");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    assert!(again.remove_cluster(Kind::Secret, "d", "s").unwrap());
    assert!(!again.remove_cluster(Kind::Secret, "d", "s").unwrap());
}

#[test]
fn desired_pods_are_local_and_cluster_pods_with_their_source() {
    let s = Scratch::new("union");
    let mut store = s.open();
    apply(&mut store, &pod("d", "local", "", ""));
    store
        .put_cluster(Kind::Pod, "d", "remote", &pod("d", "remote", "u-r", ""))
        .unwrap();
    // A cluster pod cannot claim to be local.
    let claim = r#","annotations":{"kubernetes.io/config.source":"file"}"#;
    store
        .put_cluster(Kind::Pod, "d", "sly", &pod("d", "sly", "u-s", claim))
        .unwrap();
    let found = store.desired_pods_keeping_damaged();
    let got: Vec<(String, Source)> = found
        .pods
        .iter()
        .map(|p| (p.metadata.name.clone(), p.source()))
        .collect();
    assert_eq!(
        got,
        [
            ("local".to_string(), Source::File),
            ("remote".to_string(), Source::Api),
            ("sly".to_string(), Source::Api)
        ]
    );
    let listed = store.list(Kind::Pod);
    assert_eq!(listed[1].origin, Origin::Cluster);
    let remote = store.get(Kind::Pod, "d", "remote").unwrap().unwrap();
    assert_eq!(remote.origin, Origin::Cluster);
}

#[test]
fn a_local_pod_name_wins_and_the_uplink_is_told() {
    let s = Scratch::new("shadow");
    let mut store = s.open();
    let wake = store.subscribe_status();
    store
        .put_cluster(Kind::Pod, "d", "web", &pod("d", "web", "u-c", ""))
        .unwrap();
    assert_eq!(store.desired_pods_keeping_damaged().pods.len(), 1);
    assert!(!store.cluster_pod_shadowed("d", "web"));
    assert!(!store.local_pod_exists("d", "web"));
    apply(&mut store, &pod("d", "web", "", ""));
    let pods = store.desired_pods_keeping_damaged().pods;
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0].source(), Source::File);
    assert!(store.cluster_pod_shadowed("d", "web"));
    assert!(store.local_pod_exists("d", "web"));
    assert!(wake.try_recv().is_ok(), "woken");
    assert!(store
        .take_dirty_pods()
        .contains(&("d".to_string(), "web".to_string())));
    // `get` and `list` show the local one only.
    assert_eq!(store.list(Kind::Pod).len(), 1);
    assert_eq!(
        store.get(Kind::Pod, "d", "web").unwrap().unwrap().origin,
        Origin::State
    );
}

#[test]
fn lookups_go_to_the_pods_own_source() {
    let s = Scratch::new("lookups");
    let mut store = s.open();
    apply(&mut store, &configmap("d", "cfg", "local"));
    store
        .put_cluster(
            Kind::ConfigMap,
            "d",
            "cfg",
            &configmap("d", "cfg", "cluster"),
        )
        .unwrap();
    store
        .put_cluster(
            Kind::ConfigMap,
            "d",
            "only-cluster",
            &configmap("d", "only-cluster", "c"),
        )
        .unwrap();
    let value = |c: Option<tinylet::model::ConfigMap>| c.map(|c| c.data["k"].clone());
    assert_eq!(
        value(store.configmap_for(Source::File, "d", "cfg")).as_deref(),
        Some("local")
    );
    assert_eq!(
        value(store.configmap_for(Source::Api, "d", "cfg")).as_deref(),
        Some("cluster")
    );
    assert_eq!(
        value(store.configmap_for(Source::File, "d", "only-cluster")),
        None
    );
    assert_eq!(value(store.get_configmap("d", "only-cluster")), None);
    assert!(store.secret_for(Source::Api, "d", "nothing").is_none());
}

#[test]
fn delete_refuses_the_clusters_objects() {
    let s = Scratch::new("delete");
    let mut store = s.open();
    store
        .put_cluster(Kind::Pod, "d", "web", &pod("d", "web", "u-c", ""))
        .unwrap();
    match store.delete(Kind::Pod, "d", "web") {
        Err(StoreError::Cluster(what)) => assert_eq!(what, "pod d/web"),
        other => panic!("{other:?}"),
    }
    assert!(s.file("cluster", "pods", "d", "web").exists());
    assert!(matches!(
        store.delete(Kind::Pod, "d", "nothing"),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn the_change_watch_sees_the_cluster_directories() {
    let s = Scratch::new("watch");
    let mut store = s.open();
    assert!(store.changes().any(), "the first look says everything");
    assert!(!store.changes().any());
    store
        .put_cluster(Kind::Pod, "d", "web", &pod("d", "web", "u-c", ""))
        .unwrap();
    let c = store.changes();
    assert!(c.pods && !c.objects, "{c:?}");
    store
        .put_cluster(Kind::ConfigMap, "d", "cfg", &configmap("d", "cfg", "v"))
        .unwrap();
    let c = store.changes();
    assert!(c.objects && !c.pods, "{c:?}");
}

#[test]
fn status_changes_and_terminations_are_a_set_to_drain() {
    let s = Scratch::new("notify");
    let mut store = s.open();
    let st = PodStatus {
        reason: "one".into(),
        ..Default::default()
    };
    store.write_status("d", "a", &st).unwrap();
    assert!(
        store.take_dirty_pods().is_empty(),
        "nothing kept before a subscriber"
    );
    let wake = store.subscribe_status();
    for r in ["two", "three", "four"] {
        let st = PodStatus {
            reason: r.into(),
            ..Default::default()
        };
        store.write_status("d", "a", &st).unwrap();
    }
    store
        .write_status(
            "d",
            "a",
            &PodStatus {
                reason: "four".into(),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(wake.len(), 1);
    let dirty = store.take_dirty_pods();
    assert_eq!(
        dirty.len(),
        1,
        "one entry per pod, whatever the number of changes"
    );
    assert!(store.take_dirty_pods().is_empty());

    // A terminated cluster pod is remembered while its file is there.
    let deleting = r#","deletionTimestamp":"2026-12-01T10:00:00Z","deletionGracePeriodSeconds":5"#;
    store
        .put_cluster(Kind::Pod, "d", "gone", &pod("d", "gone", "u-g", deleting))
        .unwrap();
    let p = store.desired_pods_keeping_damaged().pods.remove(0);
    assert!(p.terminating());
    store.pod_terminated(&p);
    assert!(store.is_terminated("u-g"));
    assert!(store
        .take_dirty_pods()
        .contains(&("d".to_string(), "gone".to_string())));
    store.remove_cluster(Kind::Pod, "d", "gone").unwrap();
    store.desired_pods_keeping_damaged();
    assert!(
        !store.is_terminated("u-g"),
        "forgotten once the file is gone"
    );
}

/// What the mirror pods are made from: the agent's read of the local pods tells the
/// uplink which were added, changed or removed (a digest each); a damaged file is no
/// change, and cluster pods are not local pods.
#[cfg(feature = "uplink")]
#[test]
fn local_pod_changes_are_told_with_a_digest_each() {
    let s = Scratch::new("local");
    let mut store = s.open();
    let _wake = store.subscribe_status();
    assert!(store.local_pod_digests().is_none(), "not read yet");
    apply(&mut store, &pod("d", "web", "u-1", ""));
    store
        .put_cluster(Kind::Pod, "d", "api", &pod("d", "api", "u-c", ""))
        .unwrap();
    store.desired_pods_keeping_damaged();
    let name = ("d".to_string(), "web".to_string());
    let first = *store.local_pod_digests().unwrap().get(&name).unwrap();
    assert_eq!(
        store.local_pod_digests().unwrap().len(),
        1,
        "local pods only"
    );
    assert!(store.take_dirty_pods().contains(&name));
    store.desired_pods_keeping_damaged();
    assert!(store.take_dirty_pods().is_empty(), "read again, unchanged");

    apply(
        &mut store,
        &pod("d", "web", "u-1", r#","labels":{"v":"2"}"#),
    );
    store.desired_pods_keeping_damaged();
    let second = *store.local_pod_digests().unwrap().get(&name).unwrap();
    assert_ne!(first, second);
    assert!(store.take_dirty_pods().contains(&name));

    std::fs::write(s.file("desired", "pods", "d", "web"), b"{torn").unwrap();
    let found = store.desired_pods_keeping_damaged();
    assert_eq!(found.damaged.len(), 1);
    assert!(store.take_dirty_pods().is_empty(), "damaged: no change");
    assert_eq!(store.local_pod_digests().unwrap().get(&name), Some(&second));

    std::fs::remove_file(s.file("desired", "pods", "d", "web")).unwrap();
    store.desired_pods_keeping_damaged();
    assert!(store.local_pod_digests().unwrap().is_empty());
    assert!(store.take_dirty_pods().contains(&name));
}
