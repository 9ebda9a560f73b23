//! The uplink's API client against a local fault-injection server (TLS 1.3 + HTTP/2 on
//! loopback, `uplink_support/server.rs`): every verb's request on the wire, decoded
//! failure statuses, TLS failures with clear messages, deadlines, oversized and garbage
//! answers, watch streams, reconnecting after the server was away, a dead link found by
//! PING, a 429's Retry-After honoured, and the thread budget. The real API server is exercised in `uplink_kube.rs`.
#![cfg(feature = "uplink")]

#[path = "uplink_support/pki.rs"]
mod pki;
#[path = "uplink_support/server.rs"]
mod server;
#[path = "common/threads.rs"]
mod threads;

use bytes::Bytes;
use pki::{Key, Pki, Spec};
use serde_json::{json, Value};
use server::{body_of, reply, status_body, FakeApi, Handler};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tinylet::rt;
use tinylet::tls::kubeconfig;
use tinylet::uplink::{
    resource_path, ApiClient, ApiError, ClientOptions, ConnectError, DeleteOptions, EventType,
    Keepalive, ListParams, PatchType, Preconditions,
};

/// A CA, a server certificate for 127.0.0.1 and a node client certificate.
struct Setup {
    pki: Pki,
    ca: PathBuf,
    server: (PathBuf, PathBuf),
    node: (PathBuf, PathBuf),
}

fn setup(tag: &str, node_key: Key) -> Setup {
    let pki = Pki::new(tag);
    let ca = pki.ca("ca");
    let server = pki.cert(
        "server",
        "ca",
        &Spec {
            subject: "/CN=kube-apiserver",
            san: Some("IP:127.0.0.1,DNS:localhost"),
            key: Key::EcPkcs8,
            expired: false,
        },
    );
    let node = pki.cert(
        "node",
        "ca",
        &Spec {
            subject: "/CN=system:node:gw1/O=system:nodes",
            san: None,
            key: node_key,
            expired: false,
        },
    );
    Setup {
        pki,
        ca,
        server,
        node,
    }
}

impl Setup {
    fn start(&self, handler: Handler) -> FakeApi {
        FakeApi::start(
            server::tls_config(&self.server.0, &self.server.1, &self.ca, true),
            handler,
        )
    }

    fn client(&self, url: &str, options: ClientOptions) -> ApiClient {
        let kc = self
            .pki
            .kubeconfig("node.conf", url, &self.ca, &self.node.0, &self.node.1);
        ApiClient::new(&kubeconfig::load(&kc).unwrap(), options).unwrap()
    }
}

fn opts(timeout_ms: u64) -> ClientOptions {
    ClientOptions {
        timeout: Duration::from_millis(timeout_ms),
        ..ClientOptions::default()
    }
}

/// Runs a test body on the executor, failing instead of hanging.
fn run(body: impl std::future::Future<Output = ()>) {
    rt::block_on(smol::future::or(body, async {
        async_io::Timer::after(Duration::from_secs(60)).await;
        panic!("test timed out");
    }))
}

/// Echoes each request as JSON; paths under /fail/CODE answer that failure status.
fn echo() -> Handler {
    Rc::new(|req, respond| {
        Box::pin(async move {
            let (head, body) = req.into_parts();
            let path = head
                .uri
                .path_and_query()
                .map(|p| p.to_string())
                .unwrap_or_default();
            if let Some(code) = path.strip_prefix("/fail/") {
                let code: u16 = code.parse().unwrap();
                let reason = match code {
                    403 => "Forbidden",
                    404 => "NotFound",
                    409 => "AlreadyExists",
                    410 => "Expired",
                    _ => "Invalid",
                };
                return reply(
                    respond,
                    code,
                    status_body(code, reason, &format!("test says {code}")),
                );
            }
            let header = |n: &str| {
                head.headers
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string()
            };
            let body = body_of(body).await;
            let echo = json!({"method": head.method.as_str(), "path": path, "contentType": header("content-type"),
                "accept": header("accept"), "userAgent": header("user-agent"), "authorization": header("authorization"),
                "body": String::from_utf8_lossy(&body)});
            reply(respond, 200, echo.to_string())
        })
    })
}

#[test]
fn every_verb_on_one_connection_and_failures_decoded() {
    let s = setup("verbs", Key::EcSec1);
    run(async {
        let api = s.start(echo());
        let client = s.client(&api.url(), opts(5000));
        let node = resource_path("v1", None, "nodes", Some("gw1"), None);
        let got: Value = client.get(&node).await.unwrap();
        assert_eq!(
            (got["method"].as_str(), got["path"].as_str()),
            (Some("GET"), Some("/api/v1/nodes/gw1"))
        );
        assert_eq!(got["accept"], "application/json");
        assert!(
            got["userAgent"].as_str().unwrap().starts_with("tinylet/"),
            "{got}"
        );
        assert_eq!(got["authorization"], "");
        let pods = resource_path("v1", None, "pods", None, None);
        let params = ListParams {
            field_selector: Some("spec.nodeName=gw1".into()),
            ..Default::default()
        };
        let got: Value = client.list(&pods, &params).await.unwrap();
        assert_eq!(
            got["path"],
            "/api/v1/pods?fieldSelector=spec.nodeName%3Dgw1"
        );
        let nodes = resource_path("v1", None, "nodes", None, None);
        let got: Value = client
            .create(&nodes, &json!({"kind": "Node"}))
            .await
            .unwrap();
        assert_eq!(
            (got["method"].as_str(), got["contentType"].as_str()),
            (Some("POST"), Some("application/json"))
        );
        assert_eq!(got["body"], r#"{"kind":"Node"}"#);
        let got: Value = client
            .update(&node, &json!({"kind": "Node"}))
            .await
            .unwrap();
        assert_eq!(got["method"], "PUT");
        let status = resource_path("v1", Some("default"), "pods", Some("web"), Some("status"));
        let got: Value = client
            .patch(
                &status,
                PatchType::StrategicMerge,
                &json!({"status": {"phase": "Running"}}),
            )
            .await
            .unwrap();
        assert_eq!(got["path"], "/api/v1/namespaces/default/pods/web/status");
        assert_eq!(got["contentType"], "application/strategic-merge-patch+json");
        let got: Value = client
            .patch(&node, PatchType::Merge, &json!({}))
            .await
            .unwrap();
        assert_eq!(got["contentType"], "application/merge-patch+json");
        let del = DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some("u-1".into()),
                ..Default::default()
            }),
        };
        let got = client
            .delete(&status.replace("/status", ""), &del)
            .await
            .unwrap();
        assert_eq!(got["method"], "DELETE");
        assert_eq!(
            got["body"],
            r#"{"gracePeriodSeconds":0,"preconditions":{"uid":"u-1"}}"#
        );
        for (code, check) in [
            (403u16, ApiError::is_forbidden as fn(&ApiError) -> bool),
            (404, ApiError::is_not_found),
            (409, ApiError::is_conflict),
            (410, ApiError::is_gone),
            (422, ApiError::is_invalid),
        ] {
            let e = client
                .get::<Value>(&format!("/fail/{code}"))
                .await
                .unwrap_err();
            assert!(check(&e), "{code}: {e:?}");
            let ApiError::Status(st) = &e else {
                panic!("{e:?}")
            };
            assert_eq!(
                (st.code, st.message.as_str()),
                (code, format!("test says {code}").as_str())
            );
            assert!(!e.is_transient());
        }
        assert_eq!(api.accepted.get(), 1, "all requests on one connection");
        let c = client.counters();
        assert_eq!((c.connects, c.reconnects, c.connect_failures), (1, 0, 0));
        assert!(c.bytes_sent > 1000 && c.bytes_received > 1000, "{c:?}");
    });
}

#[test]
fn an_x509_v1_client_certificate_is_accepted_and_its_key_checked() {
    // webpki cannot parse v1 certificates (so this rustls test server would refuse
    // one); Go's API server accepts them: uplink_kube.rs connects with one.
    let s = setup("v1", Key::EcPkcs8);
    let v1 = s.pki.cert_v1(
        "v1node",
        "ca",
        "/CN=system:node:gw1/O=system:nodes",
        Key::RsaPkcs8,
    );
    let kc = s
        .pki
        .kubeconfig("v1.conf", "https://127.0.0.1:1", &s.ca, &v1.0, &v1.1);
    ApiClient::new(&kubeconfig::load(&kc).unwrap(), opts(1000)).unwrap();
    let kc = s
        .pki
        .kubeconfig("v1bad.conf", "https://127.0.0.1:1", &s.ca, &v1.0, &s.node.1);
    let e = ApiClient::new(&kubeconfig::load(&kc).unwrap(), opts(1000))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("v1node.crt with") && e.contains("KeyMismatch"),
        "{e}"
    );
}

#[test]
fn every_key_format_authenticates() {
    for key in [Key::EcPkcs8, Key::EcSec1, Key::RsaPkcs8, Key::RsaPkcs1] {
        let s = setup(&format!("{key:?}"), key);
        run(async {
            let api = s.start(echo());
            let client = s.client(&api.url(), opts(5000));
            let got: Value = client
                .get("/x")
                .await
                .unwrap_or_else(|e| panic!("{key:?}: {e}"));
            assert_eq!(got["path"], "/x");
        });
    }
}

/// The message of a failed request.
async fn failure(client: &ApiClient) -> ApiError {
    client.get::<Value>("/x").await.unwrap_err()
}

#[test]
fn tls_failures_say_what_is_wrong() {
    let s = setup("tls", Key::EcPkcs8);
    s.pki.ca("other");
    let spec = |subject, san, expired| Spec {
        subject,
        san,
        key: Key::EcPkcs8,
        expired,
    };
    let foreign = s.pki.cert(
        "foreign",
        "other",
        &spec("/CN=kube-apiserver", Some("IP:127.0.0.1"), false),
    );
    let wrong_name = s.pki.cert(
        "wrongname",
        "ca",
        &spec("/CN=kube-apiserver", Some("DNS:api.example.com"), false),
    );
    let expired = s.pki.cert(
        "expired",
        "ca",
        &spec("/CN=kube-apiserver", Some("IP:127.0.0.1"), true),
    );
    let stranger = s.pki.cert(
        "stranger",
        "other",
        &spec("/CN=system:node:gw1/O=system:nodes", None, false),
    );
    run(async {
        let cases = [
            (
                &foreign,
                "not signed by the kubeconfig's certificate authority",
            ),
            (&wrong_name, "does not name the host"),
            (&expired, "has expired"),
        ];
        for (cert, want) in cases {
            let api = FakeApi::start(server::tls_config(&cert.0, &cert.1, &s.ca, true), echo());
            let e = failure(&s.client(&api.url(), opts(3000))).await;
            assert!(
                matches!(&e, ApiError::Unavailable(ConnectError::Tls(_))),
                "{e:?}"
            );
            assert!(e.to_string().contains(want), "{e}");
        }
        // The server does not trust the node's certificate.
        let api = s.start(echo());
        let kc = s
            .pki
            .kubeconfig("stranger.conf", &api.url(), &s.ca, &stranger.0, &stranger.1);
        let client = ApiClient::new(&kubeconfig::load(&kc).unwrap(), opts(3000)).unwrap();
        let e = failure(&client).await;
        assert!(
            e.to_string()
                .contains("refused the node's client certificate"),
            "{e}"
        );
        // The connection broke before any answer: that counts as a failed attempt, so
        // the next request waits for the back-off instead of reconnecting at once.
        let (accepted, t0) = (api.accepted.get(), Instant::now());
        let e = failure(&client).await;
        assert!(e.is_transient(), "{e:?}");
        let waited = t0.elapsed();
        assert!(
            waited >= Duration::from_millis(900) || api.accepted.get() == accepted,
            "reconnected at once"
        );
        // No ALPN h2 from the server.
        let api = FakeApi::start(
            server::tls_config(&s.server.0, &s.server.1, &s.ca, false),
            echo(),
        );
        let e = failure(&s.client(&api.url(), opts(3000))).await;
        assert!(
            matches!(
                &e,
                ApiError::Unavailable(ConnectError::NoH2 | ConnectError::Tls(_))
            ),
            "{e:?}"
        );
    });
    // A key that does not belong to the certificate, and a CA file that is no PEM.
    let kc = s.pki.kubeconfig(
        "mismatch.conf",
        "https://127.0.0.1:1",
        &s.ca,
        &s.node.0,
        &s.server.1,
    );
    let e = ApiClient::new(&kubeconfig::load(&kc).unwrap(), opts(1000))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("node.crt with") && e.contains("server.key"),
        "{e}"
    );
    std::fs::write(s.pki.path("bad-ca.crt"), "not a certificate\n").unwrap();
    let kc = s.pki.kubeconfig(
        "badca.conf",
        "https://127.0.0.1:1",
        &s.pki.path("bad-ca.crt"),
        &s.node.0,
        &s.node.1,
    );
    let e = ApiClient::new(&kubeconfig::load(&kc).unwrap(), opts(1000))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("bad-ca.crt") && e.contains("no CERTIFICATE"),
        "{e}"
    );
}

#[test]
fn deadlines_oversized_answers_resets_and_garbage() {
    let s = setup("faults", Key::EcPkcs8);
    run(async {
        let handler: Handler = Rc::new(|req, mut respond| {
            Box::pin(async move {
                match req.uri().path() {
                    "/slow" => std::future::pending().await,
                    "/big" => reply(respond, 200, vec![b' '; 2 << 20]),
                    "/reset" => respond.send_reset(h2::Reason::INTERNAL_ERROR),
                    "/notjson" => reply(respond, 200, "<html>"),
                    "/plain500" => reply(respond, 500, "oops"),
                    _ => reply(respond, 200, "{}"),
                }
            })
        });
        let api = s.start(handler);
        let client = s.client(
            &api.url(),
            ClientOptions {
                max_body: 1 << 20,
                ..opts(300)
            },
        );
        let t0 = Instant::now();
        let e = client.get::<Value>("/slow").await.unwrap_err();
        assert!(
            matches!(e, ApiError::Timeout(_)) && e.is_transient(),
            "{e:?}"
        );
        assert!(t0.elapsed() < Duration::from_secs(2));
        let e = client.get::<Value>("/big").await.unwrap_err();
        assert!(
            matches!(e, ApiError::TooLarge { limit } if limit == 1 << 20),
            "{e:?}"
        );
        let e = client.get::<Value>("/reset").await.unwrap_err();
        assert!(
            matches!(e, ApiError::Unavailable(ConnectError::H2(_))),
            "{e:?}"
        );
        let e = client.get::<Value>("/notjson").await.unwrap_err();
        assert!(matches!(e, ApiError::Decode(_)), "{e:?}");
        let e = client.get::<Value>("/plain500").await.unwrap_err();
        assert!(e.is_transient() && e.to_string().contains("oops"), "{e}");
        // The connection survived all of that.
        let _: Value = client.get("/ok").await.unwrap();
        assert_eq!(api.accepted.get(), 1);

        // A server that answers the TLS handshake with garbage, and one that closes.
        for garbage in [&b"HTTP/1.1 400 Bad Request\r\n\r\n"[..], b""] {
            let listener =
                async_io::Async::<std::net::TcpListener>::bind(([127, 0, 0, 1], 0)).unwrap();
            let url = format!("https://{}", listener.get_ref().local_addr().unwrap());
            let _server = rt::spawn(async move {
                use smol::io::AsyncWriteExt;
                while let Ok((mut tcp, _)) = listener.accept().await {
                    let _ = tcp.write_all(garbage).await;
                }
            });
            let e = failure(&s.client(&url, opts(2000))).await;
            assert!(matches!(e, ApiError::Unavailable(_)), "{e:?}");
        }
    });
}

/// Streams `lines` in awkward pieces (split inside lines), then ends or hangs.
fn watch_server(lines: Vec<String>, end: bool) -> Handler {
    Rc::new(move |_req, mut respond| {
        let lines = lines.clone();
        Box::pin(async move {
            let head = http::Response::builder().status(200).body(()).unwrap();
            let mut stream = respond.send_response(head, false).unwrap();
            let all: String = lines.concat();
            for piece in all.as_bytes().chunks(7) {
                stream
                    .send_data(Bytes::copy_from_slice(piece), false)
                    .unwrap();
                async_io::Timer::after(Duration::from_micros(200)).await;
            }
            if end {
                let _ = stream.send_data(Bytes::new(), true);
            } else {
                std::future::pending::<()>().await;
            }
        })
    })
}

fn event(kind: &str, name: &str, rv: &str) -> String {
    format!(
        "{}\n",
        json!({"type": kind, "object": {"kind": "Pod", "metadata": {"name": name, "resourceVersion": rv}}})
    )
}

#[test]
fn watch_streams_events_bookmarks_and_gone() {
    let s = setup("watch", Key::EcPkcs8);
    run(async {
        let params = ListParams {
            resource_version: Some("5".into()),
            allow_watch_bookmarks: true,
            ..Default::default()
        };
        let lines = vec![
            event("ADDED", "a", "6"),
            "\n".into(),
            event("MODIFIED", "a", "7"),
            event("BOOKMARK", "", "9"),
            event("DELETED", "a", "10"),
        ];
        let api = s.start(watch_server(lines, true));
        let client = s.client(&api.url(), opts(2000));
        let mut w = client.watch("/api/v1/pods", &params).await.unwrap();
        let mut got = Vec::new();
        while let Some(e) = w.next().await.unwrap() {
            got.push((
                e.kind,
                e.object["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ));
        }
        let kinds: Vec<_> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            kinds,
            [
                EventType::Added,
                EventType::Modified,
                EventType::Bookmark,
                EventType::Deleted
            ]
        );
        assert_eq!(w.resource_version(), Some("10"));
        assert!(w.next().await.unwrap().is_none());

        // An ERROR event (410 Gone) ends the stream with the status: relist.
        let gone = format!(
            "{}\n",
            json!({"type": "ERROR", "object": serde_json::from_str::<Value>(&status_body(410, "Expired", "too old resource version: 5 (80)")).unwrap()})
        );
        let api = s.start(watch_server(
            vec![event("ADDED", "a", "6"), gone, event("ADDED", "b", "7")],
            false,
        ));
        let client = s.client(&api.url(), opts(2000));
        let mut w = client.watch("/api/v1/pods", &params).await.unwrap();
        assert_eq!(w.next().await.unwrap().unwrap().kind, EventType::Added);
        let e = w.next().await.unwrap_err();
        assert!(
            e.is_gone() && e.to_string().contains("too old resource version"),
            "{e}"
        );
        assert!(w.next().await.unwrap().is_none());

        // An event larger than max_event is refused; the stream ends.
        let big = event("ADDED", &"x".repeat(10_000), "8");
        let api = s.start(watch_server(vec![big], false));
        let client = s.client(
            &api.url(),
            ClientOptions {
                max_event: 4096,
                ..opts(2000)
            },
        );
        let mut w = client.watch("/api/v1/pods", &params).await.unwrap();
        let e = w.next().await.unwrap_err();
        assert!(matches!(e, ApiError::TooLarge { limit: 4096 }), "{e:?}");

        // A line that is not a watch event.
        let api = s.start(watch_server(vec!["{\"type\":\"ADDED\"}\n".into()], false));
        let mut w = s
            .client(&api.url(), opts(2000))
            .watch("/api/v1/pods", &params)
            .await
            .unwrap();
        assert!(matches!(w.next().await.unwrap_err(), ApiError::Decode(_)));
    });
}

#[test]
fn reconnects_after_the_server_was_away() {
    let s = setup("reconnect", Key::EcPkcs8);
    run(async {
        let api = s.start(echo());
        let client = s.client(&api.url(), opts(500));
        let _: Value = client.get("/a").await.unwrap();
        api.stop();
        // Requests fail (never panic) while the server is away; the back-off spaces
        // the attempts (1 s, then about 2 s).
        let t0 = Instant::now();
        let mut failures = 0;
        while t0.elapsed() < Duration::from_millis(1500) {
            let e = client.get::<Value>("/b").await.unwrap_err();
            assert!(e.is_transient(), "{e:?}");
            failures += 1;
        }
        assert!(failures >= 2);
        let attempts = client.counters().connect_failures;
        assert!((1..=3).contains(&attempts), "{attempts} attempts in 1.5 s");
        api.restart();
        let t0 = Instant::now();
        loop {
            match client.get::<Value>("/c").await {
                Ok(v) => break assert_eq!(v["path"], "/c"),
                Err(e) => assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "never reconnected: {e}"
                ),
            }
            async_io::Timer::after(Duration::from_millis(100)).await;
        }
        let c = client.counters();
        assert_eq!((c.connects, c.reconnects), (2, 1), "{c:?}");
    });
}

/// Answers /busy with 429 and `Retry-After: 1`, as the API server's in-flight limit
/// does, anything else with its path; logs when each request arrived.
fn busy_server(log: Rc<std::cell::RefCell<Vec<(String, Instant)>>>) -> Handler {
    Rc::new(move |req, respond| {
        let log = log.clone();
        Box::pin(async move {
            let path = req.uri().path().to_string();
            log.borrow_mut().push((path.clone(), Instant::now()));
            if path != "/busy" {
                return reply(respond, 200, json!({ "path": path }).to_string());
            }
            let head = http::Response::builder()
                .status(429)
                .header("retry-after", "1")
                .header("content-type", "application/json")
                .body(())
                .unwrap();
            let body = status_body(429, "TooManyRequests", "too many requests, try again later");
            let mut respond = respond;
            if let Ok(mut stream) = respond.send_response(head, false) {
                let _ = stream.send_data(Bytes::from(body), true);
            }
        })
    })
}

#[test]
fn a_429_with_retry_after_holds_the_next_requests_until_then() {
    let s = setup("retry-after", Key::EcPkcs8);
    let log: Rc<std::cell::RefCell<Vec<(String, Instant)>>> = Rc::default();
    run(async {
        let api = s.start(busy_server(log.clone()));
        let client = s.client(&api.url(), opts(5000));
        let e = client.get::<Value>("/busy").await.unwrap_err();
        assert_eq!(e.code(), Some(429), "{e:?}");
        assert!(e.is_transient());
        let told = Instant::now();
        let v: Value = client.get("/after").await.unwrap();
        assert_eq!(v["path"], "/after");
        let waited = told.elapsed();
        assert!(
            waited >= Duration::from_millis(950) && waited < Duration::from_millis(1600),
            "the next request went after {waited:?} (Retry-After: 1, up to 1.5 times)"
        );
        assert_eq!(client.counters().waits, 1);

        // A request whose deadline comes first fails at once and sends nothing.
        let hasty = s.client(&api.url(), opts(300));
        let _ = hasty.get::<Value>("/busy").await.unwrap_err();
        let t = Instant::now();
        let e = hasty.get::<Value>("/hasty").await.unwrap_err();
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
        assert!(
            e.is_transient() && e.to_string().contains("Retry-After"),
            "{e}"
        );
        assert!(!log.borrow().iter().any(|(p, _)| p == "/hasty"));
    });
}

#[test]
fn a_dead_link_is_found_by_ping() {
    let s = setup("ping", Key::EcPkcs8);
    run(async {
        let api = s.start(watch_server(vec![event("ADDED", "a", "6")], false));
        let keepalive = Keepalive {
            idle: Duration::from_millis(200),
            timeout: Duration::from_millis(200),
        };
        let client = s.client(
            &api.url(),
            ClientOptions {
                keepalive,
                ..opts(2000)
            },
        );
        let mut w = client
            .watch("/api/v1/pods", &ListParams::default())
            .await
            .unwrap();
        assert_eq!(w.next().await.unwrap().unwrap().kind, EventType::Added);
        // Idle but healthy: PINGs are answered and the watch stays.
        async_io::Timer::after(Duration::from_millis(700)).await;
        api.frozen.set(true);
        let t0 = Instant::now();
        let e = w.next().await.unwrap_err();
        assert!(matches!(e, ApiError::Unavailable(_)), "{e:?}");
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    });
}

#[test]
fn the_client_stays_on_the_executor_thread_and_async_io_helper() {
    threads::run_child("threads added: ");
}

#[test]
#[ignore = "run as a child process by the_client_stays_on_the_executor_thread_and_async_io_helper"]
fn thread_count_child() {
    assert!(threads::in_child());
    let s = setup("threads", Key::EcPkcs8);
    let before = threads::thread_names();
    run(async {
        let api = s.start(echo());
        let client = s.client(&api.url(), opts(5000));
        let calls: Vec<_> = (0..8)
            .map(|i| {
                let client = client.clone();
                rt::spawn(async move { client.get::<Value>(&format!("/{i}")).await })
            })
            .collect();
        for c in calls {
            c.await.unwrap();
        }
    });
    let after = threads::thread_names();
    let mut added = after.clone();
    for name in &before {
        if let Some(i) = added.iter().position(|n| n == name) {
            added.remove(i);
        }
    }
    println!("threads before: {before:?}, after: {after:?}");
    println!("threads added: {}", added.len());
    assert!(
        added.iter().all(|n| n == "async-io") && added.len() <= 1,
        "{added:?}"
    );
}

#[test]
fn check_config_names_the_identity_and_connects() {
    let s = setup("checkcfg", Key::RsaPkcs1);
    run(async {
        let api = s.start(echo());
        let kc = s
            .pki
            .kubeconfig("node.conf", &api.url(), &s.ca, &s.node.0, &s.node.1);
        let cfg = s.pki.path("config.json");
        let text = json!({"nodeName": "gw1", "apiServer": {"kubeconfig": kc, "nodeLabels": {"site": "a"}}});
        std::fs::write(&cfg, text.to_string()).unwrap();
        let check = |extra: &'static [&'static str]| {
            smol::process::Command::new(env!("CARGO_BIN_EXE_tinylet"))
                .arg("check-config")
                .arg(&cfg)
                .args(extra)
                .output()
        };
        let out = check(&[]).await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let want = format!("apiServer: node \"gw1\", server {} (context \"test\", cluster \"test\", user \"node\"), identity: client certificate CN=system:node:gw1, O=system:nodes, expires ", api.url());
        assert!(stderr.contains(&want), "{stderr}");
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(printed["apiServer"]["nodeLeaseDurationSeconds"], 40);
        assert_eq!(api.accepted.get(), 0, "nothing connected without --connect");
        let out = check(&["--connect"]).await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "apiServer: connected: server (unknown version), Node \"gw1\" registered"
            ),
            "{stderr}"
        );
        // A key file others can read is refused, naming it.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&s.node.1, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = check(&[]).await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{}: holds a secret but is readable by group or others (mode 0644)",
                s.node.1.display()
            )),
            "{stderr}"
        );
    });
}

/// Every log record at every level, to check that secrets never reach the log.
struct Capture(std::sync::Mutex<String>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if let Ok(mut all) = self.0.lock() {
            all.push_str(&format!("{} {}\n", record.level(), record.args()));
        }
    }
    fn flush(&self) {}
}

#[test]
fn a_token_is_sent_as_bearer_and_never_logged() {
    static LOG: Capture = Capture(std::sync::Mutex::new(String::new()));
    let _ = log::set_logger(&LOG);
    log::set_max_level(log::LevelFilter::Trace);
    let s = setup("token", Key::EcPkcs8);
    let token = "s3cr3t-t0ken.value";
    let token_file = s.pki.path("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    run(async {
        let api = s.start(echo());
        let kc_text = format!(
            "apiVersion: v1\nclusters:\n- cluster: {{certificate-authority: {}, server: '{}'}}\n  name: c\n\
             contexts:\n- context: {{cluster: c, user: u}}\n  name: x\ncurrent-context: x\n\
             users:\n- name: u\n  user: {{tokenFile: token}}\n",
            s.ca.display(),
            api.url()
        );
        std::fs::write(s.pki.path("token.conf"), kc_text).unwrap();
        let kc = kubeconfig::load(&s.pki.path("token.conf")).unwrap();
        let client = ApiClient::new(&kc, opts(500)).unwrap();
        let got: Value = client.get("/whoami").await.unwrap();
        assert_eq!(got["authorization"], format!("Bearer {token}"));
        let _ = client.get::<Value>("/fail/403").await;
        api.stop();
        let e = client.get::<Value>("/gone").await.unwrap_err();
        assert!(!e.to_string().contains(token) && !format!("{e:?}").contains(token));
        assert!(!format!("{kc:?}").contains(token));
    });
    let logged = LOG.0.lock().unwrap().clone();
    assert!(
        logged.contains("API server"),
        "the uplink logged nothing: {logged}"
    );
    assert!(!logged.contains(token), "{logged}");
}
