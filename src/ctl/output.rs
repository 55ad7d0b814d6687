//! Output: kubectl-style tables by default, `-o json` or `-o yaml` for
//! scripts (the same fields the table shows, in full).

use std::io::Write;

use clap::ValueEnum;
use serde::Serialize;

use super::CtlError;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    #[default]
    Table,
    Json,
    Yaml,
}

/// Columns left-aligned, separated by three spaces, as kubectl prints them.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, c) in cells.enumerate() {
            if i + 1 < widths.len() {
                out.push_str(&format!("{c:<w$}   ", w = widths[i]));
            } else {
                out.push_str(c);
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(&mut headers.iter().copied());
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    out
}

/// `value` as JSON or YAML (`Format::Table` is the caller's).
pub fn structured<T: Serialize>(format: Format, value: &T) -> Result<String, CtlError> {
    let text = match format {
        Format::Yaml => serde_yaml::to_string(value).map_err(|e| e.to_string()),
        _ => serde_json::to_string_pretty(value)
            .map(|s| s + "\n")
            .map_err(|e| e.to_string()),
    };
    text.map_err(|e| CtlError::Input(format!("cannot print the result: {e}")))
}

pub fn print(text: &str) -> Result<(), CtlError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// A duration as `1h2m3s`, `4m5s`, `6s`.
pub fn duration(secs: i64) -> String {
    let s = secs.max(0);
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s}s"),
        _ => format!("{h}h{m}m{s}s"),
    }
}

/// A one-line cell: newlines folded, cut at `max` characters with `...`.
pub fn cell(text: &str, max: usize) -> String {
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        one
    } else {
        one.chars().take(max.saturating_sub(3)).collect::<String>() + "..."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns() {
        let t = table(
            &["NAME", "STATE"],
            &[
                vec!["a".into(), "complete".into()],
                vec!["longer-name".into(), "failed".into()],
            ],
        );
        assert_eq!(
            t,
            "NAME          STATE\na             complete\nlonger-name   failed\n"
        );
    }

    #[test]
    fn durations_and_cells_read_short() {
        assert_eq!(duration(5), "5s");
        assert_eq!(duration(65), "1m5s");
        assert_eq!(duration(3725), "1h2m5s");
        assert_eq!(cell("a\n b", 10), "a b");
        assert_eq!(cell("abcdefghijkl", 8), "abcde...");
    }
}
