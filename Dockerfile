# syntax=docker/dockerfile:1
# The pqcache image: one binary, for the operator (`pqcache manager`) and its worker Jobs (`pqcache sync`,
# later `pqcache bench`). `make image-rootfs` assembles the same file system locally and
# test/image checks that the binary runs with only those files.

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# cgo stays on: the built-in DuckDB engine links C++, so the binary needs glibc and libstdc++ at run time.
RUN CGO_ENABLED=1 go build -trimpath \
      -ldflags "-s -w -X github.com/pqcache/pqcache/internal/version.Version=${VERSION}" \
      -o /out/pqcache ./cmd/pqcache \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/pqcache/pqcache/internal/version.Version=${VERSION}" \
      -o /out/pqcache-runner ./cmd/pqcache \
 && go run ./hack/tpch-extension /out/tpch.duckdb_extension

# DuckDB's httpfs extension (s3:// inputs), from the PyPI wheel pinned with its hash.
FROM python:3.11-slim-bookworm AS httpfs
WORKDIR /src
COPY hack/install-httpfs.sh hack/httpfs-requirements.txt hack/
COPY bench/duckdb/duckdb.go bench/duckdb/
RUN hack/install-httpfs.sh /out/httpfs.duckdb_extension

# distroless/cc: glibc, libstdc++, CA certificates, a nonroot user (65532); no shell, no package manager.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/pqcache /usr/local/bin/pqcache
# The static runner, copied into other engines' images by BenchRun Jobs (pqcache install-runner).
COPY --from=build /out/pqcache-runner /usr/local/bin/pqcache-runner
# DuckDB's tpch extension, for `pqcache datagen`; pqcache finds it here beside its binary.
COPY --from=build /out/tpch.duckdb_extension /usr/local/lib/pqcache/tpch.duckdb_extension
# DuckDB's httpfs extension, for bench's s3:// inputs.
COPY --from=httpfs /out/httpfs.duckdb_extension /usr/local/lib/pqcache/httpfs.duckdb_extension
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pqcache"]
