//! kubelet's `runAsNonRoot` check, made before a container is created.
//!
//! When the effective `runAsNonRoot` (the container's, else the pod's) is true: an
//! effective `runAsUser` of 0 is refused; without a `runAsUser`, the image's user decides:
//! uid 0 is refused, a user name is refused because it cannot be checked (it is resolved
//! inside the container), and an image with no user at all runs as root and is refused
//! too. The messages are kubelet's; the container then waits with
//! `CreateContainerConfigError`.

use crate::model::{Container, Pod};

/// The user an image runs as, from CRI ImageStatus (`uid`, else `username`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageUser {
    /// The image's numeric user, if it names one.
    pub uid: Option<i64>,
    /// The image's user name, if it names one by name.
    pub username: String,
}

/// Whether the image's user matters: `runAsNonRoot` is true and no `runAsUser` is set.
pub fn needs_image_user(pod: &Pod, c: &Container) -> bool {
    run_as_non_root(pod, c) && run_as_user(pod, c).is_none()
}

fn run_as_non_root(pod: &Pod, c: &Container) -> bool {
    c.security_context
        .as_ref()
        .and_then(|s| s.run_as_non_root)
        .or_else(|| {
            pod.spec
                .security_context
                .as_ref()
                .and_then(|s| s.run_as_non_root)
        })
        .unwrap_or(false)
}

fn run_as_user(pod: &Pod, c: &Container) -> Option<i64> {
    c.security_context
        .as_ref()
        .and_then(|s| s.run_as_user)
        .or_else(|| {
            pod.spec
                .security_context
                .as_ref()
                .and_then(|s| s.run_as_user)
        })
}

/// Refuses a container that would run as root against `runAsNonRoot`; `image` is the
/// image's user (only looked at when [`needs_image_user`]).
pub fn verify(pod: &Pod, c: &Container, image: &ImageUser) -> Result<(), NonRootError> {
    if !run_as_non_root(pod, c) {
        return Ok(());
    }
    let m = &pod.metadata;
    let who = format!(
        "pod: \"{}_{}({})\", container: {}",
        m.name, m.namespace, m.uid, c.name
    );
    if let Some(user) = run_as_user(pod, c) {
        if user == 0 {
            return Err(NonRootError::RunAsUserRoot { who });
        }
        return Ok(());
    }
    match (image.uid, image.username.as_str()) {
        (Some(0), _) | (None, "") => Err(NonRootError::ImageRunsAsRoot { who }),
        (None, name) => Err(NonRootError::NonNumericUser {
            name: name.to_string(),
            who,
        }),
        (Some(_), _) => Ok(()),
    }
}

/// Why a container may not run under `runAsNonRoot` (kubelet's words); `who` names the
/// pod and container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NonRootError {
    /// Its `runAsUser` is 0.
    RunAsUserRoot {
        /// The pod and container.
        who: String,
    },
    /// Its image runs as root (uid 0, or no user).
    ImageRunsAsRoot {
        /// The pod and container.
        who: String,
    },
    /// Its image names a user by name, which cannot be checked.
    NonNumericUser {
        /// The image's user.
        name: String,
        /// The pod and container.
        who: String,
    },
}

impl std::fmt::Display for NonRootError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NonRootError::RunAsUserRoot { who } => {
                write!(f, "container's runAsUser breaks non-root policy ({who})")
            }
            NonRootError::ImageRunsAsRoot { who } => write!(
                f,
                "container has runAsNonRoot and image will run as root ({who})"
            ),
            NonRootError::NonNumericUser { name, who } => write!(
                f,
                "container has runAsNonRoot and image has non-numeric user ({name}), cannot verify user is non-root ({who})"
            ),
        }
    }
}

impl std::error::Error for NonRootError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`super::verify`], its error as the status shows it.
    fn verify(pod: &Pod, c: &Container, image: &ImageUser) -> Result<(), String> {
        super::verify(pod, c, image).map_err(|e| e.to_string())
    }
    use crate::model::container::SecurityContext;
    use crate::model::pod::PodSecurityContext;

    fn pod(pod_sc: Option<PodSecurityContext>, c_sc: Option<SecurityContext>) -> (Pod, Container) {
        let mut p = Pod::default();
        p.metadata.name = "p".into();
        p.metadata.namespace = "ns".into();
        p.metadata.uid = "u1".into();
        p.spec.security_context = pod_sc;
        let c = Container {
            name: "app".into(),
            security_context: c_sc,
            ..Default::default()
        };
        (p, c)
    }

    fn user(uid: Option<i64>, name: &str) -> ImageUser {
        ImageUser {
            uid,
            username: name.into(),
        }
    }

    #[test]
    fn without_run_as_non_root_anything_goes() {
        let (p, c) = pod(None, None);
        assert!(!needs_image_user(&p, &c));
        assert_eq!(verify(&p, &c, &user(Some(0), "")), Ok(()));
        let off = SecurityContext {
            run_as_non_root: Some(false),
            ..Default::default()
        };
        let on = PodSecurityContext {
            run_as_non_root: Some(true),
            ..Default::default()
        };
        let (p, c) = pod(Some(on), Some(off));
        assert_eq!(
            verify(&p, &c, &user(None, "")),
            Ok(()),
            "container overrides pod"
        );
    }

    #[test]
    fn the_image_user_decides_without_run_as_user() {
        let on = PodSecurityContext {
            run_as_non_root: Some(true),
            ..Default::default()
        };
        let (p, c) = pod(Some(on), None);
        assert!(needs_image_user(&p, &c));
        let who = "pod: \"p_ns(u1)\", container: app";
        let root = format!("container has runAsNonRoot and image will run as root ({who})");
        assert_eq!(verify(&p, &c, &user(Some(0), "")), Err(root.clone()));
        assert_eq!(
            verify(&p, &c, &user(None, "")),
            Err(root),
            "no user is root"
        );
        assert_eq!(
            verify(&p, &c, &user(None, "nobody")),
            Err(format!("container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root ({who})"))
        );
        assert_eq!(verify(&p, &c, &user(Some(65534), "")), Ok(()));
    }

    #[test]
    fn run_as_user_decides_when_set() {
        let sc = |u| SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(u),
            ..Default::default()
        };
        let (p, c) = pod(None, Some(sc(1000)));
        assert!(!needs_image_user(&p, &c));
        assert_eq!(verify(&p, &c, &user(Some(0), "")), Ok(()));
        let (p, c) = pod(None, Some(sc(0)));
        assert_eq!(
            verify(&p, &c, &ImageUser::default()),
            Err(
                "container's runAsUser breaks non-root policy (pod: \"p_ns(u1)\", container: app)"
                    .into()
            )
        );
        // The pod's runAsUser counts when the container sets only runAsNonRoot.
        let psc = PodSecurityContext {
            run_as_user: Some(1000),
            ..Default::default()
        };
        let csc = SecurityContext {
            run_as_non_root: Some(true),
            ..Default::default()
        };
        let (p, c) = pod(Some(psc), Some(csc));
        assert_eq!(verify(&p, &c, &user(Some(0), "")), Ok(()));
    }
}
