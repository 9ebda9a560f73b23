//! `tinylet apply|get|delete` as an operator or a script uses them: the built binary on
//! a scratch state directory, checking output, exit codes and what lands on disk.

mod cli_support;

use cli_support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tinylet::model::PodStatus;
use tinylet::store::Store;

fn pod_json(name: &str, image: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},
            "spec":{{"containers":[{{"name":"c","image":"{image}"}},{{"name":"d","image":"{image}"}}]}}}}"#
    )
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn apply_reports_created_unchanged_configured() {
    let s = Scratch::new("apply");
    let f = s.file("web.json", &pod_json("web", "nginx:1"));
    let o = tl(&s, &["apply", "-f", &f]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "pod/web created\n"),
        "{}",
        o.stderr
    );
    let o = tl(&s, &["apply", "-f", &f]);
    assert_eq!((o.code, o.stdout.as_str()), (0, "pod/web unchanged\n"));
    let f2 = s.file("web2.json", &pod_json("web", "nginx:2"));
    let o = tl(&s, &["apply", "--filename", &f2]);
    assert_eq!((o.code, o.stdout.as_str()), (0, "pod/web configured\n"));
    // From stdin: a configmap and a secret (whose file is private).
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"edge"},"data":{"a":"1"}}"#;
    let o = tl_in(&s, &["apply", "-f", "-"], cm);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "configmap/cfg created\n"),
        "{}",
        o.stderr
    );
    let sec =
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},"stringData":{"p":"x"}}"#;
    let o = tl_in(&s, &["apply", "-f", "-"], sec);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "secret/creds created\n"),
        "{}",
        o.stderr
    );
    let secret_file = s.0.join("state/desired/secrets/default_creds.json");
    let mode = std::fs::metadata(secret_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn bad_input_is_refused_with_the_models_message_and_nothing_stored() {
    let s = Scratch::new("bad");
    let f = s.file(
        "bad.json",
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[]}}"#,
    );
    let o = tl(&s, &["apply", "-f", &f]);
    assert_eq!(o.code, 2);
    assert!(o.stdout.is_empty());
    assert!(
        o.stderr.contains("bad.json") && o.stderr.contains("spec.containers"),
        "{}",
        o.stderr
    );
    assert!(files(&s.0.join("state/desired/pods")).is_empty());
    let o = tl_in(&s, &["apply", "-f", "-"], "this is not json");
    assert_eq!(o.code, 2);
    assert!(o.stderr.starts_with("error: -: "), "{}", o.stderr);
    let o = tl(
        &s,
        &[
            "apply",
            "-f",
            &s.0.join("missing.json").display().to_string(),
        ],
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("missing.json"), "{}", o.stderr);
    let o = tl(&s, &["apply"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("-f FILE"), "{}", o.stderr);
    let o = tl(&s, &["apply", "-f", &f, "--bogus"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--bogus"), "{}", o.stderr);
}

#[test]
fn apply_a_directory_applies_the_valid_files_and_reports_the_rest() {
    let s = Scratch::new("dir");
    let dir = s.0.join("manifests");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a.json"), pod_json("a", "x")).unwrap();
    std::fs::write(dir.join("b.json"), "{").unwrap();
    std::fs::write(dir.join("c.json"), pod_json("c", "x")).unwrap();
    std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
    let o = tl(&s, &["apply", "-f", &dir.display().to_string()]);
    assert_eq!(o.code, 2);
    assert_eq!(o.stdout, "pod/a created\npod/c created\n");
    assert!(o.stderr.contains("b.json"), "{}", o.stderr);
}

#[test]
fn get_pods_shows_kubectl_columns_from_status_files() {
    let s = Scratch::new("get");
    let o = tl(&s, &["get", "pods"]);
    assert_eq!((o.code, o.stdout.as_str()), (0, ""));
    assert_eq!(o.stderr, "No resources found in default namespace.\n");
    assert!(!s.0.join("state").exists(), "get creates nothing");
    for (name, ns) in [("web", "default"), ("db", "default"), ("mon", "system")] {
        let j = pod_json(name, "img").replacen(
            &format!(r#""name":"{name}""#),
            &format!(r#""name":"{name}","namespace":"{ns}""#),
            1,
        );
        assert_eq!(tl_in(&s, &["apply", "-f", "-"], &j).code, 0);
    }
    // The agent's status for web: one container crash-looping.
    let status: PodStatus = serde_json::from_str(
        r#"{"phase":"Running","podIP":"10.88.0.5","containerStatuses":[
            {"name":"c","ready":true,"restartCount":0,"state":{"running":{}}},
            {"name":"d","ready":false,"restartCount":7,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}"#,
    )
    .unwrap();
    let mut store = Store::open_at(Path::new(&s.state()), &[]).unwrap();
    store.write_status("default", "web", &status).unwrap();

    let o = tl(&s, &["get", "pods"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", o.stdout);
    let cols = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(
        cols(lines[0]),
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    let db = cols(lines[1]);
    assert_eq!(&db[..4], ["db", "0/2", "Pending", "0"]);
    assert!(db[4].ends_with('s'), "age in seconds: {}", db[4]);
    assert_eq!(
        &cols(lines[2])[..4],
        ["web", "1/2", "CrashLoopBackOff", "7"]
    );
    // Columns are aligned: STATUS starts at the same offset on every line.
    let at = lines[0].find("STATUS").unwrap();
    assert_eq!(lines[2].find("CrashLoopBackOff"), Some(at));

    let o = tl(&s, &["get", "pods", "-A", "-o", "wide"]);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        cols(lines[0]),
        [
            "NAMESPACE",
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "SOURCE"
        ]
    );
    assert_eq!(lines.len(), 4);
    assert!(lines[3].starts_with("system "), "{}", o.stdout);
    assert!(lines
        .iter()
        .any(|l| l.contains("10.88.0.5") && l.ends_with("state")));
    let o = tl(&s, &["get", "pods", "-n", "system"]);
    assert_eq!(o.stdout.lines().count(), 2);

    // JSON: a v1 List, and a single pod with its status.
    let o = tl(&s, &["get", "pods", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["kind"], "List");
    assert_eq!(v["items"].as_array().unwrap().len(), 2);
    let o = tl(&s, &["get", "pod", "default/web", "-o", "json"]);
    assert_eq!(o.code, 0);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["metadata"]["name"], "web");
    assert_eq!(v["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert_eq!(v["status"]["containerStatuses"][1]["restartCount"], 7);
    let o = tl(&s, &["get", "pod", "mon", "-n", "system", "-o", "json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

#[test]
fn get_errors_and_node() {
    let s = Scratch::new("geterr");
    let o = tl(&s, &["get", "pod", "default/nope"]);
    assert_eq!(o.code, 3);
    assert_eq!(o.stderr, "error: pod default/nope not found\n");
    let o = tl(&s, &["get", "services"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("unknown resource type"), "{}", o.stderr);
    let o = tl(&s, &["get", "pods", "-o", "xml"]);
    assert_eq!(o.code, 2);
    let o = tl(&s, &["get", "pods", "-A", "-n", "x"]);
    assert_eq!(o.code, 2);
    assert_eq!(
        tl_in(&s, &["apply", "-f", "-"], &pod_json("web", "x")).code,
        0
    );
    let o = tl(&s, &["get", "node"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("RUNTIME"),
        "{}",
        o.stdout
    );
    assert!(
        lines[1].contains("unix:///run/containerd/containerd.sock"),
        "{}",
        o.stdout
    );
    let o = tl(&s, &["get", "node", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["pods"]["desired"], 1);
    assert_eq!(v["pods"]["firmware"], 0);
}

#[test]
fn delete_removes_and_exits_3_when_absent() {
    let s = Scratch::new("delete");
    assert_eq!(
        tl_in(&s, &["apply", "-f", "-"], &pod_json("web", "x")).code,
        0
    );
    let o = tl(&s, &["delete", "pod", "default/web"]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "pod \"web\" deleted\n"),
        "{}",
        o.stderr
    );
    let o = tl(&s, &["delete", "pod", "web"]);
    assert_eq!(o.code, 3);
    assert_eq!(o.stderr, "error: pod default/web not found\n");
    // kubectl's other spellings.
    assert_eq!(
        tl_in(&s, &["apply", "-f", "-"], &pod_json("web", "x")).code,
        0
    );
    let o = tl(&s, &["delete", "pod/web"]);
    assert_eq!((o.code, o.stdout.as_str()), (0, "pod \"web\" deleted\n"));
    let o = tl(&s, &["delete", "configmap", "cfg", "-n", "edge"]);
    assert_eq!(o.code, 3);
    assert_eq!(o.stderr, "error: configmap edge/cfg not found\n");
    let o = tl(&s, &["delete", "node", "x"]);
    assert_eq!(o.code, 2);
    let o = tl(&s, &["delete", "pod", "default/../../etc"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let o = tl(&s, &["delete", "pod"]);
    assert_eq!(o.code, 2);
}

#[test]
fn firmware_pods_can_be_overridden_but_not_deleted() {
    let s = Scratch::new("firmware");
    let fw = s.0.join("fw");
    std::fs::create_dir(&fw).unwrap();
    std::fs::write(fw.join("agent.json"), pod_json("agent", "agent:1")).unwrap();
    std::fs::write(
        s.0.join("config.json"),
        format!(r#"{{"manifestDirs":["{}"]}}"#, fw.display()),
    )
    .unwrap();
    let o = tl(&s, &["get", "pods", "-o", "wide"]);
    assert!(o.stdout.contains("agent.json"), "{}", o.stdout);
    let o = tl(&s, &["delete", "pod", "agent"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("read-only") && o.stderr.contains("agent.json"),
        "{}",
        o.stderr
    );
    let o = tl_in(&s, &["apply", "-f", "-"], &pod_json("agent", "agent:2"));
    assert_eq!((o.code, o.stdout.as_str()), (0, "pod/agent configured\n"));
    let o = tl(&s, &["delete", "pod", "agent"]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout
            .starts_with("pod \"agent\" deleted (the firmware manifest"),
        "{}",
        o.stdout
    );
    let o = tl(&s, &["get", "pod", "agent", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["spec"]["containers"][0]["image"], "agent:1");
}

#[test]
fn unknown_fields_are_warned_about_and_refused_when_strict() {
    let s = Scratch::new("unknown");
    let typo = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"typo"},
        "spec":{"containers":[{"name":"c","image":"busybox","comand":["sh"]}],"tolerations":[]}}"#;
    let f = s.file("typo.json", typo);
    let o = tl(&s, &["apply", "-f", &f]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "pod/typo created\n"),
        "{}",
        o.stderr
    );
    assert_eq!(
        o.stderr,
        format!("Warning: unknown field \"spec.containers[0].comand\" in {f}\n")
    );
    for strict in ["--validate=strict", "--validate", "--validate=true"] {
        let o = tl(&s, &["apply", "-f", &f, strict]);
        assert_eq!(o.code, 2, "{strict}");
        assert!(o.stdout.is_empty());
        assert_eq!(
            o.stderr,
            format!("error: {f}: unknown field \"spec.containers[0].comand\"\n"),
            "{strict}"
        );
    }
    let o = tl(&s, &["apply", "-f", &f, "--validate=ignore"]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    let o = tl(&s, &["apply", "-f", &f, "--validate=maybe"]);
    assert_eq!(o.code, 2);
    // Strict: the other objects of the file are applied as before.
    let good = pod_json("fine", "busybox");
    let both = s.file(
        "both.yaml",
        &format!(
            "{}\n---\n{}\n",
            typo.replace('\n', " "),
            good.replace('\n', " ")
        ),
    );
    let o = tl(&s, &["apply", "-f", &both, "--validate=strict"]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (2, "pod/fine created\n"),
        "{}",
        o.stderr
    );
}

#[test]
fn every_error_of_an_object_is_reported_at_once_each_on_an_error_line() {
    let s = Scratch::new("all-errors");
    let bad = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"},
        "spec":{"restartPolicy":"Always","containers":[
            {"name":"c","image":""},{"name":"c","image":"busybox","ports":[{"containerPort":0}]}]}}"#;
    let f = s.file("bad.json", bad);
    let o = tl(&s, &["apply", "-f", &f]);
    assert_eq!(o.code, 2);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(lines.len() >= 4, "{}", o.stderr);
    for l in &lines {
        assert!(l.starts_with(&format!("error: {f}: ")), "{}", o.stderr);
    }
    for field in [
        "metadata.name",
        "spec.containers[0].image",
        "spec.containers[1].name",
        "spec.containers[1].ports[0].containerPort",
    ] {
        assert!(o.stderr.contains(field), "{field}: {}", o.stderr);
    }
}

#[test]
fn delete_by_file_deletes_the_objects_it_names() {
    let s = Scratch::new("delete-file");
    let cm =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"edge"}}"#;
    let f = s.file(
        "both.yaml",
        &format!(
            "{}\n---\n{cm}\n",
            pod_json("web", "busybox").replace('\n', " ")
        ),
    );
    assert_eq!(tl(&s, &["apply", "-f", &f]).code, 0);
    let o = tl(&s, &["delete", "-f", &f]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "pod \"web\" deleted\nconfigmap \"cfg\" deleted\n"),
        "{}",
        o.stderr
    );
    assert!(files(&s.0.join("state/desired/pods")).is_empty());
    let o = tl(&s, &["delete", "-f", &f]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(
        o.stderr.contains("pod default/web not found"),
        "{}",
        o.stderr
    );
    let o = tl(&s, &["delete", "pod", "web", "-f", &f]);
    assert_eq!(o.code, 2);
}

#[test]
fn short_options_are_echoed_as_given() {
    let s = Scratch::new("short");
    let o = tl(&s, &["get", "pods", "-x"]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (2, "error: unknown option -x\n")
    );
    let o = tl(&s, &["get", "pods", "--wach"]);
    assert_eq!(o.stderr, "error: unknown option --wach\n");
}
