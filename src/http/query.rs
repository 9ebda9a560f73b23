//! What request parsers share: the refusal (status and a kubelet-like message),
//! percent-decoding of path segments and query values, and kubelet's readings of query
//! values (Go's `strconv.ParseBool`, whole numbers).

use super::Answer;

/// A request that cannot be served: the status and kubelet-like message.
#[derive(Debug, PartialEq)]
pub struct Refused(pub u16, pub String);

impl Refused {
    /// A 400 with `msg`.
    pub fn bad(msg: String) -> Refused {
        Refused(400, msg)
    }

    /// As an answer.
    pub fn answer(&self) -> Answer {
        Answer::text(self.0, &format!("{}\n", self.1))
    }
}

/// Go's `strconv.ParseBool`, as kubelet reads the query.
pub fn boolean(key: &str, v: &str) -> Result<bool, Refused> {
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" | "" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(Refused::bad(format!(
            "{key}: expected true or false, got {v:?}"
        ))),
    }
}

/// A whole number of at least `min`.
pub fn number(key: &str, v: &str, min: u64) -> Result<u64, Refused> {
    match v.parse::<u64>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(Refused::bad(format!(
            "{key}: expected a whole number of at least {min}, got {v:?}"
        ))),
    }
}

/// Percent-decoding of a path segment or query value (`+` is a space in a query, but
/// kubelet's values never hold one; it is kept, so a `sinceTime` offset survives). A
/// `%` must be followed by two hex digits: no sign (`%+f`), no short escape.
pub fn decode(s: &str) -> Result<String, Refused> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            // `to_digit`, not `from_str_radix`: the latter takes "+f" for 15.
            let hex = |at: usize| b.get(at).and_then(|&h| char::from(h).to_digit(16));
            let (Some(high), Some(low)) = (hex(i + 1), hex(i + 2)) else {
                return Err(Refused::bad(format!("bad percent-encoding in {s:?}")));
            };
            out.push((high << 4 | low) as u8);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| Refused::bad(format!("{s:?} is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_are_two_hex_digits() {
        assert_eq!(decode("a%2Fb%2bc%3a").unwrap(), "a/b+c:");
        assert_eq!(decode("caf%C3%A9").unwrap(), "café");
        for bad in ["%+f", "%-1", "% f", "%f", "%", "%g0", "a%+0b", "%ff", "%C3"] {
            let e = decode(bad).unwrap_err();
            assert_eq!(e.0, 400, "{bad}: {e:?}");
        }
    }

    #[test]
    fn booleans_and_numbers_as_kubelet_reads_them() {
        assert_eq!(boolean("follow", ""), Ok(true));
        assert_eq!(boolean("follow", "F"), Ok(false));
        assert_eq!(boolean("follow", "yes").unwrap_err().0, 400);
        assert_eq!(number("tailLines", "0", 0), Ok(0));
        assert_eq!(number("limitBytes", "0", 1).unwrap_err().0, 400);
        assert_eq!(number("limitBytes", "-1", 0).unwrap_err().0, 400);
    }
}
