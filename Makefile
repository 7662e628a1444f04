# gitops.k3s_flux: Go binary modules for Ansible. `make help` lists the targets.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# The binaries and the modules each serves: modules.mk, generated from internal/registry (make docs).
include modules.mk
# The binaries, plugins/bin/<os>_<arch>/<binary>: the node binaries for every CPU of a homelab's
# nodes, the controller binary for every OS and CPU an Ansible controller runs on. Each module is
# plugins/modules/<name>.py, generated: its docs and argument spec; its action plugin sends the
# binary built for the host (`uname -sm`).
NODE_BINARIES := $(foreach p,$(NODE_PLATFORMS),$(addprefix plugins/bin/$(p)/,$(NODE_MODULES)))
CONTROLLER_BINARIES := $(foreach p,$(CONTROLLER_PLATFORMS),plugins/bin/$(p)/controller)
VERSION := $(shell sed -n 's/^version: //p' galaxy.yml)
TARBALL := dist/gitops-k3s_flux-$(VERSION).tar.gz
# The release (make release): a tarball without the controller binaries, which ship beside it
# compressed, one per platform, fetched by the action plugins on first use.
RELEASE_DIR := dist/release
RELEASE_LIMIT_MB := 20
# $(call go_build_for,<os>_<arch>,<package>) builds $@ for that platform: static, stripped, arm as
# armv7 (GOARM=7, the boards homelabs run).
go_build_for = CGO_ENABLED=0 GOOS=$(word 1,$(subst _, ,$1)) GOARCH=$(word 2,$(subst _, ,$1)) GOARM=7 \
	go build -trimpath -ldflags "-s -w" -o $@ $2
# Debian packages the tests need: Ansible itself, sshd for the test hosts,
# ip/nsenter/unshare to make them, git for the collection build, strace to kill a module mid-write,
# python3-venv for make lint's venv, sudo for the test hosts' become, qemu-user-static and
# debootstrap for the arm64 test host, xz for the release, faketime for a controller whose clock is off,
# gcc with SQLite's and zlib's static archives for the test bed's k3s (CGO, static, as k3s builds it).
APT_PACKAGES := ansible-core openssh-server openssh-client iproute2 util-linux git curl strace python3-venv sudo qemu-user-static debootstrap shellcheck xz-utils faketime ufw iptables gcc libc6-dev libsqlite3-dev zlib1g-dev
# The benchmarks' Python baseline: Debian's ansible (with kubernetes.core) and the Kubernetes
# client; GNU time for peak RSS.
BENCH_APT_PACKAGES := ansible python3-kubernetes time
ROUNDS ?= 5

.PHONY: help build docs fuzz lint soak stress-readiness test test-sanity test-unit test-integration test-e2e test-e2e-debian test-e2e-pypi e2e-tools e2e-pass-debian e2e-pass-pypi test-molecule testbed-bin testbed-rootfs collection release deps bench demo demo-collection demo-down clean

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-17s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: $(NODE_BINARIES) $(CONTROLLER_BINARIES) ## Build the binaries: node modules for linux amd64/arm64/armv7, the controller binary for linux and darwin, amd64 and arm64
	@# Written beside, in dist/ (which no collection build reads), and renamed into place only when
	@# the sums changed: a release another make packs meanwhile reads the old sums or the new, whole,
	@# and a collection installed from this tree meanwhile (molecule, beside the e2e passes whose
	@# release makes this target) never meets a file that is gone when it copies it.
	@mkdir -p dist && sha256sum $(NODE_BINARIES) $(CONTROLLER_BINARIES) >dist/.SHA256SUMS.$$$$ && \
		if cmp -s dist/.SHA256SUMS.$$$$ plugins/bin/SHA256SUMS; then rm -f dist/.SHA256SUMS.$$$$; \
		else mv -f dist/.SHA256SUMS.$$$$ plugins/bin/SHA256SUMS; fi
	@ls -lL $(NODE_BINARIES) $(CONTROLLER_BINARIES) | awk '{printf "  %-40s %6.2f MB\n", $$9, $$5/1048576}'

# What the binaries are built from: a binary is rebuilt only when one of these is newer (make test
# builds once per tier; a relink of every platform's binaries costs each of them).
GO_SOURCES := $(shell find cmd internal modules -type f ! -name '*_test.go' ! -path '*/testdata/*') go.mod go.sum

# plugins/bin/linux_arm/k3s_node: ./cmd/k3s_node for linux_arm
$(NODE_BINARIES): plugins/bin/%: $(GO_SOURCES)
	@$(call go_build_for,$(patsubst %/,%,$(dir $*)),./cmd/$(notdir $*))

$(CONTROLLER_BINARIES): plugins/bin/%/controller: $(GO_SOURCES)
	@$(call go_build_for,$*,./cmd/controller)

docs: ## Regenerate the modules' Python files (plugins/modules/*.py: docs and argument spec) and golden files
	go test ./modules/... ./internal/registry -run 'TestModuleFile|Golden' -update

test: deps ## Everything CI runs: installs what it needs, lints, builds the test bed, all tests; every tier runs even when one fails, then a summary (tier, passed, failed, seconds)
	tests/tools/tiers.sh

lint: deps build ## goimports, go vet and staticcheck (every build tag), yamllint, ansible-lint --profile production
	hack/lint.sh

test-sanity: deps ## ansible-test sanity (ansible-core 2.19, --local with its pinned requirements); tests/sanity/ignore-2.19.txt says what cannot apply
	tests/tools/sanity.sh

test-unit: ## Unit tests as an unprivileged user (nobody), no test bed; each module with logic at 80% coverage or more; the plugins' Python on ansible-core 2.14 and 2.19
	GOTESTFLAGS="$(GOTESTFLAGS)" tests/tools/unit.sh

FUZZTIME ?= 30s
# The packages with a FuzzNoLog.
FUZZ_PACKAGES := $(sort $(patsubst %/,./%,$(dir $(shell grep -l '^func FuzzNoLog' -r modules internal))))

fuzz: ## Fuzz every module's arguments for no_log leaks (FUZZTIME=30s each; go test ./... runs the checked-in corpus)
	@for p in $(FUZZ_PACKAGES); do echo "fuzz $$p"; go test $$p -run '^$$' -fuzz '^FuzzNoLog$$' -fuzztime $(FUZZTIME) | tail -2; done

# The packages with integration tests: the others' tests are the unit tier's, already run there.
INTEGRATION_PACKAGES := $(sort $(patsubst %/,./%,$(dir $(shell grep -rl --include='*_test.go' '^//go:build integration' cmd internal modules tests))))

test-integration: testbed-bin ## Integration tests against the test bed's real API server, registry and Flux (needs root), in the packages that have them
	go test -tags integration -count=1 -p 1 -timeout 30m $(GOTESTFLAGS) $(INTEGRATION_PACKAGES)

testbed-bin: ## Build the test bed's binaries from the Go module proxy into ~/.cache/k3s_flux/bin (skips what is cached)
	tests/tools/build.sh

testbed-rootfs: ## Register qemu-user-static with binfmt_misc and build the arm64 and armv7 test hosts' Debian root filesystems into ~/.cache/k3s_flux/rootfs (once)
	tests/tools/rootfs.sh arm64 >/dev/null
	tests/tools/rootfs.sh armhf >/dev/null

# What the end-to-end passes need made first, once: the binaries, the arm hosts' root filesystems, just
# and the venv (test-e2e runs both passes side by side, and neither may make them under the other).
E2E_PREREQUISITES := build testbed-rootfs e2e-tools
DEBIAN_ANSIBLE_CORE = $(shell dpkg-query -W -f '$${Version}' ansible-core 2>/dev/null | cut -d- -f1)
PYPI_ANSIBLE_CORE = $(shell sed -n 's/^ansible-core==//p' hack/requirements-dev.txt)

test-e2e: $(E2E_PREREQUISITES) ## End-to-end tests over SSH to test hosts (needs root), two passes side by side, each line after its pass's name: Debian's ansible-core (pipelining off) and ansible-core 2.19 from hack/requirements-dev.txt (pipelining on)
	logs="$$(mktemp -d /tmp/k3sf-e2e-XXXXXX)" && trap 'rm -rf "$$logs"' EXIT && \
		tests/tools/sidebyside.sh "$$logs" "e2e $(DEBIAN_ANSIBLE_CORE)" "$(MAKE) --no-print-directory e2e-pass-debian" \
			"e2e $(PYPI_ANSIBLE_CORE)" "$(MAKE) --no-print-directory e2e-pass-pypi"

test-e2e-debian: $(E2E_PREREQUISITES) ## The end-to-end tests with Debian's ansible-core, pipelining off
	@$(MAKE) --no-print-directory e2e-pass-debian

test-e2e-pypi: $(E2E_PREREQUISITES) ## The end-to-end tests with ansible-core 2.19 from hack/requirements-dev.txt, pipelining on
	@$(MAKE) --no-print-directory e2e-pass-pypi

e2e-tools:
	@hack/just.sh >/dev/null && hack/venv.sh >/dev/null

# The passes themselves, without their prerequisites. The second takes test-bed slot 1
# (tests/bed/testhosts/slot.go): other names, subnets and ports, so it can run beside the first.
# E2E_TIMEOUT is go test's guard against a hung test, not a bound on a pass: above the longest
# pass measured, under make soak LOADED=1 (the 2.14 pass past 2400 s, beside the other pass and
# the integration tier on the one core the load leaves; about 1400 s unloaded).
E2E_TIMEOUT ?= 60m
# -parallel 64: the tests' own parallel (tests/e2e/e2e_test.go) decides how many run at once and
# which first; go test's limit, above the number of tests, never makes one wait. -vet=off: make
# lint vets the e2e tag already.
E2E_GOTEST = go test -tags e2e -count=1 -vet=off -parallel 64 -timeout $(E2E_TIMEOUT) -v
e2e-pass-debian:
	just="$$(hack/just.sh)" && PATH="$$just:$$PATH" E2E_ANSIBLE_CORE="$(DEBIAN_ANSIBLE_CORE)" E2E_PIPELINING=false \
		$(E2E_GOTEST) $(GOTESTFLAGS) ./tests/e2e/...

e2e-pass-pypi:
	venv="$$(hack/venv.sh)" && just="$$(hack/just.sh)" && PATH="$$venv/bin:$$just:$$PATH" E2E_ANSIBLE_CORE="$(PYPI_ANSIBLE_CORE)" E2E_PIPELINING=true K3SF_BED_SLOT=1 \
		$(E2E_GOTEST) $(GOTESTFLAGS) ./tests/e2e/...

N ?= 3

soak: deps testbed-bin $(E2E_PREREQUISITES) ## Run make test's last step (integration, molecule and both e2e passes, side by side) N times (N=3) and list each test's passes, failures and durations (not part of make test); LOADED=1 under a CPU hog on one core and an fsync writer
	LOADED="$(LOADED)" tests/tools/soak.sh $(N)

stress-readiness: testbed-bin ## Start the stand-in k3s agent's unit CYCLES times (100) and fail at the first start its systemctl stand-in does not mark active (not part of make test; run it beside a load)
	CYCLES="$(CYCLES)" go test -tags stress -count=1 -timeout 0 -v -run '^TestUnitReadinessUnderRestarts$$' ./tests/bed/

test-molecule: testbed-bin build ## molecule test of the default scenario against the test bed (molecule from hack/requirements-dev.txt)
	tests/tools/molecule.sh

collection: build ## Build the collection tarball into dist/
	@mkdir -p dist
	ansible-galaxy collection build --force --output-path dist .

release: build ## The release into dist/release: the collection tarball (node binaries for every platform; at most 20 MB, checked) and each platform's controller binary, xz-compressed
	hack/release.sh $(RELEASE_DIR) $(RELEASE_LIMIT_MB) $(CONTROLLER_PLATFORMS)

# apt_install installs the Debian packages given that are missing.
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

deps: ## Install the Debian packages the tests need (when missing)
	$(call apt_install,$(APT_PACKAGES))

bench: deps testbed-bin build release ## Side-by-side benchmarks against kubernetes.core and template (ROUNDS=5, ONLY=cluster,... a subset); appends to bench/RESULTS.md
	$(call apt_install,$(BENCH_APT_PACKAGES))
	tests/tools/build.sh helm
	go run ./bench -rounds $(ROUNDS) $(if $(ONLY),-only $(ONLY)) -pypi-venv "$$(hack/venv.sh bench)"

# The demo's test hosts are this machine: its binaries are built for this platform alone (go env,
# read once deps has installed Go), not for the four a release ships.
demo: deps testbed-bin ## Build for this machine's platform, start the local test bed and run playbooks/k8s.yml against it, twice
	platform="$$(go env GOOS)_$$(go env GOARCH)" && \
		$(MAKE) --no-print-directory demo-collection NODE_PLATFORMS="$$platform" CONTROLLER_PLATFORMS="$$platform"
	go run ./tests/bed/testbed up
	bash tests/demo.sh

demo-collection: collection ## Install the built collection into .generated/collections (where ansible.cfg looks)
	@mkdir -p .generated && chmod 700 .generated
	ansible-galaxy collection install --force -p .generated/collections $(TARBALL) >/dev/null

demo-down: ## Tear the demo test bed down
	go run ./tests/bed/testbed down

clean: ## Remove built binaries and tarballs
	rm -rf plugins/bin dist
