#!/usr/bin/env bash
# Regenerates the serving image's locks from pyproject.toml, with uv (in the dev extra). Run it after
# changing a dependency; tests/serving/test_image_lock.py fails until you do.
#
#   requirements.lock  the image's packages, hash-pinned: the Dockerfile installs it with pip --require-hashes
#   constraints.txt    the same pins without hashes: the README's install commands pass it to pip with -c, so
#                      the tests run against the image's versions (pip takes no hashed constraints file
#                      unless every requirement is hashed, and the dev extra's are not)
#   build.lock         pyproject's [build-system] requires, hash-pinned: they build the wheel in the image
#
# The input is requirements.txt (the core's pydantic/PyYAML/numpy and the serving extra, kept equal to
# pyproject.toml by tests/serving/test_images.py). It is resolved together with the whole dev extra, so that
# the pins never conflict with what the tests also install (pulumi caps protobuf, for one). uv keeps every
# pin an output file already has while it still fits, so a re-run changes only what pyproject's change needs;
# `lock.sh --upgrade` moves every pin to the newest release that fits.
set -euo pipefail
cd "$(dirname "$0")/../.."
images=serving/images
compile=(uv pip compile --quiet --universal --python-version 3.11 --custom-compile-command "$images/lock.sh" "$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The dev extra's resolution, preferring the pins we have (uv reads an existing output file as preferences).
cp "$images/constraints.txt" "$work/dev.txt" 2>/dev/null || true
"${compile[@]}" --no-annotate pyproject.toml --extra dev -o "$work/dev.txt"
# 2. The image's packages within it: once with hashes for the image, once without for pip's -c.
"${compile[@]}" --generate-hashes "$images/requirements.txt" -c "$work/dev.txt" -o "$images/requirements.lock"
"${compile[@]}" "$images/requirements.txt" -c "$work/dev.txt" -o "$images/constraints.txt"
# The annotations name the temporary resolution; name what it was instead.
sed -i "s#$work/dev.txt#pyproject.toml[dev]#" "$images/requirements.lock" "$images/constraints.txt"
# 3. What builds the wheel.
python3 -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")' \
  >"$work/build.in"
"${compile[@]}" --generate-hashes --no-annotate "$work/build.in" -o "$images/build.lock"
