"""Content fingerprints of the weights a learned agent would load.

The evaluation harness reuses a saved cell only when every input of the run is unchanged
(:attr:`shockwave_gym.harness.cells.Cell.key`). For a learned agent the weights are such an
input, yet they live in files outside the agent's name and options: ``ppo`` with no ``path``
loads ``shockwave_agents/pretrained/ppo.npz``, and ``path=runs/ppo`` loads whatever that
directory holds now. :func:`weights_sha256` hashes those files' bytes, so that retrained
weights under the same name and path invalidate the saved cells.

Agents that load no weights get ``None`` and their cell keys stay as they were.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from shockwave_agents.learned.kinds import POLICY_KINDS
from shockwave_agents.learned.pretrained import PRETRAINED_DIR, SHIPPED

#: Registered names that load weights: the shipped policies and the policy kinds.
LEARNED_NAMES = frozenset(SHIPPED) | frozenset(POLICY_KINDS)

_CHUNK = 1 << 20


def policy_files(name: str, options: dict) -> list[Path] | None:
    """The files agent ``name`` with ``options`` reads its policy from (None: no weights,
    or no ``path`` where one is required)."""
    if name not in LEARNED_NAMES:
        return None
    path = options.get("path")
    if path is None:
        if name not in SHIPPED:
            return None
        stem = PRETRAINED_DIR / name
    else:
        path = Path(str(path))
        if path.suffix == ".zip":
            return [path]
        if path.is_dir():
            stem = path / "policy"
        else:
            stem = path.with_suffix("") if path.suffix in (".npz", ".json") else path
    return [stem.with_suffix(".npz"), stem.with_suffix(".json")]


def weights_sha256(name: str, options: dict) -> str | None:
    """SHA-256 over the names and bytes of :func:`policy_files` (a missing file hashes as
    absent: loading it fails with its own error); None for agents without weights."""
    files = policy_files(name, options)
    if files is None:
        return None
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0")
        try:
            with open(file, "rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
        except OSError:
            digest.update(b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()
