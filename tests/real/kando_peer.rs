//! Our kando beside Kanister's own (0.119.0, tools/kanister/build.sh builds it from its source)
//! on the same S3 stores (gofakes3 and the strict moto of `support::data_plane::Store`), both as
//! processes of this machine: objects pushed by one are pulled byte for byte by the other at the
//! same keys and deleted by the other, and `kando output` prints the same bytes for values that
//! are easy to get wrong. No cluster is needed; it is in the real tier because Kanister's build
//! takes minutes on a cold cache and only the real tier builds it.

use std::io::{Read as _, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use blueprint_operator::aws::s3::transfer::PART_SIZE;
use serde_json::json;

use crate::support::data_plane::{STORES, Store, create_bucket_in};

const OURS: &str = env!("CARGO_BIN_EXE_blueprint-operator");

/// Kanister's kando binary (built on first use, cached by version).
fn kanister_kando() -> PathBuf {
    crate::support::server::built_tools("tools/kanister/build.sh", &["kando"])
        .unwrap_or_else(|e| panic!("Kanister's kando: {e}"))
        .remove(0)
}

#[derive(Clone, Copy, Debug)]
enum Kando {
    Ours,
    Kanisters,
}

impl Kando {
    fn command(self, args: &[&std::ffi::OsStr]) -> Command {
        let mut c = match self {
            Kando::Ours => {
                let mut c = Command::new(OURS);
                c.arg("kando");
                c
            }
            Kando::Kanisters => Command::new(kanister_kando()),
        };
        c.args(args);
        c
    }

    /// Runs `kando args` with `stdin` piped in; (exit code, stdout, stderr).
    fn run(self, args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        self.run_os(&args, stdin)
    }

    fn run_os(self, args: &[&std::ffi::OsStr], stdin: &[u8]) -> (i32, Vec<u8>, String) {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{self:?} kando: {e}"));
        let mut input = child.stdin.take().expect("stdin");
        let data = stdin.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = input.write_all(&data);
        });
        let mut out = Vec::new();
        child
            .stdout
            .take()
            .expect("stdout")
            .read_to_end(&mut out)
            .expect("stdout");
        let mut err = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err)
            .expect("stderr");
        writer.join().expect("writer");
        let code = child.wait().expect("wait").code().unwrap_or(-1);
        (code, out, err)
    }
}

/// Deterministic bytes (xorshift).
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A Profile as Kanister's `toJson .Profile` prints it (both kandos read it).
fn profile(kind: Store, bucket: &str, prefix: &str) -> String {
    let store = kind.get();
    create_bucket_in(kind, bucket).expect("bucket");
    json!({
        "Location": {"type": "s3Compliant", "bucket": bucket, "endpoint": store.endpoint,
                     "prefix": prefix, "region": store.region},
        "Credential": {"Type": "keyPair",
                       "KeyPair": {"ID": store.access_key, "Secret": store.secret_key},
                       "Secret": null, "KopiaServerSecret": null},
        "SkipSSLVerify": false,
    })
    .to_string()
}

fn keys(kind: Store, bucket: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut k = rt
        .block_on(kind.client().list_all(bucket, "", None))
        .expect("list");
    k.sort();
    k
}

/// On both stores, for empty, 1 KiB, exactly one of our parts and a part and a byte: what one kando
/// pushes the other pulls byte for byte, from the same key, and deletes (on the strict store;
/// see below for gofakes3).
#[test]
#[ignore = "real tier: tools/test.sh --real"]
fn objects_round_trip_between_our_kando_and_kanisters() {
    for kind in STORES {
        let bucket = "bpo-kando-peer";
        let p = profile(kind, bucket, "peer");
        for (i, len) in [0, 1024, PART_SIZE, PART_SIZE + 1].into_iter().enumerate() {
            for (from, to) in [
                (Kando::Ours, Kando::Kanisters),
                (Kando::Kanisters, Kando::Ours),
            ] {
                let path = format!("{from:?}/{len}");
                let data = bytes(i as u64 + 1, len);
                let (code, _, err) = from.run(
                    &["location", "push", "--profile", &p, "--path", &path, "-"],
                    &data,
                );
                assert_eq!(code, 0, "{kind:?}: {from:?} push of {len} bytes: {err}");
                let (code, out, err) = to.run(
                    &["location", "pull", "--profile", &p, "--path", &path, "-"],
                    b"",
                );
                assert_eq!(code, 0, "{kind:?}: {to:?} pull of {len} bytes: {err}");
                assert!(
                    out == data,
                    "{kind:?}: {to:?} pulled {} bytes of {from:?}'s {len}",
                    out.len()
                );
                assert_eq!(keys(kind, bucket), vec![format!("peer/{path}")], "{kind:?}");
                // Kanister's delete lists with its stow library, which skips listed objects
                // without a StorageClass; gofakes3 sends none (S3 and moto do), so there
                // Kanister's delete finds nothing and ours deletes.
                let deleter = match (kind, to) {
                    (Store::GoFakeS3, Kando::Kanisters) => Kando::Ours,
                    _ => to,
                };
                let (code, _, err) = deleter.run(
                    &["location", "delete", "--profile", &p, "--path", &path],
                    b"",
                );
                assert_eq!(code, 0, "{kind:?}: {deleter:?} delete: {err}");
                assert!(
                    keys(kind, bucket).is_empty(),
                    "{kind:?}: {deleter:?} delete left objects"
                );
            }
        }
    }
}

/// `kando output KEY VALUE` prints the same bytes from both for values that are easy to get
/// wrong (Go's JSON escaping); a bad key fails on both.
#[test]
#[ignore = "real tier: tools/test.sh --real"]
fn kando_output_is_byte_identical_to_kanisters() {
    let long = "0123456789abcdef".repeat(6000);
    let values: Vec<&[u8]> = vec![
        b"first line\nsecond line\r\n",
        br#"say "hi" and 'bye' \ back"#,
        "ünïcödé ☺ 日本 \u{2028}\u{2029} 🦀".as_bytes(),
        b"",
        long.as_bytes(),
        b"a=b==c=",
        br#"{"k":[1,2,{"n":null}],"html":"<a href='x'>&amp;</a>"}"#,
        b"tab\tbell\x07esc\x1b del\x7f",
        b"not utf-8: \xff\xfe \xc3 end",
        b"  leading and trailing spaces  ",
    ];
    for value in values {
        let args = [
            std::ffi::OsStr::new("output"),
            std::ffi::OsStr::new("backup_Location1"),
            std::ffi::OsStr::from_bytes(value),
        ];
        let ours = Kando::Ours.run_os(&args, b"");
        let theirs = Kando::Kanisters.run_os(&args, b"");
        assert_eq!(ours.0, 0, "ours: {}", ours.2);
        assert_eq!(theirs.0, 0, "Kanister's: {}", theirs.2);
        assert!(
            ours.1 == theirs.1,
            "value {:?}: ours {:?}, Kanister's {:?}",
            String::from_utf8_lossy(value),
            String::from_utf8_lossy(&ours.1),
            String::from_utf8_lossy(&theirs.1)
        );
    }
    let ours = Kando::Ours.run(&["output", "bad-key", "v"], b"");
    let theirs = Kando::Kanisters.run(&["output", "bad-key", "v"], b"");
    assert_ne!(ours.0, 0, "{ours:?}");
    assert_ne!(theirs.0, 0, "{theirs:?}");
}
