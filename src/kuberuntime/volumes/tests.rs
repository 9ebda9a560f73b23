// Over 500 lines: every case of volumes.rs (configMap, secret, projected, emptyDir, hostPath,
// subPath binds), sharing the fixtures below.
use super::*;
use crate::kuberuntime::env::NoToken;
use crate::model::pod::{
    ConfigMapVolumeSource, EmptyDirVolumeSource, HostPathVolumeSource, KeyToPath,
    SecretVolumeSource,
};
use crate::model::{ConfigMap, Secret};
use std::cell::RefCell;
use std::os::unix::fs::PermissionsExt;

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("tinylet-vol-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    /// Unmounts what the tests bound or mounted in pod directories, and removes the
    /// directory only when nothing is mounted in it any more.
    fn drop(&mut self) {
        for root in [self.0.clone(), self.0.join("pods")] {
            for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
                let _ = crate::kuberuntime::teardown::unmount_all(&e.path());
            }
        }
        let mounts = crate::kuberuntime::mountinfo::mount_points().unwrap_or_default();
        if crate::kuberuntime::mountinfo::mounted_below(&self.0, &mounts).is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The (device, inode) of a path, or of an opened fd.
fn id(p: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).unwrap();
    (m.dev(), m.ino())
}

fn fd_id(fd: &OwnedFd) -> (u64, u64) {
    let st = rustix::fs::fstat(fd).unwrap();
    (st.st_dev, st.st_ino)
}

#[derive(Default)]
struct Objs {
    cm: RefCell<Option<ConfigMap>>,
    secret: Option<Secret>,
}

impl Objects for Objs {
    fn configmap(&self, _: &Pod, name: &str) -> Option<ConfigMap> {
        self.cm.borrow().clone().filter(|c| c.metadata.name == name)
    }
    fn secret(&self, _: &Pod, name: &str) -> Option<Secret> {
        self.secret.clone().filter(|s| s.metadata.name == name)
    }
}

fn pod(volumes: Vec<Volume>) -> Pod {
    let mut p = Pod::default();
    p.metadata.uid = "uid-1".into();
    p.metadata.namespace = "ns".into();
    p.spec.volumes = volumes;
    p
}

fn vol(name: &str) -> Volume {
    Volume {
        name: name.into(),
        ..Default::default()
    }
}

fn cm(data: &[(&str, &str)]) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = "cfg".into();
    for (k, v) in data {
        c.data.insert(k.to_string(), v.to_string());
    }
    c
}

/// Prefixes any pod may write.
fn writable(paths: &[PathBuf]) -> Vec<Allowance> {
    let entries: Vec<HostPathPrefix> = paths.iter().map(HostPathPrefix::plain).collect();
    host_paths::for_pod(&entries, false, "ns")
}

#[test]
fn host_path_prefixes_and_escapes() {
    let s = Scratch::new("hp");
    let allowed = writable(&[s.0.join("data")]);
    std::fs::create_dir_all(s.0.join("data/app")).unwrap();
    std::fs::create_dir_all(s.0.join("secret")).unwrap();
    std::os::unix::fs::symlink(s.0.join("secret"), s.0.join("data/link")).unwrap();
    let ok = host_path(
        s.0.join("data/app").to_str().unwrap(),
        HostPathType::Directory,
        &allowed,
    )
    .unwrap()
    .0;
    assert_eq!(fd_id(&ok), id(&s.0.join("data/app")));
    // The prefix itself is the admin's: a symlink there is followed.
    std::os::unix::fs::symlink(s.0.join("data"), s.0.join("data-link")).unwrap();
    let via = host_path(
        s.0.join("data-link/app").to_str().unwrap(),
        HostPathType::Directory,
        &writable(&[s.0.join("data-link")]),
    )
    .unwrap()
    .0;
    assert_eq!(fd_id(&via), id(&s.0.join("data/app")));
    // Below it nothing is: out, in the middle, or even staying inside.
    std::os::unix::fs::symlink("app", s.0.join("data/inside")).unwrap();
    std::os::unix::fs::symlink("../../../../../../..", s.0.join("data/up")).unwrap();
    for below in ["link", "link/x", "inside", "up/etc", "up"] {
        let e = host_path(
            s.0.join("data").join(below).to_str().unwrap(),
            HostPathType::Unset,
            &allowed,
        )
        .unwrap_err();
        assert_eq!(e.reason, "HostPathNotAllowed", "{below}: {e}");
        assert!(e.message.contains("symlink"), "{below}: {e}");
    }
    assert!(
        !s.0.join("secret/x").exists(),
        "nothing made through a link"
    );
    let dotdot = host_path(
        s.0.join("data/../secret").to_str().unwrap(),
        HostPathType::Unset,
        &allowed,
    )
    .unwrap_err();
    assert_eq!(dotdot.reason, "HostPathNotAllowed");
    assert!(
        dotdot.message.contains("not under an allowed prefix"),
        "{dotdot}"
    );
    let link = host_path(
        s.0.join("data/link").to_str().unwrap(),
        HostPathType::Unset,
        &allowed,
    )
    .unwrap_err();
    assert_eq!(link.reason, "HostPathNotAllowed");
    let sibling = host_path(
        s.0.join("data-evil").to_str().unwrap(),
        HostPathType::Unset,
        &allowed,
    )
    .unwrap_err();
    assert_eq!(sibling.reason, "HostPathNotAllowed");
    let none = host_path("/etc", HostPathType::Unset, &[]).unwrap_err();
    assert!(
        none.message.contains("none are allowed for this pod"),
        "{none}"
    );
    assert!(host_path("rel/path", HostPathType::Unset, &allowed).is_err());
}

#[test]
fn host_path_types() {
    let s = Scratch::new("hpt");
    let allowed = writable(std::slice::from_ref(&s.0));
    let out = Scratch::new("hpt-out");
    std::os::unix::fs::symlink(&out.0, s.0.join("lnk")).unwrap();
    // ...OrCreate through a symlinked parent, or onto a dangling symlink: refused,
    // nothing created outside.
    std::os::unix::fs::symlink(out.0.join("dangling"), s.0.join("dangling")).unwrap();
    for (rel, kind) in [
        ("lnk/newdir", HostPathType::DirectoryOrCreate),
        ("lnk/a/b", HostPathType::DirectoryOrCreate),
        ("lnk/newfile", HostPathType::FileOrCreate),
        ("dangling", HostPathType::FileOrCreate),
        ("dangling", HostPathType::DirectoryOrCreate),
        ("lnk/unset", HostPathType::Unset),
    ] {
        let e = host_path(s.0.join(rel).to_str().unwrap(), kind, &allowed).unwrap_err();
        assert_eq!(e.reason, "HostPathNotAllowed", "{rel}: {e}");
    }
    assert_eq!(
        std::fs::read_dir(&out.0).unwrap().count(),
        0,
        "nothing outside"
    );
    let d = s.0.join("made/dir");
    host_path(
        d.to_str().unwrap(),
        HostPathType::DirectoryOrCreate,
        &allowed,
    )
    .unwrap();
    assert!(d.is_dir());
    let made = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!((made(&s.0.join("made")), made(&d)), (0o755, 0o755));
    let f = s.0.join("file");
    host_path(f.to_str().unwrap(), HostPathType::FileOrCreate, &allowed).unwrap();
    assert!(f.is_file());
    assert_eq!(made(&f), 0o644);
    let e = host_path(
        s.0.join("nodir/file").to_str().unwrap(),
        HostPathType::FileOrCreate,
        &allowed,
    )
    .unwrap_err();
    assert!(e.message.contains("parent directory does not exist"), "{e}");
    // An unset type makes a missing path a directory (containerd would), beneath.
    host_path(
        s.0.join("u/v").to_str().unwrap(),
        HostPathType::Unset,
        &allowed,
    )
    .unwrap();
    assert!(s.0.join("u/v").is_dir());
    let e = host_path(f.to_str().unwrap(), HostPathType::Directory, &allowed).unwrap_err();
    assert!(e.message.contains("is not a Directory"), "{e}");
    assert!(host_path(
        s.0.join("absent").to_str().unwrap(),
        HostPathType::File,
        &allowed
    )
    .is_err());
}

#[test]
fn configmap_projection_writes_only_changes() {
    let s = Scratch::new("cm");
    let mut v = vol("conf");
    v.config_map = Some(ConfigMapVolumeSource {
        name: "cfg".into(),
        ..Default::default()
    });
    let p = pod(vec![v]);
    let objs = Objs {
        cm: RefCell::new(Some(cm(&[("a.conf", "one"), ("b.conf", "two")]))),
        secret: None,
    };
    prepare(&p, &s.0, &[], &objs).unwrap();
    let dir = volume_dir(&s.0, &p, "configmap", "conf");
    assert_eq!(std::fs::read_to_string(dir.join("a.conf")).unwrap(), "one");
    *objs.cm.borrow_mut() = Some(cm(&[("a.conf", "uno")]));
    let writes = writes_during(&dir, || prepare(&p, &s.0, &[], &objs).unwrap());
    assert!(
        !writes.is_empty(),
        "a change is written (and seen by the watch)"
    );
    assert_eq!(std::fs::read_to_string(dir.join("a.conf")).unwrap(), "uno");
    assert!(
        !dir.join("b.conf").exists(),
        "a key that is gone is removed"
    );
    *objs.cm.borrow_mut() = Some(cm(&[("a.conf", "uno"), ("b.conf", "two")]));
    prepare(&p, &s.0, &[], &objs).unwrap();
    let writes = writes_during(&dir, || prepare(&p, &s.0, &[], &objs).unwrap());
    assert_eq!(
        writes,
        Vec::<String>::new(),
        "unchanged content is not rewritten"
    );
}

/// Every change made to the entries of `dir` while `f` runs (see
/// [`crate::kuberuntime::inotify_changes::during`]).
fn writes_during(dir: &Path, f: impl FnOnce()) -> Vec<String> {
    crate::kuberuntime::inotify_changes::during(&[dir.to_path_buf()], f)
}

#[test]
fn secret_projection_is_closed_to_the_host_and_items_select_keys() {
    let s = Scratch::new("sec");
    let mut v = vol("creds");
    v.secret = Some(SecretVolumeSource {
        secret_name: "s".into(),
        items: vec![KeyToPath {
            key: "token".into(),
            path: "sub/tok".into(),
            mode: Some(0o400),
        }],
        ..Default::default()
    });
    let mut secret = Secret::default();
    secret.metadata.name = "s".into();
    secret.string_data.insert("token".into(), "t0k".into());
    secret.string_data.insert("other".into(), "x".into());
    let objs = Objs {
        cm: RefCell::new(None),
        secret: Some(secret),
    };
    let p = pod(vec![v]);
    prepare(&p, &s.0, &[], &objs).unwrap();
    let dir = volume_dir(&s.0, &p, "secret", "creds");
    assert_eq!(std::fs::read_to_string(dir.join("sub/tok")).unwrap(), "t0k");
    assert!(
        tmpfs::is_mount_point(&dir).unwrap(),
        "secrets live on a tmpfs"
    );
    assert!(!dir.join("other").exists());
    // Readable by a non-root container (the files' own modes decide); the plugin
    // directory above is closed to host users.
    let mode_of = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode_of(&dir), 0o755);
    assert_eq!(mode_of(dir.parent().unwrap()), 0o700);
    assert_eq!(
        std::fs::metadata(dir.join("sub/tok"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o400
    );
}

#[test]
fn missing_objects_and_bad_items() {
    let s = Scratch::new("miss");
    let mut v = vol("conf");
    v.config_map = Some(ConfigMapVolumeSource {
        name: "cfg".into(),
        ..Default::default()
    });
    let e = prepare(&pod(vec![v.clone()]), &s.0, &[], &Objs::default()).unwrap_err();
    assert_eq!(e.message, "configmap \"cfg\" not found");
    v.config_map.as_mut().unwrap().optional = Some(true);
    prepare(&pod(vec![v.clone()]), &s.0, &[], &Objs::default()).unwrap();
    v.config_map.as_mut().unwrap().items = vec![KeyToPath {
        key: "a".into(),
        path: "../x".into(),
        mode: None,
    }];
    let objs = Objs {
        cm: RefCell::new(Some(cm(&[("a", "1")]))),
        secret: None,
    };
    assert!(prepare(&pod(vec![v]), &s.0, &[], &objs)
        .unwrap_err()
        .message
        .contains("without '..'"));
}

#[test]
fn mounts_for_each_kind() {
    let s = Scratch::new("mnt");
    let (pods, host) = (s.0.join("pods"), s.0.join("host"));
    std::fs::create_dir_all(&host).unwrap();
    std::fs::write(host.join("h"), "on the host").unwrap();
    let mut e = vol("scratch");
    e.empty_dir = Some(EmptyDirVolumeSource::default());
    let mut h = vol("host");
    h.host_path = Some(HostPathVolumeSource {
        path: host.to_string_lossy().into_owned(),
        type_: HostPathType::Directory,
    });
    let mut c = vol("conf");
    c.config_map = Some(ConfigMapVolumeSource {
        name: "cfg".into(),
        ..Default::default()
    });
    let p = pod(vec![e, h, c]);
    let ctr = Container {
        name: "app".into(),
        volume_mounts: vec![
            VolumeMount {
                name: "scratch".into(),
                mount_path: "/tmp/s".into(),
                ..Default::default()
            },
            VolumeMount {
                name: "host".into(),
                mount_path: "/h".into(),
                read_only: true,
                ..Default::default()
            },
            VolumeMount {
                name: "conf".into(),
                mount_path: "/etc/app".into(),
                ..Default::default()
            },
            VolumeMount {
                name: "scratch".into(),
                mount_path: "/sub".into(),
                sub_path: "part".into(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let objs = Objs {
        cm: RefCell::new(Some(cm(&[("a", "1")]))),
        secret: None,
    };
    let allowed = &[HostPathPrefix::plain(&host)];
    prepare(&p, &pods, allowed, &objs).unwrap();
    let ms = mounts(
        &p,
        &ctr,
        &pods,
        allowed,
        &mut Env::default(),
        &Objs::default(),
    )
    .unwrap();
    assert_eq!(ms.len(), 4);
    assert!(ms[0].host_path.ends_with("kubernetes.io~empty-dir/scratch") && !ms[0].readonly);
    // The hostPath and the subPath reach containerd as binds of the opened objects.
    let bound = pods.join("uid-1/volume-subpaths");
    assert_eq!(Path::new(&ms[1].host_path), bound.join("host/app/1"));
    assert!(ms[1].readonly);
    assert_eq!(
        std::fs::read_to_string(bound.join("host/app/1/h")).unwrap(),
        "on the host"
    );
    assert!(ms[2].readonly, "configMap volumes are read-only");
    assert_eq!(Path::new(&ms[3].host_path), bound.join("scratch/app/3"));
    let part = volume_dir(&pods, &p, "empty-dir", "scratch").join("part");
    assert_eq!(id(Path::new(&ms[3].host_path)), id(&part));
    // Making the config again rebinds (no stacked mounts).
    mounts(
        &p,
        &ctr,
        &pods,
        allowed,
        &mut Env::default(),
        &Objs::default(),
    )
    .unwrap();
    let unmounted = crate::kuberuntime::teardown::unmount_all(&pods.join("uid-1")).unwrap();
    assert_eq!(unmounted.len(), 2, "{unmounted:?}");
    let refused = mounts(&p, &ctr, &pods, &[], &mut Env::default(), &Objs::default()).unwrap_err();
    assert_eq!(refused.reason, "HostPathNotAllowed");
}

fn host_vol(name: &str, path: &Path, type_: HostPathType) -> Volume {
    let mut v = vol(name);
    v.host_path = Some(HostPathVolumeSource {
        path: path.to_string_lossy().into_owned(),
        type_,
    });
    v
}

/// A cluster pod: a plain prefix is mounted read-only whatever its volumeMount says,
/// and nothing is made in it (nor a subPath); a `{namespace}` prefix marked writable
/// is the pod's namespace's own directory (made in its parent), writable, while
/// another namespace's is out of reach; an entry for local pods is not the cluster's.
#[test]
fn cluster_pods_read_plain_prefixes_and_write_their_namespace_directory() {
    use crate::config::host_paths::PodSource;
    let s = Scratch::new("hpns");
    let (pods, shared, tenants) = (s.0.join("pods"), s.0.join("shared"), s.0.join("tenants"));
    let certs = s.0.join("certs");
    for d in [shared.join("d"), tenants.join("other"), certs.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    let allowed = vec![
        HostPathPrefix::plain(&shared),
        HostPathPrefix {
            path_prefix: tenants.join("{namespace}"),
            read_only: Some(false),
            source: Some(PodSource::Cluster),
        },
        HostPathPrefix {
            path_prefix: certs.clone(),
            read_only: Some(true),
            source: Some(PodSource::Local),
        },
    ];
    let mut p = pod(vec![
        host_vol("shared", &shared.join("d"), HostPathType::Directory),
        host_vol(
            "mine",
            &tenants.join("ns/data"),
            HostPathType::DirectoryOrCreate,
        ),
    ]);
    p.metadata
        .annotations
        .insert(crate::model::pod::CONFIG_SOURCE.into(), "api".into());
    let mount = |name: &str, sub: &str| VolumeMount {
        name: name.into(),
        mount_path: format!("/{name}"),
        sub_path: sub.into(),
        ..Default::default()
    };
    let ctr = Container {
        name: "app".into(),
        volume_mounts: vec![mount("shared", ""), mount("mine", "")],
        ..Default::default()
    };
    prepare(&p, &pods, &allowed, &Objs::default()).unwrap();
    assert!(
        tenants.join("ns/data").is_dir(),
        "made in the namespace's directory"
    );
    let ms = mounts(
        &p,
        &ctr,
        &pods,
        &allowed,
        &mut Env::default(),
        &Objs::default(),
    )
    .unwrap();
    assert!(
        ms[0].readonly,
        "a plain prefix is read-only for the cluster"
    );
    assert!(!ms[1].readonly, "a prefix marked writable");
    let sub = Container {
        volume_mounts: vec![mount("shared", "new")],
        ..ctr.clone()
    };
    let e = mounts(
        &p,
        &sub,
        &pods,
        &allowed,
        &mut Env::default(),
        &Objs::default(),
    );
    assert!(
        e.is_err() && !shared.join("d/new").exists(),
        "no subPath made"
    );
    crate::kuberuntime::teardown::unmount_all(&pods.join("uid-1")).unwrap();
    for (v, reason) in [
        (
            host_vol("x", &shared.join("new"), HostPathType::DirectoryOrCreate),
            Reason::CreateContainerConfigError,
        ),
        (
            host_vol("x", &tenants.join("other"), HostPathType::Directory),
            Reason::HostPathNotAllowed,
        ),
        (
            host_vol("x", &tenants.join("ns/../other"), HostPathType::Directory),
            Reason::HostPathNotAllowed,
        ),
        (
            host_vol("x", &certs, HostPathType::Directory),
            Reason::HostPathNotAllowed,
        ),
    ] {
        let mut q = p.clone();
        q.spec.volumes = vec![v];
        let e = prepare(&q, &pods, &allowed, &Objs::default()).unwrap_err();
        assert_eq!(e.reason, reason, "{e}");
    }
    assert!(
        !shared.join("new").exists(),
        "nothing made in a read-only prefix"
    );
    // The owner's pod: the plain prefix is writable, the certificates read-only.
    let mut local = pod(vec![
        host_vol("shared", &shared.join("d"), HostPathType::Directory),
        host_vol("mine", &certs, HostPathType::Directory),
    ]);
    local.metadata.uid = "uid-2".into();
    let ms = mounts(
        &local,
        &ctr,
        &pods,
        &allowed,
        &mut Env::default(),
        &Objs::default(),
    )
    .unwrap();
    assert!(!ms[0].readonly && ms[1].readonly);
    crate::kuberuntime::teardown::unmount_all(&pods.join("uid-2")).unwrap();
}

/// Claims as a node sees them: bound to a directory, or not yet.
struct ClaimObjs(Option<crate::kuberuntime::env::BoundVolume>);

impl Objects for ClaimObjs {
    fn configmap(&self, _: &Pod, _: &str) -> Option<ConfigMap> {
        None
    }
    fn secret(&self, _: &Pod, _: &str) -> Option<Secret> {
        None
    }
    fn claim(
        &self,
        _: &Pod,
        claim: &str,
    ) -> Result<crate::kuberuntime::env::BoundVolume, SyncError> {
        self.0.clone().ok_or_else(|| {
            SyncError::new(
                Reason::ContainerCreating,
                format!("claim {claim} not bound"),
            )
        })
    }
}

/// A persistentVolumeClaim's bound volume is mounted as a hostPath would be: below
/// `allowedHostPaths` only, read-only when the claim says so, and a claim not bound
/// yet leaves the pod waiting.
#[test]
fn a_claim_mounts_its_bound_volume_like_a_host_path() {
    let s = Scratch::new("pvc");
    let (pods, disks) = (s.0.join("pods"), s.0.join("disks"));
    std::fs::create_dir_all(disks.join("pv1")).unwrap();
    std::fs::write(disks.join("pv1/state"), "kept").unwrap();
    let mut v = vol("data");
    v.persistent_volume_claim = Some(crate::model::pod::PersistentVolumeClaimVolumeSource {
        claim_name: "www-web-0".into(),
        read_only: false,
    });
    let p = pod(vec![v.clone()]);
    let ctr = Container {
        name: "app".into(),
        volume_mounts: vec![VolumeMount {
            name: "data".into(),
            mount_path: "/data".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let bound = ClaimObjs(Some(crate::kuberuntime::env::BoundVolume {
        volume_name: "pv1".into(),
        path: disks.join("pv1").to_string_lossy().into_owned(),
        host_path_type: HostPathType::Directory,
        node_affinity: None,
    }));
    let allowed = &[HostPathPrefix::plain(&disks)];
    prepare(&p, &pods, allowed, &bound).unwrap();
    let ms = mounts(&p, &ctr, &pods, allowed, &mut Env::default(), &bound).unwrap();
    assert!(!ms[0].readonly);
    assert_eq!(
        std::fs::read_to_string(Path::new(&ms[0].host_path).join("state")).unwrap(),
        "kept"
    );
    let mut ro = v;
    ro.persistent_volume_claim.as_mut().unwrap().read_only = true;
    let p_ro = pod(vec![ro]);
    let ms = mounts(&p_ro, &ctr, &pods, allowed, &mut Env::default(), &bound).unwrap();
    assert!(ms[0].readonly, "the claim's readOnly");
    crate::kuberuntime::teardown::unmount_all(&pods.join("uid-1")).unwrap();
    let refused = prepare(&p, &pods, &[], &bound).unwrap_err();
    assert_eq!(refused.reason, "HostPathNotAllowed");
    let waits = prepare(&p, &pods, allowed, &ClaimObjs(None)).unwrap_err();
    assert_eq!(waits.reason, Reason::ContainerCreating);
    assert!(waits.message.contains("www-web-0"), "{}", waits.message);
}

/// Every way out of a volume through a subPath: refused with a message naming the
/// volume mount, the container and the symlink; a plain subPath (and a subPathExpr)
/// binds the directory inside.
#[test]
fn sub_path_escapes_are_refused_for_every_volume_kind() {
    let s = Scratch::new("subesc");
    let (pods, host, out) = (s.0.join("pods"), s.0.join("host"), s.0.join("out"));
    std::fs::create_dir_all(out.join("b")).unwrap();
    std::fs::create_dir_all(host.join("hp")).unwrap();
    let mut e = vol("e");
    e.empty_dir = Some(EmptyDirVolumeSource::default());
    let mut h = vol("h");
    h.host_path = Some(HostPathVolumeSource {
        path: host.join("hp").to_string_lossy().into_owned(),
        type_: HostPathType::Directory,
    });
    let p = pod(vec![e, h]);
    let objs = Objs::default();
    let allowed = &[HostPathPrefix::plain(&host)];
    prepare(&p, &pods, allowed, &objs).unwrap();
    let edir = volume_dir(&pods, &p, "empty-dir", "e");
    for root in [edir.clone(), host.join("hp")] {
        let ln = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap()
        };
        ln(Path::new("/"), "esc");
        ln(&out, "mid");
        ln(Path::new("../../../../../../../../.."), "up");
        ln(&out.join("new"), "dangling");
        std::fs::create_dir_all(root.join("real/b")).unwrap();
        ln(Path::new("real"), "inside");
    }
    let mount_of = |volume: &str, sub: &str| {
        let c = Container {
            name: "app".into(),
            volume_mounts: vec![VolumeMount {
                name: volume.into(),
                mount_path: "/m".into(),
                sub_path: sub.into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        mounts(
            &p,
            &c,
            &pods,
            allowed,
            &mut Env::default(),
            &Objs::default(),
        )
    };
    for volume in ["e", "h"] {
        for sub in [
            "esc",
            "esc/etc",
            "mid/b",
            "up",
            "up/etc",
            "dangling",
            "dangling/x",
            "inside/b",
        ] {
            let err = mount_of(volume, sub).unwrap_err();
            assert_eq!(
                err.reason, "CreateContainerConfigError",
                "{volume} {sub}: {err}"
            );
            assert!(
                err.message.starts_with(&format!(
                    "failed to prepare subPath for volumeMount {volume:?} of container \"app\": subPath {sub:?} "
                )) && err.message.contains("symlink"),
                "{volume} {sub}: {err}"
            );
        }
        let ok = mount_of(volume, "real/b").unwrap();
        assert_eq!(ok.len(), 1);
        assert!(!out.join("new").exists());
    }
    assert_eq!(
        id(Path::new(&mount_of("e", "real/b").unwrap()[0].host_path)),
        id(&edir.join("real/b"))
    );
    // subPathExpr: expanded from the container's env, then resolved the same way.
    let c = Container {
        name: "app".into(),
        volume_mounts: vec![VolumeMount {
            name: "e".into(),
            mount_path: "/m".into(),
            sub_path_expr: "logs/$(POD)".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let env_of = |value: &str| {
        let mut env = Env::default();
        env.set("POD".into(), value.into()).unwrap();
        env
    };
    let ms = mounts(
        &p,
        &c,
        &pods,
        allowed,
        &mut env_of("web-1"),
        &Objs::default(),
    )
    .unwrap();
    assert!(edir.join("logs/web-1").is_dir());
    assert_eq!(
        id(Path::new(&ms[0].host_path)),
        id(&edir.join("logs/web-1"))
    );
    let err = mounts(
        &p,
        &c,
        &pods,
        allowed,
        &mut env_of("../../.."),
        &Objs::default(),
    )
    .unwrap_err();
    assert!(
        err.message.contains("must be relative without '..'"),
        "{err}"
    );
}

#[test]
fn empty_dir_parents_are_0755_and_the_volume_0777() {
    let s = Scratch::new("modes");
    let mut e = vol("scratch");
    e.empty_dir = Some(EmptyDirVolumeSource::default());
    let p = pod(vec![e]);
    prepare(&p, &s.0, &[], &Objs::default()).unwrap();
    let mode = |rel: &str| {
        std::fs::metadata(s.0.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("uid-1"), 0o755);
    assert_eq!(mode("uid-1/volumes"), 0o755);
    assert_eq!(mode("uid-1/volumes/kubernetes.io~empty-dir"), 0o755);
    assert_eq!(mode("uid-1/volumes/kubernetes.io~empty-dir/scratch"), 0o777);
}

/// Needs the right to mount (root, as the agent).
#[test]
fn secret_volume_is_a_tmpfs_and_leaves_nothing_on_disk() {
    let s = Scratch::new("sectmpfs");
    let mut v = vol("creds");
    v.secret = Some(SecretVolumeSource {
        secret_name: "s".into(),
        ..Default::default()
    });
    let mut secret = Secret::default();
    secret.metadata.name = "s".into();
    secret.string_data.insert("token".into(), "t0k".into());
    let objs = Objs {
        cm: RefCell::new(None),
        secret: Some(secret),
    };
    let p = pod(vec![v]);
    let dir = volume_dir(&s.0, &p, "secret", "creds");
    // What an older agent left on flash goes before the tmpfs is mounted over it.
    std::fs::create_dir_all(dir.join("old")).unwrap();
    std::fs::write(dir.join("token"), "old copy on flash").unwrap();
    prepare(&p, &s.0, &[], &objs).unwrap();
    assert!(tmpfs::is_mount_point(&dir).unwrap());
    assert_eq!(std::fs::read_to_string(dir.join("token")).unwrap(), "t0k");
    prepare(&p, &s.0, &[], &objs).unwrap();
    let done = crate::kuberuntime::teardown::unmount_all(&s.0.join("uid-1")).unwrap();
    assert_eq!(done, std::slice::from_ref(&dir));
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing on disk"
    );
}

/// [`Objs`] with a service-account token provider: without a token, `why` (`None`
/// answers as for a local pod).
#[derive(Default)]
struct WithToken {
    objs: Objs,
    token: RefCell<Option<Vec<u8>>>,
    why: RefCell<Option<NoToken>>,
}

impl Objects for WithToken {
    fn configmap(&self, pod: &Pod, name: &str) -> Option<ConfigMap> {
        self.objs.configmap(pod, name)
    }
    fn secret(&self, pod: &Pod, name: &str) -> Option<Secret> {
        self.objs.secret(pod, name)
    }
    fn service_account_token(
        &self,
        pod: &Pod,
        source: &crate::model::projected::ServiceAccountTokenProjection,
    ) -> Result<Vec<u8>, crate::kuberuntime::env::NoToken> {
        match (self.token.borrow().clone(), self.why.borrow().clone()) {
            (Some(t), _) => Ok(t),
            (None, Some(why)) => Err(why),
            (None, None) => self.objs.service_account_token(pod, source),
        }
    }
}

/// A pod with labels, a container with a CPU limit, and the volume `v` (JSON).
fn pod_with_volume(v: serde_json::Value) -> Pod {
    let mut p = pod(vec![serde_json::from_value(v).unwrap()]);
    p.metadata.name = "web".into();
    p.metadata.labels.insert("app".into(), "web".into());
    p.spec.service_account_name = "default".into();
    let mut c = Container {
        name: "app".into(),
        ..Default::default()
    };
    let cpu = crate::model::Quantity::parse("250m").unwrap();
    c.resources.limits.insert("cpu".into(), cpu);
    p.spec.containers.push(c);
    p
}

fn file_mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// The shape the API server gives every pod of a default cluster, plus a secret source
/// and more downwardAPI items.
fn api_access() -> serde_json::Value {
    serde_json::json!({
        "name": "kube-api-access-x1",
        "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "cfg", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"secret": {"name": "s", "items": [{"key": "pw", "path": "sec/pw", "mode": 256}]}},
            {"downwardAPI": {"items": [
                {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                 "path": "namespace"},
                {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"},
                 "path": "labels"},
                {"resourceFieldRef": {"containerName": "app", "resource": "limits.cpu",
                 "divisor": "1m"}, "path": "cpu"}
            ]}}
        ]}
    })
}

fn api_objects() -> WithToken {
    let mut secret = Secret::default();
    secret.metadata.name = "s".into();
    secret.string_data.insert("pw".into(), "hunter2".into());
    WithToken {
        objs: Objs {
            cm: RefCell::new(Some(cm(&[("ca.crt", "CERT"), ("other", "x")]))),
            secret: Some(secret),
        },
        token: RefCell::new(Some(b"tok-1".to_vec())),
        why: RefCell::new(None),
    }
}

/// Needs the right to mount (root, as the agent).
#[test]
fn projected_volume_shows_every_source_on_a_tmpfs() {
    let s = Scratch::new("proj");
    let p = pod_with_volume(api_access());
    let objs = api_objects();
    prepare(&p, &s.0, &[], &objs).unwrap();
    let dir = volume_dir(&s.0, &p, "projected", "kube-api-access-x1");
    assert!(tmpfs::is_mount_point(&dir).unwrap(), "on a tmpfs");
    assert_eq!(file_mode(&dir), 0o755, "non-root containers read the token");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    assert_eq!(read("token"), "tok-1");
    assert_eq!(read("ca.crt"), "CERT");
    assert!(!dir.join("other").exists(), "only the items");
    assert_eq!(read("sec/pw"), "hunter2");
    assert_eq!(read("namespace"), "ns");
    assert_eq!(read("labels"), "app=\"web\"");
    assert_eq!(read("cpu"), "250");
    assert_eq!(file_mode(&dir.join("token")), 0o644);
    assert_eq!(file_mode(&dir.join("sec/pw")), 0o400);
    // Mounted read-only, whatever the mount says; a subPath reaches a file through
    // ..data (the top-level names are links, never followed).
    let ctr = Container {
        name: "app".into(),
        volume_mounts: vec![
            VolumeMount {
                name: "kube-api-access-x1".into(),
                mount_path: "/var/run/secrets/kubernetes.io/serviceaccount".into(),
                ..Default::default()
            },
            VolumeMount {
                name: "kube-api-access-x1".into(),
                mount_path: "/ns".into(),
                sub_path: "namespace".into(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let ms = mounts(&p, &ctr, &s.0, &[], &mut Env::default(), &Objs::default()).unwrap();
    assert!(ms.iter().all(|m| m.readonly), "{ms:?}");
    assert_eq!(Path::new(&ms[0].host_path), dir);
    assert_eq!(std::fs::read_to_string(&ms[1].host_path).unwrap(), "ns");
    let done = crate::kuberuntime::teardown::unmount_all(&s.0.join("uid-1")).unwrap();
    assert!(done.contains(&dir), "{done:?}");
    assert!(!tmpfs::is_mount_point(&dir).unwrap());
}

/// Needs the right to mount (root, as the agent).
#[test]
fn projected_files_are_rewritten_only_when_they_change() {
    let s = Scratch::new("projw");
    let mut p = pod_with_volume(api_access());
    let objs = api_objects();
    prepare(&p, &s.0, &[], &objs).unwrap();
    let dir = volume_dir(&s.0, &p, "projected", "kube-api-access-x1");
    let steady = writes_during(&dir, || {
        for _ in 0..3 {
            prepare(&p, &s.0, &[], &objs).unwrap();
        }
    });
    assert_eq!(
        steady,
        Vec::<String>::new(),
        "nothing written at steady state"
    );
    // A new token, a changed label: each is one switch of ..data.
    *objs.token.borrow_mut() = Some(b"tok-2".to_vec());
    let w = writes_during(&dir, || prepare(&p, &s.0, &[], &objs).unwrap());
    assert!(w.iter().any(|e| e.contains("MOVED_TO")), "{w:?}");
    assert_eq!(std::fs::read_to_string(dir.join("token")).unwrap(), "tok-2");
    p.metadata.labels.insert("tier".into(), "edge".into());
    prepare(&p, &s.0, &[], &objs).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("labels")).unwrap(),
        "app=\"web\"\ntier=\"edge\""
    );
    let w = writes_during(&dir, || prepare(&p, &s.0, &[], &objs).unwrap());
    assert_eq!(w, Vec::<String>::new());
}

/// Needs the right to mount (root, as the agent). Tokens are the cluster's: uplink only.
#[cfg(feature = "uplink")]
#[test]
fn a_token_file_starts_empty_offline_and_is_kept_until_a_new_token() {
    let s = Scratch::new("tokkeep");
    let p = pod_with_volume(api_access());
    let objs = api_objects();
    let dir = volume_dir(&s.0, &p, "projected", "kube-api-access-x1");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let no_token = |why: NoToken| {
        *objs.token.borrow_mut() = None;
        *objs.why.borrow_mut() = Some(why);
    };
    // The cluster is away and no token was ever held: the pod starts, its file empty.
    no_token(NoToken::Later);
    prepare(&p, &s.0, &[], &objs).unwrap();
    assert_eq!(read("token"), "");
    assert_eq!(read("ca.crt"), "CERT");
    // Just asked: a short wait; refused: a configuration error, naming the source.
    no_token(NoToken::Asked);
    let e = prepare(&p, &s.0, &[], &objs).unwrap_err();
    assert_eq!(e.reason, "ContainerCreating");
    let at = "volume \"kube-api-access-x1\": sources[0].serviceAccountToken: ";
    assert!(
        e.message
            .starts_with(&format!("{at}waiting for the cluster")),
        "{e}"
    );
    no_token(NoToken::Refused("HTTP 403 Forbidden: no".into()));
    let e = prepare(&p, &s.0, &[], &objs).unwrap_err();
    assert_eq!(e.reason, "CreateContainerConfigError");
    assert_eq!(e.message, format!("{at}HTTP 403 Forbidden: no"));
    // The token arrives: the file is updated in place.
    *objs.token.borrow_mut() = Some(b"tok-1".to_vec());
    let w = writes_during(&dir, || prepare(&p, &s.0, &[], &objs).unwrap());
    assert!(w.iter().any(|e| e.contains("MOVED_TO")), "{w:?}");
    assert_eq!(read("token"), "tok-1");
    // An agent restarted holds none: the token the volume shows is kept, unchanged.
    for why in [NoToken::Later, NoToken::Asked, NoToken::Refused("x".into())] {
        no_token(why.clone());
        let w = writes_during(&dir, || prepare(&p, &s.0, &[], &objs).unwrap());
        assert_eq!(w, Vec::<String>::new(), "{why:?}");
        assert_eq!(read("token"), "tok-1", "{why:?}");
    }
    let _ = crate::kuberuntime::teardown::unmount_all(&s.0.join("uid-1"));
}

#[test]
fn a_local_pod_has_no_token_and_waits_naming_the_volume() {
    let s = Scratch::new("notoken");
    let p = pod_with_volume(api_access());
    let objs = api_objects();
    *objs.token.borrow_mut() = None;
    let e = prepare(&p, &s.0, &[], &objs).unwrap_err();
    assert_eq!(e.reason, "CreateContainerConfigError");
    assert!(
        e.message.starts_with(
            "volume \"kube-api-access-x1\": sources[0].serviceAccountToken: no token for service account \"default\""
        ),
        "{e}"
    );
    // Missing objects and keys name their source too.
    let objs = api_objects();
    *objs.objs.cm.borrow_mut() = None;
    let e = prepare(&p, &s.0, &[], &objs).unwrap_err();
    assert_eq!(
        e.message,
        "volume \"kube-api-access-x1\": sources[1].configMap: configmap \"cfg\" not found"
    );
    *objs.objs.cm.borrow_mut() = Some(cm(&[("other", "x")]));
    let e = prepare(&p, &s.0, &[], &objs).unwrap_err();
    assert_eq!(
        e.message,
        "volume \"kube-api-access-x1\": sources[1].configMap: key \"ca.crt\" not found for projected path \"ca.crt\""
    );
    let _ = crate::kuberuntime::teardown::unmount_all(&s.0.join("uid-1"));
}

/// Needs the right to mount (root, as the agent).
#[test]
fn downward_api_volume_follows_the_pod() {
    let s = Scratch::new("dapi");
    let mut p = pod_with_volume(serde_json::json!({
        "name": "info",
        "downwardAPI": {"defaultMode": 0o440, "items": [
            {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}, "path": "name"},
            {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['app']"},
             "path": "meta/app", "mode": 0o600}
        ]}
    }));
    let objs = WithToken::default();
    prepare(&p, &s.0, &[], &objs).unwrap();
    let dir = volume_dir(&s.0, &p, "downward-api", "info");
    assert!(tmpfs::is_mount_point(&dir).unwrap());
    assert_eq!(std::fs::read_to_string(dir.join("name")).unwrap(), "web");
    assert_eq!(
        std::fs::read_to_string(dir.join("meta/app")).unwrap(),
        "web"
    );
    assert_eq!(file_mode(&dir.join("name")), 0o440);
    assert_eq!(file_mode(&dir.join("meta/app")), 0o600);
    p.metadata.labels.insert("app".into(), "web-2".into());
    prepare(&p, &s.0, &[], &objs).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("meta/app")).unwrap(),
        "web-2"
    );
    let done = crate::kuberuntime::teardown::unmount_all(&s.0.join("uid-1")).unwrap();
    assert_eq!(done, std::slice::from_ref(&dir));
}

#[test]
fn a_configmap_sub_path_reaches_the_key_through_data() {
    let s = Scratch::new("cmsub");
    let mut v = vol("conf");
    v.config_map = Some(ConfigMapVolumeSource {
        name: "cfg".into(),
        ..Default::default()
    });
    let p = pod(vec![v]);
    let objs = Objs {
        cm: RefCell::new(Some(cm(&[("nginx.conf", "server {}")]))),
        secret: None,
    };
    prepare(&p, &s.0, &[], &objs).unwrap();
    let ctr = Container {
        name: "app".into(),
        volume_mounts: vec![VolumeMount {
            name: "conf".into(),
            mount_path: "/etc/nginx/nginx.conf".into(),
            sub_path: "nginx.conf".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ms = mounts(&p, &ctr, &s.0, &[], &mut Env::default(), &Objs::default()).unwrap();
    assert!(ms[0].readonly);
    assert_eq!(
        std::fs::read_to_string(&ms[0].host_path).unwrap(),
        "server {}"
    );
    let dir = volume_dir(&s.0, &p, "configmap", "conf");
    let data = atomic_writer::data_dir(&dir).unwrap();
    assert_eq!(
        id(Path::new(&ms[0].host_path)),
        id(&data.join("nginx.conf"))
    );
    let _ = crate::kuberuntime::teardown::unmount_all(&s.0.join("uid-1"));
}

/// The files, directories and emptyDir root of a pod with `fsGroup` belong to it, with
/// kubelet's group bits; a second sync changes nothing; a pod's later chmod of its
/// emptyDir stays.
#[test]
fn fs_group_owns_the_volumes_and_a_steady_state_changes_nothing() {
    use std::os::unix::fs::MetadataExt;
    let s = Scratch::new("fsgroup");
    let mut sec = vol("creds");
    sec.secret = Some(SecretVolumeSource {
        secret_name: "s".into(),
        items: vec![KeyToPath {
            key: "token".into(),
            path: "sub/tok".into(),
            mode: Some(0o400),
        }],
        ..Default::default()
    });
    let mut scratch = vol("scratch");
    scratch.empty_dir = Some(EmptyDirVolumeSource::default());
    let mut secret = Secret::default();
    secret.metadata.name = "s".into();
    secret.string_data.insert("token".into(), "t0k".into());
    let objs = Objs {
        cm: RefCell::new(None),
        secret: Some(secret),
    };
    let mut p = pod(vec![sec, scratch]);
    p.spec.security_context = Some(crate::model::pod::PodSecurityContext {
        fs_group: Some(4321),
        ..Default::default()
    });
    prepare(&p, &s.0, &[], &objs).unwrap();
    let owner = |p: &Path| {
        let m = std::fs::symlink_metadata(p).unwrap();
        (m.gid(), m.mode() & 0o7777)
    };
    let dir = volume_dir(&s.0, &p, "secret", "creds");
    let data = dir.join(crate::kuberuntime::atomic_writer::DATA_DIR);
    assert_eq!(owner(&dir), (4321, 0o2755));
    assert_eq!(owner(&data.join("sub")), (4321, 0o2755));
    assert_eq!(owner(&data.join("sub/tok")), (4321, 0o440));
    assert_eq!(owner(&data.join(".")), (4321, 0o2755));
    let empty = volume_dir(&s.0, &p, "empty-dir", "scratch");
    assert_eq!(owner(&empty), (4321, 0o2777));
    let changes = writes_during(&dir, || prepare(&p, &s.0, &[], &objs).unwrap());
    assert_eq!(
        changes,
        Vec::<String>::new(),
        "a steady state writes nothing"
    );
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o2770)).unwrap();
    prepare(&p, &s.0, &[], &objs).unwrap();
    assert_eq!(owner(&empty), (4321, 0o2770), "the pod's own mode stays");
    // Another fsGroup: the files are written again, owned by it.
    p.spec.security_context.as_mut().unwrap().fs_group = Some(99);
    prepare(&p, &s.0, &[], &objs).unwrap();
    let data = dir.join(crate::kuberuntime::atomic_writer::DATA_DIR);
    assert_eq!(owner(&data.join("sub/tok")), (99, 0o440));
    assert_eq!(owner(&dir), (99, 0o2755));
}
