# Two commands on a fresh machine: `make demo` and `make test`. Both use one .venv, and each
# extras set has its own stamp, so whichever runs second installs only the difference.
# - demo: the package alone. Every agent in the demo, the learned ones too, decides with
#   numpy: no torch, no stable-baselines3, no Ray.
# - test (and lint, bench): CPU-only torch first, then .[$(EXTRAS)], which then finds torch
#   satisfied. scripts/install_cpu_torch.py picks the torch wheel: a plain
#   `pip install torch` on Linux resolves a CUDA build with ~20 nvidia-*/cuda-* packages.
#   It takes a CPU wheel from the pip configuration's local sources, else from
#   $(TORCH_INDEX), and refuses (exit 1) rather than install a GPU build.
# docs/INSTALL.md has the figures and the lines for installing by hand.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_VERSION := 2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# gurobi and mosek are in the test set so the licensed-solver paths run for real: gurobipy's
# size-limited licence and an unlicensed MOSEK. solver="auto" detects both and stays on
# HiGHS, so Shockwave's figures do not move (docs/SOLVERS.md).
EXTRAS ?= rl,dev,ray,gurobi,mosek
LOG := $(VENV)/install.log
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test

.PHONY: install install-demo demo test lint bench clean

install: $(TEST_STAMP)

install-demo: $(DEMO_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(DEMO_STAMP): pyproject.toml setup.py | $(PY)
	@start=$$(date +%s); \
	echo "installing . (the demo needs no extras) into $(VENV) ..."; \
	$(PIP) install -q -e . >> $(LOG) 2>&1 || { tail -30 $(LOG); exit 1; }; \
	$(PY) -c "import shockwave_gym, shockwave_agents" || exit 1; \
	echo "install (demo): $$(( $$(date +%s) - start )) s"; \
	touch $@

$(TEST_STAMP): pyproject.toml setup.py scripts/install_cpu_torch.py | $(PY)
	@start=$$(date +%s); \
	echo "installing torch==$(TORCH_VERSION) (CPU only) into $(VENV) ..."; \
	$(PY) scripts/install_cpu_torch.py --python $(PY) --version $(TORCH_VERSION) \
		--index-url $(TORCH_INDEX) --log $(LOG) || exit 1; \
	echo "installing .[$(EXTRAS)] into $(VENV) ..."; \
	$(PIP) install -q -e '.[$(EXTRAS)]' >> $(LOG) 2>&1 || { tail -30 $(LOG); exit 1; }; \
	$(PY) scripts/install_cpu_torch.py --python $(PY) --version $(TORCH_VERSION) --check || exit 1; \
	$(PY) -c "import shockwave_gym, shockwave_agents" || exit 1; \
	echo "install (test): $$(( $$(date +%s) - start )) s"; \
	touch $@

demo: $(DEMO_STAMP)
	$(VENV)/bin/shockwave-gym compare --agents all --traces canonical-analogue-120 --seeds 0 --out demo_out

test: $(TEST_STAMP)
	$(PY) -m pytest -n 2 -q

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check shockwave_gym agents tests benchmarks scripts

bench: $(TEST_STAMP)
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b; done

clean:
	rm -rf $(VENV) demo_out .pytest_cache
