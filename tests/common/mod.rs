//! Test harness for integration tests: a real, private containerd per test (or one shared
//! per test binary), locally built OCI images, a local registry with htpasswd auth.
//!
//! Every `tests/*.rs` that needs a runtime does `mod common;`. This file only drives the
//! shell scripts in `tests/harness/` (the single implementation, also used by `make demo`,
//! `make bench` and CI); read their headers for what happens on the machine.
//!
//! Needs root and the packages of `tests/harness/install-deps.sh`. Nothing is skipped:
//! without them every call here panics with a message naming that script.
//!
//! # API
//!
//! ```text
//! Containerd::start() -> Containerd          fresh private instance, pause + busybox imported;
//!                                            Drop tears it down (also when the test panics)
//! Containerd::shared() -> &'static Containerd  one per test binary, started lazily, torn
//!                                            down by a watchdog when the process exits
//!   .endpoint() -> String                    "unix:///.../containerd.sock" (CRI endpoint)
//!   .socket() -> &Path                       the socket path
//!   .dir() -> &Path                          the instance directory
//!   .sandbox_image() -> &str                 pause image name (containerd's sandbox_image;
//!                                            give it to tinylet as `sandboxImage`)
//!   .test_image() -> &str                    busybox image (Cmd ["sh"]), already imported
//!   .snapshotter() -> &str                   "overlayfs" (or "native" where overlay fails)
//!   .cni_bridge() / .cni_subnet() -> &str    this instance's pod network, e.g. 10.99.3.0/24
//!   .stop()                                  stop containerd only; shims/containers live on
//!   .start_again()                           start containerd again after stop()
//!   .restart()                               stop() + start_again()
//!   .reboot()                                device reboot: containerd, shims, containers and
//!                                            pod networks gone, state dir wiped, root (images,
//!                                            snapshots, metadata) kept, containerd started
//!   .ctr(&[args]) -> Output                  `ctr --address SOCK args...`
//!   .ctr_ok(&[args]) -> String               same, panics (with stderr) unless it succeeds
//!   .import(&Path)                           import an OCI archive into namespace k8s.io
//!   .log() -> String                         containerd's log so far (for failure messages)
//!
//! ImageBuilder::new(name)                    a busybox image; name normalized like docker
//!   .pad(bytes) .entrypoint(&[..]) .cmd(&[..]) .workdir(dir) .env("K=V")
//!   .build() -> Image                        cached per process for the same spec
//! build_image(name, pad_bytes, cmd) -> Image shorthand for the builder
//! Image { name, tar, size, id, manifest_digest }
//!   name: fully qualified ("docker.io/library/x:1", "localhost/y:2"), as CRI reports it
//!   tar: the OCI archive; size: manifest + config + layers in bytes, exactly CRI's
//!   Image.size once imported; id: config digest (CRI's image id); manifest_digest
//!   Images share the busybox layer; `pad` adds a layer of random bytes of that size.
//!
//! Registry::start(&Containerd) -> Registry   docker-registry on 127.0.0.1:<free port> with
//!                                            htpasswd auth; the instance pulls from it over
//!                                            plain http (certs.d hosts.toml); Drop removes it
//!   .addr() -> &str                          "127.0.0.1:PORT"
//!   .user() / .password() -> &str            the credentials it accepts
//!   .push(&Path, "name:tag") -> String       skopeo copy; returns "127.0.0.1:PORT/name:tag"
//!                                            (while frozen or stopped: through a second
//!                                            registry process on the same storage)
//!   .reference("name:tag") -> String         same reference, without pushing
//!   .stop() / .start_again()                 offline simulation (data and port kept)
//!   .freeze() / .thaw()                      SIGSTOP / SIGCONT: a registry that hangs (TCP
//!                                            connects, nothing answers), as over an uplink
//!                                            that drops packets
//! ```
//!
//! A real Kubernetes control plane for the cluster tests: `common::kube::Kube` (see
//! `kube.rs`), in the same session and torn down by the same watchdog.
//!
//! Instances live under a per-process session directory (`/dev/shm/tlh-PID` when /dev/shm
//! is a roomy tmpfs without noexec/nodev, else `/tmp/tlh-PID`; `TINYLET_HARNESS_ROOT`
//! overrides the parent).
//! Do not restart or reboot the shared instance: other tests use it at the same time.
#![allow(dead_code)]

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

pub mod kube;
pub mod promtool;
pub mod pty;

/// Directory of the harness scripts.
fn harness_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/harness")
}

/// Runs `tests/harness/<script> args...`; returns stdout, panics with stderr on failure.
fn run_script<S: AsRef<OsStr>>(script: &str, args: &[S]) -> String {
    match try_script(script, args) {
        Ok(out) => out,
        Err(msg) => panic!("{msg}"),
    }
}

/// Like [`run_script`], but returns the failure message instead of panicking.
fn try_script<S: AsRef<OsStr>>(script: &str, args: &[S]) -> Result<String, String> {
    let path = harness_dir().join(script);
    let out = Command::new(&path)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let shown: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    Err(format!(
        "tests/harness/{script} {} failed ({}):\n{}",
        shown.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// KEY=value lines (the scripts' env files) into a map.
fn parse_env(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Value of `key` in an env map; panics naming the file when missing.
fn env_value(env: &HashMap<String, String>, key: &str, file: &Path) -> String {
    match env.get(key) {
        Some(v) => v.clone(),
        None => panic!("{} has no {key}", file.display()),
    }
}

/// The per-process session: a directory holding this process's instances, and the write
/// end of the watchdog's stdin pipe (closed by the kernel when the process exits).
struct Session {
    dir: PathBuf,
    next: AtomicUsize,
    _watchdog: ChildStdin,
}

impl Session {
    /// A fresh, unused path under the session directory (`prefix` + counter).
    fn new_path(&self, prefix: &str) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("{prefix}{n}"))
    }
}

/// Fails clearly when the harness cannot work here (not root, containerd missing).
fn preflight() {
    if !rustix::process::geteuid().is_root() {
        panic!(
            "the containerd test harness needs root (mounts, network namespaces); \
             run the tests as root after tests/harness/install-deps.sh"
        );
    }
    let missing: Vec<&str> = [
        "containerd",
        "ctr",
        "runc",
        "gcc",
        "skopeo",
        "docker-registry",
    ]
    .into_iter()
    .filter(|t| {
        !std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(t).is_file()))
            .unwrap_or(false)
    })
    .collect();
    if !missing.is_empty() {
        panic!(
            "missing {}: run tests/harness/install-deps.sh (as root) first",
            missing.join(", ")
        );
    }
}

/// Parent of session directories: $TINYLET_HARNESS_ROOT, else /dev/shm when it has at
/// least 1 GiB free and allows exec and device nodes (tmpfs: containerd's many fsyncs
/// cost nothing; an instance starts ~0.5 s sooner), else /tmp.
fn session_root() -> PathBuf {
    use rustix::fs::StatVfsMountFlags as F;
    if let Some(root) = std::env::var_os("TINYLET_HARNESS_ROOT") {
        return PathBuf::from(root);
    }
    let shm = Path::new("/dev/shm");
    if let Ok(st) = rustix::fs::statvfs(shm) {
        let roomy = st.f_bavail.saturating_mul(st.f_frsize) >= 1 << 30;
        let usable = !st.f_flag.intersects(F::NOEXEC | F::NODEV | F::RDONLY);
        if roomy && usable {
            return shm.to_path_buf();
        }
    }
    PathBuf::from("/tmp")
}

/// Creates a session directory of our own below `root`: `tlh-PID`, or `tlh-PID-N` when
/// that name is taken. A taken name is a dead process's session (PIDs are reused, and
/// a session whose teardown failed or was cut short stays behind), so the directory is
/// created with `create_dir`, which fails rather than adopting it.
pub fn new_session_dir(root: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(root)?;
    let pid = std::process::id();
    for n in 0..1000 {
        let name = match n {
            0 => format!("tlh-{pid}"),
            _ => format!("tlh-{pid}-{n}"),
        };
        let dir = root.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                // The marker lets the watchdog's `containerd.sh reap` know the directory
                // is ours.
                std::fs::write(dir.join(".tinylet-harness-session"), b"")?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                eprintln!("harness: {} is left from an earlier session", dir.display());
            }
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "{}/tlh-{pid} and its 999 successors all exist",
        root.display()
    )))
}

/// The session, created on first use together with its watchdog.
fn session() -> &'static Session {
    static SESSION: OnceLock<Session> = OnceLock::new();
    SESSION.get_or_init(|| {
        preflight();
        let dir = match new_session_dir(&session_root()) {
            Ok(d) => d,
            Err(e) => panic!("cannot create a harness session: {e}"),
        };
        let watchdog = harness_dir().join("watchdog.sh");
        let child = Command::new(&watchdog)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn();
        let stdin = match child {
            Ok(mut c) => match c.stdin.take() {
                Some(s) => s,
                None => panic!("watchdog {} has no stdin pipe", watchdog.display()),
            },
            Err(e) => panic!("cannot start {}: {e}", watchdog.display()),
        };
        Session {
            dir,
            next: AtomicUsize::new(1),
            _watchdog: stdin,
        }
    })
}

/// A private containerd instance (see the module docs).
pub struct Containerd {
    dir: PathBuf,
    socket: PathBuf,
    sandbox_image: String,
    test_image: String,
    snapshotter: String,
    cni_bridge: String,
    cni_subnet: String,
    registries: AtomicUsize,
    /// The shared instance is never torn down by Drop (statics are not dropped anyway).
    owned: bool,
}

impl Containerd {
    /// Starts a fresh private instance with the pause and busybox images imported.
    pub fn start() -> Containerd {
        Self::start_owned(true)
    }

    /// The instance shared by all tests of this binary, started on first use.
    pub fn shared() -> &'static Containerd {
        static SHARED: OnceLock<Containerd> = OnceLock::new();
        SHARED.get_or_init(|| Self::start_owned(false))
    }

    fn start_owned(owned: bool) -> Containerd {
        let dir = session().new_path("c");
        if let Err(msg) = try_script("containerd.sh", &[OsStr::new("up"), dir.as_os_str()]) {
            let _ = try_script("containerd.sh", &[OsStr::new("down"), dir.as_os_str()]);
            panic!("{msg}");
        }
        let env_file = dir.join("env");
        let env = match std::fs::read_to_string(&env_file) {
            Ok(t) => parse_env(&t),
            Err(e) => panic!("cannot read {}: {e}", env_file.display()),
        };
        let get = |k: &str| env_value(&env, k, &env_file);
        Containerd {
            socket: PathBuf::from(get("CONTAINERD_ADDRESS")),
            sandbox_image: get("TINYLET_SANDBOX_IMAGE"),
            test_image: get("TINYLET_TEST_IMAGE"),
            snapshotter: get("TINYLET_SNAPSHOTTER"),
            cni_bridge: get("TINYLET_CNI_BRIDGE"),
            cni_subnet: get("TINYLET_CNI_SUBNET"),
            registries: AtomicUsize::new(1),
            dir,
            owned,
        }
    }

    /// CRI endpoint, `unix:///...`.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Path of containerd's gRPC socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The instance directory (config.toml, containerd.log, root/, state/, ...).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The pause image containerd uses for sandboxes (`sandboxImage` for tinylet).
    pub fn sandbox_image(&self) -> &str {
        &self.sandbox_image
    }

    /// The busybox image imported into every instance (Cmd `["sh"]`).
    pub fn test_image(&self) -> &str {
        &self.test_image
    }

    /// The snapshotter CRI uses here.
    pub fn snapshotter(&self) -> &str {
        &self.snapshotter
    }

    /// Name of this instance's CNI bridge (unique on the machine).
    pub fn cni_bridge(&self) -> &str {
        &self.cni_bridge
    }

    /// This instance's pod subnet (unique on the machine).
    pub fn cni_subnet(&self) -> &str {
        &self.cni_subnet
    }

    fn script(&self, cmd: &str) {
        run_script("containerd.sh", &[OsStr::new(cmd), self.dir.as_os_str()]);
    }

    /// Stops containerd only; shims and containers keep running.
    pub fn stop(&self) {
        self.script("stop");
    }

    /// Starts containerd again after [`Containerd::stop`]; returns once CRI answers.
    pub fn start_again(&self) {
        self.script("start");
    }

    /// Restarts containerd (containers keep running).
    pub fn restart(&self) {
        self.script("restart");
    }

    /// Simulates a device reboot (see the module docs).
    pub fn reboot(&self) {
        self.script("reboot");
    }

    /// Runs `ctr --address SOCKET args...`.
    pub fn ctr(&self, args: &[&str]) -> Output {
        match Command::new("ctr")
            .arg("--address")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .output()
        {
            Ok(o) => o,
            Err(e) => panic!("cannot run ctr: {e}"),
        }
    }

    /// Runs ctr and returns its stdout; panics with its stderr unless it succeeds.
    pub fn ctr_ok(&self, args: &[&str]) -> String {
        let out = self.ctr(args);
        if !out.status.success() {
            panic!(
                "ctr {} failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Imports an OCI archive into namespace k8s.io (unpacked for CRI's snapshotter).
    pub fn import(&self, tar: &Path) {
        run_script(
            "containerd.sh",
            &[OsStr::new("import"), self.dir.as_os_str(), tar.as_os_str()],
        );
    }

    /// containerd's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("containerd.log")).unwrap_or_default()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        if let Err(msg) = try_script("containerd.sh", &[OsStr::new("down"), self.dir.as_os_str()]) {
            // No panic in drop (it may run during unwinding); the watchdog retries at exit.
            eprintln!("{msg}");
        }
    }
}

/// A locally built OCI image archive (see the module docs).
#[derive(Clone, Debug)]
pub struct Image {
    /// Fully qualified name, as CRI reports it in repo_tags.
    pub name: String,
    /// The OCI archive (for `Containerd::import` and `Registry::push`).
    pub tar: PathBuf,
    /// Manifest + config + layer blob sizes, in bytes: CRI's `Image.size`.
    pub size: u64,
    /// Config digest: the image id CRI reports.
    pub id: String,
    /// Manifest digest.
    pub manifest_digest: String,
}

/// Specification of a busybox-based test image.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ImageBuilder {
    name: String,
    pad: u64,
    entrypoint: Option<Vec<String>>,
    cmd: Option<Vec<String>>,
    workdir: Option<String>,
    env: Vec<String>,
}

impl ImageBuilder {
    /// A busybox image named `name` (normalized: "x:1" becomes "docker.io/library/x:1").
    pub fn new(name: &str) -> ImageBuilder {
        ImageBuilder {
            name: normalize_ref(name),
            ..ImageBuilder::default()
        }
    }

    /// Adds a layer with `/pad`, `bytes` random bytes (distinct images of known size).
    pub fn pad(mut self, bytes: u64) -> ImageBuilder {
        self.pad = bytes;
        self
    }

    /// Sets the image's Entrypoint.
    pub fn entrypoint(mut self, argv: &[&str]) -> ImageBuilder {
        self.entrypoint = Some(argv.iter().map(|s| s.to_string()).collect());
        self
    }

    /// Sets the image's Cmd (default `["sh"]` when neither Cmd nor Entrypoint is set).
    pub fn cmd(mut self, argv: &[&str]) -> ImageBuilder {
        self.cmd = Some(argv.iter().map(|s| s.to_string()).collect());
        self
    }

    /// Sets the image's WorkingDir.
    pub fn workdir(mut self, dir: &str) -> ImageBuilder {
        self.workdir = Some(dir.to_string());
        self
    }

    /// Adds a `K=V` entry to the image's Env (PATH is always set).
    pub fn env(mut self, kv: &str) -> ImageBuilder {
        self.env.push(kv.to_string());
        self
    }

    /// Builds the archive (once per process for an identical spec).
    pub fn build(&self) -> Image {
        static CACHE: OnceLock<Mutex<HashMap<ImageBuilder, Image>>> = OnceLock::new();
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
        if let Some(img) = lock(cache).get(self) {
            return img.clone();
        }
        let img = self.build_uncached();
        lock(cache).insert(self.clone(), img.clone());
        img
    }

    fn build_uncached(&self) -> Image {
        let out = session().new_path("img").with_extension("tar");
        let mut args: Vec<String> = vec![
            "busybox".into(),
            "--name".into(),
            self.name.clone(),
            "--out".into(),
            out.display().to_string(),
            "--pad".into(),
            self.pad.to_string(),
        ];
        if let Some(e) = &self.entrypoint {
            args.extend(["--entrypoint".into(), json_array(e)]);
        }
        if let Some(c) = &self.cmd {
            args.extend(["--cmd".into(), json_array(c)]);
        }
        if let Some(w) = &self.workdir {
            args.extend(["--workdir".into(), w.clone()]);
        }
        for e in &self.env {
            args.extend(["--env".into(), e.clone()]);
        }
        let info = parse_env(&run_script("image.sh", &args));
        let field = |k: &str| match info.get(k) {
            Some(v) => v.clone(),
            None => panic!("image.sh printed no {k} for {}", self.name),
        };
        let size = field("size");
        Image {
            name: field("name"),
            tar: out,
            size: match size.parse() {
                Ok(n) => n,
                Err(_) => panic!("image.sh printed size={size}, not a number"),
            },
            id: field("config"),
            manifest_digest: field("manifest"),
        }
    }
}

/// Shorthand: a busybox image `name` with `pad_bytes` of padding and Cmd `cmd` (the
/// default `["sh"]` when `cmd` is empty).
pub fn build_image(name: &str, pad_bytes: u64, cmd: &[&str]) -> Image {
    let b = ImageBuilder::new(name).pad(pad_bytes);
    if cmd.is_empty() {
        b.build()
    } else {
        b.cmd(cmd).build()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// JSON array of strings (for image.sh's --entrypoint/--cmd).
fn json_array(items: &[String]) -> String {
    let mut s = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push('"');
        for c in item.chars() {
            match c {
                '"' => s.push_str("\\\""),
                '\\' => s.push_str("\\\\"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(s, "\\u{:04x}", c as u32);
                }
                c => s.push(c),
            }
        }
        s.push('"');
    }
    s.push(']');
    s
}

/// Docker-style reference normalization: a name without a registry host gets
/// "docker.io/" (and "library/" when it has no path), and ":latest" when it has neither
/// tag nor digest. This is the name CRI reports for the image.
pub fn normalize_ref(name: &str) -> String {
    let (first, rest) = match name.split_once('/') {
        Some((f, r)) => (f, Some(r)),
        None => (name, None),
    };
    let has_host =
        rest.is_some() && (first.contains('.') || first.contains(':') || first == "localhost");
    let mut full = match (has_host, rest) {
        (true, _) => name.to_string(),
        (false, Some(_)) => format!("docker.io/{name}"),
        (false, None) => format!("docker.io/library/{name}"),
    };
    let last = full.rsplit('/').next().unwrap_or_default();
    if !last.contains(':') && !last.contains('@') {
        full.push_str(":latest");
    }
    full
}

/// A local registry with htpasswd auth that an instance pulls from (see the module docs).
pub struct Registry {
    dir: PathBuf,
    addr: String,
    user: String,
    password: String,
}

impl Registry {
    /// Starts a registry on a free loopback port and points `containerd` at it.
    pub fn start(containerd: &Containerd) -> Registry {
        let n = containerd.registries.fetch_add(1, Ordering::Relaxed);
        let dir = containerd.dir.join(format!("reg-{n}"));
        run_script(
            "registry.sh",
            &[
                OsStr::new("up"),
                dir.as_os_str(),
                containerd.dir.as_os_str(),
            ],
        );
        let env = parse_env(&run_script(
            "registry.sh",
            &[OsStr::new("env"), dir.as_os_str()],
        ));
        let file = dir.join("env");
        Registry {
            addr: env_value(&env, "TINYLET_REGISTRY_ADDR", &file),
            user: env_value(&env, "TINYLET_REGISTRY_USER", &file),
            password: env_value(&env, "TINYLET_REGISTRY_PASSWORD", &file),
            dir,
        }
    }

    /// "127.0.0.1:PORT".
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The user name the registry accepts.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The password the registry accepts.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The pullable reference of `name_tag` in this registry.
    pub fn reference(&self, name_tag: &str) -> String {
        format!("{}/{}", self.addr, name_tag)
    }

    /// Pushes an OCI archive as `name_tag`; returns its pullable reference.
    pub fn push(&self, tar: &Path, name_tag: &str) -> String {
        run_script(
            "registry.sh",
            &[
                OsStr::new("push"),
                self.dir.as_os_str(),
                tar.as_os_str(),
                OsStr::new(name_tag),
            ],
        )
        .trim()
        .to_string()
    }

    /// Stops serving (offline simulation); data, port and credentials are kept.
    pub fn stop(&self) {
        run_script("registry.sh", &[OsStr::new("stop"), self.dir.as_os_str()]);
    }

    /// Serves again on the same port after [`Registry::stop`].
    pub fn start_again(&self) {
        run_script("registry.sh", &[OsStr::new("start"), self.dir.as_os_str()]);
    }

    /// Freezes the registry process (SIGSTOP): connections hang instead of failing.
    pub fn freeze(&self) {
        run_script("registry.sh", &[OsStr::new("freeze"), self.dir.as_os_str()]);
    }

    /// Lets a frozen registry run again (SIGCONT); pending requests get their answers.
    pub fn thaw(&self) {
        run_script("registry.sh", &[OsStr::new("thaw"), self.dir.as_os_str()]);
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if let Err(msg) = try_script("registry.sh", &[OsStr::new("down"), self.dir.as_os_str()]) {
            eprintln!("{msg}");
        }
    }
}
