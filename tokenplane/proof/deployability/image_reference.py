"""Every container's image is a reference the kubelet can parse.

The API server takes any non-blank ``image``; the kubelet parses it when it starts the container
(kubernetes/kubernetes ``pkg/kubelet/images/image_manager.go``: ``applyDefaultImageTag`` through
``pkg/util/parsers.ParseImageName``, which is distribution/reference's ``ParseNormalizedNamed``). A reference that
does not parse is ``ErrInvalidImageName``: the container waits in ``InvalidImageName`` ("Failed to apply default
image tag ...: couldn't parse image name ...: invalid reference format"), is never pulled nor started, and the
workload is never ready (Pulumi's await times out). The grammar, distribution/reference ``regexp.go`` and
``normalize.go`` (https://github.com/distribution/reference):

- ``splitDockerDomain``: the first ``/``-separated part is a registry host where it holds ``.`` or ``:``, is
  ``localhost`` or holds an uppercase letter; otherwise the name is Docker Hub's (one part: ``library/NAME``). The
  repository path after the host must be lowercase ("repository name must be lowercase").
- ``ReferenceRegexp``: path components ``[a-z0-9]+`` joined by ``.``, ``_``, ``__`` or dashes, separated by ``/``;
  a tag ``[\\w][\\w.-]{0,127}`` (a word character first, at most 128 characters); a digest
  ``ALGORITHM:HEX`` with at least 32 hex characters; anything else is "invalid reference format". The name (host and
  path) is at most 255 characters.
- the digest is then validated by opencontainers/go-digest (``Digest.Validate``, ``algorithm.go``): a sha256 digest
  has exactly 64 lowercase hex characters (sha384 96, sha512 128): "invalid checksum digest length" or "invalid
  checksum digest format".

Cannot see: image values unknown at render time (not judged), whether a well-formed reference exists in its registry
(``image-published`` judges the program's own), digests of algorithms go-digest does not register (not judged).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pulumi.runtime.rpc import UNKNOWN  # the engine's unknown-value sentinel

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.reachability import pod_template

RULE = "image-reference"
_ALNUM = r"[a-z0-9]+"
_COMPONENT = rf"{_ALNUM}(?:(?:[._]|__|-+){_ALNUM})*"
_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_HOST_PART}(?:\.{_HOST_PART})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
NAME = rf"(?:{_HOST}/)?{_COMPONENT}(?:/{_COMPONENT})*"
TAG = r"[\w][\w.-]{0,127}"
DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
REFERENCE = re.compile(rf"^({NAME})(?::({TAG}))?(?:@({DIGEST}))?$", re.ASCII)
# go-digest's registered algorithms: hex length of each (``algorithm.go``: Size() * 2).
DIGEST_HEX = {"sha256": 64, "sha384": 96, "sha512": 128}
NAME_MAX = 255


def problem(image: str) -> str | None:
    """Why the kubelet cannot parse ``image``, in the parser's words and the cause, or None where it parses."""
    domain, slash, rest = image.partition("/")
    if not slash:
        domain, remainder = "docker.io", f"library/{image}"
    elif domain == "localhost" or any(c in domain for c in ".:") or domain.lower() != domain:
        remainder = rest
    else:
        domain, remainder = "docker.io", image
    remote = remainder.split(":", 1)[0]
    if remote.lower() != remote:
        return f"invalid reference format: repository name ({remote}) must be lowercase"
    match = REFERENCE.match(f"{domain}/{remainder}")
    if match is None:
        return f"invalid reference format ({_why(image)})"
    if len(match[1]) > NAME_MAX:
        return f"repository name must not be more than {NAME_MAX} characters"
    digest = match[3]
    if digest:
        algorithm, hex_ = digest.split(":", 1)
        size = DIGEST_HEX.get(algorithm)
        if size is not None and len(hex_) != size:
            return f"invalid checksum digest length ({algorithm} needs {size} hex characters, {len(hex_)} given)"
        if size is not None and not re.fullmatch(r"[a-f0-9]+", hex_):
            return f"invalid checksum digest format ({algorithm}'s hex must be lowercase)"
    return None


def _why(image: str) -> str:
    """The part of ``image`` the grammar refuses, in words."""
    name, at, digest = image.partition("@")
    if at:
        _, separator, hex_ = digest.partition(":")
        if not separator or not re.fullmatch(r"[0-9a-fA-F]{32,}", hex_):
            return f"the digest {digest!r} is not ALGORITHM:HEX with at least 32 hex characters; a sha256 digest has 64"
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        tag = name[colon + 1 :]
        if len(tag) > 128:
            return f"the tag is {len(tag)} characters; at most 128"
        if not re.fullmatch(TAG, tag, re.ASCII):
            return f"the tag {tag!r} must start with a letter, digit or _ and hold only those, . and -"
    return "the name must be lowercase path components of letters and digits joined by . _ __ or -, after a host"


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        spec = pod_template(workload).get("spec") or {}
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            image = container.get("image")
            if not isinstance(image, str) or not image.strip() or image != image.strip() or UNKNOWN in image:
                continue
            why = problem(image)
            if why is None:
                continue
            yield Finding(
                RULE,
                workload.urn,
                f"{workload.kind} {workload.namespace}/{workload.name} (container {container.get('name')}) runs image "
                f"{image!r}, which the kubelet cannot parse: {why}; the container waits in InvalidImageName, is "
                "never pulled nor started, and the workload is never ready (pulumi up's await times out)",
                "write a valid reference: a lowercase repository, a tag of at most 128 word characters, . and -, "
                "and a digest in full (sha256: and its 64 lowercase hex characters, as `docker buildx imagetools "
                "inspect` or the registry prints it), or drop the digest and pin by tag",
            )
