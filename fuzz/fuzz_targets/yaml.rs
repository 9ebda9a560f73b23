//! The YAML reader (`model::yaml`, kubeconfigs and manifests) against a maintained YAML
//! 1.2 parser, saphyr-parser (a fuzz-only dependency): what both read must give the
//! same documents, mappings, sequences and scalar texts. Scalars are compared through the reader's own resolution of plain scalars
//! (go-yaml v2's: `yes` is true, `0644` octal), since that is a choice, not parsing;
//! quoted and block scalars are strings on both sides; keys are their text. Documents
//! that hold nothing (or null) are left out on both sides. Only what both accept is
//! compared: the reader refuses much that YAML allows (anchors, tags, complex keys,
//! duplicate keys), and saphyr refuses some of what kubectl reads (tabs as separators).
//! Where the reader accepted what saphyr refuses for reasons of YAML itself (control
//! characters, a plain value starting with an indicator, content after `...`, a comment
//! touching its value), the reader was made to refuse it too (tests in
//! `src/model/yaml/tests.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Value};
use tinylet::model::yaml::{parse_documents, resolve_plain_scalar, LIMITS};

/// An open collection while saphyr's events are folded into values.
enum Open {
    Seq(Vec<Value>),
    Map(Map<String, Value>, Option<String>),
}

/// The documents saphyr reads from `text`, as JSON values; an error for what saphyr
/// refuses or what JSON cannot hold (anchors, aliases, tags, collection keys,
/// duplicate keys).
fn reference(text: &str) -> Result<Vec<Value>, String> {
    let mut docs = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, _) = event.map_err(|e| e.to_string())?;
        let done = match event {
            Event::Scalar(_, _, anchor, tag)
            | Event::SequenceStart(anchor, tag)
            | Event::MappingStart(anchor, tag)
                if anchor != 0 || tag.is_some() =>
            {
                return Err("an anchor or a tag".into())
            }
            Event::Alias(_) => return Err("an alias".into()),
            Event::Scalar(text, style, _, _) => {
                if let Some(Open::Map(_, key @ None)) = stack.last_mut() {
                    *key = Some(text.into_owned());
                    continue;
                }
                if style == ScalarStyle::Plain {
                    resolve_plain_scalar(&text).ok_or("not finite")?
                } else {
                    Value::String(text.into_owned())
                }
            }
            Event::SequenceStart(..) => {
                stack.push(Open::Seq(Vec::new()));
                continue;
            }
            Event::MappingStart(..) => {
                stack.push(Open::Map(Map::new(), None));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(items)) => Value::Array(items),
                Some(Open::Map(map, None)) => Value::Object(map),
                _ => return Err("unbalanced events".into()),
            },
            _ => continue,
        };
        match stack.last_mut() {
            // The reader leaves out documents of nothing (or of null).
            None if done.is_null() => {}
            None => docs.push(done),
            Some(Open::Seq(items)) => items.push(done),
            Some(Open::Map(map, key)) => {
                let Some(k) = key.take() else {
                    return Err("a collection as a key".into());
                };
                if map.insert(k, done).is_some() {
                    return Err("a duplicate key".into());
                }
            }
        }
    }
    Ok(docs)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A last line without its newline: saphyr 0.3 reads a white-space one into a
    // block scalar's text at the end of input (libyaml, like the reader, does not).
    let text = &format!("{}\n", text.strip_suffix('\n').unwrap_or(text));
    let Ok(ours) = parse_documents(text, &LIMITS) else {
        return;
    };
    // What saphyr refuses is not compared: it is stricter than kubectl's go-yaml in
    // places (tabs as separators, the indentation of quoted lines), and the reader
    // follows kubectl.
    if let Ok(theirs) = reference(text) {
        assert_eq!(ours, theirs, "{text:?}");
    }
});
