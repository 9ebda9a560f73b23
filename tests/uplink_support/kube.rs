//! Stand-in for the project's control-plane harness (`tests/common/kube.rs`, coming
//! from the kube-harness work): one real control plane per test binary, started with
//! the shared example script (`shared/kube/example-up.sh`: etcd, kube-apiserver v1.20.2
//! with the Node authorizer and NodeRestriction, controller-manager, scheduler, on
//! loopback ports picked free), torn down when the test process exits (a watcher
//! process waits for it). Same method names as the harness, so switching is a
//! two-line change. kubectl is the one on PATH (the v1.20.2 kubectl built with Go 1.19
//! crashes in `kubectl config`, a reflect2 incompatibility).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

pub struct Kube {
    dir: PathBuf,
    api_url: String,
}

/// Where the v1.20.2 binaries are: `$KUBE_BIN_DIR`, else the per-machine build cache.
fn bin_dir() -> PathBuf {
    std::env::var_os("KUBE_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/tinylet/kube-1.20.2/bin"))
}

/// The example scripts: `../shared/kube` beside the repository (as CI lays it out).
fn scripts() -> PathBuf {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/kube");
    if beside.join("example-up.sh").exists() {
        beside
    } else {
        PathBuf::from("/work/shared/kube")
    }
}

/// A free loopback port, and the next one (etcd's peer port) free too.
fn free_port_pair() -> u16 {
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        if p < 65535 && std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
}

impl Kube {
    /// Whether the binaries are there (built by the harness's install step).
    pub fn available() -> bool {
        bin_dir().join("kube-apiserver").exists() && scripts().join("example-up.sh").exists()
    }

    pub fn shared() -> &'static Kube {
        static SHARED: OnceLock<Kube> = OnceLock::new();
        SHARED.get_or_init(Kube::start)
    }

    fn start() -> Kube {
        let dir = std::env::temp_dir().join(format!("tinylet-kube-{}", std::process::id()));
        let (port, etcd) = (free_port_pair(), free_port_pair());
        // Tear down when this process is gone, however it ends: the watcher outlives
        // the test process on purpose, so it is never waited for.
        #[allow(clippy::zombie_processes)]
        Command::new("setsid")
            .args([
                "sh",
                "-c",
                "while kill -0 \"$1\" 2>/dev/null; do sleep 1; done; exec \"$2\" \"$3\"",
                "watch",
            ])
            .arg(std::process::id().to_string())
            .arg(scripts().join("example-down.sh"))
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = Command::new("bash")
            .arg(scripts().join("example-up.sh"))
            .arg(&dir)
            .env("KUBE_BIN_DIR", bin_dir())
            .env("PORT", port.to_string())
            .env("ETCD_PORT", etcd.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "example-up.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let kube = Kube {
            dir,
            api_url: format!("https://127.0.0.1:{port}"),
        };
        // The namespaces and service accounts the tests use exist within seconds.
        for _ in 0..120 {
            if kube
                .kubectl(&["get", "serviceaccount", "default", "-n", "default"])
                .status
                .success()
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        kube
    }

    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    fn kubectl(&self, args: &[&str]) -> std::process::Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.dir.join("admin.kubeconfig"))
            .args(args)
            .output()
            .unwrap()
    }

    /// kubectl as admin; stdout, or a panic with stderr.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A kubeconfig for `system:node:NAME` in `system:nodes`, written by kubectl itself
    /// (certificate and key embedded, mode 0600). The certificate is made with a plain
    /// `openssl x509 -req`, as the README tells operators: an X.509 v1 certificate.
    pub fn node_kubeconfig(&self, name: &str) -> PathBuf {
        let pki = self.dir.join("pki");
        let (key, csr, crt) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
        );
        let subject = format!("/CN=system:node:{name}/O=system:nodes");
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&pki)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        openssl(&[
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj",
            &subject,
        ]);
        openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "30",
            "-out",
            &crt,
        ]);
        let kc = self.dir.join(format!("{name}.kubeconfig"));
        let user = format!("system:node:{name}");
        let kc_arg = format!("--kubeconfig={}", kc.display());
        let pki_s = |f: &str| pki.join(f).display().to_string();
        let steps: [Vec<String>; 4] = [
            vec![
                "set-cluster".into(),
                "test".into(),
                format!("--server={}", self.api_url),
                format!("--certificate-authority={}", pki_s("ca.crt")),
                "--embed-certs=true".into(),
            ],
            vec![
                "set-credentials".into(),
                user.clone(),
                format!("--client-certificate={}", pki_s(&crt)),
                format!("--client-key={}", pki_s(&key)),
                "--embed-certs=true".into(),
            ],
            vec![
                "set-context".into(),
                "default".into(),
                "--cluster=test".into(),
                format!("--user={user}"),
            ],
            vec!["use-context".into(), "default".into()],
        ];
        for step in steps {
            let out = Command::new("kubectl")
                .arg("config")
                .arg(&kc_arg)
                .args(&step)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "kubectl config {step:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&kc, std::fs::Permissions::from_mode(0o600)).unwrap();
        kc
    }
}
