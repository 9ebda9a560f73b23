//! Small serde helpers shared by the model types.

use serde::{Deserialize, Deserializer};

/// Reads `null` as the type's default, as Go's JSON decoder does (YAML-to-JSON tools
/// write `env: null` for an empty `env:`).
pub fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `skip_serializing_if` for booleans that are omitted when false (Go's `omitempty`).
pub fn is_false(b: &bool) -> bool {
    !*b
}

/// `skip_serializing_if` for numbers that are omitted when zero (Go's `omitempty`).
pub fn is_zero(n: &i32) -> bool {
    *n == 0
}
