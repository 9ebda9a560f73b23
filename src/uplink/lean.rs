//! Decoding API objects (a watch event's, a list's items) without
//! `metadata.managedFields`: the server-side-apply bookkeeping, on v1.20 often the
//! largest part of a pod (a tree of small maps, one allocation per key; our own status
//! patches add to it), that nothing on the node reads (the stored projection drops it,
//! see [`super::objects_projection`]). Skipped while parsing, so it is never built as a
//! `Value`: fewer and smaller allocations per event, and a relist of many pods does not
//! hold all their field trees at once.

use serde::de::{Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// A JSON value read without `metadata.managedFields` at the top level, nor in each
/// object of a top-level `items` array (a list); anything else as it is.
#[derive(Debug)]
pub struct LeanValue(pub Value);

impl<'de> Deserialize<'de> for LeanValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LevelVisitor(Level::Object))
            .map(LeanValue)
    }
}

/// Which level of the object is being read.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Object,
    Metadata,
    Items,
    /// Below: read as any value.
    Plain,
}

struct LevelVisitor(Level);

impl<'de> DeserializeSeed<'de> for LevelVisitor {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LevelVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match (self.0, key.as_str()) {
                (Level::Object, "metadata") => {
                    map.next_value_seed(LevelVisitor(Level::Metadata))?
                }
                (Level::Object, "items") => map.next_value_seed(LevelVisitor(Level::Items))?,
                (Level::Metadata, "managedFields") => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                _ => map.next_value()?,
            };
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }

    // Not an object (or `metadata` not one): read as any value.
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let item = match self.0 {
            Level::Items => Level::Object,
            _ => Level::Plain,
        };
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(LevelVisitor(item))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lean(text: &str) -> Value {
        serde_json::from_str::<LeanValue>(text).unwrap().0
    }

    #[test]
    fn managed_fields_are_left_out_and_the_rest_kept() {
        let text = r#"{"kind":"Pod","metadata":{"name":"p","managedFields":[{"manager":"kubectl",
            "fieldsV1":{"f:spec":{}}}],"labels":{"a":"1"}},"spec":{"x":[1,2.5,null,true]},
            "status":{"managedFields":"kept: not metadata"}}"#;
        assert_eq!(
            lean(text),
            json!({"kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},
                "spec":{"x":[1,2.5,null,true]},"status":{"managedFields":"kept: not metadata"}})
        );
    }

    #[test]
    fn list_items_lose_their_managed_fields() {
        let text = r#"{"metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a",
            "managedFields":[]},"spec":{"items":[{"metadata":{"managedFields":1}}]}},3]}"#;
        assert_eq!(
            lean(text),
            json!({"metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"},
                "spec":{"items":[{"metadata":{"managedFields":1}}]}},3]})
        );
    }

    #[test]
    fn anything_else_reads_as_it_is() {
        assert_eq!(lean(r#"[{"metadata":1}]"#), json!([{"metadata": 1}]));
        assert_eq!(lean(r#""s""#), json!("s"));
        assert_eq!(lean(r#"{"metadata":null}"#), json!({"metadata": null}));
    }
}
