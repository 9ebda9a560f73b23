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

use super::context::Context;
use super::image::{self, PullError};
use crate::kuberuntime::observed::{ObservedPod, State};
use crate::model::container::PullPolicy;
use crate::model::Pod;
use smol::Task;
use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

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
async fn running_image_id(ctx: &Context, refs: [&String; 2]) -> Result<Option<String>, String> {
    for r in refs.into_iter().filter(|r| !r.is_empty()) {
        match ctx.cri.image.image_status(r).await {
            Ok(Some(img)) => return Ok(Some(img.id)),
            Ok(None) => {}
            Err(e) => return Err(format!("image status of {r}: {e}")),
        }
    }
    Ok(None)
}
