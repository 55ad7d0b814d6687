//! Bounds that keep a hostile template from crashing or exhausting the
//! webhook and the controller. Every limit is far above what a
//! real Blueprint needs (Kanister's corpus nests at most 3 deep and renders
//! strings of a few KiB); each error says which limit was hit and how to fix.

/// Parenthesized pipelines plus `if`/`range`/`with`/`define`/`block` bodies
/// nested inside each other (Go allows 10000; our parser and evaluator
/// recurse, and webhook threads have 2 MiB stacks).
pub const MAX_NESTING: usize = 100;

/// Evaluation depth: nested blocks, pipelines and `template` calls together
/// (bounds recursive `template` calls; Go allows 100000).
pub const MAX_EXEC_DEPTH: usize = 300;

/// Lists and dicts nested inside each other, as built by functions.
pub const MAX_VALUE_DEPTH: usize = 200;

/// Bytes in one string value (a function result or a printed value).
pub const MAX_STRING: usize = 16 << 20;

/// Elements of one list or dict built by a function (`until`, `splitList`, ...).
pub const MAX_LIST: usize = 1 << 20;

/// Bytes of output of one render.
pub const MAX_OUTPUT: usize = 16 << 20;

/// Evaluation steps of one render (nodes, commands, loop iterations).
pub const MAX_STEPS: usize = 10_000_000;

/// Bytes and elements produced by all function calls of one render together:
/// bounds the total allocation and time even when each value is small.
pub const MAX_WORK: usize = 256 << 20;

/// A human size for limit messages.
pub fn human(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        n.to_string()
    }
}
