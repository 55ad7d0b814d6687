//! `kando`: the helper Kanister Blueprints run inside their images
//! (`kando location push|pull|delete --profile '{{ toJson .Profile }}' --path
//! <p> [-|file]`, `kando output <key> <value>`), in this binary: run as
//! `blueprint-operator kando ...`, or as `kando ...` through a link named
//! `kando` (the tools image has /usr/local/bin/kando -> blueprint-operator).
//!
//! - [`cli`]: Kanister's commands and flags;
//! - [`profile`]: the `--profile` JSON (Kanister's or this executor's
//!   `toJson .Profile`);
//! - [`location`]: push/pull/delete, and the object key rule
//!   ([`location::object_key`], Kanister's `pkg/location`);
//! - [`output`]: the `###Phase-output###:` line.

pub mod cli;
pub mod location;
pub mod output;
pub mod profile;

pub use cli::main;

/// True when the program was started under the name `kando` (argv[0]'s
/// file name), as through the tools image's symlink.
pub fn invoked_as_kando(argv0: &std::ffi::OsStr) -> bool {
    std::path::Path::new(argv0).file_name() == Some(std::ffi::OsStr::new("kando"))
}
