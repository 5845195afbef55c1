# Quick start: `make run` (dashboard on this machine; `make run ARGS="gpu01 gpu02"` for nodes)
# and `make test` (installs what the tests need, lints, then runs the whole suite on the oldest
# and the newest supported Python).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
ARGS   ?=
# The tested set is the installed set: every venv here installs through this lock (pip, the
# build backend and every dependency, one pinned version per Python where they differ), made
# by `make lock` and committed, so a fresh clone next month resolves what passed today.
# pyproject.toml keeps open ranges for `pip install .` and pipx users. PIP_CONSTRAINT, not -c:
# it also reaches the isolated environment pip builds dltui's wheel in (setuptools).
LOCK   := constraints.txt
LOCKED := PIP_CONSTRAINT=$(CURDIR)/$(LOCK)
# Tools the tests drive for real: sshd servers, tmux for the terminal tests, iproute2 for
# network namespaces and tc; Prometheus, promtool and node_exporter for the exporter and the
# Prometheus source; systemd, sudo and util-linux for the real systemd test nodes; stress-ng,
# fio and iperf3 for the burn-in; smartmontools for the drive-health reader's real smartctl;
# Chromium for `dltui serve` in a real browser (Playwright drives it; it never downloads a
# browser of its own); slurm-wlm and munge for the real Slurm lab (tests/integration/slurm_lab.py:
# slurmctld + slurmd + munged on loopback with their own key, for drain/resume and job lookups).
SYSTEM_TOOLS := /usr/sbin/sshd /usr/bin/ssh-keygen /usr/bin/tmux /usr/sbin/ip /usr/sbin/tc \
	/usr/bin/prometheus /usr/bin/promtool /usr/bin/prometheus-node-exporter \
	/lib/systemd/systemd /usr/bin/sudo /usr/bin/nsenter /usr/bin/setpriv \
	/usr/bin/stress-ng /usr/bin/fio /usr/bin/iperf3 /usr/bin/chromium /usr/sbin/smartctl \
	/usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/scontrol /usr/bin/sbatch /usr/sbin/munged
APT_PACKAGES := openssh-server openssh-client tmux iproute2 prometheus prometheus-node-exporter \
	systemd sudo util-linux stress-ng fio iperf3 chromium smartmontools slurm-wlm munge
# The references `make bench` measures against (glances: bench/ui_cpu.py pip-installs it;
# btop: bench/outside.py, with a config directory of its own).
BENCH_TOOLS := /usr/bin/prometheus-node-exporter /usr/bin/tmux /usr/bin/btop
BENCH_APT_PACKAGES := prometheus-node-exporter tmux btop
# `make screenshots` draws the burn-in report's HTML page with headless Chromium.
SCREENSHOT_TOOLS := /usr/bin/chromium
SCREENSHOT_APT_PACKAGES := chromium
# The suite runs on the oldest and the newest supported operator Python (pyenv builds, found
# by scripts/find-python); one venv each. Under CI=true a missing interpreter is a failure.
# The oldest runs every test. The newest leaves out those marked oldest_python_only (pictures,
# and checks whose subject runs outside the operator's Python: node side, systemd, Prometheus,
# a wheel build), keeping a smoke of each of those paths: the whole suite twice does not fit the
# 2-core CI's 10 minutes, and those tests could only fail there where they fail on the oldest.
TEST_PYTHONS ?= 3.10 3.13
# Four workers on two cores: the suite mostly waits (sshd handshakes, systemd boots, nodes'
# sampling intervals), two workers kept the cores a third busy. Measured here on 3.10: -n 2 479 s,
# -n 4 380 s; -n 4 under stress-ng --cpu 2 549 s, every test passing (-n 2 under it 624-829 s).
PYTEST_ARGS ?= -q -n 4
NEWEST_ONLY_ARGS := -m "not oldest_python_only"

.PHONY: run test lint system-deps bench-deps screenshots bench clean lock test-latest $(TEST_PYTHONS:%=test-%)

$(VENV)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(LOCKED) $(PY) -m pip install --quiet --upgrade pip
	$(LOCKED) $(PY) -m pip install --quiet -e .
	@touch $@

$(VENV)/.test-installed: $(VENV)/.installed
	$(LOCKED) $(PY) -m pip install --quiet -e '.[test]'
	@touch $@

$(VENV)/.lint-installed: $(VENV)/.installed
	$(LOCKED) $(PY) -m pip install --quiet -e '.[lint]'
	@touch $@

# One venv per tested Python: .venv-3.10, .venv-3.13 (make .venv-3.10/.test-installed).
.venv-%/.test-installed: pyproject.toml $(LOCK)
	@py=$$(scripts/find-python $*) || { echo "Python $* not found: pyenv install $*" >&2; exit 1; }; \
	rm -rf .venv-$* && $$py -m venv .venv-$* && \
	$(LOCKED) .venv-$*/bin/python -m pip install --quiet --upgrade pip && \
	$(LOCKED) .venv-$*/bin/python -m pip install --quiet -e '.[test]'
	@touch $@

# Refresh the lock: the newest versions pyproject.toml allows, resolved once for every Python
# from the oldest supported up (uv's universal resolution writes a marker where two Pythons
# need different versions), plus pip and the build backend. Run `make test-latest` first; commit
# the lock with what it needed.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet uv
	printf 'pip\nsetuptools>=77\n' | .venv-lock/bin/uv pip compile pyproject.toml - --all-extras \
	  --universal --python-version $(firstword $(TEST_PYTHONS)) --custom-compile-command 'make lock' \
	  --quiet --output-file $(LOCK)
	rm -rf .venv-lock

# New versions on purpose, not by surprise (not part of `make test`): a fresh venv on the newest
# tested Python with the newest versions pyproject.toml allows, no lock; prints what moved since
# the lock, then lints and runs the whole suite there.
LATEST_PYTHON := $(lastword $(TEST_PYTHONS))
test-latest: system-deps
	@py=$$(scripts/find-python $(LATEST_PYTHON)) || { echo "Python $(LATEST_PYTHON) not found" >&2; exit 1; }; \
	rm -rf .venv-latest && $$py -m venv .venv-latest && \
	.venv-latest/bin/python -m pip install --quiet --upgrade pip && \
	.venv-latest/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[test,lint]'
	@echo "== newer than $(LOCK) (package: locked -> latest)"
	@.venv-latest/bin/python scripts/lock_drift.py $(LOCK)
	.venv-latest/bin/ruff check && .venv-latest/bin/mypy && .venv-latest/bin/mypy --python-version 3.8 dltui/node
	@echo "== tests on Python $(LATEST_PYTHON), newest dependencies"
	.venv-latest/bin/python -m pytest $(PYTEST_ARGS)

run: $(VENV)/.installed
	$(VENV)/bin/dltui $(ARGS)

# Installs tools ($(1)) with apt ($(2)) when one is missing and we are root; otherwise says
# what to install. In CI a missing sshd is a failure, never a skip.
define apt_install
	@missing=""; for t in $(1); do [ -x $$t ] || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing $(2) (missing:$$missing)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
	  else \
	    echo "missing:$$missing -- install: sudo apt-get install $(2)" >&2; exit 1; \
	  fi; \
	fi
endef

system-deps:
	$(call apt_install,$(SYSTEM_TOOLS),$(APT_PACKAGES))

bench-deps:
	$(call apt_install,$(BENCH_TOOLS),$(BENCH_APT_PACKAGES))

# ruff (rules and limits in pyproject.toml) and mypy on dltui/, then on dltui/node/ as Python
# 3.8; the node code's other checks (stdlib only, 3.8 syntax) and the layering are tests
# (tests/unit/test_boundaries.py).
lint: $(VENV)/.lint-installed
	$(VENV)/bin/ruff check
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --python-version 3.8 dltui/node

# One Python after the other: side by side (make -j2) they overload 2 cores and the real-sshd
# snapshot tests miss their windows.
test: lint system-deps $(TEST_PYTHONS:%=test-%)

# Outside CI a Python that is not installed is skipped with a warning; in CI it fails.
$(TEST_PYTHONS:%=test-%): test-%: system-deps
	@if ! scripts/find-python $* >/dev/null; then \
	  if [ "$$CI" = true ]; then echo "Python $* not found (CI=true: failing)" >&2; exit 1; fi; \
	  echo "WARNING: Python $* not found, its test run is skipped (pyenv install $*)" >&2; exit 0; \
	fi; \
	$(MAKE) --no-print-directory .venv-$*/.test-installed && \
	echo "== tests on Python $*" && .venv-$*/bin/python -m pytest $(PYTEST_ARGS) \
	  $(if $(filter $*,$(firstword $(TEST_PYTHONS))),,$(NEWEST_ONLY_ARGS))

screenshots: $(VENV)/.installed
	$(call apt_install,$(SCREENSHOT_TOOLS),$(SCREENSHOT_APT_PACKAGES))
	$(PY) scripts/screenshots.py

# bench/_*.py are a bench's helpers, not benches
bench: $(VENV)/.test-installed bench-deps
	@for b in bench/[!_]*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .venv-* build *.egg-info .pytest_cache .mypy_cache .ruff_cache
