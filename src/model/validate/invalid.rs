//! Why a value fails a syntax rule of [`super::names`] or [`super::paths`]: the rule
//! and the value, displayed as the message the validators add after the field path.

use std::fmt;

/// The syntax rules a name or path is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// An RFC 1123 label.
    Dns1123Label,
    /// An RFC 1123 subdomain.
    Dns1123Subdomain,
    /// A resource name (`cpu`, `example.com/gpu`).
    ResourceName,
    /// An IANA service name (a port name).
    PortName,
    /// Printable ASCII without '=' (an env var name or prefix).
    EnvName,
    /// A ConfigMap or Secret key.
    ConfigKey,
    /// A sysctl name.
    SysctlName,
    /// A relative path (it starts with '/').
    RelativePath,
    /// No `..` component.
    NoDotDot,
    /// No NUL byte.
    NoNul,
    /// Not starting with `..` (kept for the agent's own entries).
    NoLeadingDotDot,
}

/// A value that breaks `rule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The rule broken.
    pub rule: Rule,
    /// The value.
    pub value: String,
}

impl Invalid {
    /// `value` breaks `rule`.
    pub fn new(rule: Rule, value: &str) -> Invalid {
        Invalid {
            rule,
            value: value.to_string(),
        }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let must = match self.rule {
            Rule::Dns1123Label => "must be a DNS-1123 label (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit)",
            Rule::Dns1123Subdomain => "must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit)",
            Rule::ResourceName => "must be a resource name like cpu, memory or example.com/device",
            Rule::PortName => "must be a port name (at most 15 lowercase letters, digits or '-', with a letter, no '-' at the ends or twice in a row)",
            Rule::EnvName => "must consist of printable ASCII characters other than '='",
            Rule::ConfigKey => "must be a key of letters, digits, '-', '_' or '.' (at most 253, not '.' and not starting with '..')",
            Rule::SysctlName => "must be a sysctl name like net.ipv4.ip_forward",
            Rule::RelativePath => "must be a relative path",
            Rule::NoDotDot => "must not contain '..'",
            Rule::NoNul => "must not contain a NUL byte",
            Rule::NoLeadingDotDot => "must not start with '..'",
        };
        write!(f, "{must}, got {:?}", self.value)
    }
}

impl std::error::Error for Invalid {}
