"""What is on an image's filesystem, for the images the program knows: its executables, its own directories, its
user. ``known_images`` says which image a container runs; this says what that image holds.

- tokenplane's serving image (``serving/images/Dockerfile``): ``python:3.11-slim-bookworm`` (Debian 12's
  ``Priority: required`` packages, which the slim variant keeps, plus CPython under ``/usr/local``; no curl, wget,
  ps or netcat: https://github.com/docker-library/python, ``3.11/slim-bookworm/Dockerfile`` installs only
  ca-certificates, netbase and tzdata besides), the locked requirements' console scripts and the ``tokenplane``
  CLI, ``USER 10001`` (home ``/home/tokenplane``), no WORKDIR (``/``) and no ENTRYPOINT (CMD ``python -m
  tokenplane.serving.gateway``). Its ``python -m`` entry points are the ``serving/*/__main__.py`` modules (a test
  holds the list to the code).
- the vLLM image's ENTRYPOINT is ``vllm serve`` and its WORKDIR ``/vllm-workspace`` (vllm ``docker/Dockerfile``,
  ``vllm-openai`` stage); its executables are not judged (the CUDA base's package set is not the program's own).
- the official ``python:*-slim*`` and ``debian:*-slim`` images: the same Debian 12 required set (plus CPython's
  scripts in ``/usr/local/bin`` for python's), judged as the serving image is; the full (non-slim) variants build on
  buildpack-deps, which adds curl, wget, git and compilers, so their executables are not judged.
- a few third-party images whose USER and WORKDIR their Dockerfiles set (``THIRD_PARTY``): the official library
  images set no USER, so they run as root (their entrypoints drop privileges with gosu where they do), and
  Prometheus' images run as ``nobody``, a name the kubelet cannot verify.
- the AWS CLI v2 image (Docker Hub ``amazon/aws-cli``, ECR Public ``aws-cli/aws-cli``), built from aws/aws-cli's
  ``docker/Dockerfile``: Amazon Linux 2, no USER (it runs as root), ``WORKDIR /aws``, ``ENTRYPOINT
  ["/usr/local/bin/aws"]`` and no CMD (https://github.com/aws/aws-cli/blob/v2/docker/Dockerfile;
  https://docs.aws.amazon.com/cli/latest/userguide/getting-started-docker.html runs ``docker run ... amazon/aws-cli
  s3 ls``: the arguments are the CLI's). Its ENTRYPOINT takes a command (a service name, ``help``, ``configure``)
  before anything else, so ``args`` alone must start with one (``entrypoint_refusal``); its executables (Amazon
  Linux's) are not judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tokenplane.proof.deployability.known_images import Image, known, repository


def names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Where PATH lookups find an executable in a Debian 12 image (merged /usr: /bin is /usr/bin).
DEBIAN_BIN_DIRS = ("/bin", "/usr/bin", "/sbin", "/usr/sbin")
LOCAL_BIN_DIRS = ("/usr/local/bin", "/usr/local/sbin")
# Debian 12's Priority: required packages' executables (coreutils, dash, bash, util-linux, mount, grep, sed, mawk,
# findutils, tar, gzip, diffutils, hostname, login, passwd, debianutils, sysvinit-utils, ncurses-bin, bsdutils,
# libc-bin, perl-base, dpkg, apt, gpgv), the names a probe or hook script plausibly calls.
DEBIAN_REQUIRED = names(
    """
    sh dash bash rbash cat chgrp chmod chown cp date dd df dir echo false ln ls mkdir mknod mktemp mv pwd readlink
    rm rmdir sleep stty sync touch true uname vdir env head tail wc sort uniq cut tr tee test [ basename dirname id
    whoami printf printenv timeout nohup nproc seq stat du md5sum sha1sum sha256sum sha512sum b2sum base64 base32
    yes expr realpath install split od comm join paste fold nl tac shuf truncate chroot groups hostid users who sum
    cksum csplit factor fmt link logname mkfifo numfmt pathchk pinky pr ptx runcon stdbuf tsort unexpand expand
    unlink arch kill grep egrep fgrep rgrep sed awk mawk find xargs tar gzip gunzip zcat zgrep zdiff zless zmore
    uncompress diff cmp sdiff diff3 which hostname domainname dnsdomainname login su nologin mount umount more
    findmnt lsblk getopt setsid flock nsenter unshare renice logger script mesg wall perl run-parts savelog
    ischroot pidof dpkg dpkg-query apt apt-get apt-cache gpgv tic tput tset clear reset infocmp toe getent ldd
    ldconfig locale iconv tzselect zdump passwd chsh chfn useradd usermod userdel groupadd groupdel newgrp
    """
)
# CPython's own scripts in /usr/local/bin (the python image), the locked requirements' console scripts and the
# tokenplane CLI (pyproject's [project.scripts]), all installed into /usr/local/bin by pip.
SERVING_LOCAL = names(
    """
    python python3 python3.11 python3-config python3.11-config pip pip3 pip3.11 pydoc pydoc3 pydoc3.11 idle idle3
    idle3.11 2to3 2to3-3.11 wheel uvicorn watchfiles openai huggingface-cli hf tqdm httpx dotenv jp.py f2py
    numpy-config websockets tokenplane
    """
)
# The serving package's ``python -m`` entry points (serving/*/__main__.py, installed as tokenplane.serving.*).
SERVING_PACKAGE = "tokenplane.serving"
SERVING_MODULES = frozenset(f"{SERVING_PACKAGE}.{m}" for m in ("gateway", "modelgw", "finops", "engine", "batch"))
SERVING_USER_HOME = "/home/tokenplane"  # useradd --create-home: the one directory UID 10001 owns in the image
# Every image's programs and libraries live here; a volume mounted at one of them, or above, hides them.
SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib64", "/usr", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/local")


# CPython's scripts in the python image's /usr/local/bin, any minor version (python3.12, pip3.13, ...).
CPYTHON_LOCAL = re.compile(r"(python|pip|pydoc|idle|2to3)(3(\.\d+)?)?(-3\.\d+)?|python3(\.\d+)?-config|wheel")


@dataclass(frozen=True)
class ImageFiles:
    """One image's USER (None: not known), WORKDIR, ENTRYPOINT, the directories of its own program, and its
    executables: ``system`` in Debian's bin directories (None: not known, so no command is judged) and ``local``
    in ``/usr/local/bin``."""

    user: str | None
    workdir: str = "/"
    entrypoint: tuple[str, ...] = ()
    own_dirs: tuple[str, ...] = ()
    system: frozenset[str] | None = None
    local: frozenset[str] = frozenset()
    cpython: bool = False  # CPython's versioned scripts in /usr/local/bin (``CPYTHON_LOCAL``)
    # How the ENTRYPOINT refuses a first argument that names a program (a shell, a path) where it takes a command
    # of its own first, not a program to exec; None where it is not known (or the ENTRYPOINT execs its arguments).
    entrypoint_refusal: str | None = None

    def has(self, path: str) -> bool:
        """Whether the image has ``path`` (a bare name, looked up on PATH, or an absolute path); judge only images
        whose ``system`` is known."""
        if self.system is None:
            return True
        directory, _, name = path.rpartition("/")
        local = name in self.local or (self.cpython and CPYTHON_LOCAL.fullmatch(name) is not None)
        if "/" not in path:
            return name in self.system or local
        if directory in DEBIAN_BIN_DIRS:
            return name in self.system
        return directory in LOCAL_BIN_DIRS and local


SERVING = ImageFiles(
    user="10001",
    own_dirs=(*LOCAL_BIN_DIRS, "/usr/local/lib/python3.11"),
    system=DEBIAN_REQUIRED,
    local=SERVING_LOCAL,
)
VLLM = ImageFiles(
    user="root",
    workdir="/vllm-workspace",
    entrypoint=("vllm", "serve"),
)
_ROOT = ImageFiles(user="root")
# The AWS CLI image (aws/aws-cli, docker/Dockerfile): no USER, WORKDIR /aws, ENTRYPOINT ["/usr/local/bin/aws"]. The
# CLI's parser takes its command first and exits 252 on any other word ("aws: error: argument command: Invalid
# choice", https://docs.aws.amazon.com/cli/latest/topic/return-codes.html: 252, the command syntax was invalid).
AWS_CLI = ImageFiles(
    user="root",
    workdir="/aws",
    entrypoint=("/usr/local/bin/aws",),
    entrypoint_refusal="aws: error: argument command: Invalid choice",
)
# Third-party images by repository (registry host and tag dropped, ``known_images.repository``): their
# Dockerfiles on Docker Hub (docker-library/official-images, prometheus/*, qdrant/qdrant). qdrant/qdrant's
# ``-unprivileged`` tags are another Dockerfile (USER 1000): ``files`` reads the tag.
THIRD_PARTY: dict[str, ImageFiles] = {
    **{
        name: _ROOT
        for name in (
            "nginx",
            "httpd",
            "redis",
            "postgres",
            "mysql",
            "mariadb",
            "mongo",
            "rabbitmq",
            "busybox",
            "alpine",
            "ubuntu",
            "debian",
            "python",
            "node",
            "golang",
            "traefik",
            "caddy",
            "amazonlinux",
        )
    },
    **{
        name: ImageFiles(user="nobody", workdir="/prometheus")
        for name in ("prom/prometheus", "quay.io/prometheus/prometheus")
    },
    **{name: ImageFiles(user="nobody") for name in ("prom/alertmanager", "prom/node-exporter", "prom/pushgateway")},
    # prometheus/blackbox_exporter's Dockerfile (v0.24.0 to v0.28.0 and main, read 2026-12-07) sets no USER on
    # quay.io/prometheus/busybox (none either): it runs as root. Its -distroless variant (USER 65532) is ``files``'.
    **{name: _ROOT for name in ("prom/blackbox-exporter", "quay.io/prometheus/blackbox-exporter")},
    "memcached": ImageFiles(user="memcache"),
    "haproxy": ImageFiles(user="haproxy"),
    "curlimages/curl": ImageFiles(user="curl_user"),
    "qdrant/qdrant": ImageFiles(user="root", workdir="/qdrant", own_dirs=("/qdrant",)),
    **{name: AWS_CLI for name in ("amazon/aws-cli", "aws-cli/aws-cli")},
}
QDRANT_UNPRIVILEGED = ImageFiles(user="1000", workdir="/qdrant", own_dirs=("/qdrant",))
# Slim variants by repository: the Debian required set, and CPython for python's (docker-library/python's
# slim Dockerfiles install ca-certificates, netbase and tzdata besides, none of them a program a probe calls).
SLIM: dict[str, ImageFiles] = {
    "python": replace(_ROOT, system=DEBIAN_REQUIRED, cpython=True),
    "debian": replace(_ROOT, system=DEBIAN_REQUIRED),
}


def files(image: str) -> ImageFiles | None:
    """What ``image`` holds, or None where the program does not know it."""
    ours = known(image)
    if ours is Image.SERVING:
        return SERVING
    if ours is Image.VLLM:
        return VLLM
    name = repository(image).removeprefix("docker/library/").removeprefix("library/")  # ECR Public's mirror too
    found = THIRD_PARTY.get(name)
    if found is not None and name == "qdrant/qdrant" and _tag(image).endswith("-unprivileged"):
        return QDRANT_UNPRIVILEGED
    if found is _ROOT and name.endswith("blackbox-exporter") and "distroless" in _tag(image):
        return None  # Dockerfile.distroless: gcr.io/distroless/static's nonroot user, not judged
    if name in SLIM and "slim" in _tag(image).split("-"):
        return SLIM[name]
    return found


def _tag(image: str) -> str:
    path = image.split("@", 1)[0]
    last_colon, last_slash = path.rfind(":"), path.rfind("/")
    return path[last_colon + 1 :] if last_colon > last_slash else ""


def under(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies below it."""
    directory = directory.rstrip("/") or "/"
    return directory in ("/", path.rstrip("/") or "/") or path.startswith(f"{directory}/")
