//! Image references checked against the docker reference grammar, as kubelet checks
//! them (`ParseNormalizedNamed`) before any pull: `[host[:port]/]path[:tag][@digest]`.
//!
//! - host: dot-separated parts of letters, digits and inner '-', or `[IPv6]`; a port
//!   of digits. The first part of a name is a host when it has a '.' or ':', is
//!   `localhost`, or has an upper-case letter (Docker's rule); else the name is a
//!   Docker Hub path.
//! - path: '/'-separated parts of lower-case letters and digits, joined inside a part
//!   by one '.', one or two '_', or any number of '-'.
//! - tag: 1-128 of `[A-Za-z0-9_.-]`, not starting with '.' or '-'.
//! - digest: `algorithm:hex`, the algorithm parts letters then letters or digits
//!   (joined by `+ . _ -`), at least 32 hex digits.
//! - host and path together at most 255 bytes; a bare 64-digit hex id is no name.
//!
//! A reference that fails here can never be pulled: refusing it at apply (and, for
//! anything that got past, before a pull) beats retrying a pull forever.

/// Longest name (host and path) the grammar allows.
const MAX_NAME: usize = 255;
/// Longest tag.
const MAX_TAG: usize = 128;

/// Ok when `reference` follows the grammar; else why not, in a few words.
pub fn check(reference: &str) -> Result<(), &'static str> {
    if reference.len() == 64
        && reference
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err("a 64-digit hex image id is not a repository name");
    }
    let (rest, digest) = match reference.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (reference, None),
    };
    // A ':' after the last '/' starts the tag; one before it belongs to a host's port.
    let last = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last..].find(':') {
        Some(c) => (&rest[..last + c], Some(&rest[last + c + 1..])),
        None => (rest, None),
    };
    if name.is_empty() {
        return Err("the repository name is empty");
    }
    if name.len() > MAX_NAME {
        return Err("the repository name must be at most 255 characters");
    }
    let (host, path) = match name.split_once('/') {
        Some((first, path)) if is_host_part(first) => (Some(first), path),
        _ => (None, name),
    };
    if let Some(h) = host {
        check_host(h)?;
    }
    if path.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(LOWERCASE);
    }
    if !path.split('/').all(is_path_part) {
        return Err(PATH);
    }
    if !tag.is_none_or(is_tag) {
        return Err(TAG);
    }
    if !digest.is_none_or(is_digest) {
        return Err(DIGEST);
    }
    Ok(())
}

/// Docker's rule for whether the first part of a name is a registry host.
fn is_host_part(first: &str) -> bool {
    first.contains(['.', ':'])
        || first == "localhost"
        || first.bytes().any(|b| b.is_ascii_uppercase())
}

fn check_host(h: &str) -> Result<(), &'static str> {
    let (host, port) = match h.strip_prefix('[') {
        Some(v6) => {
            let (addr, rest) = v6.split_once(']').ok_or(HOST)?;
            if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
                return Err(HOST);
            }
            match rest {
                "" => (None, None),
                r => (None, Some(r.strip_prefix(':').ok_or(HOST)?)),
            }
        }
        None => match h.split_once(':') {
            Some((name, port)) => (Some(name), Some(port)),
            None => (Some(h), None),
        },
    };
    let name_ok = host.is_none_or(|n| n.split('.').all(is_host_label));
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if name_ok && port_ok {
        Ok(())
    } else {
        Err(HOST)
    }
}

const HOST: &str =
    "the registry must be a host name, IPv4 or [IPv6] address with an optional :port";
const LOWERCASE: &str = "the repository name must be lowercase";
const PATH: &str = "each part of the repository path must be lowercase letters and digits, joined by '.', '_', '__' or '-'";
const TAG: &str =
    "the tag must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'";
const DIGEST: &str = "the digest must be ALGORITHM:HEX with at least 32 hex digits";

/// Letters and digits with '-' inside.
fn is_host_label(l: &str) -> bool {
    let b = l.as_bytes();
    !b.is_empty()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Lower-case alphanumeric runs joined by `.`, `_`, `__` or `-`+.
fn is_path_part(p: &str) -> bool {
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = p.as_bytes();
    if !b.first().is_some_and(alnum) || !b.last().is_some_and(alnum) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && alnum(&b[i]) {
            i += 1;
        }
        let sep = i;
        while i < b.len() && !alnum(&b[i]) {
            i += 1;
        }
        let ok = match &b[sep..i] {
            [] | [b'.'] | [b'_'] | [b'_', b'_'] => true,
            s => s.iter().all(|c| *c == b'-'),
        };
        if !ok {
            return false;
        }
    }
    true
}

fn is_tag(t: &str) -> bool {
    let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    let b = t.as_bytes();
    b.len() <= MAX_TAG
        && b.first().is_some_and(word)
        && b.iter().all(|c| word(c) || *c == b'.' || *c == b'-')
}

fn is_digest(d: &str) -> bool {
    let Some((algo, hex)) = d.split_once(':') else {
        return false;
    };
    let algo_ok = algo.split(['+', '.', '_', '-']).all(|part| {
        let b = part.as_bytes();
        b.first().is_some_and(u8::is_ascii_alphabetic) && b.iter().all(u8::is_ascii_alphanumeric)
    });
    algo_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX64: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn valid_references() {
        for r in [
            "busybox",
            "busybox:1.36",
            "library/busybox:latest",
            "127.0.0.1:5000/a/b:v1",
            "localhost/busybox",
            "localhost:5000/my_app/web-ui:V1.2_rc-3",
            "registry.example.com/a__b/c.d/e---f",
            "[::1]:5000/app",
            "Registry.Example.com/app",
            &format!("x@sha256:{HEX64}"),
            &format!("r.io:443/x:1@sha256:{HEX64}"),
            &format!("sha256:{HEX64}"),
            &format!("app:{}", "t".repeat(128)),
        ] {
            assert_eq!(check(r), Ok(()), "{r}");
        }
    }

    #[test]
    fn invalid_references() {
        for (r, want) in [
            ("Busybox", Err(LOWERCASE)),
            ("localhost/Busybox", Err(LOWERCASE)),
            ("r.io/app/Web:v1", Err(LOWERCASE)),
            ("localhost/busybox v1", Err(PATH)),
            ("localhost/busybox:v 1", Err(TAG)),
            ("busybox:1\nx", Err(TAG)),
            ("busy\nbox", Err(PATH)),
            ("a//b", Err(PATH)),
            ("a/b_._c", Err(PATH)),
            ("a___b", Err(PATH)),
            ("-a", Err(PATH)),
            ("app:", Err(TAG)),
            ("app:.x", Err(TAG)),
            (&format!("app:{}", "t".repeat(129)), Err(TAG)),
            ("x@sha256:abc", Err(DIGEST)),
            (&format!("x@{HEX64}"), Err(DIGEST)),
            (&format!("x@2sha:{HEX64}"), Err(DIGEST)),
            ("r.io:port/app", Err(HOST)),
            ("-r.io/app", Err(HOST)),
            ("[::g]/app", Err(HOST)),
            ("[::1]x/app", Err(HOST)),
            (":5000/app", Err(HOST)),
            (
                HEX64,
                Err("a 64-digit hex image id is not a repository name"),
            ),
            (":v1", Err("the repository name is empty")),
            (
                &format!("r.io/{}", "a".repeat(251)),
                Err("the repository name must be at most 255 characters"),
            ),
        ] {
            assert_eq!(check(r), want, "{r:?}");
        }
    }
}
