//! Kubernetes resource quantities (`500m`, `0.5`, `64Mi`, `1G`, `1e3`), parsed the way
//! the API server parses them and held exactly, in nano-units, without floats.
//!
//! Grammar (Kubernetes' `ParseQuantity`): an optional sign, digits with an optional
//! decimal point (`5.`, `.5` are fine), then one suffix: a decimal SI suffix
//! (`n u m "" k M G T P E`), a binary one (`Ki Mi Gi Ti Pi Ei`) or a decimal exponent
//! (`e3`, `E-2`, `e+6`). Values finer than 1n are rounded up (away from zero) to 1n, as
//! Kubernetes does. Differences, on purpose: a suffix without digits (`Mi`, `.`) is
//! refused where Kubernetes reads 0, and magnitudes above 2^63-1 are refused where
//! Kubernetes caps or keeps arbitrary precision; neither is a sane resource amount.

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

const NANO: i128 = 1_000_000_000;
/// The largest magnitude accepted, in nano-units: 2^63-1 whole units.
const MAX_NANOS: i128 = i64::MAX as i128 * NANO;

/// A parsed quantity: the text as written (serialized back unchanged) and its exact value.
#[derive(Debug, Clone)]
pub struct Quantity {
    text: String,
    nanos: i128,
}

impl Quantity {
    /// Parses a quantity string; the error says what is wrong and what is expected.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        let nanos = parse_nanos(s).map_err(|why| QuantityError {
            text: s.to_owned(),
            why,
        })?;
        Ok(Quantity {
            text: s.to_owned(),
            nanos,
        })
    }

    /// The text as it was written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The exact value in units of 10^-9.
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// The value rounded up (away from zero) to a whole number, as Kubernetes' `Value()`.
    pub fn value(&self) -> i64 {
        ceil_div(self.nanos, NANO)
    }

    /// The value in thousandths rounded up (away from zero), as `MilliValue()`; saturates.
    pub fn milli_value(&self) -> i64 {
        ceil_div(self.nanos, NANO / 1000)
    }

    /// The exact sum, or None beyond the accepted range. Its text is plain decimal.
    pub fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        let nanos = self.nanos.checked_add(other.nanos)?;
        if nanos.abs() > MAX_NANOS {
            return None;
        }
        Some(Quantity {
            text: format_nanos(nanos),
            nanos,
        })
    }

    /// Whether the quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }
}

/// Divides rounding away from zero, saturating at the i64 range.
fn ceil_div(n: i128, unit: i128) -> i64 {
    let mut q = n / unit;
    if n % unit != 0 {
        q += n.signum();
    }
    i64::try_from(q).unwrap_or(if q < 0 { i64::MIN } else { i64::MAX })
}

/// Plain decimal text for a value in nano-units (`1.5`, `-0.000000001`, `64`).
fn format_nanos(n: i128) -> String {
    let sign = if n < 0 { "-" } else { "" };
    let (int, frac) = (n.abs() / NANO, n.abs() % NANO);
    if frac == 0 {
        return format!("{sign}{int}");
    }
    let frac = format!("{frac:09}");
    format!("{sign}{int}.{}", frac.trim_end_matches('0'))
}

/// A string that is not a quantity: the text and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantityError {
    /// The text given.
    pub text: String,
    /// What is wrong.
    pub why: Why,
}

/// What is wrong with a quantity's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// No text.
    Empty,
    /// No digit before or after the point.
    NoDigits,
    /// A suffix that is neither a known one nor an exponent.
    UnknownSuffix(String),
    /// An exponent too large to read.
    ExponentOutOfRange(String),
    /// Larger than Kubernetes allows.
    TooLarge,
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid quantity {:?}: {} (expected a number with an optional suffix n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or exponent e<N>, like 500m, 64Mi or 1e3)",
            self.text, self.why
        )
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Empty => f.write_str("empty"),
            Why::NoDigits => f.write_str("no digits"),
            Why::UnknownSuffix(s) => write!(f, "unknown suffix {s:?}"),
            Why::ExponentOutOfRange(s) => write!(f, "exponent {s:?} out of range"),
            Why::TooLarge => f.write_str("too large (the limit is 9223372036854775807)"),
        }
    }
}

impl std::error::Error for QuantityError {}

/// The multiplier of a suffix: (power of two, power of ten).
fn suffix_scale(suffix: &str) -> Result<(u32, i64), Why> {
    let known = match suffix {
        "" => Some((0, 0)),
        "n" => Some((0, -9)),
        "u" => Some((0, -6)),
        "m" => Some((0, -3)),
        "k" => Some((0, 3)),
        "M" => Some((0, 6)),
        "G" => Some((0, 9)),
        "T" => Some((0, 12)),
        "P" => Some((0, 15)),
        "E" => Some((0, 18)),
        "Ki" => Some((10, 0)),
        "Mi" => Some((20, 0)),
        "Gi" => Some((30, 0)),
        "Ti" => Some((40, 0)),
        "Pi" => Some((50, 0)),
        "Ei" => Some((60, 0)),
        _ => None,
    };
    if let Some(k) = known {
        return Ok(k);
    }
    let exp = suffix
        .strip_prefix('e')
        .or_else(|| suffix.strip_prefix('E'))
        .filter(|e| {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        });
    match exp.map(str::parse::<i64>) {
        Some(Ok(e)) => Ok((0, e)),
        Some(Err(_)) => Err(Why::ExponentOutOfRange(suffix.to_string())),
        _ => Err(Why::UnknownSuffix(suffix.to_string())),
    }
}

/// Parses `s` into nano-units, rounding sub-nano remainders away from zero.
fn parse_nanos(s: &str) -> Result<i128, Why> {
    if s.is_empty() {
        return Err(Why::Empty);
    }
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (int, after) = rest.split_at(int_len);
    let (frac, suffix) = match after.strip_prefix('.') {
        Some(f) => f.split_at(f.bytes().take_while(u8::is_ascii_digit).count()),
        None => ("", after),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(Why::NoDigits);
    }
    let (pow2, pow10) = suffix_scale(suffix)?;
    let int = int.trim_start_matches('0');
    if int.is_empty() && frac.bytes().all(|b| b == b'0') {
        return Ok(0);
    }
    let magnitude = scale_digits(int, frac, pow10.saturating_add(9), 1i128 << pow2)
        .filter(|n| *n <= MAX_NANOS)
        .ok_or(Why::TooLarge)?;
    Ok(if negative { -magnitude } else { magnitude })
}

/// `ceil(int.frac * 10^shift * mult)`, exactly; None on overflow.
fn scale_digits(int: &str, frac: &str, shift: i64, mult: i128) -> Option<i128> {
    let digits = || {
        int.bytes()
            .chain(frac.bytes())
            .map(|b| i128::from(b - b'0'))
    };
    let total = int.len() + frac.len();
    // Where the decimal point lands after the shift, counted in digits from the left.
    let point = (int.len() as i64).saturating_add(shift);
    let split = point.clamp(0, total as i64) as usize;
    // Integer part: the digits left of the point, then zeros if the point moved past them.
    let mut whole: i128 = 0;
    for d in digits().take(split) {
        whole = whole.checked_mul(10)?.checked_add(d)?;
    }
    let zeros = point.saturating_sub(total as i64).max(0);
    if whole != 0 {
        if zeros > 39 {
            return None;
        }
        whole = whole.checked_mul(10i128.checked_pow(zeros as u32)?)?;
    }
    whole = whole.checked_mul(mult)?;
    // Fraction part times mult, by Horner's rule from the right: exact floor + remainder flag.
    let mut carry: i128 = 0;
    let mut inexact = false;
    let (from_int, from_frac) = match split.checked_sub(int.len()) {
        None => (&int[split..], frac),
        Some(k) => ("", &frac[k..]),
    };
    let leading_zeros = (-point).clamp(0, 64) as usize;
    let steps = (from_frac.bytes().rev().chain(from_int.bytes().rev()))
        .map(|b| i128::from(b - b'0'))
        .chain(std::iter::repeat_n(0, leading_zeros));
    for d in steps {
        let t = d * mult + carry;
        inexact |= t % 10 != 0;
        carry = t / 10;
    }
    whole.checked_add(carry)?.checked_add(i128::from(inexact))
}

impl PartialEq for Quantity {
    /// Equal values are equal quantities, whatever their spelling (`1` == `1000m`).
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    /// A JSON string, or a JSON number read as its decimal text (as Kubernetes does).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Quantity;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a quantity string like \"500m\" or \"64Mi\", or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
                Quantity::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Quantity, E> {
                self.visit_str(&n.to_string())
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Quantity, E> {
                self.visit_str(&n.to_string())
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Quantity, E> {
                self.visit_str(&n.to_string())
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> i128 {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{e}")).nanos()
    }

    #[test]
    fn kubernetes_spellings() {
        assert_eq!(n("500m"), 500_000_000);
        assert_eq!(n("0.5"), 500_000_000);
        assert_eq!(n(".5"), 500_000_000);
        assert_eq!(n("5."), 5 * NANO);
        assert_eq!(n("+1"), NANO);
        assert_eq!(n("-1"), -NANO);
        assert_eq!(n("64Mi"), (64i128 << 20) * NANO);
        assert_eq!(n("1G"), 1_000_000_000 * NANO);
        assert_eq!(n("1e3"), 1000 * NANO);
        assert_eq!(n("1E3"), 1000 * NANO);
        assert_eq!(n("1e+3"), 1000 * NANO);
        assert_eq!(n("1e-3"), 1_000_000);
        assert_eq!(n("1E"), 10i128.pow(18) * NANO);
        assert_eq!(n("1n"), 1);
        assert_eq!(n("1u"), 1000);
        assert_eq!(n("1k"), 1000 * NANO);
        assert_eq!(n("1Ki"), 1024 * NANO);
        assert_eq!(n("1.5Gi"), 1_610_612_736 * NANO);
        assert_eq!(n("0"), 0);
        assert_eq!(n("000"), 0);
        assert_eq!(n("0Mi"), 0);
        assert_eq!(n("0e9999999"), 0);
        assert_eq!(n("007"), 7 * NANO);
        assert_eq!(n("7Ei"), 7 * (1i128 << 60) * NANO);
    }

    #[test]
    fn sub_nano_rounds_away_from_zero() {
        assert_eq!(n("0.0000000001"), 1);
        assert_eq!(n("1.0000000001"), NANO + 1);
        assert_eq!(n("-0.0000000001"), -1);
        assert_eq!(n("1e-99999"), 1);
        assert_eq!(n("0.1n"), 1);
        // 0.001Ki = 1.024 exactly; 1e-10Ki = 102.4n -> 103n; 1e-13Ki = 0.1024n -> 1n.
        assert_eq!(n("0.001Ki"), 1_024_000_000);
        assert_eq!(n("0.0000000001Ki"), 103);
        assert_eq!(n("0.0000000000001Ki"), 1);
        assert_eq!(
            n("1.00000000000000000000000000000000001Ki"),
            1024 * NANO + 1
        );
    }

    #[test]
    fn values_round_like_kubernetes() {
        let q = |s: &str| Quantity::parse(s).unwrap();
        assert_eq!(q("500m").value(), 1);
        assert_eq!(q("1500m").value(), 2);
        assert_eq!(q("-1500m").value(), -2);
        assert_eq!(q("2").value(), 2);
        assert_eq!(q("500m").milli_value(), 500);
        assert_eq!(q("1n").milli_value(), 1);
        assert_eq!(q("64Mi").value(), 64 << 20);
        assert_eq!(q("9223372036854775807").value(), i64::MAX);
        assert_eq!(q("9223372036854775807").milli_value(), i64::MAX);
    }

    #[test]
    fn bad_spellings_are_refused_with_a_reason() {
        for (s, why) in [
            ("", "empty"),
            ("1.5.5", "unknown suffix \".5\""),
            ("10MB", "unknown suffix \"MB\""),
            ("Mi", "no digits"),
            (".", "no digits"),
            ("-", "no digits"),
            ("1 Mi", "unknown suffix \" Mi\""),
            (" 1", "no digits"),
            ("1e", "unknown suffix \"e\""),
            ("1e3k", "unknown suffix \"e3k\""),
            ("1e1.5", "unknown suffix \"e1.5\""),
            ("1ki", "unknown suffix \"ki\""),
            ("1KiB", "unknown suffix \"KiB\""),
            ("0x10", "unknown suffix \"x10\""),
            ("1e99999999999999999999", "out of range"),
            ("1e100", "too large"),
            ("8Ei", "too large"),
            ("9223372036854775808", "too large"),
            ("1e+-3", "unknown suffix"),
            ("++1", "no digits"),
            ("1\0", "unknown suffix"),
        ] {
            let e = Quantity::parse(s).expect_err(s).to_string();
            assert!(e.contains(why), "{s:?}: {e}");
            assert!(e.starts_with(&format!("invalid quantity {s:?}: ")), "{e}");
        }
    }

    #[test]
    fn text_round_trips_and_values_compare() {
        let q: Quantity = serde_json::from_str("\"1000m\"").unwrap();
        assert_eq!(serde_json::to_string(&q).unwrap(), "\"1000m\"");
        let one: Quantity = serde_json::from_str("1").unwrap();
        assert_eq!(q, one);
        let half: Quantity = serde_json::from_str("0.5").unwrap();
        assert_eq!(half.as_str(), "0.5");
        assert!(half < one);
        let sum = half.checked_add(&one).unwrap();
        assert_eq!(sum.as_str(), "1.5");
        assert!(serde_json::from_str::<Quantity>("true").is_err());
        let e = serde_json::from_str::<Quantity>("\"10MB\"").unwrap_err();
        assert!(e.to_string().contains("unknown suffix"), "{e}");
    }
}
