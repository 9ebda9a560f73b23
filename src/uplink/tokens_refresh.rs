//! One service-account token kept current: a TokenRequest
//! (`POST .../serviceaccounts/SA/token`, audiences, expirationSeconds, bound to the pod
//! by name and uid: the Node authorizer and NodeRestriction allow a node exactly that),
//! held in memory ([`crate::agent::tokens::Tokens`]), and asked again by kubelet's rule: once
//! the token is older than 80 % of its life or than 24 h, minus up to 10 s of jitter.
//!
//! The schedule is kept on the monotonic clock from the moment the token arrived, with
//! the lifetime the API server granted (`spec.expirationSeconds` of its answer), so
//! neither the API server's clock (skew) nor the device's (a gateway without RTC boots
//! in 1970, then NTP jumps it) matters.
//!
//! A new pod waits for its first token a few seconds at most ([`HOLD`]): a pod started
//! with its cluster up starts with its token, one started without an uplink is not
//! kept from running. A failed request keeps the last token (the pod runs on with it)
//! and is tried again: with the uplink's 1-30 s back-off while the API server is away,
//! else (refused, no such service account, a token over the size limit) 1 s doubling
//! to 5 min, logged once at warn until a token is issued again.

use super::agent::Uplink;
use super::backoff;
use super::{resource_path, ApiError};
use crate::agent::tokens::{Held, TokenWant};
use crate::kuberuntime::projected::MAX_TOKEN;
use async_io::Timer;
use serde_json::{json, Value};
use smol::future;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How long a new pod waits for its first token before it starts without one.
pub const HOLD: Duration = Duration::from_secs(3);
/// A token is asked again once it is this old, whatever its lifetime (kubelet's maxTTL).
const MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// Up to this much earlier, at random (kubelet's maxJitter).
const MAX_JITTER_MS: u32 = 10_000;
/// Never asked again sooner than this after it was issued (a server answering with a
/// lifetime of 0 must not make a request loop).
const MIN_REFRESH: Duration = Duration::from_secs(60);
/// Retries of a refused request: 1 s doubling up to this.
const REFUSED_MAX: Duration = Duration::from_secs(300);

/// Keeps `want`'s token current until the task is dropped (its pod is gone).
pub async fn run(up: Rc<Uplink>, want: TokenWant) {
    // A refusal during the hold, said only when the hold is over (the Node authorizer
    // may not have seen a new pod yet: the first request is often refused).
    let refusal = RefCell::new(None);
    let hold_ends = Instant::now() + HOLD;
    let hold = async {
        Timer::at(hold_ends).await;
        let now = refusal
            .borrow_mut()
            .take()
            .map_or(Held::Away, Held::Refused);
        up.ctx.tokens.hold_over(&want.key(), now);
    };
    future::zip(hold, keep_current(&up, &want, &refusal, hold_ends)).await;
}

/// The request loop of [`run`].
async fn keep_current(
    up: &Uplink,
    want: &TokenWant,
    refusal: &RefCell<Option<String>>,
    hold_ends: Instant,
) {
    let (tokens, key) = (&up.ctx.tokens, want.key());
    let (mut failures, mut warned) = (0u32, false);
    loop {
        let wait = match request(up, want).await {
            Ok(issued) => {
                if failures > 0 || warned {
                    log::info!(
                        "uplink: {want}: issued again, valid {}s",
                        issued.ttl.as_secs()
                    );
                } else {
                    log::debug!("uplink: {want}: issued, valid {}s", issued.ttl.as_secs());
                }
                (failures, warned) = (0, false);
                tokens.set(&key, Held::Issued(issued.token));
                refresh_in(issued.ttl, jitter())
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                let wait = retry_delay(failures, e.is_transient());
                if e.is_transient() {
                    log::debug!("uplink: {want}: {e}; again in {wait:?}");
                    tokens.set(&key, Held::Away);
                } else {
                    if !std::mem::replace(&mut warned, true) {
                        log::warn!("uplink: {want}: {e}; trying again with back-off");
                    }
                    let msg = format!("the cluster refused a {want}: {e}");
                    if Instant::now() < hold_ends {
                        *refusal.borrow_mut() = Some(msg);
                    } else {
                        tokens.set(&key, Held::Refused(msg));
                    }
                }
                wait
            }
        };
        Timer::after(wait).await;
    }
}

/// A token the API server issued.
struct Issued {
    token: Vec<u8>,
    /// Its lifetime as granted (`spec.expirationSeconds` of the answer).
    ttl: Duration,
}

/// One TokenRequest for `want`.
async fn request(up: &Uplink, want: &TokenWant) -> Result<Issued, ApiError> {
    let path = resource_path(
        "v1",
        Some(&want.namespace),
        "serviceaccounts",
        Some(&want.service_account),
        Some("token"),
    );
    let answer: Value = up.client.create(&path, &body(want)).await?;
    issued(&answer, want.expiration_seconds)
}

/// The TokenRequest of `want` (kubelet's: no audiences means the API server's own).
fn body(want: &TokenWant) -> Value {
    let mut spec = json!({
        "expirationSeconds": want.expiration_seconds,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": want.pod, "uid": want.uid},
    });
    if !want.audience.is_empty() {
        spec["audiences"] = json!([want.audience]);
    }
    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
}

/// The token in a TokenRequest answer (read through `Value`: a typed decoding error
/// could quote the token), at most [`MAX_TOKEN`] bytes.
fn issued(answer: &Value, asked: i64) -> Result<Issued, ApiError> {
    let bad = |what: String| ApiError::Protocol(format!("TokenRequest answer: {what}"));
    let token = answer["status"]["token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| bad("no status.token".into()))?;
    if token.len() > MAX_TOKEN {
        let len = token.len();
        return Err(bad(format!(
            "the token is {len} bytes, more than the {} KiB a token may have here; refused",
            MAX_TOKEN >> 10
        )));
    }
    let secs = answer["spec"]["expirationSeconds"]
        .as_i64()
        .unwrap_or(asked);
    Ok(Issued {
        token: token.as_bytes().to_vec(),
        ttl: Duration::from_secs(secs.max(0) as u64),
    })
}

/// How long after its issue a token of lifetime `ttl` is asked again: kubelet's rule
/// (20 % of its life before it expires, in whole seconds, or at 24 h), less `jitter`,
/// at least [`MIN_REFRESH`].
pub fn refresh_in(ttl: Duration, jitter: Duration) -> Duration {
    let secs = ttl.as_secs();
    let age = Duration::from_secs(secs - secs * 20 / 100);
    age.min(MAX_AGE).saturating_sub(jitter).max(MIN_REFRESH)
}

/// A random 0-10 s.
fn jitter() -> Duration {
    Duration::from_millis(u64::from(backoff::random() % MAX_JITTER_MS))
}

/// The wait after `failures` (>= 1) failed requests in a row: the uplink's back-off
/// while it is away, else 1 s doubling to [`REFUSED_MAX`] (the first refusal is often
/// the Node authorizer not having seen the new pod yet).
fn retry_delay(failures: u32, transient: bool) -> Duration {
    if transient {
        return backoff::delay(failures, backoff::random());
    }
    Duration::from_secs(1)
        .saturating_mul(1 << failures.saturating_sub(1).min(9))
        .min(REFUSED_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn refreshed_at_80_percent_of_its_life_or_after_a_day() {
        let none = Duration::ZERO;
        let secs = |s: u64| Duration::from_secs(s);
        // The API server's shortest token (600 s): again after 480 s, 10 s jitter at most.
        assert_eq!(refresh_in(secs(600), none), secs(480));
        assert_eq!(refresh_in(secs(600), secs(10)), secs(470));
        // kube-api-access's 3607 s: kubelet's whole seconds (20 % is 721 s).
        assert_eq!(refresh_in(secs(3607), none), secs(2886));
        assert_eq!(refresh_in(HOUR, none), HOUR * 4 / 5);
        // A week-long token, or an extended one: after 24 h.
        assert_eq!(refresh_in(HOUR * 24 * 7, none), MAX_AGE);
        assert_eq!(refresh_in(HOUR * 24 * 365, secs(10)), MAX_AGE - secs(10));
        // Nonsense lifetimes never make a loop of requests.
        assert_eq!(refresh_in(none, secs(10)), MIN_REFRESH);
        assert_eq!(refresh_in(secs(1), none), MIN_REFRESH);
        // The jitter is 0-10 s.
        assert!((0..100).all(|_| jitter() < secs(10)));
    }

    #[test]
    fn the_request_binds_the_token_to_the_pod() {
        let mut want = TokenWant {
            namespace: "ns".into(),
            pod: "p".into(),
            uid: "u-1".into(),
            service_account: "default".into(),
            audience: String::new(),
            expiration_seconds: 3607,
        };
        let b = body(&want);
        assert_eq!(b["kind"], "TokenRequest");
        assert_eq!(b["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(b["spec"]["expirationSeconds"], 3607);
        assert_eq!(
            b["spec"]["boundObjectRef"],
            json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1"})
        );
        assert!(b["spec"].get("audiences").is_none(), "the API server's own");
        want.audience = "vault".into();
        assert_eq!(body(&want)["spec"]["audiences"], json!(["vault"]));
        let path = resource_path(
            "v1",
            Some("ns"),
            "serviceaccounts",
            Some("default"),
            Some("token"),
        );
        assert_eq!(path, "/api/v1/namespaces/ns/serviceaccounts/default/token");
    }

    #[test]
    fn answers_are_read_bounded_and_without_quoting_them() {
        let ok = json!({"spec": {"expirationSeconds": 3607},
                        "status": {"token": "eyJ.x.y", "expirationTimestamp": "2030-01-01T00:00:00Z"}});
        let t = issued(&ok, 600).unwrap();
        assert_eq!(
            (t.token.as_slice(), t.ttl.as_secs()),
            (&b"eyJ.x.y"[..], 3607)
        );
        let asked = json!({"status": {"token": "eyJ.x.y"}});
        assert_eq!(issued(&asked, 600).unwrap().ttl.as_secs(), 600);
        let big = "eyJsecret".repeat(MAX_TOKEN / 8);
        let e = issued(&json!({"status": {"token": big}}), 600)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("more than the 64 KiB") && !e.contains("secret"),
            "{e}"
        );
        assert!(
            !e.is_empty() && !ApiError::Protocol(e).is_transient(),
            "retried slowly"
        );
        assert!(issued(&json!({"status": {"token": 5}}), 600).is_err());
        assert!(issued(&json!({"status": {}}), 600).is_err());
    }

    #[test]
    fn refusals_are_retried_sooner_at_first_then_slowly() {
        assert_eq!(retry_delay(1, false), Duration::from_secs(1));
        assert_eq!(retry_delay(3, false), Duration::from_secs(4));
        assert_eq!(retry_delay(u32::MAX, false), REFUSED_MAX);
        assert!(retry_delay(9, true) <= Duration::from_secs(30));
    }
}
