//! `kando location push|pull|delete` on azure Profiles, against Azurite (tools/azurite, started
//! by `support::azurite`), which checks every request's Shared Key signature. No Kubernetes
//! needed. Blobs are checked with the executor's own Blob client at the names written out
//! literally: Kanister's rule, `<location.prefix>/<--path>` in the Profile's container.

use crate::kando::{
    MIB, fails, gen_digest, kando, kando_link, pull_measured, push_measured, rt, run,
};
use crate::support::azurite::{self, KEY, WRONG_KEY};
use blueprint_operator::azure::transfer::BLOCK_SIZE;
use serde_json::{Value, json};

fn profile(container: &str, prefix: &str) -> String {
    rt().block_on(azurite::create_container(container))
        .expect("create container");
    azurite::profile(container, prefix, KEY).to_string()
}

/// The same Profile as Kanister's `toJson .Profile` prints it (the CRD's JSON tags).
fn kanister_spelling(p: &str) -> String {
    let p: Value = serde_json::from_str(p).expect("profile json");
    let l = &p["Location"];
    json!({
        "Location": {"type": "azure", "bucket": l["Bucket"], "endpoint": l["Endpoint"],
                     "prefix": l["Prefix"], "region": ""},
        "Credential": {"Type": "keyPair", "KeyPair": p["Credential"]["KeyPair"],
                       "Secret": null, "KopiaServerSecret": null},
        "SkipSSLVerify": true,
    })
    .to_string()
}

fn list(container: &str, prefix: &str) -> Vec<String> {
    rt().block_on(azurite::list(container, prefix))
}

/// Empty, 1 KiB, exactly one block (one Put Block and the list), a block and a byte, and a
/// multi-MiB stream of four blocks, from stdin, pushed (in either spelling of the Profile),
/// pulled back byte for byte and deleted; an empty file pushed and pulled into a file that had
/// content. The 3-block-plus stream's push stays within three blocks of a 1 KiB push's memory.
#[test]
fn every_size_class_round_trips_at_kanisters_keys() {
    let container = "bpo-kando-sizes";
    let p = profile(container, "team-a");
    let sizes = [0, 1024, BLOCK_SIZE, BLOCK_SIZE + 1, 3 * BLOCK_SIZE + 12345];
    let base = push_measured(&p, "stdin/base", 1, 1024);
    for (i, &len) in sizes.iter().enumerate() {
        let seed = 70 + i as u64;
        let spelled = if i % 2 == 0 {
            p.clone()
        } else {
            kanister_spelling(&p)
        };
        let rss = push_measured(&spelled, &format!("/stdin/{len}"), seed, len);
        assert!(
            rss - base < 3 * (BLOCK_SIZE / 1024) as i64,
            "push of {} MiB peaked at {rss} KiB, 1 KiB at {base} KiB",
            len / MIB
        );
        let (n, digest, _) = pull_measured(&p, &format!("stdin/{len}"));
        assert_eq!(n, len);
        assert!(digest == gen_digest(seed, len), "{len} bytes differ");
    }
    let mut expected: Vec<String> = sizes.iter().map(|n| format!("team-a/stdin/{n}")).collect();
    expected.push("team-a/stdin/base".into());
    expected.sort();
    assert_eq!(list(container, "team-a/stdin/"), expected);

    // `kando location <args>`, which must succeed.
    let location = |args: &[&str]| {
        let (code, _, err) = run(kando(&[&["location"], args].concat()));
        assert_eq!(code, 0, "{err}");
    };
    let dir = kando_link().0;
    let empty = dir.join("empty.sql");
    std::fs::write(&empty, b"").expect("empty file");
    let file = empty.to_str().expect("utf-8 path");
    location(&["push", "--profile", &p, file, "--path", "file/empty.sql"]);
    let target = dir.join("restored.sql");
    std::fs::write(&target, b"an older, longer dump").expect("old target");
    let t = target.to_str().expect("utf-8 path");
    location(&["pull", "--profile", &p, "--path", "file/empty.sql", t]);
    assert_eq!(std::fs::read(&target).expect("restored"), b"");

    // A sibling that only shares the text survives the delete of `stdin`.
    push_measured(&p, "stdin-old/x", 9, 10);
    location(&["delete", "--profile", &p, "--path", "stdin"]);
    assert_eq!(list(container, "team-a/stdin"), ["team-a/stdin-old/x"]);
    let e = fails(kando(&[
        "location",
        "pull",
        "--profile",
        &p,
        "--path",
        "stdin/1024",
        "-",
    ]));
    assert!(e.contains("404 BlobNotFound"), "{e}");
    assert!(
        e.contains("failed to read key \"team-a/stdin/1024\" from bucket 'bpo-kando-sizes'"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A wrong account key, a container that does not exist, a container name the service refuses
/// as malformed, a key that is not base64 and a closed port: each push fails with the
/// service's (or the network's) words and what to check, and no blob appears.
#[test]
fn failures_are_named_and_write_nothing() {
    let container = "bpo-kando-failures";
    let good = profile(container, "f");
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v: Value = serde_json::from_str(&good).expect("json");
        f(&mut v);
        v.to_string()
    };
    let push = |profile: &str| {
        let mut c = kando(&["location", "push", "--profile", profile, "--path", "x", "-"]);
        c.stdin(std::process::Stdio::null());
        fails(c)
    };

    // A push with `profile` fails saying each of `wanted`; the message.
    let push_fails = |profile: &str, wanted: &[&str]| {
        let e = push(profile);
        for w in wanted {
            assert!(e.contains(w), "{e}");
        }
        e
    };

    let wrong = with(&|v| v["Credential"]["KeyPair"]["Secret"] = json!(WRONG_KEY));
    let e = push_fails(
        &wrong,
        &[
            "PutBlob on https://",
            "the storage account key does not sign for account",
        ],
    );
    assert!(
        e.contains("403 AuthorizationFailure") || e.contains("403 AuthenticationFailed"),
        "{e}"
    );

    let missing = with(&|v| v["Location"]["Bucket"] = json!("bpo-no-such-container"));
    push_fails(
        &missing,
        &[
            "404 ContainerNotFound",
            "container \"bpo-no-such-container\" does not exist",
        ],
    );

    let malformed = with(&|v| v["Location"]["Bucket"] = json!("Bad_Name"));
    push_fails(
        &malformed,
        &[": 400 ", "lower-case letters, digits and dashes"],
    );

    let not_base64 = with(&|v| v["Credential"]["KeyPair"]["Secret"] = json!("not a key!"));
    push_fails(&not_base64, &["the storage account key is not base64"]);

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let closed =
        with(&|v| v["Location"]["Endpoint"] = json!(format!("https://127.0.0.1:{port}/acct")));
    push_fails(&closed, &["cannot connect to https://127.0.0.1:"]);

    assert!(list(container, "").is_empty(), "a failed push left a blob");
}
