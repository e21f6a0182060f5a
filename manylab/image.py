"""Image builder: busybox-static + buildroot-overlay/ + static workloads -> initramfs and ext2.

The same root tree becomes `initramfs.cpio` (QEMU) and `rootfs.ext2` (gem5, or QEMU with a
disk root). Artifacts are cached under `<cache>/images/<key>/` keyed by every input's bytes.
Which workloads, tools, flags and applets go in comes from buildroot-external/image-contents.txt
(manylab/image_contents.py), which the Buildroot package of the same tree installs too.
The same file's optional bundles (Debian packages' dynamic programs with their libraries and
loader, manylab/image_packages.py) go only into the images of points whose workload asks for
them (manylab/workloads.py `bundles`); an image without bundles has the key it always had.

With MANYLAB_IMAGE set to a Buildroot `output/images` directory (or several, `:`-separated, one
per arch), the lab boots that directory's `rootfs.cpio` (QEMU) or `rootfs.ext2` (gem5) instead
of building its own; its key is `external-` and a digest of both files.
"""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from manylab import atomic, cpio, image_contents, image_packages
from manylab.atomic import file_lock
from manylab.errors import LabError
from manylab.hashing import sha256_bytes, sha256_file, sha256_file_cached, sha256_json
from manylab.params import PointParams
from manylab.paths import OVERLAY_DIR, REPO_ROOT, WORKLOADS_DIR, cache_root, require_tool
from manylab.workloads import REGISTRY

IMAGE_BUILDER_VERSION = 1
ROOTFS_EXT2_MIB = 64
IMAGE_ENV = "MANYLAB_IMAGE"
EXTERNAL_CPIO = "rootfs.cpio"
EXTERNAL_EXT2 = "rootfs.ext2"
ELF_MACHINES = {62: "x86_64", 183: "arm64"}  # e_machine: EM_X86_64, EM_AARCH64
BUILDROOT_DEFCONFIGS = {"x86_64": "manylab_x86_64_defconfig",
                        "arm64": "manylab_aarch64_defconfig"}

COMPILERS = {"x86_64": "gcc", "arm64": "aarch64-linux-gnu-gcc"}
BUSYBOX_DEB_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


@dataclass(frozen=True)
class ImageArtifacts:
    key: str
    directory: Path
    initramfs: Path
    rootfs_ext2: Path
    workloads: tuple[str, ...]
    bundles: tuple[str, ...] = ()  # optional bundles it carries (image-contents.txt)


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


def cflags() -> tuple[str, ...]:
    """The flags of every workload and tool (image-contents.txt's `cflags`)."""
    return image_contents.contents().cflags


def workload_sources() -> list[Path]:
    """The workloads and the guest tools (workloads/tools/), each one static binary, as
    buildroot-external/image-contents.txt lists them; LabError for a source it does not list."""
    listed = image_contents.contents()
    unlisted = image_contents.unlisted_sources()
    if unlisted:
        names = ", ".join(str(p.relative_to(REPO_ROOT)) for p in unlisted)
        raise LabError(f"{names} not in {image_contents.CONTENTS_FILE.relative_to(REPO_ROOT)}: "
                       "add it to the `workloads` (or `tools`) line, which both the lab's image "
                       "and the Buildroot package install")
    return listed.sources()


def compile_workload(source: Path, arch: str, out: Path) -> None:
    compiler = require_tool(COMPILERS[arch], "gcc-aarch64-linux-gnu" if arch == "arm64"
                            else "build-essential")
    cmd = [compiler, *cflags(), f"-I{WORKLOADS_DIR / 'include'}", str(source), "-o", str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        first = next((line for line in result.stderr.splitlines() if "error" in line),
                     result.stderr.strip()[-300:])
        raise LabError(f"{source.relative_to(REPO_ROOT)} does not compile for {arch}: {first}")


def overlay_files() -> list[Path]:
    return sorted(p for p in OVERLAY_DIR.rglob("*") if p.is_file())


def bundles_for(point: PointParams) -> tuple[str, ...]:
    """The optional bundles the point's image carries: those its workload asks for."""
    return tuple(sorted(set(REGISTRY[point.workload.name].bundles)))


def for_point(point: PointParams) -> ImageArtifacts:
    """The root image a point boots: its arch's, with its workload's bundles."""
    return build(point.machine.arch, bundles_for(point))


def inputs_extras(art: ImageArtifacts) -> dict[str, object]:
    """What inputs.json's image record adds for an image with bundles: per bundle its Debian
    packages (name, version, sha256, the files each gave) and overlay files."""
    if not art.bundles:
        return {}
    manifest = json.loads((art.directory / "manifest.json").read_text())
    return {"bundles": manifest.get("bundles", {})}


def image_key(arch: str, bundles: tuple[str, ...] = ()) -> str:
    external = external_image(arch)
    if external is not None:
        _refuse_bundles(external, bundles)
        return external.key
    headers = sorted((WORKLOADS_DIR / "include").glob("*.h"))
    extra = {"bundles": image_packages.key_inputs(arch, bundles)} if bundles else {}
    return sha256_json({
        "builder": IMAGE_BUILDER_VERSION,
        "arch": arch,
        "busybox": sha256_file(busybox_binary(arch)),
        "overlay": [[str(p.relative_to(OVERLAY_DIR)), os.stat(p).st_mode & 0o777, sha256_file(p)]
                    for p in overlay_files()],
        "workloads": [[p.name, sha256_file(p)] for p in workload_sources() + headers],
        "cflags": cflags(),
        "compiler": subprocess.run([COMPILERS[arch], "--version"], capture_output=True,
                                   text=True, check=False).stdout.splitlines()[:1],
        "ext2_mib": ROOTFS_EXT2_MIB,
        **extra,
    })[:20]


def _refuse_bundles(external: ImageArtifacts, bundles: tuple[str, ...]) -> None:
    if bundles:
        raise LabError(f"{IMAGE_ENV}: {external.directory} is a Buildroot image, which carries "
                       f"no optional bundle ({', '.join(bundles)}): unset {IMAGE_ENV} for "
                       "points whose workload needs one (README, Buildroot)")


def images_dir() -> Path:
    path = cache_root() / "images"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _artifacts(directory: Path, key: str, bundles: tuple[str, ...]) -> ImageArtifacts:
    names = tuple(sorted(p.name for p in (directory / "bin").iterdir()))
    return ImageArtifacts(key, directory, directory / "initramfs.cpio",
                          directory / "rootfs.ext2", names, bundles)


def build(arch: str, bundles: tuple[str, ...] = ()) -> ImageArtifacts:
    """Return the root image for arch with the optional bundles, building it if its inputs
    changed."""
    if arch not in COMPILERS:
        raise LabError(f"unknown arch '{arch}': choose one of {', '.join(COMPILERS)}")
    bundles = tuple(sorted(set(bundles)))
    external = external_image(arch)
    if external is not None:
        _refuse_bundles(external, bundles)
        return external
    key = image_key(arch, bundles)
    final = images_dir() / key
    if (final / "manifest.json").is_file():
        return _artifacts(final, key, bundles)
    with file_lock(images_dir() / f"{key}.lock"):
        if (final / "manifest.json").is_file():
            return _artifacts(final, key, bundles)
        staging = images_dir() / f".{key}.staging"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _build_into(staging, arch, key, bundles)
            os.replace(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return _artifacts(final, key, bundles)


def _populate_tree(tree: Path, arch: str, bin_dir: Path) -> None:
    shutil.copytree(OVERLAY_DIR, tree, symlinks=True)
    for folder in ("bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "run",
                   "mnt", "root", "manylab/bin"):
        (tree / folder).mkdir(parents=True, exist_ok=True)
    shutil.copy2(busybox_binary(arch), tree / "bin" / "busybox")
    applets = subprocess.run(["/bin/busybox", "--list-full"], capture_output=True, text=True,
                             check=True).stdout.split()
    missing = sorted(set(image_contents.contents().applets) - {Path(a).name for a in applets})
    if missing:
        raise LabError(f"/bin/busybox lacks the applets {', '.join(missing)} that "
                       f"{image_contents.CONTENTS_FILE.relative_to(REPO_ROOT)} lists: install "
                       "Debian's busybox-static (scripts/setup.sh)")
    for applet in applets:
        link = tree / applet
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/bin/busybox")
    for binary in sorted(bin_dir.iterdir()):
        shutil.copy2(binary, tree / "manylab" / "bin" / binary.name)


def _build_into(staging: Path, arch: str, key: str, bundles: tuple[str, ...] = ()) -> None:
    with_bundles = f", with {', '.join(bundles)}" if bundles else ""
    print(f"manylab: image {arch}: building (key {key}{with_bundles})", file=sys.stderr)
    bin_dir = staging / "bin"
    bin_dir.mkdir(parents=True)
    for source in workload_sources():
        compile_workload(source, arch, bin_dir / source.stem)
    tree = staging / "rootfs"
    _populate_tree(tree, arch, bin_dir)
    installed = image_packages.install(tree, arch, bundles) if bundles else {}
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
        **({"bundles": installed} if bundles else {}),
    })


def run_config_cpio(run_script: str) -> bytes:
    """A small cpio holding /etc/manylab/run.sh; appended to the base initramfs per run."""
    buffer = io.BytesIO()
    cpio.write(buffer, [
        cpio.Entry("etc", 0o040755), cpio.Entry("etc/manylab", 0o040755),
        cpio.Entry("etc/manylab/run.sh", 0o100755, run_script.encode()),
    ])
    return buffer.getvalue()


def external_image(arch: str) -> ImageArtifacts | None:
    """The Buildroot-built image MANYLAB_IMAGE names for arch, None when the variable is unset;
    LabError when it is set but holds no usable image for arch."""
    value = os.environ.get(IMAGE_ENV, "").strip()
    if not value:
        return None
    found: dict[str, ImageArtifacts] = {}
    for part in value.split(":"):
        if part:
            art = _external_directory(Path(part).expanduser().resolve())
            found.setdefault(_external_arch(art.initramfs), art)
    if arch not in found:
        have = ", ".join(f"{a} in {art.directory}" for a, art in found.items())
        raise LabError(f"{IMAGE_ENV}={value} holds no {arch} image (found {have}): add the "
                       f"output/images directory of a Buildroot build of buildroot-external/"
                       f"configs/{BUILDROOT_DEFCONFIGS.get(arch, 'manylab_*_defconfig')}, "
                       f"`:`-separated, or unset {IMAGE_ENV}")
    return found[arch]


def _external_directory(directory: Path) -> ImageArtifacts:
    where = f"{IMAGE_ENV}: {directory}"
    if not directory.is_dir():
        raise LabError(f"{where} is not a directory: set {IMAGE_ENV} to a Buildroot output/images "
                       "directory (holding rootfs.cpio and rootfs.ext2)")
    initramfs, ext2 = directory / EXTERNAL_CPIO, directory / EXTERNAL_EXT2
    for needed in (initramfs, ext2):
        if not needed.is_file():
            raise LabError(f"{where} has no {needed.name}: build it with the buildroot-external "
                           "tree's defconfig (BR2_TARGET_ROOTFS_CPIO=y, BR2_TARGET_ROOTFS_EXT2=y)")
    names = _external_programs(initramfs)
    missing = [name for name in image_contents.contents().programs() if name not in names]
    if missing:
        raise LabError(f"{where}/{EXTERNAL_CPIO} lacks /{image_contents.GUEST_BIN}/"
                       f"{missing[0]} ({len(missing)} of the listed programs missing): rebuild it "
                       "with the buildroot-external tree of this clone (make manylab-workloads-"
                       "rebuild all)")
    key = "external-" + sha256_json({"cpio": sha256_file_cached(initramfs),
                                     "ext2": sha256_file_cached(ext2)})[:20]
    return ImageArtifacts(key, directory, initramfs, ext2, names)


def _cpio_stamp(path: Path) -> tuple[Path, int, int]:
    info = path.stat()
    return path, info.st_mtime_ns, info.st_size


def _external_programs(initramfs: Path) -> tuple[str, ...]:
    return _cpio_summary(_cpio_stamp(initramfs))[1]


def _external_arch(initramfs: Path) -> str:
    return _cpio_summary(_cpio_stamp(initramfs))[0]


@functools.cache
def _cpio_summary(stamp: tuple[Path, int, int]) -> tuple[str, tuple[str, ...]]:
    """(arch of its /bin/busybox, names in /manylab/bin) of an uncompressed newc cpio."""
    path = stamp[0]
    data = path.read_bytes()
    if not data.startswith(b"070701"):
        raise LabError(f"{IMAGE_ENV}: {path} is not an uncompressed cpio (newc): build it with "
                       "BR2_TARGET_ROOTFS_CPIO_NONE=y, as the committed defconfigs do")
    arch, programs = "", []
    offset = 0
    prefix = image_contents.GUEST_BIN + "/"
    while offset + 110 <= len(data) and data[offset:offset + 6] == b"070701":
        fields = [int(data[offset + 6 + 8 * i:offset + 14 + 8 * i], 16) for i in range(13)]
        size, name_size = fields[6], fields[11]
        name_end = offset + 110 + name_size
        name = data[offset + 110:name_end - 1].decode(errors="replace").removeprefix("./")
        start = name_end + (-name_end % 4)
        body = data[start:start + size]
        if name == "TRAILER!!!":
            break
        if name == "bin/busybox" and body[:4] == b"\x7fELF" and len(body) >= 20:
            arch = ELF_MACHINES.get(struct.unpack_from("<H", body, 18)[0], "")
        elif name.startswith(prefix) and "/" not in name[len(prefix):] and size:
            programs.append(name[len(prefix):])
        offset = start + size + (-(start + size) % 4)
    if not arch:
        raise LabError(f"{IMAGE_ENV}: {path} has no /bin/busybox of a known arch "
                       f"({', '.join(ELF_MACHINES.values())}): build it with the "
                       "buildroot-external tree's defconfig")
    return arch, tuple(sorted(programs))
