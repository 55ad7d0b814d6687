//! Kanister's decoding of phase arguments: `Arg`/`OptArg` call mapstructure's `WeakDecode`
//! (github.com/mitchellh/mapstructure v1.5.0, `WeaklyTypedInput`) into the Go type each
//! function declares. These are its rules for the types Kanister's functions use (`string`,
//! `[]string`, `map[string]string`, `map[string]interface{}`, `bool`), on the JSON values the
//! API server hands out (integers stay integers, as `sigs.k8s.io/json` decodes them), plus
//! ScaleWorkload's own rule for `replicas`. Shared by the executor ([`super::args`]) and the
//! validator, so a Blueprint admitted is one the executor decodes.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value};

/// A value the decoding refuses: where inside the argument (`""`, `"[1]"`, `".key"`) and why.
#[derive(Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub at: String,
    pub message: String,
}

impl Mismatch {
    fn new(message: impl Into<String>) -> Self {
        Mismatch {
            at: String::new(),
            message: message.into(),
        }
    }

    fn expected(what: &str, got: &Value) -> Self {
        Mismatch::new(format!("expected {what}, got {}", describe(got)))
    }

    /// The same mismatch, found inside an element or entry `at`.
    fn within(mut self, at: String) -> Self {
        self.at = at + &self.at;
        self
    }
}

/// `decodeString`: a string as is; weakly, a boolean is "1" or "0" and a number is printed in
/// base 10 (`strconv.FormatInt`, or `FormatFloat(f, 'f', -1, 64)`: no exponent). `null` leaves
/// Go's zero value, "". Lists and maps are refused.
pub fn string(v: &Value) -> Result<String, Mismatch> {
    match v {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(if *b { "1" } else { "0" }.into()),
        Value::Number(n) => Ok(go_number(n)),
        other => Err(Mismatch::expected("a string", other)),
    }
}

/// `decodeSlice` into `[]string`: a list, element by element with [`string`] (a `null` element
/// is ""); weakly, an empty map is an empty list and any single value is lifted into a
/// one-element list (`command: "echo hi"` is `["echo hi"]`, `""` is `[""]`). A non-empty map
/// is lifted too and then fails as an element that is not a string.
pub fn strings(v: &Value) -> Result<Vec<String>, Mismatch> {
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| string(item).map_err(|e| e.within(format!("[{i}]"))))
            .collect(),
        Value::Object(m) if m.is_empty() => Ok(Vec::new()),
        Value::Object(_) => Err(Mismatch::new(
            "expected a list of strings, got a map (only an empty map reads as an empty list)",
        )),
        single => Ok(vec![string(single)?]),
    }
}

/// `decodeMap` into `map[string]string` (labels, annotations, volumes): each value with
/// [`string`] (`null` is ""), after [`map_entries`].
pub fn string_map(v: &Value) -> Result<BTreeMap<String, String>, Mismatch> {
    map_entries(v)?
        .into_iter()
        .map(|e| {
            let s = string(e.value).map_err(|m| m.within(e.at))?;
            Ok((e.key.to_owned(), s))
        })
        .collect()
}

/// `decodeMap` into `map[string]interface{}` (`podOverride`): values kept as they are.
pub fn json_map(v: &Value) -> Result<Map<String, Value>, Mismatch> {
    Ok(map_entries(v)?
        .into_iter()
        .map(|e| (e.key.to_owned(), e.value.clone()))
        .collect())
}

/// One entry of a decoded map, with where it came from (`.app`, `[1].app`) for messages.
pub struct Entry<'a> {
    pub at: String,
    pub key: &'a str,
    pub value: &'a Value,
}

/// The entries a Go map is decoded from: a map; weakly (`decodeMapFromSlice`) a list, whose
/// elements are decoded into the same map one after the other, so an empty list is an empty map
/// and a list of maps is their merge, later keys winning (a `null` element adds nothing).
pub fn map_entries(v: &Value) -> Result<Vec<Entry<'_>>, Mismatch> {
    let mut entries = Vec::new();
    collect_entries(v, "", &mut entries)?;
    // Later entries win, as when Go sets the same key again.
    let mut seen = std::collections::HashSet::new();
    let mut merged: Vec<_> = entries
        .into_iter()
        .rev()
        .filter(|e| seen.insert(e.key))
        .collect();
    merged.reverse();
    Ok(merged)
}

fn collect_entries<'a>(v: &'a Value, at: &str, out: &mut Vec<Entry<'a>>) -> Result<(), Mismatch> {
    match v {
        Value::Object(m) => out.extend(m.iter().map(|(k, v)| Entry {
            at: format!("{at}.{k}"),
            key: k,
            value: v,
        })),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate().filter(|(_, v)| !v.is_null()) {
                collect_entries(item, &format!("{at}[{i}]"), out)?;
            }
        }
        other => return Err(Mismatch::expected("a map", other).within(at.to_owned())),
    }
    Ok(())
}

/// `decodeBool`: a boolean; weakly, a number is true when not 0, and a string is what Go's
/// `strconv.ParseBool` reads (1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False, exactly:
/// no spaces) or "" (false).
pub fn boolean(v: &Value) -> Result<bool, Mismatch> {
    match v {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(*b),
        Value::Number(n) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
        Value::String(s) => match s.as_str() {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
            "0" | "f" | "F" | "FALSE" | "false" | "False" | "" => Ok(false),
            _ => Err(Mismatch::new(format!(
                "expected true or false (Go's strconv.ParseBool), got {s:?}"
            ))),
        },
        other => Err(Mismatch::expected("a boolean", other)),
    }
}

/// ScaleWorkload's `replicas`, the one integer argument: Kanister decodes it into an
/// `interface{}` (not with mapstructure's int rules) and takes an integer, or a string
/// `strconv.Atoi` reads (decimal digits with an optional sign, nothing else: "Cannot convert
/// %s to int"); booleans and fractions are "Invalid arg type". An integral float (YAML `2.0`)
/// counts as an integer: the API server stores it as `2`.
pub fn int(v: &Value) -> Result<i64, Mismatch> {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i)
            } else if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15) {
                Ok(f as i64)
            } else {
                Err(Mismatch::new(format!("expected an integer, got {n}")))
            }
        }
        Value::String(s) => s
            .parse::<i64>()
            .map_err(|_| Mismatch::new(format!("Cannot convert {s:?} to int"))),
        other => Err(Mismatch::expected("an integer", other)),
    }
}

/// A number as Go prints it after decoding JSON: integers in base 10, other numbers as
/// `FormatFloat(f, 'f', -1, 64)` (shortest digits, never an exponent), which is what Rust's
/// `Display` for `f64` prints too.
fn go_number(n: &Number) -> String {
    match (n.as_i64(), n.as_f64()) {
        (Some(i), _) => i.to_string(),
        (None, Some(f)) => f.to_string(),
        (None, None) => n.to_string(),
    }
}

/// A value for messages: its kind, and short strings themselves.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() > 40 => "a string".into(),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a map".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(e: Mismatch) -> String {
        format!("{}: {}", e.at, e.message)
    }

    /// WeaklyTypedInput: "bools to string (true = "1", false = "0")".
    #[test]
    fn bool_to_string_is_1_or_0() {
        assert_eq!(string(&json!(true)).unwrap(), "1");
        assert_eq!(string(&json!(false)).unwrap(), "0");
    }

    /// WeaklyTypedInput: "numbers to string (base 10)"; floats with FormatFloat 'f', -1.
    #[test]
    fn number_to_string_is_base_10_without_exponent() {
        assert_eq!(string(&json!(12)).unwrap(), "12");
        assert_eq!(string(&json!(-3)).unwrap(), "-3");
        assert_eq!(string(&json!(2.5)).unwrap(), "2.5");
        assert_eq!(string(&json!(2.0)).unwrap(), "2");
        assert_eq!(string(&json!(1e21)).unwrap(), "1000000000000000000000");
        assert_eq!(string(&json!(u64::MAX)).unwrap(), "18446744073709552000");
    }

    /// decodeString refuses what is neither a string nor a scalar.
    #[test]
    fn lists_and_maps_are_not_strings() {
        assert_eq!(
            at(string(&json!(["a"])).unwrap_err()),
            ": expected a string, got a list"
        );
        assert_eq!(
            at(string(&json!({"a": 1})).unwrap_err()),
            ": expected a string, got a map"
        );
    }

    /// WeaklyTypedInput: "single values are converted to slices if required. Each element is
    /// weakly decoded" (decodeSlice "lift"), including "" and numbers and booleans.
    #[test]
    fn single_value_is_a_one_element_list() {
        assert_eq!(strings(&json!("echo hi")).unwrap(), vec!["echo hi"]);
        assert_eq!(strings(&json!("")).unwrap(), vec![""]);
        assert_eq!(strings(&json!(7)).unwrap(), vec!["7"]);
        assert_eq!(strings(&json!(true)).unwrap(), vec!["1"]);
    }

    /// WeaklyTypedInput: "empty array = empty map and vice versa" (decodeSlice: "Empty maps
    /// turn into empty slices"); a non-empty map is lifted and fails as an element.
    #[test]
    fn empty_map_is_an_empty_list() {
        assert_eq!(strings(&json!({})).unwrap(), Vec::<String>::new());
        let e = at(strings(&json!({"sh": "-c"})).unwrap_err());
        assert!(
            e.starts_with(": expected a list of strings, got a map"),
            "{e}"
        );
    }

    /// decodeSlice decodes each element weakly; a null element keeps Go's zero value "".
    #[test]
    fn list_elements_are_decoded_weakly_and_located() {
        assert_eq!(
            strings(&json!(["a", 1, false, null, 0.5])).unwrap(),
            vec!["a", "1", "0", "", "0.5"]
        );
        assert_eq!(
            at(strings(&json!(["a", ["b"]])).unwrap_err()),
            "[1]: expected a string, got a list"
        );
    }

    /// WeaklyTypedInput: "empty array = empty map" (decodeMapFromSlice, "Special case for BC").
    #[test]
    fn empty_list_is_an_empty_map() {
        assert!(string_map(&json!([])).unwrap().is_empty());
        assert!(json_map(&json!([])).unwrap().is_empty());
    }

    /// WeaklyTypedInput: "slice of maps to a merged map"; later keys win.
    #[test]
    fn list_of_maps_is_their_merge() {
        let m = string_map(&json!([{"a": "1", "b": "x"}, null, [{"b": "2"}], {}])).unwrap();
        assert_eq!(
            m,
            BTreeMap::from([("a".into(), "1".into()), ("b".into(), "2".into())])
        );
        let m = json_map(&json!([{"spec": {"x": 1}}, {"metadata": {}}])).unwrap();
        assert_eq!(m["spec"], json!({"x": 1}));
        assert_eq!(m.len(), 2);
        assert_eq!(
            at(string_map(&json!([{"a": "1"}, "b=2"])).unwrap_err()),
            "[1]: expected a map, got the string \"b=2\""
        );
        assert_eq!(
            at(string_map(&json!([{}, {"a": ["x"]}])).unwrap_err()),
            "[1].a: expected a string, got a list"
        );
        assert_eq!(
            at(json_map(&json!("a: 1")).unwrap_err()),
            ": expected a map, got the string \"a: 1\""
        );
    }

    /// decodeMap decodes each value into a string weakly: bools "1"/"0", numbers base 10,
    /// null the zero value "".
    #[test]
    fn map_values_are_decoded_weakly_and_located() {
        let m = string_map(&json!({"n": 2, "b": true, "z": null, "s": "v"})).unwrap();
        assert_eq!(
            m,
            BTreeMap::from([
                ("b".into(), "1".into()),
                ("n".into(), "2".into()),
                ("s".into(), "v".into()),
                ("z".into(), String::new()),
            ])
        );
        assert_eq!(
            at(string_map(&json!({"app": ["x"]})).unwrap_err()),
            ".app: expected a string, got a list"
        );
    }

    /// WeaklyTypedInput: "int to bool (true if value != 0)" and "string to bool (accepts: 1, t,
    /// T, TRUE, true, True, 0, f, F, FALSE, false, False. Anything else is an error)"; decodeBool
    /// also reads "" as false.
    #[test]
    fn bool_from_numbers_and_parse_bool_strings() {
        for s in ["1", "t", "T", "TRUE", "true", "True"] {
            assert!(boolean(&json!(s)).unwrap(), "{s}");
        }
        for s in ["0", "f", "F", "FALSE", "false", "False", ""] {
            assert!(!boolean(&json!(s)).unwrap(), "{s}");
        }
        assert!(boolean(&json!(2)).unwrap());
        assert!(boolean(&json!(0.5)).unwrap());
        assert!(!boolean(&json!(0)).unwrap());
        for s in ["yes", "on", " true", "tRUE"] {
            let e = at(boolean(&json!(s)).unwrap_err());
            assert!(e.contains("strconv.ParseBool"), "{e}");
        }
        assert_eq!(
            at(boolean(&json!([true])).unwrap_err()),
            ": expected a boolean, got a list"
        );
    }

    /// ScaleWorkload's replicas: integers, and strings strconv.Atoi reads; not booleans,
    /// fractions, padded or prefixed strings.
    #[test]
    fn replicas_are_integers_or_atoi_strings() {
        assert_eq!(int(&json!(3)).unwrap(), 3);
        assert_eq!(int(&json!(2.0)).unwrap(), 2);
        assert_eq!(int(&json!("4")).unwrap(), 4);
        assert_eq!(int(&json!("+4")).unwrap(), 4);
        assert_eq!(int(&json!("-1")).unwrap(), -1);
        for bad in [" 5 ", "0x10", "1_000", "", "x"] {
            let e = at(int(&json!(bad)).unwrap_err());
            assert_eq!(e, format!(": Cannot convert {bad:?} to int"));
        }
        assert_eq!(
            at(int(&json!(2.5)).unwrap_err()),
            ": expected an integer, got 2.5"
        );
        assert_eq!(
            at(int(&json!(true)).unwrap_err()),
            ": expected an integer, got the boolean true"
        );
    }
}
