//! Runtime values with the Go type information that text/template observes.
//!
//! Kanister's data is a Go struct (`param.TemplateParams`), so the engine
//! needs to know which nodes are structs (missing field = error, declared
//! field order, JSON tag names), maps (sorted keys, typed zero value for
//! `index`), `[]byte` (Secret data), nil pointers and `time.Time`.

use std::collections::BTreeMap;
use std::sync::Arc;

/// A Go `time.Time`: an instant plus the zone it is displayed in.
#[derive(Clone, Debug, PartialEq)]
pub struct GoTime {
    /// Local wall clock at `offset` seconds east of UTC.
    pub dt: chrono::DateTime<chrono::FixedOffset>,
    /// Zone abbreviation (`UTC`, or `""` for a fixed zone without a name).
    pub zone: Arc<str>,
}

/// A Go map with string keys (iteration and printing in sorted key order).
#[derive(Clone, Debug, PartialEq)]
pub struct GoMap {
    pub entries: BTreeMap<String, Value>,
    /// Zero value of the element type (returned by `index` for a missing key).
    pub zero: Value,
    /// Go type name, e.g. `map[string]string`.
    pub ty: Arc<str>,
    /// A nil map (marshals to `null`).
    pub nil: bool,
    /// Nesting depth (see [`Value::depth`]), computed once at construction.
    pub depth: u32,
}

/// A slice's Go type name and nesting depth.
#[derive(Clone, Debug, PartialEq)]
pub struct ListTy {
    /// Go type name, e.g. `[]string`.
    pub name: Arc<str>,
    /// Nesting depth (see [`Value::depth`]), computed once at construction.
    pub depth: u32,
}

impl std::fmt::Display for ListTy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// One field of a Go struct.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: &'static str,
    /// JSON name (`None`: the Go name). Embedded fields without a tag are inlined.
    pub json: Option<&'static str>,
    pub omitempty: bool,
    pub embedded: bool,
    pub value: Value,
}

/// A Go struct value.
#[derive(Clone, Debug, PartialEq)]
pub struct GoStruct {
    pub ty: &'static str,
    pub fields: Vec<Field>,
}

impl GoMap {
    pub fn new(entries: BTreeMap<String, Value>, zero: Value, ty: &str, nil: bool) -> GoMap {
        let depth = children_depth(entries.values());
        GoMap {
            entries,
            zero,
            ty: Arc::from(ty),
            nil,
            depth,
        }
    }
}

fn children_depth<'a>(it: impl Iterator<Item = &'a Value>) -> u32 {
    let d = it.map(Value::depth).max().unwrap_or(0);
    u32::try_from(d + 1).unwrap_or(u32::MAX)
}

impl GoStruct {
    /// Field lookup with Go's promotion through embedded structs.
    pub fn get(&self, name: &str) -> Option<&Value> {
        if let Some(f) = self.fields.iter().find(|f| f.name == name) {
            return Some(&f.value);
        }
        self.fields
            .iter()
            .filter(|f| f.embedded)
            .find_map(|f| match &f.value {
                Value::Struct(s) => s.get(name),
                _ => None,
            })
    }
}

/// A value as seen by the template engine.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    /// No value: a nil interface or a missing result (prints `<no value>`).
    #[default]
    Nil,
    /// A typed nil pointer (prints `<nil>`, is false, errors on field access).
    NilPtr(&'static str),
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    Bytes(Arc<[u8]>),
    /// A slice with its Go type name (e.g. `[]string`).
    List(Arc<Vec<Value>>, ListTy),
    Map(Arc<GoMap>),
    Struct(Arc<GoStruct>),
    Time(Arc<GoTime>),
    /// A Masterminds/semver `*Version` (`true`: what `semver` returns) or a
    /// `Version` value (what its `IncPatch`... methods return).
    Semver(Arc<super::semver::Version>, bool),
}

impl Value {
    pub fn str(s: impl Into<Arc<str>>) -> Value {
        Value::Str(s.into())
    }

    pub fn list(v: Vec<Value>, ty: &str) -> Value {
        let depth = children_depth(v.iter());
        Value::List(
            Arc::new(v),
            ListTy {
                name: Arc::from(ty),
                depth,
            },
        )
    }

    pub fn map(entries: BTreeMap<String, Value>, zero: Value, ty: &str) -> Value {
        Value::Map(Arc::new(GoMap::new(entries, zero, ty, false)))
    }

    /// How many lists, maps and structs are nested inside each other here
    /// (0 for scalars). Printing, JSON and comparisons recurse this deep.
    pub fn depth(&self) -> usize {
        match self {
            Value::List(_, t) => t.depth as usize,
            Value::Map(m) => m.depth as usize,
            Value::Struct(s) => 1 + s.fields.iter().map(|f| f.value.depth()).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// Go type name for error messages and type checks.
    pub fn type_name(&self) -> String {
        match self {
            Value::Nil => "<nil>".into(),
            Value::NilPtr(t) => format!("*{t}"),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float64".into(),
            Value::Str(_) => "string".into(),
            Value::Bytes(_) => "[]uint8".into(),
            Value::List(_, t) => t.to_string(),
            Value::Map(m) => m.ty.to_string(),
            Value::Struct(s) => s.ty.to_string(),
            Value::Time(_) => "time.Time".into(),
            Value::Semver(_, ptr) => super::semver::Version::type_name(*ptr).into(),
        }
    }

    /// Go's `isTrue` (text/template truth).
    pub fn truth(&self) -> bool {
        match self {
            Value::Nil | Value::NilPtr(_) => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::List(l, _) => !l.is_empty(),
            Value::Map(m) => !m.entries.is_empty(),
            Value::Struct(_) | Value::Time(_) | Value::Semver(..) => true,
        }
    }
}

/// Convert untyped JSON (as in `map[string]interface{}` from unstructured
/// decoding: integers are int64, other numbers float64).
pub fn from_json_any(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::str(s.as_str()),
        serde_json::Value::Array(a) => {
            Value::list(a.iter().map(from_json_any).collect(), "[]interface {}")
        }
        serde_json::Value::Object(o) => Value::map(
            o.iter()
                .map(|(k, v)| (k.clone(), from_json_any(v)))
                .collect(),
            Value::Nil,
            "map[string]interface {}",
        ),
    }
}
