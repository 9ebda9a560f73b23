//! `tinylet get` for pods the store does not list. One deleted whose containers are
//! still stopping (its status file and deletion record written here through the store,
//! as the agent writes them; `tests/e2e_terminating.rs` has the agent do it on a real
//! containerd) is shown as kubectl shows a pod being deleted. One whose desired file is
//! damaged is shown as `DesiredFileDamaged`, never as `Terminating`, and left in place.

mod cli_support;

use cli_support::*;
use std::path::Path;
use std::time::{Duration, SystemTime};
use tinylet::model::time::parse_rfc3339;
use tinylet::model::{Object, PodStatus};
use tinylet::store::{Kind, Store};

const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},
  "spec":{"terminationGracePeriodSeconds":5,"containers":[{"name":"c","image":"busybox"}]}}"#;

const STATUS: &str = r#"{"phase":"Running","podIP":"10.88.0.7","startTime":"2026-12-01T10:00:00Z",
  "containerStatuses":[{"name":"c","ready":true,"restartCount":2,"state":{"running":{}}}]}"#;

/// A scratch store with pod default/web applied and the agent's status of it.
fn stored(tag: &str) -> (Scratch, Store) {
    let s = Scratch::new(tag);
    assert_eq!(tl_in(&s, &["apply", "-f", "-"], POD).code, 0);
    let mut store = Store::open_at(Path::new(&s.state()), &[]).unwrap();
    let status: PodStatus = serde_json::from_str(STATUS).unwrap();
    store.write_status("default", "web", &status).unwrap();
    (s, store)
}

/// The cells of pod `name`'s row in `get ARGS`.
fn row(s: &Scratch, args: &[&str], name: &str) -> Option<Vec<String>> {
    let out = tl(s, args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .find(|cols| cols.first().map(String::as_str) == Some(name))
}

fn json(out: &Out) -> serde_json::Value {
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn a_deleted_pod_is_terminating_with_its_deletion_timestamp_until_gone() {
    let (s, mut store) = stored("ending");
    let Some(Object::Pod(pod)) = store
        .get(Kind::Pod, "default", "web")
        .unwrap()
        .map(|e| e.object)
    else {
        panic!("web not stored")
    };
    assert_eq!(tl(&s, &["delete", "pod", "web"]).code, 0);

    // Before the agent noticed: the name and the last status.
    let cells = row(&s, &["get", "pods"], "web").expect("listed after delete");
    assert_eq!(&cells[1..4], ["1/1", "Terminating", "2"], "{cells:?}");
    let v = json(&tl(&s, &["get", "pod", "default/web", "-o", "json"]));
    assert_eq!(v["metadata"]["name"], "web", "{v}");
    assert_eq!(v["metadata"]["namespace"], "default", "{v}");
    assert!(v["metadata"]["deletionTimestamp"].is_null(), "{v}");
    assert_eq!(v["status"]["podIP"], "10.88.0.7", "{v}");

    // The agent records the deletion when it begins stopping the pod.
    let asked = SystemTime::now();
    store.record_deletion(&pod, Duration::from_secs(5)).unwrap();
    let v = json(&tl(&s, &["get", "pod", "default/web", "-o", "json"]));
    let meta = &v["metadata"];
    let at = parse_rfc3339(
        meta["deletionTimestamp"]
            .as_str()
            .expect("deletionTimestamp"),
    );
    let at = at.unwrap();
    // The end of the grace period, in seconds (RFC 3339 without fractions).
    let from = asked + Duration::from_secs(4);
    assert!(
        at >= from && at <= SystemTime::now() + Duration::from_secs(5),
        "{v}"
    );
    assert_eq!(meta["deletionGracePeriodSeconds"], 5, "{v}");
    assert_eq!(meta["uid"], pod.metadata.uid.as_str(), "{v}");
    assert_eq!(v["spec"]["containers"][0]["name"], "c", "{v}");
    assert_eq!(v["status"]["containerStatuses"][0]["restartCount"], 2);
    let yaml = tl(&s, &["get", "pod", "web", "-o", "yaml"]);
    assert_eq!(yaml.code, 0, "{}", yaml.stderr);
    assert!(
        yaml.stdout.contains("\n  deletionTimestamp: "),
        "{}",
        yaml.stdout
    );
    let list = json(&tl(&s, &["get", "pods", "-o", "json"]));
    assert_eq!(list["kind"], "List");
    assert_eq!(
        list["items"][0]["metadata"]["deletionGracePeriodSeconds"],
        5
    );
    let wide = row(&s, &["get", "pods", "-A", "-o", "wide"], "default").unwrap();
    assert_eq!(
        (wide[3].as_str(), wide[6].as_str(), wide[8].as_str()),
        ("Terminating", "10.88.0.7", "deleted"),
        "{wide:?}"
    );

    // Its containers gone, the agent removes its status, and the record with it.
    assert!(store.remove_status("default", "web").unwrap());
    let status_dir = s.0.join("state/status");
    assert_eq!(std::fs::read_dir(&status_dir).unwrap().count(), 0);
    let out = tl(&s, &["get", "pods"]);
    assert_eq!(out.stderr, "No resources found in default namespace.\n");
    let out = tl(&s, &["get", "pod", "web", "-o", "json"]);
    assert_eq!(out.code, 3, "{}", out.stderr);
}

#[test]
fn a_damaged_desired_file_is_shown_as_such_never_as_terminating() {
    let (s, mut store) = stored("damaged");
    let file = s.0.join("state/desired/pods/default_web.json");
    let good = std::fs::read(&file).unwrap();
    // Torn by a power cut: the first half of the file.
    std::fs::write(&file, &good[..good.len() / 2]).unwrap();

    let cells = row(&s, &["get", "pods"], "web").expect("listed");
    assert_eq!(
        &cells[1..4],
        ["1/1", "DesiredFileDamaged", "2"],
        "{cells:?}"
    );
    let wide = row(&s, &["get", "pods", "-o", "wide"], "web").unwrap();
    assert_eq!(wide.last().map(String::as_str), Some("state"), "{wide:?}");
    let out = tl(&s, &["get", "pod", "default/web", "-o", "json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let file_name = file.display().to_string();
    assert!(
        out.stderr
            .contains(&format!("its desired file {file_name} cannot be read"))
            && out.stderr.contains("`tinylet delete pod default/web`"),
        "{}",
        out.stderr
    );
    let list = json(&tl(&s, &["get", "pods", "-o", "json"]));
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0), "{list}");

    // Without a status (never run, or the agent stopped and the status lost): still
    // listed, from the file's name alone.
    assert!(store.remove_status("default", "web").unwrap());
    let cells = row(&s, &["get", "pods"], "web").expect("listed");
    assert_eq!(&cells[1..], ["0/0", "DesiredFileDamaged", "0", "<unknown>"]);

    // `get` moved nothing: the damaged file is where it was, nothing quarantined.
    assert_eq!(std::fs::read(&file).unwrap(), &good[..good.len() / 2]);
    let quarantine = std::fs::read_dir(s.0.join("state/quarantine")).unwrap();
    assert_eq!(quarantine.count(), 0);
}
