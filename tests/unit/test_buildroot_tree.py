"""The Buildroot external tree (buildroot-external/) without Buildroot: its structure, and that
its package builds and installs exactly what the lab's own image builder does, from the one
contents list (buildroot-external/image-contents.txt, manylab/image_contents.py). The checks
against a real Buildroot are in tests/buildroot/."""

import io
import re
import shutil
import stat
import struct
import subprocess
from pathlib import Path

import pytest

from manylab import cpio, image, image_contents, kstats
from manylab.errors import LabError
from manylab.workloads import REGISTRY

REPO = Path(__file__).resolve().parents[2]
EXTERNAL = REPO / "buildroot-external"
PACKAGE = EXTERNAL / "package" / "manylab-workloads"
DEFCONFIGS = ("manylab_x86_64_defconfig", "manylab_aarch64_defconfig")


def defconfig(name: str) -> dict[str, str]:
    values = {}
    for line in (EXTERNAL / "configs" / name).read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value
    return values


def resolve(value: str) -> Path:
    """A defconfig path value with $(BR2_EXTERNAL_MANYLAB_PATH) expanded."""
    return Path(value.strip('"').replace("$(BR2_EXTERNAL_MANYLAB_PATH)", str(EXTERNAL))).resolve()


def test_external_tree_has_its_descriptor_config_and_makefile():
    assert re.search(r"^name: MANYLAB$", (EXTERNAL / "external.desc").read_text(), re.M)
    assert "$BR2_EXTERNAL_MANYLAB_PATH/package/manylab-workloads/Config.in" in (
        EXTERNAL / "Config.in").read_text()
    assert "$(BR2_EXTERNAL_MANYLAB_PATH)/package/*/*.mk" in (EXTERNAL / "external.mk").read_text()
    assert "config BR2_PACKAGE_MANYLAB_WORKLOADS\n" in (PACKAGE / "Config.in").read_text()
    mk = (PACKAGE / "manylab-workloads.mk").read_text()
    assert "MANYLAB_WORKLOADS_SITE = $(BR2_EXTERNAL_MANYLAB_PATH)/../workloads" in mk
    assert "MANYLAB_WORKLOADS_SITE_METHOD = local" in mk
    assert resolve("$(BR2_EXTERNAL_MANYLAB_PATH)/../workloads") == REPO / "workloads"


@pytest.mark.parametrize("name", DEFCONFIGS)
def test_defconfig_wires_in_the_overlay_the_package_busybox_and_both_images(name):
    values = defconfig(name)
    assert resolve(values["BR2_ROOTFS_OVERLAY"]) == REPO / "buildroot-overlay"
    assert resolve(values["BR2_PACKAGE_BUSYBOX_CONFIG_FRAGMENT_FILES"]) == (
        image_contents.BUSYBOX_FRAGMENT)
    for key in ("BR2_PACKAGE_MANYLAB_WORKLOADS", "BR2_TARGET_ROOTFS_CPIO",
                "BR2_TARGET_ROOTFS_EXT2", "BR2_INIT_NONE", "BR2_TOOLCHAIN_EXTERNAL"):
        assert values.get(key) == "y", key
    arch = "X86_64" if "x86_64" in name else "AARCH64"
    assert values.get(f"BR2_TOOLCHAIN_EXTERNAL_BOOTLIN_{arch}_GLIBC_STABLE") == "y"


def test_offline_fragment_names_a_custom_toolchain_and_leaves_the_contents_alone():
    fragment = (EXTERNAL / "offline" / "x86_64-debian-toolchain.fragment").read_text()
    assert "BR2_TOOLCHAIN_EXTERNAL_CUSTOM=y" in fragment
    contents = re.compile(r"^(BR2_PACKAGE_MANYLAB|BR2_ROOTFS_OVERLAY|BR2_PACKAGE_BUSYBOX|"
                          r"BR2_TARGET_ROOTFS)", re.M)
    assert contents.search(fragment) is None


def test_contents_list_is_every_workload_and_tool_source():
    listed = image_contents.contents()
    assert image_contents.unlisted_sources() == []
    assert [p.stem for p in image.workload_sources()] == list(listed.workloads + listed.tools)
    assert set(REGISTRY) - {"shell"} <= set(listed.programs())
    assert image.cflags() == ("-static", "-O2", "-pthread", "-Wall")


def test_contents_file_errors_name_the_line():
    with pytest.raises(LabError, match=r"x.txt:2: unknown kind 'tool'"):
        image_contents.parse("workloads a\ntool b\n", "x.txt")
    with pytest.raises(LabError, match="'a' is listed twice under workloads"):
        image_contents.parse("workloads a\nworkloads b a\n", "x.txt")


def test_busybox_fragment_is_the_one_generated_from_the_contents_list():
    expected = image_contents.busybox_fragment(image_contents.contents())
    assert image_contents.BUSYBOX_FRAGMENT.read_text() == expected, (
        "run .venv/bin/python -m manylab.image_contents to write it again")
    assert "CONFIG_TIMEOUT=y" in expected and "CONFIG_STATIC=y" in expected


SHELL_WORDS = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
               "case", "esac", "in", "function", "{", "}", "!", "[[", "]]", "export", "local",
               "return", "exit", "set", "trap", "read", "cd", "wait", "shift", "break", ".",
               "continue", "eval", "exec"}


def commands_in(text: str) -> set[str]:
    """Words in command position of shell text (a heuristic good for the lab's scripts)."""
    words = set()
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*", "", raw)
        line = re.sub(r"'[^']*'", "''", line)
        for part in re.split(r";;|;|&&|\|\||\||\$\(|`|\bthen\b|\bdo\b|\belse\b|\(|\)|&", line):
            tokens = part.split()
            while tokens and ("=" in tokens[0] or tokens[0] in SHELL_WORDS):
                tokens.pop(0)
            if tokens:
                words.add("test" if tokens[0] == "[" else tokens[0])
    return words


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox (busybox-static) missing")
def test_every_applet_the_guest_scripts_run_is_listed():
    applets = set(subprocess.run(["busybox", "--list"], capture_output=True, text=True,
                                 check=True).stdout.split())
    texts = [p.read_text() for p in sorted((REPO / "buildroot-overlay").rglob("*")) if p.is_file()]
    texts.append(kstats.GUEST_FUNCTIONS)
    used = set().union(*(commands_in(text) for text in texts)) & applets
    assert {"mount", "poweroff", "stty", "mke2fs", "grep"} <= used  # the scan sees them
    assert used - set(image_contents.contents().applets) == set()


MAKE_HARNESS = """
BR2_EXTERNAL_MANYLAB_PATH := {external}
TARGET_CC := {stub}
TARGET_DIR := {target}
INSTALL := install
define sep


endef
include {mk}
{build}/.stamp_built:
\t$(MANYLAB_WORKLOADS_BUILD_CMDS)
\t$(MANYLAB_WORKLOADS_INSTALL_TARGET_CMDS)
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="make missing")
def test_package_compiles_and_installs_what_the_lab_image_does(tmp_path):
    """The package's build and install commands, run by make with a compiler stub that logs
    each call: the same sources with the same flags as image.compile_workload, installed as
    /manylab/bin/<name>, the names the lab's image holds."""
    build = tmp_path / "build" / "manylab-workloads-local"
    shutil.copytree(REPO / "workloads", build)
    log = tmp_path / "cc.log"
    stub = tmp_path / "cc"
    stub.write_text(f'#!/bin/sh\necho "$*" >> {log}\nwhile [ $# -gt 1 ]; do '
                    '[ "$1" = -o ] && : > "$2"; shift; done\n')
    stub.chmod(0o755)
    harness = tmp_path / "harness.mk"
    harness.write_text(MAKE_HARNESS.format(external=EXTERNAL, stub=stub, target=tmp_path / "t",
                                           mk=PACKAGE / "manylab-workloads.mk", build=build))
    subprocess.run(["make", "-s", "-f", str(harness), str(build / ".stamp_built")], check=True,
                   capture_output=True)
    calls = log.read_text().splitlines()
    expected = [" ".join([*image.cflags(), f"-I{build / 'include'}",
                          str(build / source.relative_to(REPO / "workloads")), "-o",
                          str(build / "build" / source.stem)])
                for source in image.workload_sources()]
    assert sorted(calls) == sorted(expected)
    installed = sorted(p.name for p in (tmp_path / "t" / "manylab" / "bin").iterdir())
    assert tuple(installed) == image_contents.contents().programs()


def fake_buildroot_images(folder: Path, machine: int = 62, programs=None) -> Path:
    """A Buildroot-like output/images folder: rootfs.cpio with an ELF /bin/busybox of the given
    e_machine and the listed programs in /manylab/bin, and a rootfs.ext2."""
    folder.mkdir(parents=True, exist_ok=True)
    elf = b"\x7fELF" + bytes(14) + struct.pack("<H", machine) + bytes(40)
    names = image_contents.contents().programs() if programs is None else programs
    entries = [cpio.Entry("bin", stat.S_IFDIR | 0o755), cpio.Entry("init", 0o100755, b"#!/bin/sh"),
               cpio.Entry("bin/busybox", stat.S_IFREG | 0o755, elf),
               cpio.Entry("manylab", stat.S_IFDIR | 0o755),
               cpio.Entry("manylab/bin", stat.S_IFDIR | 0o755)]
    entries += [cpio.Entry(f"manylab/bin/{n}", stat.S_IFREG | 0o755, elf) for n in names]
    buffer = io.BytesIO()
    cpio.write(buffer, entries)
    (folder / "rootfs.cpio").write_bytes(buffer.getvalue())
    (folder / "rootfs.ext2").write_bytes(b"ext2" * 1024)
    return folder


def test_manylab_image_boots_a_buildroot_images_folder_per_arch(tmp_path, monkeypatch):
    x86 = fake_buildroot_images(tmp_path / "x86" / "images")
    arm = fake_buildroot_images(tmp_path / "arm" / "images", machine=183)
    monkeypatch.setenv("MANYLAB_IMAGE", f"{x86}:{arm}")
    art = image.build("x86_64")
    assert art.directory == x86 and art.initramfs == x86 / "rootfs.cpio"
    assert art.rootfs_ext2 == x86 / "rootfs.ext2"
    assert art.key.startswith("external-") and image.image_key("x86_64") == art.key
    assert art.workloads == image_contents.contents().programs()
    assert image.build("arm64").directory == arm
    (x86 / "rootfs.ext2").write_bytes(b"changed")
    assert image.image_key("x86_64") != art.key  # points run on the old image go stale


def test_manylab_image_errors_name_the_folder_and_the_fix(tmp_path, monkeypatch):
    x86 = fake_buildroot_images(tmp_path / "images")
    monkeypatch.setenv("MANYLAB_IMAGE", str(x86))
    with pytest.raises(LabError, match=r"holds no arm64 image \(found x86_64 in .*images\).*"
                                       "manylab_aarch64_defconfig"):
        image.build("arm64")
    monkeypatch.setenv("MANYLAB_IMAGE", str(tmp_path / "nowhere"))
    with pytest.raises(LabError, match="nowhere is not a directory"):
        image.build("x86_64")
    short = fake_buildroot_images(tmp_path / "short", programs=("stream",))
    monkeypatch.setenv("MANYLAB_IMAGE", str(short))
    first_missing = next(p for p in image_contents.contents().programs() if p != "stream")
    with pytest.raises(LabError, match=f"rootfs.cpio lacks /manylab/bin/{first_missing} "):
        image.build("x86_64")
    (x86 / "rootfs.ext2").unlink()
    monkeypatch.setenv("MANYLAB_IMAGE", str(x86))
    with pytest.raises(LabError, match="has no rootfs.ext2"):
        image.build("x86_64")
    packed = fake_buildroot_images(tmp_path / "gz")
    (packed / "rootfs.cpio").write_bytes(b"\x1f\x8b" + bytes(200))
    monkeypatch.setenv("MANYLAB_IMAGE", str(packed))
    with pytest.raises(LabError, match="not an uncompressed cpio"):
        image.build("x86_64")
