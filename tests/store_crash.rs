//! Crash safety of the store: the real `tinylet apply -f DIR` is killed with SIGKILL at
//! random moments while it creates and updates pods, configmaps (one of 32 KiB) and
//! secrets, again and again on the same state directory. After every kill:
//! - every object file in the state directory parses and validates;
//! - every apply the writer acknowledged (printed `KIND/NAME created|configured`, which
//!   it does only after the rename and the directory fsync) is there with its content;
//! - an object the writer was working on when killed holds either its previous durable
//!   content or the new one, never anything else, and never goes backwards later;
//! - a pod's uid, once stored, never changes.
//!
//! This exercises process death, not power loss: what a killed process wrote stays in
//! the page cache, so fsync plays no part and the state directory lives on tmpfs
//! (`/dev/shm`) by default, where fsync costs nothing and 500 kills fit in a few
//! seconds. The fsyncs that make the same order hold across a power cut are in
//! `store::atomic`.
//!
//! `TINYLET_CRASH_KILLS` sets how many kills to reach (default 500);
//! `TINYLET_CRASH_SEED` replays a run (the seed is printed); `TINYLET_CRASH_DIR` picks
//! the directory (e.g. one on the device's flash filesystem).

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tinylet::model::parse_object;
use tinylet::store::Store;

const DEFAULT_KILLS: usize = 500;
/// Safety net so a broken writer cannot hang the suite.
const MAX_RUNS: usize = 20_000;

/// xorshift64*: enough randomness for kill timing and subsets, replayable by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One object the writer keeps updating: its kind directory, resource word and name.
#[derive(Clone, Copy)]
struct Obj {
    dir: &'static str,
    resource: &'static str,
    name: &'static str,
}

const OBJECTS: [Obj; 10] = [
    Obj {
        dir: "pods",
        resource: "pod",
        name: "p0",
    },
    Obj {
        dir: "pods",
        resource: "pod",
        name: "p1",
    },
    Obj {
        dir: "pods",
        resource: "pod",
        name: "p2",
    },
    Obj {
        dir: "pods",
        resource: "pod",
        name: "p3",
    },
    Obj {
        dir: "pods",
        resource: "pod",
        name: "p4",
    },
    Obj {
        dir: "configmaps",
        resource: "configmap",
        name: "c0",
    },
    Obj {
        dir: "configmaps",
        resource: "configmap",
        name: "c1",
    },
    Obj {
        dir: "configmaps",
        resource: "configmap",
        name: "c2",
    },
    Obj {
        dir: "secrets",
        resource: "secret",
        name: "s0",
    },
    Obj {
        dir: "secrets",
        resource: "secret",
        name: "s1",
    },
];

/// The manifest of `o` at `version` (carried in the `version` label).
fn manifest(o: &Obj, version: u64) -> String {
    let meta = format!(
        r#""metadata":{{"name":"{}","labels":{{"version":"{version}"}}}}"#,
        o.name
    );
    match o.resource {
        "pod" => format!(
            r#"{{"apiVersion":"v1","kind":"Pod",{meta},"spec":{{"containers":[
                {{"name":"app","image":"registry.local/app:{version}","args":["--gen","{version}"]}}]}}}}"#
        ),
        "configmap" => {
            // c0 is larger, so its write takes long enough to be hit mid-way.
            let size = if o.name == "c0" { 32 * 1024 } else { 200 };
            let fill = format!("{version:08}").repeat(size / 8);
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap",{meta},"data":{{"v":"{version}","blob":"{fill}"}}}}"#
            )
        }
        _ => format!(
            r#"{{"apiVersion":"v1","kind":"Secret",{meta},"stringData":{{"token":"secret-{version}"}}}}"#
        ),
    }
}

/// What the test knows about one object across runs.
#[derive(Default, Clone)]
struct Known {
    /// The version currently in the input directory.
    input: Option<u64>,
    /// The last version known to be durable in the store.
    durable: Option<u64>,
    /// The pod's uid once stored.
    uid: Option<String>,
}

struct Stats {
    runs: usize,
    kills: usize,
    completed: usize,
    acked: usize,
    torn_temps: usize,
}

#[test]
fn sigkill_during_apply_never_loses_an_acknowledged_write() {
    let wanted: usize = std::env::var("TINYLET_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_KILLS);
    let seed: u64 = std::env::var("TINYLET_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                | 1
        });
    eprintln!("store_crash: seed {seed} (TINYLET_CRASH_SEED), target {wanted} kills");
    let mut rng = Rng(seed);

    let base = std::env::var_os("TINYLET_CRASH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let shm = PathBuf::from("/dev/shm");
            if shm.is_dir() {
                shm
            } else {
                std::env::temp_dir()
            }
        });
    let root = base.join(format!("tinylet-crash-{}", std::process::id()));
    eprintln!("store_crash: state under {}", root.display());
    let _ = std::fs::remove_dir_all(&root);
    let (state, input) = (root.join("state"), root.join("input"));
    std::fs::create_dir_all(&input).unwrap();
    let config = root.join("config.json");
    std::fs::write(&config, r#"{"manifestDirs":[]}"#).unwrap();
    let mut known: Vec<Known> = vec![Known::default(); OBJECTS.len()];
    let mut stats = Stats {
        runs: 0,
        kills: 0,
        completed: 0,
        acked: 0,
        torn_temps: 0,
    };
    let started = Instant::now();

    // Calibrate: how long does an apply that changes everything take, unkilled?
    let mut window = Duration::ZERO;
    for _ in 0..3 {
        let t = Instant::now();
        run_once(
            &state, &input, &config, &mut known, &mut stats, &mut rng, None, true,
        );
        window = window.max(t.elapsed());
    }
    eprintln!(
        "store_crash: a full apply of {} objects takes {window:?}",
        OBJECTS.len()
    );

    while stats.kills < wanted {
        assert!(
            stats.runs < MAX_RUNS,
            "only {} kills after {} runs",
            stats.kills,
            stats.runs
        );
        // Kill anywhere from right after exec to three quarters of a full run: most
        // runs change only some objects and finish sooner.
        let delay = Duration::from_micros(rng.below(window.as_micros() as u64 * 3 / 4));
        run_once(
            &state,
            &input,
            &config,
            &mut known,
            &mut stats,
            &mut rng,
            Some(delay),
            false,
        );
        // Every so often, do what the agent does at boot: open (cleaning temp files)
        // and read everything back through the store.
        if stats.runs % 50 == 0 {
            check_through_store(&state, &known);
        }
    }
    check_through_store(&state, &known);
    let leftovers = temp_files(&state);
    assert!(leftovers.is_empty(), "temp files after open: {leftovers:?}");
    eprintln!(
        "store_crash: {} runs, {} killed by SIGKILL, {} ran to completion, {} applies \
         acknowledged, {} temp files left by kills (all cleaned at open), {:?}",
        stats.runs,
        stats.kills,
        stats.completed,
        stats.acked,
        stats.torn_temps,
        started.elapsed()
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// One writer run: bump a random subset of the inputs, start `tinylet apply -f INPUT`,
/// SIGKILL it after `kill_after` (if given), then check the state directory.
#[allow(clippy::too_many_arguments)]
fn run_once(
    state: &Path,
    input: &Path,
    config: &Path,
    known: &mut [Known],
    stats: &mut Stats,
    rng: &mut Rng,
    kill_after: Option<Duration>,
    bump_all: bool,
) {
    stats.runs += 1;
    let version = stats.runs as u64;
    for (o, k) in OBJECTS.iter().zip(known.iter_mut()) {
        if bump_all || k.input.is_none() || rng.below(2) == 0 {
            std::fs::write(input.join(format!("{}.json", o.name)), manifest(o, version)).unwrap();
            k.input = Some(version);
        }
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_tinylet"))
        .arg("apply")
        .arg("-f")
        .arg(input)
        .arg("--state-dir")
        .arg(state)
        .arg("--config")
        .arg(config)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tinylet");
    if let Some(d) = kill_after {
        std::thread::sleep(d);
        // Fails only if it already exited and was reaped, which wait() below tells.
        let _ = child.kill();
    }
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    match status.signal() {
        Some(9) => stats.kills += 1,
        Some(sig) => panic!("writer died of signal {sig}: {err}"),
        None => {
            assert!(status.success(), "writer failed ({status}): {err}");
            stats.completed += 1;
        }
    }
    let acked = acknowledged(&out);
    stats.acked += acked.len();
    stats.torn_temps += temp_files(state).len();
    check_state_dir(state, known, &acked, kill_after.is_none());
}

/// `(resource, name)` of every line the writer printed for an apply that changed
/// something (an `unchanged` line acknowledges nothing new).
fn acknowledged(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| {
            let (what, verb) = l.split_once(' ')?;
            let (res, name) = what.split_once('/')?;
            assert!(
                matches!(verb, "created" | "configured" | "unchanged"),
                "unexpected writer output {l:?}"
            );
            (verb != "unchanged").then(|| (res.to_string(), name.to_string()))
        })
        .collect()
}

/// Reads every object file directly (no store, so nothing is cleaned or quarantined)
/// and checks it against what was acknowledged.
fn check_state_dir(state: &Path, known: &mut [Known], acked: &[(String, String)], complete: bool) {
    for (o, k) in OBJECTS.iter().zip(known.iter_mut()) {
        let path = state
            .join("desired")
            .join(o.dir)
            .join(format!("default_{}.json", o.name));
        let stored = match std::fs::read(&path) {
            Ok(bytes) => {
                let obj = parse_object(&path.display().to_string(), &bytes)
                    .unwrap_or_else(|e| panic!("stored file does not parse: {e}"));
                let v: u64 = obj
                    .meta()
                    .labels
                    .get("version")
                    .and_then(|v| v.parse().ok())
                    .unwrap();
                if o.resource == "pod" {
                    let uid = obj.meta().uid.clone();
                    assert!(!uid.is_empty());
                    let first = k.uid.get_or_insert_with(|| uid.clone());
                    assert_eq!(*first, uid, "uid of {} changed", o.name);
                }
                Some(v)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => panic!("{}: {e}", path.display()),
        };
        let was_acked = acked.iter().any(|(r, n)| r == o.resource && n == o.name);
        if was_acked || complete {
            assert_eq!(
                stored, k.input,
                "{}/{}: acknowledged apply lost",
                o.resource, o.name
            );
        } else {
            assert!(
                stored == k.durable || stored == k.input,
                "{}/{}: stored {stored:?}, expected the previous {:?} or the new {:?}",
                o.resource,
                o.name,
                k.durable,
                k.input
            );
        }
        k.durable = stored;
    }
    for dir in ["pods", "configmaps", "secrets"] {
        for name in file_names(&state.join("desired").join(dir)) {
            assert!(
                name.starts_with(".tmp-")
                    || OBJECTS
                        .iter()
                        .any(|o| name == format!("default_{}.json", o.name)),
                "unexpected file {dir}/{name}"
            );
        }
    }
}

/// Opens the store as the agent would and reads everything through it.
fn check_through_store(state: &Path, known: &[Known]) {
    let mut store = Store::open_at(state, &[]).expect("open store");
    assert!(
        temp_files(state).is_empty(),
        "open cleans temp files of dead writers"
    );
    let pods = store.desired_pods();
    let expected_pods = OBJECTS
        .iter()
        .zip(known)
        .filter(|(o, k)| o.resource == "pod" && k.durable.is_some())
        .count();
    assert_eq!(pods.len(), expected_pods);
    for (o, k) in OBJECTS.iter().zip(known) {
        let Some(v) = k.durable else { continue };
        let label = |m: &tinylet::model::ObjectMeta| m.labels.get("version").cloned();
        let got = match o.resource {
            "configmap" => store
                .get_configmap("default", o.name)
                .map(|c| label(&c.metadata)),
            "secret" => store
                .get_secret("default", o.name)
                .map(|s| label(&s.metadata)),
            _ => pods
                .iter()
                .find(|p| p.metadata.name == o.name)
                .map(|p| label(&p.metadata)),
        };
        assert_eq!(got, Some(Some(v.to_string())), "{}/{}", o.resource, o.name);
    }
    let quarantined = file_names(&state.join("quarantine"));
    assert!(
        quarantined.is_empty(),
        "nothing may be quarantined: {quarantined:?}"
    );
}

fn file_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn temp_files(state: &Path) -> Vec<PathBuf> {
    [
        "desired/pods",
        "desired/configmaps",
        "desired/secrets",
        "status",
    ]
    .iter()
    .flat_map(|d| {
        let dir = state.join(d);
        file_names(&dir)
            .into_iter()
            .filter(|n| n.starts_with(".tmp-"))
            .map(move |n| dir.join(n))
    })
    .collect()
}
