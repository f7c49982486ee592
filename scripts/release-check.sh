#!/usr/bin/env bash
# release-check.sh: prove the release is reproducible and well formed (make release-check).
#
# Clones HEAD twice, at two different paths, and runs scripts/release.sh in each with its own
# empty build cache (nothing shared but the module download cache), then checks that:
#   - every file of the two dist/ directories has the same bytes (SHA256SUMS equal);
#   - the binaries are statically linked (no interpreter, CGO_ENABLED=0 in their build info) and
#     carry the commit's revision;
#   - sha256sum -c accepts SHA256SUMS and the SBOM is CycloneDX JSON naming the server's modules.
# Set PLATFORMS to check fewer platforms (default: all four of release.sh). Takes minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
rev=$(git rev-parse HEAD)
for n in 1 2; do
	git clone -q --no-local . "$work/clone-$n/redstate-$n"
	git -C "$work/clone-$n/redstate-$n" checkout -q "$rev"
	echo "release-check: build $n in $work/clone-$n (fresh build cache)" >&2
	(cd "$work/clone-$n/redstate-$n" && GOCACHE="$work/cache-$n" DIST=dist scripts/release.sh)
done
a="$work/clone-1/redstate-1/dist"
b="$work/clone-2/redstate-2/dist"
if ! diff "$a/SHA256SUMS" "$b/SHA256SUMS"; then
	echo "release-check: FAIL: the two builds differ" >&2
	exit 1
fi
(cd "$a" && sha256sum -c --quiet SHA256SUMS)
for bin in "$a"/redstate-*; do
	case "$bin" in *.cdx.json) continue ;; esac
	info=$(go version -m "$bin")
	grep -q "CGO_ENABLED=0" <<<"$info" || { echo "release-check: FAIL: $bin was built with cgo" >&2; exit 1; }
	grep -q "vcs.revision=$rev" <<<"$info" || { echo "release-check: FAIL: $bin lacks vcs.revision=$rev" >&2; exit 1; }
	grep -q "vcs.modified=false" <<<"$info" || { echo "release-check: FAIL: $bin was built from a modified tree" >&2; exit 1; }
	if [[ "$bin" == *-linux-* ]] && command -v file >/dev/null && file "$bin" | grep -q "dynamically linked"; then
		echo "release-check: FAIL: $bin is dynamically linked" >&2
		exit 1
	fi
done
sbom=$(ls "$a"/*.cdx.json)
grep -q '"bomFormat": "CycloneDX"' "$sbom" && grep -q 'pkg:golang/github.com/redis/go-redis/v9@' "$sbom" ||
	{ echo "release-check: FAIL: $sbom is not a CycloneDX SBOM of the server" >&2; exit 1; }
echo "release-check: OK: $(wc -l <"$a/SHA256SUMS") files, identical in both builds:" >&2
cat "$a/SHA256SUMS" >&2
