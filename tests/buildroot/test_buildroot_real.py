"""The Buildroot external tree against a real Buildroot (needs MANYLAB_BUILDROOT, a Buildroot
checkout; skipped without it, and nothing here downloads or builds Buildroot). Each committed
defconfig loads, is what `savedefconfig` writes back (Kconfig accepts a misspelt symbol
silently; the comparison catches it), `show-info` describes the package, every line of the
offline fragment survives merge_config.sh, and `utils/check-package` finds nothing. Offline,
each test takes seconds: Kconfig is built with the host's gcc and no package is fetched."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from manylab import image_contents

REPO = Path(__file__).resolve().parents[2]
EXTERNAL = REPO / "buildroot-external"
DEFCONFIGS = ("manylab_x86_64_defconfig", "manylab_aarch64_defconfig")
OFFLINE_FRAGMENT = EXTERNAL / "offline" / "x86_64-debian-toolchain.fragment"
BUILDROOT = Path(os.environ.get("MANYLAB_BUILDROOT", "/nonexistent"))

pytestmark = pytest.mark.skipif(
    not (BUILDROOT / "Makefile").is_file() or not (BUILDROOT / "Config.in").is_file(),
    reason="Buildroot not found: set MANYLAB_BUILDROOT to a Buildroot checkout (README.md, "
           "Buildroot); these tests never download it")


def make(*args: str, cwd: Path = BUILDROOT, timeout: int = 300) -> str:
    done = subprocess.run(["make", "-s", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"make {' '.join(args)}: {done.stderr[-2000:]}"
    return done.stdout


def load(defconfig: str, out: Path) -> Path:
    make(f"BR2_EXTERNAL={EXTERNAL}", f"O={out}", defconfig)
    return out / ".config"


@pytest.mark.parametrize("defconfig", DEFCONFIGS)
def test_defconfig_loads_and_is_what_savedefconfig_writes(defconfig, tmp_path):
    load(defconfig, tmp_path)
    saved = tmp_path / "saved_defconfig"
    make("-C", str(tmp_path), "savedefconfig", f"BR2_DEFCONFIG={saved}")
    committed = (EXTERNAL / "configs" / defconfig).read_text()
    assert saved.read_text() == committed, (
        f"{defconfig} differs from savedefconfig's output (a misspelt or dead symbol, or not "
        f"saved with savedefconfig): diff it with {saved}")


@pytest.mark.parametrize("defconfig", DEFCONFIGS)
def test_show_info_has_the_package_from_the_repositorys_workloads(defconfig, tmp_path):
    load(defconfig, tmp_path)
    info = json.loads(make("-C", str(tmp_path), "show-info"))
    package = info["manylab-workloads"]
    assert package["version"] == "local"
    (download,) = package["downloads"]
    assert Path(download["uris"][0].removeprefix("local+")).resolve() == REPO / "workloads"
    assert "toolchain" in package["dependencies"]
    assert "busybox" in info and "rootfs-cpio" in info and "rootfs-ext2" in info


def test_offline_fragment_merges_onto_the_x86_64_defconfig_as_written(tmp_path):
    config = load("manylab_x86_64_defconfig", tmp_path)
    merge = BUILDROOT / "support" / "kconfig" / "merge_config.sh"
    subprocess.run([str(merge), "-m", "-O", str(tmp_path), str(config), str(OFFLINE_FRAGMENT)],
                   cwd=BUILDROOT, env={**os.environ, "KCONFIG_CONFIG": str(config)},
                   capture_output=True, text=True, check=True, timeout=120)
    make("-C", str(tmp_path), "olddefconfig")
    merged = set(config.read_text().splitlines())
    wanted = [line for line in OFFLINE_FRAGMENT.read_text().splitlines()
              if line.startswith("BR2_") or re.fullmatch(r"# BR2_\w+ is not set", line)]
    assert len(wanted) >= 10
    assert [line for line in wanted if line not in merged] == []
    assert "BR2_PACKAGE_MANYLAB_WORKLOADS=y" in merged
    assert f'BR2_PACKAGE_BUSYBOX_CONFIG_FRAGMENT_FILES="$(BR2_EXTERNAL_MANYLAB_PATH)/board/' \
           f'manylab/{image_contents.BUSYBOX_FRAGMENT.name}"' in merged


def checker_python() -> str | None:
    """A Python that can run utils/check-package (python-magic and flake8 importable): the
    tests' own, or python3 on PATH."""
    for candidate in (sys.executable, shutil.which("python3")):
        if candidate and subprocess.run([candidate, "-c", "import magic, flake8"],
                                        capture_output=True, check=False).returncode == 0:
            return candidate
    return None


def test_check_package_finds_nothing_in_the_external_tree():
    python = checker_python()
    if python is None:
        pytest.skip("utils/check-package needs python-magic and flake8: pip install them into "
                    "the tests' Python or the python3 on PATH")
    # offline/local.mk is a user's override file (BR2_PACKAGE_OVERRIDE_FILE), not a package's
    # .mk: check-package's package-variable rules do not apply to it, as Buildroot's own
    # in-tree check skips every local.mk
    files = sorted(str(p.relative_to(EXTERNAL)) for p in EXTERNAL.rglob("*")
                   if p.is_file() and p.name != "local.mk")
    done = subprocess.run([python, str(BUILDROOT / "utils" / "check-package"), "-b",
                           *files], cwd=EXTERNAL, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0 and "0 warnings generated" in done.stderr + done.stdout, (
        done.stdout + done.stderr)
