//! The refusal of a pod the model does not accept: reason `UnsupportedPodSpec`, and a
//! message naming each field and what was expected, bounded, the volume sources the
//! model does not read named by what the API object has there.

use crate::uplink::pods_bound::Refusal;
use serde_json::Value;

/// Reason of a pod refused by validation.
pub const UNSUPPORTED: &str = crate::model::Reason::UnsupportedPodSpec.as_str();
/// Longest refusal message sent (the model's messages are bounded, but many of them
/// would make a status nobody reads).
const MAX_MESSAGE: usize = 1024;

/// The refusal of the pod `obj` (named `source` in `messages`), which the model refused
/// with `messages`, by node `node`.
pub fn unsupported(node: &str, source: &str, messages: Vec<String>, obj: &Value) -> Refusal {
    let messages = name_volume_sources(source, messages, obj);
    Refusal {
        reason: UNSUPPORTED,
        message: refusal_message(node, source, &messages),
    }
}

/// The model reads only the volume sources (and projection sources) it supports, so of
/// one with another kind it says "got none": name what the API object has there.
fn name_volume_sources(source: &str, messages: Vec<String>, obj: &Value) -> Vec<String> {
    messages
        .into_iter()
        .map(|m| match unread_source(source, &m, obj) {
            Some(kinds) => format!("{m} (this pod's source there is {kinds}: not supported)"),
            None => m,
        })
        .collect()
}

/// For a "got none" message at `spec.volumes[i]` or `spec.volumes[i].projected.sources[j]`,
/// the keys the API object has there (its `name` left out).
fn unread_source(source: &str, m: &str, obj: &Value) -> Option<String> {
    let (place, what) = m
        .strip_prefix(source)?
        .strip_prefix(": ")?
        .split_once(": ")?;
    if !what.ends_with("got none") {
        return None;
    }
    let index = |s: &str| s.strip_suffix(']')?.parse::<usize>().ok();
    let rest = place.strip_prefix("spec.volumes[")?;
    let (i, rest) = rest.split_once(']').unwrap_or((rest, ""));
    let mut at = &obj["spec"]["volumes"][i.parse::<usize>().ok()?];
    if let Some(j) = rest.strip_prefix(".projected.sources[") {
        at = &at["projected"]["sources"][index(j)?];
    } else if !rest.is_empty() {
        return None;
    }
    let kinds: Vec<&str> = at
        .as_object()?
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "name")
        .collect();
    (!kinds.is_empty()).then(|| kinds.join(", "))
}

/// The message of a refusal: the model's problems without their `SOURCE: ` prefix,
/// joined, at most [`MAX_MESSAGE`] bytes.
fn refusal_message(node: &str, source: &str, messages: &[String]) -> String {
    let prefix = format!("{source}: ");
    let mut out = format!("node {node} (tinylet) cannot run this pod: ");
    for (i, m) in messages.iter().enumerate() {
        let m = m.strip_prefix(&prefix).unwrap_or(m);
        if out.len() + m.len() > MAX_MESSAGE {
            out.push_str(&format!("; ... and {} more", messages.len() - i));
            break;
        }
        if i > 0 {
            out.push_str("; ");
        }
        out.push_str(m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_messages_name_the_fields_and_are_bounded() {
        let m = refusal_message(
            "gw1",
            "pod d/p",
            &["pod d/p: spec.volumes[0]: unsupported volume source".into()],
        );
        assert_eq!(
            m,
            "node gw1 (tinylet) cannot run this pod: spec.volumes[0]: unsupported volume source"
        );
        let many: Vec<String> = (0..100)
            .map(|i| format!("pod d/p: spec.containers[{i}].image: {}", "x".repeat(50)))
            .collect();
        let m = refusal_message("gw1", "pod d/p", &many);
        assert!(m.len() < MAX_MESSAGE + 40, "{}", m.len());
        assert!(m.ends_with("more"), "{m}");
    }

    #[test]
    fn volume_sources_the_model_does_not_read_are_named() {
        let obj = serde_json::json!({"spec": {"volumes": [
            {"name": "ok", "emptyDir": {}},
            {"name": "remote", "nfs": {"server": "192.0.2.1", "path": "/"}},
            {"name": "kube-api-access-x", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token"}},
                {"clusterTrustBundle": {"path": "b"}}]}}
        ]}});
        let none = "must specify exactly one of emptyDir, hostPath, configMap, secret, projected, downwardAPI, persistentVolumeClaim, got none";
        let got = name_volume_sources(
            "pod d/p",
            vec![
                format!("pod d/p: spec.volumes[1]: {none}"),
                "pod d/p: spec.volumes[2].projected.sources[1]: must specify exactly one of configMap, secret, downwardAPI, serviceAccountToken, got none".into(),
                "pod d/p: spec.containers[0].image: required".into(),
                format!("pod d/p: spec.volumes[9]: {none}"),
            ],
            &obj,
        );
        assert!(
            got[0].ends_with("(this pod's source there is nfs: not supported)"),
            "{}",
            got[0]
        );
        assert!(
            got[1].ends_with("(this pod's source there is clusterTrustBundle: not supported)"),
            "{}",
            got[1]
        );
        assert_eq!(got[2], "pod d/p: spec.containers[0].image: required");
        assert!(got[3].ends_with("got none"), "no such volume: {}", got[3]);
    }
}
