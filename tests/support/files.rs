//! Files of this machine for the data tests: temporary directories, trees of test data, and
//! comparing a restored tree with its original.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A temporary directory `bpo-e2e-<tag>-<pid>-<nanos>`, removed on drop (also when a check
/// fails).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let p = std::env::temp_dir().join(format!("bpo-e2e-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Deterministic pseudo-random bytes (xorshift64*).
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Every regular file under `root` (relative path → bytes).
pub fn read_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let ft = e.file_type().expect("file type");
            if ft.is_dir() {
                walk(base, &p, out);
            } else if ft.is_file() {
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).expect("read file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Asserts that `restored` holds exactly the files of `original`, byte for byte.
pub fn assert_same_tree(original: &Path, restored: &Path) {
    let a = read_tree(original);
    let b = read_tree(restored);
    assert!(!a.is_empty(), "no files under {}", original.display());
    let names_a: Vec<&String> = a.keys().collect();
    let names_b: Vec<&String> = b.keys().collect();
    assert_eq!(
        names_a,
        names_b,
        "files of {} vs {}",
        original.display(),
        restored.display()
    );
    for (name, bytes) in &a {
        assert!(
            b[name] == *bytes,
            "{name} differs after restore ({} vs {} bytes)",
            bytes.len(),
            b[name].len()
        );
    }
}

/// Where a restore into `target` puts the files backed up from the absolute path `src` (restic
/// restores the full path below the target).
pub fn restored_root(target: &Path, src: &Path) -> PathBuf {
    target.join(src.strip_prefix("/").unwrap_or(src))
}
