# secperf: `make demo` runs the default evaluation and writes its report; `make test` runs the tests.
VENV ?= .venv
PY := $(VENV)/bin/python
BOOT := $(VENV)/.secperf-bootstrap
BUILT := $(VENV)/.secperf-built
SOURCES := $(shell find src native -type f \( -name '*.py' -o -name '*.c' -o -name '*.h' -o -name '*.toml' -o -name 'CMakeLists.txt' \) 2>/dev/null) CMakeLists.txt pyproject.toml

.PHONY: bootstrap build device demo test test-all bench clean

$(BOOT): scripts/bootstrap pyproject.toml
	scripts/bootstrap
	@touch $@

bootstrap: $(BOOT)

# scikit-build-core builds native/ with CMake against the system OpenSSL and installs it into the package
$(BUILT): $(BOOT) $(SOURCES)
	$(VENV)/bin/pip install -q --no-build-isolation --no-deps .
	@touch $@

build: $(BUILT)

# the emulated-device clients (armhf) and counting plugin; otherwise built at first use of `secperf device`
device: build
	$(VENV)/bin/secperf device build

demo: build
	$(VENV)/bin/secperf run

test: build
	$(PY) -m pytest -q

test-all: build
	$(PY) -m pytest -q -m ''

# every benchmark always runs; the target fails if any misses its band (netem: root, or rootless with a usable TUN node)
bench: build
	@$(PY) benchmarks/fidelity.py; a=$$?; $(PY) benchmarks/handshake_cpu.py; b=$$?; $(PY) benchmarks/shim_overhead.py; c=$$?; $(PY) benchmarks/netem.py; d=$$?; $(PY) benchmarks/mac_speed.py; e=$$?; $(PY) benchmarks/connect_clients.py; f=$$?; $(PY) benchmarks/device.py; g=$$?; exit $$((a | b | c | d | e | f | g))

clean:
	rm -rf build $(BUILT)
