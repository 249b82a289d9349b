"""Install a CPU-only build of torch into a Python environment, or refuse.

    python3 scripts/install_cpu_torch.py --python .venv/bin/python --version 2.13.0
    python3 scripts/install_cpu_torch.py --python .venv/bin/python --version 2.13.0 --check

On Linux, ``pip install torch==X`` from PyPI resolves a CUDA build that pulls in about 20
``nvidia-*``/``cuda-*`` packages (gigabytes) that a CPU-only project never uses. So this
script installs torch in this order and stops at the first source that gives a CPU build:

1. the pip configuration's local sources (``find-links``) with ``--no-index``: nothing is
   downloaded from an index. The candidate's metadata is read first (``--dry-run
   --report``) and a CUDA/ROCm build is skipped before it is installed;
2. PyTorch's CPU-only wheel index (``--index-url``, default
   https://download.pytorch.org/whl/cpu; point it at a mirror with ``--index-url``).

After installing, the environment is checked by importing torch: ``torch.version.cuda``
and ``torch.version.hip`` must be ``None`` and no ``nvidia-*``/``cuda-*``/``triton``
distribution may be installed. When no source gives a CPU build the script prints why and
exits 1 rather than install a GPU build. ``--check`` only runs that check (exit 0 for a
CPU build of the pinned version, 1 otherwise), e.g. after installing packages that
depend on torch, to prove none of them replaced it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: Distributions that only a GPU build of torch pulls in (normalised names).
GPU_DIST_PREFIXES = ("nvidia-", "cuda-", "triton", "pytorch-triton")
#: A local version label naming a GPU build, e.g. ``2.13.0+cu130`` or ``2.13.0+rocm6.4``.
GPU_LOCAL_LABEL = re.compile(r"^(cu\d|rocm)")
VERSION_PATTERN = re.compile(r"^\d+(\.\d+){1,2}$")
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA_MARKER = re.compile(r"\bextra\s*==")

#: Run inside the target environment: what torch it has, as one JSON line.
_CHECK_SNIPPET = """
import json, importlib.metadata as md
prefixes = GPU_DIST_PREFIXES
names = {(d.metadata["Name"] or "").lower().replace("_", "-") for d in md.distributions()}
info = {"gpu_dists": sorted(n for n in names if n.startswith(prefixes)), "torch": None}
try:
    import torch
except ImportError:
    pass
except Exception as exc:
    info["error"] = f"{type(exc).__name__}: {exc}"
else:
    info.update(torch=torch.__version__, cuda=torch.version.cuda,
                hip=getattr(torch.version, "hip", None))
print(json.dumps(info))
""".replace("GPU_DIST_PREFIXES", repr(GPU_DIST_PREFIXES))


class InstallRefused(Exception):
    """No CPU build could be installed; the message says why and what to do."""


def normalised_name(requirement: str) -> str:
    """The distribution name a PEP 508 requirement string starts with, normalised."""
    match = _REQUIREMENT_NAME.match(requirement)
    return match.group(1).lower().replace("_", "-").replace(".", "-") if match else ""


def gpu_markers(metadata: dict) -> list[str]:
    """Why a wheel's metadata (a pip ``--report`` entry) describes a GPU build: a CUDA/ROCm
    local version label, or requirements on GPU runtime packages. Empty for a CPU build.
    Requirements that only an extra pulls in (``extra == "..."``) do not count."""
    reasons = []
    local = str(metadata.get("version", "")).partition("+")[2]
    if GPU_LOCAL_LABEL.match(local):
        reasons.append(f"version label +{local}")
    for requirement in metadata.get("requires_dist") or []:
        if _EXTRA_MARKER.search(requirement.partition(";")[2]):
            continue
        if normalised_name(requirement).startswith(GPU_DIST_PREFIXES):
            reasons.append(f"requires {normalised_name(requirement)}")
    return reasons


def build_problems(info: dict, version: str) -> list[str]:
    """Why the torch an environment has (from the check snippet) is not the CPU build of
    ``version``; empty when it is."""
    problems = []
    if info.get("error"):
        problems.append(f"import torch fails ({info['error']})")
    elif info.get("torch") is None:
        problems.append("torch is not installed")
    else:
        if str(info["torch"]).partition("+")[0] != version:
            problems.append(f"torch is {info['torch']}, not {version}")
        if info.get("cuda"):
            problems.append(f"torch is built for CUDA {info['cuda']}")
        if info.get("hip"):
            problems.append(f"torch is built for ROCm {info['hip']}")
    if info.get("gpu_dists"):
        problems.append("GPU packages installed: " + ", ".join(info["gpu_dists"]))
    return problems


class Installer:
    """Runs pip in the target environment (``python -m pip``) and checks the result."""

    def __init__(self, python: str, version: str, index_url: str, log: Path | None):
        self.python, self.version, self.index_url, self.log = python, version, index_url, log
        self.tried: list[str] = []

    def say(self, message: str) -> None:
        print(f"install_cpu_torch: {message}", flush=True)

    def pip(self, *args: str) -> int:
        command = [self.python, "-m", "pip", *args]
        if self.log is None:
            return subprocess.run(command, check=False).returncode
        with self.log.open("a") as log:
            log.write("$ " + " ".join(command) + "\n")
            log.flush()
            return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False).returncode

    def inspect(self) -> dict:
        """What torch the environment has (see :data:`_CHECK_SNIPPET`)."""
        done = subprocess.run([self.python, "-c", _CHECK_SNIPPET], capture_output=True, text=True, check=False)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise InstallRefused(f"cannot run {self.python}: {done.stderr.strip() or 'no output'}")
        return json.loads(lines[-1])

    def local_candidate(self) -> dict | None:
        """pip's pick for ``torch==version`` from the configured local sources alone (its
        ``--report`` entry), without installing or downloading from an index."""
        with tempfile.TemporaryDirectory() as scratch:
            report = Path(scratch) / "report.json"
            code = self.pip("install", "--dry-run", "--ignore-installed", "--no-deps", "--no-index",
                            "--quiet", "--report", str(report), f"torch=={self.version}")
            if code != 0 or not report.is_file():
                return None
            entries = json.loads(report.read_text()).get("install", [])
        return next((e for e in entries if normalised_name(e["metadata"]["name"]) == "torch"), None)

    def verified(self, source: str) -> None:
        problems = build_problems(self.inspect(), self.version)
        if problems:
            raise InstallRefused(
                f"torch installed from {source} is not a CPU build of {self.version}: "
                + "; ".join(problems) + f". Delete the environment of {self.python} and install "
                f"by hand: {manual_line(self.version, self.index_url)}"
            )
        self.say(f"torch {self.version} (CPU) installed from {source}")

    def from_local_sources(self) -> bool:
        candidate = self.local_candidate()
        if candidate is None:
            self.tried.append("local sources: no torch==" + self.version)
            self.say(f"no torch=={self.version} in the configured local sources")
            return False
        url = candidate.get("download_info", {}).get("url", "")
        reasons = gpu_markers(candidate["metadata"])
        if reasons:
            self.tried.append(f"local sources: {url} is a GPU build ({', '.join(reasons)})")
            self.say(f"skipping {url}: a GPU build ({', '.join(reasons)})")
            return False
        self.say(f"installing {url}")
        if self.pip("install", f"torch @ {url}") != 0:
            raise InstallRefused(f"pip could not install {url}{self.log_hint()}")
        self.verified(url)
        return True

    def from_cpu_index(self) -> bool:
        requirement = cpu_requirement(self.version)
        self.say(f"installing {requirement} from {self.index_url}")
        if self.pip("install", "--index-url", self.index_url, requirement) != 0:
            self.tried.append(f"{self.index_url}: pip failed{self.log_hint()}")
            return False
        self.verified(self.index_url)
        return True

    def log_hint(self) -> str:
        return f" (pip's output: {self.log})" if self.log else ""

    def install(self) -> None:
        info = self.inspect()
        problems = build_problems(info, self.version)
        if not problems:
            self.say(f"torch {info['torch']} (CPU) is already installed")
            return
        if info.get("cuda") or info.get("hip") or info.get("gpu_dists"):
            raise InstallRefused(
                f"the environment of {self.python} already has a GPU build: {'; '.join(problems)}. "
                "Delete that environment (make clean) and run again."
            )
        if self.from_local_sources() or self.from_cpu_index():
            return
        raise InstallRefused(
            f"refusing to install torch {self.version}: no CPU build found ("
            + "; ".join(self.tried)
            + "). A plain `pip install torch` on Linux would bring a CUDA build. Install the CPU "
            f"build by hand: {manual_line(self.version, self.index_url)}, or pass --index-url "
            "(make TORCH_INDEX=...) naming a mirror of PyTorch's CPU index."
        )

    def check(self) -> None:
        info = self.inspect()
        problems = build_problems(info, self.version)
        if problems:
            raise InstallRefused(f"{self.python}: " + "; ".join(problems))
        self.say(f"torch {info['torch']} is a CPU build")


def cpu_requirement(version: str, platform: str = sys.platform) -> str:
    """The requirement to ask PyTorch's CPU index for. Its Linux and Windows wheels carry
    the ``+cpu`` label; pinning it keeps any other configured index from supplying a CUDA
    wheel of the same version. Its macOS wheels carry no label (all macOS builds are CPU)."""
    return f"torch=={version}" if platform == "darwin" else f"torch=={version}+cpu"


def manual_line(version: str, index_url: str = PYTORCH_CPU_INDEX) -> str:
    return f"pip install --index-url {index_url} '{cpu_requirement(version)}'"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter of the target environment")
    parser.add_argument("--version", required=True, help="torch release to install, e.g. 2.13.0")
    parser.add_argument("--index-url", default=PYTORCH_CPU_INDEX, help="PyTorch CPU wheel index (or a mirror)")
    parser.add_argument("--log", type=Path, help="append pip's output here instead of printing it")
    parser.add_argument("--check", action="store_true", help="only check the installed torch")
    args = parser.parse_args(argv)
    if not VERSION_PATTERN.match(args.version):
        parser.error(f"--version: expected a release like 2.13.0, got {args.version!r}")
    installer = Installer(args.python, args.version, args.index_url, args.log)
    try:
        installer.check() if args.check else installer.install()
    except InstallRefused as exc:
        print(f"install_cpu_torch: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
