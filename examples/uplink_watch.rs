//! Holds a watch of this node's pods open and reports the process's memory: the
//! uplink's own cost, without the agent. `cargo run --release --example uplink_watch
//! -- KUBECONFIG NODE [SECONDS]`: lists the pods bound to NODE, watches from there,
//! prints each event, and after SECONDS (default 10) prints VmRSS/VmHWM, the bytes
//! on the wire and the thread count, then exits.

use std::time::Duration;
use tinylet::tls::kubeconfig;
use tinylet::uplink::{resource_path, ApiClient, ClientOptions, ListParams};

fn status_line(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kc, node, rest @ ..] = args.as_slice() else {
        eprintln!("usage: uplink_watch KUBECONFIG NODE [SECONDS]");
        std::process::exit(2);
    };
    let secs: u64 = rest.first().and_then(|s| s.parse().ok()).unwrap_or(10);
    let kc = kubeconfig::load(std::path::Path::new(kc)).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let client = ApiClient::new(&kc, ClientOptions::default()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let pods = resource_path("v1", None, "pods", None, None);
    tinylet::rt::block_on(async {
        let mut params = ListParams {
            field_selector: Some(format!("spec.nodeName={node}")),
            ..Default::default()
        };
        let list: serde_json::Value = client.list(&pods, &params).await.expect("list");
        println!(
            "listed {} pods",
            list["items"].as_array().map_or(0, Vec::len)
        );
        params.resource_version = list["metadata"]["resourceVersion"]
            .as_str()
            .map(String::from);
        params.allow_watch_bookmarks = true;
        params.timeout_seconds = Some(600);
        let mut watch = client.watch(&pods, &params).await.expect("watch");
        println!("watching; VmRSS {}", status_line("VmRSS:"));
        let events = async {
            while let Ok(Some(e)) = watch.next().await {
                println!("{:?} {}", e.kind, e.object["metadata"]["name"]);
            }
        };
        let timer = async {
            async_io::Timer::after(Duration::from_secs(secs)).await;
        };
        smol::future::or(events, timer).await;
    });
    let c = client.counters();
    println!(
        "VmRSS {} VmHWM {} threads {} bytes sent {} received {} connects {}",
        status_line("VmRSS:"),
        status_line("VmHWM:"),
        status_line("Threads:"),
        c.bytes_sent,
        c.bytes_received,
        c.connects
    );
}
