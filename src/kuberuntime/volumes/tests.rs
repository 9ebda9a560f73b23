use super::*;
use crate::model::pod::{
    ConfigMapVolumeSource, EmptyDirVolumeSource, HostPathVolumeSource, SecretVolumeSource,
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
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Default)]
struct Objs {
    cm: RefCell<Option<ConfigMap>>,
    secret: Option<Secret>,
}

impl Objects for Objs {
    fn configmap(&self, _: &str, name: &str) -> Option<ConfigMap> {
        self.cm.borrow().clone().filter(|c| c.metadata.name == name)
    }
    fn secret(&self, _: &str, name: &str) -> Option<Secret> {
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

#[test]
fn host_path_prefixes_and_escapes() {
    let s = Scratch::new("hp");
    let allowed = vec![s.0.join("data")];
    std::fs::create_dir_all(s.0.join("data/app")).unwrap();
    std::fs::create_dir_all(s.0.join("secret")).unwrap();
    std::os::unix::fs::symlink(s.0.join("secret"), s.0.join("data/link")).unwrap();
    let ok = host_path(
        s.0.join("data/app").to_str().unwrap(),
        HostPathType::Directory,
        &allowed,
    )
    .unwrap();
    assert!(ok.ends_with("data/app"));
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
    assert!(none.message.contains("allowedHostPaths is empty"), "{none}");
    assert!(host_path("rel/path", HostPathType::Unset, &allowed).is_err());
}

#[test]
fn host_path_types() {
    let s = Scratch::new("hpt");
    let allowed = vec![s.0.clone()];
    let d = s.0.join("made/dir");
    host_path(
        d.to_str().unwrap(),
        HostPathType::DirectoryOrCreate,
        &allowed,
    )
    .unwrap();
    assert!(d.is_dir());
    let f = s.0.join("file");
    host_path(f.to_str().unwrap(), HostPathType::FileOrCreate, &allowed).unwrap();
    assert!(f.is_file());
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

/// Every change made to the entries of `dir` while `f` runs, as inotify reports them
/// (created, opened for writing, written, attributes, moved in or out, deleted): a
/// rewrite with the same content counts even when coarse timestamps would hide it.
fn writes_during(dir: &Path, f: impl FnOnce()) -> Vec<String> {
    use rustix::fs::inotify::{self, CreateFlags, Reader, WatchFlags};
    use std::mem::MaybeUninit;
    let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).unwrap();
    let mask = WatchFlags::CREATE
        | WatchFlags::MODIFY
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::ATTRIB
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE;
    inotify::add_watch(&fd, dir, mask).unwrap();
    f();
    let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
    let mut reader = Reader::new(&fd, &mut buf);
    let mut seen = Vec::new();
    loop {
        match reader.next() {
            Ok(ev) => seen.push(format!("{:?} {:?}", ev.events(), ev.file_name())),
            Err(rustix::io::Errno::AGAIN) => return seen,
            Err(e) => panic!("reading inotify events: {e}"),
        }
    }
}

#[test]
fn secret_projection_is_private_and_items_select_keys() {
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
    assert!(!dir.join("other").exists());
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
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
    let mut e = vol("scratch");
    e.empty_dir = Some(EmptyDirVolumeSource::default());
    let mut h = vol("host");
    h.host_path = Some(HostPathVolumeSource {
        path: s.0.to_string_lossy().into_owned(),
        type_: HostPathType::Directory,
    });
    let mut c = vol("conf");
    c.config_map = Some(ConfigMapVolumeSource {
        name: "cfg".into(),
        ..Default::default()
    });
    let p = pod(vec![e, h, c]);
    let ctr = Container {
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
    let ms = mounts(&p, &ctr, &s.0, std::slice::from_ref(&s.0)).unwrap();
    assert_eq!(ms.len(), 4);
    assert!(ms[0].host_path.ends_with("kubernetes.io~empty-dir/scratch") && !ms[0].readonly);
    assert!(ms[1].readonly);
    assert!(ms[2].readonly, "configMap volumes are read-only");
    assert!(ms[3].host_path.ends_with("scratch/part"));
    let refused = mounts(&p, &ctr, &s.0, &[]).unwrap_err();
    assert_eq!(refused.reason, "HostPathNotAllowed");
}
