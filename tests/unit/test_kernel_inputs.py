import shutil
from pathlib import Path

import pytest

from manylab import kernel
from manylab.errors import LabError

needs_source = pytest.mark.skipif(not kernel.SOURCE_TARBALL.exists(),
                                  reason="linux-source-6.1 not installed")


@pytest.fixture
def patches_root(tmp_path, monkeypatch):
    """A private copy of kernel-patches/ the tests may edit."""
    root = tmp_path / "kernel-patches"
    shutil.copytree(kernel.KERNEL_PATCHES, root)
    monkeypatch.setattr(kernel, "KERNEL_PATCHES", root)
    return root


def add_variant(root: Path, name: str, patch_text: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "0001-test.patch").write_text(patch_text)
    (folder / "series").write_text("# test\n0001-test.patch\n")
    return folder / "0001-test.patch"


PATCH = """--- a/README
+++ b/README
@@ -1,1 +1,1 @@
-Linux kernel
+Linux kernel, patched
"""


@needs_source
def test_key_changes_with_patch_bytes_config_and_arch(patches_root):
    patch = add_variant(patches_root, "toy", PATCH)
    base = kernel.resolve(kernel.KernelRequest("toy", "x86_64")).key
    assert kernel.resolve(kernel.KernelRequest("toy", "x86_64")).key == base
    patch.write_text(PATCH.replace("patched", "patched twice"))
    changed_patch = kernel.resolve(kernel.KernelRequest("toy", "x86_64")).key
    assert changed_patch != base
    with_debug = kernel.resolve(kernel.KernelRequest("toy", "x86_64", ("debug",))).key
    assert with_debug not in (base, changed_patch)
    assert kernel.resolve(kernel.KernelRequest("toy", "arm64")).key != changed_patch
    (patches_root / "lab/config/base.config").write_text(
        (patches_root / "lab/config/base.config").read_text() + "CONFIG_PRINTK=y\n")
    assert kernel.resolve(kernel.KernelRequest("toy", "x86_64")).key != changed_patch


@needs_source
def test_stock_is_the_lab_layer_alone(patches_root):
    inputs = kernel.resolve(kernel.KernelRequest("stock", "x86_64"))
    assert [p.path.parent.name for p in inputs.patches] == ["lab"]
    assert inputs.source_version.startswith("6.1.")


@needs_source
def test_unknown_variant_and_fragment_are_named(patches_root):
    with pytest.raises(LabError, match="'nope' is not a kernel variant, a folder of "
                                        "kernel-patches/ with a series"):
        kernel.resolve(kernel.KernelRequest("nope", "x86_64"))
    with pytest.raises(LabError, match="config fragment 'fast' not found"):
        kernel.resolve(kernel.KernelRequest("stock", "x86_64", ("fast",)))


def test_series_names_a_missing_patch(patches_root):
    (patches_root / "ghost").mkdir()
    (patches_root / "ghost" / "series").write_text("0001-missing.patch\n")
    with pytest.raises(LabError, match="series:1: patch file 0001-missing.patch does not exist"):
        kernel.read_series("ghost")


def test_a_patch_that_does_not_apply_names_patch_file_and_hunk(patches_root, tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "README").write_text("Something else entirely\n")
    patch = add_variant(patches_root, "bad", PATCH)
    with pytest.raises(LabError) as caught:
        kernel.apply_patch(tree, kernel.PatchFile(patch, "x"))
    message = str(caught.value)
    assert "kernel-patches/bad/0001-test.patch does not apply" in message
    assert "README hunk #1 at line 1" in message


def test_config_options_that_kconfig_dropped_are_listed():
    wanted = kernel.requested_options("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=256\n")
    final = "CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=64\n"
    assert kernel.dropped_options(wanted, final) == ["CONFIG_B=n", "CONFIG_C=256"]
    assert kernel.dropped_options({"CONFIG_D": "n"}, "") == []


def test_a_series_may_name_another_variants_patches():
    # finerlru-shared-size (issue #13 F3, measurement only) lists finerlru's patches by
    # relative path and adds one; its config is a link to finerlru's.
    assert "finerlru-shared-size" in kernel.variants()
    own = kernel.read_series("finerlru")
    measured = kernel.read_series("finerlru-shared-size")
    assert measured[:-1] == own
    assert measured[-1].path.parent == kernel.KERNEL_PATCHES / "finerlru-shared-size"
    assert "MEASUREMENT-ONLY" in measured[-1].path.name
    shared, finer = (kernel.config_files(kernel.KernelRequest(v, "x86_64"))[-1]
                     for v in ("finerlru-shared-size", "finerlru"))
    assert shared.read_text() == finer.read_text()


@needs_source
def test_a_stack_applies_each_series_in_order_with_its_config(patches_root):
    add_variant(patches_root, "toy", PATCH)
    (patches_root / "toy" / "config").write_text("CONFIG_TOY=y\n")
    (patches_root / "toy" / "extra.config").write_text("CONFIG_TOY_EXTRA=y\n")
    inputs = kernel.resolve(kernel.KernelRequest("ldu+toy", "x86_64", ("extra", "debug")))
    ldu = kernel.read_series("ldu")
    assert [p.path.parent.name for p in inputs.patches] == ["lab"] + ["ldu"] * len(ldu) + ["toy"]
    assert [f.relative_to(patches_root).as_posix() for f in inputs.config_files] == [
        "lab/config/base.config", "lab/config/x86_64.config", "ldu/config", "toy/config",
        "toy/extra.config", "lab/config/debug.config"]
    assert inputs.config_text.index("CONFIG_LDU=y") < inputs.config_text.index("CONFIG_TOY=y")
    swapped = kernel.resolve(kernel.KernelRequest("toy+ldu", "x86_64", ("extra", "debug")))
    assert swapped.key != inputs.key


@pytest.mark.parametrize("variant, message", [
    ("ldu+nope", "'nope' \\(in the stack 'ldu\\+nope'\\) is not a kernel variant"),
    ("stock+ldu", "a stack names two or more distinct variants other than stock"),
    ("ldu+ldu", "a stack names two or more distinct variants other than stock"),
    ("ldu+", "'' \\(in the stack 'ldu\\+'\\) is not a kernel variant"),
])
def test_a_bad_stack_is_refused_with_its_reason(variant, message):
    with pytest.raises(LabError, match=message):
        kernel.variant_layers(variant)


def test_x86_boots_the_pvh_vmlinux_unless_the_kernel_has_kasan(tmp_path: Path):
    for name in ("vmlinux", "bzImage", "System.map"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "config").write_text("CONFIG_SMP=y\n# CONFIG_KASAN is not set\n")
    assert kernel.artifacts_in(tmp_path, "k").boot_image == tmp_path / "vmlinux"
    (tmp_path / "config").write_text("CONFIG_SMP=y\nCONFIG_KASAN=y\n")
    assert kernel.artifacts_in(tmp_path, "k").boot_image == tmp_path / "bzImage"
    assert kernel.artifacts_in(tmp_path, "k").vmlinux == tmp_path / "vmlinux"
