//! The machine-readable reasons a pod, a pod condition or a container state gives, as one
//! type: kubelet's spellings (clients, `kubectl get` and the cluster's controllers match
//! on them, so they are part of the API) and tinylet's own few. Every place that sets or
//! compares a reason uses this type, so the local status files and what the uplink
//! reports say the same thing; the spellings live here only.
//!
//! Status objects keep reasons as strings (the runtime reports its own, such as
//! `OOMKilled`, and status files are read back as written): [`Reason::parse`] turns one
//! back into a value where the code needs to tell them apart.

use std::fmt;

/// A reason, spelled as kubelet spells it (or tinylet, for the ones marked so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// A container's config cannot be built (a missing configMap or secret key, a volume
    /// that cannot be set up, an expansion too large).
    CreateContainerConfigError,
    /// The runtime refused (or did not answer) CreateContainer.
    CreateContainerError,
    /// The runtime refused StartContainer.
    RunContainerError,
    /// The container exited and waits out its restart back-off.
    CrashLoopBackOff,
    /// Pulling the image failed just now.
    ErrImagePull,
    /// Pulling the image failed and the next attempt waits out its back-off.
    ImagePullBackOff,
    /// The image reference does not parse.
    InvalidImageName,
    /// `imagePullPolicy: Never` and the image is not on the node.
    ErrImageNeverPull,
    /// The runtime cannot tell whether the image is on the node.
    ErrImageInspect,
    /// The container has not been created yet.
    ContainerCreating,
    /// An app container waits for the init containers.
    PodInitializing,
    /// The container exited with code 0 (when the runtime gives no reason).
    Completed,
    /// The container exited with another code (when the runtime gives no reason).
    Error,
    /// The runtime killed the container for its memory limit.
    OOMKilled,
    /// The runtime could not run the container at all (its own reason; the
    /// termination message then does not fall back to the logs).
    ContainerCannotRun,
    /// The pod ran longer than its `activeDeadlineSeconds`.
    DeadlineExceeded,
    /// The node ran low on a resource and stopped the pod (kubelet's eviction).
    Evicted,
    /// The pod's `Ready` or `ContainersReady` condition: some container is not ready.
    ContainersNotReady,
    /// The pod's `Initialized` condition: some init container has not completed.
    ContainersNotInitialized,
    /// The pod's conditions once it has completed.
    PodCompleted,
    /// tinylet: a hostPath outside the allowed directories (or through a symlink).
    HostPathNotAllowed,
    /// tinylet: an image that is not on the node while its registry cannot be reached.
    OfflineImage,
    /// tinylet: the pod's desired file was damaged and set aside.
    DesiredFileQuarantined,
    /// tinylet: the pod's desired file is there but cannot be read (`tinylet get`'s
    /// STATUS until it is fixed, restored by the agent, or removed).
    DesiredFileDamaged,
    /// tinylet: a cluster pod uses a field the agent does not implement.
    UnsupportedPodSpec,
    /// tinylet: a cluster pod has the name of a local pod.
    LocalPodNameConflict,
}

impl Reason {
    /// Every reason, for [`Reason::parse`].
    pub const ALL: [Reason; 26] = [
        Reason::CreateContainerConfigError,
        Reason::CreateContainerError,
        Reason::RunContainerError,
        Reason::CrashLoopBackOff,
        Reason::ErrImagePull,
        Reason::ImagePullBackOff,
        Reason::InvalidImageName,
        Reason::ErrImageNeverPull,
        Reason::ErrImageInspect,
        Reason::ContainerCreating,
        Reason::PodInitializing,
        Reason::Completed,
        Reason::Error,
        Reason::OOMKilled,
        Reason::ContainerCannotRun,
        Reason::DeadlineExceeded,
        Reason::Evicted,
        Reason::ContainersNotReady,
        Reason::ContainersNotInitialized,
        Reason::PodCompleted,
        Reason::HostPathNotAllowed,
        Reason::OfflineImage,
        Reason::DesiredFileQuarantined,
        Reason::DesiredFileDamaged,
        Reason::UnsupportedPodSpec,
        Reason::LocalPodNameConflict,
    ];

    /// The spelling in status objects.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::CreateContainerConfigError => "CreateContainerConfigError",
            Reason::CreateContainerError => "CreateContainerError",
            Reason::RunContainerError => "RunContainerError",
            Reason::CrashLoopBackOff => "CrashLoopBackOff",
            Reason::ErrImagePull => "ErrImagePull",
            Reason::ImagePullBackOff => "ImagePullBackOff",
            Reason::InvalidImageName => "InvalidImageName",
            Reason::ErrImageNeverPull => "ErrImageNeverPull",
            Reason::ErrImageInspect => "ErrImageInspect",
            Reason::ContainerCreating => "ContainerCreating",
            Reason::PodInitializing => "PodInitializing",
            Reason::Completed => "Completed",
            Reason::Error => "Error",
            Reason::OOMKilled => "OOMKilled",
            Reason::ContainerCannotRun => "ContainerCannotRun",
            Reason::DeadlineExceeded => "DeadlineExceeded",
            Reason::Evicted => "Evicted",
            Reason::ContainersNotReady => "ContainersNotReady",
            Reason::ContainersNotInitialized => "ContainersNotInitialized",
            Reason::PodCompleted => "PodCompleted",
            Reason::HostPathNotAllowed => "HostPathNotAllowed",
            Reason::OfflineImage => "OfflineImage",
            Reason::DesiredFileQuarantined => "DesiredFileQuarantined",
            Reason::DesiredFileDamaged => "DesiredFileDamaged",
            Reason::UnsupportedPodSpec => "UnsupportedPodSpec",
            Reason::LocalPodNameConflict => "LocalPodNameConflict",
        }
    }

    /// The reason spelled `s` (as read back from a status file or given by the
    /// runtime); `None` for one this type does not know (the runtime's own, ...).
    pub fn parse(s: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether `s` spells this reason.
    pub fn is(self, s: &str) -> bool {
        self.as_str() == s
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Reason> for String {
    fn from(r: Reason) -> String {
        r.as_str().to_string()
    }
}

/// Lets tests pin the spelling: `assert_eq!(e.reason, "CreateContainerConfigError")`.
impl PartialEq<&str> for Reason {
    fn eq(&self, other: &&str) -> bool {
        self.is(other)
    }
}

/// The reasons of a Node's conditions, spelled as kubelet spells them (the uplink reports
/// them; controllers and `kubectl describe node` show them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeReason {
    /// `Ready` is true.
    KubeletReady,
    /// `Ready` is false (the runtime is down, ...).
    KubeletNotReady,
    /// `MemoryPressure` is false.
    KubeletHasSufficientMemory,
    /// `MemoryPressure` is true.
    KubeletHasInsufficientMemory,
    /// `DiskPressure` is false.
    KubeletHasNoDiskPressure,
    /// `DiskPressure` is true.
    KubeletHasDiskPressure,
    /// `PIDPressure` is false.
    KubeletHasSufficientPID,
    /// `PIDPressure` is true.
    KubeletHasInsufficientPID,
}

impl NodeReason {
    /// The spelling in the Node's status.
    pub const fn as_str(self) -> &'static str {
        match self {
            NodeReason::KubeletReady => "KubeletReady",
            NodeReason::KubeletNotReady => "KubeletNotReady",
            NodeReason::KubeletHasSufficientMemory => "KubeletHasSufficientMemory",
            NodeReason::KubeletHasInsufficientMemory => "KubeletHasInsufficientMemory",
            NodeReason::KubeletHasNoDiskPressure => "KubeletHasNoDiskPressure",
            NodeReason::KubeletHasDiskPressure => "KubeletHasDiskPressure",
            NodeReason::KubeletHasSufficientPID => "KubeletHasSufficientPID",
            NodeReason::KubeletHasInsufficientPID => "KubeletHasInsufficientPID",
        }
    }
}

impl fmt::Display for NodeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The reasons of the pod events the agent records (`kubectl describe pod` shows them),
/// spelled as kubelet spells them, plus tinylet's `OfflineImage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventReason {
    /// An image pull began.
    Pulling,
    /// An image pull ended well.
    Pulled,
    /// A pull, create or start failed.
    Failed,
    /// A restart or pull waits for its back-off.
    BackOff,
    /// A container was created.
    Created,
    /// A container was started.
    Started,
    /// A container is being stopped.
    Killing,
    /// A probe failed.
    Unhealthy,
    /// A probe succeeded with a warning (an httpGet answered with a redirect the
    /// prober does not follow).
    ProbeWarning,
    /// A volume of the pod cannot be set up.
    FailedMount,
    /// The registry did not answer; the local copy of the image runs (tinylet's own).
    OfflineImage,
    /// The node refused the pod at admission, with the refusal's own reason
    /// (`OutOfcpu`, `SysctlForbidden`, `NodeAffinity`, `PodSecurity`, ...).
    Refused(&'static str),
}

impl EventReason {
    /// The spelling in the Event.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventReason::Pulling => "Pulling",
            EventReason::Pulled => "Pulled",
            EventReason::Failed => "Failed",
            EventReason::BackOff => "BackOff",
            EventReason::Created => "Created",
            EventReason::Started => "Started",
            EventReason::Killing => "Killing",
            EventReason::Unhealthy => "Unhealthy",
            EventReason::ProbeWarning => "ProbeWarning",
            EventReason::FailedMount => "FailedMount",
            EventReason::OfflineImage => "OfflineImage",
            EventReason::Refused(reason) => reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{EventReason, NodeReason, Reason};

    #[test]
    fn event_reasons_are_kubelets() {
        assert_eq!(EventReason::BackOff.as_str(), "BackOff");
        assert_eq!(EventReason::OfflineImage.as_str(), "OfflineImage");
        assert_eq!(EventReason::ProbeWarning.as_str(), "ProbeWarning");
        assert_eq!(EventReason::FailedMount.as_str(), "FailedMount");
    }

    #[test]
    fn node_reasons_are_kubelets() {
        assert_eq!(NodeReason::KubeletReady.as_str(), "KubeletReady");
        assert_eq!(
            NodeReason::KubeletHasInsufficientPID.to_string(),
            "KubeletHasInsufficientPID"
        );
    }

    #[test]
    fn every_reason_parses_back_from_its_spelling() {
        for r in Reason::ALL {
            assert_eq!(Reason::parse(r.as_str()), Some(r));
            assert_eq!(r.to_string(), r.as_str());
        }
        assert_eq!(Reason::parse("Signal:9"), None);
        assert_eq!(Reason::parse(""), None);
    }

    #[test]
    fn spellings_are_kubelets() {
        assert_eq!(
            Reason::CreateContainerConfigError.as_str(),
            "CreateContainerConfigError"
        );
        assert_eq!(Reason::CrashLoopBackOff.as_str(), "CrashLoopBackOff");
        assert_eq!(Reason::OOMKilled.as_str(), "OOMKilled");
        assert!(Reason::ErrImagePull.is("ErrImagePull"));
        assert!(!Reason::ErrImagePull.is("ImagePullBackOff"));
    }
}
