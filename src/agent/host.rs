//! Facts about this machine the pods need: node name, host IP, the host's resolver
//! config and memory size. Read once at start (a gateway's identity does not change
//! under a running agent; a new address is picked up at the next agent start).

use crate::config::Config;
use crate::kuberuntime::dns::{parse_resolv_conf, ResolvConf};
use crate::kuberuntime::resources::mem_capacity;
use crate::node::NodeResources;
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
    /// CPU, memory, pid and pods' filesystem capacity.
    pub capacity: NodeResources,
    /// The node's allocatable as the Node reports it: what admission fits pods in and
    /// pods read for a limit they do not set (downward API).
    pub allocatable: NodeResources,
}

impl HostFacts {
    /// Detects the facts, using `cfg` where it names them. Fails only on a `nodeIP`
    /// that no interface of this machine has (kubelet's rule), naming it.
    pub fn detect(cfg: &Config) -> Result<HostFacts, NodeIpError> {
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
        let host_ip = if cfg.node_ip.is_empty() {
            let route = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
            host_ipv4(&fib, default_gateway(&route)).unwrap_or_default()
        } else {
            let v6 = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
            check_node_ip(&cfg.node_ip, &fib, &v6)?
        };
        let mem_capacity = mem_capacity();
        let capacity = NodeResources::capacity(mem_capacity, cfg);
        Ok(HostFacts {
            allocatable: capacity.allocatable(cfg),
            capacity,
            node_name,
            host_ip,
            resolv: parse_resolv_conf(&resolv_text),
            mem_capacity,
        })
    }
}

/// The architecture as Go (and so Kubernetes) names it.
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "arm64",
        "x86_64" => "amd64",
        "arm" => "arm",
        other => other,
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
    let mut best: Option<(u32, std::net::Ipv4Addr)> = None;
    for a in local_ipv4(fib_trie)
        .into_iter()
        .filter(|a| !a.is_loopback())
    {
        let common = gateway.map_or(0, |g| (u32::from(a) ^ u32::from(g)).leading_zeros());
        if best.is_none_or(|(c, _)| common > c) {
            best = Some((common, a));
        }
    }
    best.map(|(_, a)| a.to_string())
}

/// The configured `nodeIP`, in its canonical spelling, when it is usable: not
/// loopback, link-local, multicast or unspecified (kubelet refuses those), and an
/// address of one of this machine's interfaces (`fib_trie`: IPv4, `if_inet6`: IPv6).
fn check_node_ip(node_ip: &str, fib_trie: &str, if_inet6: &str) -> Result<String, NodeIpError> {
    use std::net::IpAddr;
    let ip: IpAddr = node_ip
        .parse()
        .map_err(|_| NodeIpError::NotAnAddress(node_ip.to_string()))?;
    let unusable = match ip {
        IpAddr::V4(a) => a.is_loopback() || a.is_link_local() || a.is_multicast(),
        IpAddr::V6(a) => {
            a.is_loopback() || a.is_multicast() || (a.segments()[0] & 0xffc0) == 0xfe80
        }
    } || ip.is_unspecified();
    if unusable {
        return Err(NodeIpError::Unusable(ip));
    }
    let local = match ip {
        IpAddr::V4(a) => local_ipv4(fib_trie).contains(&a),
        IpAddr::V6(a) => local_ipv6(if_inet6).contains(&a),
    };
    if !local {
        return Err(NodeIpError::NotLocal(ip));
    }
    Ok(ip.to_string())
}

/// Why the config's `nodeIP` cannot be the node's address.
#[derive(Debug)]
pub enum NodeIpError {
    /// Not an IP address at all (as written).
    NotAnAddress(String),
    /// Loopback, link-local, multicast or unspecified: kubelet refuses those.
    Unusable(std::net::IpAddr),
    /// No interface of this machine has it.
    NotLocal(std::net::IpAddr),
}

impl std::fmt::Display for NodeIpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeIpError::NotAnAddress(s) => write!(f, "nodeIP {s:?} is not an IP address"),
            NodeIpError::Unusable(ip) => write!(
                f,
                "nodeIP {ip}: a loopback, link-local, multicast or unspecified address cannot \
                 be the node's address"
            ),
            NodeIpError::NotLocal(ip) => write!(
                f,
                "nodeIP {ip}: no interface of this machine has this address (see `ip addr`)"
            ),
        }
    }
}

impl std::error::Error for NodeIpError {}

/// Every local IPv4 address in /proc/net/fib_trie (an address line followed by
/// `/32 host LOCAL`).
fn local_ipv4(fib_trie: &str) -> Vec<std::net::Ipv4Addr> {
    let mut last: Option<std::net::Ipv4Addr> = None;
    let mut out = Vec::new();
    for line in fib_trie.lines() {
        let t = line.trim_start_matches([' ', '|', '+', '-']).trim();
        if t.contains("/32 host LOCAL") {
            out.extend(last);
        } else {
            last = t.parse().ok();
        }
    }
    out
}

/// Every IPv6 address in /proc/net/if_inet6 (its first column: 32 hex digits).
fn local_ipv6(if_inet6: &str) -> Vec<std::net::Ipv6Addr> {
    if_inet6
        .lines()
        .filter_map(|l| {
            let hex = l.split_whitespace().next()?;
            let n = u128::from_str_radix(hex, 16)
                .ok()
                .filter(|_| hex.len() == 32)?;
            Some(std::net::Ipv6Addr::from(n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_ip_must_be_an_address_of_this_machine() {
        let fib = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 192.0.2.15\n        /32 host LOCAL\n     |-- 127.0.0.1\n           /32 host LOCAL\n     |-- 198.51.100.0\n        /24 link UNICAST\n";
        let v6 = "20010db8000000000000000000000001 02 40 00 80     eth0\nfe800000000000000000000000000001 02 40 20 80     eth0\n";
        assert_eq!(check_node_ip("192.0.2.15", fib, v6).unwrap(), "192.0.2.15");
        assert_eq!(
            check_node_ip("2001:db8::1", fib, v6).unwrap(),
            "2001:db8::1"
        );
        let e = check_node_ip("198.51.100.7", fib, v6)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no interface of this machine has this address"),
            "{e}"
        );
        for bad in [
            "127.0.0.1",
            "fe80::1",
            "0.0.0.0",
            "224.0.0.1",
            "169.254.1.1",
        ] {
            let e = check_node_ip(bad, fib, v6).unwrap_err().to_string();
            assert!(e.contains("cannot be the node's address"), "{bad}: {e}");
        }
        assert!(check_node_ip("gw1", fib, v6).is_err());
    }

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
