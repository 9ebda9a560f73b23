//! What a test scripts into the fake runtime: how containers live and stop, what
//! ExecSync answers, and which calls fail, hang or answer late.

use std::collections::VecDeque;
use std::time::Duration;

/// What a container does once started.
#[derive(Clone, Debug, PartialEq)]
pub enum Life {
    /// Runs until it is stopped (or told to exit).
    Run,
    /// Exits with `code`, `after` its start. The runtime reports the exit as `backdate`
    /// earlier than it happened: what the agent would see had it noticed the exit that
    /// much later. The crash-loop back-off counts from the reported exit, so this is how
    /// a test gets past a back-off without sleeping through it.
    Exit {
        code: i32,
        after: Duration,
        backdate: Duration,
    },
}

impl Life {
    /// Exits with `code` at once.
    pub fn exit(code: i32) -> Life {
        Life::Exit {
            code,
            after: Duration::ZERO,
            backdate: Duration::ZERO,
        }
    }

    /// Exits with `code` after running for `after`.
    pub fn exit_after(code: i32, after: Duration) -> Life {
        Life::Exit {
            code,
            after,
            backdate: Duration::ZERO,
        }
    }

    /// This exit, reported `ago` earlier than it happened.
    pub fn reported_ago(self, ago: Duration) -> Life {
        match self {
            Life::Exit { code, after, .. } => Life::Exit {
                code,
                after,
                backdate: ago,
            },
            Life::Run => Life::Run,
        }
    }
}

/// What a running container does on StopContainer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stop {
    /// Exits on SIGTERM at once with this code (143 is a default SIGTERM death).
    OnTerm(i32),
    /// Ignores SIGTERM: killed (137) when the request's timeout runs out, and the call
    /// answers only then, as a runtime does.
    IgnoresTerm,
}

/// What one ExecSync answers.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecReply {
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    /// How long the command runs; past the request's timeout the call fails with
    /// DeadlineExceeded when the timeout runs out (containerd's answer).
    pub takes: Duration,
}

impl ExecReply {
    /// Exits with `code` at once, printing nothing.
    pub fn code(exit_code: i32) -> ExecReply {
        ExecReply {
            exit_code,
            stdout: String::new(),
            stderr: String::new(),
            takes: Duration::ZERO,
        }
    }

    /// Exits 0 with `stdout`.
    pub fn output(stdout: &str) -> ExecReply {
        ExecReply {
            stdout: stdout.into(),
            ..ExecReply::code(0)
        }
    }
}

/// Successive values for successive uses, then `then` for good.
#[derive(Clone, Debug)]
pub struct Script<T> {
    pub queue: VecDeque<T>,
    pub then: T,
}

impl<T: Clone> Script<T> {
    pub fn new(first: impl IntoIterator<Item = T>, then: T) -> Script<T> {
        Script {
            queue: first.into_iter().collect(),
            then,
        }
    }

    /// The next value.
    pub fn next(&mut self) -> T {
        self.queue.pop_front().unwrap_or_else(|| self.then.clone())
    }
}

/// How a faulty call behaves.
#[derive(Clone, Debug, PartialEq)]
pub enum Misbehave {
    /// Not carried out; answers with gRPC `code` and `message`.
    Fail { code: i32, message: String },
    /// Not carried out; never answered (the client's deadline ends it).
    Hang,
    /// Carried out at once, answered only after this long: past the client's deadline it
    /// is "a call that timed out and did succeed".
    AnswerLate(Duration),
}

/// A scripted fault: the next `times` calls of `method` whose subject (container name,
/// pod name or image) equals `subject` (any, for `None`) misbehave.
#[derive(Clone, Debug)]
pub struct Fault {
    pub method: String,
    pub subject: Option<String>,
    pub times: usize,
    pub misbehave: Misbehave,
}

impl Fault {
    /// The next call of `method` (e.g. "CreateContainer") misbehaves.
    pub fn on(method: &str, misbehave: Misbehave) -> Fault {
        Fault {
            method: method.into(),
            subject: None,
            times: 1,
            misbehave,
        }
    }

    /// Only calls about `subject`.
    pub fn about(mut self, subject: &str) -> Fault {
        self.subject = Some(subject.into());
        self
    }

    /// The next `n` such calls.
    pub fn times(mut self, n: usize) -> Fault {
        self.times = n;
        self
    }

    /// Whether this fault takes a call of `method` about `subject` (and counts it).
    pub fn take(&mut self, method: &str, subject: &str) -> bool {
        let hit = self.times > 0
            && self.method == method
            && self.subject.as_deref().is_none_or(|s| s == subject);
        if hit {
            self.times -= 1;
        }
        hit
    }
}

/// gRPC codes the fake answers with.
pub mod code {
    pub const UNKNOWN: i32 = 2;
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const DEADLINE_EXCEEDED: i32 = 4;
    pub const NOT_FOUND: i32 = 5;
    pub const FAILED_PRECONDITION: i32 = 9;
    pub const UNIMPLEMENTED: i32 = 12;
    pub const UNAVAILABLE: i32 = 14;
}
