"""Kernel builder: Debian's linux-source-6.1 + a variant's quilt series + config fragments.

Artifacts land in `<cache>/kernels/<key>/`, where the key hashes every input (source version and
tarball digest, each patch's bytes, the merged configuration, the toolchain, this builder's
version). A build happens in a staging folder that is renamed into place only when complete.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from manylab import atomic
from manylab.atomic import file_lock
from manylab.errors import LabError
from manylab.hashing import sha256_bytes, sha256_file, sha256_json
from manylab.params import PointParams
from manylab.paths import KERNEL_PATCHES, cache_root, require_tool

BUILDER_VERSION = 1
SOURCE_PACKAGE = "linux-source-6.1"
SOURCE_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
BASE_LAYER = "lab"


@dataclass(frozen=True)
class ArchInfo:
    make_arch: str
    cross_prefix: str
    config_fragment: str
    targets: tuple[str, ...]
    boot_image: str  # path inside the build tree of the file QEMU boots


ARCHES: dict[str, ArchInfo] = {
    # x86 boots the uncompressed ELF vmlinux through PVH: no decompressor under the plugin.
    "x86_64": ArchInfo("x86_64", "", "x86_64", ("vmlinux", "bzImage"), "vmlinux"),
    "arm64": ArchInfo("arm64", "aarch64-linux-gnu-", "arm64", ("vmlinux", "Image"),
                      "arch/arm64/boot/Image"),
}


@dataclass(frozen=True)
class KernelRequest:
    variant: str
    arch: str
    fragments: tuple[str, ...] = ()


def request_for(point: PointParams) -> KernelRequest:
    """The kernel a planned point boots."""
    return KernelRequest(point.kernel.variant, point.machine.arch, point.kernel.fragments)


@dataclass(frozen=True)
class PatchFile:
    path: Path
    sha256: str


@dataclass
class KernelInputs:
    request: KernelRequest
    source_version: str
    tarball_sha256: str
    patches: list[PatchFile]
    config_files: list[Path]
    config_text: str
    toolchain: str
    key: str = field(default="")


@dataclass(frozen=True)
class KernelArtifacts:
    key: str
    directory: Path
    boot_image: Path
    vmlinux: Path
    system_map: Path
    config: Path


def _run(cmd: list[str]) -> str:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LabError(f"{' '.join(cmd)} failed: {result.stderr.strip().splitlines()[-1:]}")
    return str(result.stdout)


def source_version() -> str:
    """The exact Debian version of linux-source-6.1, e.g. 6.1.192-2."""
    if not SOURCE_TARBALL.exists():
        raise LabError(f"{SOURCE_TARBALL} missing: install the Debian package {SOURCE_PACKAGE} "
                       "(scripts/setup.sh)")
    return _run(["dpkg-query", "-W", "-f=${Version}", SOURCE_PACKAGE]).strip()


def tarball_sha256() -> str:
    """Digest of the source tarball, remembered per (size, mtime) to avoid rehashing 130 MiB."""
    stat = SOURCE_TARBALL.stat()
    memo = cache_root() / "src" / f"tarball-{stat.st_size}-{int(stat.st_mtime)}.sha256"
    if memo.exists():
        return memo.read_text().strip()
    memo.parent.mkdir(parents=True, exist_ok=True)
    digest = sha256_file(SOURCE_TARBALL)
    atomic.write_text(memo, digest + "\n")
    return digest


def toolchain_id(arch: str) -> str:
    gcc = ARCHES[arch].cross_prefix + "gcc"
    require_tool(gcc, "gcc-aarch64-linux-gnu" if arch == "arm64" else "build-essential")
    return _run([gcc, "--version"]).splitlines()[0]


def variants() -> list[str]:
    return sorted(p.name for p in KERNEL_PATCHES.iterdir()
                  if (p / "series").is_file() and p.name != BASE_LAYER)


STACK_SEPARATOR = "+"


def variant_layers(variant: str) -> list[str]:
    """The series a variant stacks, in the order they apply: "finerlru+ldu" is the finerlru
    series, then the ldu series, each with its own config. Raises LabError for a variant that
    is not one folder of kernel-patches/ or a stack of two or more distinct ones other than
    stock."""
    known = variants()
    layers = variant.split(STACK_SEPARATOR)
    unknown = [layer for layer in layers if layer not in known]
    if unknown:
        within = f" (in the stack '{variant}')" if len(layers) > 1 else ""
        raise LabError(f"'{unknown[0]}'{within} is not a kernel variant, a folder of "
                       f"kernel-patches/ with a series: choose one of {', '.join(known)}, or "
                       f"stack several with '{STACK_SEPARATOR}', e.g. finerlru+ldu")
    if len(layers) > 1 and ("stock" in layers or len(set(layers)) != len(layers)):
        raise LabError(f"kernel variant stack '{variant}': a stack names two or more distinct "
                       "variants other than stock")
    return layers


def read_series(layer: str) -> list[PatchFile]:
    folder = KERNEL_PATCHES / layer
    series = folder / "series"
    if not series.is_file():
        shown = series.relative_to(KERNEL_PATCHES.parent)
        raise LabError(f"kernel variant '{layer}' has no {shown}: choose one of "
                       f"{', '.join(variants())}")
    patches = []
    for number, line in enumerate(series.read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) > 1 and words[1:] != ["-p1"]:
            raise LabError(f"{series}:{number}: only '-p1' patches are supported, got '{line}'")
        # A line may name another variant's patch ("../finerlru/0001-...patch"): kept
        # normalised so that records name the file where it lives.
        patch = Path(os.path.normpath(folder / words[0]))
        if not patch.is_file():
            raise LabError(f"{series}:{number}: patch file {patch.name} does not exist")
        patches.append(PatchFile(patch, sha256_file(patch)))
    return patches


def fragment_path(name: str, variant: str) -> Path:
    folders = [KERNEL_PATCHES / layer for layer in variant_layers(variant)]
    for candidate in [folder / f"{name}.config" for folder in folders] + [
            KERNEL_PATCHES / BASE_LAYER / "config" / f"{name}.config"]:
        if candidate.is_file():
            return candidate
    known = sorted(p.stem for p in (KERNEL_PATCHES / BASE_LAYER / "config").glob("*.config"))
    searched = " or ".join(f"kernel-patches/{folder.name}/" for folder in folders)
    raise LabError(f"kernel config fragment '{name}' not found in {searched} or "
                   f"kernel-patches/{BASE_LAYER}/config/ (known: {', '.join(known)})")


def config_files(request: KernelRequest) -> list[Path]:
    base = KERNEL_PATCHES / BASE_LAYER / "config"
    files = [base / "base.config", base / f"{ARCHES[request.arch].config_fragment}.config"]
    for layer in variant_layers(request.variant):
        layer_config = KERNEL_PATCHES / layer / "config"
        if layer_config.is_file():
            files.append(layer_config)
    files.extend(fragment_path(name, request.variant) for name in request.fragments)
    return files


def requested_config(request: KernelRequest) -> dict[str, str]:
    """The options the request's config files set (a later file wins), read without a build."""
    return requested_options("\n".join(f.read_text() for f in config_files(request)))


def resolve(request: KernelRequest) -> KernelInputs:
    if request.arch not in ARCHES:
        raise LabError(f"unknown arch '{request.arch}': choose one of {', '.join(ARCHES)}")
    patches = read_series(BASE_LAYER)
    for layer in variant_layers(request.variant):
        patches += read_series(layer)
    files = config_files(request)
    text = "".join(f"# from {f.relative_to(KERNEL_PATCHES.parent)}\n{f.read_text()}\n"
                   for f in files)
    inputs = KernelInputs(request, source_version(), tarball_sha256(), patches, files, text,
                          toolchain_id(request.arch))
    inputs.key = sha256_json({
        "builder": BUILDER_VERSION,
        "source": [inputs.source_version, inputs.tarball_sha256],
        "arch": request.arch,
        "patches": [[p.path.name, p.sha256] for p in patches],
        "config": sha256_bytes(text.encode()),
        "toolchain": inputs.toolchain,
    })[:20]
    return inputs



def kernels_dir() -> Path:
    path = cache_root() / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def pristine_source(version: str) -> Path:
    """The unpacked tarball, shared read-only by every build (builds hardlink-copy it)."""
    src_root = cache_root() / "src"
    tree = src_root / f"{SOURCE_PACKAGE}_{version}"
    if (tree / "Makefile").is_file():
        return tree
    with file_lock(src_root / "unpack.lock"):
        if (tree / "Makefile").is_file():
            return tree
        staging = src_root / f".unpack-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        print(f"manylab: unpacking {SOURCE_TARBALL} ...", file=sys.stderr)
        _run(["tar", "-C", str(staging), "-xf", str(SOURCE_TARBALL)])
        os.replace(staging / SOURCE_PACKAGE, tree)
        shutil.rmtree(staging, ignore_errors=True)
    return tree


def artifacts_in(directory: Path, key: str) -> KernelArtifacts:
    boot = directory / "Image" if (directory / "Image").exists() else directory / "vmlinux"
    if boot.name == "vmlinux" and _has_kasan(directory / "config"):
        # A KASAN x86 kernel entered through PVH dies silently within its first 160,000
        # instructions (measured, Linux 6.1): it boots through the bzImage's setup instead.
        boot = directory / "bzImage"
    return KernelArtifacts(key, directory, boot, directory / "vmlinux",
                           directory / "System.map", directory / "config")


def _has_kasan(config: Path) -> bool:
    return config.is_file() and requested_options(config.read_text()).get("CONFIG_KASAN") == "y"


def cached(inputs: KernelInputs) -> KernelArtifacts | None:
    directory = kernels_dir() / inputs.key
    if (directory / "manifest.json").is_file():
        return artifacts_in(directory, inputs.key)
    return None


HUNK_FAILED = re.compile(r"Hunk #(\d+) FAILED at (\d+)")


def apply_patch(tree: Path, patch: PatchFile) -> None:
    result = subprocess.run(
        ["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch", "--forward", "-r", "-",
         "-d", str(tree), "-i", str(patch.path)],
        capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return
    current = "?"
    failures = []
    for line in result.stdout.splitlines():
        if line.startswith("patching file "):
            current = line.removeprefix("patching file ").strip()
        match = HUNK_FAILED.search(line)
        if match:
            failures.append(f"{current} hunk #{match.group(1)} at line {match.group(2)}")
        elif "can't find file" in line or "Reversed (or previously applied)" in line:
            failures.append(f"{current}: {line.strip()}")
    detail = "; ".join(failures) or (result.stdout + result.stderr).strip().splitlines()[-1]
    raise LabError(f"{patch.path.relative_to(KERNEL_PATCHES.parent)} does not apply to "
                   f"{SOURCE_PACKAGE} (fuzz 0): {detail}; rebase it on the recorded source")


CONFIG_SET = re.compile(r"^(CONFIG_\w+)=(.*)$")
CONFIG_UNSET = re.compile(r"^# (CONFIG_\w+) is not set$")


def requested_options(text: str) -> dict[str, str]:
    wanted: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if match := CONFIG_SET.match(line):
            wanted[match.group(1)] = match.group(2)
        elif match := CONFIG_UNSET.match(line):
            wanted[match.group(1)] = "n"
    return wanted


def dropped_options(wanted: dict[str, str], final_config: str) -> list[str]:
    have = requested_options(final_config)
    return [f"{name}={value}" for name, value in wanted.items() if have.get(name, "n") != value]


def make_command(inputs: KernelInputs, build_dir: str, jobs: int, *targets: str) -> list[str]:
    info = ARCHES[inputs.request.arch]
    cmd = ["make", f"O={build_dir}", f"ARCH={info.make_arch}", f"-j{jobs}",
           f"CC=ccache {info.cross_prefix}gcc"]
    if info.cross_prefix:
        cmd.append(f"CROSS_COMPILE={info.cross_prefix}")
    return cmd + list(targets)


def build_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "CCACHE_DIR": str(cache_root() / "ccache"),
        "CCACHE_NOHASHDIR": "1",
        # Depend mode takes the headers from gcc's own -MMD output instead of running the
        # preprocessor a second time: a cold build (mm/ and kernel/, 2 cores) took 111 s
        # against 149 s in ccache's default mode and 107 s without ccache.
        "CCACHE_DEPEND": "1",
        "CCACHE_MAXSIZE": "8G",
        "KBUILD_BUILD_TIMESTAMP": "2023-01-01",
        "KBUILD_BUILD_USER": "manylab",
        "KBUILD_BUILD_HOST": "manylab",
        "LC_ALL": "C",
    })
    return env


def run_logged(cmd: list[str], cwd: Path, log: Path, label: str) -> None:
    """Run a make step, appending to the build log and printing progress every 20 s."""
    started = time.monotonic()
    last_report = started
    with log.open("a") as sink:
        sink.write(f"$ {' '.join(cmd)}\n")
        sink.flush()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=build_env(), start_new_session=True)
        assert proc.stdout is not None
        compiled = 0
        try:
            for line in proc.stdout:
                sink.write(line)
                if line.startswith("  CC "):
                    compiled += 1
                now = time.monotonic()
                if now - last_report >= 20:
                    print(f"manylab: {label}: {compiled} files compiled, {now - started:.0f} s",
                          file=sys.stderr)
                    last_report = now
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        if proc.wait() != 0:
            raise LabError(f"{label}: '{' '.join(cmd)}' failed; see {log}")


def build(request: KernelRequest, jobs: int | None = None) -> KernelArtifacts:
    """Return the kernel's artifacts, building them if no cached build has the same key."""
    inputs = resolve(request)
    if (hit := cached(inputs)) is not None:
        return hit
    require_tool("make", "build-essential")
    require_tool("ccache", "ccache")
    require_tool("patch", "patch")
    label = f"kernel {request.variant}/{request.arch}" + "".join(f"+{f}" for f in request.fragments)
    with file_lock(kernels_dir() / f"{inputs.key}.lock"):
        if (hit := cached(inputs)) is not None:
            return hit
        return _build_locked(inputs, jobs or len(os.sched_getaffinity(0)), label)


def _build_locked(inputs: KernelInputs, jobs: int, label: str) -> KernelArtifacts:
    final = kernels_dir() / inputs.key
    staging = kernels_dir() / f".{inputs.key}.staging"
    failed_log = kernels_dir() / f"{inputs.key}.failed.log"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    tree = staging / "src"
    log = staging / "build.log"
    started = time.monotonic()
    try:
        print(f"manylab: {label}: building (key {inputs.key})", file=sys.stderr)
        _run(["cp", "-al", str(pristine_source(inputs.source_version)), str(tree)])
        for patch in inputs.patches:
            apply_patch(tree, patch)
        fragment = staging / "lab.config"
        fragment.write_text(inputs.config_text)
        build_dir = ".build"  # a subfolder of the tree: Kbuild then uses relative paths (ccache)
        run_logged(make_command(inputs, build_dir, jobs, "allnoconfig")
                   + [f"KCONFIG_ALLCONFIG={fragment}"], tree, log, label)
        final_config = (tree / build_dir / ".config").read_text()
        dropped = dropped_options(requested_options(inputs.config_text), final_config)
        if dropped:
            raise LabError(f"{label}: config options requested by "
                           f"{', '.join(f.name for f in inputs.config_files)} did not survive "
                           f"Kconfig (missing dependency?): {', '.join(dropped)}")
        run_logged(make_command(inputs, build_dir, jobs, *ARCHES[inputs.request.arch].targets),
                   tree, log, label)
        out = staging / "out"
        out.mkdir()
        built = tree / build_dir
        shutil.copy2(built / "vmlinux", out / "vmlinux")
        shutil.copy2(built / "System.map", out / "System.map")
        shutil.copy2(built / ".config", out / "config")
        if inputs.request.arch == "arm64":
            shutil.copy2(built / "arch/arm64/boot/Image", out / "Image")
        else:
            shutil.copy2(built / "arch/x86/boot/bzImage", out / "bzImage")
        shutil.copy2(log, out / "build.log")
        atomic.write_json(out / "manifest.json", manifest(inputs, time.monotonic() - started))
        os.replace(out, final)
    except BaseException:
        if log.exists():
            shutil.copy2(log, failed_log)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    failed_log.unlink(missing_ok=True)
    print(f"manylab: {label}: built in {time.monotonic() - started:.0f} s -> {final}",
          file=sys.stderr)
    return artifacts_in(final, inputs.key)


def manifest(inputs: KernelInputs, seconds: float) -> dict[str, object]:
    return {
        "key": inputs.key,
        "variant": inputs.request.variant,
        "arch": inputs.request.arch,
        "fragments": list(inputs.request.fragments),
        "source": {"package": SOURCE_PACKAGE, "version": inputs.source_version,
                   "tarball": str(SOURCE_TARBALL), "tarball_sha256": inputs.tarball_sha256},
        "patches": [{"file": str(p.path.relative_to(KERNEL_PATCHES.parent)), "sha256": p.sha256}
                    for p in inputs.patches],
        "config_fragments": [{"file": str(f.relative_to(KERNEL_PATCHES.parent)),
                              "sha256": sha256_file(f)} for f in inputs.config_files],
        "config_sha256": sha256_bytes(inputs.config_text.encode()),
        "toolchain": inputs.toolchain,
        "builder_version": BUILDER_VERSION,
        "build_seconds": round(seconds, 1),
    }

