// Over 500 lines with its tests (about 490 of code): the API verbs share one request path.
//! [`ApiClient`]: the Kubernetes API verbs the node needs, as JSON over the one HTTP/2
//! connection: get/list, create (POST), update (PUT), patch (merge and strategic merge,
//! on an object or its `status`), delete (with DeleteOptions) and watch.
//!
//! Every request has a deadline (connecting included); answers are bounded
//! (`max_body`, more is refused with `TooLarge` and the stream cancelled); a failure
//! status comes back as [`ApiError::Status`] with the HTTP code and the `Status`
//! object's reason and message. Only encoding and decoding are generic: the request
//! itself is compiled once. Must run inside [`crate::rt::block_on`].

use super::api_status::status_of;
use super::conn::{Connection, Keepalive};
use super::error::{ApiError, SetupError};
use super::query::ListParams;
use super::watch::WatchStream;
use crate::tls::counters::Snapshot;
use crate::tls::kubeconfig::{Credentials, Kubeconfig};
use async_io::Timer;
use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Method, Request, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::{Duration, Instant};

/// Limits and timings of a client.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Deadline of one request (connecting, sending, the whole answer); for a watch,
    /// until the answer's head.
    pub timeout: Duration,
    /// Largest answer body accepted.
    pub max_body: usize,
    /// Largest watch event (one line) accepted.
    pub max_event: usize,
    /// HTTP/2 pings on an idle connection.
    pub keepalive: Keepalive,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(30),
            max_body: 8 << 20,
            max_event: 2 << 20,
            keepalive: Keepalive::default(),
        }
    }
}

/// How a PATCH body is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 7386 JSON merge patch.
    Merge,
    /// Kubernetes' strategic merge patch (lists merged by key, as kubelet patches status).
    StrategicMerge,
}

impl PatchType {
    fn content_type(self) -> &'static str {
        match self {
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
        }
    }
}

/// `DeleteOptions`: the grace period and a precondition on the uid (so a pod deleted
/// and re-created under the same name is not deleted by mistake).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    /// Seconds the pod gets to stop (0: at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
    /// What the object must still be for the delete to apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Preconditions>,
}

/// `DeleteOptions.preconditions`: the delete applies only to this version of the object.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The object's uid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The object's resourceVersion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// A client of one API server, as one identity. Cheap to clone; `!Send`.
#[derive(Clone)]
pub struct ApiClient {
    conn: Connection,
    /// `Bearer TOKEN` for token auth, marked sensitive (never indexed by HPACK).
    authorization: Option<HeaderValue>,
    user_agent: HeaderValue,
    options: ClientOptions,
}

const JSON: &str = "application/json";
/// Protobuf where the API server has it (built-in kinds), else JSON.
const PROTOBUF_OR_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";
/// A list of objects' metadata only (`ListParams::metadata_only`), and one object's in
/// a watch event: the API server converts (v1.15 and later).
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

impl ApiClient {
    /// A client for a loaded kubeconfig. Nothing is connected until the first request.
    pub fn new(kc: &Kubeconfig, options: ClientOptions) -> Result<ApiClient, SetupError> {
        let tls = crate::tls::config::target(kc)?;
        let authorization = match &kc.credentials {
            Credentials::Token(t) => {
                let mut v =
                    HeaderValue::from_str(&format!("Bearer {}", t.value.0)).map_err(|_| {
                        SetupError::Invalid {
                            path: kc.path.clone(),
                            field: format!("users[{}].user.token", kc.user),
                            message: "not usable in a header".into(),
                        }
                    })?;
                v.set_sensitive(true);
                Some(v)
            }
            Credentials::Certificate { .. } => None,
        };
        let agent = format!(
            "tinylet/{} (linux/{})",
            env!("CARGO_PKG_VERSION"),
            crate::agent::host::go_arch()
        );
        Ok(ApiClient {
            conn: Connection::new(kc.server.clone(), tls, options.keepalive),
            authorization,
            user_agent: HeaderValue::from_str(&agent)
                .unwrap_or(HeaderValue::from_static("tinylet")),
            options,
        })
    }

    /// Bytes sent and received, connections made.
    pub fn counters(&self) -> Snapshot {
        self.conn.counters().snapshot()
    }

    /// The counters themselves, for a reader that takes its own snapshots (`/metrics`).
    pub fn shared_counters(&self) -> std::rc::Rc<crate::tls::counters::Counters> {
        self.conn.counters().clone()
    }

    /// The options the client was made with.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// The API server's host (a name or an IP address) and port, from the kubeconfig.
    pub fn server_host_port(&self) -> (String, u16) {
        let s = self.conn.server();
        (s.host.clone(), s.port)
    }

    /// Waits until the connection is up (making it if needed, within the request
    /// deadline); sends nothing. For a request whose body says when it was made (a
    /// lease renewal): made after this, it is not stale from waiting for the link.
    pub async fn connected(&self) -> Result<(), ApiError> {
        let deadline = Instant::now() + self.options.timeout;
        self.with_deadline(async { self.conn.sender(deadline).await.map(|_| ()) })
            .await
    }

    /// GET an object (`path` from [`super::query::resource_path`]).
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ApiError> {
        decode(self.send(Method::GET, path.to_string(), None).await?)
    }

    /// GET a collection.
    pub async fn list<T: DeserializeOwned>(
        &self,
        path: &str,
        params: &ListParams,
    ) -> Result<T, ApiError> {
        let accept = if params.metadata_only {
            METADATA_LIST
        } else {
            JSON
        };
        let uri = format!("{path}{}", params.query(false));
        decode(self.send_accepting(accept, Method::GET, uri, None).await?)
    }

    /// POST a new object to its collection's path.
    pub async fn create<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ApiError> {
        decode(
            self.send(Method::POST, path.to_string(), Some((JSON, encode(body)?)))
                .await?,
        )
    }

    /// PUT a whole object (its `metadata.resourceVersion` makes it conditional).
    pub async fn update<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ApiError> {
        decode(
            self.send(Method::PUT, path.to_string(), Some((JSON, encode(body)?)))
                .await?,
        )
    }

    /// PATCH an object, or its status with a `/status` path.
    pub async fn patch<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        kind: PatchType,
        body: &B,
    ) -> Result<T, ApiError> {
        decode(
            self.send(
                Method::PATCH,
                path.to_string(),
                Some((kind.content_type(), encode(body)?)),
            )
            .await?,
        )
    }

    /// PATCH when only the outcome matters: the answer (the whole object) is asked for in
    /// protobuf, about half the bytes of JSON, and dropped unread; a failure is decoded
    /// as usual. For the node's frequent writes (lease renewals, node status).
    pub async fn patch_ack<B: Serialize>(
        &self,
        path: &str,
        kind: PatchType,
        body: &B,
    ) -> Result<(), ApiError> {
        let body = Some((kind.content_type(), encode(body)?));
        self.send_accepting(PROTOBUF_OR_JSON, Method::PATCH, path.to_string(), body)
            .await
            .map(|_| ())
    }

    /// DELETE an object. The answer (the object, or a `Status`) is returned undecoded.
    pub async fn delete(
        &self,
        path: &str,
        options: &DeleteOptions,
    ) -> Result<serde_json::Value, ApiError> {
        decode(
            self.send(
                Method::DELETE,
                path.to_string(),
                Some((JSON, encode(options)?)),
            )
            .await?,
        )
    }

    /// Starts a watch of a collection: the stream yields events as they come (see
    /// [`WatchStream`]). The request's deadline covers only the answer's head.
    pub async fn watch(&self, path: &str, params: &ListParams) -> Result<WatchStream, ApiError> {
        let uri = format!("{path}{}", params.query(true));
        let accept = if params.metadata_only { METADATA } else { JSON };
        let response = self
            .with_deadline(self.start(accept, Method::GET, uri, None))
            .await?;
        let (head, body) = response.0.into_parts();
        if !head.status.is_success() {
            let body = self
                .with_deadline(read_body(&self.conn, body, self.options.max_body))
                .await?;
            return Err(failure(head.status, &body));
        }
        Ok(WatchStream::new(
            body,
            self.options.max_event,
            self.conn.clone(),
            response.1,
        ))
    }

    /// One request with its whole answer, within the deadline; a failure status is an
    /// error.
    async fn send(
        &self,
        method: Method,
        uri: String,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Bytes, ApiError> {
        self.send_accepting(JSON, method, uri, body).await
    }

    /// [`Self::send`] with the answer in the media type `accept`.
    async fn send_accepting(
        &self,
        accept: &'static str,
        method: Method,
        uri: String,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Bytes, ApiError> {
        self.with_deadline(async {
            let (response, generation) = self.start(accept, method, uri, body).await?;
            let (head, body) = response.into_parts();
            let bytes = read_body(&self.conn, body, self.options.max_body)
                .await
                .inspect_err(|e| {
                    if matches!(e, ApiError::Unavailable(_)) {
                        self.conn.broken(generation);
                    }
                })?;
            if head.status.is_success() {
                Ok(bytes)
            } else {
                Err(failure(head.status, &bytes))
            }
        })
        .await
    }

    async fn with_deadline<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        let t = self.options.timeout;
        smol::future::or(fut, async {
            Timer::after(t).await;
            Err(ApiError::Timeout(t))
        })
        .await
    }

    /// Sends the request and waits for the answer's head. A connection found dead
    /// before the request left is replaced once, transparently.
    async fn start(
        &self,
        accept: &'static str,
        method: Method,
        uri: String,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<(http::Response<h2::RecvStream>, u64), ApiError> {
        let deadline = Instant::now() + self.options.timeout;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (sender, generation) = self.conn.sender(deadline).await?;
            let head = self.head(accept, &method, &uri, body.as_ref().map(|b| b.0))?;
            let sent = async {
                let mut sender = sender.ready().await?;
                let (response, mut stream) = sender.send_request(head, body.is_none())?;
                self.conn.counters().request();
                if let Some((_, data)) = &body {
                    stream.send_data(data.clone(), true)?;
                }
                Ok::<_, h2::Error>(response)
            };
            let response = match sent.await {
                Ok(response) => response,
                Err(e) => {
                    self.conn.broken(generation);
                    if attempt >= 2 {
                        return Err(ApiError::Unavailable(self.conn.h2_error(e)));
                    }
                    continue;
                }
            };
            return match response.await {
                Ok(r) => {
                    self.conn.answered(generation);
                    self.conn.told(&r);
                    Ok((r, generation))
                }
                Err(e) => {
                    if !e.is_reset() {
                        self.conn.broken(generation);
                    }
                    Err(ApiError::Unavailable(self.conn.h2_error(e)))
                }
            };
        }
    }

    fn head(
        &self,
        accept: &'static str,
        method: &Method,
        uri: &str,
        content_type: Option<&'static str>,
    ) -> Result<Request<()>, ApiError> {
        let server = self.conn.server();
        let full = format!("https://{}{}{uri}", server.authority(), server.prefix);
        let mut req = Request::builder()
            .method(method.clone())
            .uri(full)
            .header(http::header::ACCEPT, accept)
            .header(http::header::USER_AGENT, self.user_agent.clone());
        if let Some(ct) = content_type {
            req = req.header(http::header::CONTENT_TYPE, ct);
        }
        if let Some(auth) = &self.authorization {
            req = req.header(http::header::AUTHORIZATION, auth.clone());
        }
        req.body(())
            .map_err(|e| ApiError::Request(format!("{method} {uri}: {e}")))
    }
}

/// Reads a whole answer body, at most `limit` bytes; flow-control window is given back
/// as data is taken, so large answers keep flowing.
pub(super) async fn read_body(
    conn: &Connection,
    mut body: h2::RecvStream,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let mut out = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| ApiError::Unavailable(conn.h2_error(e)))?;
        let _ = body.flow_control().release_capacity(chunk.len());
        if out.len() + chunk.len() > limit {
            return Err(ApiError::TooLarge { limit });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

/// The error for a failure answer: the `Status` object's reason and message when the
/// body is one, else the start of the body.
pub(super) fn failure(http: StatusCode, body: &[u8]) -> ApiError {
    ApiError::Status(status_of(http.as_u16(), body))
}

fn encode<B: Serialize>(body: &B) -> Result<Bytes, ApiError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|e| ApiError::Request(format!("encoding the body: {e}")))
}

fn decode<T: DeserializeOwned>(bytes: Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(&bytes).map_err(ApiError::Decode)
}
