//! Pulls that bring a pod's offline containers (those running a local copy because a
//! wanted pull failed or did not finish in time) up to date again. They run as tasks
//! beside the pod's worker, with the full `imagePullTimeout`: a registry that hangs
//! must not hold the worker, which meanwhile restarts, probes, updates and deletes the
//! pod as usual. Dropping a [`Refreshes`] cancels its pulls.
//!
//! Once a pull brought an image, [`outdated`] names the running containers whose image
//! differs from it: the worker replaces them as kubelet replaces a container whose spec
//! changed (no crash-loop back-off), so `Always` again means "the registry's current
//! image". Containers already running that image are left alone.
//!
//! [`Offline`] is what a pod's worker keeps of all this: which containers run a local
//! copy and why, their pulls, and what the pulls brought.

use super::backoff::Backoff;
use super::context::Context;
use super::image::{self, PullError};
use crate::cri::CriError;
use crate::kuberuntime::observed::{ObservedPod, State};
use crate::model::container::PullPolicy;
use crate::model::Pod;
use smol::Task;
use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Instant;

/// One pod's containers that run a local copy of their image because a wanted pull
/// failed, the background pulls that bring them current again, and the images those
/// pulls brought. Dropping it cancels the pulls.
#[derive(Default)]
pub struct Offline {
    /// Container name -> the pull error that left it on its local copy.
    containers: BTreeMap<String, String>,
    refreshes: Refreshes,
    /// Image ids that background pulls brought (image reference -> id), for the next
    /// sync to compare with what the containers run.
    fresh: BTreeMap<String, String>,
}

impl Offline {
    /// Notes what container `name` was started with: its local copy after the pull
    /// error `offline`, or (`None`) the image it asked for.
    pub fn note(&mut self, name: &str, offline: Option<String>) {
        match offline {
            Some(err) => self.containers.insert(name.to_string(), err),
            None => self.containers.remove(name),
        };
    }

    /// The pod status's message while containers run their local copy: each one with
    /// its pull error; `None` when none does.
    pub fn status_message(&self) -> Option<String> {
        if self.containers.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .containers
            .iter()
            .map(|(n, e)| format!("container {n} runs its local image: {e}"))
            .collect();
        Some(parts.join("; "))
    }

    /// Running containers of `pod` to replace because a background pull brought an
    /// image other than the one they run (see [`outdated`]); `None` when no pull
    /// brought one.
    pub fn outdated<'a>(
        &'a mut self,
        ctx: &'a Context,
        pod: &'a Pod,
        observed: &'a ObservedPod,
    ) -> Option<impl Future<Output = Vec<String>> + 'a> {
        let fresh = &mut self.fresh;
        (!fresh.is_empty()).then(|| outdated(ctx, pod, observed, fresh))
    }

    /// Whether images that pulls brought are still to compare with the running
    /// containers' (the runtime did not answer): ask [`Offline::outdated`] again soon.
    pub fn undecided(&self) -> bool {
        !self.fresh.is_empty()
    }

    /// Pulls the offline containers' images again in the background when the pull
    /// back-off allows, so the pod is current again once the registry is back; pulls of
    /// images no offline container needs any longer are cancelled. Returns when to
    /// look again: the end of the earliest back-off that held a pull.
    pub fn schedule(&mut self, ctx: &Rc<Context>, pod: &Pod, pulls: &Backoff) -> Option<Instant> {
        let mut images: Vec<String> = Vec::new();
        for c in pod.all_containers() {
            if self.containers.contains_key(&c.name) && !images.contains(&c.image) {
                images.push(c.image.clone());
            }
        }
        self.containers
            .retain(|n, _| pod.all_containers().any(|c| &c.name == n));
        self.refreshes.retain(|i| images.iter().any(|w| w == i));
        let now = Instant::now();
        let mut wake: Option<Instant> = None;
        for image in &images {
            if self.refreshes.is_running(image) {
                continue;
            }
            let key = image::backoff_key(&pod.metadata.uid, image);
            match pulls.until(&key, now) {
                Some(until) => wake = Some(wake.map_or(until, |w| w.min(until))),
                None => self.refreshes.start(ctx, pod, image),
            }
        }
        wake
    }

    /// The next background pull to finish; pending for ever while none runs.
    pub fn finished(&mut self) -> impl Future<Output = Pulled> + '_ {
        self.refreshes.finished()
    }

    /// A background pull of `image` finished: the registry answered with an image (the
    /// offline containers using it are current again, and the next sync replaces those
    /// that run another image), or it failed (back-off, then again).
    pub fn pulled(&mut self, ctx: &Context, pod: &Pod, pulls: &mut Backoff, done: Pulled) {
        let (image, result) = done;
        image::note_outcome(ctx, &image, &result);
        let key = image::backoff_key(&pod.metadata.uid, &image);
        let names: Vec<String> = pod
            .all_containers()
            .filter(|c| c.image == image && self.containers.contains_key(&c.name))
            .map(|c| c.name.clone())
            .collect();
        let (ns, name) = (&pod.metadata.namespace, &pod.metadata.name);
        match result {
            Ok(id) => {
                log::info!(
                    "pod {ns}/{name}: image {image} pulled ({id}); no longer running offline"
                );
                pulls.reset(&key);
                for n in &names {
                    self.containers.remove(n);
                }
                self.fresh.insert(image, id);
            }
            Err(e) => {
                let delay = pulls.fail(&key, Instant::now());
                log::info!(
                    "pod {ns}/{name}: {} (again in {})",
                    e,
                    crate::config::format_duration(delay)
                );
                for n in names {
                    self.containers.insert(n, e.to_string());
                }
            }
        }
    }
}

/// What a finished background pull brought: the image reference and the image id.
pub type Pulled = (String, Result<String, PullError>);

/// The background pulls of one pod, at most one per image reference (a pod has a few
/// images: a list is enough).
#[derive(Default)]
pub struct Refreshes {
    running: Vec<(String, Task<Result<String, PullError>>)>,
}

impl Refreshes {
    /// Whether `image` is being pulled.
    pub fn is_running(&self, image: &str) -> bool {
        self.running.iter().any(|(i, _)| i == image)
    }

    /// Starts pulling `image` with `pod`'s credentials and the full `imagePullTimeout`.
    pub fn start(&mut self, ctx: &Rc<Context>, pod: &Pod, image: &str) {
        let (ctx, pod, img) = (ctx.clone(), pod.clone(), image.to_string());
        let task = crate::rt::spawn(async move {
            let timeout = ctx.cfg.image_pull_timeout;
            image::pull(&ctx, &pod, &img, timeout).await
        });
        self.running.push((image.to_string(), task));
    }

    /// Cancels the pulls of images `keep` says are no longer wanted.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.running.retain(|(image, _)| keep(image));
    }

    /// The next pull to finish; pending for ever while none runs.
    pub fn finished(&mut self) -> impl Future<Output = Pulled> + '_ {
        poll_fn(move |cx| {
            let done =
                self.running
                    .iter_mut()
                    .enumerate()
                    .find_map(|(i, (_, task))| match Pin::new(task).poll(cx) {
                        Poll::Ready(r) => Some((i, r)),
                        Poll::Pending => None,
                    });
            match done {
                Some((i, r)) => Poll::Ready((self.running.swap_remove(i).0, r)),
                None => Poll::Pending,
            }
        })
    }
}

/// The ids of `pod`'s running app containers with pull policy `Always` whose image is
/// not the one `fresh` (image reference -> image id, from background pulls) says the
/// registry now has. The image a container runs is asked of the runtime by the
/// reference it reports (`image_ref`, else `image`); a container whose image the
/// runtime does not know is left alone. Entries of `fresh` are removed once decided;
/// those left could not be checked (the runtime did not answer): call again later.
pub async fn outdated(
    ctx: &Context,
    pod: &Pod,
    observed: &ObservedPod,
    fresh: &mut BTreeMap<String, String>,
) -> Vec<String> {
    let mut ids = Vec::new();
    let mut undecided: Vec<&str> = Vec::new();
    for c in &pod.spec.containers {
        let Some(want) = fresh.get(&c.image) else {
            continue;
        };
        if image::policy(c) != PullPolicy::Always {
            continue;
        }
        let Some(l) = observed
            .latest(&c.name)
            .filter(|l| l.state == State::Running)
        else {
            continue;
        };
        let (ns, name) = (&pod.metadata.namespace, &pod.metadata.name);
        match running_image_id(ctx, [&l.image_ref, &l.image]).await {
            Ok(Some(id)) if id == *want => {}
            Ok(Some(id)) => {
                log::info!(
                    "pod {ns}/{name}: container {} runs image {id}, the registry now has {want} for {}: replacing it",
                    c.name,
                    c.image
                );
                ids.push(l.id.clone());
            }
            Ok(None) => log::warn!(
                "pod {ns}/{name}: container {}: the runtime does not know its image {:?}; not replacing it",
                c.name,
                l.image_ref
            ),
            Err(e) => {
                log::warn!("pod {ns}/{name}: container {}: {e}", c.name);
                undecided.push(&c.image);
            }
        }
    }
    fresh.retain(|image, _| undecided.contains(&image.as_str()));
    ids
}

/// The id of the first of `refs` the runtime knows as an image.
async fn running_image_id(
    ctx: &Context,
    refs: [&String; 2],
) -> Result<Option<String>, ImageStatusError> {
    for r in refs.into_iter().filter(|r| !r.is_empty()) {
        match ctx.cri.image.image_status(r).await {
            Ok(Some(img)) => return Ok(Some(img.id)),
            Ok(None) => {}
            Err(cause) => {
                return Err(ImageStatusError {
                    image: r.to_string(),
                    cause,
                })
            }
        }
    }
    Ok(None)
}

/// ImageStatus of a running container's image failed: the image and the runtime's
/// error (with its gRPC code).
#[derive(Debug)]
struct ImageStatusError {
    image: String,
    cause: CriError,
}

impl std::fmt::Display for ImageStatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "image status of {}: {}", self.image, self.cause)
    }
}

impl std::error::Error for ImageStatusError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}
