//! A real Kubernetes control plane (v1.20.2: etcd, kube-apiserver, kube-controller-manager,
//! kube-scheduler on loopback) for the cluster tests; drives `tests/harness/kube.sh`,
//! whose header says what runs and with which flags. Binaries come from
//! `tests/harness/kube-build.sh` (built once per machine by install-deps.sh, cached).
//!
//! ```text
//! Kube::start() -> Kube                     fresh control plane, bound service-account
//!                                           tokens on (pods get kube-api-access-* volumes);
//!                                           Drop tears it down (also when the test panics)
//! Kube::start_with_bound_tokens(false)      same, v1.20's default-token-* secret volumes
//! Kube::shared() -> &'static Kube           one per test binary (bound tokens on), torn
//!                                           down by the watchdog when the process exits
//!   .api_url() -> &str                      "https://127.0.0.1:PORT"
//!   .ca_file() / .kubeconfig_admin() -> &Path   cluster CA; kubeconfig of system:masters
//!   .kubectl(&[..]) -> Output               the matching kubectl (v1.20.2) as admin
//!   .kubectl_path() -> &Path                that kubectl (for a child process: logs -f)
//!   .kubectl_ok(&[..]) -> String            same, panics (with stderr) unless it succeeds
//!   .kubectl_as(kubeconfig, &[..]) -> Output    same kubectl with another kubeconfig
//!   .apply(yaml_or_json)                    `kubectl apply -f -` with that text
//!   .wait_namespace(ns)                     until ns has its service account (+ token
//!                                           secret without bound tokens) and kube-root-ca.crt
//!   .node_identity(name) -> NodeIdentity    system:node:NAME in system:nodes: client cert,
//!                                           key (0600), serving cert, kubeconfig
//!   .node_kubeconfig(name) -> PathBuf       that identity's kubeconfig
//!   .node_certs(&[names])                   client and serving certificates of many nodes
//!                                           (P-256 keys, nodes/NAME/), no kubeconfig
//!   .restart_apiserver() -> SystemTime      SIGTERM (graceful shutdown), the same API
//!                                           server started again; returns once ready,
//!                                           with when the old one was gone
//!   .relay() -> Relay                       TCP relay in front of the API server
//!   .log(component) -> String               e.g. log("kube-apiserver")
//! Relay: .url(), .cut() (live connections dropped, new ones refused), .restore(),
//!   .node_identity(name) (kubeconfig pointing at the relay); Drop stops it
//! NodeIdentity: name, kubeconfig, cert, key, ca, serving_cert, serving_key, server;
//!   .curl(path) -> Command                  curl as the node (for streaming: watch=1)
//!   .request(method, path, body) -> (u16, String)   status and body
//! ```
use super::{env_value, parse_env, run_script, session, try_script};
use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A private control plane (see the module docs).
pub struct Kube {
    dir: PathBuf,
    api_url: String,
    ca_file: PathBuf,
    kubeconfig_admin: PathBuf,
    kubectl: PathBuf,
    bound_tokens: bool,
    relays: AtomicUsize,
    /// The shared instance is never torn down by Drop (statics are not dropped anyway).
    owned: bool,
}

impl Kube {
    /// Starts a fresh control plane with bound service-account tokens on.
    pub fn start() -> Kube {
        Self::start_owned(true, true)
    }

    /// Starts a fresh control plane with BoundServiceAccountTokenVolume set to `bound`.
    pub fn start_with_bound_tokens(bound: bool) -> Kube {
        Self::start_owned(bound, true)
    }

    /// The control plane shared by all tests of this binary, started on first use.
    pub fn shared() -> &'static Kube {
        static SHARED: OnceLock<Kube> = OnceLock::new();
        SHARED.get_or_init(|| Self::start_owned(true, false))
    }

    fn start_owned(bound: bool, owned: bool) -> Kube {
        let dir = session().new_path("k");
        let gate = format!("--bound-tokens={bound}");
        let up = [OsStr::new("up"), dir.as_os_str(), OsStr::new(&gate)];
        if let Err(msg) = try_script("kube.sh", &up) {
            let _ = try_script("kube.sh", &[OsStr::new("down"), dir.as_os_str()]);
            panic!("{msg}");
        }
        let env_file = dir.join("env");
        let env = match std::fs::read_to_string(&env_file) {
            Ok(t) => parse_env(&t),
            Err(e) => panic!("cannot read {}: {e}", env_file.display()),
        };
        let get = |k: &str| env_value(&env, k, &env_file);
        Kube {
            api_url: get("KUBE_API_URL"),
            ca_file: PathBuf::from(get("KUBE_CA_FILE")),
            kubeconfig_admin: PathBuf::from(get("KUBE_KUBECONFIG_ADMIN")),
            kubectl: PathBuf::from(get("KUBECTL")),
            bound_tokens: get("KUBE_BOUND_TOKENS") == "true",
            relays: AtomicUsize::new(1),
            dir,
            owned,
        }
    }

    /// The instance directory (env, pki/, log/, nodes/, ...).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// "https://127.0.0.1:PORT" of the API server.
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The cluster CA certificate (signs the API server's and every client certificate).
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// Kubeconfig of an admin (group system:masters).
    pub fn kubeconfig_admin(&self) -> &Path {
        &self.kubeconfig_admin
    }

    /// Whether pods get bound (projected) service-account token volumes.
    pub fn bound_tokens(&self) -> bool {
        self.bound_tokens
    }

    fn script(&self, args: &[&str]) -> String {
        let mut all: Vec<&OsStr> = vec![OsStr::new(args[0]), self.dir.as_os_str()];
        all.extend(args[1..].iter().map(OsStr::new));
        run_script("kube.sh", &all)
    }

    /// The matching kubectl binary.
    pub fn kubectl_path(&self) -> &Path {
        &self.kubectl
    }

    /// Runs the matching kubectl as admin with `args`.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with_stdin(args, None)
    }

    /// Runs the matching kubectl with another `kubeconfig` (e.g. a node's).
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        run_kubectl(&self.kubectl, kubeconfig, args, None)
    }

    fn kubectl_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        run_kubectl(&self.kubectl, &self.kubeconfig_admin, args, stdin)
    }

    /// Runs kubectl as admin; returns stdout, panics with stderr unless it succeeds.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        ok_or_panic(args, self.kubectl(args))
    }

    /// `kubectl apply -f -` with `manifest` (YAML or JSON); returns kubectl's output.
    pub fn apply(&self, manifest: &str) -> String {
        let args = ["apply", "-f", "-"];
        ok_or_panic(&args, self.kubectl_with_stdin(&args, Some(manifest)))
    }

    /// Waits until pods can be made in `ns` (service account, kube-root-ca.crt).
    pub fn wait_namespace(&self, ns: &str) {
        self.script(&["wait-namespace", ns]);
    }

    /// The credentials of node `name` (made on first use, kept for the instance's life).
    pub fn node_identity(&self, name: &str) -> NodeIdentity {
        let kubeconfig = PathBuf::from(self.script(&["node-identity", name]).trim());
        NodeIdentity::new(&self.dir, name, kubeconfig, self.api_url.clone())
    }

    /// Kubeconfig of node `name` (see [`Kube::node_identity`]).
    pub fn node_kubeconfig(&self, name: &str) -> PathBuf {
        self.node_identity(name).kubeconfig
    }

    /// Certificates for each of `names` in `nodes/NAME/` (`client.crt`/`.key`,
    /// `serving.crt`/`.key`, `ca.crt`), as [`Kube::node_identity`] has them but with
    /// P-256 keys and no kubeconfig: a fleet's worth at once.
    pub fn node_certs(&self, names: &[String]) {
        let mut args = vec!["node-certs"];
        args.extend(names.iter().map(String::as_str));
        self.script(&args);
    }

    /// Restarts the API server as an operator would (SIGTERM, its graceful shutdown),
    /// with the same flags and port; returns once it is ready again.
    /// A strategic-merge PATCH of `path` (a status subresource, say
    /// "/api/v1/nodes/NAME/status": kubectl v1.20 cannot patch subresources) with `body`
    /// (JSON) as the admin, through curl with the admin's client certificate.
    pub fn patch_as_admin(&self, path: &str, body: &str) {
        let pki = self.dir.join("pki");
        let out = Command::new("curl")
            .args(["-sS", "--fail", "-X", "PATCH", "--cacert"])
            .arg(&self.ca_file)
            .arg("--cert")
            .arg(pki.join("admin.crt"))
            .arg("--key")
            .arg(pki.join("admin.key"))
            .args(["-H", "Content-Type: application/strategic-merge-patch+json"])
            .args(["--data-binary", body])
            .arg(format!("{}{path}", self.api_url))
            .output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => panic!(
                "PATCH {path} as admin: {}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => panic!("cannot run curl: {e}"),
        }
    }

    /// Returns when the old server was gone: the new one may serve requests from then
    /// on, before /readyz says so.
    pub fn restart_apiserver(&self) -> SystemTime {
        let out = self.script(&["apiserver-restart"]);
        let gone = out
            .lines()
            .last()
            .and_then(|l| l.trim().parse::<f64>().ok());
        match gone {
            Some(secs) => UNIX_EPOCH + Duration::from_secs_f64(secs),
            None => panic!("kube.sh apiserver-restart: no stop time in {out:?}"),
        }
    }

    /// A new TCP relay in front of the API server, for uplink-loss tests.
    pub fn relay(&self) -> Relay<'_> {
        let id = format!("r{}", self.relays.fetch_add(1, Ordering::Relaxed));
        let url = self.script(&["relay-up", &id]).trim().to_string();
        Relay {
            kube: self,
            id,
            url,
        }
    }

    /// Log of `component` (etcd, kube-apiserver, kube-controller-manager, kube-scheduler).
    pub fn log(&self, component: &str) -> String {
        std::fs::read_to_string(self.dir.join("log").join(format!("{component}.log")))
            .unwrap_or_default()
    }
}

impl Drop for Kube {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        if let Err(msg) = try_script("kube.sh", &[OsStr::new("down"), self.dir.as_os_str()]) {
            // No panic in drop (it may run during unwinding); the watchdog retries at exit.
            eprintln!("{msg}");
        }
    }
}

/// Runs `kubectl --kubeconfig KUBECONFIG args...`, feeding `stdin` when given.
fn run_kubectl(kubectl: &Path, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(kubectl);
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => panic!("cannot run {}: {e}", kubectl.display()),
    };
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        if let Err(e) = pipe.write_all(text.as_bytes()) {
            panic!("cannot feed kubectl {}: {e}", args.join(" "));
        }
    }
    match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => panic!("kubectl {}: {e}", args.join(" ")),
    }
}

fn ok_or_panic(args: &[&str], out: Output) -> String {
    if !out.status.success() {
        panic!(
            "kubectl {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A TCP relay between clients and the API server (see the module docs).
pub struct Relay<'a> {
    kube: &'a Kube,
    id: String,
    url: String,
}

impl Relay<'_> {
    /// "https://127.0.0.1:PORT" of the relay (the API server's certificate fits it).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Uplink loss: closes every live connection, refuses new ones until [`Relay::restore`].
    pub fn cut(&self) {
        self.kube.script(&["relay-cut", &self.id]);
    }

    /// Accepts connections again, on the same port.
    pub fn restore(&self) {
        self.kube.script(&["relay-restore", &self.id]);
    }

    /// Node `name`'s credentials with a kubeconfig pointing at this relay.
    pub fn node_identity(&self, name: &str) -> NodeIdentity {
        let out = self.kube.script(&["node-identity", name, &self.id]);
        NodeIdentity::new(
            &self.kube.dir,
            name,
            PathBuf::from(out.trim()),
            self.url.clone(),
        )
    }
}

impl Drop for Relay<'_> {
    fn drop(&mut self) {
        let args = [
            OsStr::new("relay-down"),
            self.kube.dir.as_os_str(),
            OsStr::new(&self.id),
        ];
        if let Err(msg) = try_script("kube.sh", &args) {
            eprintln!("{msg}");
        }
    }
}

/// A node's credentials, as a tinylet user would make them (see the module docs).
#[derive(Clone, Debug)]
pub struct NodeIdentity {
    pub name: String,
    pub kubeconfig: PathBuf,
    /// Client certificate (CN=system:node:NAME, O=system:nodes) and its key (mode 0600).
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
    /// Serving certificate for the node's :10250 (SANs NAME, 127.0.0.1) and its key.
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    /// The URL the kubeconfig points at (API server or relay).
    pub server: String,
}

impl NodeIdentity {
    fn new(kube_dir: &Path, name: &str, kubeconfig: PathBuf, server: String) -> NodeIdentity {
        let d = kube_dir.join("nodes").join(name);
        NodeIdentity {
            name: name.to_string(),
            kubeconfig,
            cert: d.join("client.crt"),
            key: d.join("client.key"),
            ca: d.join("ca.crt"),
            serving_cert: d.join("serving.crt"),
            serving_key: d.join("serving.key"),
            server,
        }
    }

    /// curl for `path` (e.g. "/api/v1/pods?watch=1") on `server`, authenticated as the
    /// node; stdout/stderr piped. Add method and body as needed.
    pub fn curl(&self, path: &str) -> Command {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "-N", "--cacert"])
            .arg(&self.ca)
            .arg("--cert")
            .arg(&self.cert)
            .arg("--key")
            .arg(&self.key)
            .arg(format!("{}{path}", self.server))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// `method path` with a JSON `body`; returns the HTTP status and the response body.
    /// Panics when no HTTP response came (connection failed).
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        let mut cmd = self.curl(path);
        cmd.args(["-X", method, "--max-time", "30", "-w", "\n%{http_code}"]);
        if let Some(b) = body {
            cmd.args(["-H", "Content-Type: application/json", "--data-binary", b]);
        }
        let out = match cmd.output() {
            Ok(o) => o,
            Err(e) => panic!("cannot run curl: {e}"),
        };
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        match code.trim().parse::<u16>() {
            Ok(c) if c > 0 => (c, body.to_string()),
            _ => panic!(
                "{method} {}{path} as {}: no HTTP response ({}): {}",
                self.server,
                self.name,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
}
