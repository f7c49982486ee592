# syntax=docker/dockerfile:1
# redstate's container image, built from source: docker build -t redstate . (or podman build).
# The same image as `make image` builds offline from the release binary
# (deploy/image/Containerfile): a static binary on distroless/static (CA certificates, time zone
# data, the non-root user 65532), no shell, no package manager.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# VERSION sets a version the VCS stamp cannot know (an untagged commit); empty keeps the stamp.
ARG VERSION=
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -buildid= ${VERSION:+-X github.com/redstate/redstate/internal/buildinfo.Version=${VERSION}}" \
      -o /out/usr/local/bin/redstate ./cmd/redstate \
 && mkdir -p /out/data \
 && cp LICENSE NOTICE /out/

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="redstate" \
      org.opencontainers.image.description="Redis-backed state blocks (build status, CDC index, executor, feed, job queue) over HTTP/JSON" \
      org.opencontainers.image.source="https://github.com/redstate/redstate" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/usr/local/bin/redstate /usr/local/bin/redstate
COPY --from=build /out/LICENSE /out/NOTICE /
COPY --from=build --chown=65532:65532 /out/data/ /data/
# Listen on every interface: off loopback, serve needs auth tokens (REDSTATE_AUTH_TOKENS, 16+
# characters each) or --insecure. The SQLite database and the fallback journal live in /data.
ENV REDSTATE_SERVER_ADDR=0.0.0.0:8080 \
    REDSTATE_DATA_DIR=/data
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8080
# No shell and no curl in the image: the binary checks its own /readyz.
HEALTHCHECK --interval=10s --timeout=5s --retries=3 CMD ["/usr/local/bin/redstate", "health", "--url", "http://127.0.0.1:8080/readyz"]
ENTRYPOINT ["/usr/local/bin/redstate"]
CMD ["serve"]
