"""shockwave-gym is installed from a clone (it is on no package index): every install hint,
in error messages and in the docs, says how to do that, CPU torch first for training."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.errors import install_hint

REPO = Path(__file__).resolve().parents[1]
#: An install from an index under the project's name: `pip install shockwave-gym`, `'shockwave-gym[rl]'`.
FROM_AN_INDEX = re.compile(r"pip install (-U )?['\"]?shockwave-gym\b|shockwave-gym\[")


def test_train_without_the_rl_extra_says_how_to_install_it_from_the_clone(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "stable_baselines3" else real(name, *a))
    assert main(["train", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not FROM_AN_INDEX.search(err)
    for words in ("in your clone of the repository", "make install", "CPU torch first",
                  "scripts/install_cpu_torch.py", "pip install -e '.[rl]'", "docs/INSTALL.md"):
        assert words in err


def test_install_hint_names_torch_only_for_the_rl_extra():
    assert "install_cpu_torch" not in install_hint("ray") and "pip install -e '.[ray]'" in install_hint("ray")
    assert install_hint("rl").index("CPU torch first") < install_hint("rl").index("pip install -e '.[rl]'")


@pytest.mark.parametrize("path", [
    "README.md", *(str(p.relative_to(REPO)) for p in sorted((REPO / "docs").glob("*.md"))),
    *(str(p.relative_to(REPO)) for p in sorted((REPO / "notebooks").rglob("*.ipynb"))),
    *(str(p.relative_to(REPO)) for p in sorted((REPO / "shockwave_gym").rglob("*.py"))),
    *(str(p.relative_to(REPO)) for p in sorted((REPO / "agents").rglob("*.py"))),
])
def test_no_page_or_message_installs_the_package_from_an_index(path):
    text = (REPO / path).read_text(encoding="utf-8")
    found = [m.group(0) for m in FROM_AN_INDEX.finditer(text)]
    assert not found, f"{path}: {found} (install from the clone: docs/INSTALL.md)"
