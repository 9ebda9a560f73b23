//! The syntax of names, as pure functions: what a name must look like before the agent
//! stores it or builds a file path from it. They follow apimachinery's
//! `util/validation` (`IsDNS1123Label`, `IsDNS1123Subdomain`, `IsQualifiedName`,
//! `IsValidLabelValue`, `IsValidPortName`, `IsConfigMapKey`, `IsRelaxedEnvVarName`)
//! and the core API's `IsValidSysctlName`; a uid, which the API server generates
//! rather than checks, is held to what is safe as a path component. Each returns the
//! message the callers add after the field path, or a bool where only the answer is
//! needed (`is_qualified_name`, `is_label_value`: also the node labels and taints of
//! the API-server config).

use super::invalid::{Invalid, Rule};

/// RFC 1123 label: lowercase letters, digits and '-', alphanumeric at both ends, <= 63.
pub fn dns1123_label(s: &str) -> Result<(), Invalid> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|&c| is_alnum_lower(c) || c == b'-')
        && b.first().is_some_and(|&c| is_alnum_lower(c))
        && b.last().is_some_and(|&c| is_alnum_lower(c));
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(Rule::Dns1123Label, s))
    }
}

/// RFC 1123 subdomain: dot-separated labels, <= 253 in all. Never contains '/', "..",
/// a NUL or a leading '.', so it is safe as a file name.
pub fn dns1123_subdomain(s: &str) -> Result<(), Invalid> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.iter().all(|&c| is_alnum_lower(c) || c == b'-')
                && is_alnum_lower(b[0])
                && is_alnum_lower(b[b.len() - 1])
        });
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(Rule::Dns1123Subdomain, s))
    }
}

/// A Kubernetes qualified name: optional DNS subdomain prefix and '/', then 1-63
/// alphanumerics, '-', '_' or '.', alphanumeric at both ends.
pub(super) fn qualified_name(s: &str) -> Result<(), ()> {
    let name = match s.split_once('/') {
        Some((prefix, name)) => {
            dns1123_subdomain(prefix).map_err(|_| ())?;
            name
        }
        None => s,
    };
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(())
    }
}

/// Whether `s` is a qualified name (a label or taint key).
pub fn is_qualified_name(s: &str) -> bool {
    qualified_name(s).is_ok()
}

/// A label value: empty, or at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends.
pub fn is_label_value(v: &str) -> bool {
    v.is_empty() || qualified_name(v).is_ok() && !v.contains('/')
}

/// A resource name: `cpu`, `memory`, ..., or a qualified name (`example.com/gpu`).
pub(super) fn resource_name(s: &str) -> Result<(), Invalid> {
    qualified_name(s).map_err(|_| Invalid::new(Rule::ResourceName, s))
}

/// IANA service name, as Kubernetes requires of port names: <= 15 lowercase letters,
/// digits and '-', at least one letter, no '-' at either end or twice in a row.
pub(super) fn port_name(s: &str) -> Result<(), Invalid> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 15
        && b.iter().all(|&c| is_alnum_lower(c) || c == b'-')
        && b.iter().any(u8::is_ascii_lowercase)
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--");
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(Rule::PortName, s))
    }
}

/// Kubernetes' relaxed env var name rule: printable ASCII, no '='.
pub(super) fn env_name(s: &str) -> Result<(), Invalid> {
    if s.bytes().all(|c| (b' '..=b'~').contains(&c) && c != b'=') {
        Ok(())
    } else {
        Err(Invalid::new(Rule::EnvName, s))
    }
}

/// A ConfigMap/Secret key: letters, digits, '-', '_', '.'; <= 253; not `.`/`..`, not
/// starting with `..`.
pub(super) fn config_key(s: &str) -> Result<(), Invalid> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
        && s != "."
        && !s.starts_with("..");
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(Rule::ConfigKey, s))
    }
}

/// A sysctl name: dot- or slash-separated lowercase parts (`net.ipv4.ip_forward`).
pub(super) fn sysctl_name(s: &str) -> Result<(), Invalid> {
    let ok = s.len() <= 253
        && s.split(['.', '/']).all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|&c| is_alnum_lower(c) || c == b'-' || c == b'_')
                && is_alnum_lower(b[0])
                && is_alnum_lower(b[b.len() - 1])
        });
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(Rule::SysctlName, s))
    }
}

/// A uid safe to put in a path: 1-128 of `[A-Za-z0-9._-]`, not starting with '.'.
pub(super) fn is_safe_uid(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && !s.starts_with('.')
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
}

fn is_alnum_lower(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(check: fn(&str) -> Result<(), Invalid>, s: &str) -> bool {
        check(s).is_ok()
    }

    #[test]
    fn dns1123_label_edges() {
        assert!(ok(dns1123_label, "a"));
        assert!(ok(dns1123_label, "0-a-9"));
        assert!(ok(dns1123_label, &"a".repeat(63)));
        assert!(!ok(dns1123_label, &"a".repeat(64)));
        for bad in ["", "-a", "a-", "A", "a.b", "a_b", "a/b", "é"] {
            assert!(!ok(dns1123_label, bad), "{bad:?}");
        }
        assert_eq!(
            dns1123_label("A").unwrap_err().to_string(),
            "must be a DNS-1123 label (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit), got \"A\""
        );
    }

    #[test]
    fn dns1123_subdomain_edges() {
        assert!(ok(dns1123_subdomain, "a.b-c.d"));
        let long = format!("{}.{}", "a".repeat(63), "b".repeat(189));
        assert_eq!(long.len(), 253);
        assert!(ok(dns1123_subdomain, &long));
        assert!(!ok(dns1123_subdomain, &format!("{long}c")));
        for bad in [
            "", ".", ".a", "a.", "a..b", "a/b", "..", "a.-b", "A.b", "a\0",
        ] {
            assert!(!ok(dns1123_subdomain, bad), "{bad:?}");
        }
    }

    #[test]
    fn qualified_names_and_label_values() {
        for good in ["a", "A_b.c-9", "example.com/a", &"x".repeat(63)] {
            assert!(is_qualified_name(good), "{good:?}");
        }
        let long_prefix = format!("{}/a", "a".repeat(254));
        let long_name = "x".repeat(64);
        let bad = [
            "",
            "_a",
            "a_",
            "/a",
            "a/",
            "Example.com/a",
            "a/b/c",
            &long_prefix,
            &long_name,
        ];
        for bad in bad {
            assert!(!is_qualified_name(bad), "{bad:?}");
        }
        assert!(is_label_value(""));
        assert!(is_label_value("v1.2_x-Y"));
        assert!(is_label_value(&"v".repeat(63)));
        assert!(!is_label_value(&"v".repeat(64)));
        assert!(!is_label_value("example.com/v"));
        assert!(!is_label_value("-v"));
        assert!(!is_label_value("v "));
    }

    #[test]
    fn resource_names() {
        for good in ["cpu", "memory", "example.com/gpu", "hugepages-2Mi"] {
            assert!(ok(resource_name, good), "{good:?}");
        }
        assert_eq!(
            resource_name("a b").unwrap_err().to_string(),
            "must be a resource name like cpu, memory or example.com/device, got \"a b\""
        );
    }

    #[test]
    fn port_name_edges() {
        assert!(ok(port_name, "http"));
        assert!(ok(port_name, "a1-2"));
        assert!(ok(port_name, &"a".repeat(15)));
        assert!(!ok(port_name, &"a".repeat(16)));
        for bad in ["", "80", "1-2", "-a", "a-", "a--b", "Http", "a_b"] {
            assert!(!ok(port_name, bad), "{bad:?}");
        }
    }

    #[test]
    fn env_name_edges() {
        for good in ["", "PATH", "a.b-c", " ", "~!", "1st"] {
            assert!(ok(env_name, good), "{good:?}");
        }
        for bad in ["A=B", "=", "a\tb", "a\nb", "\u{7f}", "é"] {
            assert!(!ok(env_name, bad), "{bad:?}");
        }
    }

    #[test]
    fn config_key_edges() {
        for good in ["a", ".a", "a..b", "a.", "A_b-9", &"k".repeat(253)] {
            assert!(ok(config_key, good), "{good:?}");
        }
        for bad in ["", ".", "..", "..a", "a/b", "a b", &"k".repeat(254)] {
            assert!(!ok(config_key, bad), "{bad:?}");
        }
    }

    #[test]
    fn sysctl_name_edges() {
        for good in [
            "net.ipv4.ip_forward",
            "kernel/shm_rmid_forced",
            "a",
            "net.ipv4.conf.eth0-1.x",
        ] {
            assert!(ok(sysctl_name, good), "{good:?}");
        }
        let long = format!("{}.{}", "a".repeat(126), "b".repeat(127));
        assert_eq!(long.len(), 254);
        for bad in [
            "", "net..x", ".net", "net.", "Net.x", "net._x", "net.x-", &long,
        ] {
            assert!(!ok(sysctl_name, bad), "{bad:?}");
        }
    }

    #[test]
    fn safe_uid_edges() {
        assert!(is_safe_uid("0b5c2a4e-1f7d-4c8a-9e6b-2d3f4a5b6c7d"));
        assert!(is_safe_uid("a._-Z9"));
        assert!(is_safe_uid(&"u".repeat(128)));
        for bad in ["", ".", ".a", "..", "a/b", "a b", "a\0", &"u".repeat(129)] {
            assert!(!is_safe_uid(bad), "{bad:?}");
        }
    }
}
