#!/usr/bin/env bash
# CI's image step: build the serving image, then run `tokenplane dev --smoke`'s checks through the AI gateway,
# model gateway, engine simulators and batch worker started from the image's filesystem
# (tests/image/smoke_from_image.py). Any failure fails the step. Needs root, podman and debootstrap
# (Debian's packages; .ci/run installs them) and the dev venv in .venv (Redis, the broker and the client).
#
# The base is the Dockerfile's pinned one (tag and digest) when its registry answers. Where it does not
# (a CI machine that reaches only package mirrors), a debootstrapped Debian bookworm stands in for it under
# the same tag (serving/images/debootstrap-base.sh), and the log says so. Every Python package comes from
# the hash-pinned lock either way.
set -euo pipefail
cd "$(dirname "$0")/../.."
image=${TOKENPLANE_IMAGE:-localhost/tokenplane-serving:ci}
[ "$(id -u)" = 0 ] || { echo "serving/images/ci.sh: needs root (podman's storage, mount, chroot)" >&2; exit 2; }

pinned=$(sed -n 's/^ARG PYTHON_BASE=//p' serving/images/Dockerfile)
build=(podman build --isolation chroot --file serving/images/Dockerfile --tag "$image")
if timeout 120 podman pull --quiet "docker.io/library/$pinned" >/dev/null; then
  echo "image base: $pinned, pulled"
else
  stand_in=docker.io/library/${pinned%@*}  # the tag without the digest: a local image cannot have the registry's
  echo "image base: $pinned cannot be pulled; a debootstrapped Debian bookworm stands in as $stand_in"
  podman image exists "$stand_in" || serving/images/debootstrap-base.sh "$stand_in"
  build+=(--build-arg "PYTHON_BASE=$stand_in")
fi
# Behind a TLS-intercepting proxy pip needs the proxy's CA: the bundle this machine's pip uses, as a build secret.
ca=${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}
[ -s "$ca" ] && build+=(--secret "id=ca,src=$ca")
"${build[@]}" .
.venv/bin/python -m tests.image.smoke_from_image "$image" "$@"  # e.g. --port N --ports-from N
