#!/usr/bin/env bash
# release.sh: build redstate's release into dist/ (make release).
#
#   dist/redstate-<version>-<os>-<arch>[.exe]   static binaries (CGO_ENABLED=0) for linux/amd64,
#                                               linux/arm64, darwin/arm64 and windows/amd64
#   dist/redstate-<version>.cdx.json            CycloneDX SBOM of the server (cyclonedx-gomod)
#   dist/SHA256SUMS                             sha256 of every file above (sha256sum -c)
#
# The build is reproducible: -trimpath (no local paths), no build ID from the machine, VCS
# information stamped by the go command (revision, dirty flag, commit time; never the clock), so
# the same commit built anywhere with the same Go gives the same bytes (scripts/release-check.sh
# proves it). The version is the commit's tag (the go command stamps it); VERSION=v1.2.3 sets
# one the build information cannot know (a commit not yet tagged) with -ldflags -X.
#
# Environment: VERSION (default: the tag of HEAD, else dev-<short revision>), DIST (default
# dist), PLATFORMS (default the four above), SBOM=0 to skip the SBOM.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PLATFORMS=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/arm64 windows/amd64"}
DIST=${DIST:-dist}
# cyclonedx-gomod runs as a pinned tool (go run pkg@version), never as a module dependency.
CYCLONEDX=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0

tag=$(git describe --tags --exact-match 2>/dev/null || true)
ldversion=""
if [ -n "${VERSION:-}" ]; then
	# Only a version the build information cannot know is set by the linker.
	[ "$VERSION" != "$tag" ] && ldversion="-X github.com/redstate/redstate/internal/buildinfo.Version=$VERSION"
else
	VERSION=${tag:-dev-$(git rev-parse --short=12 HEAD)}
fi

rm -rf "$DIST"
mkdir -p "$DIST"
for platform in $PLATFORMS; do
	os=${platform%/*}
	arch=${platform#*/}
	ext=""
	[ "$os" = windows ] && ext=.exe
	out="$DIST/redstate-$VERSION-$os-$arch$ext"
	echo "release: building $out" >&2
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=true \
		-ldflags "-s -w -buildid= $ldversion" -o "$out" ./cmd/redstate
done

if [ "${SBOM:-1}" != 0 ]; then
	echo "release: writing the SBOM" >&2
	root=$(pwd)
	dist=$(cd "$DIST" && pwd)
	# Run outside the module so the tool's own dependencies never touch go.mod.
	(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go run "$CYCLONEDX" app -json -licenses -std \
		-noserial -notimestamp -main cmd/redstate -output "$dist/redstate-$VERSION.cdx.json" "$root")
fi

(cd "$DIST" && sha256sum -- * | grep -v ' SHA256SUMS$' >SHA256SUMS)
echo "release: $(ls "$DIST" | wc -l) files in $DIST:" >&2
(cd "$DIST" && cat SHA256SUMS) >&2
