# pqcache Makefile. Every tool is pinned here and built from the Go module proxy into bin/, so every
# machine (a laptop, CI, a fresh VM) builds the same thing; a warm run rebuilds nothing.

# Tool and control-plane versions.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
VERSITYGW_VERSION ?= v1.8.0
# goaws is built from the wrapper module hack/goaws (it binds 127.0.0.1); its go.mod must pin the same.
GOAWS_VERSION ?= v0.4.5
HELM_VERSION ?= v3.22.0
# promtool checks and unit-tests the chart's alerting rules (make test).
PROMTOOL_VERSION ?= v0.316.0
# rclone for the sync benchmark (hack/bench/sync.sh), beside Debian's older one.
RCLONE_VERSION ?= v1.76.0
# golangci-lint with Kubernetes' API linter compiled in, built from the wrapper module hack/golangci-lint
# (its go.mod pins both, and must pin the same golangci-lint).
GOLANGCI_LINT_VERSION ?= v2.15.0
# CoreDNS for the local cluster's DNS add-on, built static for its image from the wrapper module
# hack/coredns (the plugins a cluster DNS uses); its go.mod must pin the same.
COREDNS_VERSION ?= v1.15.0
ENVTEST_K8S_VERSION ?= 1.37.2
ENVTEST_ETCD_VERSION ?= 3.7.3

LOCALBIN := $(CURDIR)/bin
CONTROLLER_GEN := $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
VERSITYGW := $(LOCALBIN)/versitygw-$(VERSITYGW_VERSION)
GOAWS := $(LOCALBIN)/goaws-$(GOAWS_VERSION)
HELM := $(LOCALBIN)/helm-$(HELM_VERSION)
RCLONE := $(LOCALBIN)/rclone-$(RCLONE_VERSION)
GOLANGCI_LINT := $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
PROMTOOL := $(LOCALBIN)/promtool-$(PROMTOOL_VERSION)
COREDNS := $(LOCALBIN)/coredns-$(COREDNS_VERSION)
ENVTEST_ASSETS := $(LOCALBIN)/k8s/$(ENVTEST_K8S_VERSION)-linux-amd64
# The local cluster's state directory (hack/local-cluster; PQCACHE_CLUSTER_DIR moves it) and its nodes:
# the e2e suite's specs of several nodes need at least 2.
CLUSTER_NODES ?= 3
CLUSTER_DIR := $(or $(PQCACHE_CLUSTER_DIR),$(LOCALBIN)/cluster)

VERSION ?= dev
LDFLAGS := -X github.com/pqcache/pqcache/internal/version.Version=$(VERSION)

# Ports for `make s3-server` (a versitygw for trying the CLI by hand).
S3_PORT ?= 7070
S3_DIR ?= $(CURDIR)/bin/s3-data

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

.PHONY: all
all: build

##@ Development

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC from the API types and markers, and the chart's CRD templates from them.
	$(CONTROLLER_GEN) rbac:roleName=pqcache-manager crd paths="./api/..." paths="./controllers/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	hack/gen-chart-crds.sh
	hack/gen-argocd-cm.sh
	go run ./hack/apidocs config/crd/bases docs/api.md

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods for the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run gofmt on the tree.
	gofmt -s -w $$(git ls-files --cached --others --exclude-standard '*.go')

.PHONY: vet
vet: ## Run go vet, including the e2e suite's build tag.
	go vet ./...
	go vet -tags e2e ./test/e2e/...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint (.golangci.yaml) on the tree and Kubernetes' API linter (.golangci-kal.yaml) on api/.
	$(GOLANGCI_LINT) run ./...
	$(GOLANGCI_LINT) run --config .golangci-kal.yaml ./api/...

.PHONY: build
build: tpch-extension httpfs-extension plugin ## Build bin/pqcache, the static bin/pqcache-runner (injected into engine images), bin/kubectl-pqcache, and the DuckDB extensions.
	# -trimpath as hack/image-rootfs.sh builds the images' copies: the two share the compiled packages.
	go build -trimpath -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/pqcache ./cmd/pqcache
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/pqcache-runner ./cmd/pqcache

.PHONY: plugin
plugin: ## Build bin/kubectl-pqcache only: what the demo runs on the host.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/kubectl-pqcache ./cmd/kubectl-pqcache

.PHONY: httpfs-extension
httpfs-extension: ## Install bin/httpfs.duckdb_extension (DuckDB's s3:// reader) from its PyPI wheel, pinned with its hash in hack/httpfs-requirements.txt.
	hack/install-httpfs.sh $(LOCALBIN)/httpfs.duckdb_extension

.PHONY: tpch-extension
tpch-extension: ## Build bin/tpch.duckdb_extension from the DuckDB bindings' static library (needs g++).
	go run ./hack/tpch-extension $(LOCALBIN)/tpch.duckdb_extension

.PHONY: run
run: manifests generate ## Run the manager against the cluster in KUBECONFIG (install the CRDs first: kubectl apply -f config/crd/bases).
	go run -ldflags "$(LDFLAGS)" ./cmd/pqcache manager --health-probe-bind-address=127.0.0.1:8081 --metrics-bind-address=127.0.0.1:8080

.PHONY: image-rootfs
image-rootfs: ## Assemble bin/rootfs: the file system of the Dockerfile's image (binary, its shared libraries, CA certificates, nonroot user).
	VERSION=$(VERSION) hack/image-rootfs.sh

.PHONY: demo
demo: ## The demo: a local three-node Kubernetes, pqcache by Helm, a Dataset synced from in-cluster S3, a BenchRun, report.html.
	hack/demo.sh

.PHONY: demo-down
demo-down: cluster-down ## Remove the demo's cluster (everything under bin/cluster).

.PHONY: cluster-up
cluster-up: ## Start the local cluster (CLUSTER_NODES, default 3), or rebuild and reload the images of a running one.
	hack/local-cluster up --nodes $(CLUSTER_NODES)

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and remove its state and cgroups (its namespaces go with its processes).
	hack/local-cluster down

.PHONY: cluster-status
cluster-status: ## What the local cluster runs.
	hack/local-cluster status

.PHONY: demo-standalone
demo-standalone: ## pqcache without Kubernetes: local S3 server, TPC-H SF 0.1, sync, incremental re-sync, 22 queries, report.html.
	hack/demo-standalone.sh

.PHONY: report-screenshot
report-screenshot: build ## Run a small benchmark, write bin/report.html with pqcache report, and screenshot it into bin/report.png with headless Chromium.
	rm -rf $(LOCALBIN)/demo-tpch && $(LOCALBIN)/pqcache datagen --scale 0.01 --out $(LOCALBIN)/demo-tpch
	$(LOCALBIN)/pqcache bench --data $(LOCALBIN)/demo-tpch --iterations 2 --label "SF 0.01 / local" --json $(LOCALBIN)/result.json >/dev/null
	$(LOCALBIN)/pqcache report $(LOCALBIN)/result.json -o $(LOCALBIN)/report.html
	chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --user-data-dir=$$(mktemp -d) --window-size=1024,1400 --screenshot=$(LOCALBIN)/report.png file://$(LOCALBIN)/report.html
	@echo "wrote $(LOCALBIN)/report.html and $(LOCALBIN)/report.png"

##@ Testing

# GO_TEST_PACKAGES is how many packages' tests go test runs at once. Most suites wait more than they
# compute (a kube-apiserver's answers, a sync's polls, an engine's start), so more than the 2 cores'
# default keeps the CPUs busy: see docs/development.md, "Measured times".
GO_TEST_PACKAGES ?= 4

.PHONY: test
test: manifests generate vet envtest versitygw goaws helm promtool polars-env spark-env moto-env httpfs-extension tpch-extension ## Unit, integration, chart, monitoring and envtest suites, and the short fuzzing pass (no e2e).
	hack/timed "go test" env KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) ENVTEST_K8S_VERSION=$(ENVTEST_K8S_VERSION) PQCACHE_VERSITYGW=$(VERSITYGW) PQCACHE_GOAWS=$(GOAWS) PQCACHE_HELM=$(HELM) \
		PQCACHE_HTTPFS_EXTENSION=$(LOCALBIN)/httpfs.duckdb_extension PQCACHE_PROMTOOL=$(PROMTOOL) PQCACHE_POLARS_PYTHON=$(POLARS_VENV)/bin/python \
		PQCACHE_SPARK_PYTHON=$(SPARK_VENV)/bin/python PQCACHE_SPARK_JARS=$(SPARK_JARS) PQCACHE_MOTO_PYTHON=$(MOTO_VENV)/bin/python \
		PQCACHE_TPCH_EXTENSION=$(LOCALBIN)/tpch.duckdb_extension \
		go test ./... -p $(GO_TEST_PACKAGES) -count=1 -timeout 30m -coverprofile=cover.out
	hack/timed "fuzz-short" $(MAKE) fuzz-short

# FUZZ_TARGETS are the fuzz targets, as package:FuzzName; `make fuzz` runs each for FUZZTIME
# (Go fuzzes one target per invocation). docs/fuzzing.md says what each checks.
FUZZ_TARGETS ?= ./cache/s3store:FuzzParseList ./cache/notify:FuzzParse ./cache/manifest:FuzzEntryRoundTrip \
	./cache/manifest:FuzzDecodeEntry ./agent/s3serve:FuzzParseAuthorization ./agent/s3serve:FuzzVerify ./agent/s3serve:FuzzList ./internal/s3creds:FuzzAccessKeyID ./internal/s3creds:FuzzPinToken ./agent/readers:FuzzReaderServe ./agent/peer:FuzzServe ./agent/peer:FuzzFetchManifest \
	./bench/workload:FuzzParse ./agent/csi:FuzzVolumeAttributes ./bench:FuzzParseTimings \
	./controllers/benchrun:FuzzParsePriceFile ./agent/mountapi:FuzzDecode ./agent/peer/identity:FuzzAuthenticate ./agent/peer/peertls:FuzzCheckRequest \
	./cache/table/delta:FuzzCommit ./cache/table/delta:FuzzCheckpointName ./cache/table/delta:FuzzDataKey
FUZZTIME ?= 30s
# FUZZMINIMIZETIME bounds how long the engine shrinks each input that finds new code (Go's default is
# 60s): it executes nothing else meanwhile, so a short pass spent on a large input fuzzes nothing.
FUZZMINIMIZETIME ?= 60s

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (30s) each; a crasher is written to the package's testdata/fuzz/FuzzX/.
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz: $$name in $$pkg for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg; \
	done

# FUZZSHORTCOUNT bounds the short pass by executions, not seconds: Go 1.26's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" when a duration -fuzztime ends while a worker is mid-call
# (golang/go#75804, fixed in Go 1.27); a count sets no deadline. 2000 runs take 0.5-4 s per target here:
# enough to show each target still fuzzes (its corpus replays in every go test); `make fuzz` searches.
FUZZSHORTCOUNT ?= 2000x

.PHONY: fuzz-short
fuzz-short: ## The bounded pass CI runs (in make test): every fuzz target for FUZZSHORTCOUNT runs (corpus replay runs in every go test).
	$(MAKE) fuzz FUZZTIME=$(FUZZSHORTCOUNT) FUZZMINIMIZETIME=100x

# E2E_PROCS is how many Ginkgo processes run the e2e suite's independent containers at once (its Serial
# ones run alone afterwards); the ginkgo CLI is the module's own (go.mod's tool directive).
E2E_PROCS ?= 3

.PHONY: test-e2e
test-e2e: helm ## End-to-end suite against the cluster in KUBECONFIG (it installs the chart; the images must be on the node); prints where its time went.
	@status=0; PQCACHE_HELM=$(HELM) go tool ginkgo --tags e2e --procs $(E2E_PROCS) --label-filter='!benchmark' -v --timeout 55m \
		--json-report=report.json --output-dir=$(LOCALBIN)/e2e ./test/e2e || status=$$?; \
	go run ./hack/e2etimes $(LOCALBIN)/e2e/report.json || true; exit $$status

.PHONY: bench-events-cluster
bench-events-cluster: helm ## Freshness by S3 event notifications on the local cluster: lag from PUT to the volume at 1 and 20 objects/s.
	hack/local-cluster up --nodes $(CLUSTER_NODES)
	KUBECONFIG=$(CLUSTER_DIR)/kubeconfig PQCACHE_E2E_HELM_VALUES=$(CLUSTER_DIR)/helm-values.yaml PQCACHE_HELM=$(HELM) \
		go test -tags e2e ./test/e2e/... -count=1 -v -timeout 30m -ginkgo.label-filter=benchmark

.PHONY: test-e2e-local
test-e2e-local: helm spark-env ## Start (or reuse) the local cluster of 3 nodes, load the working tree's images (the Spark engine's too), run the e2e suite on it.
	PQCACHE_LOCAL_CLUSTER_SPARK=1 hack/timed "local cluster up" hack/local-cluster up --nodes $(CLUSTER_NODES)
	KUBECONFIG=$(CLUSTER_DIR)/kubeconfig PQCACHE_E2E_HELM_VALUES=$(CLUSTER_DIR)/helm-values.yaml hack/timed "e2e suite" $(MAKE) test-e2e

.PHONY: scan
scan: helm ## Scan the rendered chart with checkov (pinned, bin/checkov-venv); fail on a finding hack/checkov-accepted.txt does not accept with a reason.
	LOCALBIN=$(LOCALBIN) HELM=$(HELM) hack/scan-chart.sh

.PHONY: verify
verify: manifests generate fmt lint scan ## Regenerate everything, lint, scan the chart (checkov), and fail if the tree changed (generated files out of date, or unformatted code) or a linter finds anything.
	@if [ -n "$$(git status --porcelain)" ]; then \
		echo "verify: generated or formatted files differ from the commit; run 'make manifests generate fmt' and commit:"; \
		git status --porcelain; \
		git --no-pager diff --stat; exit 1; fi
	go mod tidy -diff

##@ Tools and servers

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd for envtest into bin/k8s (cold: several minutes; warm: instant).
	K8S_VERSION=$(ENVTEST_K8S_VERSION) ETCD_VERSION=$(ENVTEST_ETCD_VERSION) ENVTEST_ASSETS_DIR=$(ENVTEST_ASSETS) hack/build-envtest.sh

.PHONY: node-binaries
node-binaries: ## Also build kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl (for the local cluster; cold: ~10 min).
	K8S_VERSION=$(ENVTEST_K8S_VERSION) ETCD_VERSION=$(ENVTEST_ETCD_VERSION) ENVTEST_ASSETS_DIR=$(ENVTEST_ASSETS) hack/build-envtest.sh --with-node

# The Polars engine's Python environment: a venv of python3 with Polars exactly as
# bench/polars/requirements.txt pins it (pip --require-hashes --no-deps). hack/python-env.sh skips the
# work while the venv matches the lock file, so every make test checks it for about a second.
POLARS_VENV := $(LOCALBIN)/polars-venv
.PHONY: polars-env
polars-env: ## Make the Polars engine's venv, bin/polars-venv, from bench/polars/requirements.txt (skipped while it matches).
	hack/python-env.sh $(POLARS_VENV)

# The Spark engine's Python environment and jars: a venv with PySpark exactly as
# bench/spark/requirements.txt pins it (built from PyPI's source distribution with the setuptools that
# bench/spark/build-requirements.txt pins; Java 17+ checked), and the s3a jars bench/spark/jars.txt pins
# (hadoop-aws and the AWS SDK bundle from Maven Central, SHA-256 checked). Both scripts skip the work
# while what is there matches the pins (cold: about 5 minutes and 1.1 GB of downloads; warm: seconds).
SPARK_VENV := $(LOCALBIN)/spark-venv
SPARK_JARS := $(LOCALBIN)/spark-jars
.PHONY: spark-env
spark-env: ## Make the Spark engine's venv (bin/spark-venv) and s3a jars (bin/spark-jars), as bench/spark pins them (skipped while they match).
	hack/spark-env.sh $(SPARK_VENV)
	hack/spark-jars.sh $(SPARK_JARS)

# moto's server, an emulator of AWS's own S3 and SQS (its ETags, its key encoding in event records,
# bucket notifications to SQS), for the tests of AWS's behaviours that versitygw does not have
# (test/mototest): a venv exactly as hack/moto-requirements.txt pins it, with hashes (cold: under a
# minute; warm: skipped while it matches).
MOTO_VENV := $(LOCALBIN)/moto-venv
.PHONY: moto-env
moto-env: ## Make moto's venv (bin/moto-venv) from hack/moto-requirements.txt (skipped while it matches).
	hack/moto-env.sh $(MOTO_VENV)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN):
	hack/install-tool.sh controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen $(CONTROLLER_TOOLS_VERSION)

.PHONY: versitygw
versitygw: $(VERSITYGW) ## Build the versitygw S3 server used by the tests into bin/.
$(VERSITYGW):
	hack/install-tool.sh versitygw github.com/versity/versitygw/cmd/versitygw $(VERSITYGW_VERSION)

.PHONY: goaws
goaws: $(GOAWS) ## Build the goaws SQS emulator used by the event-notification tests into bin/.
$(GOAWS):
	hack/install-tool.sh goaws ./hack/goaws $(GOAWS_VERSION)

.PHONY: helm
helm: $(HELM) ## Build the Helm CLI used by the chart tests into bin/.
$(HELM):
	hack/install-tool.sh helm helm.sh/helm/v3/cmd/helm $(HELM_VERSION)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint with Kubernetes' API linter compiled in into bin/.
$(GOLANGCI_LINT):
	hack/install-tool.sh golangci-lint ./hack/golangci-lint $(GOLANGCI_LINT_VERSION)

.PHONY: promtool
promtool: $(PROMTOOL) ## Build Prometheus' promtool into bin/ (checks and unit-tests the chart's alerting rules).
$(PROMTOOL):
	hack/install-tool.sh promtool github.com/prometheus/prometheus/cmd/promtool $(PROMTOOL_VERSION)

.PHONY: coredns
coredns: $(COREDNS) ## Build CoreDNS $(COREDNS_VERSION), statically linked, for the local cluster's DNS add-on into bin/.
$(COREDNS):
	CGO_ENABLED=0 hack/install-tool.sh coredns ./hack/coredns $(COREDNS_VERSION)

.PHONY: rclone
rclone: $(RCLONE) ## Build rclone $(RCLONE_VERSION) for the sync benchmark into bin/ (cold: tens of minutes).
$(RCLONE):
	hack/install-tool.sh rclone github.com/rclone/rclone $(RCLONE_VERSION)

.PHONY: s3-server
s3-server: versitygw ## Run versitygw on 127.0.0.1:$(S3_PORT) over $(S3_DIR) (keys: pqcache / pqcache-secret) until interrupted.
	mkdir -p $(S3_DIR)
	@echo "S3 endpoint http://127.0.0.1:$(S3_PORT)  access key pqcache  secret key pqcache-secret  data $(S3_DIR)"
	ROOT_ACCESS_KEY=pqcache ROOT_SECRET_KEY=pqcache-secret $(VERSITYGW) --port 127.0.0.1:$(S3_PORT) --health /health posix $(S3_DIR)
