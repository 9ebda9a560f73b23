//! Facts about this machine the pods need: node name, host IP, the host's resolver
//! config and memory size. Read once at start (a gateway's identity does not change
//! under a running agent; a new address is picked up at the next agent start).

use crate::config::Config;
use crate::kuberuntime::dns::{parse_resolv_conf, ResolvConf};
use crate::kuberuntime::resources::mem_capacity;
use crate::store::bounded;

/// The most of the host's resolv.conf read: real ones are a few hundred bytes, and
/// only the first few servers and search domains are used.
const MAX_RESOLV_CONF_BYTES: usize = 64 << 10;

/// Facts about the host the agent detects once at start.
#[derive(Debug, Clone, Default)]
pub struct HostFacts {
    /// The node's name (config, else the hostname).
    pub node_name: String,
    /// The host's IP (`status.hostIP`, hostNetwork pods' IP).
    pub host_ip: String,
    /// The host's resolv.conf, for pods' DNS config.
    pub resolv: ResolvConf,
    /// Memory capacity in bytes (for limits.memory defaults in the downward API).
    pub mem_capacity: i64,
    /// CPU, memory and pid capacity (node allocatable is this less the reservations).
    pub capacity: crate::node::Resources,
}

impl HostFacts {
    /// Detects the facts, using `cfg` where it names them.
    pub fn detect(cfg: &Config) -> HostFacts {
        // The API's spelling (lowercase, `apiServer.nodeName` first): pods see it as
        // `spec.nodeName`, the cluster as the Node's name.
        let node_name = cfg.effective_node_name();
        let resolv_text = bounded::read_to_string(&cfg.resolv_conf, MAX_RESOLV_CONF_BYTES)
            .unwrap_or_else(|e| {
                log::warn!(
                    "{}: cannot read ({e}); pods get no DNS servers from the host",
                    cfg.resolv_conf.display()
                );
                String::new()
            });
        let fib = std::fs::read_to_string("/proc/net/fib_trie").unwrap_or_default();
        let route = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
        let mem_capacity = mem_capacity();
        HostFacts {
            capacity: crate::node::Resources::capacity(mem_capacity),
            node_name,
            host_ip: host_ipv4(&fib, default_gateway(&route)).unwrap_or_default(),
            resolv: parse_resolv_conf(&resolv_text),
            mem_capacity,
        }
    }
}

/// The default route's gateway from /proc/net/route (hex, host byte order).
fn default_gateway(route: &str) -> Option<std::net::Ipv4Addr> {
    route.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(1) != Some(&"00000000") {
            return None;
        }
        let gw = u32::from_str_radix(f.get(2)?, 16).ok()?;
        // The kernel prints the address as a native-endian u32 of its network-order bytes.
        Some(std::net::Ipv4Addr::from(gw.to_ne_bytes()))
    })
}

/// The host's IPv4 address: among the local non-loopback addresses in
/// /proc/net/fib_trie (an address line followed by `/32 host LOCAL`), the one sharing the
/// longest prefix with the default gateway, so bridges made for pods are not chosen.
fn host_ipv4(fib_trie: &str, gateway: Option<std::net::Ipv4Addr>) -> Option<String> {
    let mut last: Option<std::net::Ipv4Addr> = None;
    let mut best: Option<(u32, std::net::Ipv4Addr)> = None;
    for line in fib_trie.lines() {
        let t = line.trim_start_matches([' ', '|', '+', '-']).trim();
        if t.contains("/32 host LOCAL") {
            let Some(a) = last.filter(|a| !a.is_loopback()) else {
                continue;
            };
            let common = gateway.map_or(0, |g| (u32::from(a) ^ u32::from(g)).leading_zeros());
            if best.is_none_or(|(c, _)| common > c) {
                best = Some((common, a));
            }
        } else {
            last = t.parse().ok();
        }
    }
    best.map(|(_, a)| a.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_local_address_nearest_the_gateway() {
        let fib = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n     |-- 10.99.3.1\n        /32 host LOCAL\n     +-- 127.0.0.0/8 2 0 2\n        |-- 127.0.0.1\n           /32 host LOCAL\n     |-- 192.0.2.0\n        /24 link UNICAST\n     |-- 192.0.2.15\n        /32 host LOCAL\n";
        let route = "Iface\tDestination\tGateway\tFlags\neth0\t00000000\t010200C0\t0003\n";
        let gw = default_gateway(route);
        assert_eq!(gw, Some(std::net::Ipv4Addr::new(192, 0, 2, 1)));
        assert_eq!(host_ipv4(fib, gw).as_deref(), Some("192.0.2.15"));
        assert_eq!(host_ipv4(fib, None).as_deref(), Some("10.99.3.1"));
        assert_eq!(host_ipv4("garbage", gw), None);
    }
}
