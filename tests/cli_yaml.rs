//! YAML manifests through the built binary: every example and accepted test manifest
//! applied as YAML, several documents, `kind: List`, a directory mixing `.json`,
//! `.yaml` and `.yml`, stdin detected by content, `get -o yaml` read back, errors naming
//! the file, document and field, and a hostile-YAML corpus refused within a time and an
//! address-space bound.

mod cli_support;

use cli_support::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tinylet::model::manifests::{parse_manifests, Format};
use tinylet::model::parse_object;
use tinylet::model::yaml::{parse_document, to_yaml, LIMITS};

/// The repository's JSON manifests that are meant to be accepted.
fn example_manifests() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("examples/pods/hello.json")];
    let good = std::fs::read_dir(root.join("tests/manifests/good")).unwrap();
    files.extend(good.map(|e| e.unwrap().path()));
    files.sort();
    files
}

#[test]
fn every_example_manifest_applies_as_yaml_the_same_as_json() {
    let s = Scratch::with_config("examples");
    let files = example_manifests();
    assert!(files.len() >= 11, "{files:?}");
    for f in &files {
        let json = std::fs::read(f).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let name = f.file_stem().unwrap().to_string_lossy();
        let yaml = to_yaml(&value);
        let from_json = parse_object("x", &json).unwrap();
        let from_yaml = parse_manifests("x", yaml.as_bytes(), Format::Yaml);
        assert_eq!(from_yaml.len(), 1, "{name}");
        assert_eq!(
            from_yaml[0].as_ref().unwrap(),
            &from_json,
            "{name}:\n{yaml}"
        );
        s.file(&format!("yaml/{name}.yaml"), &yaml);
    }
    let out = tl(&s, &["apply", "-f", &s.path("yaml")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), files.len(), "{}", out.stdout);
    // Two of the test manifests are the same pod: the second replaces the first.
    let applied = |l: &str| [" created", " replaced"].iter().any(|v| l.ends_with(v));
    assert!(out.stdout.lines().all(applied), "{}", out.stdout);
    // The hand-written YAML example is the JSON one.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let hand = std::fs::read(root.join("examples/pods/hello.yaml")).unwrap();
    let json = std::fs::read(root.join("examples/pods/hello.json")).unwrap();
    let hand = parse_manifests("hello.yaml", &hand, Format::Yaml);
    assert_eq!(
        hand[0].as_ref().unwrap(),
        &parse_object("x", &json).unwrap()
    );
}

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: NAME\nspec:\n  containers:\n  - name: c\n    image: busybox\n";

fn pod(name: &str) -> String {
    POD.replace("NAME", name)
}

#[test]
fn multi_document_list_and_mixed_directory() {
    let s = Scratch::with_config("mixed");
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {port: \"80\"}\n";
    let multi = s.file("multi.yaml", &format!("{}---\n{cm}...\n", pod("a")));
    let out = tl(&s, &["apply", "-f", &multi]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "pod/a created\nconfigmap/cm created\n");
    let list = format!(
        "apiVersion: v1\nkind: List\nitems:\n- {}\n- {}\n",
        pod("b").trim_end().replace('\n', "\n  "),
        pod("c").trim_end().replace('\n', "\n  ")
    );
    let out = tl(&s, &["apply", "-f", &s.file("list.yml", &list)]);
    assert_eq!(
        out.stdout, "pod/b created\npod/c created\n",
        "{}",
        out.stderr
    );

    let dir = Scratch::new("mixed-dir");
    dir.file(
        "1.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"}}"#,
    );
    dir.file("2.yaml", &pod("yml1"));
    dir.file("3.yml", &format!("{}---\n{}", pod("m1"), pod("m2")));
    dir.file("README.md", "not a manifest");
    dir.file(".hidden.yaml", "not: [read");
    std::fs::create_dir(dir.0.join("sub")).unwrap();
    let out = tl(&s, &["apply", "-f", &dir.0.display().to_string()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "configmap/j created\npod/yml1 created\npod/m1 created\npod/m2 created\n"
    );
    for skipped in ["README.md", "sub"] {
        assert!(
            out.stderr
                .contains(&format!("skipping {}", dir.path(skipped))),
            "{}",
            out.stderr
        );
    }
    let out = tl(&s, &["get", "pods"]);
    for name in ["a", "b", "c", "yml1", "m1", "m2"] {
        assert!(out.stdout.contains(&format!("\n{name} ")), "{}", out.stdout);
    }
}

#[test]
fn stdin_is_json_or_yaml_by_content() {
    let s = Scratch::with_config("stdin");
    let out = tl_with(&[], &s, &["apply", "-f", "-"], pod("from-yaml").as_bytes());
    assert_eq!(out.stdout, "pod/from-yaml created\n", "{}", out.stderr);
    let json = r#"  {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-json"}}"#;
    let out = tl_with(&[], &s, &["apply", "-f", "-"], json.as_bytes());
    assert_eq!(
        out.stdout, "configmap/from-json created\n",
        "{}",
        out.stderr
    );
}

#[test]
fn get_o_yaml_reads_back_and_applies_again() {
    let s = Scratch::with_config("get-yaml");
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, labels: {v: \"0644\"}}\ndata: {a: \"yes\", b: \"line1\\nline2\"}\n";
    assert_eq!(
        tl_with(&[], &s, &["apply", "-f", "-"], cm.as_bytes()).code,
        0
    );
    let yaml = tl(&s, &["get", "configmap", "default/cm", "-o", "yaml"]);
    let json = tl(&s, &["get", "configmap", "default/cm", "-o", "json"]);
    assert_eq!(yaml.code, 0, "{}", yaml.stderr);
    let from_yaml = parse_document(&yaml.stdout, &LIMITS).unwrap();
    let from_json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(from_yaml, from_json, "{}", yaml.stdout);
    assert!(yaml.stdout.contains("a: \"yes\"\n"), "{}", yaml.stdout);
    let again = tl_with(&[], &s, &["apply", "-f", "-"], yaml.stdout.as_bytes());
    assert_eq!(again.stdout, "configmap/cm unchanged\n", "{}", again.stderr);
    let list = tl(&s, &["get", "configmaps", "-o", "yaml"]);
    let v = parse_document(&list.stdout, &LIMITS).unwrap();
    assert_eq!(v["kind"], "List");
    assert_eq!(v["items"][0]["metadata"]["name"], "cm");
}

#[test]
fn errors_name_file_document_and_field() {
    let s = Scratch::with_config("errors");
    let bad = pod("bad").replace(
        "image: busybox",
        "image: busybox\n    ports:\n    - containerPort: many",
    );
    let f = s.file("two.yaml", &format!("{}---\n{bad}", pod("good")));
    let out = tl(&s, &["apply", "-f", &f]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "pod/good created\n");
    let want = format!("error: {f}: document 2: spec.containers[0].ports[0].containerPort: ");
    assert!(out.stderr.starts_with(&want), "{}", out.stderr);
    let f = s.file(
        "syntax.yml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   y: z\n",
    );
    let out = tl(&s, &["apply", "-f", &f]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with(&format!("error: {f}: line 5, column")),
        "{}",
        out.stderr
    );
    // A truncated JSON document: its end, no unrelated field.
    let out = tl_with(
        &[],
        &s,
        &["apply", "-f", "-"],
        br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"#,
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("error: -: the document ends early: EOF while parsing"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("metadata.name"), "{}", out.stderr);
}

/// Hostile YAML, each case through `apply -f -` and as a file, under a 256 MiB address
/// space limit: refused with exit 2 and a message naming the problem, within 5 s
/// (debug build), never a crash.
#[test]
fn hostile_yaml_is_refused_within_time_and_memory_bounds() {
    let billion_laughs = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n".to_string();
    let cases: Vec<(&str, String, &str)> = vec![
        ("alias bomb", billion_laughs, "anchors"),
        ("alias only", "kind: *k\n".into(), "aliases"),
        ("merge key", "<<: *base\nkind: Pod\n".into(), "aliases"),
        ("deep flow", "[".repeat(200_000), "nested deeper than 64"),
        (
            "deep flow map",
            "x: ".to_string() + &"{a: ".repeat(50_000),
            "nested deeper than 64",
        ),
        (
            "deep block map",
            (0..1_000)
                .map(|i| format!("{}k:\n", " ".repeat(i)))
                .collect(),
            "nested deeper than 64",
        ),
        (
            "deep block seq",
            "- ".repeat(100_000) + "x\n",
            "nested deeper than 64",
        ),
        (
            "huge scalar",
            format!("kind: \"{}\"\n", "x".repeat(2 << 20)),
            "limit",
        ),
        (
            "too many values",
            "- 1\n".repeat(200_000),
            "more than 100000 values",
        ),
        (
            "duplicate keys",
            "kind: Pod\nkind: Secret\n".into(),
            "duplicate key \"kind\"",
        ),
        (
            "duplicate flow keys",
            "metadata: {name: a, name: b}\n".into(),
            "duplicate key",
        ),
        (
            "python tag",
            "kind: !!python/object/apply:os.system [id]\n".into(),
            "tags",
        ),
        ("binary tag", "data: !!binary aGk=\n".into(), "tags"),
        ("local tag", "kind: !Pod x\n".into(), "tags"),
        (
            "directive",
            "%TAG ! tag:evil.com,2000:\n---\nkind: Pod\n".into(),
            "directives",
        ),
        ("complex key", "? [a, b]\n: c\n".into(), "complex keys"),
        (
            "unclosed quote",
            format!("kind: \"{}", "x".repeat(500_000)),
            "never closed",
        ),
        (
            "infinity",
            "spec: {terminationGracePeriodSeconds: .inf}\n".into(),
            "not a finite number",
        ),
        (
            "tab indentation",
            "metadata:\n\tname: x\n".into(),
            "tab in indentation",
        ),
    ];
    let mut cases: Vec<(&str, Vec<u8>, &str)> = cases
        .into_iter()
        .map(|(w, t, e)| (w, t.into_bytes(), e))
        .collect();
    cases.push(("not UTF-8", b"kind: \xff\xfePod\n".to_vec(), "UTF-8"));
    assert!(cases.len() >= 15);
    let s = Scratch::with_config("hostile");
    let limit = ["prlimit", "--as=268435456", "--"];
    for (what, text, expected) in &cases {
        for via_file in [false, true] {
            let t0 = Instant::now();
            let out = if via_file {
                let f = s.path("hostile.yaml");
                std::fs::write(&f, text).unwrap();
                tl_with(&limit, &s, &["apply", "-f", &f], b"")
            } else {
                tl_with(&limit, &s, &["apply", "-f", "-"], text)
            };
            let took = t0.elapsed();
            assert_eq!(out.code, 2, "{what}: {}", out.stderr);
            assert!(out.stderr.contains(expected), "{what}: {}", out.stderr);
            assert!(
                out.stderr.len() < 2048,
                "{what}: {} bytes of errors",
                out.stderr.len()
            );
            assert!(took < Duration::from_secs(5), "{what} took {took:?}");
            assert!(out.stdout.is_empty(), "{what}: {}", out.stdout);
        }
    }
    // Nothing of it was stored.
    let out = tl(&s, &["get", "pods", "-A"]);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}

#[test]
fn firmware_manifest_dirs_read_yaml_and_name_what_they_skip() {
    let s = Scratch::new("firmware");
    let fw = s.0.join("fw");
    s.file(
        "fw/10-pods.yaml",
        &format!("{}---\n{}", pod("fw-a"), pod("fw-b")),
    );
    s.file(
        "fw/20-cm.yml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fw-cm}\n",
    );
    s.file(
        "fw/30-bad.yaml",
        &pod("fw-bad").replace("image: busybox", "image: \"\""),
    );
    s.file("fw/notes.txt", "not a manifest");
    let cfg = serde_json::json!({ "manifestDirs": [fw] });
    s.file("config.json", &cfg.to_string());
    let out = tl(&s, &["get", "pods", "-o", "wide"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let file = s.path("fw/10-pods.yaml");
    for name in ["fw-a", "fw-b"] {
        let row = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")));
        let row = row.unwrap_or_else(|| panic!("{name} missing: {}", out.stdout));
        assert!(row.ends_with(&file), "{row}");
    }
    assert!(!out.stdout.contains("fw-bad"), "{}", out.stdout);
    let cms = tl(&s, &["get", "configmaps"]);
    assert!(cms.stdout.contains("fw-cm"), "{}", cms.stdout);
    // Logged (with an RFC 3339 millisecond time): the bad document, the other file.
    let line = |what: &str| {
        let l = out.stderr.lines().find(|l| l.contains(what));
        l.unwrap_or_else(|| panic!("no {what:?} in {}", out.stderr))
            .to_string()
    };
    let bad = line(&format!(
        "{}: document 1: spec.containers[0].image",
        s.path("fw/30-bad.yaml")
    ));
    let skipped = line(&format!(
        "{}: not a *.json, *.yaml or *.yml file",
        s.path("fw/notes.txt")
    ));
    for l in [bad, skipped] {
        let ts = l
            .strip_prefix('[')
            .and_then(|l| l.split(' ').next())
            .unwrap_or("");
        assert!(ts.len() == 24 && ts.ends_with('Z'), "{l}");
        assert!(tinylet::model::time::parse_rfc3339(ts).is_ok(), "{l}");
    }
}

#[test]
fn an_over_indented_key_is_said_to_be_one() {
    let s = Scratch::with_config("indent");
    let f = s.file(
        "pod.yaml",
        &pod("web").replace("image: busybox", "image: busybox\n      command: [sh]"),
    );
    let out = tl(&s, &["apply", "-f", &f]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with(&format!(
            "error: {f}: line 9, column 7: bad indentation: a key deeper than the keys of its mapping"
        )),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("quote it"), "{}", out.stderr);
}

#[test]
fn no_example_manifest_has_an_unknown_field() {
    for f in example_manifests() {
        let bytes = std::fs::read(&f).unwrap();
        let source = f.display().to_string();
        for p in tinylet::model::manifests::parse_manifests_checked(&source, &bytes, Format::Json) {
            assert!(p.unknown.is_empty(), "{source}: {:?}", p.unknown);
        }
    }
}
