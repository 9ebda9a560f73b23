//! Making sure a container's image is there, with kubelet's pull policy and our offline
//! rule: a gateway must restart its pods with no uplink, so when a pull that the policy
//! asks for (`Always`, `:latest`) fails because the registry cannot be reached and a
//! local copy exists, the local copy runs and the pod's status says so. A registry that
//! answers "no" (unauthorized, not found) fails the pull as under kubelet: the local
//! copy never stands in for credentials the pod does not have.
//!
//! With a local copy a pull may keep the container waiting only
//! `imagePullFallbackTimeout` (a registry that hangs, as behind an uplink that drops
//! packets, would otherwise hold it for the whole `imagePullTimeout`), and not at all
//! when its registry host timed out lately ([`super::silent_registries`]). The pod's
//! worker then pulls in the background with the full timeout
//! ([`super::image_refresh`]) and replaces the container when the registry's image
//! differs from the one it runs.

use super::backoff::Backoff;
use super::context::Context;
use crate::config::format_duration;
use crate::cri::{pb, Code, CriError};
use crate::gc::image_ref::registry_host;
use crate::kuberuntime::status::Waiting;
use crate::model::container::PullPolicy;
use crate::model::defaults::pull_policy_for;
use crate::model::reason::EventReason;
use crate::model::secret::pull_credentials;
use crate::model::{Container, Pod, Reason, Secret};
use std::fmt;
use std::time::{Duration, Instant};

/// The image to run.
pub struct Ensured {
    /// What CreateContainer gets (the image id).
    pub image_ref: String,
    /// Set when a wanted pull failed and the local copy is used: the pull error.
    pub offline: Option<String>,
}

/// A failed pull of an image: the runtime's error, with its gRPC code (its Display
/// names the image, for logs and the pod's status).
#[derive(Debug, Clone)]
pub struct PullError {
    /// The image reference pulled.
    pub image: String,
    /// What the runtime said (of the last credential tried).
    pub cause: CriError,
}

impl PullError {
    /// No answer within the deadline: the registry (or the way to it) hangs.
    pub fn timed_out(&self) -> bool {
        self.cause.is_deadline_exceeded()
    }

    /// The registry answered and said no: the credentials do not open the image (401,
    /// 403, denied) or it has no such image (404, manifest unknown). A local copy must
    /// not stand in then: a pod without the credentials would run a private image
    /// another pod pulled, and kubelet fails such a pull (`ErrImagePull`). Only a
    /// registry that cannot be reached leaves the local copy to run.
    pub fn refused(&self) -> bool {
        is_refusal(&self.cause.to_string())
    }
}

/// Whether a runtime's pull error text says the registry refused (containerd's and
/// CRI-O's wordings of 401, 403 and 404 answers).
fn is_refusal(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "401 unauthorized",
        "403 forbidden",
        "404 not found",
        "unauthorized",
        "authentication required",
        "access to the resource is denied",
        "denied:",
        ": not found",
        "manifest unknown",
        "name unknown",
    ]
    .iter()
    .any(|w| t.contains(w))
}

/// The back-off key that says the last failed pull of `key` was a refusal (see
/// [`PullError::refused`]): while it runs, a local copy does not stand in either.
fn refused_key(key: &str) -> String {
    format!("refused:{key}")
}

impl fmt::Display for PullError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "failed to pull image \"{}\": {}", self.image, self.cause)
    }
}

impl std::error::Error for PullError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}

fn waiting(reason: Reason, message: String) -> Waiting {
    Waiting { reason, message }
}

/// The pull policy that applies to `c` (explicit, else kubelet's default for its image).
pub fn policy(c: &Container) -> PullPolicy {
    c.image_pull_policy
        .unwrap_or_else(|| pull_policy_for(&c.image))
}

/// The back-off key of pulls of `image` for the pod `uid`.
pub fn backoff_key(uid: &str, image: &str) -> String {
    format!("{uid}/{image}")
}

/// Notes in the shared registry marks what a pull from `image`'s host showed.
pub fn note_outcome<T>(ctx: &Context, image: &str, result: &Result<T, PullError>) {
    let host = registry_host(image);
    match result {
        Err(e) if e.timed_out() => ctx.silent_registries.timed_out(host, Instant::now()),
        _ => ctx.silent_registries.answered(host),
    }
}

/// Ensures `c`'s image per its pull policy. Pull failures back off per image (kubelet's
/// ErrImagePull, then ImagePullBackOff while the back-off lasts). With a local copy the
/// pull may keep the container waiting only `imagePullFallbackTimeout`, and not at all
/// while it backs off or its registry host is silent: the local copy runs then, and
/// after a timeout without a back-off (the worker pulls again in the background at
/// once). One call of [`pull`] serves both cases.
pub async fn ensure(
    ctx: &Context,
    pod: &Pod,
    c: &Container,
    backoff: &mut Backoff,
) -> Result<Ensured, Waiting> {
    let image = c.image.as_str();
    invalid_name(image)?;
    let present = match ctx.cri.image.image_status(image).await {
        Ok(p) => p,
        Err(e) => {
            return Err(waiting(
                Reason::ErrImageInspect,
                format!("failed to inspect image \"{image}\": {e}"),
            ))
        }
    };
    let local = match (policy(c), present.map(|i| i.id)) {
        (PullPolicy::Never, Some(id)) | (PullPolicy::IfNotPresent, Some(id)) => {
            ctx.event(pod, &c.name, false, EventReason::Pulled, || {
                format!("Container image \"{image}\" already present on machine")
            });
            return Ok(Ensured {
                image_ref: id,
                offline: None,
            });
        }
        (PullPolicy::Never, None) => {
            return Err(waiting(
                Reason::ErrImageNeverPull,
                format!("Container image \"{image}\" is not present with pull policy of Never"),
            ))
        }
        (_, local) => local,
    };
    let offline = |image_ref: String, message: String| Ensured {
        image_ref,
        offline: Some(message),
    };
    let key = backoff_key(&pod.metadata.uid, image);
    let now = Instant::now();
    // After a refusal the local copy is no stand-in until a pull succeeds.
    let local = local.filter(|_| backoff.until(&refused_key(&key), now).is_none());
    if let Some(why) = not_now(ctx, image, local.is_some(), backoff.until(&key, now), now) {
        return match local {
            Some(id) => Ok(offline(id, why)),
            None => {
                ctx.event(pod, &c.name, false, EventReason::BackOff, || why.clone());
                Err(waiting(Reason::ImagePullBackOff, why))
            }
        };
    }
    let timeout = match local {
        Some(_) => ctx.cfg.image_pull_fallback_timeout,
        None => ctx.cfg.image_pull_timeout,
    };
    ctx.event(pod, &c.name, false, EventReason::Pulling, || {
        format!("Pulling image \"{image}\"")
    });
    let result = pull(ctx, pod, image, timeout).await;
    note_outcome(ctx, image, &result);
    if let Err(e) = &result {
        ctx.event(pod, &c.name, true, EventReason::Failed, || {
            format!("Failed to pull image \"{image}\": {}", e.cause)
        });
    }
    match (result, local) {
        (Ok(image_ref), _) => {
            ctx.event(pod, &c.name, false, EventReason::Pulled, || {
                format!("Successfully pulled image \"{image}\"")
            });
            backoff.reset(&key);
            backoff.reset(&refused_key(&key));
            Ok(Ensured {
                image_ref,
                offline: None,
            })
        }
        (Err(e), _) if e.refused() => {
            backoff.fail(&key, now);
            backoff.fail(&refused_key(&key), now);
            Err(waiting(Reason::ErrImagePull, e.to_string()))
        }
        (Err(e), Some(id)) => {
            if !e.timed_out() {
                backoff.fail(&key, now);
            }
            log::warn!(
                "pod {}/{}: {}; running the local copy",
                pod.metadata.namespace,
                pod.metadata.name,
                e
            );
            ctx.event(pod, &c.name, true, EventReason::OfflineImage, || {
                format!("Running the local copy of image \"{image}\": {e}")
            });
            Ok(offline(id, e.to_string()))
        }
        (Err(e), None) => {
            backoff.fail(&key, now);
            Err(waiting(Reason::ErrImagePull, e.to_string()))
        }
    }
}

/// Why a wanted pull of `image` is not made now: its back-off runs (`until`), or, with
/// a `local` copy, no wait is allowed or its registry host is silent.
fn not_now(
    ctx: &Context,
    image: &str,
    local: bool,
    until: Option<Instant>,
    now: Instant,
) -> Option<String> {
    if until.is_some() {
        return Some(format!("Back-off pulling image \"{image}\""));
    }
    if !local {
        return None;
    }
    if ctx.cfg.image_pull_fallback_timeout.is_zero() {
        return Some(format!(
            "pulling image \"{image}\" in the background (imagePullFallbackTimeout 0)"
        ));
    }
    let host = registry_host(image);
    ctx.silent_registries.is_silent(host, now).then(|| {
        format!(
            "registry {host} did not answer lately; pulling image \"{image}\" in the background"
        )
    })
}

/// kubelet's `InvalidImageName`: a reference outside the docker grammar is never
/// inspected or pulled. Validation refuses such images at apply; this holds for
/// anything that got past it.
fn invalid_name(image: &str) -> Result<(), Waiting> {
    crate::model::image_name::check(image).map_err(|why| {
        waiting(
            Reason::InvalidImageName,
            format!("Failed to apply default image tag {image:?}: couldn't parse image name {image:?}: invalid reference format: {why}"),
        )
    })
}

/// Pulls `image` within `timeout`, trying each matching credential of the pod's
/// imagePullSecrets in turn (as kubelet), then anonymously when there is none. A
/// timeout ends the tries: other credentials would meet the same silent registry.
pub async fn pull(
    ctx: &Context,
    pod: &Pod,
    image: &str,
    timeout: Duration,
) -> Result<String, PullError> {
    let secrets: Vec<Secret> = pod
        .spec
        .image_pull_secrets
        .iter()
        .filter_map(|r| crate::kuberuntime::env::Objects::secret(ctx, pod, &r.name))
        .collect();
    let refs: Vec<&Secret> = secrets.iter().collect();
    let creds = pull_credentials(&refs, image);
    let attempts: Vec<Option<pb::AuthConfig>> = if creds.is_empty() {
        vec![None]
    } else {
        creds
            .into_iter()
            .map(|a| {
                Some(pb::AuthConfig {
                    username: a.username,
                    password: a.password,
                    auth: a.auth,
                    identity_token: a.identity_token,
                    ..Default::default()
                })
            })
            .collect()
    };
    let mut last = None;
    for auth in attempts {
        log::info!(
            "pod {}/{}: pulling image {image} (within {})",
            pod.metadata.namespace,
            pod.metadata.name,
            format_duration(timeout)
        );
        match ctx
            .cri
            .image
            .pull_image_within(image, auth, None, timeout)
            .await
        {
            Ok(r) => return Ok(r),
            Err(e) => {
                let timed_out = e.is_deadline_exceeded();
                last = Some(e);
                if timed_out {
                    break;
                }
            }
        }
    }
    // There is always one attempt at least (anonymous).
    let cause = last.unwrap_or_else(|| CriError::new(Code::Unknown, "", "no pull attempted"));
    Err(PullError {
        image: image.to_string(),
        cause,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_told_from_an_unreachable_registry() {
        for refused in [
            "rpc error: code = Unknown desc = failed to pull and unpack image \"localhost:25001/a:3.7\": failed to resolve reference \"localhost:25001/a:3.7\": pulling from host localhost:25001 failed with status code [manifests 3.7]: 401 Unauthorized",
            "failed to resolve reference \"localhost:25000/nope:1\": localhost:25000/nope:1: not found",
            "reading manifest 1 in r.io/x: manifest unknown: manifest unknown",
            "denied: requested access to the resource is denied",
        ] {
            assert!(is_refusal(refused), "{refused}");
        }
        for unreachable in [
            "failed to do request: Head \"https://r.io/v2/x/manifests/1\": dial tcp 10.0.0.1:443: connect: connection refused",
            "dial tcp: lookup r.io: no such host",
            "context deadline exceeded",
            "dial tcp 10.0.0.1:443: i/o timeout",
        ] {
            assert!(!is_refusal(unreachable), "{unreachable}");
        }
    }

    #[test]
    fn invalid_names_wait_without_a_pull() {
        let w = invalid_name("localhost/busybox v1").unwrap_err();
        assert_eq!(w.reason, "InvalidImageName");
        assert!(w.message.starts_with("Failed to apply default image tag \"localhost/busybox v1\": couldn't parse image name"), "{}", w.message);
        assert!(invalid_name("Busybox").is_err());
        assert!(invalid_name("a\nb").is_err());
        assert!(invalid_name("127.0.0.1:5000/a/b:v1").is_ok());
    }
}
