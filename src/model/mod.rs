//! The Kubernetes v1 objects the agent reads: Pod, ConfigMap, Secret; quantities;
//! validation; defaulting.
//!
//! [`parse_object`] is the one way in: it bounds the input size, reads `kind` and
//! `apiVersion`, decodes the typed object (unknown fields ignored, `null` as absent),
//! applies the API server's defaults and validates everything, reporting every problem
//! at once, each prefixed with the source (a file path) and the field path.
//! [`unknown_fields`] finds the fields no v1 object has (typos), for `tinylet apply`.

pub mod affinity;
pub mod base64;
pub mod configmap;
pub mod container;
pub mod defaults;
pub mod image_name;
mod json_path;
pub mod manifests;
pub mod meta;
pub mod node_resources;
mod nulls;
pub mod pod;
pub mod pretty;
pub mod projected;
pub mod quantity;
pub mod reason;
pub mod schema;
pub mod secret;
mod serde_util;
pub mod status;
pub mod time;
pub mod unknown_fields;
pub mod validate;
pub mod wildcard;
pub mod yaml;

pub use configmap::ConfigMap;
pub use container::Container;
pub use meta::ObjectMeta;
pub use node_resources::NodeResources;
pub use pod::{Pod, PodSpec};
pub use quantity::Quantity;
pub use reason::Reason;
pub use secret::Secret;
pub use status::PodStatus;

use serde::de::DeserializeOwned;
use std::fmt;

/// Manifests larger than this are refused before parsing (Kubernetes' own object limit
/// is about 1.5 MiB; a gateway has little memory to spare).
pub const MAX_MANIFEST_BYTES: usize = 1 << 20;

/// Why a manifest was refused: one line per problem, each prefixed with the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    /// Every problem found, each naming the source and the field.
    pub messages: Vec<String>,
}

/// At most this many messages are reported for one manifest (then a count of the rest).
pub const MAX_ERRORS: usize = 100;

/// A message longer than this is cut, so a hostile value cannot flood a log or terminal.
const MAX_MESSAGE_BYTES: usize = 512;

impl ModelError {
    fn one(source: &str, msg: impl fmt::Display) -> ModelError {
        prefixed(source, vec![msg.to_string()])
    }
}

/// Prefixes each message with the source, cuts long ones and bounds their number.
fn prefixed(source: &str, mut errors: Vec<String>) -> ModelError {
    let more = errors.len().saturating_sub(MAX_ERRORS);
    errors.truncate(MAX_ERRORS);
    if more > 0 {
        errors.push(format!("... and {more} more errors"));
    }
    let messages = errors
        .into_iter()
        .map(|e| clip(one_line(format!("{source}: {e}"))))
        .collect();
    ModelError { messages }
}

/// `s` with control characters escaped (`\n`, `\u{1b}`): each message is one log line,
/// and field paths and file names carry the input's own bytes (a map key may hold a
/// newline and a forged log line after it).
fn one_line(s: String) -> String {
    if !s.chars().any(char::is_control) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Cuts `s` to about [`MAX_MESSAGE_BYTES`] at a character boundary, saying how long it was.
fn clip(mut s: String) -> String {
    if s.len() <= MAX_MESSAGE_BYTES {
        return s;
    }
    let total = s.len();
    let mut cut = MAX_MESSAGE_BYTES;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s.push_str(&format!("... ({total} bytes in all)"));
    s
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.messages.join("\n"))
    }
}

impl std::error::Error for ModelError {}

/// One of the kinds the agent stores.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// A Pod.
    Pod(Box<Pod>),
    /// A ConfigMap.
    ConfigMap(ConfigMap),
    /// A Secret.
    Secret(Secret),
}

/// The kinds accepted, in the order error messages list them.
pub const KINDS: [&str; 3] = ["Pod", "ConfigMap", "Secret"];

impl Object {
    /// `Pod`, `ConfigMap` or `Secret`.
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Pod(_) => "Pod",
            Object::ConfigMap(_) => "ConfigMap",
            Object::Secret(_) => "Secret",
        }
    }

    /// The object's metadata.
    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Object::Pod(p) => &p.metadata,
            Object::ConfigMap(c) => &c.metadata,
            Object::Secret(s) => &s.metadata,
        }
    }

    /// The object's metadata, to change.
    pub fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Object::Pod(p) => &mut p.metadata,
            Object::ConfigMap(c) => &mut c.metadata,
            Object::Secret(s) => &mut s.metadata,
        }
    }

    /// The object's namespace.
    pub fn namespace(&self) -> &str {
        &self.meta().namespace
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.meta().name
    }

    /// Pretty JSON, as written to the store and printed by `get -o json`.
    pub fn to_json_pretty(&self) -> String {
        // Serializing these types cannot fail: string keys, no non-finite floats.
        pretty::pretty(&self.to_json().unwrap_or_default())
    }

    /// Compact JSON: the one serializer of these types in the binary ([`pretty`] says
    /// why the others go through it).
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            Object::Pod(p) => serde_json::to_vec(p),
            Object::ConfigMap(c) => serde_json::to_vec(c),
            Object::Secret(s) => serde_json::to_vec(s),
        }
    }
}

/// Parses, defaults and validates one manifest (JSON). `source` names where it came
/// from (a file path, `-`) and prefixes every message.
pub fn parse_object(source: &str, bytes: &[u8]) -> Result<Object, ModelError> {
    parse_object_at(source, bytes, Positions::Shown)
}

/// Whether decode errors cite a line and column: not for JSON re-encoded from YAML,
/// whose positions the person never saw (the field path and source still say where).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Positions {
    Shown,
    Hidden,
}

fn parse_object_at(source: &str, bytes: &[u8], at: Positions) -> Result<Object, ModelError> {
    if bytes.len() > MAX_MANIFEST_BYTES {
        return Err(ModelError::one(
            source,
            format_args!(
                "manifest is {} bytes, more than the {} byte (1 MiB) limit",
                bytes.len(),
                MAX_MANIFEST_BYTES
            ),
        ));
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err(ModelError::one(
            source,
            "expected a JSON object (a v1 Pod, ConfigMap or Secret)",
        ));
    }
    check_utf8(source, bytes)?;
    let original = bytes;
    let blanked = nulls::without_null_members(original)
        .map_err(|e| ModelError::one(source, describe(&e, original, at)))?;
    let bytes = &blanked[..];
    let tm: meta::TypeMeta = decode(source, bytes, at)?;
    let mut errors = Vec::new();
    if tm.api_version != meta::API_VERSION {
        errors.push(if tm.api_version.is_empty() {
            "apiVersion: required, must be \"v1\"".to_string()
        } else {
            format!("apiVersion: must be \"v1\", got {:?}", tm.api_version)
        });
    }
    let mut obj = match tm.kind.as_str() {
        "Pod" => Object::Pod(Box::new(decode(source, bytes, at)?)),
        "ConfigMap" => Object::ConfigMap(decode(source, bytes, at)?),
        "Secret" => Object::Secret(decode(source, bytes, at)?),
        "" => {
            errors.push("kind: required, must be one of Pod, ConfigMap, Secret".into());
            return Err(prefixed(source, errors));
        }
        other => {
            errors.push(format!(
                "kind: must be one of Pod, ConfigMap, Secret, got {other:?}"
            ));
            return Err(prefixed(source, errors));
        }
    };
    defaults::apply(&mut obj);
    errors.extend(validate::validate(&obj));
    if errors.is_empty() {
        Ok(obj)
    } else {
        Err(prefixed(source, errors))
    }
}

/// [`parse_object`], requiring a Pod.
pub fn parse_pod(source: &str, bytes: &[u8]) -> Result<Pod, ModelError> {
    match parse_object(source, bytes)? {
        Object::Pod(p) => Ok(*p),
        other => Err(ModelError::one(
            source,
            format_args!("kind: expected Pod, got {}", other.kind()),
        )),
    }
}

/// JSON text is UTF-8 (RFC 8259). serde_json checks only the strings it decodes, so
/// without this, bytes that are not UTF-8 in a field the model ignores would pass.
fn check_utf8(source: &str, bytes: &[u8]) -> Result<(), ModelError> {
    let Err(e) = std::str::from_utf8(bytes) else {
        return Ok(());
    };
    let at = e.valid_up_to();
    let before = bytes.get(..at).unwrap_or_default();
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = at
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    let path = json_path::path_at(bytes, at);
    let sep = if path.is_empty() { "" } else { ": " };
    Err(ModelError::one(
        source,
        format_args!("{path}{sep}invalid unicode code point, JSON must be UTF-8 (line {line}, column {column})"),
    ))
}

/// Decodes `T`; a serde error becomes `source: field.path: what (line L, column C)`.
fn decode<T: DeserializeOwned>(source: &str, bytes: &[u8], at: Positions) -> Result<T, ModelError> {
    serde_json::from_slice(bytes).map_err(|e| ModelError::one(source, describe(&e, bytes, at)))
}

/// A serde_json error with the JSON path of the offending value in front. A document
/// that ends early is reported at its end only: the path there is wherever the text
/// was cut, not a field that is wrong.
fn describe(e: &serde_json::Error, bytes: &[u8], at: Positions) -> String {
    let msg = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let msg = msg.strip_suffix(&suffix).unwrap_or(&msg);
    if e.line() == 0 {
        return msg.to_string();
    }
    let place = match at {
        Positions::Shown => format!(" (line {}, column {})", e.line(), e.column()),
        Positions::Hidden => String::new(),
    };
    if e.is_eof() {
        return format!("the document ends early: {msg}{place}");
    }
    let offset = json_path::offset_of(bytes, e.line(), e.column());
    let path = json_path::path_at(bytes, offset);
    if path.is_empty() {
        format!("{msg}{place}")
    } else {
        format!("{path}: {msg}{place}")
    }
}
