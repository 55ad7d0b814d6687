//! `kando output <key> <value>` (Kanister `pkg/kando/output.go`, `pkg/output`):
//! one line `###Phase-output###: {"key":"<key>","value":"<value>"}` on
//! stdout, which the executor's [`crate::phase_output`] parser (and
//! Kanister's) turns into the phase output `<key>: <value>`.
//!
//! The JSON is written as Go's `json.Marshal` writes it (HTML characters,
//! U+2028/U+2029 and control characters escaped, invalid UTF-8 as `\ufffd`),
//! so the line is byte for byte the one Kanister's kando prints.

use crate::phase_output::MARKER;
use crate::template::go_json_string;

/// Kanister's `output.ValidateKey` (same texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("Key should not be empty")]
    Empty,
    #[error("Key should contain only alphanumeric characters and underscore (got {0:?})")]
    Characters(String),
}

/// Kanister's `output.ValidateKey`.
pub fn validate_key(key: &str) -> Result<(), KeyError> {
    if key.is_empty() {
        return Err(KeyError::Empty);
    }
    if !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(KeyError::Characters(key.to_string()));
    }
    Ok(())
}

/// The line `kando output` prints (without the newline).
pub fn line(key: &str, value: &[u8]) -> String {
    format!(
        "{MARKER} {{\"key\":{},\"value\":{}}}",
        go_json_string(key.as_bytes()),
        go_json_string(value)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase_output as output;

    #[test]
    fn keys_as_kanister_validates_them() {
        assert!(validate_key("backup_Location9").is_ok());
        assert_eq!(
            validate_key("").unwrap_err().to_string(),
            "Key should not be empty"
        );
        for k in ["a-b", "a.b", "a b", "ä"] {
            assert!(
                validate_key(k)
                    .unwrap_err()
                    .to_string()
                    .starts_with("Key should contain only alphanumeric characters and underscore"),
                "{k}"
            );
        }
    }

    /// The texts Go's json.Marshal gives (checked with Go 1.26).
    #[test]
    fn values_are_encoded_as_go_does() {
        assert_eq!(
            line("s3path", b"bucket/a b"),
            r#"###Phase-output###: {"key":"s3path","value":"bucket/a b"}"#
        );
        assert_eq!(
            go_json_string("<a href=\"x\">&'\u{7f}é☺".as_bytes()),
            r#""\u003ca href=\"x\"\u003e\u0026'"#.to_string() + "\u{7f}é☺\""
        );
        assert_eq!(
            go_json_string(b"\x00\x01\x08\x0c\n\r\t\x1f\\"),
            r#""\u0000\u0001\b\f\n\r\t\u001f\\""#
        );
        assert_eq!(
            go_json_string("\u{2028}\u{2029}".as_bytes()),
            r#""\u2028\u2029""#
        );
        // Invalid UTF-8: one \ufffd per invalid byte, as Go.
        assert_eq!(go_json_string(b"a\xffb\xc3"), r#""a\ufffdb\ufffd""#);
        assert_eq!(go_json_string(b"\xe2\x82x"), r#""\ufffd\ufffdx""#);
    }

    /// What `kando output` prints is what the executor reads back.
    #[test]
    fn the_executors_parser_reads_the_line_back() {
        let value = "multi\nline \"quoted\" <tag> & tab\t \u{2028} é";
        let text = format!(
            "some log\n{}\nmore log\n",
            line("myKey_1", value.as_bytes())
        );
        let out = output::parse(&text).unwrap();
        assert_eq!(out.get("myKey_1"), Some(&serde_json::json!(value)));
        let out = output::parse(&line("empty", b"")).unwrap();
        assert_eq!(out.get("empty"), Some(&serde_json::json!("")));
    }
}
