use super::*;
use serde_json::json;
use std::time::{Duration, Instant};

fn one(text: &str) -> Value {
    match parse_document(text, &LIMITS) {
        Ok(v) => v,
        Err(e) => panic!("{text:?}: {e}"),
    }
}

fn refused(text: &str) -> YamlError {
    match parse_documents(text, &LIMITS) {
        Ok(v) => panic!("{text:?} accepted as {v:?}"),
        Err(e) => e,
    }
}

#[test]
fn kubeadm_kubeconfig() {
    let text = "\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTg==
    server: https://192.168.1.10:6443
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: system:node:gw1
  name: system:node:gw1@kubernetes
current-context: system:node:gw1@kubernetes
kind: Config
preferences: {}
users:
- name: system:node:gw1
  user:
    client-certificate: /var/lib/tinylet/pki/node.crt
    client-key: /var/lib/tinylet/pki/node.key
";
    assert_eq!(
        one(text),
        json!({
            "apiVersion": "v1",
            "clusters": [{"cluster": {"certificate-authority-data": "LS0tLS1CRUdJTg==",
                "server": "https://192.168.1.10:6443"}, "name": "kubernetes"}],
            "contexts": [{"context": {"cluster": "kubernetes", "user": "system:node:gw1"},
                "name": "system:node:gw1@kubernetes"}],
            "current-context": "system:node:gw1@kubernetes",
            "kind": "Config",
            "preferences": {},
            "users": [{"name": "system:node:gw1", "user": {
                "client-certificate": "/var/lib/tinylet/pki/node.crt",
                "client-key": "/var/lib/tinylet/pki/node.key"}}]
        })
    );
}

#[test]
fn flow_collections_as_hand_written_kubeconfigs_use() {
    let text = "clusters:\n- cluster: {certificate-authority: /d/ca.crt, server: \"https://127.0.0.1:6443\"}\n  name: test\nlist: [a, 'b c', [1, 2], {x: }]\nmulti: {a: 1,\n  b: [2,\n   3]}  # end\n";
    assert_eq!(
        one(text),
        json!({
            "clusters": [{"cluster": {"certificate-authority": "/d/ca.crt",
                "server": "https://127.0.0.1:6443"}, "name": "test"}],
            "list": ["a", "b c", [1, 2], {"x": null}],
            "multi": {"a": 1, "b": [2, 3]}
        })
    );
}

#[test]
fn pod_manifest_shapes() {
    let text = "\
# a comment
apiVersion: v1
kind: Pod
metadata:
  name: web   # trailing comment
  labels: {app: web}
  annotations:
    note: \"quoted: with colon\"
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: [\"sh\", \"-c\"]
    args:
      - |
        echo hi
        sleep 1
    ports:
    - containerPort: 80
      protocol: TCP
  volumes:
  - name: cfg
    configMap:
      name: cfg
      defaultMode: 0644
";
    let v = one(text);
    assert_eq!(v["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(v["metadata"]["annotations"]["note"], "quoted: with colon");
    let c = &v["spec"]["containers"][0];
    assert_eq!(c["image"], "busybox:1.36");
    assert_eq!(c["command"], json!(["sh", "-c"]));
    assert_eq!(c["args"], json!(["echo hi\nsleep 1\n"]));
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    assert_eq!(v["spec"]["volumes"][0]["configMap"]["defaultMode"], 420);
}

#[test]
fn scalars_resolve_as_kubectl_does() {
    let v = one("a: null\nb: ~\nc:\nd: yes\ne: Off\nf: 12\ng: -3\nh: 0x1F\ni: 1.5\nj: 1e3\nk: \"12\"\nl: 'true'\nm: 1.2.3\nn: 18446744073709551615\no: v1.2\np: 010\nq: '-'\n");
    assert_eq!(
        v,
        json!({"a": null, "b": null, "c": null, "d": true, "e": false, "f": 12, "g": -3,
            "h": 31, "i": 1.5, "j": 1000.0, "k": "12", "l": "true", "m": "1.2.3",
            "n": 18446744073709551615u64, "o": "v1.2", "p": 8, "q": "-"})
    );
}

#[test]
fn quoted_scalars() {
    let v = one(r#"a: "tab\there \u00e9 \x41 \"q\" \\"
b: 'it''s'
c: "folded
  over

  lines"
d: "joined\
  here"
e: 'sq "dq" inside'
f: "dq 'sq' inside"
"#);
    assert_eq!(v["a"], "tab\there é A \"q\" \\");
    assert_eq!(v["b"], "it's");
    assert_eq!(v["c"], "folded over\nlines");
    assert_eq!(v["d"], "joinedhere");
    assert_eq!(v["e"], "sq \"dq\" inside");
    assert_eq!(v["f"], "dq 'sq' inside");
}

#[test]
fn multi_line_plain_scalars_fold() {
    let v = one("a: one\n  two\n\n  three\nb: x\n");
    assert_eq!(v, json!({"a": "one two\nthree", "b": "x"}));
}

#[test]
fn block_scalars_and_chomping() {
    let v = one("a: |\n  l1\n   l2\n\nb: |-\n  x\n\n\nc: |+\n  y\n\nd: >\n  f1\n  f2\n\n  f3\n    more\n  f4\ne: >-\n  z\nf: |2\n    two extra\ng: |\nh: end\n");
    assert_eq!(v["a"], "l1\n l2\n");
    assert_eq!(v["b"], "x");
    assert_eq!(v["c"], "y\n\n");
    assert_eq!(v["d"], "f1 f2\nf3\n  more\nf4\n");
    assert_eq!(v["e"], "z");
    assert_eq!(v["f"], "  two extra\n");
    assert_eq!(v["g"], "");
    assert_eq!(v["h"], "end");
}

#[test]
fn documents() {
    let docs = parse_documents(
        "---\na: 1\n---\n# only a comment\n---\n- x\n...\n--- \"scalar\"\n---\n",
        &LIMITS,
    )
    .unwrap();
    assert_eq!(docs, vec![json!({"a": 1}), json!(["x"]), json!("scalar")]);
    assert_eq!(parse_documents("", &LIMITS).unwrap(), Vec::<Value>::new());
    assert_eq!(one("# nothing\n"), Value::Null);
    let e = parse_document("a: 1\n---\nb: 2\n", &LIMITS).unwrap_err();
    assert!(e.message.contains("one document"), "{e}");
}

#[test]
fn crlf_bom_and_nested_sequences() {
    assert_eq!(
        one("\u{feff}a: 1\r\nb:\r\n- 2\r\n"),
        json!({"a": 1, "b": [2]})
    );
    assert_eq!(one("- - a\n  - b\n- c\n"), json!([["a", "b"], "c"]));
    assert_eq!(one("-\n  k: v\n- \n"), json!([{"k": "v"}, null]));
}

#[test]
fn errors_name_line_and_column() {
    let cases: &[(&str, usize, usize, &str)] = &[
        ("a: 1\nb: &x 2\n", 2, 4, "anchors"),
        ("a: *x\n", 1, 4, "aliases"),
        ("a: !!str 1\n", 1, 4, "tags"),
        ("- !<tag> x\n", 1, 3, "tags"),
        ("a: 1\na: 2\n", 2, 1, "duplicate key \"a\""),
        ("m: {a: 1, a: 2}\n", 1, 11, "duplicate key"),
        ("a:\n\tb: 1\n", 2, 1, "tab in indentation"),
        ("a: b: c\n", 1, 5, "mapping is not allowed"),
        ("a: \"open\n", 1, 4, "never closed"),
        ("a: [1, 2\n", 2, 1, "never closed"),
        (
            "a: 1\n  b: 2\n",
            2,
            3,
            "bad indentation: a key deeper than the keys",
        ),
        ("- a: 1\n    b: 2\n", 2, 5, "align it with them"),
        ("a:\n  b: 1\n c: 2\n", 3, 2, "bad indentation"),
        ("? complex\n: key\n", 1, 1, "complex keys"),
        ("%YAML 1.2\n---\na: 1\n", 1, 1, "directives"),
        ("a: .inf\n", 1, 4, "not a finite number"),
        ("a: \"\\q\"\n", 1, 5, "unknown escape"),
        ("a: [1, {b: 2} c]\n", 1, 15, "expected \",\" or \"]\""),
        ("k: v\n- x\n", 2, 1, "sequence entry where a mapping key"),
        ("- a\nb: c\n", 2, 1, "unexpected text"),
    ];
    for (text, line, column, what) in cases {
        let e = refused(text);
        assert!(e.message.contains(what), "{text:?}: {e}");
        assert_eq!((e.line, e.column), (*line, *column), "{text:?}: {e}");
    }
}

/// Hostile inputs: each is refused (or read) within bounded time, never a panic or a
/// stack overflow.
#[test]
fn hostile_inputs_are_bounded() {
    let bomb = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n\
                b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n";
    let deep_flow = "[".repeat(100_000);
    let deep_map = (0..1_000)
        .map(|i| format!("{}k:\n", " ".repeat(i)))
        .collect::<String>();
    let deep_seq = "- ".repeat(50_000) + "x\n";
    let deep_flow_map = "{a: ".repeat(10_000);
    let too_big = "a".repeat(LIMITS.max_bytes + 1);
    let many = "- 1\n".repeat(LIMITS.max_nodes + 1);
    let many_flow = format!("[{}]", "1,".repeat(LIMITS.max_nodes + 1));
    let long_line_no_colon = "x".repeat(LIMITS.max_bytes - 10);
    let quotes = "\"".repeat(999_999);
    let colons = ": ".repeat(400_000);
    let cases: Vec<(&str, &str)> = vec![
        (bomb, "anchors"),
        (&deep_flow, "nested deeper than 64"),
        (&deep_map, "nested deeper than 64"),
        (&deep_seq, "nested deeper than 64"),
        (&deep_flow_map, "nested deeper than 64"),
        (&too_big, "byte limit"),
        (&many, "more than 100000 values"),
        (&many_flow, "more than 100000 values"),
        (&quotes, "unexpected text"),
        (&colons, "a mapping is not allowed"),
        ("a: !!binary aGk=\n", "tags"),
        ("a: !!python/object:os.system x\n", "tags"),
        ("<<: *base\n", "aliases"),
        ("a: \"\\uD800\"\n", "bad escape"),
        ("{a: 1}: b\n", "unexpected text"),
        ("a: |0\n  x\n", "indicator"),
        ("- [\n", "never closed"),
    ];
    assert!(cases.len() >= 15);
    for (text, what) in cases {
        let t0 = Instant::now();
        let e = refused(text);
        let shown: String = text.chars().take(40).collect();
        assert!(e.message.contains(what), "{shown:?}: {e}");
        assert!(
            t0.elapsed() < crate::test_time_limit(Duration::from_secs(2)),
            "{shown:?} took {:?}",
            t0.elapsed()
        );
    }
    let t0 = Instant::now();
    assert_eq!(
        one(&long_line_no_colon).as_str().map(str::len),
        Some(LIMITS.max_bytes - 10)
    );
    assert!(t0.elapsed() < crate::test_time_limit(Duration::from_secs(2)));
}

#[test]
fn control_characters_are_not_yaml() {
    for (text, line, column) in [
        ("a: b\u{1}c\n", 1, 5),
        ("a: 1\nb: \"x\0\"\n", 2, 6),
        ("- x\r- y\n", 1, 4),
        ("a: |\n  x\u{7f}\n", 2, 4),
        ("a: \u{9b}\n", 1, 4),
    ] {
        let e = refused(text);
        assert_eq!((e.line, e.column), (line, column), "{text:?}: {e}");
        assert!(e.message.contains("is not allowed in YAML"), "{e}");
    }
    // Tabs, CR LF line ends, NEL and the rest of Unicode are.
    assert_eq!(one("a:\t\"x\ty\"\r\nb: \u{85}é\r\n")["a"], "x\ty");
}

#[test]
fn later_lines_of_flow_values_stay_within_their_block() {
    // As YAML parsers read them: indented at least to the block the value is in.
    let ok = one("a:\n  b: [p,\n    q]\n  c: \"p\n   q\"\n  d: [p,\n  ]\n");
    assert_eq!(ok["a"]["b"], serde_json::json!(["p", "q"]));
    assert_eq!(ok["a"]["c"], "p q");
    assert_eq!(ok["a"]["d"], serde_json::json!(["p"]));
    assert_eq!(one("- [a,\n b]\n")[0], serde_json::json!(["a", "b"]));
    for (text, line) in [
        ("a:\n  b: \"p\nq\"\n", 3),
        ("a:\n  b: [p,\nq]\n", 3),
        ("a:\n  b: [p,\n ]\n", 3),
        ("k: [a,\nb]\n", 2),
        ("- [a,\nb]\n", 2),
    ] {
        let e = refused(text);
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.message.contains("less indented than its block"), "{e}");
    }
}

#[test]
fn plain_values_do_not_start_with_an_indicator() {
    for (text, c) in [
        ("a: ]x\n", ']'),
        ("a: }x\n", '}'),
        ("- ,x\n", ','),
        ("a: %x\n", '%'),
    ] {
        let e = refused(text);
        assert!(
            e.message.contains(&format!("start with {c:?}")),
            "{text:?}: {e}"
        );
    }
    assert_eq!(one("a: x]%,\n")["a"], "x]%,");
    for text in ["--- - a\n", "a: - b\n", "a: -\n", "k: [- a]\n", "a: ? b\n"] {
        let e = refused(text);
        assert!(e.message.contains("is not allowed here"), "{text:?}: {e}");
    }
    assert_eq!(one("a: -1\n")["a"], -1);
    assert_eq!(one("a: -x\n")["a"], "-x");
}

#[test]
fn nothing_but_a_comment_follows_a_document_end() {
    let e = refused("a: 1\n... b: 2\n");
    assert!(e.message.contains("after the document end marker"), "{e}");
    let docs = parse_documents("a: 1\n... # done\n---\nb: 2\n", &LIMITS).unwrap();
    assert_eq!(docs.len(), 2);
}

#[test]
fn no_document_marker_inside_a_value() {
    for text in ["a: \"x\n--- y\"\n", "a: 'x\n...\n'\n", "k: [a,\n---\n]\n"] {
        let e = refused(text);
        assert!(e.message.contains("document marker"), "{text:?}: {e}");
    }
}

#[test]
fn a_block_scalars_leading_blank_lines_are_not_more_indented() {
    let e = refused("a: |\n     \n  text\n");
    assert!(e.message.contains("leading blank line"), "{e}");
    assert_eq!(one("a: |\n  \n  text\n")["a"], "\ntext\n");
}

#[test]
fn no_tab_before_a_block_nested_on_an_entrys_line() {
    for text in ["-\t- a\n", "- \tk: v\n"] {
        let e = refused(text);
        assert!(e.message.contains("tab"), "{text:?}: {e}");
    }
    assert_eq!(one("-\tplain\n")[0], "plain");
}

#[test]
fn escaped_white_space_before_a_line_break_is_kept() {
    assert_eq!(one("a: \"x\\t \n  y\"\n")["a"], "x\t y");
    assert_eq!(one("a: \"x\\\t\t\n  y\"\n")["a"], "x\t y");
    assert_eq!(one("a: \"x \t\n  y\"\n")["a"], "x y");
    // An escaped line break, then a blank line: a line break.
    assert_eq!(one("a: \"x\\\n   \n  y\"\n")["a"], "x\ny");
    assert_eq!(one("a: \"x\\\n  y\"\n")["a"], "xy");
}

#[test]
fn a_comment_is_apart_from_its_value() {
    for text in ["a: 'x'#c\n", "a: [x]#c\n"] {
        let e = refused(text);
        assert!(
            e.message.contains("separated from the value"),
            "{text:?}: {e}"
        );
    }
    assert_eq!(one("a: 'x' #c\nb: y#z\n")["b"], "y#z");
}

#[test]
fn a_comment_line_ends_a_plain_scalar_even_after_tabs() {
    assert_eq!(one("a: x\n  y\n\t# c\n")["a"], "x y");
    assert_eq!(one("x\n y\n\t\t#\n"), "x y");
}

#[test]
fn spaces_past_a_block_scalars_indentation_are_text() {
    assert_eq!(one("a: |\n  x\n     \n  y\n")["a"], "x\n   \ny\n");
    assert_eq!(one("a: |\n  x\n  \n  y\n")["a"], "x\n\ny\n");
    assert_eq!(one("a: |\n  x\n  \t\n  y\n")["a"], "x\n\t\ny\n");
    assert_eq!(one("a: |\n  \t x\n")["a"], "\t x\n");
    // A tab inside the indentation ends the scalar; the comment after it is one.
    assert_eq!(one("- |\n  x\n\t \n   # c\n")[0], "x\n");
}

#[test]
fn a_lone_indicator_is_no_flow_value() {
    for text in ["k: [-, a]\n", "k: [a, ?]\n"] {
        let e = refused(text);
        assert!(e.message.contains("lone"), "{text:?}: {e}");
    }
    assert_eq!(one("k: [-a, '-']\n")["k"], serde_json::json!(["-a", "-"]));
}

#[test]
fn a_flow_value_touches_its_colon_only_after_a_quoted_key() {
    let e = refused("m: {k\n  :-x}\n");
    assert!(e.message.contains("followed by a space"), "{e}");
    assert_eq!(
        one("m: {\"k\":v, a: b}\n")["m"],
        serde_json::json!({"k": "v", "a": "b"})
    );
}

#[test]
fn unicode_spaces_are_text() {
    assert_eq!(one("a: x\u{2002}\n")["a"], "x\u{2002}");
    assert_eq!(one("\u{2002}\n"), "\u{2002}");
}
