//! The agent (`tinylet run`, the real binary) against an in-memory CRI runtime
//! (`cri_fake/runtime/`), as a normal user and in seconds: start to Running, restart
//! policies, init containers, crash-loop back-off, probes, adoption after an agent
//! restart, orphans, delete with the grace period, and what containerd cannot be made
//! to do on demand (a create that times out on the client and did succeed, a runtime
//! that goes away for a while). The real-containerd tests (`e2e_*.rs`) stay: these
//! check the agent's decisions, those check that the runtime agrees.

#[path = "cri_fake/runtime/mod.rs"]
mod runtime;
#[path = "cri_fake/wire.rs"]
mod wire;

#[path = "agent_fake/node.rs"]
mod node;

#[path = "agent_fake/admission.rs"]
mod admission;
#[path = "agent_fake/adoption.rs"]
mod adoption;
#[path = "agent_fake/crash_loop.rs"]
mod crash_loop;
#[path = "agent_fake/delete.rs"]
mod delete;
#[path = "agent_fake/fake_itself.rs"]
mod fake_itself;
#[path = "agent_fake/faults.rs"]
mod faults;
#[path = "agent_fake/probes.rs"]
mod probes;
#[path = "agent_fake/start.rs"]
mod start;
#[path = "agent_fake/terminal.rs"]
mod terminal;
#[path = "agent_fake/unanswered.rs"]
mod unanswered;
