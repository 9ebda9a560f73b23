use super::*;
use std::path::PathBuf;

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("tinylet-aw-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn file(path: &str, data: &str, mode: u32) -> FileProjection {
    FileProjection {
        path: path.into(),
        data: data.as_bytes().to_vec(),
        mode,
    }
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn link(p: &Path) -> String {
    fs::read_link(p).unwrap().to_string_lossy().into_owned()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn layout_is_kubelets() {
    let s = Scratch::new("layout");
    let files = [
        file("token", "t0k", 0o644),
        file("ca.crt", "CA", 0o600),
        file("conf/app/x.ini", "x=1", 0o400),
    ];
    assert!(write(&s.0, &files, None).unwrap());
    let ts = link(&s.0.join("..data"));
    // ..YYYY_MM_DD_HH_MM_SS.DIGITS, as Go's MkdirTemp makes it.
    let (stamp, digits) = ts[2..].split_once('.').unwrap();
    assert_eq!(stamp.len(), 19, "{ts}");
    assert!(stamp.split('_').all(|p| p.parse::<u32>().is_ok()), "{ts}");
    assert!(digits.bytes().all(|b| b.is_ascii_digit()), "{ts}");
    assert_eq!(
        names(&s.0),
        [ts.as_str(), "..data", "ca.crt", "conf", "token"]
    );
    assert_eq!(link(&s.0.join("token")), "..data/token");
    assert_eq!(link(&s.0.join("conf")), "..data/conf");
    assert_eq!(fs::read_to_string(s.0.join("token")).unwrap(), "t0k");
    assert_eq!(
        fs::read_to_string(s.0.join("conf/app/x.ini")).unwrap(),
        "x=1"
    );
    let data = s.0.join(&ts);
    assert_eq!(mode(&data), 0o755);
    assert_eq!(mode(&data.join("conf")), 0o755);
    assert_eq!(mode(&data.join("conf/app")), 0o755);
    assert_eq!(mode(&data.join("token")), 0o644);
    assert_eq!(mode(&data.join("ca.crt")), 0o600);
    assert_eq!(mode(&data.join("conf/app/x.ini")), 0o400);
    assert_eq!(data_dir(&s.0).unwrap(), data);
}

#[test]
fn nothing_is_written_when_nothing_changed() {
    let s = Scratch::new("same");
    let files = [file("a", "1", 0o644), file("d/b", "2", 0o644)];
    assert!(write(&s.0, &files, None).unwrap());
    let data = data_dir(&s.0).unwrap();
    let watched = [s.0.clone(), data.clone(), data.join("d")];
    let mut wrote = true;
    let seen = crate::kuberuntime::inotify_changes::during(&watched, || {
        for _ in 0..3 {
            wrote &= write(&s.0, &files, None).unwrap();
        }
    });
    assert!(!wrote);
    assert_eq!(seen, Vec::<String>::new(), "no write at steady state");
    // The same content given in another order, or as a cleaned path, is the same.
    let again = [file("./d//b", "2", 0o644), file("a", "1", 0o644)];
    assert!(!write(&s.0, &again, None).unwrap());
    // A name sorting between a directory and its files ("a-b" < "a/c") is no stray.
    let mixed = [
        file("a-b", "1", 0o644),
        file("a/c", "2", 0o644),
        file("a.x", "3", 0o644),
    ];
    assert!(write(&s.0, &mixed, None).unwrap());
    assert!(!write(&s.0, &mixed, None).unwrap());
}

#[test]
fn an_update_is_one_rename_of_data_and_cleans_up() {
    let s = Scratch::new("update");
    let v1 = [
        file("a", "1", 0o644),
        file("b", "2", 0o644),
        file("gone/c", "3", 0o644),
    ];
    write(&s.0, &v1, None).unwrap();
    let old = link(&s.0.join("..data"));
    let v2 = [file("a", "one", 0o644), file("b", "2", 0o644)];
    let root = std::slice::from_ref(&s.0);
    let seen = crate::kuberuntime::inotify_changes::during(root, || {
        assert!(write(&s.0, &v2, None).unwrap())
    });
    let new = link(&s.0.join("..data"));
    assert_ne!(new, old);
    // Containers see the switch as the rename of ..data_tmp over ..data.
    let renamed = seen
        .iter()
        .position(|e| e.contains("MOVED_TO") && e.contains("\"..data\""));
    let removed = seen
        .iter()
        .position(|e| e.contains("DELETE") && e.contains(&format!("{old:?}")));
    assert!(renamed < removed && renamed.is_some(), "{seen:?}");
    assert!(
        seen.iter()
            .any(|e| e.contains("MOVED_FROM") && e.contains("\"..data_tmp\"")),
        "{seen:?}"
    );
    assert_eq!(names(&s.0), [new.as_str(), "..data", "a", "b"]);
    assert_eq!(fs::read_to_string(s.0.join("a")).unwrap(), "one");
    assert_eq!(fs::read_to_string(s.0.join("b")).unwrap(), "2");
    // A change of mode alone is an update too.
    let v3 = [file("a", "one", 0o600), file("b", "2", 0o644)];
    assert!(write(&s.0, &v3, None).unwrap());
    assert_eq!(mode(&s.0.join("a")), 0o600);
    // Nothing: only ..data and its directory.
    assert!(write(&s.0, &[], None).unwrap());
    assert_eq!(names(&s.0).len(), 2);
}

#[test]
fn an_older_layout_and_leftovers_are_replaced() {
    let s = Scratch::new("older");
    // An older agent's plain files, and a directory a crash left behind.
    fs::write(s.0.join("a"), "old").unwrap();
    fs::create_dir_all(s.0.join("sub/x")).unwrap();
    fs::write(s.0.join("stale"), "old").unwrap();
    fs::create_dir_all(s.0.join("..2020_01_01_00_00_00.1")).unwrap();
    let files = [file("a", "new", 0o644), file("sub/b", "b", 0o644)];
    assert!(write(&s.0, &files, None).unwrap());
    let ts = link(&s.0.join("..data"));
    assert_eq!(names(&s.0), [ts.as_str(), "..data", "a", "sub"]);
    assert_eq!(fs::read_to_string(s.0.join("a")).unwrap(), "new");
    assert!(!s.0.join("sub/x").exists());
    // A stray entry later (another crash) makes the next write put things right.
    fs::create_dir(s.0.join("..2020_01_01_00_00_00.2")).unwrap();
    assert!(write(&s.0, &files, None).unwrap());
    assert_eq!(names(&s.0).len(), 4);
    // So does a file changed behind the agent's back, or a link replaced.
    let data = data_dir(&s.0).unwrap();
    fs::write(data.join("a"), "changed").unwrap();
    assert!(write(&s.0, &files, None).unwrap());
    assert_eq!(fs::read_to_string(s.0.join("a")).unwrap(), "new");
    fs::remove_file(s.0.join("sub")).unwrap();
    fs::create_dir(s.0.join("sub")).unwrap();
    assert!(write(&s.0, &files, None).unwrap());
    assert_eq!(fs::read_to_string(s.0.join("sub/b")).unwrap(), "b");
    assert!(!write(&s.0, &files, None).unwrap());
}

#[test]
fn bad_paths_are_refused_and_the_last_duplicate_wins() {
    let s = Scratch::new("paths");
    for bad in ["../x", "a/../../x", "..data", "..x/y", "/abs", "", "./"] {
        let e = write(&s.0, &[file(bad, "x", 0o644)], None).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}: {e}");
    }
    let long = "n".repeat(256);
    assert!(write(&s.0, &[file(&long, "x", 0o644)], None).is_err());
    let e = write(
        &s.0,
        &[file("a", "1", 0o644), file("a/b", "2", 0o644)],
        None,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("both a file and the directory"),
        "{e}"
    );
    assert!(!s.0.join("..data").exists(), "nothing written");
    write(
        &s.0,
        &[file("k", "first", 0o644), file("k", "second", 0o600)],
        None,
    )
    .unwrap();
    assert_eq!(fs::read_to_string(s.0.join("k")).unwrap(), "second");
    assert_eq!(mode(&s.0.join("k")), 0o600);
}

#[cfg(feature = "uplink")]
#[test]
fn the_current_file_is_read_back_bounded() {
    let s = Scratch::new("current");
    assert_eq!(current(&s.0, "token", 64), None, "nothing written yet");
    write(
        &s.0,
        &[file("token", "t1", 0o644), file("d/f", "x", 0o644)],
        None,
    )
    .unwrap();
    assert_eq!(current(&s.0, "token", 64).as_deref(), Some(&b"t1"[..]));
    assert_eq!(current(&s.0, "./token", 64).as_deref(), Some(&b"t1"[..]));
    assert_eq!(current(&s.0, "token", 1), None, "over the bound");
    assert_eq!(current(&s.0, "d", 64), None, "a directory");
    assert_eq!(current(&s.0, "../token", 64), None);
    assert_eq!(current(&s.0, "gone", 64), None);
}
