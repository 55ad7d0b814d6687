//! The one error type of a template function call ([`FuncError`]). Its Display is the text
//! Go's `text/template` and sprig v2.22.0 give (the Go oracle tests compare them byte for
//! byte); the executor prefixes it with `error calling <name>: `.

use super::limits::{MAX_LIST, MAX_STRING, human};
use super::semver::SemverError;
use super::value::Value;

/// Go's runtime text for a nil dereference ([`FuncError::Panic`]).
pub const NIL_DEREFERENCE: &str = "invalid memory address or nil pointer dereference";

/// Why a template function call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FuncError {
    #[error("wrong number of args for {name}: want {want} got {got}")]
    Arity {
        name: String,
        want: usize,
        got: usize,
    },
    #[error("wrong number of args for {name}: want at least {want} got {got}")]
    ArityAtLeast {
        name: String,
        want: usize,
        got: usize,
    },
    /// A nil argument where Go wants a value of type `expected`.
    #[error("invalid value; expected {expected}")]
    Nil { expected: &'static str },
    /// An argument of another type than the parameter's (Go does not convert).
    #[error("wrong type for value; expected {expected}; got {got}")]
    WrongType { expected: &'static str, got: String },
    #[error("function {0:?} not defined")]
    NotDefined(String),
    /// A Kanister ksprig refusal.
    #[error("sprig usage of '{0}' is not allowed by kanister as it is not FIPS compatible")]
    NotFips(String),
    /// sprig `fail`: the template's own message.
    #[error("{0}")]
    Fail(String),
    /// A value over [`MAX_STRING`]; `what` names it.
    #[error(
        "{what} would be longer than the {} limit of one string value; render less data",
        human(MAX_STRING)
    )]
    StringTooLong { what: String },
    /// A list over [`MAX_LIST`]; `what` names it.
    #[error(
        "{what} would have more than {MAX_LIST} elements, the limit of one list; use a smaller range"
    )]
    ListTooLong { what: String },
    /// `deepEqual` and list membership beyond their comparison budget.
    #[error("comparison of values too large (more than 10 million elements compared)")]
    CompareTooLarge,
    /// A Go runtime panic, which `text/template` reports with this text.
    #[error("runtime error: {0}")]
    Panic(String),

    // Go's text/template builtins (funcs.go).
    #[error("missing argument for comparison")]
    MissingComparand,
    #[error("incompatible types for comparison")]
    IncompatibleTypes,
    #[error("incompatible types for comparison: {0} and {1}")]
    IncompatibleTypesOf(String, String),
    #[error("invalid type for comparison")]
    BadComparisonType,
    /// Go's argument order: value, its type, the other's type, the other value.
    #[error("non-comparable types {0}: {1}, {2}: {3}")]
    NonComparableTypes(String, String, String, String),
    #[error("non-comparable type {value}: {ty}")]
    NonComparable { value: String, ty: String },
    /// `index` of `untyped nil` or `nil pointer`.
    #[error("index of {0}")]
    IndexOfNil(&'static str),
    #[error("index out of range: {0}")]
    IndexOutOfRange(i64),
    #[error("cannot index slice/array with nil")]
    IndexWithNil,
    #[error("cannot index slice/array with type {0}")]
    IndexWithType(String),
    #[error("value is nil; should be of type string")]
    NilKey,
    #[error("value has type {0}; should be string")]
    KeyType(String),
    #[error("can't index item of type {0}")]
    CannotIndex(String),
    #[error("len of nil pointer")]
    LenOfNil,
    #[error("len of type {0}")]
    LenOfType(String),
    #[error("call of nil")]
    CallOfNil,
    #[error("non-function of type {0}")]
    NonFunction(String),

    // sprig's list and string functions.
    /// A list function (`op`: `push`, `find rest`, ...) given a non-list of kind `kind`.
    #[error("Cannot {op} on type {kind}")]
    NotAList { op: String, kind: String },
    #[error("Cannot concat type {0} as list")]
    ConcatNotAList(&'static str),
    #[error("list should be type of slice or array but {0}")]
    SliceNotAList(&'static str),
    #[error("reflect: slice index out of range")]
    SliceIndex,
    #[error("strings: negative Repeat count")]
    NegativeRepeat,
    #[error("stringutils illegal argument: Minimum abbreviation width {}", if *with_offset { "with offset is 7" } else { "is 4" })]
    AbbrevWidth { with_offset: bool },
    #[error("regexp: Compile({pattern:?}): {detail}")]
    Regex { pattern: String, detail: String },
    #[error(transparent)]
    Semver(#[from] SemverError),

    // sprig's crypto and certificate functions.
    #[error("no system randomness")]
    NoRandomness,
    #[error("illegal base64 data at input byte {0}")]
    Base64(usize),
    #[error("encryptAES: padding failed")]
    AesPadding,
    #[error("crypto/cipher: input not full blocks")]
    NotFullBlocks,
    #[error("failed to generate private key")]
    KeyGeneration,
    /// A key that could not be written as PKCS#1 (the rsa crate's text).
    #[error("{0}")]
    KeyEncoding(String),
    #[error("error generating rsa key: {0}")]
    RsaKey(String),
    #[error("error processing alternate dns name: {0} is not a string")]
    DnsNameType(String),
    #[error("error parsing ip: {0} is not a string")]
    IpType(String),
    #[error("error parsing ip: {0}")]
    Ip(String),
    /// `base64 certificate`, `base64 private key`, `certificate` or `key`.
    #[error("unable to decode {0}")]
    Decode(&'static str),
    /// `what` is sprig's Go expression for the bytes parsed.
    #[error("error parsing certificate: {what}: {detail}")]
    CertParse { what: &'static str, detail: String },
    #[error("error parsing prive key: {what}: {detail}")]
    KeyParse { what: &'static str, detail: String },
    #[error("error creating certificate: {0}")]
    CertCreate(String),
    #[error("genSignedCert: the CA certificate's subject {subject} is not supported here: {why}")]
    CaSubject { subject: String, why: String },
}

impl FuncError {
    /// [`FuncError::Nil`] or [`FuncError::WrongType`] for argument `got`.
    pub fn wrong_type(expected: &'static str, got: &Value) -> Self {
        match got {
            Value::Nil => FuncError::Nil { expected },
            other => FuncError::WrongType {
                expected,
                got: other.type_name(),
            },
        }
    }

    /// [`FuncError::WrongType`], also for nil (`got <nil>`: Go converts nothing here).
    pub fn wrong_type_of(expected: &'static str, got: &Value) -> Self {
        FuncError::WrongType {
            expected,
            got: got.type_name(),
        }
    }
}

/// The error for a string that would exceed [`MAX_STRING`].
pub fn string_too_long(what: &str) -> FuncError {
    FuncError::StringTooLong {
        what: what.to_string(),
    }
}

/// The error for a list that would exceed [`MAX_LIST`].
pub fn list_too_long(what: &str) -> FuncError {
    FuncError::ListTooLong {
        what: what.to_string(),
    }
}

/// `Ok` when a string of `n` bytes is allowed.
pub fn check_len(n: usize, what: &str) -> Result<(), FuncError> {
    if n > MAX_STRING {
        return Err(string_too_long(what));
    }
    Ok(())
}

/// `Ok` when a list of `n` elements is allowed.
pub fn check_count(n: usize, what: &str) -> Result<(), FuncError> {
    if n > MAX_LIST {
        return Err(list_too_long(what));
    }
    Ok(())
}
