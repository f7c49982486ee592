#!/usr/bin/env bash
# image.sh: build the container image localhost/redstate:latest and :<version> with podman
# (make image), FROM scratch (deploy/image/Containerfile), so nothing is pulled:
#   - the server binary, built as scripts/release.sh builds it (static, reproducible) for the
#     host's architecture, at /usr/local/bin/redstate;
#   - the host's CA certificates (/etc/ssl/certs/ca-certificates.crt, for rediss:// and
#     https webhooks) and time zone data (/usr/share/zoneinfo);
#   - /etc/passwd and /etc/group naming the non-root user 65532 ("nonroot"), and /data owned
#     by it (the volume for SQLite and the fallback journal).
# Environment: VERSION (as in release.sh), IMAGE (default localhost/redstate), PODMAN (default
# "podman"; extra global flags may follow, e.g. "podman --runtime runc --cgroup-manager cgroupfs").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

IMAGE=${IMAGE:-localhost/redstate}
read -r -a podman <<<"${PODMAN:-podman --runtime runc --cgroup-manager cgroupfs}"
tag=$(git describe --tags --exact-match 2>/dev/null || true)
ldversion=""
if [ -n "${VERSION:-}" ]; then
	[ "$VERSION" != "$tag" ] && ldversion="-X github.com/redstate/redstate/internal/buildinfo.Version=$VERSION"
else
	VERSION=${tag:-dev-$(git rev-parse --short=12 HEAD)}
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/usr/share" "$root/tmp" "$ctx/data"
CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=true -ldflags "-s -w -buildid= $ldversion" \
	-o "$root/usr/local/bin/redstate" ./cmd/redstate
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
cp -r /usr/share/zoneinfo "$root/usr/share/zoneinfo"
cp LICENSE NOTICE "$root/"
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/data:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
chmod 1777 "$root/tmp"
cp deploy/image/Containerfile "$ctx/"
created=$(git log -1 --format=%cI HEAD)
"${podman[@]}" build --format docker --file "$ctx/Containerfile" \
	--build-arg VERSION="$VERSION" --build-arg REVISION="$(git rev-parse HEAD)" --build-arg CREATED="$created" \
	--tag "$IMAGE:latest" --tag "$IMAGE:$VERSION" "$ctx"
echo "image: built $IMAGE:latest and $IMAGE:$VERSION ($("${podman[@]}" image inspect --format '{{.Size}}' "$IMAGE:latest") bytes)" >&2
