//! `packaging/release/tarball.sh` (what `make release` runs per target), run on the host
//! binary: the tarball holds everything the install guides use, its SHA256SUMS verify,
//! the binary in it runs, and packing twice gives the same bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn pack(binary: &Path, out: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/release/tarball.sh");
    let run = Command::new(script)
        .args(["0.0.0-test", "x86_64-unknown-linux-gnu"])
        .arg(binary)
        .arg(out)
        .output()
        .expect("tarball.sh runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let tarball = out.join("tinylet-0.0.0-test-x86_64-unknown-linux-gnu.tar.gz");
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).trim(),
        tarball.display().to_string()
    );
    tarball
}

#[test]
fn tarball_is_complete_verifiable_and_reproducible() {
    let dir = std::env::temp_dir().join(format!("tinylet-release-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // A stripped copy of the test build: the debug info would only make gzip slow.
    std::fs::create_dir_all(&dir).expect("mkdir");
    let binary = dir.join("tinylet");
    let strip = Command::new("strip")
        .arg("-o")
        .arg(&binary)
        .arg(env!("CARGO_BIN_EXE_tinylet"))
        .status()
        .expect("strip (binutils) runs");
    assert!(strip.success());
    let first = pack(&binary, &dir.join("a"));
    let second = pack(&binary, &dir.join("b"));
    assert_eq!(
        std::fs::read(&first).expect("read"),
        std::fs::read(&second).expect("read"),
        "two packs differ"
    );

    let unpacked = dir.join("x");
    std::fs::create_dir_all(&unpacked).expect("mkdir");
    let tar = Command::new("tar")
        .arg("xzf")
        .arg(&first)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .expect("tar runs");
    assert!(tar.success());
    let root = unpacked.join("tinylet-0.0.0-test-x86_64-unknown-linux-gnu");
    for file in [
        "bin/tinylet",
        "board-configs/README.md",
        "board-configs/rpi4-debian.json",
        "board-configs/openwrt-armv7-256m.json",
        "openwrt/Makefile",
        "openwrt/files/tinylet.init",
        "openwrt/files/tinylet.config",
        "openwrt/files/containerd.init",
        "openwrt/files/containerd.toml",
        "systemd/tinylet.service",
        "systemd/containerd.toml",
        "cni/10-tinylet.conflist",
        "README.md",
        "docs/install.md",
        "docs/security.md",
        "packaging.md",
        "NOTICE",
        "SHA256SUMS",
    ] {
        assert!(root.join(file).is_file(), "{file} missing from the tarball");
    }
    let check = Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(&root)
        .output()
        .expect("sha256sum runs");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let sums = std::fs::read_to_string(root.join("SHA256SUMS")).expect("sums");
    assert!(sums.contains("  bin/tinylet\n"), "{sums}");
    let notice = std::fs::read_to_string(root.join("NOTICE")).expect("notice");
    assert!(notice.contains("License: Apache-2.0"), "{notice}");
    // Compiled-in crates only: proc-macro crates run at build time.
    assert!(notice.contains("\nserde_json v"), "{notice}");
    assert!(!notice.contains("\nserde_derive v"), "{notice}");
    let version = Command::new(root.join("bin/tinylet"))
        .arg("version")
        .output()
        .expect("packed binary runs");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!("tinylet {}\n", env!("CARGO_PKG_VERSION"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}
