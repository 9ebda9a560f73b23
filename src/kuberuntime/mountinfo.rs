//! The mount table of the agent's mount namespace (`/proc/self/mountinfo`), so that a
//! directory is never removed through a mount: deleting through one could reach data
//! that is not the agent's (a hostPath bound into a pod directory).

use std::io;
use std::path::{Path, PathBuf};

/// Every mount point of this mount namespace (field 5 of `/proc/self/mountinfo`).
pub fn mount_points() -> io::Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")?;
    Ok(text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape_octal(p)))
        .collect())
}

/// The first of `mounts` at or below `dir` (`/` has every mount below it). The mount
/// table names resolved paths, so `dir` is resolved too (a `podsDir` reached through a
/// symlink).
pub fn mounted_below<'a>(dir: &Path, mounts: &'a [PathBuf]) -> Option<&'a PathBuf> {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    mounts
        .iter()
        .find(|m| m.starts_with(dir) || m.starts_with(&real) || real == Path::new("/"))
}

/// Undoes mountinfo's `\NNN` octal escapes (space, tab, newline, backslash).
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let code = b
            .get(i + 1..i + 4)
            .filter(|d| c == b'\\' && d.iter().all(|x| (b'0'..=b'7').contains(x)))
            .map(|d| d.iter().fold(0u32, |n, x| n * 8 + u32::from(x - b'0')));
        match code.and_then(|n| u8::try_from(n).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octal_escapes() {
        assert_eq!(unescape_octal(r"/a\040b\\c"), r"/a b\\c");
        assert_eq!(unescape_octal(r"/x\134y\0"), r"/x\y\0");
    }

    #[test]
    fn mounts_below_a_directory() {
        let mounts = [PathBuf::from("/proc"), PathBuf::from("/p/u/volumes/x")];
        assert_eq!(mounted_below(Path::new("/p/u"), &mounts), Some(&mounts[1]));
        assert_eq!(mounted_below(Path::new("/p/v"), &mounts), None);
        assert_eq!(
            mounted_below(Path::new("/p/u/volumes/x"), &mounts),
            Some(&mounts[1])
        );
        assert!(mounted_below(Path::new("/"), &mounts).is_some());
        assert!(mount_points().unwrap().iter().any(|m| m == Path::new("/")));
        // Through a symlink to a mounted directory.
        let link = std::env::temp_dir().join(format!("tinylet-mi-{}", std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/proc", &link).unwrap();
        assert_eq!(mounted_below(&link, &mounts), Some(&mounts[0]));
        std::fs::remove_file(&link).unwrap();
    }
}
