//! Quantities (`Quantity::parse` and its JSON form). Properties: no panic (no overflow:
//! debug assertions are on); values stay within Kubernetes' range; the text is kept as
//! written; a sum prints in a form that parses back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tinylet::model::Quantity;

/// 2^63 - 1 units, in nano-units: the largest magnitude a quantity may have.
const MAX_NANOS: i128 = i64::MAX as i128 * 1_000_000_000;

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<Quantity>(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(q) = Quantity::parse(text) else {
        return;
    };
    assert!(q.nanos().abs() <= MAX_NANOS, "{text}: {}", q.nanos());
    assert_eq!(q.as_str(), text);
    let _ = (q.value(), q.milli_value(), q.is_zero());
    if let Some(sum) = q.checked_add(&q) {
        assert_eq!(sum.nanos(), 2 * q.nanos(), "{text}");
        let back = Quantity::parse(sum.as_str())
            .unwrap_or_else(|e| panic!("{text} + itself printed as {sum}: {e}"));
        assert_eq!(
            back.nanos(),
            sum.nanos(),
            "{text} + itself printed as {sum}"
        );
    }
});
