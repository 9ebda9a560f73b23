//! The node's resources as amounts in base units: what it has (capacity) or what pods
//! together may use of it (allocatable). One type for every reader: the pods' parent
//! cgroup, admission's fit check, the downward API's defaults, eviction signals and the
//! Node's status. Read and computed in `crate::node::capacity`.

/// Amounts of the resources the node hands out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeResources {
    /// CPU in millicores.
    pub cpu_milli: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Process ids (tasks).
    pub pids: i64,
    /// Bytes of the filesystem holding pod volumes; 0 when unknown.
    pub ephemeral_storage: i64,
}
