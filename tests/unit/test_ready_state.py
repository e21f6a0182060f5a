"""The cache of booted-guest states (manylab/backends/ready_state.py): a sound state is used,
a damaged one removed for a rebuild, a build happens once and a failed one keeps only its
logs."""

from pathlib import Path

import pytest

from manylab.backends import ready_state


def saver(*files: tuple[str, bytes], fail: str | None = None):
    calls: list[Path] = []

    def build(staging: Path) -> ready_state.Built:
        calls.append(staging)
        (staging / "console.log").write_text("booted\n")
        for name, data in files:
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)
        if fail:
            raise ready_state.StateFailed(fail)
        return ready_state.Built([name for name, _ in files], {"build_s": 1.5})

    return build, calls


def test_a_state_is_built_once_and_then_used(tmp_path):
    build, calls = saver(("state.mig", b"state"), ("cpt/m5.cpt", b"[root]"))
    first = ready_state.ensure(tmp_path, {"a": 1}, build)
    again = ready_state.ensure(tmp_path, {"a": 1}, build)
    assert len(calls) == 1 and again == first
    assert first.key == ready_state.key_of({"a": 1})
    assert first.file("cpt/m5.cpt").read_bytes() == b"[root]"
    assert first.manifest["build_s"] == 1.5 and first.manifest["inputs"] == {"a": 1}
    assert set(first.manifest["files"]) == {"state.mig", "cpt/m5.cpt"}
    assert first.manifest["files"]["state.mig"]["bytes"] == 5
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == [
        first.key]
    ready_state.ensure(tmp_path, {"a": 2}, build)
    assert len(calls) == 2  # other inputs, another state


@pytest.mark.parametrize("damage, reason", [
    ("truncated", "its file cpt/m5.cpt is missing or of another size"),
    ("flipped", "its file cpt/m5.cpt has another digest than the manifest's"),
    ("removed", "its file cpt/m5.cpt is missing or of another size"),
])
def test_a_damaged_state_is_removed_and_rebuilt(tmp_path, capsys, damage, reason):
    build, calls = saver(("cpt/m5.cpt", b"[root] ticks=1"))
    state = ready_state.ensure(tmp_path, {"a": 1}, build)
    saved = state.file("cpt/m5.cpt")
    if damage == "truncated":
        saved.write_bytes(b"[root]")
    elif damage == "flipped":
        saved.write_bytes(b"[root] ticks=2")
    else:
        saved.unlink()
    rebuilt = ready_state.ensure(tmp_path, {"a": 1}, build)
    assert len(calls) == 2 and rebuilt.file("cpt/m5.cpt").read_bytes() == b"[root] ticks=1"
    assert f"{reason}: rebuilding it" in capsys.readouterr().out


def test_a_manifest_of_another_key_is_not_trusted(tmp_path, capsys):
    build, _ = saver(("state.mig", b"s"))
    state = ready_state.ensure(tmp_path, {"a": 1}, build)
    assert ready_state.checked(state.directory, "another") is None
    assert not state.directory.exists()
    assert "its manifest names another key: rebuilding it" in capsys.readouterr().out


def test_a_failed_build_keeps_its_logs_only_and_is_not_retried(tmp_path):
    build, calls = saver(("state.mig", b"half"), fail="the guest never reported ready")
    inputs = {"failing": True}
    with pytest.raises(ready_state.StateFailed, match="never reported ready .logs: .*failed"):
        ready_state.ensure(tmp_path, inputs, build)
    kept = tmp_path / f"{ready_state.key_of(inputs)}.failed"
    assert sorted(p.name for p in kept.iterdir()) == ["console.log"]
    assert not (tmp_path / ready_state.key_of(inputs)).exists()
    with pytest.raises(ready_state.StateFailed):
        ready_state.ensure(tmp_path, inputs, build)
    assert len(calls) == 1  # the process remembers the failure
