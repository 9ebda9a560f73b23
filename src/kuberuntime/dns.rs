//! The pod's DNS config from `dnsPolicy`, `dnsConfig` and the host's resolv.conf, with
//! kubelet's rules. The device has no cluster DNS, so `ClusterFirst` (and
//! `ClusterFirstWithHostNet`) fall back to the host's resolver, which is what kubelet
//! does when it has no cluster DNS configured.

use crate::cri::pb;
use crate::model::pod::{DnsPolicy, PodDnsConfig};

/// kubelet's limits on the generated resolv.conf.
pub const MAX_NAMESERVERS: usize = 3;
/// Most search domains passed to a pod (kubelet's limit).
pub const MAX_SEARCHES: usize = 32;

/// What a resolv.conf says (the parts CRI carries).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResolvConf {
    /// `nameserver` addresses.
    pub servers: Vec<String>,
    /// `search` domains.
    pub searches: Vec<String>,
    /// `options`.
    pub options: Vec<String>,
}

/// Parses resolv.conf text; unknown lines and comments are ignored, never an error.
pub fn parse_resolv_conf(text: &str) -> ResolvConf {
    let mut rc = ResolvConf::default();
    for line in text.lines() {
        let line = line.split(['#', ';']).next().unwrap_or("");
        let mut words = line.split_whitespace();
        match words.next() {
            Some("nameserver") => rc.servers.extend(words.next().map(String::from)),
            // The last search/domain line wins, as in the resolver.
            Some("search") | Some("domain") => rc.searches = words.map(String::from).collect(),
            Some("options") => rc.options.extend(words.map(String::from)),
            _ => {}
        }
    }
    rc
}

/// The sandbox's DNS config. `host` is the host's parsed resolv.conf.
pub fn dns_config(
    policy: DnsPolicy,
    extra: Option<&PodDnsConfig>,
    host: &ResolvConf,
) -> pb::DnsConfig {
    let mut rc = match policy {
        DnsPolicy::None => ResolvConf::default(),
        DnsPolicy::ClusterFirst | DnsPolicy::ClusterFirstWithHostNet | DnsPolicy::Default => {
            host.clone()
        }
    };
    if let Some(extra) = extra {
        merge(&mut rc, extra);
    }
    rc.servers.truncate(MAX_NAMESERVERS);
    rc.searches.truncate(MAX_SEARCHES);
    pb::DnsConfig {
        servers: rc.servers,
        searches: rc.searches,
        options: rc.options,
    }
}

/// Appends `dnsConfig` as kubelet does: servers and searches added without duplicates,
/// options overriding the host's option of the same name.
fn merge(rc: &mut ResolvConf, extra: &PodDnsConfig) {
    for s in &extra.nameservers {
        if !rc.servers.contains(s) {
            rc.servers.push(s.clone());
        }
    }
    for s in &extra.searches {
        if !rc.searches.contains(s) {
            rc.searches.push(s.clone());
        }
    }
    for o in &extra.options {
        let text = match &o.value {
            Some(v) => format!("{}:{v}", o.name),
            None => o.name.clone(),
        };
        rc.options
            .retain(|existing| existing.split(':').next() != Some(o.name.as_str()));
        rc.options.push(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pod::PodDnsConfigOption;

    const HOST: &str = "# generated\nnameserver 192.0.2.1\nnameserver 192.0.2.2 ; x\nsearch lan home\noptions ndots:1 edns0\ngarbage line\n";

    #[test]
    fn parses_host_resolv_conf() {
        let rc = parse_resolv_conf(HOST);
        assert_eq!(rc.servers, ["192.0.2.1", "192.0.2.2"]);
        assert_eq!(rc.searches, ["lan", "home"]);
        assert_eq!(rc.options, ["ndots:1", "edns0"]);
    }

    #[test]
    fn cluster_first_falls_back_to_the_host() {
        let d = dns_config(DnsPolicy::ClusterFirst, None, &parse_resolv_conf(HOST));
        assert_eq!(d.servers, ["192.0.2.1", "192.0.2.2"]);
    }

    #[test]
    fn none_uses_only_dns_config_and_options_override() {
        let extra = PodDnsConfig {
            nameservers: vec!["198.51.100.1".into()],
            searches: vec!["svc".into()],
            options: vec![PodDnsConfigOption {
                name: "ndots".into(),
                value: Some("5".into()),
            }],
        };
        let none = dns_config(DnsPolicy::None, Some(&extra), &parse_resolv_conf(HOST));
        assert_eq!(
            (none.servers.as_slice(), none.options.as_slice()),
            (
                &["198.51.100.1".to_string()][..],
                &["ndots:5".to_string()][..]
            )
        );
        let merged = dns_config(DnsPolicy::Default, Some(&extra), &parse_resolv_conf(HOST));
        assert_eq!(merged.servers.len(), 3);
        assert_eq!(merged.searches, ["lan", "home", "svc"]);
        assert_eq!(merged.options, ["edns0", "ndots:5"]);
    }

    #[test]
    fn limits_apply() {
        let many = (0..10)
            .map(|i| format!("nameserver 192.0.2.{i}\n"))
            .collect::<String>();
        assert_eq!(
            dns_config(DnsPolicy::Default, None, &parse_resolv_conf(&many))
                .servers
                .len(),
            3
        );
    }
}
