//! What every admission handler shares: the denial (code 422 with every problem listed and
//! as `details.causes`), warnings fitted to what the API server passes on, and the Blueprint
//! lookup an ActionSchedule review needs. Pure, like the handlers.

use kube::core::Status;
use kube::core::admission::AdmissionResponse;
use kube::core::response::{StatusCause, StatusDetails};
use serde_json::Value;

use crate::blueprint::Problem;

/// Longest warning we send, in characters. The API server cuts warnings to 256 runes once the
/// total passes 4096; the type docs recommend 120. We keep each one whole up to 256 so that
/// nothing is cut by the server, and shorten longer ones ourselves with a marker.
pub const MAX_WARNING_CHARS: usize = 256;
/// Budget for all warnings of one response, in characters (the API server's 4096-rune total,
/// shared with other webhooks, so we stay well below it).
pub const MAX_WARNINGS_TOTAL_CHARS: usize = 3072;

/// `(namespace, name)` of a Blueprint.
pub type BlueprintRef = (String, String);

/// What the server found when looking up the Blueprint an ActionSchedule refers to.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// Not looked up (no API access, or not needed); the check is skipped with a warning.
    NotChecked(String),
    /// The Blueprint does not exist (or is not visible to the webhook).
    Missing,
    /// The Blueprint document.
    Found(Value),
}

/// A denial with code 422 (reason `Invalid`), a message listing every problem, one per line,
/// and the same problems as `details.causes` with their field paths.
pub fn deny(
    base: AdmissionResponse,
    name: &str,
    what: &str,
    problems: &[Problem],
) -> AdmissionResponse {
    deny_kind(base, "Blueprint", name, what, problems)
}

pub fn deny_kind(
    base: AdmissionResponse,
    kind: &str,
    name: &str,
    what: &str,
    problems: &[Problem],
) -> AdmissionResponse {
    let subject = if name.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind} {name:?}")
    };
    let count = match problems.len() {
        1 => "1 error".to_owned(),
        n => format!("{n} errors"),
    };
    let mut message = format!("{subject} {what} ({count}):");
    for p in problems {
        message.push_str("\n- ");
        message.push_str(&p.to_string());
    }
    let mut resp = base.deny(message);
    resp.result = Status {
        code: 422,
        reason: "Invalid".into(),
        details: Some(StatusDetails {
            name: name.to_owned(),
            kind: kind.to_owned(),
            causes: problems
                .iter()
                .map(|p| StatusCause {
                    reason: "FieldValueInvalid".into(),
                    message: p.message.clone(),
                    field: p.path.clone(),
                })
                .collect(),
            group: String::new(),
            uid: String::new(),
            retry_after_seconds: 0,
        }),
        ..resp.result
    };
    resp
}

/// Fits warnings into what the API server passes on unchanged: no control characters (a
/// warning that is not a valid header value is dropped silently by the API server), each at
/// most [`MAX_WARNING_CHARS`] characters, identical texts once, and at most
/// [`MAX_WARNINGS_TOTAL_CHARS`] in total; the last line then says how many were left out.
pub fn limit_warnings(items: impl IntoIterator<Item = String>) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut total = 0usize;
    let mut omitted = 0usize;
    // Room for the "... more" line.
    let budget = MAX_WARNINGS_TOTAL_CHARS - 100;
    for item in items {
        let text = clean_warning(item);
        if text.is_empty() || out.contains(&text) {
            continue;
        }
        let len = text.chars().count();
        if omitted > 0 || total + len > budget {
            omitted += 1;
            continue;
        }
        total += len;
        out.push(text);
    }
    if omitted > 0 {
        out.push(format!(
            "{omitted} more warning(s) not shown; run `blueprint-operator validate` on the manifest to see all"
        ));
    }
    (!out.is_empty()).then_some(out)
}

fn clean_warning(text: String) -> String {
    // A byte test first, so that a warning without control characters (nearly all) is not
    // copied; 0xC2 starts the C1 controls (U+0080-U+009F) and other characters, which
    // `replace` leaves as they are. A fold rather than `any`: without an early exit it is
    // vectorized.
    let suspect = text
        .bytes()
        .fold(false, |s, b| s | (b < 0x20) | (b == 0x7f) | (b == 0xc2));
    let text = if suspect {
        text.replace(char::is_control, " ")
    } else {
        text
    };
    let flat = text.trim();
    // Longer than MAX_WARNING_CHARS characters: the first MAX_WARNING_CHARS - 3 and "...".
    // ASCII text (most warnings) is cut at a byte index, without walking its characters.
    let cut = if flat.is_ascii() {
        (flat.len() > MAX_WARNING_CHARS).then_some(MAX_WARNING_CHARS - 3)
    } else {
        match flat.char_indices().nth(MAX_WARNING_CHARS - 3) {
            Some((cut, _)) if flat[cut..].chars().nth(3).is_some() => Some(cut),
            _ => None,
        }
    };
    match cut {
        Some(cut) => format!("{}...", &flat[..cut]),
        None if flat.len() == text.len() => text,
        None => flat.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_flattened_trimmed_and_cut_by_characters() {
        let long = "x".repeat(300);
        let cut = clean_warning(long.clone());
        assert_eq!(cut, format!("{}...", &long[..MAX_WARNING_CHARS - 3]));
        // Exactly the limit is kept whole, one more is cut.
        let at = "y".repeat(MAX_WARNING_CHARS);
        assert_eq!(clean_warning(at.clone()), at);
        let over = "y".repeat(MAX_WARNING_CHARS + 1);
        assert_eq!(clean_warning(over).chars().count(), MAX_WARNING_CHARS);
        // Characters, not bytes: 256 two-byte characters stay whole, 257 are cut.
        let wide = "é".repeat(MAX_WARNING_CHARS);
        assert_eq!(clean_warning(wide.clone()), wide);
        let wider = clean_warning("é".repeat(MAX_WARNING_CHARS + 1));
        assert_eq!(wider, format!("{}...", "é".repeat(MAX_WARNING_CHARS - 3)));
        // Control characters (C0, DEL and C1) become spaces, the ends are trimmed, and other
        // characters starting with byte 0xC2 are kept.
        assert_eq!(
            clean_warning("\n a\tb\u{7f}c\u{85}d © \r".into()),
            "a b c d ©"
        );
        assert_eq!(clean_warning("  plain  ".into()), "plain");
    }
}
