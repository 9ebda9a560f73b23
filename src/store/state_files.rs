//! Reading desired objects back from `STATE/desired/KIND/`.
//!
//! Every file is parsed and validated again on read (it may have been edited by hand or
//! damaged), and must hold an object of the directory's kind whose namespace and name
//! match the file name. Anything else is quarantined; the other files are unaffected.
//! The agent reads its pods with [`list_keeping_damaged`] instead, which leaves a damaged
//! file named for a pod in place and reports it (the pod must not vanish with it).
//! Dotfiles (temp files among them) and files not ending in `.json` are skipped.

use super::error::{IoContext, StoreError};
use super::layout::{self, Kind, Layout};
use super::quarantine::quarantine;
use super::{atomic, bounded};
use crate::model::{parse_object, Object, MAX_MANIFEST_BYTES};

/// One object read from the state directory, with the exact bytes of its file.
pub struct StateObject {
    pub object: Object,
    pub bytes: Vec<u8>,
}

/// What reading one file found.
pub enum Found {
    Missing,
    Valid(Box<StateObject>),
    /// Not a valid object for this place, and why.
    Bad {
        reason: String,
    },
}

/// Reads and checks `file` of `kind`, changing nothing.
pub fn read(layout: &Layout, kind: Kind, file: &str) -> Result<Found, StoreError> {
    let path = layout.kind_dir(kind).join(file);
    // At most the model's limit and a byte is read: a huge file costs no memory, and
    // is bad input like any other (quarantined), not an I/O failure to retry.
    let bytes = match bounded::read_optional(&path, MAX_MANIFEST_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(Found::Missing),
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            return Ok(Found::Bad {
                reason: format!(
                    "larger than {MAX_MANIFEST_BYTES} bytes, the limit for one object; not read"
                ),
            })
        }
        Err(e) => return Err(StoreError::io(&path, e)),
    };
    Ok(
        match check(kind, file, &path.display().to_string(), &bytes) {
            Ok(object) => Found::Valid(Box::new(StateObject { object, bytes })),
            Err(e) => Found::Bad {
                reason: e.to_string(),
            },
        },
    )
}

/// How a reader may treat a bad file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Quarantine it; the caller holds the directory lock.
    Locked,
    /// Quarantine it, taking the directory lock first.
    Unlocked,
    /// Change nothing: log it and skip it (read-only store).
    ReadOnly,
}

/// Reads `file`, quarantining it when it is bad (see [`Access`]). Without the lock held,
/// it is taken and the file re-read before moving it, so a good file that an `apply`
/// renamed into place meanwhile is never quarantined.
pub fn read_or_quarantine(
    layout: &Layout,
    kind: Kind,
    file: &str,
    access: Access,
) -> Result<Option<StateObject>, StoreError> {
    let mut reason = match read(layout, kind, file)? {
        Found::Missing => return Ok(None),
        Found::Valid(o) => return Ok(Some(*o)),
        Found::Bad { reason } => reason,
    };
    let dir = layout.kind_dir(kind);
    if access == Access::ReadOnly {
        log::error!("{}: {reason}; skipped", dir.join(file).display());
        return Ok(None);
    }
    let _lock = if access == Access::Locked {
        None
    } else {
        let d = atomic::open_dir(&dir).at(&dir)?;
        atomic::lock_exclusive(&d).at(&dir)?;
        // Judge what is there now: an apply may have replaced it meanwhile.
        match read(layout, kind, file)? {
            Found::Missing => return Ok(None),
            Found::Valid(o) => return Ok(Some(*o)),
            Found::Bad { reason: now } => reason = now,
        }
        Some(d)
    };
    quarantine(&layout.quarantine_dir(), &dir, file, kind, &reason)?;
    Ok(None)
}

/// A state file named for an object (`NS_NAME.json`) that is there but cannot be used
/// (torn, bit-flipped, edited wrong), left in place by [`list_keeping_damaged`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    pub file: String,
    pub reason: String,
}

/// Parses `bytes` and checks that the object belongs in `file` of `kind`.
fn check(kind: Kind, file: &str, source: &str, bytes: &[u8]) -> Result<Object, Unusable> {
    let Some((ns, name)) = layout::parse_file_name(file) else {
        return Err(Unusable::FileName);
    };
    let obj = parse_object(source, bytes).map_err(Unusable::Invalid)?;
    if Kind::of(&obj) != kind {
        return Err(Unusable::WrongKind {
            holds: obj.kind(),
            wants: kind.api_kind(),
        });
    }
    if obj.namespace() != ns || obj.name() != name {
        return Err(Unusable::WrongName {
            file: format!("{ns}/{name}"),
            object: format!("{}/{}", obj.namespace(), obj.name()),
        });
    }
    Ok(obj)
}

/// Why a state file's object cannot be used.
#[derive(Debug)]
enum Unusable {
    /// The file name is not `NAMESPACE_NAME.json`.
    FileName,
    /// The model refused the object.
    Invalid(crate::model::ModelError),
    /// An object of another kind than the directory's.
    WrongKind {
        holds: &'static str,
        wants: &'static str,
    },
    /// The file name and the object disagree on `namespace/name`.
    WrongName { file: String, object: String },
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::FileName => write!(
                f,
                "file name must be NAMESPACE_NAME{} (store objects with tinylet apply)",
                layout::SUFFIX
            ),
            Unusable::Invalid(e) => f.write_str(&e.messages.join("; ")),
            Unusable::WrongKind { holds, wants } => {
                write!(f, "holds a {holds}, but this directory is for {wants}")
            }
            Unusable::WrongName { file, object } => {
                write!(f, "file name says {file}, but the object is {object}")
            }
        }
    }
}

impl std::error::Error for Unusable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Unusable::Invalid(e) => Some(e),
            _ => None,
        }
    }
}

/// Every valid object of `kind`, sorted by file name. Bad files are quarantined (or
/// only logged, read-only); a missing directory has none, and one that cannot be read
/// is logged and yields nothing.
pub fn list(layout: &Layout, kind: Kind, access: Access) -> Vec<Object> {
    object_files(layout, kind)
        .iter()
        .filter_map(|f| match read_or_quarantine(layout, kind, f, access) {
            Ok(o) => o.map(|o| o.object),
            Err(e) => {
                log::error!("{e}");
                None
            }
        })
        .collect()
}

/// As [`list`] for the agent, but a bad file whose name is an object's stays where it
/// is and is returned as [`Damaged`]: the caller may hold a good copy to put back, or
/// the file is the only record that the object exists. Bad files with other names are
/// quarantined.
pub fn list_keeping_damaged(layout: &Layout, kind: Kind) -> (Vec<Object>, Vec<Damaged>) {
    let (mut good, mut damaged) = (Vec::new(), Vec::new());
    for file in object_files(layout, kind) {
        let found = match read(layout, kind, &file) {
            Ok(Found::Bad { reason }) if layout::parse_file_name(&file).is_some() => {
                damaged.push(Damaged { file, reason });
                continue;
            }
            Ok(Found::Missing) => continue,
            Ok(Found::Valid(o)) => Ok(Some(*o)),
            Ok(Found::Bad { .. }) => read_or_quarantine(layout, kind, &file, Access::Unlocked),
            Err(e) => Err(e),
        };
        match found {
            Ok(o) => good.extend(o.map(|o| o.object)),
            Err(e) => log::error!("{e}"),
        }
    }
    (good, damaged)
}

/// The files of `kind` named for an object that cannot be used, and why; nothing is
/// moved (for read-only readers: `tinylet get` shows such a pod as damaged rather than
/// leaving it out).
pub fn damaged(layout: &Layout, kind: Kind) -> Vec<Damaged> {
    object_files(layout, kind)
        .into_iter()
        .filter(|file| layout::parse_file_name(file).is_some())
        .filter_map(|file| match read(layout, kind, &file) {
            Ok(Found::Bad { reason }) => Some(Damaged { file, reason }),
            _ => None,
        })
        .collect()
}

/// The object file names in the directory of `kind`, sorted (temp files and other
/// names skipped); a missing directory has none, one that cannot be read is logged.
fn object_files(layout: &Layout, kind: Kind) -> Vec<String> {
    let dir = layout.kind_dir(kind);
    let mut files: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.') && n.ends_with(layout::SUFFIX))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            log::error!("{}: {e}", dir.display());
            return Vec::new();
        }
    };
    files.sort();
    files
}
