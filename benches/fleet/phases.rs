//! The phases one fleet goes through, each measured from outside: all nodes registered
//! and Ready from their start; the pods running; an idle window; an API server restart
//! and the reconnect storm after it; a rollout of the DaemonSet; half the fleet's uplink
//! cut and back. Then everything of the fleet is removed, so the next fleet starts on
//! the same, empty control plane.

use crate::admin::Admin;
use crate::agents::log_tail;
use crate::common::kube::Kube;
use crate::nodes::Fleet;
use crate::options::{Kind, Options};
use crate::relay::Relay;
use crate::sample::{self, Sample, Window};
use crate::view::{PodSeen, Seen, View};
use crate::workload;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// After a restart or a cut: the window whose requests are the reconnect storm.
pub const STORM: Duration = Duration::from_secs(60);
/// How often the Leases are read while nodes come back.
const LEASE_POLL: Duration = Duration::from_secs(1);
/// Steps of a long sleep, between which the agents are checked.
const STEP: Duration = Duration::from_secs(5);
/// While a wait is not met, the view lists again this often (a watch that missed an
/// event cannot hold the wait until its deadline).
const RESYNC: Duration = Duration::from_secs(20);
/// Objects a failed wait names.
const NAMED: usize = 8;

/// What the bench holds while fleets come and go.
pub struct Bench<'a> {
    pub kube: &'a Kube,
    pub view: &'a View,
    pub admin: &'a Admin,
    pub relays: &'a mut [Relay; 2],
    pub opts: &'a Options,
    pub dir: PathBuf,
}

/// The API server restart.
#[derive(Default)]
pub struct Restart {
    /// From SIGTERM to ready again (its graceful shutdown and start).
    pub down: Duration,
    /// From ready to every node back: Lease renewed, Node Ready (None: not within the
    /// wait).
    pub back_all: Option<Duration>,
    /// Per node, from ready to its first renewal (0: the new server took it before
    /// /readyz said ok).
    pub renewed: Vec<Duration>,
    /// Nodes seen not Ready meanwhile.
    pub went_unready: usize,
    /// Requests of the new API server in its first [`STORM`] after ready (the bench's
    /// own Lease reads taken out), by verb and resource.
    pub storm: BTreeMap<String, f64>,
    pub throttled: f64,
    /// Lists the new API server sent to etcd meanwhile (its caches' first lists
    /// included).
    pub etcd_lists: f64,
    /// CPU seconds of the new API server and of etcd over that time (start included).
    pub storm_cpu: f64,
    pub etcd_cpu: f64,
    /// Connections the relays accepted in the busiest second after ready.
    pub peak_connections: usize,
    /// The tinylet node whose first renewal came last, and the end of its log (the
    /// fleet's directory is removed after the run).
    pub slowest: Option<String>,
}

/// The DaemonSet's image changed.
#[derive(Default)]
pub struct Rollout {
    /// None: not within the wait.
    pub all: Option<Duration>,
    /// Per node, from the change to its new pod Ready.
    pub per_node: Vec<Duration>,
    /// Per new pod, from bound to its node to Ready: the agent's part.
    pub agent: Vec<Duration>,
}

/// Half the fleet's uplink cut and back.
#[derive(Default)]
pub struct Cut {
    pub nodes: usize,
    pub went_unready: usize,
    /// From the relay's return to every cut node back (renewed, Ready).
    pub back_all: Option<Duration>,
    pub renewed: Vec<Duration>,
    /// From the relay's return to every pod of the fleet Ready again.
    pub pods_back: Option<Duration>,
    /// The first [`STORM`] after the return.
    pub storm: Option<Window>,
}

pub struct Outcome {
    pub kind: Kind,
    pub nodes: usize,
    /// From the start to all Nodes registered, and each Node's time to Ready.
    pub registered_all: Duration,
    pub ready: Vec<Duration>,
    pub pods_all: Duration,
    pub idle: Window,
    pub restart: Restart,
    pub rollout: Rollout,
    pub cut: Cut,
    /// The waits of the last phases that ran out, each with what was still missing
    /// (the phases after it still ran).
    pub missed: Vec<String>,
}

/// Runs fleet `kind` through every phase and removes it.
pub fn run(b: &mut Bench, kind: Kind, bin: &Path) -> Result<Outcome, String> {
    let count = b.opts.count(kind);
    let dir = b.dir.join(kind.label());
    say(kind, &format!("{count} nodes: identities, configs"));
    let urls = [b.relays[0].url(), b.relays[1].url()];
    let mut fleet = Fleet::prepare(b.kube, kind, count, &dir, [&urls[0], &urls[1]])?;
    let result = phases(b, &mut fleet, bin).map_err(|e| {
        let first = dir.join(&fleet.names[0]).join("agent.log");
        format!("{e}\nend of {}:\n{}", first.display(), log_tail(&first, 40))
    });
    fleet.stop();
    say(kind, "removing the fleet");
    let removed = remove(b, &fleet);
    let out = result?;
    removed?;
    Ok(out)
}

fn phases(b: &mut Bench, fleet: &mut Fleet, bin: &Path) -> Result<Outcome, String> {
    let kind = fleet.kind;
    say(kind, "starting the agents");
    let t0 = fleet.start(b.kube, bin)?;
    let names: BTreeSet<String> = fleet.names.iter().cloned().collect();
    let registered = wait(b, fleet, "every Node registered", |s| {
        names
            .iter()
            .all(|n| s.nodes.contains_key(n))
            .then(Instant::now)
    })?;
    let ready = wait(b, fleet, "every Node Ready", |s| {
        names
            .iter()
            .map(|n| s.nodes.get(n).and_then(|x| x.ready_at))
            .collect::<Option<Vec<Instant>>>()
    })?;
    say(kind, "pods: the DaemonSet and the nodes' own");
    let t1 = Instant::now();
    workload::start(b.admin, kind, &fleet.names, b.opts.pods_per_node)?;
    let want = fleet.names.len() * (b.opts.pods_per_node + 1);
    wait(b, fleet, "every pod Running and Ready", |s| {
        (pods_ready(s, &names) >= want).then_some(())
    })?;
    let pods_all = t1.elapsed();
    say(
        kind,
        &format!(
            "idle: {:?} to settle, then {:?} measured",
            b.opts.settle, b.opts.idle
        ),
    );
    sleep(fleet, b.opts.settle)?;
    let s0 = sample::take(b.kube, &b.relays[..], Some(fleet))?;
    sleep(fleet, b.opts.idle)?;
    let s1 = sample::take(b.kube, &b.relays[..], Some(fleet))?;
    let idle = Window::between(&s0, &s1);
    let mut missed = Vec::new();
    let restart = restart(b, fleet, &mut missed)?;
    let rollout = rollout(b, fleet, &mut missed)?;
    let cut = cut(b, fleet, &mut missed)?;
    Ok(Outcome {
        kind,
        nodes: fleet.names.len(),
        registered_all: registered.duration_since(t0),
        ready: ready.iter().map(|t| t.duration_since(t0)).collect(),
        pods_all,
        idle,
        restart,
        rollout,
        cut,
        missed,
    })
}

/// SIGTERM to the API server, started again: how long until every node is back, how
/// the reconnects spread, what the first minute cost.
fn restart(b: &mut Bench, fleet: &mut Fleet, missed: &mut Vec<String>) -> Result<Restart, String> {
    say(fleet.kind, "restarting the API server");
    let etcd_before = crate::plane::usage(b.kube, "etcd")?.cpu;
    let t_kill = Instant::now();
    let gone = b.kube.restart_apiserver();
    let (t_ready, wall_ready) = (Instant::now(), SystemTime::now());
    let mut r = Restart {
        down: t_ready.duration_since(t_kill),
        ..Default::default()
    };
    let names = fleet.names.clone();
    // A renewal the new server took before /readyz said ok counts as back at ready:
    // counted from ready only, such a node showed its next renewal, one interval later.
    let since = Since {
        t: t_ready,
        from: gone,
        wall: wall_ready,
    };
    let (renewed, polls) = await_back(b, fleet, &names, since, missed)?;
    r.back_all = (renewed.len() == names.len()).then(|| t_ready.elapsed());
    if fleet.kind == Kind::Tinylet && renewed.len() == names.len() {
        r.slowest = slowest_log(&b.dir.join(fleet.kind.label()), &names, &renewed);
    }
    r.renewed = renewed;
    r.went_unready = unready_since(b.view, &names, t_kill);
    let rest = STORM.saturating_sub(t_ready.elapsed());
    sleep(fleet, rest)?;
    let s = sample::take(b.kube, &b.relays[..], Some(fleet))?;
    r.storm = s.requests.clone();
    if let Some(v) = r.storm.get_mut("LIST leases") {
        *v -= polls as f64;
    }
    r.throttled = s.throttled;
    r.etcd_lists = s.etcd_lists;
    r.storm_cpu = s.plane["kube-apiserver"].cpu.as_secs_f64();
    r.etcd_cpu = s.plane["etcd"].cpu.as_secs_f64() - etcd_before.as_secs_f64();
    r.peak_connections = peak_per_second(b.relays, t_ready, t_ready + STORM);
    Ok(r)
}

/// The node of `names` whose renewal in `renewed` (same order) came last, with the end
/// of its agent's log under `dir`.
fn slowest_log(dir: &Path, names: &[String], renewed: &[Duration]) -> Option<String> {
    let (i, d) = renewed.iter().enumerate().max_by_key(|(_, d)| **d)?;
    let log = dir.join(&names[i]).join("agent.log");
    Some(format!(
        "{} renewed first {d:.1?} after the API server was ready; the end of its log:\n{}",
        names[i],
        log_tail(&log, 30)
    ))
}

/// The DaemonSet's image changed: until every node runs the new pod.
fn rollout(b: &mut Bench, fleet: &mut Fleet, missed: &mut Vec<String>) -> Result<Rollout, String> {
    say(fleet.kind, "rollout of the DaemonSet");
    let image = workload::ds_image(2);
    let names: BTreeSet<String> = fleet.names.iter().cloned().collect();
    let t = Instant::now();
    workload::roll(b.admin, fleet.kind, 2)?;
    let what = "the new DaemonSet pod Ready on every node";
    let pods = wait(b, fleet, what, |s| {
        let new: Vec<_> = s
            .pods
            .values()
            .filter(|p| p.daemon && p.ready && p.image == image && names.contains(&p.node))
            .collect();
        let nodes: BTreeSet<&str> = new.iter().map(|p| p.node.as_str()).collect();
        (nodes.len() == names.len()).then(|| {
            new.iter()
                .map(|p| (p.ready_at.unwrap_or(t), p.bound_at.unwrap_or(t)))
                .collect::<Vec<_>>()
        })
    });
    let pods = match pods {
        Ok(p) => p,
        Err(e) => {
            let lacking = without_pod(b.view, &names, |p| p.daemon && p.image == image);
            missed.push(format!("{e}; nodes without it: {lacking}"));
            return Ok(Rollout::default());
        }
    };
    Ok(Rollout {
        all: Some(t.elapsed()),
        per_node: pods.iter().map(|(r, _)| r.duration_since(t)).collect(),
        agent: pods
            .iter()
            .map(|(r, bound)| r.duration_since(*bound))
            .collect(),
    })
}

/// Relay 0 cut for the configured time and restored: until the nodes behind it are back
/// and every pod of the fleet is Ready again.
fn cut(b: &mut Bench, fleet: &mut Fleet, missed: &mut Vec<String>) -> Result<Cut, String> {
    let names = fleet.behind(0);
    say(
        fleet.kind,
        &format!("uplink cut for {} nodes, {:?}", names.len(), b.opts.cut),
    );
    let t_cut = Instant::now();
    b.relays[0].cut();
    sleep(fleet, b.opts.cut)?;
    let s0 = sample::take(b.kube, &b.relays[..], Some(fleet))?;
    b.relays[0].restore()?;
    let (t_back, wall_back) = (Instant::now(), SystemTime::now());
    let since = Since {
        t: t_back,
        from: wall_back,
        wall: wall_back,
    };
    let (renewed, _) = await_back(b, fleet, &names, since, missed)?;
    let back_all = (renewed.len() == names.len()).then(|| t_back.elapsed());
    let all: BTreeSet<String> = fleet.names.iter().cloned().collect();
    let want = all.len() * (b.opts.pods_per_node + 1);
    let pods_back = match wait(b, fleet, "every pod Ready again", |s| {
        (pods_ready(s, &all) >= want).then_some(())
    }) {
        Ok(()) => Some(t_back.elapsed()),
        Err(e) => {
            missed.push(format!("{e}; {}", pods_not_ready(b, &all)));
            None
        }
    };
    sleep(fleet, STORM.saturating_sub(t_back.elapsed()))?;
    let s1 = sample::take(b.kube, &b.relays[..], Some(fleet))?;
    Ok(Cut {
        nodes: names.len(),
        went_unready: unready_since(b.view, &names, t_cut),
        back_all,
        renewed,
        pods_back,
        storm: Some(Window::between(&s0, &s1)),
    })
}

/// Where the wait for the nodes to come back starts.
#[derive(Clone, Copy)]
struct Since {
    /// The moment the wait began (for its limit and for "every node back").
    t: Instant,
    /// Renewals from then on count: the API server serves them.
    from: SystemTime,
    /// The first renewals are measured from then (earlier ones as 0).
    wall: SystemTime,
}

/// Waits until each of `names` renewed its Lease after `since.from` and its Node is
/// Ready; each node's first such renewal, from `since.wall` (as seen by polling: the
/// Lease shows only the last one), and the Lease reads made. When that is not so
/// within the wait, says in `missed` which nodes were not back and gives the renewals
/// seen (fewer than `names`).
fn await_back(
    b: &mut Bench,
    fleet: &mut Fleet,
    names: &[String],
    since: Since,
    missed: &mut Vec<String>,
) -> Result<(Vec<Duration>, usize), String> {
    let mut resynced = Instant::now();
    let mut polls = 0;
    let mut first_seen: BTreeMap<&str, Duration> = BTreeMap::new();
    loop {
        fleet.agents.check_alive()?;
        // The bench's own connection may be the one the restart broke: read again.
        let leases = b.admin.lease_renewals().unwrap_or_default();
        polls += 1;
        for n in names {
            if let Some(t) = leases.get(n).filter(|t| **t > since.from) {
                let d = t.duration_since(since.wall).unwrap_or_default();
                first_seen.entry(n.as_str()).or_insert(d);
            }
        }
        let renewed: Option<Vec<Duration>> = names
            .iter()
            .map(|n| first_seen.get(n.as_str()).copied())
            .collect();
        let ready = b.view.with(|s| {
            names
                .iter()
                .all(|n| s.nodes.get(n).is_some_and(|x| x.ready))
        });
        if let (Some(r), true) = (renewed, ready) {
            return Ok((r, polls));
        }
        if since.t.elapsed() > b.opts.wait {
            let late: Vec<String> = b.view.with(|s| {
                names
                    .iter()
                    .filter_map(|n| {
                        let renewal = leases.get(n).map(|t| *t > since.from);
                        let ready = s.nodes.get(n).map(|x| x.ready);
                        (renewal != Some(true) || ready != Some(true))
                            .then(|| format!("{n} (renewed since: {renewal:?}, Ready: {ready:?})"))
                    })
                    .collect()
            });
            missed.push(format!(
                "{}: {} of {} nodes not back within {:?}: {}",
                fleet.kind.label(),
                late.len(),
                names.len(),
                b.opts.wait,
                first(&late)
            ));
            return Ok((first_seen.into_values().collect(), polls));
        }
        if resynced.elapsed() >= RESYNC {
            b.view.resync();
            resynced = Instant::now();
        }
        std::thread::sleep(LEASE_POLL);
    }
}

/// How many of `names` were seen turning not Ready after `since`.
fn unready_since(view: &View, names: &[String], since: Instant) -> usize {
    view.with(|s| {
        names
            .iter()
            .filter(|n| {
                s.nodes
                    .get(*n)
                    .and_then(|x| x.unready_at)
                    .is_some_and(|t| t >= since)
            })
            .count()
    })
}

/// Connections both relays accepted in the busiest second of [from, to).
fn peak_per_second(relays: &[Relay; 2], from: Instant, to: Instant) -> usize {
    let mut per_second: BTreeMap<u64, usize> = BTreeMap::new();
    for r in relays.iter() {
        for t in r.accepted_since(from).into_iter().filter(|t| *t < to) {
            *per_second
                .entry(t.duration_since(from).as_secs())
                .or_default() += 1;
        }
    }
    per_second.values().copied().max().unwrap_or(0)
}

/// Pods Running and Ready on the nodes of `names`.
fn pods_ready(s: &Seen, names: &BTreeSet<String>) -> usize {
    s.pods
        .values()
        .filter(|p| p.ready && names.contains(&p.node))
        .count()
}

/// The first [`NAMED`] of `v`, and how many more.
fn first(v: &[String]) -> String {
    let mut s = v.iter().take(NAMED).cloned().collect::<Vec<_>>().join(", ");
    if v.len() > NAMED {
        s += &format!(" and {} more", v.len() - NAMED);
    }
    s
}

/// The nodes of `names` on which the view sees no Ready pod that `f` picks.
fn without_pod(view: &View, names: &BTreeSet<String>, f: impl Fn(&PodSeen) -> bool) -> String {
    let lacking: Vec<String> = view.with(|s| {
        names
            .iter()
            .filter(|n| !s.pods.values().any(|p| p.ready && &p.node == *n && f(p)))
            .cloned()
            .collect()
    });
    first(&lacking)
}

/// The pods on `names` the view does not see Ready, each with what the API says of it
/// now (a consistent list) and of its node: tells a missed event from a pod the API
/// really shows not Ready.
fn pods_not_ready(b: &Bench, names: &BTreeSet<String>) -> String {
    let late: Vec<(String, String)> = b.view.with(|s| {
        s.pods
            .iter()
            .filter(|(_, p)| !p.ready && names.contains(&p.node))
            .map(|(k, p)| (k.clone(), p.node.clone()))
            .collect()
    });
    let api = b.admin.describe_pods(workload::NS, &late);
    format!("{} pods seen not Ready: {}", late.len(), first(&api))
}

/// Waits for `f` on the view, checking every few seconds that no agent died, and
/// having the view list again every [`RESYNC`] while `f` is not met.
fn wait<T>(
    b: &Bench,
    fleet: &mut Fleet,
    what: &str,
    mut f: impl FnMut(&Seen) -> Option<T>,
) -> Result<T, String> {
    let until = Instant::now() + b.opts.wait;
    let mut resynced = Instant::now();
    loop {
        fleet.agents.check_alive()?;
        if resynced.elapsed() >= RESYNC {
            b.view.resync();
            resynced = Instant::now();
        }
        let left = until.saturating_duration_since(Instant::now());
        match b.view.wait(what, left.min(STEP), &mut f) {
            Ok(v) => return Ok(v),
            Err(_) if left <= STEP => {
                return Err(format!(
                    "{}: not within {:?} in the API: {what}",
                    fleet.kind.label(),
                    b.opts.wait
                ))
            }
            Err(_) => {}
        }
    }
}

/// Sleeps `d`, checking every few seconds that no agent died.
fn sleep(fleet: &mut Fleet, d: Duration) -> Result<(), String> {
    let until = Instant::now() + d;
    loop {
        fleet.agents.check_alive()?;
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(STEP));
    }
}

/// Removes the fleet's objects and waits until the API shows none of its nodes and pods.
fn remove(b: &Bench, fleet: &Fleet) -> Result<(), String> {
    workload::remove(b.admin, fleet.kind)?;
    let names: BTreeSet<String> = fleet.names.iter().cloned().collect();
    let until = Instant::now() + b.opts.wait;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let gone = b
            .view
            .wait("the fleet's Nodes and pods gone", left.min(RESYNC), |s| {
                let nodes = s.nodes.keys().any(|n| names.contains(n));
                let pods = s
                    .pods
                    .values()
                    .any(|p| names.contains(&p.node) || p.node.is_empty());
                (!nodes && !pods).then_some(())
            });
        match gone {
            Err(_) if left > RESYNC => b.view.resync(),
            done => return done,
        }
    }
}

pub fn say(kind: Kind, what: &str) {
    eprintln!("bench-fleet: {}: {what}", kind.label());
}

/// The control plane alone, for `d`: what the fleets' figures are compared against.
pub fn baseline(kube: &Kube, relays: &[Relay; 2], d: Duration) -> Result<Window, String> {
    eprintln!("bench-fleet: the control plane alone for {d:?}");
    let s0: Sample = sample::take(kube, &relays[..], None)?;
    std::thread::sleep(d);
    let s1 = sample::take(kube, &relays[..], None)?;
    Ok(Window::between(&s0, &s1))
}
