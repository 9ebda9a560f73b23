//! RFC 3339 timestamps as Kubernetes writes them (`2026-11-29T22:40:28Z`), without a
//! date-time crate: UTC only on output, whole seconds; offsets and fractions on input.
//! Also the RFC 1123 form `kubectl describe` shows.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A time's UTC date and time of day, and its day count since 1970.
struct Utc {
    days: u64,
    date: (i64, i64, i64),
    /// Hours, minutes, seconds.
    clock: (u64, u64, u64),
}

impl Utc {
    /// `t` in UTC, whole seconds (before 1970 clamps to it).
    fn of(t: SystemTime) -> Utc {
        let secs = t
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let (days, rem) = (secs / 86_400, secs % 86_400);
        Utc {
            days,
            date: civil_from_days(days as i64),
            clock: (rem / 3600, rem / 60 % 60, rem % 60),
        }
    }
}

/// Formats `t` as `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds; before 1970 clamps to it).
pub fn format_rfc3339(t: SystemTime) -> String {
    let Utc {
        date: (y, m, d),
        clock: (h, mi, s),
        ..
    } = Utc::of(t);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `t` in RFC 3339 with milliseconds, UTC (`2026-11-29T12:00:00.250Z`): log lines.
pub fn format_rfc3339_millis(t: SystemTime) -> String {
    let millis = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_millis())
        .unwrap_or(0);
    let secs = format_rfc3339(t);
    format!("{}.{millis:03}Z", secs.trim_end_matches('Z'))
}

/// `t` as kubectl describe shows times (RFC 1123 with a numeric zone, in UTC here):
/// `Sat, 06 Dec 2025 06:02:38 +0000`.
pub fn format_rfc1123z(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let Utc {
        days,
        date: (y, m, d),
        clock: (h, mi, s),
    } = Utc::of(t);
    // 1970-01-01 was a Thursday.
    let weekday = DAYS[(days % 7) as usize];
    let month = MONTHS.get((m - 1) as usize).copied().unwrap_or("Jan");
    format!("{weekday}, {d:02} {month} {y:04} {h:02}:{mi:02}:{s:02} +0000")
}

/// The current time in RFC 3339.
pub fn now_rfc3339() -> String {
    format_rfc3339(SystemTime::now())
}

/// A string that is not an RFC 3339 time at or after 1970 (the string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadTime(pub String);

impl std::fmt::Display for BadTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "expected an RFC 3339 time like \"2026-11-29T22:40:28Z\", got {:?}",
            self.0
        )
    }
}

impl std::error::Error for BadTime {}

/// Parses an RFC 3339 timestamp (`Z` or `±HH:MM` offset, optional fraction) at or after
/// 1970; the error names what was expected.
pub fn parse_rfc3339(s: &str) -> Result<SystemTime, BadTime> {
    let bad = || BadTime(s.to_string());
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Result<i64, BadTime> {
        let part = b.get(from..from + len).ok_or_else(bad)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        Ok(part.iter().fold(0, |n, c| n * 10 + i64::from(c - b'0')))
    };
    let sep_ok = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')]
        .iter()
        .all(|&(i, c)| b.get(i) == Some(&c))
        && matches!(b.get(10), Some(b'T' | b't' | b' '));
    if !sep_ok {
        return Err(bad());
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60
    {
        return Err(bad());
    }
    // Optional fraction, then the zone.
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        nanos *= 10u32.pow(9u32.saturating_sub((i - start) as u32));
    }
    let offset = match b.get(i..) {
        Some(b"Z" | b"z") => 0,
        Some([sign @ (b'+' | b'-'), _, _, b':', _, _]) => {
            let o = num(i + 1, 2)? * 3600 + num(i + 4, 2)? * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return Err(bad()),
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset;
    let secs = u64::try_from(secs).map_err(|_| bad())?;
    Ok(UNIX_EPOCH + Duration::new(secs, nanos))
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_kubectl_describe_shows_them() {
        let t = |s: &str| format_rfc1123z(parse_rfc3339(s).unwrap());
        assert_eq!(t("1970-01-01T00:00:00Z"), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(t("2025-12-06T06:02:38Z"), "Sat, 06 Dec 2025 06:02:38 +0000");
        assert_eq!(t("2024-02-29T23:59:59Z"), "Thu, 29 Feb 2024 23:59:59 +0000");
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(at(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(format_rfc3339(at(1_795_992_028)), "2026-11-29T22:40:28Z");
        assert_eq!(format_rfc3339(at(4_107_542_399)), "2100-02-28T23:59:59Z");
        let t = at(1_795_992_028) + Duration::from_millis(7);
        assert_eq!(format_rfc3339_millis(t), "2026-11-29T22:40:28.007Z");
        assert_eq!(parse_rfc3339(&format_rfc3339_millis(t)).unwrap(), t);
    }

    #[test]
    fn parses_back_and_with_offsets() {
        for secs in [0, 951_782_400, 1_795_992_028, 4_107_542_399, 86_399] {
            assert_eq!(parse_rfc3339(&format_rfc3339(at(secs))).unwrap(), at(secs));
        }
        assert_eq!(
            parse_rfc3339("2026-11-29T23:40:28+01:00").unwrap(),
            at(1_795_992_028)
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T22:40:28.5Z").unwrap(),
            at(1_795_992_028) + Duration::from_millis(500)
        );
    }

    #[test]
    fn refuses_malformed() {
        for s in [
            "",
            "2026-11-29",
            "2026-11-29T22:40:28",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T22:40:28.Z",
            "1969-12-31T23:59:59Z",
            "2026-11-29T22:40:28Zjunk",
            "２026-11-29T22:40:28Z",
        ] {
            let e = parse_rfc3339(s).expect_err(s).to_string();
            assert!(e.contains("RFC 3339"), "{e}");
        }
    }
}
