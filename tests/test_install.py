"""scripts/install_cpu_torch.py: which torch wheel `make test` installs, without network.

Most cases run the script against a stub interpreter that plays pip (recording each call)
and the import check; one runs real pip in a fresh venv on fake torch wheels, the way a
stock machine with a configured find-links directory and a CPU index would look.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "install_cpu_torch.py"
INDEX = "https://cpu-index.invalid/whl/cpu"


def _load_script():
    spec = importlib.util.spec_from_file_location("install_cpu_torch", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ict = _load_script()

CPU = {"torch": "2.13.0+cpu", "cuda": None, "hip": None, "gpu_dists": []}
CUDA = {"torch": "2.13.0", "cuda": "13.0", "hip": None, "gpu_dists": ["cuda-toolkit", "nvidia-cudnn-cu13"]}
ABSENT = {"torch": None, "gpu_dists": []}
CUDA_REQUIRES = [
    "filelock",
    'nvidia-cudnn-cu13==9.20.0.48; platform_system == "Linux"',
    'triton==3.7.1; platform_system == "Linux" and python_version < "3.15"',
]

STUB = '''#!{python}
"""Plays `python -m pip ...` and `python -c <check>` for tests/test_install.py."""
import json, os, sys
scenario = json.load(open(os.environ["STUB_SCENARIO"]))
state_file = scenario["state_file"]
args = sys.argv[1:]
if args[0] == "-c":
    print(json.dumps(json.load(open(state_file))))
    sys.exit(0)
assert args[:2] == ["-m", "pip"], args
args = args[2:]
with open(scenario["calls"], "a") as calls:
    calls.write(json.dumps(args) + "\\n")
def become(state):
    json.dump(state, open(state_file, "w"))
if "--dry-run" in args:
    local = scenario["local"]
    if local is None:
        sys.exit(1)
    report = {{"install": [{{"download_info": {{"url": local["url"]}},
                             "metadata": {{"name": "torch", "version": local["version"],
                                          "requires_dist": local["requires_dist"]}}}}]}}
    json.dump(report, open(args[args.index("--report") + 1], "w"))
    sys.exit(0)
if any(a.startswith("torch @ ") for a in args):
    become(scenario["local_installs"])
    sys.exit(0)
if "--index-url" in args:
    if scenario["index_installs"] is None:
        sys.exit(1)
    become(scenario["index_installs"])
    sys.exit(0)
sys.exit(99)
'''


def run_with_stub(tmp_path, *, installed=ABSENT, local=None, local_installs=CPU, index_installs=CPU, extra=()):
    """Run the script against the stub; (exit code, output, pip calls made)."""
    stub = tmp_path / "python"
    stub.write_text(STUB.format(python=sys.executable))
    stub.chmod(0o755)
    state_file, calls = tmp_path / "state.json", tmp_path / "calls.jsonl"
    state_file.write_text(json.dumps(installed))
    scenario = {"state_file": str(state_file), "calls": str(calls), "local": local,
                "local_installs": local_installs, "index_installs": index_installs}
    (tmp_path / "scenario.json").write_text(json.dumps(scenario))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--python", str(stub), "--version", "2.13.0", "--index-url", INDEX, *extra],
        capture_output=True, text=True, env={**os.environ, "STUB_SCENARIO": str(tmp_path / "scenario.json")},
        timeout=60,
    )
    made = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return done.returncode, done.stdout + done.stderr, made


def local_wheel(version="2.13.0+cpu", requires=("filelock", "sympy>=1.13.3")):
    return {"url": f"file:///wheels/torch-{version}-cp311-cp311-manylinux_2_28_x86_64.whl",
            "version": version, "requires_dist": list(requires)}


# -- decisions on metadata -------------------------------------------------------------------------


def test_gpu_markers_flag_cuda_metadata_and_pass_cpu_metadata():
    assert ict.gpu_markers({"version": "2.13.0+cpu", "requires_dist": ["filelock", "jinja2"]}) == []
    assert ict.gpu_markers({"version": "2.13.0", "requires_dist": CUDA_REQUIRES}) == [
        "requires nvidia-cudnn-cu13", "requires triton"]
    assert ict.gpu_markers({"version": "2.13.0+cu130", "requires_dist": []}) == ["version label +cu130"]
    assert ict.gpu_markers({"version": "2.13.0+rocm6.4"}) == ["version label +rocm6.4"]
    # PyPI's wheel lists the CUDA runtime as `cuda-toolkit[...]` and `cuda-bindings`
    assert ict.gpu_markers({"version": "2.13.0", "requires_dist": [
        'cuda-toolkit[cublas,cudart]==13.0.3; platform_system == "Linux"']}) == ["requires cuda-toolkit"]
    # a GPU package pulled in only by an extra does not make the build a GPU one
    assert ict.gpu_markers({"version": "2.13.0", "requires_dist": ['triton; extra == "gpu"']}) == []


def test_build_problems_name_what_is_wrong():
    assert ict.build_problems(CPU, "2.13.0") == []
    problems = ict.build_problems(CUDA, "2.13.0")
    assert "torch is built for CUDA 13.0" in problems
    assert "GPU packages installed: cuda-toolkit, nvidia-cudnn-cu13" in problems
    assert ict.build_problems(ABSENT, "2.13.0") == ["torch is not installed"]
    assert ict.build_problems({**CPU, "torch": "2.12.1+cpu"}, "2.13.0") == ["torch is 2.12.1+cpu, not 2.13.0"]
    assert ict.build_problems({"torch": None, "error": "OSError: libx", "gpu_dists": []}, "2.13.0") == [
        "import torch fails (OSError: libx)"]


def test_cpu_index_requirement_pins_the_cpu_label_except_on_macos():
    assert ict.cpu_requirement("2.13.0", "linux") == "torch==2.13.0+cpu"
    assert ict.cpu_requirement("2.13.0", "win32") == "torch==2.13.0+cpu"
    assert ict.cpu_requirement("2.13.0", "darwin") == "torch==2.13.0"


# -- the script against a stub pip ----------------------------------------------------------------


def test_local_cpu_wheel_is_installed_by_its_url_and_no_index_is_asked(tmp_path):
    wheel = local_wheel()
    code, out, calls = run_with_stub(tmp_path, local=wheel)
    assert code == 0, out
    probe, install = calls
    assert probe[:1] == ["install"] and {"--dry-run", "--no-index", "--no-deps"} <= set(probe)
    assert probe[-1] == "torch==2.13.0"
    assert install == ["install", f"torch @ {wheel['url']}"]
    assert "(CPU) installed from file:///wheels/" in out


@pytest.mark.parametrize("wheel", [local_wheel("2.13.0", CUDA_REQUIRES), local_wheel("2.13.0+cu130", ())])
def test_local_gpu_wheel_is_skipped_for_the_cpu_index(tmp_path, wheel):
    code, out, calls = run_with_stub(tmp_path, local=wheel)
    assert code == 0, out
    assert "skipping" in out and "a GPU build" in out
    assert not any(arg.startswith("torch @") for call in calls for arg in call)
    assert calls[-1] == ["install", "--index-url", INDEX, "torch==2.13.0+cpu"]


def test_no_local_wheel_falls_back_to_the_cpu_index(tmp_path):
    code, out, calls = run_with_stub(tmp_path, local=None)
    assert code == 0, out
    assert len(calls) == 2 and calls[1] == ["install", "--index-url", INDEX, "torch==2.13.0+cpu"]
    assert f"installed from {INDEX}" in out


def test_unreachable_cpu_index_is_refused_with_the_manual_line(tmp_path):
    code, out, calls = run_with_stub(tmp_path, local=local_wheel("2.13.0", CUDA_REQUIRES), index_installs=None)
    assert code == 1
    assert "refusing to install torch 2.13.0" in out
    assert "requires nvidia-cudnn-cu13" in out  # says why the local wheel was not taken
    assert f"pip install --index-url {INDEX} 'torch==2.13.0+cpu'" in out
    # nothing but the probe and the CPU index was asked: never a plain `pip install torch`
    assert [call for call in calls if "--dry-run" not in call and "--index-url" not in call] == []


def test_a_gpu_build_from_the_index_is_reported_not_accepted(tmp_path):
    code, out, _ = run_with_stub(tmp_path, local=None, index_installs=CUDA)
    assert code == 1
    assert "is not a CPU build of 2.13.0" in out and "CUDA 13.0" in out


def test_a_local_wheel_whose_import_shows_cuda_is_refused(tmp_path):
    code, out, _ = run_with_stub(tmp_path, local=local_wheel(), local_installs=CUDA)
    assert code == 1
    assert "nvidia-cudnn-cu13" in out and "Delete the environment" in out


def test_installed_cpu_build_needs_no_pip(tmp_path):
    code, out, calls = run_with_stub(tmp_path, installed=CPU, local=local_wheel())
    assert (code, calls) == (0, [])
    assert "already installed" in out


def test_installed_gpu_build_is_refused_without_touching_it(tmp_path):
    code, out, calls = run_with_stub(tmp_path, installed=CUDA, local=local_wheel())
    assert (code, calls) == (1, [])
    assert "already has a GPU build" in out and "make clean" in out


def test_check_mode_passes_cpu_and_fails_gpu_packages(tmp_path):
    assert run_with_stub(tmp_path, installed=CPU, extra=["--check"])[:1] == (0,)
    code, out, calls = run_with_stub(tmp_path, installed={**CPU, "gpu_dists": ["nvidia-nccl-cu13"]}, extra=["--check"])
    assert (code, calls) == (1, [])
    assert "GPU packages installed: nvidia-nccl-cu13" in out


def test_bad_version_is_a_usage_error():
    done = subprocess.run([sys.executable, str(SCRIPT), "--version", "latest"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "--version: expected a release like 2.13.0, got 'latest'" in done.stderr


# -- real pip, fake wheels ------------------------------------------------------------------------


def make_wheel(folder: Path, version: str, requires: list[str], cuda: str | None) -> Path:
    """A minimal installable `torch` wheel whose torch.version.cuda is ``cuda``."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"torch-{version}.dist-info"
    files = {
        "torch/__init__.py": f"from . import version\n__version__ = {version!r}\n",
        "torch/version.py": f"cuda = {cuda!r}\nhip = None\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: " + version + "\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    path = folder / f"torch-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return path


def test_real_pip_refuses_then_falls_back_to_a_cpu_index(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    # a stock-looking pip: no config files; find-links holds a CUDA build of the pinned version
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_FIND_LINKS=str(tmp_path / "links"),
               PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    make_wheel(tmp_path / "links", "2.13.0", CUDA_REQUIRES[1:], cuda="13.0")
    index = tmp_path / "cpu-index"
    (index / "torch").mkdir(parents=True)

    def install():
        return subprocess.run(
            [sys.executable, str(SCRIPT), "--python", python, "--version", "2.13.0",
             "--index-url", index.as_uri(), "--log", str(tmp_path / "pip.log")],
            capture_output=True, text=True, env=env, timeout=300)

    refused = install()  # the CPU index has no torch yet
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "skipping" in refused.stdout and "refusing to install torch 2.13.0" in refused.stderr
    inspect = [python, "-c", "import importlib.util as u; print(u.find_spec('torch'))"]
    assert subprocess.run(inspect, capture_output=True, text=True).stdout.strip() == "None"

    wheel = make_wheel(index / "torch", "2.13.0+cpu", [], cuda=None)
    href = wheel.name.replace("+", "%2B")  # a file:// index is read from each project's index.html
    (index / "torch" / "index.html").write_text(f'<html><body><a href="{href}">{wheel.name}</a></body></html>')
    done = install()
    assert done.returncode == 0, done.stdout + done.stderr + (tmp_path / "pip.log").read_text()
    assert f"installed from {index.as_uri()}" in done.stdout
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert version == ["2.13.0+cpu", "None"]


# -- the Makefile wires it in ---------------------------------------------------------------------


def make_dry_run(target: str, tmp_path) -> str:
    done = subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={tmp_path / 'venv'}"],
                          capture_output=True, text=True, check=True, timeout=60)
    return done.stdout


def test_make_test_installs_cpu_torch_before_the_extras_and_checks_it_after(tmp_path):
    recipe = make_dry_run("test", tmp_path)
    first = recipe.index("install_cpu_torch.py")
    extras = recipe.index("-e '.[rl,dev,ray,gurobi,mosek]'")
    check = recipe.index("--check")
    assert first < extras < check
    assert "pip install -q torch" not in recipe and "pip install torch" not in recipe
    # issue 18: the licensed-solver paths are exercised for real, so the test venv has them
    # (solver=auto detects the size-limited Gurobi licence and stays on HiGHS)


def test_make_demo_installs_the_package_without_torch_or_ray(tmp_path):
    recipe = make_dry_run("demo", tmp_path)
    assert "install -q -e . " in recipe
    assert "torch" not in recipe and "ray" not in recipe
    assert "compare --agents all" in recipe
