//! Shell-style wildcards for one host label of a registry key (`*.example.com`): `*`
//! matches any run of bytes (also none), `?` exactly one byte, anything else itself.
//!
//! Both the pattern (a pull secret's key) and the text (a pod's image) come from users,
//! so matching must not be exponential: the old recursive matcher tried every split of
//! the text at every `*`, and `*a*a*a…b` against `aaaa…` took the agent's only thread
//! for minutes. This is the classic two-pointer matcher with one backtrack point (the
//! last `*` seen): no recursion, constant memory, at most `|pattern| × |text|` steps.
//! One backtrack point is enough because a later `*` can absorb anything an earlier one
//! could have: once the part between two stars has matched, moving it right never helps.

/// Whether `text` matches `pattern` as a whole.
pub fn matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // After the last `*` seen: where the pattern resumes, and where in the text that
    // attempt started (the star has swallowed everything before it).
    let mut retry: Option<(usize, usize)> = None;
    while let Some(&c) = text.get(t) {
        match pattern.get(p) {
            Some(b'*') => {
                p += 1;
                retry = Some((p, t));
            }
            Some(&want) if want == b'?' || want == c => {
                p += 1;
                t += 1;
            }
            // A mismatch: let the last star swallow one more byte and try again.
            _ => match retry {
                Some((rp, rt)) => {
                    p = rp;
                    t = rt + 1;
                    retry = Some((rp, rt + 1));
                }
                None => return false,
            },
        }
    }
    pattern
        .get(p..)
        .unwrap_or_default()
        .iter()
        .all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The obviously correct matcher, by dynamic programming over (pattern, text)
    /// prefixes: `ok[j]` says whether the pattern so far matches `text[..j]`.
    fn reference(pattern: &[u8], text: &[u8]) -> bool {
        let mut ok = vec![false; text.len() + 1];
        ok[0] = true;
        for &c in pattern {
            let mut next = vec![false; text.len() + 1];
            for j in 0..=text.len() {
                next[j] = match c {
                    b'*' => ok[j] || (j > 0 && next[j - 1]),
                    b'?' => j > 0 && ok[j - 1],
                    _ => j > 0 && ok[j - 1] && text[j - 1] == c,
                };
            }
            ok = next;
        }
        ok[text.len()]
    }

    /// xorshift64*: a small seeded generator, so a failure reproduces from its seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn string(&mut self, alphabet: &[u8], max_len: usize) -> Vec<u8> {
            let len = self.below(max_len + 1);
            (0..len)
                .map(|_| alphabet[self.below(alphabet.len())])
                .collect()
        }
    }

    #[test]
    fn examples() {
        for (p, t, want) in [
            ("", "", true),
            ("", "a", false),
            ("*", "", true),
            ("*", "anything", true),
            ("**", "", true),
            ("?", "", false),
            ("?", "x", true),
            ("a*", "abc", true),
            ("*c", "abc", true),
            ("*b*", "abc", true),
            ("*x*", "abc", false),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("registry-*", "registry-eu", true),
            ("registry-*", "registry", false),
            ("*?", "", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
        ] {
            assert_eq!(matches(p.as_bytes(), t.as_bytes()), want, "{p:?} {t:?}");
        }
    }

    #[test]
    fn agrees_with_the_reference_on_random_patterns() {
        // Small alphabets so that matches are common; patterns lean on `*` and `?`.
        let mut rng = Rng(0x7117_1e7f_0000_0017);
        let start = Instant::now();
        for case in 0..200_000 {
            let p = rng.string(b"ab*?", 12);
            let t = rng.string(b"ab", 24);
            assert_eq!(
                matches(&p, &t),
                reference(&p, &t),
                "case {case}: pattern {:?} text {:?}",
                String::from_utf8_lossy(&p),
                String::from_utf8_lossy(&t)
            );
        }
        // Generous for a debug build on a busy machine: each case is a few hundred steps.
        assert!(
            start.elapsed() < crate::test_time_limit(Duration::from_secs(20)),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn adversarial_patterns_take_microseconds() {
        // The label and worse: many stars, a long text that almost matches.
        let text = vec![b'a'; 4096];
        for stars in [1, 14, 64, 200] {
            let mut p = b"*a".repeat(stars);
            p.push(b'b');
            let start = Instant::now();
            assert!(!matches(&p, &text));
            assert!(
                start.elapsed() < crate::test_time_limit(Duration::from_millis(100)),
                "{stars} stars: {:?}",
                start.elapsed()
            );
        }
    }
}
