# Quick start: `make run` (dashboard on this machine; `make run ARGS="gpu01 gpu02"` for nodes)
# and `make test` (installs what the tests need, then runs the whole suite).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
ARGS   ?=
# Tools the tests drive for real: sshd servers, tmux for the terminal tests, iproute2 for
# network namespaces and tc; Prometheus, promtool and node_exporter for the exporter and the
# Prometheus source; systemd, sudo and util-linux for the real systemd test nodes; stress-ng,
# fio and iperf3 for the burn-in.
SYSTEM_TOOLS := /usr/sbin/sshd /usr/bin/ssh-keygen /usr/bin/tmux /usr/sbin/ip /usr/sbin/tc \
	/usr/bin/prometheus /usr/bin/promtool /usr/bin/prometheus-node-exporter \
	/lib/systemd/systemd /usr/bin/sudo /usr/bin/nsenter /usr/bin/setpriv \
	/usr/bin/stress-ng /usr/bin/fio /usr/bin/iperf3
APT_PACKAGES := openssh-server openssh-client tmux iproute2 prometheus prometheus-node-exporter \
	systemd sudo util-linux stress-ng fio iperf3

.PHONY: run test system-deps screenshots bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	@touch $@

$(VENV)/.test-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

run: $(VENV)/.installed
	$(VENV)/bin/dltui $(ARGS)

# Installs the system tools with apt when one is missing and we are root; otherwise says what
# to install. In CI a missing sshd is a failure, never a skip.
system-deps:
	@missing=""; for t in $(SYSTEM_TOOLS); do [ -x $$t ] || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing $(APT_PACKAGES) (missing:$$missing)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	  else \
	    echo "missing:$$missing -- install: sudo apt-get install $(APT_PACKAGES)" >&2; exit 1; \
	  fi; \
	fi

test: $(VENV)/.test-installed system-deps
	$(PY) -m pytest -q -n 2

screenshots: $(VENV)/.installed
	$(PY) scripts/screenshots.py

bench: $(VENV)/.test-installed
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
