//! The config's units: Go-style durations (`"1h2m3s"`, `"500ms"`) and byte sizes
//! (Kubernetes quantities or a plain number of bytes), parsed and formatted, and the
//! serde adapters that let a field take either a string or a number.

use crate::model::quantity::QuantityError;
use serde::{Deserialize, Deserializer, Serializer};
use std::fmt;
use std::time::Duration;

/// Parses a Go-style duration: `1h2m3s`, `500ms`, `1.5s`, `250us`, `0`.
pub fn parse_duration(s: &str) -> Result<Duration, BadDuration> {
    let bad = || BadDuration(s.to_string());
    let mut rest = s.trim();
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total_nanos: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total_nanos += value * scale;
    }
    if !total_nanos.is_finite() || total_nanos > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(Duration::from_nanos(total_nanos as u64))
}

/// A string that is not a duration (the string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadDuration(pub String);

impl fmt::Display for BadDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "expected a duration like \"1s\", \"500ms\" or \"2m0s\", got {:?}",
            self.0
        )
    }
}

impl std::error::Error for BadDuration {}

/// A string that is not a whole, non-negative number of bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadSize {
    /// The string.
    pub text: String,
    /// Why it is not a quantity, when it is not.
    pub quantity: Option<QuantityError>,
}

impl fmt::Display for BadSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "expected a byte size like \"10Mi\", \"1G\" or 4096, got {:?}",
            self.text
        )?;
        match &self.quantity {
            Some(e) => write!(f, ": {e}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for BadSize {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.quantity
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Formats a duration the way `parse_duration` reads it back (`1m30s`, `500ms`).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    if ms % 1000 != 0 {
        return format!("{ms}ms");
    }
    let (h, m, s) = (ms / 3_600_000, (ms / 60_000) % 60, (ms / 1000) % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 || out.is_empty() {
        out += &format!("{s}s");
    }
    out
}

/// A byte count for people, in binary units with one decimal (`512 B`, `1.5 KiB`,
/// `23.5 GiB`): log lines read better than `25276194816 bytes`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut unit = 1024u128;
    let mut name = UNITS[0];
    for next in &UNITS[1..] {
        if u128::from(bytes) < unit * 1024 {
            break;
        }
        unit *= 1024;
        name = next;
    }
    // Tenths, rounded half up, in integers (no float formatting for one decimal).
    let tenths = (u128::from(bytes) * 10 + unit / 2) / unit;
    format!("{}.{} {name}", tenths / 10, tenths % 10)
}

/// Parses a byte size: a Kubernetes quantity (`"10Mi"`, `"1G"`, `"1e3"`, or a plain
/// number of bytes) that is a whole, non-negative number of bytes.
pub fn parse_size(s: &str) -> Result<u64, BadSize> {
    let bad = || BadSize {
        text: s.to_string(),
        quantity: None,
    };
    let q = crate::model::Quantity::parse(s.trim()).map_err(|e| BadSize {
        text: s.to_string(),
        quantity: Some(e),
    })?;
    if q.nanos() < 0 || q.nanos() % 1_000_000_000 != 0 {
        return Err(bad());
    }
    u64::try_from(q.value()).map_err(|_| bad())
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumOrStr {
    Num(f64),
    Str(String),
}

pub(super) mod duration {
    use super::*;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        match NumOrStr::deserialize(d)? {
            NumOrStr::Num(n) if n >= 0.0 && n.is_finite() && n < 1e12 => {
                Ok(Duration::from_secs_f64(n))
            }
            NumOrStr::Num(n) => Err(serde::de::Error::custom(format!(
                "expected a non-negative number of seconds, got {n}"
            ))),
            NumOrStr::Str(s) => parse_duration(&s).map_err(serde::de::Error::custom),
        }
    }
}

pub(super) mod bytes {
    use super::*;
    pub fn serialize<S: Serializer>(b: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*b)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match NumOrStr::deserialize(d)? {
            NumOrStr::Num(n) if n >= 0.0 && n.fract() == 0.0 && n < u64::MAX as f64 => Ok(n as u64),
            NumOrStr::Num(n) => Err(serde::de::Error::custom(format!(
                "expected a whole number of bytes, got {n}"
            ))),
            NumOrStr::Str(s) => parse_size(&s).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_for_people() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1023), "1023 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(25_276_194_816), "23.5 GiB");
        assert_eq!(format_size(10 << 20), "10.0 MiB");
        assert_eq!(format_size(u64::MAX), "16384.0 PiB");
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("2m0s").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("1h2m3s").unwrap(), Duration::from_secs(3723));
        assert!(parse_duration("5 minutes").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(format_duration(Duration::from_secs(3723)), "1h2m3s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(parse_size("10Mi").unwrap(), 10 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1_000_000_000);
        assert!(parse_size("10MB").is_err());
        assert!(parse_size("99999999999Ei").is_err());
        assert_eq!(parse_size("1e3").unwrap(), 1000);
        assert_eq!(parse_size("0.5Ki").unwrap(), 512);
        assert!(parse_size("-1").is_err());
        assert!(parse_size("1.5").is_err());
        assert!(parse_size("500m").is_err());
    }
}
