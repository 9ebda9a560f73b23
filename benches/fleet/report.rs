//! The bench's tables (Markdown, as the README shows them): per node and in total at
//! idle, the control plane's cost above the control plane alone, tinylet beside the
//! hollow kubelet with the ratio and the targets; the requests by verb and
//! resource; the times of the phases.

use crate::figures::{pct, verdict};
use crate::phases::Outcome;
use crate::sample::Window;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::Duration;

const MIB: f64 = 1024.0;
const API: &str = "kube-apiserver";

/// One row: a name and the figure of each fleet.
struct Row {
    name: String,
    values: Vec<f64>,
    /// The ratio target (tinylet / kubemark at most this), if any.
    target: Option<f64>,
}

/// Everything printed: the idle tables, the requests, the times.
pub fn render(base: &Window, outs: &[Outcome], pods_per_node: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Per node at idle ({pods_per_node} pods each, the control plane alone subtracted):\n"
    );
    s += &table(outs, &per_node_rows(base, outs), true);
    let _ = writeln!(
        s,
        "\nIn total at idle (the whole fleet, the control plane alone included):\n"
    );
    s += &table(outs, &total_rows(outs), false);
    let _ = writeln!(s, "\nRequests per node and hour at idle, by verb and resource (above the control plane alone):\n");
    s += &table(outs, &request_rows(base, outs), false);
    let _ = writeln!(s, "\nThe API server's time per request at idle, ms (request to answer, all clients; by verb and resource, as above):\n");
    s += &table(outs, &latency_rows(base, outs), false);
    let _ = writeln!(s, "\nWatch events the API server sent per node and hour at idle, by kind (above the control plane alone; every watcher's copy counted):\n");
    s += &table(outs, &event_rows(base, outs), false);
    let _ = writeln!(s, "\nTimes:\n");
    s += &times(outs);
    for o in outs {
        for m in &o.missed {
            let _ = writeln!(s, "\nNot reached ({}): {m}", o.kind.label());
        }
        if let Some(slow) = &o.restart.slowest {
            let _ = writeln!(s, "\nAfter the restart ({}): {slow}", o.kind.label());
        }
    }
    s
}

fn header(outs: &[Outcome], ratio: bool) -> String {
    let mut h = String::from("| |");
    let mut line = String::from("| --- |");
    for o in outs {
        let _ = write!(h, " {} ({} nodes) |", o.kind.label(), o.nodes);
        line += " --- |";
    }
    if ratio && outs.len() == 2 {
        h += " ratio | target |";
        line += " --- | --- |";
    }
    format!("{h}\n{line}\n")
}

fn table(outs: &[Outcome], rows: &[Row], ratio: bool) -> String {
    let mut s = header(outs, ratio);
    for r in rows {
        let _ = write!(s, "| {} |", r.name);
        for v in &r.values {
            let _ = write!(s, " {} |", num(*v));
        }
        if ratio && r.values.len() == 2 {
            let q = ratio_of(r.values[0], r.values[1]);
            let target = match r.target {
                Some(t) => format!("≤ {} {}", num(t), verdict(q.is_some_and(|q| q <= t))),
                None => String::new(),
            };
            let _ = write!(s, " {} | {target} |", q.map_or("-".into(), num));
        }
        s.push('\n');
    }
    s
}

fn ratio_of(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// A figure with a precision that fits its size.
fn num(v: f64) -> String {
    // No "-0.00" for a zero that came out of a subtraction.
    let v = if v.abs() < 5e-4 { 0.0 } else { v };
    let a = v.abs();
    if a >= 1000.0 {
        let s = format!("{v:.0}");
        group(&s)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// "1234567" -> "1,234,567".
fn group(s: &str) -> String {
    let (sign, digits) = s.strip_prefix('-').map_or(("", s), |d| ("-", d));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// `f` of a window minus the baseline's, per hour and per node.
fn above(o: &Outcome, base: &Window, f: impl Fn(&Window) -> f64) -> f64 {
    (o.idle.per_hour(f(&o.idle)) - base.per_hour(f(base))) / o.nodes as f64
}

fn per_node_rows(base: &Window, outs: &[Outcome]) -> Vec<Row> {
    let row = |name: &str, target: Option<f64>, f: &dyn Fn(&Outcome) -> f64| Row {
        name: name.to_string(),
        values: outs.iter().map(f).collect(),
        target,
    };
    let cpu = |c: &'static str| move |w: &Window| w.cpu.get(c).copied().unwrap_or(0.0);
    let watches = |w: &Window| w.end.watches.values().sum::<f64>();
    let rss = |w: &Window| w.end.plane[API].rss as f64;
    vec![
        row("API-server CPU, s/h", Some(0.25), &|o| {
            above(o, base, cpu(API))
        }),
        row("API-server RSS, KiB", None, &|o| {
            (rss(&o.idle) - rss(base)) / o.nodes as f64
        }),
        row("etcd CPU, s/h", None, &|o| above(o, base, cpu("etcd"))),
        row("etcd writes/h", None, &|o| {
            above(o, base, |w| w.etcd_writes)
        }),
        row("controller-manager CPU, s/h", None, &|o| {
            above(o, base, cpu("kube-controller-manager"))
        }),
        row("requests/h", Some(0.25), &|o| {
            above(o, base, Window::requests_total)
        }),
        row("open watches", None, &|o| {
            (watches(&o.idle) - watches(base)) / o.nodes as f64
        }),
        row("bytes/h, node to API", None, &|o| {
            o.idle.per_hour(o.idle.bytes_up) / o.nodes as f64
        }),
        row("bytes/h, API to node", None, &|o| {
            o.idle.per_hour(o.idle.bytes_down) / o.nodes as f64
        }),
        row("bytes/h, both ways", Some(0.125), &|o| {
            o.idle.per_hour(o.idle.bytes_up + o.idle.bytes_down) / o.nodes as f64
        }),
        row("agent RSS, MiB (mean)", None, &|o| {
            mean(&o.idle.end.agents.rss) / MIB
        }),
        row("agent RSS, MiB (max)", None, &|o| {
            o.idle.end.agents.rss.iter().copied().max().unwrap_or(0) as f64 / MIB
        }),
        row("agent CPU, % of a core", None, &|o| {
            100.0 * o.idle.agents_cpu / o.idle.secs / o.nodes as f64
        }),
        row("fake runtime CPU, % of a core", None, &|o| {
            100.0 * o.idle.host_cpu / o.idle.secs / o.nodes as f64
        }),
        row("fake runtime RSS, KiB", None, &|o| {
            o.idle.end.host.map_or(0.0, |h| h.1 as f64) / o.nodes as f64
        }),
    ]
}

fn total_rows(outs: &[Outcome]) -> Vec<Row> {
    let row = |name: &str, f: &dyn Fn(&Window) -> f64| Row {
        name: name.to_string(),
        values: outs.iter().map(|o| f(&o.idle)).collect(),
        target: None,
    };
    let cpu_h =
        |c: &'static str| move |w: &Window| w.per_hour(w.cpu.get(c).copied().unwrap_or(0.0));
    vec![
        row("API-server CPU, s/h", &cpu_h(API)),
        row("API-server RSS, MiB", &|w| {
            w.end.plane[API].rss as f64 / MIB
        }),
        row("etcd CPU, s/h", &cpu_h("etcd")),
        row("etcd writes/h", &|w| w.per_hour(w.etcd_writes)),
        row("requests/h", &|w| w.per_hour(w.requests_total())),
        row("open watches", &|w| w.end.watches.values().sum()),
        row("bytes/h, both ways, MiB", &|w| {
            w.per_hour(w.bytes_up + w.bytes_down) / MIB / MIB
        }),
        row("agents' RSS, MiB", &|w| {
            w.end.agents.rss.iter().sum::<u64>() as f64 / MIB
        }),
        row("agents' CPU, % of a core", &|w| {
            100.0 * w.agents_cpu / w.secs
        }),
        row("fake runtimes' CPU, % of a core", &|w| {
            100.0 * w.host_cpu / w.secs
        }),
        row("fake runtimes' RSS, MiB", &|w| {
            w.end.host.map_or(0.0, |h| h.1 as f64) / MIB
        }),
    ]
}

/// Every verb and resource some fleet sent at least once an hour per node.
fn request_rows(base: &Window, outs: &[Outcome]) -> Vec<Row> {
    let keys: BTreeSet<&String> = outs.iter().flat_map(|o| o.idle.requests.keys()).collect();
    let mut rows: Vec<Row> = keys
        .into_iter()
        .map(|k| Row {
            name: format!("`{k}`"),
            values: outs
                .iter()
                .map(|o| above(o, base, |w| w.requests.get(k).copied().unwrap_or(0.0)))
                .collect(),
            target: None,
        })
        .filter(|r| r.values.iter().any(|v| *v >= 1.0))
        .collect();
    rows.sort_by(|a, b| {
        let m = |r: &Row| r.values.iter().copied().fold(0.0, f64::max);
        m(b).total_cmp(&m(a))
    });
    rows
}

/// For the verbs and resources of [`request_rows`], the API server's mean time per
/// request over the idle window.
fn latency_rows(base: &Window, outs: &[Outcome]) -> Vec<Row> {
    request_rows(base, outs)
        .into_iter()
        .filter(|r| !r.name.starts_with("`WATCH"))
        .map(|r| {
            let k = r.name.trim_matches('`').to_string();
            let values = outs
                .iter()
                .map(|o| {
                    let n = o.idle.requests.get(&k).copied().unwrap_or(0.0);
                    let t = o.idle.request_secs.get(&k).copied().unwrap_or(0.0);
                    if n > 0.0 {
                        1000.0 * t / n
                    } else {
                        0.0
                    }
                })
                .collect();
            Row { values, ..r }
        })
        .collect()
}

/// Watch events by kind, per node and hour above the control plane alone.
fn event_rows(base: &Window, outs: &[Outcome]) -> Vec<Row> {
    let keys: BTreeSet<&String> = outs
        .iter()
        .flat_map(|o| o.idle.watch_events.keys())
        .collect();
    keys.into_iter()
        .map(|k| Row {
            name: k.clone(),
            values: outs
                .iter()
                .map(|o| above(o, base, |w| w.watch_events.get(k).copied().unwrap_or(0.0)))
                .collect(),
            target: None,
        })
        .filter(|r| r.values.iter().any(|v| *v >= 1.0))
        .collect()
}

fn mean(v: &[u64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<u64>() as f64 / v.len() as f64
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// A time that may not have been reached within the wait.
fn reached(d: Option<Duration>) -> String {
    d.map_or("not reached".into(), secs)
}

/// p50 / p99 / max of `v`.
fn spread(v: &[Duration]) -> String {
    let max = v.iter().max().copied().unwrap_or_default();
    format!(
        "{} / {} / {}",
        secs(pct(v, 50)),
        secs(pct(v, 99)),
        secs(max)
    )
}

fn times(outs: &[Outcome]) -> String {
    let mut s = header(outs, false);
    let mut row = |name: &str, f: &dyn Fn(&Outcome) -> String| {
        let _ = write!(s, "| {name} |");
        for o in outs {
            let _ = write!(s, " {} |", f(o));
        }
        s.push('\n');
    };
    row("start → all registered", &|o| secs(o.registered_all));
    row("start → Ready, p50 / p99 / max", &|o| spread(&o.ready));
    row("pods made → all Running and Ready", &|o| secs(o.pods_all));
    row("API-server restart: SIGTERM → ready again", &|o| {
        secs(o.restart.down)
    });
    row(
        "… ready → every node back (Lease renewed, Ready; target ≤ 60 s)",
        &|o| {
            format!(
                "{} {}",
                reached(o.restart.back_all),
                verdict(
                    o.restart
                        .back_all
                        .is_some_and(|d| d <= Duration::from_secs(60))
                )
            )
        },
    );
    row(
        "… ready → each node's first renewal, p50 / p99 / max (before ready: 0)",
        &|o| spread(&o.restart.renewed),
    );
    row("… nodes that renewed before /readyz said ok", &|o| {
        o.restart
            .renewed
            .iter()
            .filter(|d| d.is_zero())
            .count()
            .to_string()
    });
    row("… nodes seen not Ready meanwhile", &|o| {
        o.restart.went_unready.to_string()
    });
    row(
        "… first minute: requests (429s), busiest second's new connections",
        &|o| {
            format!(
                "{} ({}), {}",
                num(o.restart.storm.values().sum()),
                num(o.restart.throttled),
                o.restart.peak_connections
            )
        },
    );
    row(
        "… first minute: API-server CPU s (start included), etcd CPU s",
        &|o| format!("{}, {}", num(o.restart.storm_cpu), num(o.restart.etcd_cpu)),
    );
    row(
        "… first minute: lists the API server sent to etcd",
        &|o| num(o.restart.etcd_lists),
    );
    row("… first minute: pod status patches", &|o| {
        num(o
            .restart
            .storm
            .get("PATCH pods/status")
            .copied()
            .unwrap_or(0.0))
    });
    row("rollout → every node runs the new pod", &|o| {
        reached(o.rollout.all)
    });
    row("… per node, p50 / p99 / max", &|o| {
        spread(&o.rollout.per_node)
    });
    row("… new pod bound → Ready (the agent), p50 / p99", &|o| {
        format!(
            "{} / {}",
            secs(pct(&o.rollout.agent, 50)),
            secs(pct(&o.rollout.agent, 99))
        )
    });
    row("uplink cut (half the nodes): seen not Ready", &|o| {
        format!("{} of {}", o.cut.went_unready, o.cut.nodes)
    });
    row("… back → every cut node back", &|o| {
        reached(o.cut.back_all)
    });
    row(
        "… back → each node's first renewal, p50 / p99 / max",
        &|o| spread(&o.cut.renewed),
    );
    row("… back → every pod Ready again", &|o| {
        reached(o.cut.pods_back)
    });
    row(
        "… first minute back: requests, pod status patches, etcd lists, bytes both ways",
        &|o| match &o.cut.storm {
            Some(w) => format!(
                "{}, {}, {}, {} KiB",
                num(w.requests_total()),
                num(w.requests.get("PATCH pods/status").copied().unwrap_or(0.0)),
                num(w.etcd_lists),
                num((w.bytes_up + w.bytes_down) / 1024.0)
            ),
            None => "-".into(),
        },
    );
    s
}
