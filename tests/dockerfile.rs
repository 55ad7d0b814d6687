//! The Dockerfile, checked without a container engine (none runs here): it is multi-stage, the
//! build stage builds our binary where the final stage copies it from, the final stage is
//! distroless (cc: glibc and libgcc_s, what the binary links) and non-root, and its ENTRYPOINT
//! is what the manifests' Deployments run: their args are valid for the real binary, and their
//! securityContext matches the image's user. The build context is simulated: only what the
//! Dockerfile COPYs, and Cargo must accept it (`cargo fetch --locked` parses the manifest as
//! `cargo build` does, checks the lock file and downloads every locked package, as the image
//! build would; `cargo metadata` lists the targets, whose files must be there).
//!
//! What this cannot show (it needs `docker build`): that the build stage compiles and the image
//! starts. docs/testing.md ("The container image") lists the manual check that stands in for it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize as _;
use serde_json::Value;

#[path = "support/manifests.rs"]
mod manifests;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug, Default)]
struct Stage {
    image: String,
    name: Option<String>,
    /// (INSTRUCTION, arguments), continuation lines joined.
    instructions: Vec<(String, String)>,
}

impl Stage {
    fn all(&self, instr: &str) -> impl Iterator<Item = &str> {
        self.instructions
            .iter()
            .filter(move |(i, _)| i == instr)
            .map(|(_, a)| a.as_str())
    }
    fn last(&self, instr: &str) -> Option<&str> {
        self.all(instr).last()
    }
}

fn parse(text: &str) -> Vec<Stage> {
    let mut stages: Vec<Stage> = Vec::new();
    let mut logical = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && logical.is_empty()) {
            continue;
        }
        if let Some(cont) = t.strip_suffix('\\') {
            logical.push_str(cont);
            logical.push(' ');
            continue;
        }
        logical.push_str(t);
        let l = std::mem::take(&mut logical);
        let (instr, args) = l.split_once(char::is_whitespace).unwrap_or((&l, ""));
        let instr = instr.to_ascii_uppercase();
        let args = args.trim().to_string();
        if instr == "FROM" {
            let words: Vec<&str> = args.split_whitespace().collect();
            assert!(
                !words[0].starts_with("--"),
                "FROM flags are not expected: {args}"
            );
            let name = match words.as_slice() {
                [_, as_, name] if as_.eq_ignore_ascii_case("as") => Some(name.to_string()),
                [_] => None,
                _ => panic!("FROM {args}: not understood"),
            };
            stages.push(Stage {
                image: words[0].to_string(),
                name,
                instructions: Vec::new(),
            });
        } else {
            stages
                .last_mut()
                .expect("an instruction before FROM")
                .instructions
                .push((instr, args));
        }
    }
    stages
}

/// `COPY [--from=x] src... dst` -> (from, sources, destination).
fn copy_args(args: &str) -> (Option<String>, Vec<String>, String) {
    let mut from = None;
    let mut words: Vec<String> = Vec::new();
    for w in args.split_whitespace() {
        if let Some(f) = w.strip_prefix("--from=") {
            from = Some(f.to_string());
        } else {
            assert!(!w.starts_with("--"), "COPY flag {w} not expected");
            words.push(w.to_string());
        }
    }
    let dst = words.pop().expect("COPY destination");
    (from, words, dst)
}

fn cargo_toml() -> toml::Table {
    std::fs::read_to_string(root().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap()
}

/// `[package]` `key` of Cargo.toml, a string.
fn package(cargo: &toml::Table, key: &str) -> String {
    cargo["package"][key].as_str().unwrap().to_string()
}

fn version(v: &str) -> (u32, u32) {
    let mut it = v.split('.').map(|p| p.parse::<u32>().unwrap());
    (it.next().unwrap(), it.next().unwrap_or(0))
}

struct Image {
    uid: u32,
    gid: u32,
    /// USER as written (`uid:gid`).
    user: String,
    entrypoint: Vec<String>,
    /// Where the final stage copies the binary.
    binary: String,
}

/// Every check of the Dockerfile itself; returns what the manifests must match.
fn check_dockerfile() -> Image {
    let text = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    let stages = parse(&text);
    assert!(stages.len() >= 2, "multi-stage: {stages:?}");
    let fin = stages.last().unwrap();

    // Final stage: distroless cc (the binary links glibc and libgcc_s), the nonroot variant, no
    // shell so no RUN, a numeric non-root user (kubelet can only check runAsNonRoot on numbers).
    assert!(
        fin.image
            .starts_with("gcr.io/distroless/cc-debian12:nonroot"),
        "final stage is {}",
        fin.image
    );
    assert_eq!(fin.all("RUN").count(), 0, "distroless has no shell");
    let user = fin.last("USER").expect("USER in the final stage");
    let (uid, gid) = user.split_once(':').unwrap_or((user, user));
    let (uid, gid): (u32, u32) = (uid.parse().unwrap(), gid.parse().unwrap());
    assert_ne!(uid, 0, "non-root");
    assert_ne!(gid, 0, "non-root group");
    assert_eq!(uid, 65532, "distroless' nonroot user");
    let entrypoint: Vec<String> = serde_json::from_str(fin.last("ENTRYPOINT").unwrap())
        .expect("ENTRYPOINT in exec (JSON) form");

    // The final stage copies the binary from the build stage, to the ENTRYPOINT.
    let cargo = cargo_toml();
    let bin = cargo["bin"][0]["name"].as_str().expect("[[bin]] name");
    let copies: Vec<_> = fin.all("COPY").map(copy_args).collect();
    let (from, srcs, dst) = copies
        .iter()
        .find(|(from, _, _)| from.is_some())
        .expect("COPY --from=<build stage>");
    assert_eq!(
        entrypoint,
        vec![dst.clone()],
        "ENTRYPOINT runs the copied binary"
    );
    let build = stages
        .iter()
        .find(|s| s.name.as_ref() == from.as_ref())
        .unwrap_or_else(|| panic!("no stage named {from:?}"));
    assert!(!std::ptr::eq(build, fin));

    // The build stage: a Rust image new enough for rust-version, cargo build of that binary.
    let tag = build
        .image
        .strip_prefix("rust:")
        .unwrap_or_else(|| panic!("build stage is {}", build.image));
    let image_rust = version(tag.split('-').next().unwrap());
    let msrv = version(&package(&cargo, "rust-version"));
    assert!(image_rust >= msrv, "rust:{tag} is older than rust-version");
    let run = build
        .all("RUN")
        .find(|r| r.contains("cargo build"))
        .expect("RUN cargo build");
    for flag in ["--release", "--locked", &format!("--bin {bin}")] {
        assert!(run.contains(flag), "{run}: no {flag}");
    }
    let workdir = build.last("WORKDIR").expect("WORKDIR in the build stage");
    assert_eq!(
        srcs,
        &vec![format!("{workdir}/target/release/{bin}")],
        "the final stage copies what cargo build produced"
    );

    check_build_context(build, workdir);
    Image {
        uid,
        gid,
        user: user.to_string(),
        entrypoint,
        binary: dst.clone(),
    }
}

/// A directory removed when dropped.
struct TempDir(PathBuf);
impl TempDir {
    fn new(what: &str) -> TempDir {
        // Tests run in parallel threads of one process: a counter keeps their directories apart.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("bpo-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies what the build stage COPYs into a temporary directory and lets Cargo read it.
fn check_build_context(build: &Stage, workdir: &str) {
    let dir = TempDir::new("docker-context");
    let ctx = &dir.0;
    for args in build.all("COPY") {
        let (from, srcs, dst) = copy_args(args);
        assert!(from.is_none(), "build stage copies from the context only");
        let dst = dst
            .strip_prefix(workdir)
            .unwrap_or(&dst)
            .trim_matches('/')
            .trim_start_matches("./");
        for src in srcs {
            let from = root().join(&src);
            assert!(from.exists(), "COPY {src}: not in the repository");
            // `COPY a b ./` puts files into ./; `COPY dir dir` copies the directory's content.
            let to: PathBuf = if dst.is_empty() || dst == "." {
                ctx.join(&src)
            } else {
                ctx.join(dst)
            };
            let status = Command::new("cp")
                .arg("-r")
                .arg(&from)
                .arg(&to)
                .status()
                .unwrap();
            assert!(status.success(), "cp {src}");
        }
    }
    // `cargo fetch` parses the manifest as `cargo build` does (every declared target's file
    // must exist) and, with --locked, fails when Cargo.lock does not match it. Not --offline:
    // it fetches packages of every platform, which a fresh machine's `cargo build` never
    // downloaded; the registry is reachable, as it is for the image build.
    let out = Command::new(env!("CARGO"))
        .args(["fetch", "--locked", "--manifest-path"])
        .arg(ctx.join("Cargo.toml"))
        .output()
        .unwrap();
    assert_succeeded(&out, "cargo does not accept the image's build context");
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--locked",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(ctx.join("Cargo.toml"))
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert_succeeded(&out, "cargo does not accept the image's build context");
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pkg = manifests::find(&meta["packages"], "name", "blueprint-operator").unwrap();
    for t in pkg["targets"].as_array().unwrap() {
        let kinds = t["kind"].as_array().unwrap();
        // Test targets are found by listing tests/; lib, bins, benches and build scripts must exist.
        if kinds.iter().any(|k| k == "test") {
            continue;
        }
        let path = PathBuf::from(t["src_path"].as_str().unwrap());
        assert!(
            path.starts_with(ctx) && path.exists(),
            "target {} ({kinds:?}) not in the build context: {}",
            t["name"],
            path.display()
        );
    }
}

fn deployment(file: &str) -> Value {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let docs: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .collect();
    docs.into_iter()
        .find(|d| d["kind"] == "Deployment")
        .unwrap_or_else(|| panic!("no Deployment in {file}"))
}

const DEPLOYMENTS: &[&str] = &[
    "manifests/controller/deployment.yaml",
    "manifests/webhook/deployment.yaml",
];

/// `args --help` through the real binary: exit 0 only if every flag before `--help` exists and
/// its value parses.
/// Asserts that the command of `out` succeeded; the failure says `what`, with its stderr.
fn assert_succeeded(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn args_parse(args: &[String]) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn the_arg_check_catches_bad_args() {
    assert!(args_parse(&["controller".into(), "--no-such-flag".into()]).is_err());
    assert!(args_parse(&["webhook".into(), "--listen=nowhere".into()]).is_err());
    assert!(args_parse(&["no-such-subcommand".into()]).is_err());
    let help = args_parse(&["controller".into()]).unwrap();
    assert!(
        help.contains("Usage: blueprint-operator controller"),
        "{help}"
    );
}

#[test]
fn image_is_multi_stage_distroless_non_root_and_runs_what_the_deployments_say() {
    let image = check_dockerfile();
    for file in DEPLOYMENTS {
        let dep = deployment(file);
        let pod = &dep["spec"]["template"]["spec"];
        let containers = pod["containers"].as_array().unwrap();
        assert_eq!(containers.len(), 1, "{file}");
        let c = &containers[0];
        let ctx = &c["securityContext"];
        let psc = &pod["securityContext"];

        // The image's ENTRYPOINT runs (no command override), with args the binary accepts.
        assert!(
            c["image"]
                .as_str()
                .unwrap()
                .starts_with("blueprint-operator:"),
            "{file}"
        );
        match c.get("command") {
            None => {}
            Some(cmd) => assert_eq!(cmd, &serde_json::json!(image.entrypoint), "{file}"),
        }
        let args = manifests::strings(&c["args"]);
        let help = args_parse(&args).unwrap_or_else(|e| panic!("{file}: args {args:?}: {e}"));
        assert!(
            help.contains(&format!("Usage: blueprint-operator {}", args[0])),
            "{file}: {help}"
        );

        // Non-root as the image's user, read-only root, no privilege escalation, no capabilities.
        assert_eq!(psc["runAsNonRoot"], true, "{file}");
        assert_eq!(psc["runAsUser"], image.uid, "{file}");
        assert_eq!(psc["runAsGroup"], image.gid, "{file}");
        assert_eq!(psc["seccompProfile"]["type"], "RuntimeDefault", "{file}");
        assert_eq!(ctx["readOnlyRootFilesystem"], true, "{file}");
        assert_eq!(ctx["allowPrivilegeEscalation"], false, "{file}");
        assert_eq!(
            ctx["capabilities"]["drop"],
            serde_json::json!(["ALL"]),
            "{file}"
        );
        assert!(ctx["capabilities"].get("add").is_none(), "{file}");
        assert_ne!(ctx["privileged"], true, "{file}");
        for (k, v) in [("runAsUser", image.uid), ("runAsGroup", image.gid)] {
            assert!(
                ctx.get(k).is_none() || ctx[k] == v,
                "{file}: container {k} differs"
            );
        }
    }
}

#[test]
fn deployments_run_the_image_tagged_with_the_crate_version() {
    // tools/images/build.sh tags the image with this version: a version bump must move the
    // manifests along, or the nodes would run (or fail to find) another image.
    let version = package(&cargo_toml(), "version");
    for file in DEPLOYMENTS {
        let c = &deployment(file)["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            c["image"],
            format!("blueprint-operator:{version}"),
            "{file}: the image tag must be Cargo.toml's version"
        );
        assert_eq!(c["imagePullPolicy"], "IfNotPresent", "{file}");
    }
}

/// Where distroless cc-debian12 has the libraries a binary can link: Debian 12's libc6,
/// libgcc-s1, libstdc++6, libgomp1 and libssl3 unpacked where the packages put them, the loader
/// reached through libc6's /lib64 link.
const DISTROLESS_CC_LIBS: &[&str] = &[
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/libm.so.6",
    "/lib/x86_64-linux-gnu/libdl.so.2",
    "/lib/x86_64-linux-gnu/libpthread.so.0",
    "/lib/x86_64-linux-gnu/librt.so.1",
    "/lib/x86_64-linux-gnu/libresolv.so.2",
    "/lib/x86_64-linux-gnu/libgcc_s.so.1",
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
    "/usr/lib/x86_64-linux-gnu/libgomp.so.1",
    "/usr/lib/x86_64-linux-gnu/libssl.so.3",
    "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
];
const DISTROLESS_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The ELF interpreter and the DT_NEEDED libraries of an ELF file.
fn elf_deps(data: &[u8]) -> (Option<String>, Vec<String>) {
    let elf = goblin::elf::Elf::parse(data).expect("an ELF file");
    let needed = elf.libraries.iter().map(|l| l.to_string()).collect();
    (elf.interpreter.map(str::to_string), needed)
}

/// Where distroless cc-debian12 has the loader and each library a binary needs, the loader
/// first; or what it does not have.
fn distroless_paths(interp: Option<&str>, needed: &[String]) -> Result<Vec<String>, String> {
    let interp = interp.ok_or("not dynamically linked (cc: glibc)")?;
    if !DISTROLESS_CC_LIBS.contains(&interp) {
        return Err(format!("interpreter {interp}"));
    }
    if !needed.iter().any(|l| l == "libc.so.6") {
        return Err(format!("no libc.so.6 in {needed:?}"));
    }
    let mut wanted = vec![interp.to_string()];
    for lib in needed {
        let at = DISTROLESS_CC_LIBS
            .iter()
            .find(|p| p.rsplit('/').next() == Some(lib.as_str()))
            .ok_or_else(|| format!("the binary needs {lib}, which distroless cc-debian12 lacks"))?;
        wanted.push(at.to_string());
    }
    Ok(wanted)
}

/// The binary this test run built links only what distroless cc-debian12 has (the image's
/// release build links the same libraries; the real tier checks the image itself).
#[test]
fn the_binary_links_only_libraries_distroless_cc_has() {
    let bin = std::fs::read(env!("CARGO_BIN_EXE_blueprint-operator")).unwrap();
    let (interp, needed) = elf_deps(&bin);
    assert_eq!(interp.as_deref(), Some("/lib64/ld-linux-x86-64.so.2"));
    assert!(needed.iter().any(|l| l == "libgcc_s.so.1"), "{needed:?}");
    let wanted = distroless_paths(interp.as_deref(), &needed).unwrap();
    assert!(wanted.contains(&"/lib/x86_64-linux-gnu/libc.so.6".to_string()));
    // What distroless lacks is named.
    let mut more = needed.clone();
    more.push("libz.so.1".into());
    let err = distroless_paths(interp.as_deref(), &more).unwrap_err();
    assert!(err.contains("libz.so.1"), "{err}");
}

/// An OCI image archive of tools/images/build.sh, unpacked.
struct Unpacked {
    _dir: TempDir,
    rootfs: PathBuf,
    name: String,
    config: Value,
}

impl Unpacked {
    /// Runs `tools/images/build.sh --print NAME`: the archive of these sources, or a failure
    /// that says how to build it.
    fn built(image: &str) -> Unpacked {
        let out = Command::new(root().join("tools/images/build.sh"))
            .args(["--print", image])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let archive = stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{image}=")))
            .unwrap_or_else(|| panic!("tools/images/build.sh --print: no {image}= line: {stdout}"));
        assert!(
            out.status.success(),
            "{archive} is not built for these sources: run tools/images/build.sh {image}"
        );
        let dir = TempDir::new(&format!("image-{image}"));
        let (oci, rootfs) = (dir.0.join("oci"), dir.0.join("rootfs"));
        let untar = |archive: &Path, into: &Path| {
            std::fs::create_dir_all(into).unwrap();
            let st = Command::new("tar")
                .args(["--no-same-owner", "-xf"])
                .arg(archive)
                .arg("-C")
                .arg(into)
                .status()
                .unwrap();
            assert!(st.success(), "tar -xf {}", archive.display());
        };
        untar(Path::new(archive), &oci);
        let json = |p: PathBuf| -> Value {
            serde_json::from_slice(&std::fs::read(&p).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        };
        let blob = |digest: &Value| {
            let d = digest.as_str().unwrap().strip_prefix("sha256:").unwrap();
            oci.join("blobs/sha256").join(d)
        };
        let index = json(oci.join("index.json"));
        let entries = index["manifests"].as_array().unwrap();
        assert_eq!(entries.len(), 1, "one image per archive: {index}");
        let name = entries[0]["annotations"]["io.containerd.image.name"]
            .as_str()
            .expect("io.containerd.image.name: ctr names the image after it")
            .to_string();
        let manifest = json(blob(&entries[0]["digest"]));
        let config = json(blob(&manifest["config"]["digest"]));
        let layers = manifest["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 1, "{manifest}");
        untar(&blob(&layers[0]["digest"]), &rootfs);
        Unpacked {
            _dir: dir,
            rootfs,
            name,
            config,
        }
    }

    /// PATH inside the image with symlinks resolved inside the image (as the container sees
    /// them), or None when it does not exist there.
    fn resolve(&self, path: &str) -> Option<String> {
        let mut cur = String::new();
        let mut parts: Vec<String> = path
            .split('/')
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect();
        parts.reverse();
        let mut links = 0;
        while let Some(part) = parts.pop() {
            let next = format!("{cur}/{part}");
            let host = self.rootfs.join(next.trim_start_matches('/'));
            let meta = std::fs::symlink_metadata(&host).ok()?;
            if meta.file_type().is_symlink() {
                links += 1;
                assert!(links < 40, "{path}: symlink loop");
                let target = std::fs::read_link(&host).unwrap();
                let target = target.to_str().unwrap();
                if target.starts_with('/') {
                    cur.clear();
                }
                parts.extend(
                    target
                        .split('/')
                        .filter(|p| !p.is_empty())
                        .rev()
                        .map(String::from),
                );
            } else if part == ".." {
                cur.truncate(cur.rfind('/').unwrap_or(0));
            } else if part != "." {
                cur = next;
            }
        }
        Some(if cur.is_empty() { "/".into() } else { cur })
    }

    fn host_path(&self, path: &str) -> PathBuf {
        let real = self
            .resolve(path)
            .unwrap_or_else(|| panic!("{path} is not in the image {}", self.name));
        self.rootfs.join(real.trim_start_matches('/'))
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.host_path(path)).unwrap()
    }
}

/// The Dockerfile's image, assembled by tools/images/build.sh without a container engine: the
/// final stage's base (distroless cc-debian12:nonroot) and COPY, compared file by file where they
/// matter. Run by the real tier, which builds the archive first.
#[test]
#[ignore = "real tier: built by tools/images/build.sh (tools/test.sh --real)"]
fn the_assembled_image_has_the_dockerfiles_files_in_the_same_places() {
    let image = check_dockerfile();
    let version = package(&cargo_toml(), "version");
    let img = Unpacked::built("blueprint-operator");
    // `image: blueprint-operator:V` in a pod is docker.io/library/blueprint-operator:V to the kubelet.
    assert_eq!(
        img.name,
        format!("docker.io/library/blueprint-operator:{version}")
    );
    let cfg = &img.config["config"];
    assert_eq!(cfg["Entrypoint"], serde_json::json!(image.entrypoint));
    assert_eq!(cfg["User"], image.user.as_str());
    // distroless :nonroot's working directory and environment.
    assert_eq!(cfg["WorkingDir"], "/home/nonroot");
    let env: Vec<&str> = cfg["Env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        env.contains(&"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"),
        "{env:?}"
    );
    assert!(env.iter().any(|e| e.starts_with("PATH=")), "{env:?}");
    assert!(img.host_path("/home/nonroot").is_dir());

    // The binary where the Dockerfile copies it.
    use std::os::unix::fs::PermissionsExt as _;
    let bin = img.host_path(&image.binary);
    let meta = std::fs::metadata(&bin).unwrap();
    assert!(
        meta.is_file() && meta.permissions().mode() & 0o111 != 0,
        "{}",
        image.binary
    );

    // Every library the binary needs, where distroless cc-debian12 has it.
    let (interp, needed) = elf_deps(&std::fs::read(&bin).unwrap());
    let wanted = distroless_paths(interp.as_deref(), &needed).unwrap_or_else(|e| panic!("{e}"));
    for path in &wanted {
        assert!(img.host_path(path).is_file(), "{path} in the image");
    }
    let interp = &wanted[0];
    // And they are enough: the image's loader runs the binary with the image's libraries only
    // (a glibc older than the binary needs would fail here).
    let lib_path = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"]
        .map(|d| img.host_path(d).display().to_string())
        .join(":");
    let out = Command::new(img.host_path(interp))
        .args(["--inhibit-cache", "--library-path", &lib_path])
        .arg(&bin)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the image's binary with the image's libraries: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // CA certificates where distroless has them; distroless' users; no shell.
    let bundle = img.read(DISTROLESS_CA_BUNDLE);
    assert!(
        bundle.matches("-----BEGIN CERTIFICATE-----").count() > 100,
        "CA bundle"
    );
    let passwd = img.read("/etc/passwd");
    let nonroot = format!(
        "nonroot:x:{}:{}:nonroot:/home/nonroot:/sbin/nologin",
        image.uid, image.gid
    );
    assert!(passwd.lines().any(|l| l == nonroot), "{passwd}");
    assert!(
        passwd.lines().any(|l| l.starts_with("root:x:0:0:")),
        "{passwd}"
    );
    let group = img.read("/etc/group");
    assert!(
        group
            .lines()
            .any(|l| l == format!("nonroot:x:{}:", image.gid)),
        "{group}"
    );
    for shell in [
        "/bin/sh",
        "/bin/bash",
        "/bin/dash",
        "/usr/bin/sh",
        "/usr/bin/bash",
        "/bin/busybox",
    ] {
        assert!(
            img.resolve(shell).is_none(),
            "{shell}: distroless has no shell"
        );
    }
}
