"""The root image's contents, defined once in buildroot-external/image-contents.txt.

The lab's own image builder (manylab/image.py) and the Buildroot package manylab-workloads
(buildroot-external/package/manylab-workloads/manylab-workloads.mk, which reads the same file
with sed) install the workloads and tools listed there, compiled with its flags, and the busybox
configuration fragment of the Buildroot tree enables its applets (`busybox_fragment()` is that
fragment's text; a unit test compares the two).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from manylab.errors import LabError
from manylab.paths import REPO_ROOT, WORKLOADS_DIR

BUILDROOT_EXTERNAL = REPO_ROOT / "buildroot-external"
CONTENTS_FILE = BUILDROOT_EXTERNAL / "image-contents.txt"
BUSYBOX_FRAGMENT = BUILDROOT_EXTERNAL / "board" / "manylab" / "busybox.fragment"
GUEST_BIN = "manylab/bin"  # where the workloads and tools go, relative to the root
KINDS = ("workloads", "tools", "cflags", "applets")

# busybox Kconfig symbols of applets whose symbol is not CONFIG_<NAME>
BUSYBOX_SYMBOLS = {"sh": ("ASH", "SH_IS_ASH"), "[": ("TEST1",), "[[": ("TEST2",)}


@dataclass(frozen=True)
class Contents:
    workloads: tuple[str, ...]  # workloads/<name>.c
    tools: tuple[str, ...]  # workloads/tools/<name>.c
    cflags: tuple[str, ...]
    applets: tuple[str, ...]

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
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        kind, _, rest = line.partition(" ")
        if kind not in found:
            raise LabError(f"{where}:{number}: unknown kind '{kind}' "
                           f"(one of {', '.join(KINDS)})")
        for name in rest.split():
            if name in found[kind] and kind != "cflags":
                raise LabError(f"{where}:{number}: '{name}' is listed twice under {kind}")
            found[kind].append(name)
    return Contents(*(tuple(found[kind]) for kind in KINDS))


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
    return listed


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
