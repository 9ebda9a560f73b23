//! How the store commands write their output: to stdout without panicking when the
//! reader goes away, and with kubectl's short human ages (`5s`, `3m12s`, `4d`).

use std::io::Write;
use std::time::{Duration, SystemTime};

/// Writes `text` to stdout. Errors are dropped on purpose: when the reader went away
/// (`tinylet get pods | head`) there is nobody left to tell, and panicking as `print!`
/// does would only add noise.
pub fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// The age of something created at RFC 3339 time `ts`, as kubectl prints it; `<unknown>`
/// for a missing or unreadable time.
pub fn age(ts: Option<&str>, now: SystemTime) -> String {
    let Some(t) = ts.and_then(|s| crate::model::time::parse_rfc3339(s).ok()) else {
        return "<unknown>".into();
    };
    match now.duration_since(t) {
        Ok(d) => human_duration(d),
        // Up to a second in the future is clock skew: "0s", as kubectl does.
        Err(e) if e.duration() < Duration::from_secs(2) => "0s".into(),
        Err(_) => "<invalid>".into(),
    }
}

/// kubectl's short human duration: `45s`, `3m12s`, `42m`, `5h3m`, `20h`, `3d4h`, `120d`,
/// `2y30d`, `9y`.
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (mins, hours) = (secs / 60, secs / 3600);
    let days = hours / 24;
    if secs < 120 {
        format!("{secs}s")
    } else if mins < 10 {
        match secs % 60 {
            0 => format!("{mins}m"),
            s => format!("{mins}m{s}s"),
        }
    } else if mins < 180 {
        format!("{mins}m")
    } else if hours < 8 {
        match mins % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        match hours % 24 {
            0 => format!("{days}d"),
            h => format!("{days}d{h}h"),
        }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        match days % 365 {
            0 => format!("{}y", days / 365),
            dy => format!("{}y{dy}d", days / 365),
        }
    } else {
        format!("{}y", days / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_like_kubectl() {
        let s = |n: u64| human_duration(Duration::from_secs(n));
        assert_eq!(s(0), "0s");
        assert_eq!(s(119), "119s");
        assert_eq!(s(120), "2m");
        assert_eq!(s(192), "3m12s");
        assert_eq!(s(600), "10m");
        assert_eq!(s(179 * 60), "179m");
        assert_eq!(s(3 * 3600), "3h");
        assert_eq!(s(5 * 3600 + 180), "5h3m");
        assert_eq!(s(20 * 3600), "20h");
        assert_eq!(s(48 * 3600), "2d");
        assert_eq!(s(76 * 3600), "3d4h");
        assert_eq!(s(120 * 86400), "120d");
        assert_eq!(s(760 * 86400), "2y30d");
        assert_eq!(s(9 * 365 * 86400), "9y");
    }

    #[test]
    fn ages_from_timestamps() {
        let now = crate::model::time::parse_rfc3339("2026-11-29T12:00:00Z").unwrap();
        assert_eq!(age(Some("2026-11-29T11:59:55Z"), now), "5s");
        assert_eq!(age(Some("2026-11-29T12:00:01Z"), now), "0s");
        assert_eq!(age(Some("2026-11-29T13:00:00Z"), now), "<invalid>");
        assert_eq!(age(None, now), "<unknown>");
        assert_eq!(age(Some("yesterday"), now), "<unknown>");
    }
}
