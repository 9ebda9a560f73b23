//! The machine's inotify instance limit, raised for the hollow nodes and put back after.
//!
//! Every hollow kubelet opens a few dozen inotify instances (its file watchers, cAdvisor's
//! stubs, the config sources); the kernel's default of 128 per user lets only a handful
//! start, and the rest fail on "too many open files". The bench raises
//! `fs.inotify.max_user_instances` for its run and restores the value it found, also when
//! it fails (Drop), so the machine is left as it was.

use std::path::Path;

const KNOB: &str = "/proc/sys/fs/inotify/max_user_instances";

/// What the hollow nodes need: well above 500 nodes' worth.
pub const WANTED: u64 = 8192;

/// The limit as found; put back when dropped.
pub struct Raised {
    found: u64,
}

/// Raises the limit to at least `wanted`; the value found is restored on drop.
pub fn raise(wanted: u64) -> Result<Raised, String> {
    let found = read(Path::new(KNOB))?;
    if found < wanted {
        write(wanted)?;
        eprintln!("bench-fleet: {KNOB} {found} -> {wanted} for the run");
    }
    Ok(Raised { found })
}

fn read(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.trim()
        .parse()
        .map_err(|e| format!("{}: {text:?}: {e}", path.display()))
}

fn write(value: u64) -> Result<(), String> {
    std::fs::write(KNOB, format!("{value}\n")).map_err(|e| format!("{KNOB}: {e}"))
}

impl Drop for Raised {
    fn drop(&mut self) {
        // Written back even when unchanged here: someone may have raised it meanwhile
        // for this run's sake only.
        match write(self.found) {
            Ok(()) => eprintln!("bench-fleet: {KNOB} back to {}", self.found),
            Err(e) => eprintln!("bench-fleet: restoring {e}"),
        }
    }
}
