//! A pod's directory on the host, `podsDir/UID`: the root everything of the pod is made
//! beneath (volumes, bind targets, termination-message files). Taking it down is the
//! `teardown` module's job (it needs the mount modules, which need this one).

use super::beneath;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// Opens the directory `podsDir/UID` (made 0755, whatever the umask, when missing),
/// the root everything of the pod is made beneath. `podsDir` itself is the admin's:
/// made (0755) when missing, symlinks in it followed.
pub fn open(pods_dir: &Path, uid: &str) -> io::Result<OwnedFd> {
    crate::store::atomic::ensure_dir(pods_dir, 0o755, false)?;
    let pods = beneath::open_dir(pods_dir)?;
    beneath::make_dirs(pods.as_fd(), Path::new(uid), 0o755)
}
