"""The root image's contents, defined once in buildroot-external/image-contents.txt.

The lab's own image builder (manylab/image.py) and the Buildroot package manylab-workloads
(buildroot-external/package/manylab-workloads/manylab-workloads.mk, which reads the same file
with sed) install the workloads and tools listed there, compiled with its flags, and the busybox
configuration fragment of the Buildroot tree enables its applets (`busybox_fragment()` is that
fragment's text; a unit test compares the two).

The same file defines the optional bundles (kinds `debs`, `programs`, `overlay`, each line
naming its bundle first): Debian packages' dynamic programs with their shared libraries and
configuration, carried only by the images of points whose workload asks for the bundle
(manylab/image_packages.py). The Buildroot package reads none of these lines.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from manylab.errors import LabError
from manylab.paths import REPO_ROOT, WORKLOADS_DIR

BUILDROOT_EXTERNAL = REPO_ROOT / "buildroot-external"
CONTENTS_FILE = BUILDROOT_EXTERNAL / "image-contents.txt"
BUSYBOX_FRAGMENT = BUILDROOT_EXTERNAL / "board" / "manylab" / "busybox.fragment"
GUEST_BIN = "manylab/bin"  # where the workloads and tools go, relative to the root
KINDS = ("workloads", "tools", "cflags", "applets")
BUNDLE_KINDS = ("debs", "programs", "overlay")  # lines "KIND BUNDLE ITEM..."

# busybox Kconfig symbols of applets whose symbol is not CONFIG_<NAME>
BUSYBOX_SYMBOLS = {"sh": ("ASH", "SH_IS_ASH"), "[": ("TEST1",), "[[": ("TEST2",)}


@dataclass(frozen=True)
class Bundle:
    """An optional part of the image: Debian packages' programs, their libraries, a folder."""
    name: str
    debs: tuple[str, ...]  # Debian package names (the guest arch's)
    programs: tuple[str, ...]  # absolute guest paths of files in those packages
    overlay: tuple[str, ...]  # folders of the clone, relative to its root


@dataclass(frozen=True)
class Contents:
    workloads: tuple[str, ...]  # workloads/<name>.c
    tools: tuple[str, ...]  # workloads/tools/<name>.c
    cflags: tuple[str, ...]
    applets: tuple[str, ...]
    bundles: dict[str, Bundle] = field(default_factory=dict)

    def sources(self) -> list[Path]:
        """Each program's C source, sorted as the image key has always listed them."""
        return (sorted(WORKLOADS_DIR / f"{name}.c" for name in self.workloads)
                + sorted(WORKLOADS_DIR / "tools" / f"{name}.c" for name in self.tools))

    def programs(self) -> tuple[str, ...]:
        """Every binary installed in /manylab/bin, sorted."""
        return tuple(sorted(self.workloads + self.tools))


def parse(text: str, where: str) -> Contents:
    """The contents written in `text` (the format of image-contents.txt); LabError naming
    the line for an unknown kind or a repeated name."""
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    bundles: dict[str, dict[str, list[str]]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        kind, _, rest = line.partition(" ")
        if kind in BUNDLE_KINDS:
            _parse_bundle_line(bundles, kind, rest.split(), f"{where}:{number}")
            continue
        if kind not in found:
            raise LabError(f"{where}:{number}: unknown kind '{kind}' "
                           f"(one of {', '.join(KINDS + BUNDLE_KINDS)})")
        for name in rest.split():
            if name in found[kind] and kind != "cflags":
                raise LabError(f"{where}:{number}: '{name}' is listed twice under {kind}")
            found[kind].append(name)
    for name, items in bundles.items():
        for needed in ("debs", "programs"):
            if not items[needed]:
                raise LabError(f"{where}: bundle '{name}' has no `{needed}` line: a bundle "
                               "names its Debian packages and the programs it installs")
    return Contents(tuple(found["workloads"]), tuple(found["tools"]), tuple(found["cflags"]),
                    tuple(found["applets"]),
                    {name: Bundle(name, tuple(items["debs"]), tuple(items["programs"]),
                                  tuple(items["overlay"]))
                     for name, items in sorted(bundles.items())})


def _parse_bundle_line(bundles: dict[str, dict[str, list[str]]], kind: str, words: list[str],
                       where: str) -> None:
    if len(words) < 2:
        raise LabError(f"{where}: `{kind}` takes a bundle name and at least one item")
    name, items = words[0], words[1:]
    if not name.replace("-", "").isalnum() or not name[0].isalpha():
        raise LabError(f"{where}: bad bundle name '{name}' (letters, digits and '-')")
    entry = bundles.setdefault(name, {k: [] for k in BUNDLE_KINDS})
    for item in items:
        if item in entry[kind]:
            raise LabError(f"{where}: '{item}' is listed twice under {kind} {name}")
        if kind == "programs" and not PurePosixPath(item).is_absolute():
            raise LabError(f"{where}: program '{item}' of bundle {name} is not an absolute "
                           "guest path (e.g. /usr/sbin/exim4)")
        if kind == "overlay" and (PurePosixPath(item).is_absolute() or ".." in item.split("/")):
            raise LabError(f"{where}: overlay '{item}' of bundle {name} must be a folder of "
                           "the clone, relative to its root (e.g. guest/exim)")
        entry[kind].append(item)


@functools.cache
def contents() -> Contents:
    """The image's contents; LabError if the file is missing or a listed source is absent."""
    try:
        text = CONTENTS_FILE.read_text()
    except FileNotFoundError:
        raise LabError(f"{CONTENTS_FILE} missing: it lists the root image's workloads "
                       "(restore it from git)") from None
    where = str(CONTENTS_FILE.relative_to(REPO_ROOT))
    listed = parse(text, where)
    for source in listed.sources():
        if not source.is_file():
            raise LabError(f"{where} lists {source.stem} but {source.relative_to(REPO_ROOT)} "
                           "does not exist: add the source or remove the name")
    for bundle in listed.bundles.values():
        for folder in bundle.overlay:
            if not (REPO_ROOT / folder).is_dir():
                raise LabError(f"{where}: bundle {bundle.name}'s overlay {folder} is not a "
                               "folder of the clone: add it or remove the line")
    return listed


def bundle(name: str) -> Bundle:
    """The optional bundle of that name; LabError naming the known ones."""
    bundles = contents().bundles
    if name not in bundles:
        raise LabError(f"no bundle '{name}' in {CONTENTS_FILE.relative_to(REPO_ROOT)} "
                       f"(known: {', '.join(bundles) or 'none'})")
    return bundles[name]


def unlisted_sources() -> list[Path]:
    """C sources in workloads/ and workloads/tools/ that the contents file does not list."""
    listed = set(contents().sources())
    present = sorted(WORKLOADS_DIR.glob("*.c")) + sorted((WORKLOADS_DIR / "tools").glob("*.c"))
    return [source for source in present if source not in listed]


def busybox_symbols(applet: str) -> tuple[str, ...]:
    """The busybox Kconfig symbols (without CONFIG_) that provide an applet."""
    return BUSYBOX_SYMBOLS.get(applet, (applet.upper().replace("-", "_").replace(".", "_"),))


def busybox_fragment(listed: Contents) -> str:
    """The busybox configuration fragment of the Buildroot tree: static, every listed applet."""
    lines = ["# Generated from buildroot-external/image-contents.txt by",
             "# manylab.image_contents.busybox_fragment(): a static busybox with every applet",
             "# the lab's guest scripts run (tests/unit/test_buildroot_tree.py compares them).",
             "CONFIG_STATIC=y"]
    symbols = sorted({symbol for applet in listed.applets for symbol in busybox_symbols(applet)})
    lines += [f"CONFIG_{symbol}=y" for symbol in symbols]
    return "\n".join(lines) + "\n"


def main() -> None:
    """`python -m manylab.image_contents`: write the busybox fragment from the contents file."""
    BUSYBOX_FRAGMENT.write_text(busybox_fragment(contents()))
    print(BUSYBOX_FRAGMENT)


if __name__ == "__main__":
    main()
