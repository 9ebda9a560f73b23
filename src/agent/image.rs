//! Making sure a container's image is there, with kubelet's pull policy and our offline
//! rule: a gateway must restart its pods with no uplink, so when a pull that the policy
//! asks for (`Always`, `:latest`) fails and a local copy exists, the local copy runs and
//! the pod's status says so.

use super::backoff::Backoff;
use super::context::Context;
use crate::cri::pb;
use crate::kuberuntime::status::Waiting;
use crate::model::container::PullPolicy;
use crate::model::defaults::pull_policy_for;
use crate::model::secret::pull_credentials;
use crate::model::{Container, Pod, Secret};
use std::time::Instant;

/// The image to run.
pub struct Ensured {
    /// What CreateContainer gets (the image id).
    pub image_ref: String,
    /// Set when a wanted pull failed and the local copy is used: the pull error.
    pub offline: Option<String>,
}

fn waiting(reason: &str, message: String) -> Waiting {
    Waiting {
        reason: reason.into(),
        message,
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
    invalid_name(image)?;
    let policy = c
        .image_pull_policy
        .unwrap_or_else(|| pull_policy_for(image));
    let present = match ctx.cri.image.image_status(image).await {
        Ok(p) => p,
        Err(e) => {
            return Err(waiting(
                "ErrImageInspect",
                format!("failed to inspect image \"{image}\": {e}"),
            ))
        }
    };
    let local = present.as_ref().map(|i| i.id.clone());
    match (policy, local) {
        (PullPolicy::Never, Some(id)) | (PullPolicy::IfNotPresent, Some(id)) => {
            return Ok(Ensured {
                image_ref: id,
                offline: None,
            })
        }
        (PullPolicy::Never, None) => {
            return Err(waiting(
                "ErrImageNeverPull",
                format!("Container image \"{image}\" is not present with pull policy of Never"),
            ));
        }
        _ => {}
    }
    let key = format!("{}/{}", pod.metadata.uid, image);
    let now = Instant::now();
    if backoff.until(&key, now).is_some() {
        if let Some(i) = &present {
            return Ok(Ensured {
                image_ref: i.id.clone(),
                offline: Some(format!("back-off pulling image \"{image}\"")),
            });
        }
        return Err(waiting(
            "ImagePullBackOff",
            format!("Back-off pulling image \"{image}\""),
        ));
    }
    match pull(ctx, pod, image).await {
        Ok(image_ref) => {
            backoff.reset(&key);
            Ok(Ensured {
                image_ref,
                offline: None,
            })
        }
        Err(msg) => {
            backoff.fail(&key, now);
            match present {
                Some(i) => {
                    log::warn!(
                        "pod {}/{}: pulling {image} failed, running the local copy: {msg}",
                        pod.metadata.namespace,
                        pod.metadata.name
                    );
                    Ok(Ensured {
                        image_ref: i.id,
                        offline: Some(msg),
                    })
                }
                None => Err(waiting("ErrImagePull", msg)),
            }
        }
    }
}

/// kubelet's `InvalidImageName`: a reference outside the docker grammar is never
/// inspected or pulled. Validation refuses such images at apply; this holds for
/// anything that got past it.
fn invalid_name(image: &str) -> Result<(), Waiting> {
    crate::model::image_name::check(image).map_err(|why| {
        waiting(
            "InvalidImageName",
            format!("Failed to apply default image tag {image:?}: couldn't parse image name {image:?}: invalid reference format: {why}"),
        )
    })
}

/// Pulls `image`, trying each matching credential of the pod's imagePullSecrets in turn
/// (as kubelet), then anonymously when there is none.
pub async fn pull(ctx: &Context, pod: &Pod, image: &str) -> Result<String, String> {
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
    let mut last_err = String::new();
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
    for auth in attempts {
        log::info!("pulling image {image}");
        match ctx.cri.image.pull_image(image, auth, None).await {
            Ok(r) => return Ok(r),
            Err(e) => last_err = format!("failed to pull image \"{image}\": {e}"),
        }
    }
    Err(last_err)
}

#[cfg(test)]
mod tests {
    use super::*;

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
