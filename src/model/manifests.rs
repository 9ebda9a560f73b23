//! A manifest file or stream as people write them: JSON or YAML, several YAML documents
//! (`---`), and `kind: List` wrapping several objects. Each object found goes through
//! [`super::parse_object`], so YAML gets the same defaults, validation and messages as
//! JSON; messages name the source, the document (`document 2`) and the list item
//! (`items[3]`) before the field.

use super::{parse_object_at, yaml, ModelError, Object, Positions};
use serde_json::Value;

/// How a manifest is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object.
    Json,
    /// One or more YAML documents.
    Yaml,
}

/// The format of the manifest `name` holding `bytes`: by its extension (`.json`,
/// `.yaml`, `.yml`), else by its content (a document starting with `{` is JSON, as
/// kubectl decides for stdin).
pub fn format_of(name: &str, bytes: &[u8]) -> Format {
    if name.ends_with(".json") {
        return Format::Json;
    }
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        return Format::Yaml;
    }
    let text = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    match text.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Format::Json,
        _ => Format::Yaml,
    }
}

/// Whether `name` is a manifest file a directory is read for.
pub fn is_manifest_name(name: &str) -> bool {
    [".json", ".yaml", ".yml"].iter().any(|e| name.ends_with(e))
}

/// One object of a manifest, as [`parse_manifests_checked`] gives it.
pub struct Parsed {
    /// What messages about it start with: the source, `document N`, `items[I]`.
    pub label: String,
    /// The object, or why it was refused.
    pub object: Result<Object, ModelError>,
    /// Its fields that no v1 object of its kind has ([`super::unknown_fields`]).
    pub unknown: Vec<String>,
}

/// Every object in one manifest, each parsed, defaulted and validated on its own: one
/// bad document does not hide the others. A stream that cannot be read at all (bad
/// YAML, no documents) is one error.
pub fn parse_manifests(
    source: &str,
    bytes: &[u8],
    format: Format,
) -> Vec<Result<Object, ModelError>> {
    parse(source, bytes, format, false)
        .into_iter()
        .map(|p| p.object)
        .collect()
}

/// [`parse_manifests`], each object with its unknown fields (what `tinylet apply`
/// warns about, or refuses with `--validate=strict`).
pub fn parse_manifests_checked(source: &str, bytes: &[u8], format: Format) -> Vec<Parsed> {
    parse(source, bytes, format, true)
}

/// The objects of a manifest; `check`: look for unknown fields too.
fn parse(source: &str, bytes: &[u8], format: Format, check: bool) -> Vec<Parsed> {
    match format {
        Format::Json if !is_json_list(bytes) => {
            let mut object = super::parse_object(source, bytes);
            // A second decode, as a tree, only when asked (the CLI's apply).
            let mut unknown = Vec::new();
            if check && object.is_ok() {
                match serde_json::from_slice::<Value>(bytes) {
                    Ok(v) => unknown = super::unknown_fields::find(&v),
                    // The object decoder skips unknown fields' values unread, so a
                    // number no f64 holds (1e400) passes there; one that cannot be
                    // checked is refused, as in a list or a YAML stream.
                    Err(e) => object = Err(ModelError::one(source, e)),
                }
            }
            vec![Parsed {
                label: source.to_string(),
                object,
                unknown,
            }]
        }
        Format::Json => match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => from_values(source, vec![v], false, check),
            Err(e) => vec![refused(source, ModelError::one(source, e))],
        },
        Format::Yaml => yaml_documents(source, bytes, check),
    }
}

/// A stream-level refusal: no object, one error.
fn refused(source: &str, e: ModelError) -> Parsed {
    Parsed {
        label: source.to_string(),
        object: Err(e),
        unknown: Vec::new(),
    }
}

fn yaml_documents(source: &str, bytes: &[u8], check: bool) -> Vec<Parsed> {
    if bytes.len() > super::MAX_MANIFEST_BYTES {
        return vec![refused(
            source,
            super::parse_object(source, bytes)
                .err()
                .unwrap_or_else(|| ModelError::one(source, "manifest over the size limit")),
        )];
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let msg = format!(
                "YAML must be UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            );
            return vec![refused(source, ModelError::one(source, msg))];
        }
    };
    match yaml::parse_documents(text, &yaml::LIMITS) {
        Ok(docs) if docs.is_empty() => vec![refused(
            source,
            ModelError::one(
                source,
                "no documents (expected a Pod, ConfigMap, Secret or List)",
            ),
        )],
        Ok(docs) => from_values(source, docs, true, check),
        Err(e) => vec![refused(source, ModelError::one(source, e))],
    }
}

/// Whether a JSON document's top-level `kind` is `List` (read without building values,
/// with the decoder `parse_object` has anyway).
fn is_json_list(bytes: &[u8]) -> bool {
    serde_json::from_slice::<super::meta::TypeMeta>(bytes).is_ok_and(|t| t.kind == "List")
}

/// The objects of decoded documents; `numbered` prefixes `document N` (YAML); `check`:
/// look for unknown fields too.
fn from_values(source: &str, docs: Vec<Value>, numbered: bool, check: bool) -> Vec<Parsed> {
    let mut out = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let label = if numbered {
            format!("{source}: document {}", i + 1)
        } else {
            source.to_string()
        };
        if doc.get("kind").and_then(Value::as_str) != Some("List") {
            out.push(from_value(label, &doc, check));
            continue;
        }
        match doc.get("items") {
            Some(Value::Array(items)) => {
                for (j, item) in items.iter().enumerate() {
                    out.push(from_value(format!("{label}: items[{j}]"), item, check));
                }
            }
            None | Some(Value::Null) => {}
            Some(_) => out.push(refused(
                &label,
                ModelError::one(&label, "items: expected a list of objects"),
            )),
        }
    }
    out
}

/// One decoded document as an object: re-encoded as JSON for the one parser.
fn from_value(label: String, v: &Value, check: bool) -> Parsed {
    let unknown = match check {
        true => super::unknown_fields::find(v),
        false => Vec::new(),
    };
    Parsed {
        object: object_of(&label, v),
        label,
        unknown,
    }
}

fn object_of(label: &str, v: &Value) -> Result<Object, ModelError> {
    if !v.is_object() {
        return Err(ModelError::one(
            label,
            "expected a mapping (a v1 Pod, ConfigMap, Secret or List)",
        ));
    }
    // Pretty, as `get -o json` writes: one serializer in the binary, not two.
    let bytes = serde_json::to_vec_pretty(v).map_err(|e| ModelError::one(label, e))?;
    parse_object_at(label, &bytes, Positions::Hidden)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n    image: busybox\n";

    fn names(r: &[Result<Object, ModelError>]) -> Vec<String> {
        r.iter()
            .map(|o| match o {
                Ok(o) => format!("{}/{}", o.kind(), o.name()),
                Err(e) => e.to_string(),
            })
            .collect()
    }

    #[test]
    fn format_by_extension_then_content() {
        assert_eq!(format_of("a.yml", b"{}"), Format::Yaml);
        assert_eq!(format_of("a.json", b"a: 1"), Format::Json);
        assert_eq!(format_of("-", b"\n  {\"a\": 1}"), Format::Json);
        assert_eq!(format_of("-", b"# c\napiVersion: v1"), Format::Yaml);
    }

    #[test]
    fn documents_and_lists() {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: \"1\"}\n";
        let text = format!("{POD}---\n{cm}---\n# nothing\n");
        let r = parse_manifests("f.yaml", text.as_bytes(), Format::Yaml);
        assert_eq!(names(&r), ["Pod/a", "ConfigMap/cm"]);
        let list = format!(
            "apiVersion: v1\nkind: List\nitems:\n- {}\n- {}\n",
            cm.trim_end().replace('\n', "\n  "),
            POD.trim_end().replace('\n', "\n  ")
        );
        let r = parse_manifests("l.yaml", list.as_bytes(), Format::Yaml);
        assert_eq!(names(&r), ["ConfigMap/cm", "Pod/a"]);
        let json = r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]}"#;
        assert_eq!(
            names(&parse_manifests("l.json", json.as_bytes(), Format::Json)),
            ["ConfigMap/x"]
        );
    }

    #[test]
    fn errors_name_source_document_item_and_field() {
        let bad = POD.replace(
            "image: busybox",
            "image: busybox\n    ports: [{containerPort: x}]",
        );
        let text = format!("{POD}---\n{bad}");
        let r = parse_manifests("f.yaml", text.as_bytes(), Format::Yaml);
        assert!(r[0].is_ok());
        let e = r[1].as_ref().unwrap_err().to_string();
        assert!(
            e.starts_with("f.yaml: document 2: spec.containers[0].ports[0].containerPort: "),
            "{e}"
        );
        assert!(!e.contains("line"), "{e}");
        let list = "kind: List\napiVersion: v1\nitems:\n- kind: Pod\n  apiVersion: v1\n  metadata: {name: \"Bad_Name\"}\n";
        let e = names(&parse_manifests("l.yml", list.as_bytes(), Format::Yaml)).join("\n");
        assert!(
            e.contains("l.yml: document 1: items[0]: metadata.name: "),
            "{e}"
        );
        let e = names(&parse_manifests("-", b"a: &x 1\n", Format::Yaml)).join("");
        assert_eq!(e, "-: line 1, column 4: anchors (&) are not supported");
        let e = names(&parse_manifests("-", b"# only a comment\n", Format::Yaml)).join("");
        assert!(e.contains("no documents"), "{e}");
        let e = names(&parse_manifests("-", b"- a\n", Format::Yaml)).join("");
        assert!(e.contains("document 1: expected a mapping"), "{e}");
    }

    #[test]
    fn unknown_fields_are_found_per_object_only_when_asked() {
        let typo = POD.replace("image: busybox", "image: busybox\n    comand: [sh]");
        let text = format!("{POD}---\n{typo}");
        let r = parse_manifests_checked("f.yaml", text.as_bytes(), Format::Yaml);
        assert_eq!(r.len(), 2);
        assert!(r[0].unknown.is_empty() && r[0].object.is_ok());
        assert_eq!(r[1].label, "f.yaml: document 2");
        assert_eq!(r[1].unknown, ["spec.containers[0].comand"]);
        assert!(r[1].object.is_ok(), "still a valid pod");
        let json = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"dat":{}}"#;
        let r = parse_manifests_checked("c.json", json, Format::Json);
        assert_eq!(
            (r[0].label.as_str(), &r[0].unknown[..]),
            ("c.json", &["dat".to_string()][..])
        );
        let bad = br#"{"kind":"Pod","#;
        let r = parse_manifests_checked("-", bad, Format::Json);
        assert!(r[0].unknown.is_empty() && r[0].object.is_err());
    }

    #[test]
    fn a_number_too_big_to_check_is_refused_when_fields_are_checked() {
        let json = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"dat":1e400}"#;
        // The agent's decoder skips the unknown field's value, as the API server does.
        assert!(parse_manifests("c.json", json, Format::Json)[0].is_ok());
        let r = parse_manifests_checked("c.json", json, Format::Json);
        let e = r[0].object.as_ref().map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("c.json: number out of range"), "{e}");
        assert!(r[0].unknown.is_empty());
    }

    #[test]
    fn truncated_json_is_reported_at_its_end_without_a_field() {
        let json = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"#;
        let e = names(&parse_manifests("-", json, Format::Json)).join("");
        assert!(
            e.starts_with("-: the document ends early: EOF while parsing"),
            "{e}"
        );
        assert!(!e.contains("metadata.name"), "{e}");
    }
}
