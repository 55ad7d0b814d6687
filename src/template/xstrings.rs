//! huandu/xstrings v1.6.3 `ToSnakeCase`, `ToKebabCase` and `ToCamelCase`
//! (sprig's `snakecase`, `kebabcase`, `camelcase`), ported statement by
//! statement from `convert.go`, with Go's `unicode` predicates.

use regex::Regex;
use std::sync::LazyLock;

/// Go decodes invalid UTF-8 as U+FFFD, so xstrings skips a real U+FFFD too.
const RUNE_ERROR: char = '\u{FFFD}';

/// A Unicode general category test (Go's `unicode.Is(Lu, r)` and friends;
/// Rust's `char` predicates use derived properties that differ).
fn category(re: &Regex, c: char) -> bool {
    re.is_match(c.encode_utf8(&mut [0; 4]))
}

static UPPER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\A\p{Lu}\z").expect("Lu"));
static LETTER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\A\p{L}\z").expect("L"));
static PUNCT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\A\p{P}\z").expect("P"));

fn is_upper(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_uppercase();
    }
    category(&UPPER, c)
}

fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    category(&LETTER, c)
}

fn is_punct(c: char) -> bool {
    if c.is_ascii() {
        // ASCII punctuation minus the symbols (S*): $ + < = > ^ ` | ~
        return c.is_ascii_punctuation() && !"$+<=>^`|~".contains(c);
    }
    category(&PUNCT, c)
}

/// Go `unicode.IsNumber`: categories Nd, Nl, No (as Rust's `is_numeric`).
fn is_number(c: char) -> bool {
    c.is_numeric()
}

/// Go `unicode.ToLower`: the simple (one character) mapping.
fn to_lower(c: char) -> char {
    if c == 'İ' {
        return 'i';
    }
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

/// Go `unicode.ToUpper`: the simple mapping. Where the full mapping has
/// several characters, only Greek letters with iota subscript have a
/// simple one (their titlecase form).
fn to_upper(c: char) -> char {
    let mut u = c.to_uppercase();
    match (u.next(), u.next()) {
        (Some(x), None) => x,
        _ => {
            let offset = match c as u32 {
                0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7 => 8,
                0x1FB3 | 0x1FC3 | 0x1FF3 => 9,
                _ => 0,
            };
            char::from_u32(c as u32 + offset).unwrap_or(c)
        }
    }
}

/// xstrings `isConnector`.
fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || c.is_whitespace()
}

/// xstrings `isAlphabet`: a letter but not a CJK ideograph.
fn is_alphabet(c: char) -> bool {
    is_letter(c) && !matches!(c as u32, 0x4E00..=0x9FCC | 0x3400..=0x4D85 | 0x20000..=0x2B81D)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Word {
    Invalid,
    Number,
    UpperCase,
    Alphabet,
    Connector,
    Punct,
    Other,
}

fn first(s: &str) -> (char, usize) {
    s.chars()
        .next()
        .map_or((RUNE_ERROR, 0), |c| (c, c.len_utf8()))
}

/// xstrings `nextValidRune`: the first rune that is not U+FFFD and the
/// bytes up to its end; `prev` and the whole length if there is none.
fn next_valid_rune(s: &str, prev: char) -> (char, usize) {
    let mut size = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let (r, sz) = first(rest);
        size += sz;
        if r != RUNE_ERROR {
            return (r, size);
        }
        rest = &rest[sz..];
    }
    (prev, size)
}

/// Consume runes while `keep` holds, from `offset` into `s` (`r`: the last
/// rune seen); returns the end of the word.
fn take_while(s: &str, mut offset: usize, mut r: char, keep: impl Fn(char) -> bool) -> usize {
    while offset < s.len() {
        let (next, size) = next_valid_rune(&s[offset..], r);
        r = next;
        if !keep(r) {
            break;
        }
        offset += size;
    }
    offset
}

/// xstrings `nextWord`: the type and text of the first word, and the rest.
fn next_word(s: &str) -> (Word, &str, &str) {
    if s.is_empty() {
        return (Word::Invalid, "", "");
    }
    let (r, size) = next_valid_rune(s, RUNE_ERROR);
    if r == RUNE_ERROR {
        return (Word::Invalid, &s[..size], &s[size..]);
    }
    let lower_tail = |c: char| is_alphabet(c) && !is_upper(c);
    let other = |c: char| !(is_connector(c) || is_alphabet(c) || is_number(c) || is_punct(c));
    let (wt, end) = if is_connector(r) {
        (Word::Connector, take_while(s, size, r, is_connector))
    } else if is_punct(r) {
        (Word::Punct, take_while(s, size, r, is_punct))
    } else if is_upper(r) {
        (Word::UpperCase, upper_word(s, r, size))
    } else if is_alphabet(r) {
        (Word::Alphabet, take_while(s, size, r, lower_tail))
    } else if is_number(r) {
        (Word::Number, take_while(s, size, r, is_number))
    } else {
        (Word::Other, take_while(s, size, r, other))
    };
    (wt, &s[..end], &s[end..])
}

/// The end of a word starting with a capital: `HTTPStatus` gives `HTTP` (the
/// last capital starts the next word), `Status` gives `Status`.
fn upper_word(s: &str, r: char, size: usize) -> usize {
    if size == s.len() {
        return size;
    }
    let (r, next) = next_valid_rune(&s[size..], r);
    if is_upper(r) {
        let mut offset = size + next;
        let mut prev_size = next;
        let mut r = r;
        while offset < s.len() {
            let (c, sz) = next_valid_rune(&s[offset..], r);
            r = c;
            if !is_upper(r) {
                break;
            }
            prev_size = sz;
            offset += sz;
        }
        if offset < s.len() && is_alphabet(r) {
            offset -= prev_size;
        }
        offset
    } else if is_alphabet(r) {
        take_while(s, size + next, r, |c| is_alphabet(c) && !is_upper(c))
    } else {
        size
    }
}

/// xstrings `toLower`: upper-case and connector words are lowered and
/// their connectors replaced; other words are written as they are.
fn lower_word(buf: &mut String, wt: Word, word: &str, connector: char) {
    if wt != Word::UpperCase && wt != Word::Connector {
        buf.push_str(word);
        return;
    }
    for c in word.chars() {
        buf.push(if is_connector(c) {
            connector
        } else if is_upper(c) {
            to_lower(c)
        } else {
            c
        });
    }
}

/// xstrings `camelCaseToLowerCase`.
fn camel_to_lower(s: &str, connector: char) -> String {
    let mut buf = String::with_capacity(s.len() + s.len() / 4);
    let (mut wt, mut word, mut remaining) = next_word(s);
    while !remaining.is_empty() {
        if wt != Word::Connector {
            lower_word(&mut buf, wt, word, connector);
        }
        let (prev, last) = (wt, word);
        (wt, word, remaining) = next_word(remaining);
        match prev {
            Word::Number => {
                while matches!(wt, Word::Alphabet | Word::Number) {
                    lower_word(&mut buf, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if !matches!(wt, Word::Invalid | Word::Punct | Word::Connector) {
                    buf.push(connector);
                }
            }
            Word::Connector => lower_word(&mut buf, prev, last, connector),
            Word::Punct => {}
            _ if wt != Word::Number => {
                if !matches!(wt, Word::Connector | Word::Punct) {
                    buf.push(connector);
                }
            }
            _ if remaining.is_empty() => {}
            _ => {
                let number = word;
                (wt, word, remaining) = next_word(remaining);
                if wt != Word::Alphabet {
                    // A number ends the previous word: "Bld4Floor" => "bld4_floor".
                    lower_word(&mut buf, Word::Number, number, connector);
                    if !matches!(wt, Word::Connector | Word::Punct) {
                        buf.push(connector);
                    }
                } else {
                    // Letters after it start a new word: "HTTP2xx" => "http_2xx".
                    buf.push(connector);
                    lower_word(&mut buf, Word::Number, number, connector);
                    while matches!(wt, Word::Alphabet | Word::Number) {
                        lower_word(&mut buf, wt, word, connector);
                        (wt, word, remaining) = next_word(remaining);
                    }
                    if !matches!(wt, Word::Invalid | Word::Connector | Word::Punct) {
                        buf.push(connector);
                    }
                }
            }
        }
    }
    lower_word(&mut buf, wt, word, connector);
    buf
}

/// sprig `snakecase`.
pub fn snake_case(s: &str) -> String {
    camel_to_lower(s, '_')
}

/// sprig `kebabcase`.
pub fn kebab_case(s: &str) -> String {
    camel_to_lower(s, '-')
}

/// sprig `camelcase` (xstrings `ToCamelCase`: the first word stays lower
/// case, leading connectors are kept, a run of connectors keeps all but one).
pub fn camel_case(s: &str) -> String {
    let mut buf = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut first_upper = false;
    let mut r0 = None;
    for c in chars.by_ref() {
        if !is_connector(c) {
            first_upper = is_upper(c);
            r0 = Some(to_lower(c));
            break;
        }
        buf.push(c);
    }
    let Some(mut r0) = r0 else {
        return buf;
    };
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            buf.push(r1);
            continue;
        }
        if is_connector(r1) {
            first_upper = is_upper(r0);
            r0 = to_upper(r0);
        } else {
            if first_upper {
                if is_upper(r0) {
                    r0 = to_lower(r0);
                } else {
                    first_upper = false;
                }
            }
            buf.push(r1);
        }
    }
    buf.push(r0);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_and_kebab_follow_the_xstrings_examples() {
        for (x, want) in [
            ("FirstName", "first_name"),
            ("HTTPServer", "http_server"),
            ("NoHTTPS", "no_https"),
            ("GO_PATH", "go_path"),
            ("GO PATH", "go_path"),
            ("GO-PATH", "go_path"),
            ("http2xx", "http_2xx"),
            ("HTTP20xOK", "http_20x_ok"),
            ("Duration2m3s", "duration_2m3s"),
            ("Bld4Floor3rd", "bld4_floor_3rd"),
            ("", ""),
            ("a  b", "a__b"),
        ] {
            assert_eq!(snake_case(x), want, "{x:?}");
            assert_eq!(kebab_case(x), want.replace('_', "-"), "{x:?}");
        }
    }

    #[test]
    fn camel_follows_the_xstrings_examples() {
        for (x, want) in [
            ("some_words", "someWords"),
            ("http_server", "httpServer"),
            ("no_https", "noHttps"),
            ("_complex__case_", "_complex_Case_"),
            ("some words", "someWords"),
            ("GOLANG_IS_GREAT", "golangIsGreat"),
            ("", ""),
            ("_", "_"),
            ("A", "a"),
        ] {
            assert_eq!(camel_case(x), want, "{x:?}");
        }
    }

    #[test]
    fn go_unicode_rules() {
        assert!(!is_upper('Ⓐ')); // Other_Uppercase, not Lu
        assert!(!is_punct('$') && is_punct('¿') && is_punct('_'));
        assert_eq!(
            (to_upper('ß'), to_upper('ᾳ'), to_lower('İ')),
            ('ß', 'ᾼ', 'i')
        );
        assert!(!is_alphabet('中') && is_alphabet('é'));
        // A real U+FFFD is skipped like invalid UTF-8, without a panic.
        assert_eq!(snake_case("\u{FFFD}"), "\u{FFFD}");
        assert_eq!(snake_case("A\u{FFFD}B"), "a\u{FFFD}b");
    }
}
