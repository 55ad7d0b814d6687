//! Kanister's phase-output protocol (`pkg/output`): a line containing
//! `###Phase-output###:` followed by JSON `{"key":"<key>","value":"<value>"}`.
//! The marker may appear anywhere in a line (text before it is ordinary log),
//! the rest of the line is trimmed and JSON-decoded, invalid JSON is an error,
//! and later keys overwrite earlier ones.

use serde_json::Value;

use super::{FunctionError, Output};

/// The marker `kando output` prints before its JSON.
pub const MARKER: &str = "###Phase-output###:";

/// Parse every phase-output line of `text` (a pod log or exec stdout).
pub fn parse(function: &'static str, text: &str) -> Result<Output, FunctionError> {
    let mut out = Output::new();
    parse_into(function, text, &mut out)?;
    Ok(out)
}

/// Like [`parse`], adding to (and overwriting keys of) `out`.
pub fn parse_into(
    function: &'static str,
    text: &str,
    out: &mut Output,
) -> Result<(), FunctionError> {
    for (n, line) in text.lines().enumerate() {
        let Some(pos) = line.find(MARKER) else {
            continue;
        };
        let rest = line[pos + MARKER.len()..].trim();
        let bad = |why: String| FunctionError::Output {
            function,
            message: format!(
                "line {}: {why}; expected `{MARKER} {{\"key\":\"<key>\",\"value\":\"<value>\"}}` (as printed by `kando output <key> <value>`), got `{}`",
                n + 1,
                truncate(rest, 200)
            ),
        };
        let v: Value = serde_json::from_str(rest).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        let Value::Object(obj) = v else {
            return Err(bad("not a JSON object".into()));
        };
        let key = match obj.get("key") {
            Some(Value::String(k)) if !k.is_empty() => k.clone(),
            Some(Value::String(_)) | None => return Err(bad("`key` is missing or empty".into())),
            Some(other) => return Err(bad(format!("`key` must be a string, not {other}"))),
        };
        let value = match obj.get("value") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => String::new(),
            Some(other) => {
                return Err(bad(format!("`value` must be a string, not {other}")));
            }
        };
        out.insert(key, Value::String(value));
    }
    Ok(())
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_marker_anywhere_and_later_keys_win() {
        let log = "starting\n\
            ###Phase-output###: {\"key\":\"a\",\"value\":\"1\"}\n\
            2024-01-01 prefix text ###Phase-output###:   {\"key\":\"b\",\"value\":\"two words\"}   \r\n\
            noise ###Phase-output### not a marker\n\
            ###Phase-output###:{\"key\":\"a\",\"value\":\"3\"}\n";
        let out = parse("KubeTask", log).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out["a"], "3");
        assert_eq!(out["b"], "two words");
    }

    #[test]
    fn no_marker_no_output() {
        assert!(parse("KubeTask", "hello\nworld").unwrap().is_empty());
        assert!(parse("KubeTask", "").unwrap().is_empty());
    }

    #[test]
    fn invalid_json_is_an_error_naming_the_line() {
        let e = parse("KubeTask", "ok\n###Phase-output###: {key: a}\n").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("KubeTask: failed to parse phase output: line 2: invalid JSON"),
            "{msg}"
        );
        assert!(msg.contains("{key: a}"), "{msg}");
    }

    #[test]
    fn non_object_or_bad_fields_are_errors() {
        assert!(parse("KubeExec", "###Phase-output###: [1]").is_err());
        assert!(parse("KubeExec", "###Phase-output###: {\"value\":\"x\"}").is_err());
        assert!(
            parse(
                "KubeExec",
                "###Phase-output###: {\"key\":\"k\",\"value\":1}"
            )
            .is_err()
        );
        assert!(parse("KubeExec", "###Phase-output###:").is_err());
        let out = parse("KubeExec", "###Phase-output###: {\"key\":\"k\"}").unwrap();
        assert_eq!(out["k"], "");
    }

    #[test]
    fn long_garbage_is_truncated_in_the_message() {
        let line = format!("###Phase-output###: {}", "é".repeat(500));
        let msg = parse("KubeExec", &line).unwrap_err().to_string();
        assert!(msg.len() < 700, "{}", msg.len());
    }
}
