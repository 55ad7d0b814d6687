//! The function map of templates: which names exist (Go's builtins and the
//! sprig v2.22.0 functions Kanister offers) and the dispatch of a call to
//! the module that implements it.

use super::args::{Ctx, FnResult};
use super::error::FuncError;
use super::value::Value;
use super::{
    builtins, sprig_certs, sprig_core, sprig_crypto, sprig_lists, sprig_other, sprig_semver,
    sprig_strings,
};

const SPRIG_OTHER: &[&str] = &[
    "abbrev",
    "abbrevboth",
    "adler32sum",
    "ago",
    "append",
    "b32dec",
    "base",
    "biggest",
    "buildCustomCert",
    "camelcase",
    "ceil",
    "clean",
    "compact",
    "concat",
    "dateModify",
    "date_modify",
    "decryptAES",
    "deepCopy",
    "deepEqual",
    "dir",
    "encryptAES",
    "env",
    "expandenv",
    "ext",
    "floor",
    "genCA",
    "genPrivateKey",
    "genSelfSignedCert",
    "genSignedCert",
    "getHostByName",
    "has",
    "hello",
    "htmlDate",
    "htmlDateInZone",
    "initial",
    "initials",
    "isAbs",
    "kebabcase",
    "keys",
    "kindIs",
    "kindOf",
    "merge",
    "mergeOverwrite",
    "omit",
    "pick",
    "pluck",
    "plural",
    "prepend",
    "push",
    "randAlpha",
    "randAlphaNum",
    "randAscii",
    "randNumeric",
    "regexFind",
    "regexFindAll",
    "regexMatch",
    "regexReplaceAll",
    "regexReplaceAllLiteral",
    "regexSplit",
    "rest",
    "reverse",
    "round",
    "semver",
    "semverCompare",
    "set",
    "shuffle",
    "slice",
    "snakecase",
    "sortAlpha",
    "splitn",
    "substr",
    "swapcase",
    "toDecimal",
    "trunc",
    "tuple",
    "typeIs",
    "typeIsLike",
    "typeOf",
    "uniq",
    "unset",
    "until",
    "untilStep",
    "untitle",
    "urlJoin",
    "urlParse",
    "uuidv4",
    "values",
    "without",
    "wrap",
    "wrapWith",
    "html",
    "js",
    "urlquery",
    "call",
];

pub fn is_defined(name: &str) -> bool {
    // Linear on purpose: comparing lengths first makes a scan of these short lists faster than
    // a sorted list searched by halves (a memcmp call per step).
    builtins::NAMES.contains(&name)
        || sprig_core::NAMES.contains(&name)
        || sprig_strings::NAMES.contains(&name)
        || sprig_lists::NAMES.contains(&name)
        || sprig_other::NAMES.contains(&name)
        || sprig_semver::NAMES.contains(&name)
        || sprig_crypto::NAMES.contains(&name)
        || sprig_certs::NAMES.contains(&name)
}

/// Every function a template may call (Go builtins and sprig), for tests.
#[cfg(test)]
pub fn all_names() -> Vec<&'static str> {
    builtins::NAMES
        .iter()
        .chain(sprig_core::NAMES)
        .chain(SPRIG_OTHER)
        .chain(sprig_strings::NAMES)
        .chain(sprig_lists::NAMES)
        .chain(sprig_other::NAMES)
        .chain(sprig_semver::NAMES)
        .chain(sprig_crypto::NAMES)
        .chain(sprig_certs::NAMES)
        .copied()
        .filter(|n| is_defined(n))
        .collect()
}

pub fn is_sprig_unsupported(name: &str) -> bool {
    SPRIG_OTHER.contains(&name) && !is_defined(name)
}

/// Call a non-lazy function with evaluated arguments.
pub fn call(name: &str, args: &[Value], ctx: &Ctx) -> FnResult {
    builtins::call(name, args)
        .or_else(|| sprig_core::call(name, args, ctx))
        .or_else(|| sprig_lists::call(name, args))
        .or_else(|| sprig_other::call(name, args, ctx))
        .or_else(|| sprig_semver::call(name, args))
        .or_else(|| sprig_crypto::call(name, args))
        .or_else(|| sprig_certs::call(name, args, ctx))
        // Last: it answers every name (with "not defined").
        .or_else(|| sprig_strings::call(name, args))
        .unwrap_or_else(|| Err(FuncError::NotDefined(name.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sprig_v2_22_function_is_implemented() {
        let missing: Vec<_> = SPRIG_OTHER.iter().filter(|n| !is_defined(n)).collect();
        assert!(missing.is_empty(), "{missing:?}");
    }

    #[test]
    fn is_defined_is_membership_in_the_name_lists() {
        let lists = [
            builtins::NAMES,
            sprig_core::NAMES,
            sprig_strings::NAMES,
            sprig_lists::NAMES,
            sprig_other::NAMES,
            sprig_semver::NAMES,
            sprig_crypto::NAMES,
            sprig_certs::NAMES,
        ];
        for name in lists.iter().copied().flatten() {
            assert!(is_defined(name), "{name}");
            // Prefixes and extensions of a name are other names.
            for other in [
                &name[..name.len() - 1],
                &format!("{name}x"),
                &name.to_uppercase(),
            ] {
                let listed = lists.iter().any(|l| l.contains(&other));
                assert_eq!(is_defined(other), listed, "{other}");
            }
        }
        assert!(!is_defined(""));
    }
}
