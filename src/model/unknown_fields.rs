//! Fields of a manifest that no v1 object has, as kubectl's field validation names them
//! (`spec.containers[0].comand`): the decoder ignores unknown fields (manifests written
//! for a cluster carry many tinylet does not read), so a typo would otherwise pass in
//! silence and the pod run without what it meant to say.
//!
//! One walk over the decoded document against the field names of [`super::schema`]: no
//! second parser. Work is bounded by the document (each value is visited at most once,
//! nesting by the schema's depth), the answer by [`MAX_REPORTED`] paths; values of the
//! wrong type are skipped here (the decoder reports them).

use super::schema::{self, Fields, Shape};
use serde_json::Value;
use std::fmt::Write;

/// Paths reported at most per object (then one line counting the rest).
pub const MAX_REPORTED: usize = 100;

/// The paths of the fields of `doc` (an object of its `kind`) that its kind does not
/// have, in key order; empty for a kind tinylet does not know (the decoder says so).
pub fn find(doc: &Value) -> Vec<String> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    let Some(fields) = schema::of_kind(kind) else {
        return Vec::new();
    };
    let mut found = Found::default();
    walk(doc, fields, &mut String::new(), &mut found);
    if found.more > 0 {
        found.paths.push(format!("... and {} more", found.more));
    }
    found.paths
}

/// What the walk found: the first paths, and how many more there were.
#[derive(Default)]
struct Found {
    paths: Vec<String>,
    more: usize,
}

impl Found {
    fn add(&mut self, path: &str) {
        if self.paths.len() < MAX_REPORTED {
            // A key may be as long as the input: the message is cut.
            self.paths.push(super::clip(path.to_string()));
        } else {
            self.more += 1;
        }
    }
}

/// Checks the members of `v` against `fields`; `path` is where `v` is (restored on return).
fn walk(v: &Value, fields: &Fields, path: &mut String, found: &mut Found) {
    let Value::Object(members) = v else {
        return;
    };
    for (name, value) in members {
        let at = path.len();
        if at > 0 {
            path.push('.');
        }
        path.push_str(name);
        match fields.get(name) {
            None => found.add(path),
            Some(Shape::Any) => {}
            Some(Shape::Object(inner)) => walk(value, inner, path, found),
            Some(Shape::List(inner)) => {
                for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                    let before = path.len();
                    let _ = write!(path, "[{i}]");
                    walk(item, inner, path, found);
                    path.truncate(before);
                }
            }
        }
        path.truncate(at);
    }
}

#[cfg(test)]
mod tests;
