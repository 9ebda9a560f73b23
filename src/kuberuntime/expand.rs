//! A container's variables and kubelet's `$(VAR)` expansion over them, bounded.
//!
//! Rules (kubelet's): `$(NAME)` is the value of a variable defined before; `$$` is a
//! literal `$`; an unknown or unterminated reference stays as written.
//!
//! Each value may refer to earlier ones, so a few hundred bytes of manifest can ask for
//! gigabytes (8 variables of 16 references each: 16^8 bytes). Every string is built
//! against two caps and the expansion stops at the first byte past one, so nothing
//! larger is ever allocated:
//! - one string (a variable's value, one command or args item) at most
//!   [`MAX_STRING_BYTES`], the kernel's `MAX_ARG_STRLEN`: execve refuses a longer one;
//! - everything the container gets (names, values, command, args) at most
//!   [`MAX_TOTAL_BYTES`], a quarter of the usual 8 MiB stack limit, which is what
//!   execve accepts for argv and envp together; about 1.5 % of a 128 MB board.
//!
//! The total counts every string built, a redefined variable's earlier values too, so
//! it bounds the work as well as the memory. Crossing a cap fails the container with
//! `CreateContainerConfigError` naming the variable or argument.

use super::SyncError;
use crate::model::Reason;
use std::collections::BTreeMap;
use std::fmt::Display;

/// Longest string one variable, command or args item may be (kernel's MAX_ARG_STRLEN).
pub const MAX_STRING_BYTES: usize = 128 << 10;
/// Most bytes a container's environment, command and args may take in all.
pub const MAX_TOTAL_BYTES: usize = 2 << 20;

/// The variables defined so far, in order, and what is left of the byte budget.
#[derive(Debug)]
pub struct Env {
    vars: Vec<(String, String)>,
    index: BTreeMap<String, usize>,
    left: usize,
    /// Variables defined after the container's own (the Services'), sorted by name:
    /// a `$(VAR)` the container does not define (yet) reads them.
    later: Vec<(String, String)>,
}

impl Default for Env {
    fn default() -> Self {
        Env {
            vars: Vec::new(),
            index: BTreeMap::new(),
            left: MAX_TOTAL_BYTES,
            later: Vec::new(),
        }
    }
}

impl Env {
    /// An empty environment whose references may also read `later` (sorted by name),
    /// which [`Env::define_later`] adds at the end.
    pub fn with_later(later: Vec<(String, String)>) -> Env {
        Env {
            later,
            ..Env::default()
        }
    }

    /// Defines the variables given to [`Env::with_later`] that the container did not
    /// define itself (its own win), after its own.
    pub fn define_later(&mut self) -> Result<(), SyncError> {
        for (name, value) in std::mem::take(&mut self.later) {
            if !self.index.contains_key(&name) {
                self.set(name, value)?;
            }
        }
        Ok(())
    }

    /// The value a `$(name)` reads: the container's own variable, else a later one.
    fn lookup(&self, name: &str) -> Option<&str> {
        match self.index.get(name) {
            Some(&i) => Some(&self.vars[i].1),
            None => self
                .later
                .binary_search_by(|(n, _)| n.as_str().cmp(name))
                .ok()
                .map(|i| self.later[i].1.as_str()),
        }
    }

    /// Defines `name` (a later definition wins, in the earlier's place).
    pub fn set(&mut self, name: String, value: String) -> Result<(), SyncError> {
        let what = || format!("env var {name:?}");
        if value.len() > MAX_STRING_BYTES {
            return Err(too_long(what()));
        }
        self.charge(what, name.len() + 1 + value.len())?;
        match self.index.get(&name) {
            Some(&i) => self.vars[i].1 = value,
            None => {
                self.index.insert(name.clone(), self.vars.len());
                self.vars.push((name, value));
            }
        }
        Ok(())
    }

    /// Defines `name` as `template` expanded from the variables defined before it.
    pub fn set_expanded(&mut self, name: String, template: &str) -> Result<(), SyncError> {
        let value = self.expand_within(|| format!("env var {name:?}"), template)?;
        self.set(name, value)
    }

    /// `input` (a command or args item, named by `what`) expanded and charged.
    pub fn expand(&mut self, what: impl Display, input: &str) -> Result<String, SyncError> {
        let out = self.expand_within(|| what.to_string(), input)?;
        self.charge(|| what.to_string(), out.len())?;
        Ok(out)
    }

    /// The variables, in order.
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// The variables, in order, as `(name, value)`.
    pub fn into_vars(self) -> Vec<(String, String)> {
        self.vars
    }

    fn charge(&mut self, what: impl FnOnce() -> String, bytes: usize) -> Result<(), SyncError> {
        self.left = self
            .left
            .checked_sub(bytes)
            .ok_or_else(|| too_much(what()))?;
        Ok(())
    }

    /// Expands `input`, stopping at the first byte past the string cap or the budget.
    fn expand_within(
        &self,
        what: impl FnOnce() -> String,
        input: &str,
    ) -> Result<String, SyncError> {
        let limit = MAX_STRING_BYTES.min(self.left);
        let fail = |what: String| {
            if limit == MAX_STRING_BYTES {
                too_long(what)
            } else {
                too_much(what)
            }
        };
        let mut out = Bounded {
            s: String::with_capacity(input.len().min(limit)),
            limit,
        };
        let mut rest = input;
        while let Some(pos) = rest.find('$') {
            let after = &rest[pos + 1..];
            let mut ok = out.push(&rest[..pos]);
            if let Some(tail) = after.strip_prefix('$') {
                ok = ok && out.push("$");
                rest = tail;
            } else if let Some((name, tail)) =
                after.strip_prefix('(').and_then(|a| a.split_once(')'))
            {
                ok = ok
                    && match self.lookup(name) {
                        Some(v) => out.push(v),
                        None => out.push("$(") && out.push(name) && out.push(")"),
                    };
                rest = tail;
            } else {
                ok = ok && out.push("$");
                rest = after;
            }
            if !ok {
                return Err(fail(what()));
            }
        }
        if !out.push(rest) {
            return Err(fail(what()));
        }
        Ok(out.s)
    }
}

/// A string that refuses to grow past `limit`.
struct Bounded {
    s: String,
    limit: usize,
}

impl Bounded {
    fn push(&mut self, piece: &str) -> bool {
        let fits = self.s.len() + piece.len() <= self.limit;
        if fits {
            self.s.push_str(piece);
        }
        fits
    }
}

fn too_long(what: String) -> SyncError {
    SyncError::new(
        Reason::CreateContainerConfigError,
        format!("{what} is longer than {MAX_STRING_BYTES} bytes (the kernel's limit for one variable or argument)"),
    )
}

fn too_much(what: String) -> SyncError {
    SyncError::new(
        Reason::CreateContainerConfigError,
        format!("{what} takes the container's environment, command and args past {MAX_TOTAL_BYTES} bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn message(e: SyncError) -> String {
        assert_eq!(e.reason, Reason::CreateContainerConfigError);
        e.message
    }

    /// 8 variables of 16 references each would be 16^8 bytes (4 GiB).
    /// The first value past 128 KiB fails, having built at most 128 KiB.
    #[test]
    fn a_reference_bomb_stops_at_the_string_cap() {
        let start = Instant::now();
        let mut env = Env::default();
        env.set("V0".into(), "x".into()).unwrap();
        let mut failed = None;
        for i in 1..=8 {
            let refs = format!("$(V{})", i - 1).repeat(16);
            if let Err(e) = env.set_expanded(format!("V{i}"), &refs) {
                failed = Some((i, message(e)));
                break;
            }
        }
        // V4 is 16^4 = 64 KiB; V5 would be 1 MiB.
        assert_eq!(
            failed,
            Some((5, "env var \"V5\" is longer than 131072 bytes (the kernel's limit for one variable or argument)".into()))
        );
        assert_eq!(env.vars().len(), 5);
        assert!(
            start.elapsed() < crate::test_time_limit(Duration::from_secs(5)),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn the_total_counts_names_values_command_and_args() {
        let mut env = Env::default();
        let chunk = "y".repeat(100 << 10);
        env.set("BIG".into(), chunk.clone()).unwrap();
        // 100 KiB each: the 20th copy crosses 2 MiB with the names counted.
        let mut n = 1;
        let err = loop {
            match env.set_expanded(format!("C{n}"), "$(BIG)") {
                Ok(()) => n += 1,
                Err(e) => break message(e),
            }
        };
        assert_eq!(n, 20);
        assert_eq!(err, "env var \"C20\" takes the container's environment, command and args past 2097152 bytes");
        // What is left is small; an argument that does not fit is named.
        let e = env.expand("args[3]", &"z".repeat(60 << 10)).unwrap_err();
        assert_eq!(
            message(e),
            "args[3] takes the container's environment, command and args past 2097152 bytes"
        );
        assert_eq!(
            env.expand("command[0]", "$(C1)x")
                .map(|s| s.len())
                .map_err(message),
            Err(
                "command[0] takes the container's environment, command and args past 2097152 bytes"
                    .into()
            )
        );
        assert_eq!(env.expand("args[0]", "ok").unwrap(), "ok");
    }

    #[test]
    fn literal_values_and_redefinitions_count_too() {
        let mut env = Env::default();
        let e = env
            .set("HUGE".into(), "h".repeat(MAX_STRING_BYTES + 1))
            .unwrap_err();
        assert_eq!(message(e), "env var \"HUGE\" is longer than 131072 bytes (the kernel's limit for one variable or argument)");
        env.set("ONE".into(), "1".repeat(MAX_STRING_BYTES)).unwrap();
        // Redefining the same variable over and over still spends the budget, so the
        // work stays bounded too.
        let mut rounds = 0;
        while env.set_expanded("ONE".into(), "$(ONE)").is_ok() {
            rounds += 1;
        }
        assert_eq!(rounds, 14);
        assert_eq!(env.vars().len(), 1);
    }

    #[test]
    fn many_variables_cost_linear_lookups() {
        let start = Instant::now();
        let mut env = Env::default();
        env.set("V0".into(), "v".into()).unwrap();
        for i in 1..30_000 {
            env.set_expanded(format!("V{i}"), &format!("$(V{})", i - 1))
                .unwrap();
        }
        assert_eq!(env.expand("args[0]", "$(V29999)").unwrap(), "v");
        assert!(
            start.elapsed() < crate::test_time_limit(Duration::from_secs(10)),
            "{:?}",
            start.elapsed()
        );
    }
}
