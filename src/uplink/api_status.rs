//! The API server's `Status` answers (`kind: Status`, in JSON or in the protobuf
//! envelope) turned into [`Status`], for the client's failed requests and for the
//! `ERROR` events of a watch.

use super::error::Status;

/// A `Status` from its JSON (or protobuf), with `code` as fallback for the HTTP status.
pub fn status_of(code: u16, body: &[u8]) -> Status {
    if let Some(s) = protobuf_status(code, body) {
        return s;
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Raw {
        kind: String,
        reason: String,
        message: String,
        code: u16,
    }
    match serde_json::from_slice::<Raw>(body) {
        Ok(s) if s.kind == "Status" => Status {
            code: if s.code != 0 { s.code } else { code },
            reason: s.reason,
            message: s.message,
        },
        _ => {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
            Status {
                code,
                reason: String::new(),
                message: text.trim().to_string(),
            }
        }
    }
}

/// A `Status` sent in protobuf: the `k8s\0` envelope (`runtime.Unknown`, the object in
/// field 2) around `metav1.Status` (message 3, reason 4, code 6).
fn protobuf_status(code: u16, body: &[u8]) -> Option<Status> {
    #[derive(prost::Message)]
    struct Unknown {
        #[prost(bytes = "vec", tag = "2")]
        raw: Vec<u8>,
    }
    #[derive(prost::Message)]
    struct StatusPb {
        #[prost(string, tag = "3")]
        message: String,
        #[prost(string, tag = "4")]
        reason: String,
        #[prost(int32, tag = "6")]
        code: i32,
    }
    use prost::Message as _;
    let envelope = Unknown::decode(body.strip_prefix(b"k8s\0")?).ok()?;
    let s = StatusPb::decode(envelope.raw.as_slice()).ok()?;
    Some(Status {
        code: u16::try_from(s.code)
            .ok()
            .filter(|&c| c != 0)
            .unwrap_or(code),
        reason: s.reason,
        message: s.message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_statuses_in_json_or_protobuf() {
        let json = br#"{"kind":"Status","status":"Failure","message":"m","reason":"Forbidden","code":403}"#;
        let s = status_of(500, json);
        assert_eq!(
            (s.code, s.reason.as_str(), s.message.as_str()),
            (403, "Forbidden", "m")
        );
        // k8s\0 + Unknown{typeMeta{"v1","Status"}, raw: Status{status, message, reason, code}}
        let mut raw = vec![0x12, 7];
        raw.extend_from_slice(b"Failure");
        raw.extend_from_slice(&[0x1a, 9]);
        raw.extend_from_slice(b"forbidden");
        raw.extend_from_slice(&[0x22, 9]);
        raw.extend_from_slice(b"Forbidden");
        raw.extend_from_slice(&[0x30, 0x93, 0x03]); // 403
        let mut body = b"k8s\0\x0a\x0c\x0a\x02v1\x12\x06Status\x12".to_vec();
        body.push(raw.len() as u8);
        body.extend_from_slice(&raw);
        let s = status_of(500, &body);
        assert_eq!(
            (s.code, s.reason.as_str(), s.message.as_str()),
            (403, "Forbidden", "forbidden")
        );
        // Not a Status: the HTTP code and the start of the body.
        let s = status_of(502, b"bad gateway");
        assert_eq!((s.code, s.message.as_str()), (502, "bad gateway"));
    }
}
