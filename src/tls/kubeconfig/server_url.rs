//! The API server's URL as a kubeconfig gives it: `https://host[:port][/prefix]`, parsed
//! strictly (TLS only; no user, query or fragment).

use std::fmt;

/// `https://host[:port][/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// The port (443 when the URL names none).
    pub port: u16,
    /// A path prefix the API is served under (e.g. behind a proxy); "" for none.
    pub prefix: String,
}

/// Why a server URL is refused: what is wrong, and the URL as written.
#[derive(Debug)]
pub struct BadServerUrl {
    url: String,
    problem: UrlProblem,
}

#[derive(Debug)]
enum UrlProblem {
    NotHttps,
    Extras,
    UnclosedBracket,
    Port(String),
    Host(String),
}

impl fmt::Display for BadServerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = &self.url;
        match &self.problem {
            UrlProblem::NotHttps => {
                write!(f, "must start with https:// (TLS is required), got {url:?}")
            }
            UrlProblem::Extras => write!(
                f,
                "must be https://host[:port][/path] without user, query or fragment, got {url:?}"
            ),
            UrlProblem::UnclosedBracket => write!(f, "unclosed [ in {url:?}"),
            UrlProblem::Port(p) => write!(f, "bad port {p:?} in {url:?}"),
            UrlProblem::Host(h) => write!(f, "bad host {h:?} in {url:?}"),
        }
    }
}

impl std::error::Error for BadServerUrl {}

impl ServerUrl {
    /// Parses the server URL; only `https` is accepted.
    pub fn parse(url: &str) -> Result<ServerUrl, BadServerUrl> {
        let bad = |problem| BadServerUrl {
            url: url.to_string(),
            problem,
        };
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| bad(UrlProblem::NotHttps))?;
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.contains('@') || prefix.contains(['?', '#']) || authority.contains(['?', '#'])
        {
            return Err(bad(UrlProblem::Extras));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| bad(UrlProblem::UnclosedBracket))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        let port = match port {
            None => 443,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad(UrlProblem::Port(p.to_string())))?,
        };
        if host.is_empty()
            || !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.:".contains(&b))
        {
            return Err(bad(UrlProblem::Host(host.to_string())));
        }
        Ok(ServerUrl {
            host: host.to_ascii_lowercase(),
            port,
            prefix: prefix.to_string(),
        })
    }

    /// `host:port` as an HTTP authority (IPv6 in brackets).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for ServerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "https://{}{}", self.authority(), self.prefix)
    }
}
