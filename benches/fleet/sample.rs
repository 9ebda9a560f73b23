//! What the bench reads at one moment (a [`Sample`]) and what happened between two (a
//! [`Window`]): the control plane's CPU time and memory, the API server's requests by
//! verb and resource (and the time it spent on them) and its open watches and the
//! events it sent on them, etcd's revision (one per write), the bytes
//! through the relays, the agents' and the runtime host's CPU time and memory.

use crate::agents::Usage;
use crate::common::kube::Kube;
use crate::nodes::Fleet;
use crate::plane::{self, Proc, COMPONENTS};
use crate::prom;
use crate::relay::{Bytes, Relay};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Sample {
    pub at: Instant,
    /// By component name.
    pub plane: BTreeMap<&'static str, Proc>,
    /// `apiserver_request_total` by "VERB resource[/subresource]" (API resources only).
    pub requests: BTreeMap<String, f64>,
    /// Of those, answered 429 (Too Many Requests).
    pub throttled: f64,
    /// Seconds the API server spent on them, request to answer
    /// (`apiserver_request_duration_seconds_sum`, watches left out: they last).
    pub request_secs: BTreeMap<String, f64>,
    /// Events sent on watches, by kind (`apiserver_watch_events_total`).
    pub watch_events: BTreeMap<String, f64>,
    /// Open watches by resource (`apiserver_longrunning_gauge`, verb WATCH).
    pub watches: BTreeMap<String, f64>,
    /// etcd's revision: one more per write.
    pub etcd_revision: f64,
    /// Lists the API server sent to etcd (a list it could not answer from its cache).
    pub etcd_lists: f64,
    /// Through both relays.
    pub bytes: Bytes,
    pub agents: Usage,
    /// The runtime host's CPU time and VmRSS (KiB).
    pub host: Option<(Duration, u64)>,
}

/// Reads everything now.
pub fn take(kube: &Kube, relays: &[Relay], fleet: Option<&Fleet>) -> Result<Sample, String> {
    let at = Instant::now();
    let mut plane = BTreeMap::new();
    for c in COMPONENTS {
        plane.insert(c, plane::usage(kube, c)?);
    }
    let api = plane::apiserver_metrics(kube)?;
    let requests = prom::samples(&api, "apiserver_request_total");
    let throttled = requests
        .iter()
        .filter(|(l, _)| l.get("code").is_some_and(|c| c == "429"))
        .map(|(_, v)| v)
        .sum();
    let resources: Vec<_> = requests
        .into_iter()
        .filter(|(l, _)| l.get("resource").is_some_and(|r| !r.is_empty()))
        .collect();
    let request_secs: Vec<_> = prom::samples(&api, "apiserver_request_duration_seconds_sum")
        .into_iter()
        .filter(|(l, _)| l.get("resource").is_some_and(|r| !r.is_empty()))
        .filter(|(l, _)| l.get("verb").is_some_and(|v| v != "WATCH"))
        .collect();
    let watch_events = prom::samples(&api, "apiserver_watch_events_total");
    let watches: Vec<_> = prom::samples(&api, "apiserver_longrunning_gauge")
        .into_iter()
        .filter(|(l, _)| l.get("verb").is_some_and(|v| v == "WATCH"))
        .collect();
    let etcd_lists = prom::samples(&api, "etcd_request_duration_seconds_count")
        .iter()
        .filter(|(l, _)| l.get("operation").is_some_and(|o| o == "list"))
        .map(|(_, v)| v)
        .sum();
    let etcd = plane::etcd_metrics(kube)?;
    let mut bytes = Bytes::default();
    for r in relays {
        let b = r.bytes();
        bytes.up += b.up;
        bytes.down += b.down;
        bytes.connections += b.connections;
    }
    let (agents, host) = fleet.map(Fleet::usage).unwrap_or_default();
    Ok(Sample {
        at,
        plane,
        requests: prom::sum_by(&resources, request_key),
        throttled,
        request_secs: prom::sum_by(&request_secs, request_key),
        watch_events: prom::sum_by(&watch_events, |l| l["kind"].clone()),
        watches: prom::sum_by(&watches, |l| l["resource"].clone()),
        etcd_revision: prom::value(&etcd, "etcd_debugging_mvcc_current_revision").unwrap_or(0.0),
        etcd_lists,
        bytes,
        agents,
        host,
    })
}

/// "VERB resource" or "VERB resource/subresource".
fn request_key(l: &prom::Labels) -> String {
    let get = |k: &str| l.get(k).map_or("", String::as_str);
    match get("subresource") {
        "" => format!("{} {}", get("verb"), get("resource")),
        sub => format!("{} {}/{sub}", get("verb"), get("resource")),
    }
}

/// Between two samples of the same API server process.
#[derive(Clone, Debug)]
pub struct Window {
    pub secs: f64,
    /// CPU seconds by component.
    pub cpu: BTreeMap<&'static str, f64>,
    pub requests: BTreeMap<String, f64>,
    /// The API server's seconds on them, by the same keys.
    pub request_secs: BTreeMap<String, f64>,
    pub watch_events: BTreeMap<String, f64>,
    pub etcd_writes: f64,
    pub etcd_lists: f64,
    pub bytes_up: f64,
    pub bytes_down: f64,
    pub agents_cpu: f64,
    pub host_cpu: f64,
    /// The later sample: gauges (memory, open watches) at the window's end.
    pub end: Sample,
}

impl Window {
    pub fn between(a: &Sample, b: &Sample) -> Window {
        let secs = b.at.duration_since(a.at).as_secs_f64();
        let cpu = b
            .plane
            .iter()
            .map(|(k, p)| {
                let before = a.plane.get(k).map_or(Duration::ZERO, |q| q.cpu);
                (*k, p.cpu.saturating_sub(before).as_secs_f64())
            })
            .collect();
        let diff = |b: &BTreeMap<String, f64>, a: &BTreeMap<String, f64>| {
            b.iter()
                .map(|(k, v)| (k.clone(), v - a.get(k).copied().unwrap_or(0.0)))
                .filter(|(_, v)| *v > 0.0)
                .collect()
        };
        let requests = diff(&b.requests, &a.requests);
        let request_secs = diff(&b.request_secs, &a.request_secs);
        let watch_events = diff(&b.watch_events, &a.watch_events);
        let host = |s: &Sample| s.host.map_or(0.0, |h| h.0.as_secs_f64());
        Window {
            secs,
            cpu,
            requests,
            request_secs,
            watch_events,
            etcd_writes: b.etcd_revision - a.etcd_revision,
            etcd_lists: b.etcd_lists - a.etcd_lists,
            bytes_up: b.bytes.up.saturating_sub(a.bytes.up) as f64,
            bytes_down: b.bytes.down.saturating_sub(a.bytes.down) as f64,
            agents_cpu: b.agents.cpu.saturating_sub(a.agents.cpu).as_secs_f64(),
            host_cpu: host(b) - host(a),
            end: b.clone(),
        }
    }

    /// `x` (counted over the window) per hour.
    pub fn per_hour(&self, x: f64) -> f64 {
        if self.secs > 0.0 {
            x * 3600.0 / self.secs
        } else {
            0.0
        }
    }

    pub fn requests_total(&self) -> f64 {
        self.requests.values().sum()
    }
}
