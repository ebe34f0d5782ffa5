# secperf: `make demo` runs the default evaluation and writes its report; `make test` runs the tests.
VENV ?= .venv
PY := $(VENV)/bin/python
BOOT := $(VENV)/.secperf-bootstrap
BUILT := $(VENV)/.secperf-built
SOURCES := $(shell find src native -type f \( -name '*.py' -o -name '*.c' -o -name '*.h' -o -name '*.toml' -o -name 'CMakeLists.txt' \) 2>/dev/null) CMakeLists.txt pyproject.toml

.PHONY: bootstrap build tools demo test test-all bench clean

$(BOOT): scripts/bootstrap pyproject.toml
	scripts/bootstrap
	@touch $@

bootstrap: $(BOOT)

# scikit-build-core builds native/ with CMake against the system OpenSSL and installs it into the package
$(BUILT): $(BOOT) $(SOURCES)
	$(VENV)/bin/pip install -q --no-build-isolation --no-deps .
	@touch $@

build: $(BUILT) tools

# Other libraries' tools for `secperf crypto --library` (native/libs is built by CMake above):
# Go's standard crypto and the JVM (JMH; JCE and Bouncy Castle from Maven Central), installed into the venv.
GO ?= $(shell command -v go 2>/dev/null || ls /usr/local/go/bin/go /usr/lib/go/bin/go 2>/dev/null | head -1)
GO_TOOL := $(VENV)/bin/secperf-go
JMH_JAR := $(VENV)/share/secperf/java/secperf-jmh.jar

$(GO_TOOL): $(BOOT) $(wildcard go/*.go) go/go.mod
	@if [ -n "$(GO)" ]; then cd go && GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -trimpath -o $(abspath $(GO_TOOL)) . || echo "build: secperf-go needs Go 1.21+ (crypto/ecdh; crypto/mlkem from 1.24): --library go unavailable"; \
	else echo "build: no Go toolchain: secperf crypto --library go is unavailable (scripts/bootstrap installs one)"; fi

$(JMH_JAR): $(BOOT) java/pom.xml $(wildcard java/src/main/java/secperf/jmh/*.java)
	@if command -v mvn >/dev/null && command -v javac >/dev/null; then \
	  (cd java && (mvn -q -B -o package 2>/dev/null || mvn -q -B package)) && mkdir -p $(dir $(JMH_JAR)) && \
	  rm -rf $(dir $(JMH_JAR))lib && cp -r java/target/lib $(dir $(JMH_JAR))lib && cp java/target/secperf-jmh.jar $(JMH_JAR); \
	else echo "build: no JDK/Maven: secperf crypto --library jce,bouncycastle is unavailable (scripts/bootstrap installs them)"; fi

tools: $(GO_TOOL) $(JMH_JAR)

demo: build
	$(VENV)/bin/secperf run

test: build
	$(PY) -m pytest -q

test-all: build
	$(PY) -m pytest -q -m ''

# every benchmark always runs; the target fails if any misses its band (netem: root, or rootless with a usable TUN node)
bench: build
	@$(PY) benchmarks/fidelity.py; a=$$?; $(PY) benchmarks/handshake_cpu.py; b=$$?; $(PY) benchmarks/shim_overhead.py; c=$$?; $(PY) benchmarks/netem.py; d=$$?; $(PY) benchmarks/mac_speed.py; e=$$?; $(PY) benchmarks/connect_clients.py; f=$$?; $(PY) benchmarks/libraries.py; g=$$?; exit $$((a | b | c | d | e | f | g))

clean:
	rm -rf build $(BUILT)
