//! Phase arguments as a function reads them, decoded as Kanister's `Arg`/`OptArg` do
//! (mapstructure's `WeaklyTypedInput`, the rules are in [`super::weak`]), with errors naming
//! the function and the argument.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::FunctionError;
use super::weak;

/// The phase's arguments, with the function name for error messages.
pub struct Args<'a> {
    pub function: &'static str,
    pub args: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    pub fn new(function: &'static str, args: &'a Map<String, Value>) -> Self {
        Args { function, args }
    }

    fn err(&self, name: &str, msg: impl Into<String>) -> FunctionError {
        FunctionError::arg(self.function, name, msg)
    }

    /// The argument, treating JSON `null` as absent.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.args.get(name).filter(|v| !v.is_null())
    }

    pub fn exists(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    fn required<T>(&self, name: &str, v: Option<T>) -> Result<T, FunctionError> {
        v.ok_or_else(|| self.err(name, "required argument is missing"))
    }

    /// Decodes `name` with `decode`, locating a mismatch inside it (`command[1]`, `podLabels.app`).
    fn decode<T>(
        &self,
        name: &str,
        decode: impl Fn(&Value) -> Result<T, weak::Mismatch>,
    ) -> Result<Option<T>, FunctionError> {
        self.get(name)
            .map(|v| decode(v).map_err(|e| self.err(&format!("{name}{}", e.at), e.message)))
            .transpose()
    }

    pub fn opt_string(&self, name: &str) -> Result<Option<String>, FunctionError> {
        self.decode(name, weak::string)
    }

    pub fn string(&self, name: &str) -> Result<String, FunctionError> {
        let v = self.opt_string(name)?;
        self.required(name, v)
    }

    pub fn opt_int(&self, name: &str) -> Result<Option<i64>, FunctionError> {
        self.decode(name, weak::int)
    }

    pub fn int(&self, name: &str) -> Result<i64, FunctionError> {
        let v = self.opt_int(name)?;
        self.required(name, v)
    }

    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, FunctionError> {
        self.decode(name, weak::boolean)
    }

    /// An optional boolean, `false` when absent (`insecureTLS`, `reclaimSpace`).
    pub fn flag(&self, name: &str) -> Result<bool, FunctionError> {
        Ok(self.opt_bool(name)?.unwrap_or(false))
    }

    /// A list of strings; a single value is a one-element list, an empty map an empty list.
    pub fn opt_string_list(&self, name: &str) -> Result<Option<Vec<String>>, FunctionError> {
        self.decode(name, weak::strings)
    }

    pub fn string_list(&self, name: &str) -> Result<Vec<String>, FunctionError> {
        let v = self.opt_string_list(name)?;
        let v = self.required(name, v)?;
        if v.is_empty() {
            return Err(self.err(name, "must not be empty"));
        }
        Ok(v)
    }

    /// A map of strings (labels, annotations, volumes); a list of maps is their merge.
    pub fn opt_string_map(
        &self,
        name: &str,
    ) -> Result<Option<BTreeMap<String, String>>, FunctionError> {
        self.decode(name, weak::string_map)
    }

    /// `podOverride`, a `map[string]interface{}` in Kanister: a map, or a list of maps (merged).
    /// A string is read as YAML/JSON text, as [`Args::opt_object`] does.
    pub fn opt_json_map(&self, name: &str) -> Result<Option<Map<String, Value>>, FunctionError> {
        match self.get(name) {
            Some(Value::String(_)) => self.opt_object(name),
            _ => self.decode(name, weak::json_map),
        }
    }

    /// A JSON object; a string is parsed as YAML/JSON text.
    pub fn opt_object(&self, name: &str) -> Result<Option<Map<String, Value>>, FunctionError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => match parse_yaml_object(s) {
                Ok(m) => Ok(Some(m)),
                Err(e) => Err(self.err(name, e.to_string())),
            },
            Some(other) => Err(self.err(
                name,
                format!("expected an object, got {}", type_name(other)),
            )),
        }
    }
}

/// Why a text is not the YAML (or JSON) of one object.
#[derive(Debug, thiserror::Error)]
pub enum YamlObjectError {
    #[error("not valid YAML/JSON: {0}")]
    Invalid(#[from] serde_yaml::Error),
    #[error("expected a YAML/JSON object (mapping), got {0}")]
    NotObject(&'static str),
}

/// YAML (or JSON) text of one object.
pub fn parse_yaml_object(text: &str) -> Result<Map<String, Value>, YamlObjectError> {
    match serde_yaml::from_str(text)? {
        Value::Object(m) => Ok(m),
        other => Err(YamlObjectError::NotObject(type_name(&other))),
    }
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn ints_accept_numbers_and_numeric_strings() {
        let m = args(json!({"a": 3, "b": "4", "c": " 5 ", "d": "x", "e": 2.0, "f": 2.5, "g": [1]}));
        let a = Args::new("ScaleWorkload", &m);
        assert_eq!(a.int("a").unwrap(), 3);
        assert_eq!(a.int("b").unwrap(), 4);
        assert_eq!(a.int("e").unwrap(), 2);
        let e = a.int("d").unwrap_err().to_string();
        assert_eq!(
            e,
            "ScaleWorkload: argument `d`: Cannot convert \"x\" to int"
        );
        // strconv.Atoi takes no spaces.
        assert!(a.int("c").is_err());
        assert!(a.int("f").is_err());
        assert!(a.int("g").is_err());
        let e = a.int("missing").unwrap_err().to_string();
        assert!(e.contains("`missing`: required argument is missing"), "{e}");
        assert_eq!(a.opt_int("missing").unwrap(), None);
    }

    #[test]
    fn bools_accept_go_spellings() {
        let m =
            args(json!({"a": "true", "b": "false", "c": true, "d": "yes", "e": "1", "f": null}));
        let a = Args::new("ScaleWorkload", &m);
        assert_eq!(a.opt_bool("a").unwrap(), Some(true));
        assert_eq!(a.opt_bool("b").unwrap(), Some(false));
        assert_eq!(a.opt_bool("c").unwrap(), Some(true));
        assert_eq!(a.opt_bool("e").unwrap(), Some(true));
        assert!(a.opt_bool("d").is_err());
        assert_eq!(a.opt_bool("f").unwrap(), None);
    }

    #[test]
    fn strings_lists_maps_and_objects() {
        let m = args(json!({
            "s": 12, "l": ["a", 1, true], "one": "sh", "bad": [{}],
            "m": {"x": "1", "y": 2}, "o": "a: 1\nb: [x]", "o2": "- 1", "o3": {"k": 1}
        }));
        let a = Args::new("KubeTask", &m);
        assert_eq!(a.string("s").unwrap(), "12");
        assert_eq!(a.string_list("l").unwrap(), vec!["a", "1", "1"]);
        assert_eq!(a.string_list("one").unwrap(), vec!["sh"]);
        let e = a.string_list("bad").unwrap_err().to_string();
        assert!(e.contains("`bad[0]`: expected a string, got a map"), "{e}");
        let mm = a.opt_string_map("m").unwrap().unwrap();
        assert_eq!(mm["y"], "2");
        assert_eq!(a.opt_object("o").unwrap().unwrap()["b"], json!(["x"]));
        assert!(
            a.opt_object("o2")
                .unwrap_err()
                .to_string()
                .contains("mapping")
        );
        assert_eq!(a.opt_object("o3").unwrap().unwrap()["k"], json!(1));
    }

    /// The weak rules of [`weak`] reach every reader; errors name the function, the argument and
    /// the place inside it.
    #[test]
    fn weak_rules_apply_and_errors_name_the_place() {
        let m = args(json!({
            "command": {}, "podLabels": [{"a": 1}, {"b": true}], "podOverride": [],
            "volumes": {"pvc": ["x"]}, "image": false
        }));
        let a = Args::new("KubeTask", &m);
        assert_eq!(a.opt_string_list("command").unwrap(), Some(vec![]));
        assert_eq!(
            a.string_list("command").unwrap_err().to_string(),
            "KubeTask: argument `command`: must not be empty"
        );
        let labels = a.opt_string_map("podLabels").unwrap().unwrap();
        assert_eq!((labels["a"].as_str(), labels["b"].as_str()), ("1", "1"));
        assert_eq!(a.opt_json_map("podOverride").unwrap(), Some(Map::new()));
        assert_eq!(a.string("image").unwrap(), "0");
        assert_eq!(
            a.opt_string_map("volumes").unwrap_err().to_string(),
            "KubeTask: argument `volumes.pvc`: expected a string, got a list"
        );
    }
}
