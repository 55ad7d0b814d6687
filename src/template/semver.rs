//! The semantic version of Masterminds/semver v1.5.0 (`version.go`), the
//! value sprig's `semver` returns: parsing with the same regular
//! expression, ordering with the same quirks, printing as Go does.

use regex::Regex;
use std::sync::LazyLock;

pub const PART: &str = r"[0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*";

static VERSION_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-({PART}))?(\+({PART}))?$"
    ))
    .expect("semver version regex")
});

static PART_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^({PART})$")).expect("semver part regex"));

/// Why a version or a constraint does not parse, or a method cannot run; the texts are
/// Masterminds/semver's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SemverError {
    #[error("Invalid Semantic Version")]
    InvalidVersion,
    /// A number beyond int64 (Go `strconv.ParseInt`).
    #[error("Error parsing version segment: strconv.ParseInt: parsing {0:?}: value out of range")]
    Segment(String),
    #[error("Invalid Prerelease string")]
    InvalidPrerelease,
    #[error("Invalid Metadata string")]
    InvalidMetadata,
    #[error("improper constraint: {0}")]
    ImproperConstraint(String),
    /// Go words every failure to parse a constraint's version the same way.
    #[error("constraint Parser Error")]
    ConstraintVersion,
    /// A method that changes the version in place; our values are immutable.
    #[error(
        "{0} is not supported here (it changes the version in place); use semver to parse a new version"
    )]
    InPlace(String),
}

/// A semantic version (`*semver.Version` in Go).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Version {
    pub major: i64,
    pub minor: i64,
    pub patch: i64,
    pub pre: String,
    pub metadata: String,
    /// The text parsed (Go's `Original()`).
    pub original: String,
}

/// Go `strconv.ParseInt(x, 10, 64)` on ASCII digits, with its error text.
fn parse_segment(x: &str) -> Result<i64, SemverError> {
    x.parse().map_err(|_| SemverError::Segment(x.to_string()))
}

impl Version {
    /// The Go type's name, as `printf "%T"` and errors print it.
    pub fn type_name(ptr: bool) -> &'static str {
        if ptr {
            "*semver.Version"
        } else {
            "semver.Version"
        }
    }

    /// Go `NewVersion`.
    pub fn parse(v: &str) -> Result<Version, SemverError> {
        let Some(m) = VERSION_RE.captures(v) else {
            return Err(SemverError::InvalidVersion);
        };
        let group = |i: usize| m.get(i).map_or("", |g| g.as_str());
        let dotted = |i: usize| match group(i) {
            "" => Ok(0),
            g => parse_segment(&g[1..]),
        };
        Ok(Version {
            major: parse_segment(group(1))?,
            minor: dotted(2)?,
            patch: dotted(3)?,
            pre: group(5).to_string(),
            metadata: group(8).to_string(),
            original: v.to_string(),
        })
    }

    /// `v` when the original text started with one (Go `originalVPrefix`).
    fn v_prefix(&self) -> &'static str {
        if self.original.starts_with('v') {
            "v"
        } else {
            ""
        }
    }

    /// A copy with `original` recomputed, as Go's `Inc*`/`Set*` do.
    fn derived(mut self, prefix: &str) -> Version {
        self.original = format!("{prefix}{self}");
        self
    }

    pub fn inc_patch(&self) -> Version {
        let mut n = self.clone();
        if self.pre.is_empty() {
            n.patch = self.patch.wrapping_add(1);
        }
        n.pre.clear();
        n.metadata.clear();
        n.derived(self.v_prefix())
    }

    pub fn inc_minor(&self) -> Version {
        let mut n = self.clone();
        (n.minor, n.patch) = (self.minor.wrapping_add(1), 0);
        n.pre.clear();
        n.metadata.clear();
        n.derived(self.v_prefix())
    }

    pub fn inc_major(&self) -> Version {
        let mut n = self.clone();
        (n.major, n.minor, n.patch) = (self.major.wrapping_add(1), 0, 0);
        n.pre.clear();
        n.metadata.clear();
        n.derived(self.v_prefix())
    }

    pub fn set_prerelease(&self, pre: &str) -> Result<Version, SemverError> {
        if !pre.is_empty() && !PART_RE.is_match(pre) {
            return Err(SemverError::InvalidPrerelease);
        }
        let mut n = self.clone();
        n.pre = pre.to_string();
        Ok(n.derived(self.v_prefix()))
    }

    pub fn set_metadata(&self, meta: &str) -> Result<Version, SemverError> {
        if !meta.is_empty() && !PART_RE.is_match(meta) {
            return Err(SemverError::InvalidMetadata);
        }
        let mut n = self.clone();
        n.metadata = meta.to_string();
        Ok(n.derived(self.v_prefix()))
    }

    /// Go `Compare`: -1, 0 or 1; metadata is ignored, a prerelease sorts first.
    pub fn compare(&self, o: &Version) -> i64 {
        let by_numbers = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if by_numbers.is_ne() {
            return by_numbers as i64;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => 0,
            (true, false) => 1,
            (false, true) => -1,
            (false, false) => compare_prerelease(&self.pre, &o.pre),
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

fn compare_prerelease(a: &str, b: &str) -> i64 {
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    for i in 0..pa.len().max(pb.len()) {
        let d = compare_pre_part(
            pa.get(i).copied().unwrap_or(""),
            pb.get(i).copied().unwrap_or(""),
        );
        if d != 0 {
            return d;
        }
    }
    0
}

/// Go `strconv.ParseUint(x, 10, 64)` (no sign accepted, unlike Rust's parse).
fn parse_uint(x: &str) -> Option<u64> {
    if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    x.parse().ok()
}

/// Go `comparePrePart`, including its quirk that equal numbers written
/// differently (`01` and `1`) compare as less, never equal.
fn compare_pre_part(s: &str, o: &str) -> i64 {
    if s == o {
        return 0;
    }
    if s.is_empty() {
        return -1;
    }
    if o.is_empty() {
        return 1;
    }
    match (parse_uint(s), parse_uint(o)) {
        (None, None) => {
            if s > o {
                1
            } else {
                -1
            }
        }
        (Some(_), None) => -1,
        (None, Some(_)) => 1,
        (Some(si), Some(oi)) => {
            if si > oi {
                1
            } else {
                -1
            }
        }
    }
}
