//! Certificates for uplink tests, made with the `openssl` command: CAs, server
//! certificates (valid, expired, for another name), client certificates with any
//! subject and RSA or ECDSA keys in PKCS#8, PKCS#1 or SEC1 PEM.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch directory of keys and certificates, removed on drop.
pub struct Pki {
    pub dir: PathBuf,
}

/// Key algorithm and PEM encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    EcPkcs8,
    EcSec1,
    RsaPkcs8,
    RsaPkcs1,
}

/// What to sign.
pub struct Spec<'a> {
    pub subject: &'a str,
    /// `subjectAltName` value (`IP:127.0.0.1,DNS:localhost`), for servers.
    pub san: Option<&'a str>,
    pub key: Key,
    /// Valid from 2020-01-01 to 2020-01-02 instead of now to 30 days from now.
    pub expired: bool,
}

impl Pki {
    pub fn new(tag: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("tinylet-pki-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Pki { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn openssl(&self, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(&self.dir)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn key(&self, name: &str, key: Key) -> PathBuf {
        let file = format!("{name}.key");
        let (alg, opt) = match key {
            Key::EcPkcs8 | Key::EcSec1 => ("EC", "ec_paramgen_curve:P-256"),
            Key::RsaPkcs8 | Key::RsaPkcs1 => ("RSA", "rsa_keygen_bits:2048"),
        };
        self.openssl(&["genpkey", "-algorithm", alg, "-pkeyopt", opt, "-out", &file]);
        match key {
            Key::EcSec1 => self.openssl(&["ec", "-in", &file, "-out", &file]),
            Key::RsaPkcs1 => self.openssl(&["rsa", "-in", &file, "-traditional", "-out", &file]),
            _ => {}
        }
        set_mode(&self.path(&file), 0o600);
        self.path(&file)
    }

    /// A self-signed CA `name` (`name.crt`, `name.key`).
    pub fn ca(&self, name: &str) -> PathBuf {
        let key = self.key(name, Key::EcPkcs8);
        let crt = format!("{name}.crt");
        let subj = format!("/CN={name}");
        self.openssl(&[
            "req",
            "-x509",
            "-new",
            "-key",
            key.to_str().unwrap(),
            "-subj",
            &subj,
            "-days",
            "30",
            "-out",
            &crt,
        ]);
        self.path(&crt)
    }

    /// A certificate `name` signed by CA `ca`; returns (certificate, key) paths.
    pub fn cert(&self, name: &str, ca: &str, spec: &Spec) -> (PathBuf, PathBuf) {
        let key = self.key(name, spec.key);
        let csr = format!("{name}.csr");
        self.openssl(&[
            "req",
            "-new",
            "-key",
            key.to_str().unwrap(),
            "-subj",
            spec.subject,
            "-out",
            &csr,
        ]);
        let ext = format!("{name}.ext");
        let ext_text = match spec.san {
            Some(san) => format!("subjectAltName={san}\n"),
            None => "basicConstraints=CA:FALSE\n".to_string(),
        };
        std::fs::write(self.path(&ext), ext_text).unwrap();
        let crt = format!("{name}.crt");
        let (ca_crt, ca_key) = (format!("{ca}.crt"), format!("{ca}.key"));
        if spec.expired {
            let db = format!("{name}.db");
            std::fs::write(self.path(&db), "").unwrap();
            std::fs::write(self.path(&format!("{name}.serial")), "1000\n").unwrap();
            let conf = format!(
                "[ca]\ndefault_ca = d\n[d]\ndatabase = {db}\nnew_certs_dir = .\nserial = {name}.serial\n\
                 default_md = sha256\npolicy = p\nunique_subject = no\n[p]\ncommonName = supplied\n"
            );
            let conf_file = format!("{name}.cnf");
            std::fs::write(self.path(&conf_file), conf).unwrap();
            self.openssl(&[
                "ca",
                "-batch",
                "-config",
                &conf_file,
                "-cert",
                &ca_crt,
                "-keyfile",
                &ca_key,
                "-in",
                &csr,
                "-out",
                &crt,
                "-startdate",
                "20200101000000Z",
                "-enddate",
                "20200102000000Z",
                "-extfile",
                &ext,
                "-notext",
            ]);
        } else {
            self.openssl(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca_crt,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-days",
                "30",
                "-out",
                &crt,
                "-extfile",
                &ext,
            ]);
        }
        (self.path(&crt), key)
    }

    /// An X.509 v1 certificate (no extensions: what `openssl x509 -req` makes without
    /// an extension file); returns (certificate, key) paths.
    pub fn cert_v1(&self, name: &str, ca: &str, subject: &str, key: Key) -> (PathBuf, PathBuf) {
        let key = self.key(name, key);
        let (csr, crt) = (format!("{name}.csr"), format!("{name}.crt"));
        self.openssl(&[
            "req",
            "-new",
            "-key",
            key.to_str().unwrap(),
            "-subj",
            subject,
            "-out",
            &csr,
        ]);
        let (ca_crt, ca_key) = (format!("{ca}.crt"), format!("{ca}.key"));
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "30",
            "-out",
            &crt,
        ]);
        (self.path(&crt), key)
    }

    /// A kubeconfig (mode 0600) for `server` with this CA and client certificate.
    pub fn kubeconfig(
        &self,
        name: &str,
        server: &str,
        ca: &Path,
        cert: &Path,
        key: &Path,
    ) -> PathBuf {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster: {{certificate-authority: {}, server: \"{server}\"}}\n  name: test\n\
             contexts:\n- context: {{cluster: test, user: node}}\n  name: test\ncurrent-context: test\n\
             users:\n- name: node\n  user: {{client-certificate: {}, client-key: {}}}\n",
            ca.display(),
            cert.display(),
            key.display()
        );
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        set_mode(&p, 0o600);
        p
    }
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
