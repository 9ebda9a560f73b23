//! The API server's addresses, without blocking the agent's only thread: an IP address
//! as it is, `localhost`, a name from `/etc/hosts`, else a DNS query of our own over UDP
//! (async-io) to the servers in `/etc/resolv.conf` (getaddrinfo would stall every pod's
//! probes and restarts for as long as DNS takes to fail while the uplink is down).
//!
//! The query is the plain stub-resolver kind: A, then AAAA when there is no A record,
//! recursion desired, each server tried in turn with a 2 s timeout, names without a dot
//! tried with the search domains first. Answers are bounded (one 512-byte datagram read
//! into a 1,500-byte buffer), must come from the server and match the query: its id
//! (random, [`super::backoff::random`]) and its question (name, type and class), so a
//! stray or forged datagram that guessed the id alone is ignored.

use crate::tls::files::{read_bounded, Secrecy};
use crate::tls::ConnectError;
use async_io::{Async, Timer};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(2);
const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;

/// The addresses of `host`, each with `port`.
pub async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, ConnectError> {
    let with_port = |ips: Vec<IpAddr>| {
        ips.into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect()
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    if host == "localhost" {
        return Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))]);
    }
    let read = |p: &str| {
        read_bounded(Path::new(p), 1 << 20, Secrecy::Public)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let found = hosts_lookup(&read("/etc/hosts").unwrap_or_default(), host);
    if !found.is_empty() {
        return Ok(with_port(found));
    }
    let conf =
        crate::kuberuntime::dns::parse_resolv_conf(&read("/etc/resolv.conf").unwrap_or_default());
    let servers: Vec<SocketAddr> = conf
        .servers
        .iter()
        .filter_map(|s| s.parse::<IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, 53))
        .take(3)
        .collect();
    if servers.is_empty() {
        return Err(ConnectError::Resolve(format!(
            "{host}: not in /etc/hosts and no nameserver in /etc/resolv.conf"
        )));
    }
    let mut names: Vec<String> = Vec::new();
    if !host.contains('.') {
        names.extend(conf.searches.iter().take(6).map(|d| format!("{host}.{d}")));
    }
    names.push(host.to_string());
    let mut last = String::from("no answer");
    for name in &names {
        for qtype in [TYPE_A, TYPE_AAAA] {
            match query(&servers, name, qtype).await {
                Ok(ips) if !ips.is_empty() => return Ok(with_port(ips)),
                Ok(_) => {}
                Err(e) => last = e.to_string(),
            }
        }
    }
    Err(ConnectError::Resolve(format!("{host}: {last}")))
}

/// The addresses `/etc/hosts` gives `name`.
pub fn hosts_lookup(hosts: &str, name: &str) -> Vec<IpAddr> {
    hosts
        .lines()
        .filter_map(|l| {
            let mut words = l.split('#').next()?.split_whitespace();
            let ip = words.next()?.parse::<IpAddr>().ok()?;
            words.any(|w| w.eq_ignore_ascii_case(name)).then_some(ip)
        })
        .collect()
}

/// Why a query got no addresses.
#[derive(Debug)]
pub enum QueryError {
    /// The name has an empty or over-long label.
    BadName(String),
    /// No local UDP socket.
    Socket(std::io::Error),
    /// The last server asked could not be reached or did not answer in time.
    Server(SocketAddr, std::io::Error),
    /// The last server asked answered with a failure code (rcode).
    Answer(SocketAddr, u8),
    /// No server to ask.
    NoServer,
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::BadName(name) => write!(f, "{name:?} is not a valid host name"),
            QueryError::Socket(e) => e.fmt(f),
            QueryError::Server(server, e) => write!(f, "{server}: {e}"),
            QueryError::Answer(server, rcode) => match rcode {
                2 => write!(f, "{server}: server failure"),
                3 => write!(f, "{server}: no such name"),
                5 => write!(f, "{server}: refused"),
                n => write!(f, "{server}: error code {n}"),
            },
            QueryError::NoServer => Ok(()),
        }
    }
}

impl std::error::Error for QueryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            QueryError::Socket(e) | QueryError::Server(_, e) => Some(e),
            _ => None,
        }
    }
}

/// Asks each server in turn; the first that answers decides.
async fn query(servers: &[SocketAddr], name: &str, qtype: u16) -> Result<Vec<IpAddr>, QueryError> {
    let packet = encode_query(super::backoff::random() as u16, name, qtype)?;
    let mut last = QueryError::NoServer;
    for &server in servers {
        let bind: SocketAddr = if server.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = Async::<UdpSocket>::bind(bind).map_err(QueryError::Socket)?;
        if let Err(e) = socket.get_ref().connect(server) {
            last = QueryError::Server(server, e);
            continue;
        }
        let exchange = async {
            socket.send(&packet).await?;
            let mut buf = [0u8; 1500];
            loop {
                let n = socket.recv(&mut buf).await?;
                if let Some(answer) = decode_answer(&buf[..n], &packet) {
                    return Ok::<_, std::io::Error>(answer);
                }
            }
        };
        let timeout = async {
            Timer::after(TIMEOUT).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no answer within 2s",
            ))
        };
        match smol::future::or(exchange, timeout).await {
            Ok(answer) => return answer.map_err(|rcode| QueryError::Answer(server, rcode)),
            Err(e) => last = QueryError::Server(server, e),
        }
    }
    Err(last)
}

/// A standard query with recursion desired.
pub fn encode_query(id: u16, name: &str, qtype: u16) -> Result<Vec<u8>, QueryError> {
    let mut p = Vec::with_capacity(18 + name.len());
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(QueryError::BadName(name.to_string()));
        }
        p.push(label.len() as u8);
        p.extend_from_slice(label.as_bytes());
    }
    p.push(0);
    p.extend_from_slice(&qtype.to_be_bytes());
    p.extend_from_slice(&[0, 1]);
    Ok(p)
}

/// The addresses of the queried type in an answer to `query` (as [`encode_query`] made
/// it); `None` for a packet that is not that answer (ignored); `Some(Err(rcode))` for a
/// failure answer. An answer repeats the query's id and its one question: name (in any
/// letter case), type and class.
pub fn decode_answer(p: &[u8], query: &[u8]) -> Option<Result<Vec<IpAddr>, u8>> {
    // The question: the name's labels, then type and class (2 bytes each).
    let question = query.get(12..).filter(|q| q.len() >= 5)?;
    let qtype = u16::from_be_bytes([question[question.len() - 4], question[question.len() - 3]]);
    let asked = p.get(12..12 + question.len())?;
    let count = |i: usize| u16::from_be_bytes([p[i], p[i + 1]]) as usize;
    // Folding case over the whole question folds only the name's letters: label
    // lengths are below 64, and our type and class bytes are no letters.
    let same_question = count(4) == 1 && asked.eq_ignore_ascii_case(question);
    if p[..2] != query[..2] || p[2] & 0x80 == 0 || !same_question {
        return None;
    }
    let rcode = p[3] & 0x0f;
    if rcode != 0 {
        return Some(Err(rcode));
    }
    let answers = count(6);
    let mut at = 12 + question.len();
    let mut out = Vec::new();
    for _ in 0..answers {
        at = skip_name(p, at)?;
        let head = p.get(at..at + 10)?;
        let (rtype, len) = (
            u16::from_be_bytes([head[0], head[1]]),
            u16::from_be_bytes([head[8], head[9]]) as usize,
        );
        let data = p.get(at + 10..at + 10 + len)?;
        at += 10 + len;
        match (rtype, len) {
            (TYPE_A, 4) if qtype == TYPE_A => out.push(IpAddr::V4(Ipv4Addr::new(
                data[0], data[1], data[2], data[3],
            ))),
            (TYPE_AAAA, 16) if qtype == TYPE_AAAA => {
                let b: [u8; 16] = data.try_into().ok()?;
                out.push(IpAddr::V6(Ipv6Addr::from(b)));
            }
            _ => {}
        }
    }
    Some(Ok(out))
}

/// The offset after a (possibly compressed) name starting at `at`.
fn skip_name(p: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *p.get(at)?;
        match len {
            0 => return Some(at + 1),
            l if l & 0xc0 == 0xc0 => return Some(at + 2).filter(|&end| end <= p.len()),
            l => at += 1 + l as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etc_hosts() {
        let hosts = "127.0.0.1 localhost\n# 10.0.0.1 k8s\n192.168.1.5  k8s.lan k8s # the cluster\n::1 ip6-localhost k8s\n";
        let want: Vec<IpAddr> = vec!["192.168.1.5".parse().unwrap(), "::1".parse().unwrap()];
        assert_eq!(hosts_lookup(hosts, "K8S"), want);
        assert!(hosts_lookup(hosts, "k8s.example").is_empty());
    }

    /// An answer as a server would send it: the query, then a CNAME and two A records
    /// whose names are compression pointers.
    fn answer_to(query: &[u8], rcode: u8) -> Vec<u8> {
        let mut p = query.to_vec();
        p[2] |= 0x80;
        p[3] = 0x80 | rcode;
        p[7] = 3;
        let cname = [0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xc0, 12];
        p.extend_from_slice(&cname);
        for last in [7u8, 8] {
            p.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, last]);
        }
        p
    }

    #[test]
    fn queries_and_answers() {
        let q = encode_query(0xbeef, "api.example.com", TYPE_A).unwrap();
        assert_eq!(&q[..4], &[0xbe, 0xef, 1, 0]);
        assert_eq!(&q[12..], b"\x03api\x07example\x03com\x00\x00\x01\x00\x01");
        let ips = decode_answer(&answer_to(&q, 0), &q).unwrap().unwrap();
        assert_eq!(
            ips,
            [
                "10.0.0.7".parse::<IpAddr>().unwrap(),
                "10.0.0.8".parse().unwrap()
            ]
        );
        assert_eq!(decode_answer(&answer_to(&q, 3), &q), Some(Err(3)));
        let other = encode_query(0xbeee, "api.example.com", TYPE_A).unwrap();
        assert_eq!(decode_answer(&answer_to(&q, 0), &other), None, "another id");
        assert_eq!(decode_answer(&q, &q), None, "not an answer");
        // Truncated or lying packets are ignored, never a panic.
        let full = answer_to(&q, 0);
        for cut in 0..full.len() {
            let _ = decode_answer(&full[..cut], &q);
        }
        assert!(encode_query(1, "a..b", TYPE_A).is_err());
    }

    #[test]
    fn an_answer_must_repeat_the_question() {
        let q = encode_query(0xbeef, "api.example.com", TYPE_A).unwrap();
        let answer = |name: &str, qtype: u16| {
            let asked = encode_query(0xbeef, name, qtype).unwrap();
            decode_answer(&answer_to(&asked, 0), &q)
        };
        assert!(matches!(answer("API.Example.COM", TYPE_A), Some(Ok(ips)) if ips.len() == 2));
        assert_eq!(answer("evil.example.com", TYPE_A), None, "another name");
        assert_eq!(answer("api.example.co", TYPE_A), None, "a shorter name");
        assert_eq!(answer("api.example.com", TYPE_AAAA), None, "another type");
        // Another class (CH), no question, two questions: not the answer either.
        let mut chaos = answer_to(&q, 0);
        chaos[q.len() - 1] = 3;
        assert_eq!(decode_answer(&chaos, &q), None);
        for questions in [0, 2] {
            let mut a = answer_to(&q, 0);
            a[5] = questions;
            assert_eq!(decode_answer(&a, &q), None, "{questions} questions");
        }
        // A failure code counts only from the answer to this question.
        let nx = encode_query(0xbeef, "other.example.com", TYPE_A).unwrap();
        assert_eq!(decode_answer(&answer_to(&nx, 3), &q), None);
    }

    #[test]
    fn resolves_through_a_dns_server() {
        crate::rt::block_on(async {
            let server = Async::<UdpSocket>::bind(([127, 0, 0, 1], 0)).unwrap();
            let addr = server.get_ref().local_addr().unwrap();
            let serve = async {
                let mut buf = [0u8; 512];
                let (n, from) = server.recv_from(&mut buf).await.unwrap();
                server
                    .send_to(&answer_to(&buf[..n], 0), from)
                    .await
                    .unwrap();
            };
            let servers = [addr];
            let ask = query(&servers, "api.example.com", TYPE_A);
            let (ips, ()) = smol::future::zip(ask, serve).await;
            assert_eq!(ips.unwrap().len(), 2);
            // A server that never answers: the next one is asked after the timeout.
            let silent = Async::<UdpSocket>::bind(([127, 0, 0, 1], 0)).unwrap();
            let t0 = std::time::Instant::now();
            let e = query(
                &[silent.get_ref().local_addr().unwrap()],
                "x.example",
                TYPE_A,
            )
            .await
            .unwrap_err()
            .to_string();
            assert!(e.contains("no answer") && t0.elapsed() >= TIMEOUT, "{e}");
        });
    }
}
