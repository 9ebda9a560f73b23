use super::*;
use std::os::unix::fs::PermissionsExt;

/// A scratch directory removed at the end of the test.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("tinylet-kc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    fn write(&self, name: &str, text: &str, mode: u32) -> PathBuf {
        let p = self.0.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const CA: &str = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
const CRT: &str = "-----BEGIN CERTIFICATE-----\nNODE\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nSECRETKEY\n-----END PRIVATE KEY-----\n";

fn kubeconfig(cluster: &str, user: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n{cluster}contexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\ncurrent-context: ctx\nusers:\n- name: u\n  user:\n{user}"
    )
}

const SERVER: &str = "    server: https://10.0.0.1:6443\n";

fn load_err(path: &Path) -> String {
    match load(path) {
        Ok(kc) => panic!("accepted: {kc:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn files_relative_to_the_kubeconfig_directory() {
    let d = Dir::new("rel");
    d.write("pki/ca.crt", CA, 0o644);
    d.write("pki/node.crt", CRT, 0o644);
    d.write("pki/node.key", KEY, 0o600);
    let cluster = format!("{SERVER}    certificate-authority: pki/ca.crt\n");
    let user = "    client-certificate: pki/node.crt\n    client-key: pki/node.key\n";
    let path = d.write("kubelet.conf", &kubeconfig(&cluster, user), 0o644);
    let kc = load(&path).unwrap();
    assert_eq!(
        (kc.context.as_str(), kc.cluster.as_str(), kc.user.as_str()),
        ("ctx", "c", "u")
    );
    assert_eq!(kc.server.to_string(), "https://10.0.0.1:6443");
    assert_eq!(kc.server_name, "10.0.0.1");
    assert_eq!(kc.ca.value, CA.as_bytes());
    assert_eq!(kc.ca.from, d.0.join("pki/ca.crt").display().to_string());
    let Credentials::Certificate { cert, key } = &kc.credentials else {
        panic!("{kc:?}")
    };
    assert_eq!(cert.value, CRT.as_bytes());
    assert_eq!(key.value.0, KEY.as_bytes());
    // The key never shows in Debug output.
    let shown = format!("{kc:?}");
    assert!(!shown.contains("SECRETKEY"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
}

#[test]
fn embedded_data_as_kubeadm_writes_it() {
    let d = Dir::new("data");
    let b64 = |s: &str| base64::encode(s.as_bytes());
    let cluster = format!(
        "    certificate-authority-data: {}\n    server: https://[fd00::1]:443/k8s/clusters/x/\n    tls-server-name: api.lan\n",
        b64(CA)
    );
    let user = format!(
        "    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(CRT),
        b64(KEY)
    );
    let path = d.write("kubelet.conf", &kubeconfig(&cluster, &user), 0o600);
    let kc = load(&path).unwrap();
    assert_eq!(kc.server.host, "fd00::1");
    assert_eq!(kc.server.authority(), "[fd00::1]:443");
    assert_eq!(kc.server.prefix, "/k8s/clusters/x");
    assert_eq!(kc.server_name, "api.lan");
    assert_eq!(kc.ca.value, CA.as_bytes());
    assert!(
        kc.ca.from.ends_with("certificate-authority-data"),
        "{}",
        kc.ca.from
    );
    // A kubeconfig embedding a key is a secret file itself.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = load_err(&path);
    assert!(
        e.contains(&path.display().to_string()) && e.contains("readable by group or others"),
        "{e}"
    );
}

#[test]
fn tokens_from_the_file_or_a_token_file() {
    let d = Dir::new("token");
    d.write("ca.crt", CA, 0o644);
    let cluster = format!("{SERVER}    certificate-authority: ca.crt\n");
    let path = d.write(
        "a.conf",
        &kubeconfig(&cluster, "    token: abc.def-ghi\n"),
        0o600,
    );
    let kc = load(&path).unwrap();
    let Credentials::Token(t) = &kc.credentials else {
        panic!()
    };
    assert_eq!(t.value.0, "abc.def-ghi");
    assert!(!format!("{kc:?}").contains("abc.def"));
    let tf = d.write("token", "  tok123\n", 0o600);
    let path = d.write(
        "b.conf",
        &kubeconfig(&cluster, "    tokenFile: token\n"),
        0o644,
    );
    let kc = load(&path).unwrap();
    let Credentials::Token(t) = &kc.credentials else {
        panic!()
    };
    assert_eq!(t.value.0, "tok123");
    std::fs::set_permissions(&tf, std::fs::Permissions::from_mode(0o640)).unwrap();
    let e = load_err(&path);
    assert!(
        e.contains(&tf.display().to_string()) && e.contains("mode 0640"),
        "{e}"
    );
    d.write("token", "has space\n", 0o600);
    let e = load_err(&path);
    assert!(
        e.contains("users[u].user.token") && !e.contains("has space"),
        "{e}"
    );
}

#[test]
fn refusals_name_the_file_and_field() {
    let d = Dir::new("bad");
    d.write("ca.crt", CA, 0o644);
    d.write("n.crt", CRT, 0o644);
    d.write("n.key", KEY, 0o600);
    d.write("open.key", KEY, 0o644);
    let ca = "    certificate-authority: ca.crt\n";
    let cert = "    client-certificate: n.crt\n    client-key: n.key\n";
    let cases: Vec<(String, String, &str)> = vec![
        (
            format!("    server: http://10.0.0.1:8080\n{ca}"),
            cert.into(),
            "clusters[c].cluster.server: must start with https://",
        ),
        (
            format!("    server: https://10.0.0.1:0\n{ca}"),
            cert.into(),
            "bad port",
        ),
        (
            format!("{SERVER}{ca}    insecure-skip-tls-verify: true\n"),
            cert.into(),
            "insecure-skip-tls-verify: not supported",
        ),
        (
            SERVER.into(),
            cert.into(),
            "certificate-authority: required",
        ),
        (
            format!("{SERVER}{ca}    certificate-authority-data: Q0E=\n"),
            cert.into(),
            "not both",
        ),
        (
            format!("{SERVER}    certificate-authority: missing.crt\n"),
            cert.into(),
            "missing.crt: No such file",
        ),
        (
            format!("{SERVER}{ca}"),
            "    exec:\n      command: aws\n".into(),
            "users[u].user.exec: credential plugins are not supported",
        ),
        (
            format!("{SERVER}{ca}"),
            "    username: admin\n    password: hunter2\n".into(),
            "basic authentication",
        ),
        (
            format!("{SERVER}{ca}"),
            "    client-certificate: n.crt\n".into(),
            "client-key: required",
        ),
        (
            format!("{SERVER}{ca}"),
            "    client-certificate: n.crt\n    client-key: open.key\n".into(),
            "open.key: holds a secret but is readable by group or others (mode 0644)",
        ),
        (format!("{SERVER}{ca}"), "    {}\n".into(), "no credentials"),
        (
            format!("{SERVER}{ca}"),
            format!("{cert}    token: x\n"),
            "not both",
        ),
        (
            format!("{SERVER}    certificate-authority-data: \"!!\"\n"),
            cert.into(),
            "certificate-authority-data: invalid base64",
        ),
    ];
    for (i, (cluster, user, want)) in cases.iter().enumerate() {
        let path = d.write(&format!("k{i}.conf"), &kubeconfig(cluster, user), 0o600);
        let e = load_err(&path);
        assert!(e.contains(want), "case {i}: {e}");
        assert!(
            e.starts_with(&d.0.display().to_string()),
            "case {i} names no file: {e}"
        );
        assert!(!e.contains("hunter2") && !e.contains("SECRETKEY"), "{e}");
    }
}

#[test]
fn structure_errors() {
    let d = Dir::new("struct");
    let cases = [
        ("clusters: []\n", "current-context: required"),
        (
            "current-context: nope\ncontexts: []\n",
            "contexts[nope]: not found",
        ),
        (
            "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n",
            "clusters[c]: not found",
        ),
        ("a: b\n  c: d\n", "line 2, column 3: bad indentation"),
        ("- just\n- a list\n", "not a kubeconfig"),
        ("current-context: &a x\n", "anchors"),
    ];
    for (text, want) in cases {
        let path = d.write("k.conf", text, 0o600);
        let e = load_err(&path);
        assert!(e.contains(want), "{text:?}: {e}");
    }
    // Not a regular file, and too large.
    let e = load_err(&d.0);
    assert!(
        e.contains("not a regular file") || e.contains("Is a directory"),
        "{e}"
    );
    let big = d.write("big.conf", &"#".repeat(MAX_FILE_BYTES + 1), 0o600);
    assert!(load_err(&big).contains("larger than"), "{}", load_err(&big));
    let fifo = d.0.join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    assert!(load_err(&fifo).contains("not a regular file"));
}

#[test]
fn server_urls() {
    let ok = [
        ("https://1.2.3.4", "1.2.3.4", 443, ""),
        ("https://API.example.com:6443/", "api.example.com", 6443, ""),
        ("https://[::1]:6443/prefix/x", "::1", 6443, "/prefix/x"),
    ];
    for (url, host, port, prefix) in ok {
        let u = ServerUrl::parse(url).unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.prefix.as_str()),
            (host, port, prefix),
            "{url}"
        );
    }
    for bad in [
        "http://x",
        "https://",
        "https://u:p@x",
        "https://x:99999",
        "https://x/?a=b",
        "https://[::1",
        "https://a b",
    ] {
        assert!(ServerUrl::parse(bad).is_err(), "{bad}");
    }
}
