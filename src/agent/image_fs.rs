//! Where the image filesystem is, for the `imagefs.*` eviction signals: the mountpoint
//! the runtime names in ImageFsInfo (asked once, in the background, so a pressure
//! check never waits on the runtime), else the runtime's own image store (containerd's
//! root `/var/lib/containerd`, CRI-O's `/var/lib/containers/storage`), which is where
//! an unnamed image filesystem lives with the runtimes' default configs.

use super::context::Context;
use smol::Task;
use std::path::PathBuf;
use std::rc::Rc;

/// The image filesystem's directory: not asked yet, being asked, or known.
#[derive(Default)]
pub enum ImageFs {
    /// Not asked yet (or the last ask failed).
    #[default]
    Unknown,
    /// ImageFsInfo under way.
    Asking(Task<Option<PathBuf>>),
    /// The runtime's answer (or its image store when it named none).
    Known(PathBuf),
}

impl ImageFs {
    /// A directory on the image filesystem now: the runtime's answer when it came,
    /// else (and meanwhile) its image store. Starts asking when not known.
    pub async fn dir(&mut self, ctx: &Rc<Context>) -> PathBuf {
        match std::mem::take(self) {
            ImageFs::Known(p) => *self = ImageFs::Known(p),
            ImageFs::Asking(t) if t.is_finished() => {
                if let Some(p) = t.await {
                    *self = ImageFs::Known(p);
                }
            }
            ImageFs::Asking(t) => *self = ImageFs::Asking(t),
            ImageFs::Unknown => {
                let ctx = ctx.clone();
                *self = ImageFs::Asking(crate::rt::spawn(async move { ask(&ctx).await }));
            }
        }
        match self {
            ImageFs::Known(p) => p.clone(),
            _ => image_store(&ctx.runtime_name.borrow()),
        }
    }
}

/// The mountpoint from ImageFsInfo; the image store when it names none; `None` when
/// the runtime did not answer (asked again at the next check).
async fn ask(ctx: &Context) -> Option<PathBuf> {
    match ctx.cri.image.image_fs_info().await {
        Ok(info) => {
            let named = info
                .image_filesystems
                .first()
                .and_then(|f| f.fs_id.as_ref())
                .map(|f| f.mountpoint.as_str())
                .filter(|m| !m.is_empty());
            let dir = match named {
                Some(m) => PathBuf::from(m),
                None => image_store(&ctx.runtime_name.borrow()),
            };
            log::debug!(
                "image filesystem for the imagefs signals: {}",
                dir.display()
            );
            Some(dir)
        }
        Err(e) => {
            log::debug!("ImageFsInfo for the imagefs signals: {e}");
            None
        }
    }
}

/// The runtime's image store by its Version name.
fn image_store(runtime_name: &str) -> PathBuf {
    match runtime_name {
        "cri-o" => "/var/lib/containers/storage".into(),
        _ => "/var/lib/containerd".into(),
    }
}
