# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv and
# installs what it needs. CPU torch is pinned and installed first: a loose `torch`
# requirement would pull a multi-GB CUDA build.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
TORCH_PIN := torch==2.13.0
EXTRAS ?= rl,dev,ray
STAMP := $(VENV)/.installed

.PHONY: install demo test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml setup.py
	@start=$$(date +%s); \
	test -x $(PY) || $(PYTHON) -m venv $(VENV) || exit 1; \
	echo "installing $(TORCH_PIN) (CPU) and .[$(EXTRAS)] into $(VENV) ..."; \
	$(PIP) install -q $(TORCH_PIN) > $(VENV)/install.log 2>&1 || { tail -30 $(VENV)/install.log; exit 1; }; \
	$(PIP) install -q -e '.[$(EXTRAS)]' >> $(VENV)/install.log 2>&1 || { tail -30 $(VENV)/install.log; exit 1; }; \
	$(PY) -c "import shockwave_gym, shockwave_agents, torch; assert torch.__version__.startswith('2.13.0'), torch.__version__" || exit 1; \
	echo "install: $$(( $$(date +%s) - start )) s"; \
	touch $@

demo: install
	$(VENV)/bin/shockwave-gym compare --agents all --traces canonical-analogue-120 --seeds 0 --out demo_out

test: install
	$(PY) -m pytest -n 2 -q

lint: install
	$(VENV)/bin/ruff check shockwave_gym agents tests benchmarks

bench: install
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b; done

clean:
	rm -rf $(VENV) demo_out .pytest_cache
