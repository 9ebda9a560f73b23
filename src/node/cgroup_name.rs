//! A cgroup's name as kubelet keeps it (its components from the root, such as
//! `kubepods`, `burstable`, `pod<UID>`) and the two spellings of the drivers: cgroupfs
//! paths (`/kubepods/burstable/pod<UID>`) and systemd slices
//! (`kubepods-burstable-pod<UID>.slice`, nested as
//! `/kubepods.slice/kubepods-burstable.slice/...`).

/// A cgroup named by its components below the hierarchy's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupName(Vec<String>);

impl CgroupName {
    /// The name of a cgroupfs-style path (`/a/b`); `/` is the root.
    pub fn from_path(path: &str) -> CgroupName {
        CgroupName(
            path.split('/')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect(),
        )
    }

    /// The child `name` of this cgroup.
    pub fn child(&self, name: &str) -> CgroupName {
        let mut c = self.0.clone();
        c.push(name.to_string());
        CgroupName(c)
    }

    /// The cgroupfs path: `/a/b/c`.
    pub fn cgroupfs(&self) -> String {
        let mut s = String::new();
        for c in &self.0 {
            s.push('/');
            s.push_str(c);
        }
        if s.is_empty() {
            s.push('/');
        }
        s
    }

    /// The systemd slice's unit name: `a-b-c.slice` (`-.slice` for the root). A `-`
    /// inside a component is written `_`, as kubelet does, since `-` nests slices.
    pub fn systemd_slice(&self) -> String {
        if self.0.is_empty() {
            return "-.slice".into();
        }
        let parts: Vec<String> = self.0.iter().map(|c| c.replace('-', "_")).collect();
        format!("{}.slice", parts.join("-"))
    }

    /// Where systemd puts the slice below the hierarchy's root:
    /// `/a.slice/a-b.slice/a-b-c.slice`.
    pub fn systemd_path(&self) -> String {
        let mut s = String::new();
        for i in 1..=self.0.len() {
            s.push('/');
            s.push_str(&CgroupName(self.0[..i].to_vec()).systemd_slice());
        }
        if s.is_empty() {
            s.push('/');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_drivers_spell_it_as_kubelet() {
        let n = CgroupName::from_path("/")
            .child("kubepods")
            .child("burstable")
            .child("pod1b2-c3");
        assert_eq!(n.cgroupfs(), "/kubepods/burstable/pod1b2-c3");
        assert_eq!(n.systemd_slice(), "kubepods-burstable-pod1b2_c3.slice");
        assert_eq!(
            n.systemd_path(),
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2_c3.slice"
        );
        assert_eq!(CgroupName::from_path("//x/").child("k").cgroupfs(), "/x/k");
        assert_eq!(CgroupName::from_path("/").cgroupfs(), "/");
    }
}
