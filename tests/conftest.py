import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def write_spec(tmp_path: Path):
    def write(text: str, name: str = "study.toml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def ci() -> bool:
    return os.environ.get("CI") == "true"
