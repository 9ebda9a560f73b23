//! The pod's own `/etc/hosts`, as kubelet manages it: `podsDir/UID/etc-hosts`, written
//! before a container is made and bind-mounted (read-write, as kubelet does) at
//! `/etc/hosts` in each of its containers. It holds localhost, the pod's IP with its
//! hostname (`HOSTNAME.SUBDOMAIN.NAMESPACE.svc.CLUSTERDOMAIN HOSTNAME` with a
//! `subdomain`), then `spec.hostAliases`. Not for a hostNetwork pod (it sees the
//! node's file, as under kubelet 1.20), nor for a container that mounts a volume at
//! `/etc/hosts` itself, nor before the pod has an IP.
//!
//! The pod's directory is the agent's (no pod can write it), and the file is opened
//! without following a symlink all the same; it is rewritten only when its content
//! differs from what it must hold (a container may have edited its copy: kubelet
//! rewrites it at every container start too), so a pod that restarts costs no write.

use super::pod_dir;
use super::sandbox::hostname;
use crate::cri::pb;
use crate::model::Pod;
use rustix::fs::{Mode, OFlags};
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

/// Where containers see the file.
pub const CONTAINER_PATH: &str = "/etc/hosts";
/// Its name in the pod's directory (kubelet's).
const FILE_NAME: &str = "etc-hosts";
/// Its first line: how readers (and the conformance tests) tell a managed file.
const HEADER: &str = "# Kubernetes-managed hosts file.\n";
/// The most of an existing file read to compare (real ones are a few hundred bytes).
const MAX_COMPARED: u64 = 64 << 10;

/// The mount of the pod's hosts file for container `c`, writing the file first when
/// it must change; `None` when the container gets no managed file (see the module doc).
pub fn mount(
    pods_dir: &Path,
    pod: &Pod,
    c: &crate::model::Container,
    pod_ip: &str,
    cluster_domain: &str,
) -> io::Result<Option<pb::Mount>> {
    let own = c
        .volume_mounts
        .iter()
        .any(|m| m.mount_path == CONTAINER_PATH);
    if pod.spec.host_network || pod_ip.is_empty() || own {
        return Ok(None);
    }
    let text = content(pod, pod_ip, cluster_domain);
    ensure(pods_dir, &pod.metadata.uid, text.as_bytes())?;
    let host = pods_dir.join(&pod.metadata.uid).join(FILE_NAME);
    Ok(Some(pb::Mount {
        container_path: CONTAINER_PATH.to_string(),
        host_path: host.to_string_lossy().into_owned(),
        ..Default::default()
    }))
}

/// The file's text for `pod` at `pod_ip`.
pub fn content(pod: &Pod, pod_ip: &str, cluster_domain: &str) -> String {
    let mut out = String::from(HEADER);
    out.push_str("127.0.0.1\tlocalhost\n");
    out.push_str("::1\tlocalhost ip6-localhost ip6-loopback\n");
    out.push_str("fe00::0\tip6-localnet\n");
    out.push_str("fe00::0\tip6-mcastprefix\n");
    out.push_str("fe00::1\tip6-allnodes\n");
    out.push_str("fe00::2\tip6-allrouters\n");
    let host = hostname(pod);
    if pod.spec.subdomain.is_empty() {
        out.push_str(&format!("{pod_ip}\t{host}\n"));
    } else {
        let ns = &pod.metadata.namespace;
        let sub = &pod.spec.subdomain;
        out.push_str(&format!(
            "{pod_ip}\t{host}.{sub}.{ns}.svc.{cluster_domain}\t{host}\n"
        ));
    }
    if !pod.spec.host_aliases.is_empty() {
        out.push_str("\n# Entries added by HostAliases.\n");
        for a in &pod.spec.host_aliases {
            out.push_str(&format!("{}\t{}\n", a.ip, a.hostnames.join("\t")));
        }
    }
    out
}

/// Makes `podsDir/UID/etc-hosts` hold exactly `want` (mode 0644), writing only when it
/// does not already.
fn ensure(pods_dir: &Path, uid: &str, want: &[u8]) -> io::Result<()> {
    let dir = pod_dir::open(pods_dir, uid)?;
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir, FILE_NAME, flags, Mode::from_raw_mode(0o644))?;
    if super::beneath::file_type(fd.as_fd())? != rustix::fs::FileType::RegularFile {
        return Err(io::Error::other(format!(
            "{FILE_NAME} is not a regular file"
        )));
    }
    let mut file = std::fs::File::from(fd);
    if same(&mut file, want)? {
        return Ok(());
    }
    use std::io::{Seek, Write};
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(want)?;
    rustix::fs::fchmod(file.as_fd(), Mode::from_raw_mode(0o644))?;
    Ok(())
}

/// Whether `file` holds exactly `want`.
fn same(file: &mut std::fs::File, want: &[u8]) -> io::Result<bool> {
    use std::io::Read;
    if file.metadata()?.len() != want.len() as u64 {
        return Ok(false);
    }
    let mut have = Vec::with_capacity(want.len());
    file.take(MAX_COMPARED).read_to_end(&mut have)?;
    Ok(have == want)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pod::HostAlias;
    use crate::model::Container;

    fn pod() -> Pod {
        let mut p = Pod::default();
        p.metadata.name = "web".into();
        p.metadata.namespace = "edge".into();
        p.metadata.uid = "u-hosts".into();
        p
    }

    #[test]
    fn content_as_kubelet_writes_it() {
        let mut p = pod();
        let text = content(&p, "10.1.2.3", "cluster.local");
        assert!(text.starts_with(HEADER), "{text}");
        assert!(text.contains("127.0.0.1\tlocalhost\n"), "{text}");
        assert!(
            text.ends_with("fe00::2\tip6-allrouters\n10.1.2.3\tweb\n"),
            "{text}"
        );
        p.spec.hostname = "h1".into();
        p.spec.subdomain = "sub".into();
        p.spec.host_aliases = vec![
            HostAlias {
                ip: "123.45.67.89".into(),
                hostnames: vec!["foo.local".into(), "bar.local".into()],
            },
            HostAlias {
                ip: "::1".into(),
                hostnames: vec!["six".into()],
            },
        ];
        let text = content(&p, "10.1.2.3", "gw.example");
        assert!(
            text.ends_with(
                "10.1.2.3\th1.sub.edge.svc.gw.example\th1\n\n# Entries added by HostAliases.\n\
                 123.45.67.89\tfoo.local\tbar.local\n::1\tsix\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn written_once_mounted_unless_host_network_or_own_mount() {
        let dir = std::env::temp_dir().join(format!("tinylet-hosts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let p = pod();
        let c = Container::default();
        let m = mount(&dir, &p, &c, "10.1.2.3", "cluster.local")
            .unwrap()
            .unwrap();
        assert_eq!(m.container_path, "/etc/hosts");
        let file = dir.join("u-hosts").join("etc-hosts");
        assert_eq!(m.host_path, file.to_string_lossy());
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text, content(&p, "10.1.2.3", "cluster.local"));
        // Unchanged: not written again (the mtime stays).
        let before = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        mount(&dir, &p, &c, "10.1.2.3", "cluster.local").unwrap();
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            before
        );
        // Edited by a container, or a new IP: written again.
        std::fs::write(&file, "x").unwrap();
        mount(&dir, &p, &c, "10.9.9.9", "cluster.local").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.ends_with("10.9.9.9\tweb\n"), "{text}");
        // None: host network, no IP yet, the container's own mount.
        let mut host = pod();
        host.spec.host_network = true;
        assert!(mount(&dir, &host, &c, "10.1.2.3", "c").unwrap().is_none());
        assert!(mount(&dir, &p, &c, "", "c").unwrap().is_none());
        let mut own = Container::default();
        own.volume_mounts
            .push(crate::model::container::VolumeMount {
                name: "h".into(),
                mount_path: "/etc/hosts".into(),
                ..Default::default()
            });
        assert!(mount(&dir, &p, &own, "10.1.2.3", "c").unwrap().is_none());
        // A symlink planted at the file's place is not followed.
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &file).unwrap();
        assert!(mount(&dir, &p, &c, "10.1.2.3", "c").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
