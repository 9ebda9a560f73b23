//! A small command-line parser: `--name value`, `--name=value`, `-x value`, flags, and
//! everything after `--` kept apart (for `exec`). Hand-written because an argument
//! parser crate would cost more flash than the whole CLI.

use super::CliError;

/// A command line: positional words, options and what follows `--`.
#[derive(Debug, Default)]
pub struct Args {
    /// Positional words, in order.
    pub positional: Vec<String>,
    /// `(name, value)` pairs; a flag has no value.
    options: Vec<(String, Option<String>)>,
    /// Each option's dashes as given (`-` or `--`), for messages that echo it.
    dashes: Vec<&'static str>,
    /// Words after a bare `--`.
    pub rest: Vec<String>,
}

impl Args {
    /// Parses `words`. `takes_value` names the options (long or short, without dashes)
    /// that consume the next word as their value; every other `-x`/`--x` is a flag.
    pub fn parse(words: &[String], takes_value: &[&str]) -> Result<Args, CliError> {
        let mut a = Args::default();
        let mut it = words.iter();
        while let Some(w) = it.next() {
            if w == "--" {
                a.rest = it.by_ref().cloned().collect();
                break;
            }
            let (dashes, name) = match w.strip_prefix("--") {
                Some(n) => ("--", n),
                None => ("-", w.strip_prefix('-').unwrap_or_default()),
            };
            if name.is_empty() || !w.starts_with('-') {
                a.positional.push(w.clone());
                continue;
            }
            a.dashes.push(dashes);
            if let Some((n, v)) = name.split_once('=') {
                a.options.push((n.to_string(), Some(v.to_string())));
            } else if takes_value.contains(&name) {
                let v = it
                    .next()
                    .ok_or_else(|| CliError::usage(format!("option {w} needs a value")))?;
                a.options.push((name.to_string(), Some(v.clone())));
            } else {
                a.options.push((name.to_string(), None));
            }
        }
        Ok(a)
    }

    /// The last value given for any of `names`.
    pub fn value(&self, names: &[&str]) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(n, v)| names.contains(&n.as_str()) && v.is_some())
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether any of `names` was given (as a flag or with a value).
    pub fn flag(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|(n, _)| names.contains(&n.as_str()))
    }

    /// Fails on any option not in `known`, so typos are not silently ignored. The
    /// message spells the option as it was given (`-w`, `--wach`).
    pub fn only(&self, known: &[&str]) -> Result<(), CliError> {
        match self
            .options
            .iter()
            .zip(&self.dashes)
            .find(|((n, _), _)| !known.contains(&n.as_str()))
        {
            Some(((n, _), dashes)) => Err(CliError::usage(format!("unknown option {dashes}{n}"))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_flags_positionals_and_rest() {
        let a = Args::parse(
            &words("get pods --config c.json -o=json -A -- ls -l"),
            &["config", "o"],
        )
        .unwrap();
        assert_eq!(a.positional, ["get", "pods"]);
        assert_eq!(a.value(&["config"]), Some("c.json"));
        assert_eq!(a.value(&["o", "output"]), Some("json"));
        assert!(a.flag(&["A"]));
        assert_eq!(a.rest, ["ls", "-l"]);
        assert!(a.only(&["config", "o", "A"]).is_ok());
        assert!(a.only(&["config"]).is_err());
    }

    #[test]
    fn unknown_options_are_echoed_as_given() {
        let a = Args::parse(&words("pods -w --wach --x=1"), &[]).unwrap();
        assert_eq!(a.only(&["wach", "x"]).unwrap_err().msg, "unknown option -w");
        assert_eq!(
            a.only(&["w", "x"]).unwrap_err().msg,
            "unknown option --wach"
        );
        assert_eq!(
            a.only(&["w", "wach"]).unwrap_err().msg,
            "unknown option --x"
        );
    }

    #[test]
    fn missing_value_is_a_usage_error() {
        let e = Args::parse(&words("apply -f"), &["f"]).unwrap_err();
        assert_eq!(e.code, 2);
    }

    #[test]
    fn lone_dash_is_positional() {
        let a = Args::parse(&words("apply -f -"), &["f"]).unwrap();
        assert_eq!(a.value(&["f"]), Some("-"));
    }
}
