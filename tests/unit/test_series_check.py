"""check-series: checkpatch totals are read, and the table says which patch broke."""

import pytest

from manylab.errors import LabError
from manylab.series_check import PatchOutcome, checkpatch, table


def fake_tree(tmp_path, output):
    script = tmp_path / "scripts" / "checkpatch.pl"
    script.parent.mkdir(parents=True)
    script.write_text(f"print <<'END';\n{output}\nEND\n")
    return tmp_path


def test_checkpatch_totals_are_parsed(tmp_path):
    tree = fake_tree(tmp_path, "x.patch:3: WARNING: something\n"
                               "total: 1 errors, 2 warnings, 3 checks, 40 lines checked")
    errors, warnings, checks, text = checkpatch(tree, tmp_path / "x.patch")
    assert (errors, warnings, checks) == (1, 2, 3)
    assert "WARNING: something" in text


def test_checkpatch_without_totals_is_an_error(tmp_path):
    tree = fake_tree(tmp_path, "Can't open x.patch")
    with pytest.raises(LabError, match="printed no totals"):
        checkpatch(tree, tmp_path / "x.patch")


def test_table_names_the_failing_patch_and_undefined_options():
    rows = table([PatchOutcome("0001-a.patch", "ab", True, 12.5, ["CONFIG_LDU_PERCPU=y"], 0, 1, 0),
                  PatchOutcome("0002-b.patch", "cd", False, 0.0, [], 0, 0, 0,
                               "make vmlinux failed")])
    assert "| 0001-a.patch | yes | 12.5 | 0/1/0 | CONFIG_LDU_PERCPU=y |" in rows
    assert "| 0002-b.patch | NO: make vmlinux failed | 0 | 0/0/0 | - |" in rows


def test_the_kernels_checkpatch_gives_totals_for_a_clean_patch_too():
    from manylab import kernel

    try:
        tree = kernel.pristine_source(kernel.source_version())
    except LabError as error:
        pytest.skip(f"no kernel source: {error}")
    (clean,) = (kernel.KERNEL_PATCHES / "ldu").glob("0004-*.patch")
    errors, warnings, _, text = checkpatch(tree, clean)
    assert (errors, warnings) == (0, 0), text
