//! Small serde helpers shared by the model types.

/// `skip_serializing_if` for booleans that are omitted when false (Go's `omitempty`).
pub fn is_false(b: &bool) -> bool {
    !*b
}

/// `skip_serializing_if` for numbers that are omitted when zero (Go's `omitempty`).
pub fn is_zero(n: &i32) -> bool {
    *n == 0
}
