# Build and test targets. `make test` needs redis-server, PostgreSQL 15, MariaDB, chromium,
# promtool, systemd-analyze and podman (installed on demand by scripts/ensure-redis.sh,
# ensure-postgres.sh, ensure-mariadb.sh, ensure-chromium.sh, ensure-promtool.sh,
# ensure-systemd-analyze.sh and ensure-podman.sh); `make test-short` needs nothing but Go.

GO ?= go

.PHONY: test test-short lint bench soak chaos build release release-check image deploy-check

## test: full suite with the race detector against real Redis, PostgreSQL, MariaDB, chromium,
## promtool, systemd-analyze and podman (fails if one is missing)
test:
	scripts/ensure-redis.sh
	scripts/ensure-postgres.sh
	scripts/ensure-mariadb.sh
	scripts/ensure-chromium.sh
	scripts/ensure-promtool.sh
	scripts/ensure-systemd-analyze.sh
	scripts/ensure-podman.sh
	$(GO) vet ./...
	REDSTATE_REQUIRE_REDIS=1 $(GO) test -race -timeout 25m ./...

## test-short: memory backends only; tests needing Redis skip under -short
test-short:
	$(GO) test -short ./...

## lint: gofmt must report nothing, then go vet
lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

## bench: benchmarks only
bench:
	$(GO) test -run '^$$' -bench . ./...

## soak: long-running stress tests (build tag soak)
soak:
	scripts/ensure-redis.sh
	scripts/ensure-postgres.sh
	scripts/ensure-mariadb.sh
	scripts/ensure-chromium.sh
	REDSTATE_REQUIRE_REDIS=1 $(GO) test -race -tags soak -timeout 60m ./...

## chaos: Redis failover fault harness (build tag chaos): kills, pauses, lags and
## restarts the master of a Sentinel topology and of a Cluster under load from every block, in
## three durability modes, logs what was lost and fails on a broken promise; CHAOS_CYCLES
## (default 1) sets how often each fault is injected per topology and mode, CHAOS_BLOCKS,
## CHAOS_FAULTS and CHAOS_MODES select, CHAOS_REPORT=file appends the Markdown summary
chaos:
	scripts/ensure-redis.sh
	$(GO) vet -tags chaos ./redistest ./chaos
	REDSTATE_REQUIRE_REDIS=1 $(GO) test -race -tags chaos -timeout 60m -count=1 -v -run 'TestFailover|HA_' ./redistest ./chaos

## build: the redstate binary (and redstate-bench, the benchmarks)
build:
	$(GO) build -o bin/redstate ./cmd/redstate
	$(GO) build -o bin/redstate-bench ./cmd/redstate-bench

## release: reproducible static binaries for linux/amd64, linux/arm64, darwin/arm64 and
## windows/amd64 in dist/, with SHA256SUMS and a CycloneDX SBOM (VERSION=v1.2.3 for an untagged
## commit; see scripts/release.sh)
release:
	scripts/release.sh

## image: the container image localhost/redstate:latest and :VERSION, FROM scratch with podman
## (deploy/image/Containerfile; nothing is pulled); Dockerfile builds the same image from source
image:
	scripts/ensure-podman.sh
	scripts/image.sh

## release-check: build the release twice from two clones of HEAD with empty build caches and
## fail unless the bytes are identical, the binaries static and the SBOM well formed (minutes)
release-check:
	scripts/release-check.sh

## deploy-check: the deployment and monitoring kits (docs/deploy.md), slow checks included:
## helm lint --strict and helm template of deploy/helm/redstate (build tag deploycheck; helm
## v3.22.0 is built from its module into the user cache on first use, which takes minutes), the
## compose file, the systemd unit (systemd-analyze), the Prometheus rules (promtool) and the
## metrics the rules and the dashboard name against a running server
deploy-check:
	scripts/ensure-redis.sh
	scripts/ensure-postgres.sh
	scripts/ensure-mariadb.sh
	scripts/ensure-promtool.sh
	scripts/ensure-systemd-analyze.sh
	$(GO) vet -tags deploycheck ./deploy/...
	REDSTATE_REQUIRE_REDIS=1 $(GO) test -race -tags deploycheck -count=1 -timeout 30m ./deploy/...
