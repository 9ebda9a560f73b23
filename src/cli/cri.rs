//! `tinylet cri ...`: talk to the CRI runtime directly, in the spirit of crictl. For
//! debugging a device (is the runtime up, what runs, what images take the flash) and for
//! tests. Output goes to stdout as tables; the endpoint comes from the config or
//! `--endpoint`.
//!
//! ```text
//! tinylet cri version              runtime name and versions
//! tinylet cri pods                 every pod sandbox
//! tinylet cri ps [-a]              running containers (-a: all)
//! tinylet cri images               images with tags, ids and sizes
//! tinylet cri imagefs              usage of the image filesystem
//! ```

use super::args::Args;
use super::config_file::{self, Access};
use super::table::Table;
use super::{CliError, GLOBAL_VALUE_OPTS};
use crate::cri::{pb, CriClient, CriError};
use std::time::{SystemTime, UNIX_EPOCH};

const USAGE: &str = "usage: tinylet cri version|pods|ps [-a]|images|imagefs \
                     [--endpoint unix:///PATH] [--image-endpoint unix:///PATH]";

/// Runs `tinylet cri WORDS...`.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let mut value_opts = GLOBAL_VALUE_OPTS.to_vec();
    value_opts.extend(["endpoint", "image-endpoint"]);
    let args = Args::parse(words, &value_opts)?;
    let mut known = value_opts.clone();
    known.extend(["a", "all"]);
    args.only(&known)?;
    let (what, extra) = match args.positional.split_first() {
        Some((w, extra)) => (w.as_str(), extra),
        None => return Err(CliError::usage(USAGE)),
    };
    if let Some(x) = extra.first() {
        return Err(CliError::usage(format!(
            "unexpected argument {x:?}\n{USAGE}"
        )));
    }
    let mut cfg = config_file::load(&args, Access::Write)?;
    if let Some(e) = args.value(&["endpoint"]) {
        cfg.runtime_endpoint = e.to_string();
    }
    if let Some(e) = args.value(&["image-endpoint"]) {
        cfg.image_endpoint = e.to_string();
    }
    let cri = CriClient::from_config(&cfg).map_err(|e| CliError::usage(e.to_string()))?;
    let all = args.flag(&["a", "all"]);
    if !["version", "pods", "ps", "images", "imagefs"].contains(&what) {
        return Err(CliError::usage(format!(
            "unknown cri command {what:?}\n{USAGE}"
        )));
    }
    let out = crate::rt::block_on(async {
        match what {
            "version" => version(&cri).await,
            "pods" => pods(&cri).await,
            "ps" => ps(&cri, all).await,
            "images" => images(&cri).await,
            _ => imagefs(&cri).await,
        }
    });
    crate::cli::output::emit(&out.map_err(failed)?);
    Ok(())
}

/// A failed call: exit code 3 for NotFound, 1 otherwise.
fn failed(e: CriError) -> CliError {
    if e.is_not_found() {
        CliError::not_found(e.to_string())
    } else {
        CliError::failed(e.to_string())
    }
}

async fn version(cri: &CriClient) -> Result<String, CriError> {
    let v = cri.runtime.version().await?;
    Ok(format!(
        "Version:  {}\nRuntimeName:  {}\nRuntimeVersion:  {}\nRuntimeApiVersion:  {}\n",
        v.version, v.runtime_name, v.runtime_version, v.runtime_api_version
    ))
}

async fn pods(cri: &CriClient) -> Result<String, CriError> {
    let mut items = cri.runtime.list_pod_sandbox(None).await?;
    items.sort_by_key(|i| std::cmp::Reverse(i.created_at));
    let now = now_ns();
    let mut t = Table::new(&["POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT"]);
    for p in items {
        let md = p.metadata.unwrap_or_default();
        let state = match pb::PodSandboxState::try_from(p.state) {
            Ok(pb::PodSandboxState::SandboxReady) => "Ready",
            Ok(pb::PodSandboxState::SandboxNotready) => "NotReady",
            Err(_) => "Unknown",
        };
        t.row(vec![
            short_id(&p.id),
            age(p.created_at, now),
            state.into(),
            md.name,
            md.namespace,
            md.attempt.to_string(),
        ]);
    }
    Ok(t.render())
}

async fn ps(cri: &CriClient, all: bool) -> Result<String, CriError> {
    let filter = (!all).then(|| pb::ContainerFilter {
        state: Some(pb::ContainerStateValue {
            state: pb::ContainerState::ContainerRunning as i32,
        }),
        ..Default::default()
    });
    let mut items = cri.runtime.list_containers(filter).await?;
    items.sort_by_key(|i| std::cmp::Reverse(i.created_at));
    let now = now_ns();
    let mut t = Table::new(&[
        "CONTAINER",
        "IMAGE",
        "CREATED",
        "STATE",
        "NAME",
        "ATTEMPT",
        "POD ID",
    ]);
    for c in items {
        let md = c.metadata.unwrap_or_default();
        let image = c.image.map(|i| i.image).unwrap_or_default();
        t.row(vec![
            short_id(&c.id),
            short_id(&image),
            age(c.created_at, now),
            container_state(c.state).into(),
            md.name,
            md.attempt.to_string(),
            short_id(&c.pod_sandbox_id),
        ]);
    }
    Ok(t.render())
}

/// crictl's names for container states.
fn container_state(state: i32) -> &'static str {
    match pb::ContainerState::try_from(state) {
        Ok(pb::ContainerState::ContainerCreated) => "Created",
        Ok(pb::ContainerState::ContainerRunning) => "Running",
        Ok(pb::ContainerState::ContainerExited) => "Exited",
        _ => "Unknown",
    }
}

async fn images(cri: &CriClient) -> Result<String, CriError> {
    let items = cri.image.list_images().await?;
    let mut rows = Vec::new();
    for img in items {
        let id = short_id(&img.id);
        let size = human_size(img.size);
        if img.repo_tags.is_empty() {
            let repo = img
                .repo_digests
                .first()
                .map(|d| d.split('@').next().unwrap_or(d).to_string())
                .unwrap_or_else(|| "<none>".into());
            rows.push([repo, "<none>".into(), id, size]);
            continue;
        }
        for tag in &img.repo_tags {
            let (repo, tag) = split_tag(tag);
            rows.push([repo.into(), tag.into(), id.clone(), size.clone()]);
        }
    }
    rows.sort();
    let mut t = Table::new(&["IMAGE", "TAG", "IMAGE ID", "SIZE"]);
    for r in rows {
        t.row(r.into());
    }
    Ok(t.render())
}

async fn imagefs(cri: &CriClient) -> Result<String, CriError> {
    let info = cri.image.image_fs_info().await?;
    let mut t = Table::new(&["KIND", "MOUNTPOINT", "USED", "INODES"]);
    let kinds = [
        ("image", info.image_filesystems),
        ("container", info.container_filesystems),
    ];
    for (kind, list) in kinds {
        for fs in list {
            let mount = fs.fs_id.map(|f| f.mountpoint).unwrap_or_default();
            let used = fs.used_bytes.map_or("-".into(), |u| human_size(u.value));
            let inodes = fs.inodes_used.map_or("-".into(), |u| u.value.to_string());
            t.row(vec![kind.into(), mount, used, inodes]);
        }
    }
    Ok(t.render())
}

/// The first 13 hex digits of an id (`sha256:` dropped), as crictl shows ids.
fn short_id(id: &str) -> String {
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    let is_hex = !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit());
    if is_hex {
        id.chars().take(13).collect()
    } else {
        id.to_string()
    }
}

/// `repo:tag` split at the tag's colon (not a registry port's).
fn split_tag(reference: &str) -> (&str, &str) {
    let name_start = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[name_start..].rfind(':') {
        Some(i) => {
            let at = name_start + i;
            (&reference[..at], &reference[at + 1..])
        }
        None => (reference, "<none>"),
    }
}

/// Bytes in decimal units with three significant digits (`742kB`, `1.23MB`), as crictl.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    let digits = if unit == 0 || v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}{}", UNITS[unit])
}

/// Time since `created_ns` (nanoseconds since the epoch) as `45s`, `3m`, `2h`, `4d`.
fn age(created_ns: i64, now_ns: i64) -> String {
    if created_ns <= 0 {
        return "-".into();
    }
    let secs = now_ns.saturating_sub(created_ns).max(0) / 1_000_000_000;
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_shortened_only_when_hex() {
        let id = "sha256:0123456789abcdef0123";
        assert_eq!(short_id(id), "0123456789abc");
        assert_eq!(short_id("fedcba9876543210"), "fedcba9876543");
        assert_eq!(short_id("busybox:latest"), "busybox:latest");
        assert_eq!(short_id(""), "");
    }

    #[test]
    fn tags_split_after_the_last_slash() {
        assert_eq!(
            split_tag("docker.io/library/busybox:1.36"),
            ("docker.io/library/busybox", "1.36")
        );
        assert_eq!(
            split_tag("127.0.0.1:5000/app:v2"),
            ("127.0.0.1:5000/app", "v2")
        );
        assert_eq!(
            split_tag("127.0.0.1:5000/app"),
            ("127.0.0.1:5000/app", "<none>")
        );
        assert_eq!(split_tag("app"), ("app", "<none>"));
    }

    #[test]
    fn sizes_have_three_significant_digits() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(999), "999B");
        assert_eq!(human_size(1_000), "1.00kB");
        assert_eq!(human_size(742_123), "742kB");
        assert_eq!(human_size(1_234_567), "1.23MB");
        assert_eq!(human_size(45_600_000), "45.6MB");
        assert_eq!(human_size(u64::MAX), "18447PB");
    }

    #[test]
    fn ages_pick_a_unit() {
        let s = 1_000_000_000;
        let now = 10_000_000 * s;
        assert_eq!(age(now - 5 * s, now), "5s");
        assert_eq!(age(now - 300 * s, now), "5m");
        assert_eq!(age(now - 3 * 3600 * s, now), "3h");
        assert_eq!(age(now - 3 * 86400 * s, now), "3d");
        assert_eq!(age(now + 5 * s, now), "0s");
        assert_eq!(age(0, now), "-");
    }

    #[test]
    fn unknown_states_print_unknown() {
        assert_eq!(container_state(2), "Exited");
        assert_eq!(container_state(99), "Unknown");
    }
}
