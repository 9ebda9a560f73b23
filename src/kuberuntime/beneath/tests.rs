use super::*;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::PathBuf;

/// A scratch tree `root/` (the trusted root) beside `outside/` (what must stay out of
/// reach), removed on drop.
struct Tree {
    base: PathBuf,
}

impl Tree {
    fn new(tag: &str) -> Tree {
        let base =
            std::env::temp_dir().join(format!("tinylet-beneath-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root/real/b")).unwrap();
        std::fs::create_dir_all(base.join("outside/b")).unwrap();
        std::fs::write(base.join("outside/secret"), b"host data").unwrap();
        std::fs::write(base.join("root/file"), b"x").unwrap();
        Tree { base }
    }
    fn root(&self) -> PathBuf {
        self.base.join("root")
    }
    fn outside(&self) -> PathBuf {
        self.base.join("outside")
    }
    fn link(&self, name: &str, target: impl AsRef<Path>) {
        symlink(target, self.root().join(name)).unwrap();
    }
    fn fd(&self) -> OwnedFd {
        open_dir(&self.root()).unwrap()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn errno(r: io::Result<impl Sized>) -> Option<Errno> {
    r.err()
        .and_then(|e| e.raw_os_error())
        .map(Errno::from_raw_os_error)
}

/// `open` (openat2 here) and `walk` (the fallback) give the same answer for `rel`;
/// returns openat2's error, or the type opened.
fn both(t: &Tree, rel: &str) -> Result<FileType, Option<Errno>> {
    let root = t.fd();
    let a = open(root.as_fd(), Path::new(rel)).and_then(file_type);
    let b = walk(root.as_fd(), Path::new(rel)).and_then(file_type);
    let (ea, eb) = (
        a.as_ref().err().map(|e| e.raw_os_error()),
        b.as_ref().err().map(|e| e.raw_os_error()),
    );
    assert_eq!(ea, eb, "{rel}: openat2 {a:?} vs walk {b:?}");
    a.map_err(|e| e.raw_os_error().map(Errno::from_raw_os_error))
}

#[test]
fn plain_paths_open_to_what_is_there() {
    let t = Tree::new("plain");
    assert_eq!(both(&t, "real/b"), Ok(FileType::Directory));
    assert_eq!(both(&t, "./real/./b"), Ok(FileType::Directory));
    assert_eq!(both(&t, "file"), Ok(FileType::RegularFile));
    assert_eq!(both(&t, ""), Ok(FileType::Directory), "empty is the root");
    assert_eq!(both(&t, "missing"), Err(Some(Errno::NOENT)));
    assert_eq!(both(&t, "file/x"), Err(Some(Errno::NOTDIR)));
}

#[test]
fn every_symlink_is_refused_wherever_it_points() {
    let t = Tree::new("links");
    t.link("abs", "/");
    t.link("abs-out", t.outside());
    t.link("up", "../../../../../../../../..");
    t.link("up-out", "../outside");
    t.link("inside", "real");
    t.link("dangling", "nowhere");
    t.link("loop1", "loop2");
    t.link("loop2", "loop1");
    t.link("dev", "/dev/null");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        t.root().join("fifo"),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    t.link("to-fifo", "fifo");
    for rel in [
        "abs",
        "abs/etc",
        "abs-out",
        "abs-out/secret",
        "up",
        "up/etc",
        "up-out/secret",
        "inside",   // stays inside, refused all the same
        "inside/b", // a symlink in a middle component
        "dangling",
        "dangling/x",
        "loop1",
        "loop1/x",
        "dev",
        "to-fifo",
    ] {
        assert_eq!(both(&t, rel), Err(Some(Errno::LOOP)), "{rel}");
        assert!(is_escape(
            &open(t.fd().as_fd(), Path::new(rel)).unwrap_err()
        ));
    }
    // A FIFO itself opens at once (O_PATH never blocks), as what it is.
    assert_eq!(both(&t, "fifo"), Ok(FileType::Fifo));
}

#[test]
fn dotdot_and_absolute_paths_are_refused() {
    let t = Tree::new("dotdot");
    for rel in ["..", "../outside", "real/../../outside", "real/..", "/etc"] {
        let root = t.fd();
        for r in [
            open(root.as_fd(), Path::new(rel)),
            walk(root.as_fd(), Path::new(rel)),
            make_dirs(root.as_fd(), Path::new(rel), 0o755),
        ] {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{rel}: {e}");
        }
    }
}

#[test]
fn make_dirs_creates_with_exact_modes_and_follows_nothing() {
    let t = Tree::new("mkdirs");
    let root = t.fd();
    // 0777 survives the umask (022 for the tests, or anything else).
    let fd = make_dirs(root.as_fd(), Path::new("a/b/c"), 0o777).unwrap();
    assert_eq!(file_type(&fd).unwrap(), FileType::Directory);
    for d in ["a", "a/b", "a/b/c"] {
        let mode = std::fs::metadata(t.root().join(d))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o777, "{d}");
    }
    // Existing directories keep their mode.
    std::fs::set_permissions(t.root().join("a"), std::fs::Permissions::from_mode(0o700)).unwrap();
    make_dirs(root.as_fd(), Path::new("a/b/d"), 0o755).unwrap();
    let mode = std::fs::metadata(t.root().join("a"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o700);
    // Through a symlinked component: refused, nothing made outside.
    t.link("lnk", t.outside());
    t.link("dangling", t.outside().join("new"));
    for rel in ["lnk/new", "lnk", "dangling", "dangling/x"] {
        assert_eq!(
            errno(make_dirs(root.as_fd(), Path::new(rel), 0o755)),
            Some(Errno::LOOP),
            "{rel}"
        );
    }
    assert!(!t.outside().join("new").exists());
    assert_eq!(
        errno(make_dirs(root.as_fd(), Path::new("file/x"), 0o755)),
        Some(Errno::NOTDIR)
    );
}

#[test]
fn create_file_makes_or_opens_only_regular_files_beneath() {
    let t = Tree::new("create");
    let root = t.fd();
    let (fd, created) = create_file(root.as_fd(), Path::new("real/new"), 0o666).unwrap();
    assert!(created);
    assert_eq!(file_type(&fd).unwrap(), FileType::RegularFile);
    let mode = std::fs::metadata(t.root().join("real/new"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o666, "exact, whatever the umask");
    let (_, created) = create_file(root.as_fd(), Path::new("real/new"), 0o644).unwrap();
    assert!(!created, "an existing regular file is opened");
    t.link("lnk", t.outside());
    t.link("dangling", t.outside().join("planted"));
    t.link("to-secret", t.outside().join("secret"));
    for rel in ["lnk/planted", "dangling", "to-secret"] {
        assert_eq!(
            errno(create_file(root.as_fd(), Path::new(rel), 0o644)),
            Some(Errno::LOOP),
            "{rel}"
        );
    }
    assert!(!t.outside().join("planted").exists());
    assert_eq!(
        std::fs::read(t.outside().join("secret")).unwrap(),
        b"host data"
    );
    rustix::fs::mknodat(
        rustix::fs::CWD,
        t.root().join("fifo"),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let e = create_file(root.as_fd(), Path::new("fifo"), 0o644).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let e = create_file(root.as_fd(), Path::new("real"), 0o644).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert_eq!(
        errno(create_file(root.as_fd(), Path::new("missing/f"), 0o644)),
        Some(Errno::NOENT),
        "the directory must exist"
    );
}

#[test]
fn descriptions_name_the_trick() {
    assert!(describe(&Errno::LOOP.into()).contains("symlink"));
    assert!(describe(&Errno::NOENT.into()).contains("does not exist"));
    assert!(!is_escape(&Errno::NOENT.into()));
}

/// A pod swaps a middle component between a directory and a symlink out (atomically,
/// RENAME_EXCHANGE) as fast as it can while paths through it are resolved: no
/// resolution may ever land outside, and nothing may be created there.
#[test]
fn a_component_flipping_between_dir_and_symlink_never_leads_outside() {
    use std::os::unix::fs::MetadataExt;
    use std::sync::Arc;
    let t = Tree::new("race");
    std::fs::create_dir_all(t.root().join("a/b")).unwrap();
    t.link("l", t.outside());
    let outside_b = std::fs::metadata(t.outside().join("b")).unwrap().ino();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (root, stop) = (t.root(), stop.clone());
        std::thread::spawn(move || {
            let dir = open_dir(&root).unwrap();
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(&dir, "a", &dir, "l", rustix::fs::RenameFlags::EXCHANGE)
                    .unwrap();
                flips += 1;
            }
            flips
        })
    };
    let root = t.fd();
    let (mut inside, mut refused) = (0, 0);
    for i in 0..3000 {
        let r = match i % 3 {
            0 => open(root.as_fd(), Path::new("a/b")),
            1 => walk(root.as_fd(), Path::new("a/b")),
            _ => make_dirs(root.as_fd(), Path::new("a/b/made"), 0o755),
        };
        match r {
            Ok(fd) => {
                let st = rustix::fs::fstat(&fd).unwrap();
                assert_ne!(st.st_ino, outside_b, "resolved outside on try {i}");
                inside += 1;
            }
            Err(e) => {
                assert!(is_escape(&e) || e.kind() == io::ErrorKind::NotFound, "{e}");
                refused += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(!t.outside().join("b/made").exists(), "created outside");
    eprintln!("{flips} flips; {inside} resolved inside, {refused} refused");
    assert!(flips > 100, "the flipper ran ({flips} flips)");
}
