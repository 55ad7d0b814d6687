#!/usr/bin/env python3
"""Helpers of tools/images/build.sh (standard library only).

  oci.py pack ROOTFS OUT.tar --name REF [--entrypoint JSON] [--cmd JSON] [--user U]
             [--workdir DIR] [--env K=V]... [--chown PATH=UID:GID]...
      Writes ROOTFS as a single-layer OCI image layout archive (oci-layout, index.json,
      blobs/sha256/...) that `ctr images import` loads. REF is the full reference
      (docker.io/library/name:tag): containerd names the image after the index's
      io.containerd.image.name annotation, and the kubelet asks for normalized references.
      The layer is reproducible: sorted entries, mtime 0 (SOURCE_DATE_EPOCH if set), numeric
      owners as on disk (the builder's own uid/gid become root when not run as root), then
      the --chown overrides.

  oci.py check-elf ROOTFS PATH...
      Fails unless the ELF interpreter and every DT_NEEDED library of each PATH (inside ROOTFS)
      resolves inside ROOTFS in the loader's default directories, symlinks followed in ROOTFS.
"""
import argparse
import hashlib
import io
import json
import os
import stat
import struct
import sys
import tarfile
import tempfile

LIB_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"]
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def die(msg):
    print(f"oci.py: {msg}", file=sys.stderr)
    sys.exit(1)


class HashingWriter:
    """File object that hashes and counts what is written through it."""

    def __init__(self, f):
        self.f, self.h, self.n = f, hashlib.sha256(), 0

    def write(self, b):
        self.h.update(b)
        self.n += len(b)
        return self.f.write(b)

    def tell(self):
        return self.n


def write_layer(root, out, mtime, owners):
    """Writes ROOTFS as an uncompressed tar into the open file OUT; returns (sha256, size)."""
    w = HashingWriter(out)
    me = (os.geteuid(), os.getegid())
    with tarfile.open(fileobj=w, mode="w", format=tarfile.PAX_FORMAT) as t:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(dirnames + filenames):
                full = os.path.join(dirpath, name)
                arc = os.path.relpath(full, root)
                st = os.lstat(full)
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                    die(f"{full}: only files, directories and symlinks go into an image")
                ti = t.gettarinfo(full, arcname=arc)
                if me[0] != 0:
                    ti.uid = 0 if ti.uid == me[0] else ti.uid
                    ti.gid = 0 if ti.gid == me[1] else ti.gid
                ti.uid, ti.gid = owners.get("/" + arc, (ti.uid, ti.gid))
                ti.uname = ti.gname = ""
                ti.mtime = mtime
                if ti.isreg():
                    with open(full, "rb") as f:
                        t.addfile(ti, f)
                else:
                    t.addfile(ti)
    return "sha256:" + w.h.hexdigest(), w.n


def pack(a):
    if not os.path.isdir(a.rootfs):
        die(f"{a.rootfs}: not a directory")
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    owners = {}
    for spec in a.chown:
        path, _, ids = spec.partition("=")
        uid, _, gid = ids.partition(":")
        if not path.startswith("/") or not uid.isdigit() or not gid.isdigit():
            die(f"--chown {spec}: expected /path=UID:GID")
        owners[path.rstrip("/")] = (int(uid), int(gid))
    if "/" not in a.name or ":" not in a.name.rsplit("/", 1)[1]:
        die(f"--name {a.name}: expected a full reference with a tag, e.g. docker.io/library/app:1.0")

    out_dir = os.path.dirname(os.path.abspath(a.out))
    with tempfile.TemporaryFile(dir=out_dir) as layer:
        layer_digest, layer_size = write_layer(a.rootfs, layer, mtime, owners)
        config = {
            "created": "1970-01-01T00:00:00Z",
            "architecture": "amd64",
            "os": "linux",
            "config": {"Env": a.env, "WorkingDir": a.workdir},
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "tools/images/build.sh"}],
        }
        for key, value in [("Entrypoint", a.entrypoint), ("Cmd", a.cmd)]:
            if value is not None:
                config["config"][key] = json.loads(value)
        if a.user:
            config["config"]["User"] = a.user
        config_blob = json.dumps(config, sort_keys=True).encode()
        config_digest = "sha256:" + hashlib.sha256(config_blob).hexdigest()
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config_blob),
            },
            "layers": [
                {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": layer_size}
            ],
        }
        manifest_blob = json.dumps(manifest, sort_keys=True).encode()
        manifest_digest = "sha256:" + hashlib.sha256(manifest_blob).hexdigest()
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": manifest_digest,
                    "size": len(manifest_blob),
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": a.name,
                        "org.opencontainers.image.ref.name": a.name.rsplit(":", 1)[1],
                    },
                }
            ],
        }

        tmp = f"{a.out}.tmp.{os.getpid()}"
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as t:

            def add(name, data=None, fileobj=None, size=None):
                ti = tarfile.TarInfo(name)
                ti.mode, ti.mtime = 0o644, mtime
                ti.size = len(data) if data is not None else size
                t.addfile(ti, io.BytesIO(data) if data is not None else fileobj)

            add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
            add("index.json", json.dumps(index, sort_keys=True).encode())
            add("blobs/sha256/" + config_digest[7:], config_blob)
            add("blobs/sha256/" + manifest_digest[7:], manifest_blob)
            layer.seek(0)
            add("blobs/sha256/" + layer_digest[7:], fileobj=layer, size=layer_size)
        os.replace(tmp, a.out)
    print(f"{a.out}: {a.name}, manifest {manifest_digest}, layer {layer_size} bytes", file=sys.stderr)


def elf_deps(data, what):
    """(interpreter or None, [DT_NEEDED names]) of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        die(f"{what}: not a 64-bit little-endian ELF file")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    interp, dynamic, loads = None, None, []
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 3:  # PT_INTERP
            interp = data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode()
        elif p_type == 2:  # PT_DYNAMIC
            dynamic = (p_offset, p_filesz)
        elif p_type == 1:  # PT_LOAD
            loads.append((p_vaddr, p_offset, p_filesz))
    if dynamic is None:
        return interp, []
    needed, strtab = [], None
    for off in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, val = struct.unpack_from("<qQ", data, off)
        if tag == 0:
            break
        if tag == 1:
            needed.append(val)
        elif tag == 5:
            strtab = next((val - v + o for v, o, n in loads if v <= val < v + n), None)
    if strtab is None:
        die(f"{what}: no string table for its dynamic section")

    def cstr(off):
        return data[off:data.index(b"\0", off)].decode()

    return interp, [cstr(strtab + n) for n in needed]


def resolve(root, path, depth=0):
    """PATH (absolute, inside ROOT) with symlinks resolved inside ROOT, or None if missing."""
    if depth > 40:
        return None
    parts = [p for p in path.split("/") if p]
    cur = "/"
    for i, part in enumerate(parts):
        nxt = os.path.join(cur, part)
        host = root + nxt
        if os.path.islink(host):
            target = os.readlink(host)
            target = target if target.startswith("/") else os.path.normpath(os.path.join(cur, target))
            rest = "/".join(parts[i + 1:])
            return resolve(root, os.path.join(target, rest) if rest else target, depth + 1)
        if not os.path.lexists(host):
            return None
        cur = nxt
    return cur


def check_elf(a):
    root = os.path.abspath(a.rootfs)
    bad = []
    for path in a.paths:
        real = resolve(root, path)
        if real is None:
            die(f"{path}: not in {root}")
        with open(root + real, "rb") as f:
            interp, needed = elf_deps(f.read(), path)
        if interp and resolve(root, interp) is None:
            bad.append(f"{path}: interpreter {interp} is not in the image")
        for lib in needed:
            if not any(resolve(root, f"{d}/{lib}") for d in LIB_DIRS):
                bad.append(f"{path}: {lib} is not in {', '.join(LIB_DIRS)} of the image")
    if bad:
        die("\n  ".join(["missing libraries (add their Debian packages to the image):"] + bad))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True)
    pk = sub.add_parser("pack")
    pk.add_argument("rootfs")
    pk.add_argument("out")
    pk.add_argument("--name", required=True)
    pk.add_argument("--entrypoint")
    pk.add_argument("--cmd")
    pk.add_argument("--user", default="")
    pk.add_argument("--workdir", default="/")
    pk.add_argument("--env", action="append", default=[])
    pk.add_argument("--chown", action="append", default=[])
    ck = sub.add_parser("check-elf")
    ck.add_argument("rootfs")
    ck.add_argument("paths", nargs="+")
    a = p.parse_args()
    (pack if a.action == "pack" else check_elf)(a)


if __name__ == "__main__":
    main()
