# secperf: `make demo` runs the default evaluation and writes its report; `make test` runs the tests.
VENV ?= .venv
PY := $(VENV)/bin/python
BOOT := $(VENV)/.secperf-bootstrap
BUILT := $(VENV)/.secperf-built
SOURCES := $(shell find src native -type f \( -name '*.py' -o -name '*.c' -o -name '*.h' -o -name '*.toml' -o -name 'CMakeLists.txt' \) 2>/dev/null) CMakeLists.txt pyproject.toml

.PHONY: bootstrap build tools device demo test test-slow test-all test-asan bench clean docs docs-build docs-figures lint-c lint

$(BOOT): scripts/bootstrap pyproject.toml java/californium/pom.xml $(shell find java/californium/src -type f 2>/dev/null)
	scripts/bootstrap
	@touch $@

# nothing is bootstrapped per SECPERF_HOME: the device builds' sources live in the installation's
# read-only cache ($(VENV)/share/secperf/device, filled by scripts/bootstrap) and whatever a
# SECPERF_HOME lacks is fetched into it at first use (secperf/measure/device_sources.py)
bootstrap: $(BOOT)

# scikit-build-core builds native/ with CMake against the system OpenSSL and installs it into the package
$(BUILT): $(BOOT) $(SOURCES)
	$(VENV)/bin/pip install -q --no-build-isolation --no-deps .
	@touch $@

build: $(BUILT) tools

# Other libraries' tools for `secperf crypto --library` (native/libs is built by CMake above):
# Go's standard crypto and the JVM (JMH; JCE and Bouncy Castle from Maven Central), installed into the venv.
# scripts/bootstrap links the Go it chose (>= 1.24 found here, or fetched from the Go module proxy) as
# secperf-go-toolchain in the venv; otherwise any Go found.
GO ?= $(shell ls $(abspath $(VENV))/bin/secperf-go-toolchain 2>/dev/null || command -v go 2>/dev/null || ls /usr/local/go/bin/go /usr/lib/go/bin/go 2>/dev/null | head -1)
GO_TOOL := $(VENV)/bin/secperf-go
JMH_JAR := $(VENV)/share/secperf/java/secperf-jmh.jar

$(GO_TOOL): $(BOOT) $(wildcard go/*.go) go/go.mod
	@if [ -n "$(GO)" ]; then cd go && GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -trimpath -o $(abspath $(GO_TOOL)) . || echo "build: secperf-go needs Go 1.21+ (crypto/ecdh; crypto/mlkem from 1.24): --library go unavailable"; \
	else echo "build: no Go toolchain: secperf crypto --library go is unavailable (scripts/bootstrap installs one)"; fi

# offline first (the local Maven repository usually has everything); its misses are not errors, so its
# output is kept only if the online attempt fails too
$(JMH_JAR): $(BOOT) java/pom.xml $(wildcard java/src/main/java/secperf/jmh/*.java)
	@if command -v mvn >/dev/null && command -v javac >/dev/null; then \
	  log=$$(mktemp) && \
	  { (cd java && mvn -q -B -o package) >$$log 2>&1 || (cd java && mvn -q -B package) >$$log 2>&1 || \
	    { echo "build: mvn package in java/ failed:"; cat $$log; rm -f $$log; false; }; } && rm -f $$log && \
	  mkdir -p $(dir $(JMH_JAR)) && \
	  rm -rf $(dir $(JMH_JAR))lib.new && cp -r java/target/lib $(dir $(JMH_JAR))lib.new && \
	  rm -rf $(dir $(JMH_JAR))lib && mv $(dir $(JMH_JAR))lib.new $(dir $(JMH_JAR))lib && \
	  cp java/target/secperf-jmh.jar $(JMH_JAR).new && mv -f $(JMH_JAR).new $(JMH_JAR); \
	else echo "build: no JDK/Maven: secperf crypto --library jce,bouncycastle is unavailable (scripts/bootstrap installs them)"; fi

tools: $(GO_TOOL) $(JMH_JAR)

# the emulated-device clients (armhf) and counting plugin; otherwise built at first use of `secperf device`
device: build
	$(VENV)/bin/secperf device build

demo: build
	$(VENV)/bin/secperf run

# ends with a count of skipped tests per category (tests/conftest.py); with SECPERF_CI=1 (.ci/run), as
# root, a skip in a category a bootstrapped, built machine must not see fails the run
test: build
	$(PY) -m pytest -q

# the tests marked slow (> 10 s each): fidelity checks CI runs after `make test`
test-slow: build
	$(PY) -m pytest -q -m slow

test-all: build
	$(PY) -m pytest -q -m ''

# the native tools built with AddressSanitizer and UBSan (build/asan), their C unit tests, then the
# native-facing pytest files against them through find_native's overrides (SECPERF_PROBE, SECPERF_NETEM,
# SECPERF_MQTTLOAD).
# The shim and libsecperf_mac stay the installed builds here: an ASan-built shared library loaded
# into a non-ASan process (python-pkcs11 / ctypes in pytest, softhsm tools) needs libasan
# LD_PRELOADed into every process the tests start, which also puts the servers under ASan; their
# code still runs sanitized inside the C unit tests (profile parser) and the ASan probe.
ASAN_DIR := $(CURDIR)/build/asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_PYTESTS := tests/test_native_units.py tests/test_probe.py tests/test_handshake.py tests/test_netem.py \
	tests/test_mqtt_load.py
# link-fidelity bounds (jitter spread, delay under load, round trips within 1-10 ms) hold for the
# release build; the sanitizers slow the relay and the probe several times over
ASAN_DESELECT := -k "not jitter_spreads and not loaded_machine and not round_trips_over_50ms"
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	SECPERF_PROBE=$(ASAN_DIR)/native/probe/secperf-probe SECPERF_NETEM=$(ASAN_DIR)/native/netem/secperf-netem \
	SECPERF_MQTTLOAD=$(ASAN_DIR)/native/loadgen/secperf-mqttload \
	SECPERF_NATIVE_TESTS_BIN=$(ASAN_DIR)/native/tests/secperf-native-tests

test-asan: build
	cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSECPERF_NATIVE_TESTS=ON \
		-DCMAKE_C_FLAGS="$(ASAN_FLAGS)" -DCMAKE_EXE_LINKER_FLAGS="$(ASAN_FLAGS)" \
		-DCMAKE_SHARED_LINKER_FLAGS="$(ASAN_FLAGS)" >/dev/null
	cmake --build $(ASAN_DIR) -j2
	cd $(ASAN_DIR) && $(ASAN_ENV) ctest --output-on-failure
	$(ASAN_ENV) $(PY) -m pytest -q $(ASAN_PYTESTS) $(ASAN_DESELECT)

# the Python checks: ruff's lint over src/ and tests/, ruff's formatter over all of the project's Python
# (src, tests, benchmarks, scripts, the docs' hook), and mypy --strict over all of src/secperf
# (configuration in pyproject.toml)
FORMATTED := src tests benchmarks scripts docs/hooks
lint: $(BOOT)
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/ruff format --check $(FORMATTED)
	$(VENV)/bin/mypy

# clang-tidy over every C source (the check set and why: .clang-tidy), from the compile_commands.json
# of a configure-only build directory (no binaries: find_native never sees it) to which
# scripts/lint_compile_db.py adds the sources built at first use (device clients, QEMU plugin, EDHOC,
# QUIC: their Makefiles' rules with host flags; the DTLS pair: measure/dtls13.py's command); a source
# whose library headers are not on this machine yet is skipped with a printed reason. Any warning fails.
LINT_DIR := $(CURDIR)/build/lint

lint-c: $(BOOT)
	cmake -S . -B $(LINT_DIR) -DSECPERF_NATIVE_TESTS=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
	$(PY) scripts/lint_compile_db.py $(LINT_DIR)
	run-clang-tidy -p $(LINT_DIR)/all -quiet -j2 '$(CURDIR)/native/' >$(LINT_DIR)/clang-tidy.log 2>&1 || \
	  { sed 's/\x1b\[[0-9;]*m//g' $(LINT_DIR)/clang-tidy.log | grep -E 'warning:|error:' | sort -u; echo "lint-c: clang-tidy found the above (full log: $(LINT_DIR)/clang-tidy.log)"; exit 1; }
	@echo "lint-c: clang-tidy clean ($$(grep -c '"file"' $(LINT_DIR)/all/compile_commands.json) sources)"

# every benchmark always runs; the target fails if any misses its band (netem: root, or rootless with a usable TUN node)
bench: build
	@$(PY) benchmarks/fidelity.py; a=$$?; $(PY) benchmarks/handshake_cpu.py; b=$$?; $(PY) benchmarks/shim_overhead.py; c=$$?; $(PY) benchmarks/netem.py; d=$$?; $(PY) benchmarks/mac_speed.py; e=$$?; $(PY) benchmarks/connect_clients.py; f=$$?; $(PY) benchmarks/libraries.py; g=$$?; $(PY) benchmarks/device.py; h=$$?; exit $$((a | b | c | d | e | f | g | h))

# the documentation site (MkDocs + Material; mkdocs.yml). docs/reference/ is generated from the code
# by the hook docs/hooks/reference.py at every build; docs/figures/ by `make docs-figures` (committed).
docs: $(BOOT)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

docs-build: $(BOOT)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir site

# re-measure the small runs behind the tutorials' and the validation page's figures (about a minute)
docs-figures: build
	$(PY) scripts/docs_figures.py

clean:
	rm -rf build $(BUILT)
