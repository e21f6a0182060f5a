"""Image builder: busybox-static + buildroot-overlay/ + static workloads -> initramfs and ext2.

The same root tree becomes `initramfs.cpio` (QEMU) and `rootfs.ext2` (gem5, or QEMU with a
disk root). Artifacts are cached under `<cache>/images/<key>/` keyed by every input's bytes.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from manylab import atomic, cpio
from manylab.atomic import file_lock
from manylab.errors import LabError
from manylab.hashing import sha256_bytes, sha256_file, sha256_json
from manylab.paths import OVERLAY_DIR, REPO_ROOT, WORKLOADS_DIR, cache_root, require_tool

IMAGE_BUILDER_VERSION = 1
ROOTFS_EXT2_MIB = 64
CFLAGS = ("-static", "-O2", "-pthread", "-Wall")

COMPILERS = {"x86_64": "gcc", "arm64": "aarch64-linux-gnu-gcc"}
BUSYBOX_DEB_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


@dataclass(frozen=True)
class ImageArtifacts:
    key: str
    directory: Path
    initramfs: Path
    rootfs_ext2: Path
    workloads: tuple[str, ...]


def busybox_binary(arch: str) -> Path:
    """The static busybox for the guest arch: Debian's own for amd64, the unpacked arm64 deb."""
    if arch == "x86_64":
        path = Path("/bin/busybox")
        if not path.exists():
            raise LabError("/bin/busybox missing: install busybox-static (scripts/setup.sh)")
        return path
    unpacked = cache_root() / "busybox" / BUSYBOX_DEB_ARCH[arch] / "bin" / "busybox"
    if unpacked.exists():
        return unpacked
    debs = sorted((cache_root() / "busybox").glob(f"busybox-static_*_{BUSYBOX_DEB_ARCH[arch]}.deb"))
    if not debs:
        raise LabError(f"no {arch} busybox in {cache_root() / 'busybox'}: run scripts/setup.sh "
                       "(it downloads busybox-static:arm64 from Debian)")
    subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(unpacked.parents[1])], check=True)
    return unpacked


def workload_sources() -> list[Path]:
    """The workloads and the guest tools (workloads/tools/), each one static binary."""
    return sorted(WORKLOADS_DIR.glob("*.c")) + sorted((WORKLOADS_DIR / "tools").glob("*.c"))


def compile_workload(source: Path, arch: str, out: Path) -> None:
    compiler = require_tool(COMPILERS[arch], "gcc-aarch64-linux-gnu" if arch == "arm64"
                            else "build-essential")
    cmd = [compiler, *CFLAGS, f"-I{WORKLOADS_DIR / 'include'}", str(source), "-o", str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        first = next((line for line in result.stderr.splitlines() if "error" in line),
                     result.stderr.strip()[-300:])
        raise LabError(f"{source.relative_to(REPO_ROOT)} does not compile for {arch}: {first}")


def overlay_files() -> list[Path]:
    return sorted(p for p in OVERLAY_DIR.rglob("*") if p.is_file())


def image_key(arch: str) -> str:
    headers = sorted((WORKLOADS_DIR / "include").glob("*.h"))
    return sha256_json({
        "builder": IMAGE_BUILDER_VERSION,
        "arch": arch,
        "busybox": sha256_file(busybox_binary(arch)),
        "overlay": [[str(p.relative_to(OVERLAY_DIR)), os.stat(p).st_mode & 0o777, sha256_file(p)]
                    for p in overlay_files()],
        "workloads": [[p.name, sha256_file(p)] for p in workload_sources() + headers],
        "cflags": CFLAGS,
        "compiler": subprocess.run([COMPILERS[arch], "--version"], capture_output=True,
                                   text=True, check=False).stdout.splitlines()[:1],
        "ext2_mib": ROOTFS_EXT2_MIB,
    })[:20]


def images_dir() -> Path:
    path = cache_root() / "images"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _artifacts(directory: Path, key: str) -> ImageArtifacts:
    names = tuple(sorted(p.name for p in (directory / "bin").iterdir()))
    return ImageArtifacts(key, directory, directory / "initramfs.cpio",
                          directory / "rootfs.ext2", names)


def build(arch: str) -> ImageArtifacts:
    """Return the root image for arch, building it if its inputs changed."""
    if arch not in COMPILERS:
        raise LabError(f"unknown arch '{arch}': choose one of {', '.join(COMPILERS)}")
    key = image_key(arch)
    final = images_dir() / key
    if (final / "manifest.json").is_file():
        return _artifacts(final, key)
    with file_lock(images_dir() / f"{key}.lock"):
        if (final / "manifest.json").is_file():
            return _artifacts(final, key)
        staging = images_dir() / f".{key}.staging"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _build_into(staging, arch, key)
            os.replace(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return _artifacts(final, key)


def _populate_tree(tree: Path, arch: str, bin_dir: Path) -> None:
    shutil.copytree(OVERLAY_DIR, tree, symlinks=True)
    for folder in ("bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "run",
                   "mnt", "root", "manylab/bin"):
        (tree / folder).mkdir(parents=True, exist_ok=True)
    shutil.copy2(busybox_binary(arch), tree / "bin" / "busybox")
    applets = subprocess.run(["/bin/busybox", "--list-full"], capture_output=True, text=True,
                             check=True).stdout.split()
    for applet in applets:
        link = tree / applet
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/bin/busybox")
    for binary in sorted(bin_dir.iterdir()):
        shutil.copy2(binary, tree / "manylab" / "bin" / binary.name)


def _build_into(staging: Path, arch: str, key: str) -> None:
    print(f"manylab: image {arch}: building (key {key})", file=sys.stderr)
    bin_dir = staging / "bin"
    bin_dir.mkdir(parents=True)
    for source in workload_sources():
        compile_workload(source, arch, bin_dir / source.stem)
    tree = staging / "rootfs"
    _populate_tree(tree, arch, bin_dir)
    buffer = io.BytesIO()
    cpio.write(buffer, [*cpio.entries_from_tree(tree), cpio.console_node()])
    (staging / "initramfs.cpio").write_bytes(buffer.getvalue())
    mke2fs = require_tool("mke2fs", "e2fsprogs")
    ext2 = staging / "rootfs.ext2"
    result = subprocess.run([mke2fs, "-q", "-t", "ext2", "-F", "-E", "root_owner=0:0",
                             "-d", str(tree), str(ext2), f"{ROOTFS_EXT2_MIB}M"],
                            capture_output=True, text=True, check=False,
                            env={**os.environ, "E2FSPROGS_FAKE_TIME": "1672531200"})
    if result.returncode != 0:
        raise LabError(f"mke2fs -d failed for the {arch} root image: {result.stderr.strip()}")
    shutil.rmtree(tree)
    atomic.write_json(staging / "manifest.json", {
        "key": key, "arch": arch,
        "initramfs_sha256": sha256_bytes(buffer.getvalue()),
        "workloads": sorted(p.name for p in bin_dir.iterdir()),
        "busybox_sha256": sha256_file(busybox_binary(arch)),
    })


def run_config_cpio(run_script: str) -> bytes:
    """A small cpio holding /etc/manylab/run.sh; appended to the base initramfs per run."""
    buffer = io.BytesIO()
    cpio.write(buffer, [
        cpio.Entry("etc", 0o040755), cpio.Entry("etc/manylab", 0o040755),
        cpio.Entry("etc/manylab/run.sh", 0o100755, run_script.encode()),
    ])
    return buffer.getvalue()
