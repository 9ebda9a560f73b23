//! The syntax of paths in a pod spec, as pure functions. The API server refuses
//! absolute paths and `..` components in volume item paths and subPaths
//! (`validateLocalDescendingPath`) and `..` in hostPaths (`validatePathNoBacksteps`);
//! the agent relies on that before it joins them to a directory. Mount paths are
//! compared the way the runtime cleans them.

use super::invalid::{Invalid, Rule};

/// A path inside a volume: relative, no `..` component, no NUL.
pub(super) fn relative_path(s: &str) -> Result<(), Invalid> {
    if s.starts_with('/') {
        Err(Invalid::new(Rule::RelativePath, s))
    } else if has_dotdot(s) {
        Err(Invalid::new(Rule::NoDotDot, s))
    } else if s.contains('\0') {
        Err(Invalid::new(Rule::NoNul, s))
    } else {
        Ok(())
    }
}

/// A file path inside a volume the agent writes (`ValidateLocalNonReservedPath`): a
/// [`relative_path`] that does not start with `..` either, a prefix kept for the
/// agent's own entries (`..data`, the timestamped directories; see
/// `kuberuntime::atomic_writer`).
pub(super) fn volume_file_path(s: &str) -> Result<(), Invalid> {
    relative_path(s)?;
    if s.starts_with("..") {
        return Err(Invalid::new(Rule::NoLeadingDotDot, s));
    }
    Ok(())
}

/// The components of an absolute path as the runtime would clean it (`//`, `.`, `..`
/// and a trailing `/` resolved lexically).
pub(super) fn lexical(p: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether any component of `p` is `..`.
pub(super) fn has_dotdot(p: &str) -> bool {
    p.split('/').any(|c| c == "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_path_edges() {
        for good in ["a", "a/b", "a..b/c", ".a", "./a", "a/"] {
            assert_eq!(relative_path(good), Ok(()), "{good:?}");
        }
        assert_eq!(
            relative_path("/a").unwrap_err().to_string(),
            "must be a relative path, got \"/a\""
        );
        for bad in ["..", "../a", "a/..", "a/../b"] {
            assert_eq!(
                relative_path(bad).unwrap_err().to_string(),
                format!("must not contain '..', got {bad:?}")
            );
        }
        assert_eq!(
            relative_path("a\0b").unwrap_err().to_string(),
            "must not contain a NUL byte, got \"a\\0b\""
        );
    }

    #[test]
    fn volume_file_path_edges() {
        for good in ["a", "a/..b", ".a", "a.."] {
            assert_eq!(volume_file_path(good), Ok(()), "{good:?}");
        }
        for bad in ["..data", "..2024_01_01", "...", "..a/b"] {
            assert_eq!(
                volume_file_path(bad).unwrap_err().to_string(),
                format!("must not start with '..', got {bad:?}")
            );
        }
        assert!(volume_file_path("../a")
            .unwrap_err()
            .to_string()
            .contains("'..'"));
        assert!(volume_file_path("/a")
            .unwrap_err()
            .to_string()
            .contains("relative"));
    }

    #[test]
    fn lexical_cleans_like_the_runtime() {
        assert_eq!(lexical("/a/./b//c/"), ["a", "b", "c"]);
        assert_eq!(lexical("/a/b/../c"), ["a", "c"]);
        assert_eq!(lexical("/../a"), ["a"]);
        assert!(lexical("/").is_empty());
        assert_eq!(
            lexical("/dev/termination-log"),
            lexical("//dev/./termination-log/")
        );
    }

    #[test]
    fn dotdot_is_a_whole_component() {
        assert!(has_dotdot(".."));
        assert!(has_dotdot("/a/../b"));
        assert!(has_dotdot("a/.."));
        assert!(!has_dotdot("/a..b/..c/d.."));
        assert!(!has_dotdot("/a/./b"));
    }
}
