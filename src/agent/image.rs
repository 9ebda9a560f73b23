//! Making sure a container's image is there, with kubelet's pull policy and our offline
//! rule: a gateway must restart its pods with no uplink, so when a pull that the policy
//! asks for (`Always`, `:latest`) fails and a local copy exists, the local copy runs and
//! the pod's status says so.
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
use crate::cri::pb;
use crate::gc::image_ref::registry_host;
use crate::kuberuntime::status::Waiting;
use crate::model::container::PullPolicy;
use crate::model::defaults::pull_policy_for;
use crate::model::secret::pull_credentials;
use crate::model::{Container, Pod, Secret};
use std::time::{Duration, Instant};

/// The image to run.
pub struct Ensured {
    /// What CreateContainer gets (the image id).
    pub image_ref: String,
    /// Set when a wanted pull failed and the local copy is used: the pull error.
    pub offline: Option<String>,
}

/// A failed pull.
#[derive(Debug, Clone)]
pub struct PullError {
    /// What failed, naming the image (for logs and the pod's status).
    pub message: String,
    /// No answer within the deadline: the registry (or the way to it) hangs.
    pub timed_out: bool,
}

fn waiting(reason: &str, message: String) -> Waiting {
    Waiting {
        reason: reason.into(),
        message,
    }
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
        Err(e) if e.timed_out => ctx.silent_registries.timed_out(host, Instant::now()),
        _ => ctx.silent_registries.answered(host),
    }
}

/// Ensures `c`'s image per its pull policy. Pull failures back off per image (kubelet's
/// ErrImagePull, then ImagePullBackOff while the back-off lasts).
pub async fn ensure(
    ctx: &Context,
    pod: &Pod,
    c: &Container,
    backoff: &mut Backoff,
) -> Result<Ensured, Waiting> {
    let image = c.image.as_str();
    let present = match ctx.cri.image.image_status(image).await {
        Ok(p) => p,
        Err(e) => {
            return Err(waiting(
                "ErrImageInspect",
                format!("failed to inspect image \"{image}\": {e}"),
            ))
        }
    };
    let local = present.map(|i| i.id);
    match (policy(c), local) {
        (PullPolicy::Never, Some(id)) | (PullPolicy::IfNotPresent, Some(id)) => Ok(Ensured {
            image_ref: id,
            offline: None,
        }),
        (PullPolicy::Never, None) => Err(waiting(
            "ErrImageNeverPull",
            format!("Container image \"{image}\" is not present with pull policy of Never"),
        )),
        (_, Some(id)) => Ok(pull_or_local(ctx, pod, image, id, backoff).await),
        (_, None) => pull_or_wait(ctx, pod, image, backoff).await,
    }
}

/// A wanted pull of an image that exists locally: the pulled image, or the local copy
/// when the pull fails, is backing off, or does not finish within
/// `imagePullFallbackTimeout` (then without a back-off: the worker pulls again in the
/// background at once).
async fn pull_or_local(
    ctx: &Context,
    pod: &Pod,
    image: &str,
    local: String,
    backoff: &mut Backoff,
) -> Ensured {
    let offline = |msg: String| Ensured {
        image_ref: local.clone(),
        offline: Some(msg),
    };
    let key = backoff_key(&pod.metadata.uid, image);
    let now = Instant::now();
    if backoff.until(&key, now).is_some() {
        return offline(format!("back-off pulling image \"{image}\""));
    }
    let host = registry_host(image);
    let wait = ctx.cfg.image_pull_fallback_timeout;
    if wait.is_zero() || ctx.silent_registries.is_silent(host, now) {
        return offline(format!(
            "registry {host} did not answer lately; pulling image \"{image}\" in the background"
        ));
    }
    let result = pull(ctx, pod, image, wait).await;
    note_outcome(ctx, image, &result);
    let e = match result {
        Ok(image_ref) => {
            backoff.reset(&key);
            return Ensured {
                image_ref,
                offline: None,
            };
        }
        Err(e) => e,
    };
    if !e.timed_out {
        backoff.fail(&key, now);
    }
    log::warn!(
        "pod {}/{}: {}; running the local copy",
        pod.metadata.namespace,
        pod.metadata.name,
        e.message
    );
    offline(e.message)
}

/// A pull of an image with no local copy: it has to come from the registry, with the
/// full `imagePullTimeout` (ErrImagePull, then ImagePullBackOff while backing off).
async fn pull_or_wait(
    ctx: &Context,
    pod: &Pod,
    image: &str,
    backoff: &mut Backoff,
) -> Result<Ensured, Waiting> {
    let key = backoff_key(&pod.metadata.uid, image);
    let now = Instant::now();
    if backoff.until(&key, now).is_some() {
        return Err(waiting(
            "ImagePullBackOff",
            format!("Back-off pulling image \"{image}\""),
        ));
    }
    let result = pull(ctx, pod, image, ctx.cfg.image_pull_timeout).await;
    note_outcome(ctx, image, &result);
    match result {
        Ok(image_ref) => {
            backoff.reset(&key);
            Ok(Ensured {
                image_ref,
                offline: None,
            })
        }
        Err(e) => {
            backoff.fail(&key, now);
            Err(waiting("ErrImagePull", e.message))
        }
    }
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
        .filter_map(|r| {
            ctx.store
                .borrow_mut()
                .get_secret(&pod.metadata.namespace, &r.name)
        })
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
    let mut last = PullError {
        message: String::new(),
        timed_out: false,
    };
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
                last = PullError {
                    message: format!("failed to pull image \"{image}\": {e}"),
                    timed_out: e.is_deadline_exceeded(),
                };
                if last.timed_out {
                    break;
                }
            }
        }
    }
    Err(last)
}
