#!/usr/bin/env bash
# Stands in for the pinned Python base when its registry cannot be reached (an air-gapped or proxied CI
# machine with only Debian's mirror): a Debian bookworm root made by debootstrap, whose python3 is 3.11 like
# the base's, imported into podman's storage under the base's tag, so that the Dockerfile builds unchanged
# with --build-arg PYTHON_BASE=<tag>. It differs from the official image in where Python lives (Debian's
# /usr/bin/python3, linked as /usr/local/bin/python) and in the patch release (Debian's 3.11.2), and the
# image's own lock pins every Python package either way.
#
# Usage (as root): serving/images/debootstrap-base.sh TAG [MIRROR]
set -euo pipefail
tag=${1:?usage: $0 TAG [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

# minbase: dpkg, apt and the required packages; python3-venv so that `python -m venv` works as in the base.
debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates bookworm "$root" "$mirror"
ln -sf /usr/bin/python3 "$root/usr/local/bin/python"
ln -sf /usr/bin/pip3 "$root/usr/local/bin/pip"
# The official image's Python is its own, not Debian's, so pip installs into it freely; do the same here
# (PEP 668's marker would refuse `pip install` outside a venv).
rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | podman import \
  --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  - "$tag"
