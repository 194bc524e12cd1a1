"""The nginx configuration a container of a known nginx image runs, read from the files the program mounts.

A small reader of nginx's configuration syntax as ``ngx_conf_read_token`` (src/core/ngx_conf_file.c) reads it:
words separated by whitespace, a directive ending in ``;`` or in a ``{ ... }`` block, ``"..."`` and ``'...'`` quoting
with backslash escapes, ``#`` comments from a word's start to the end of the line, and ``${name}`` kept whole in a
word. (nginxinc's ``crossplane`` parses the same syntax, but it reads files from a disk, is untyped and was last
released in 2022; the syntax is small enough to read here.)

``container_config`` follows the image's main file (``known_images.config_files``: ``/etc/nginx/nginx.conf``, or
nginx's ``-c``) and its ``include``s (relative paths from ``/etc/nginx``, globs matched in name order, as nginx does)
through the ConfigMap and Secret files the container mounts (``mounted_files``). Without a mounted main file it is the
images' own nginx.conf (https://github.com/nginxinc/docker-nginx, mainline/alpine/nginx.conf: ``http { include
/etc/nginx/mime.types; ... include /etc/nginx/conf.d/*.conf; }``, no ``resolver``). An ``include`` whose content is
not known (a file of the image other than mime.types, a redacted or unknown value) stays in the tree as it is, so
that a rule can tell that a block's directives are not all known (``Scoped.known``).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.image_commands import nginx_options
from tokenplane.proof.deployability.known_images import config_files
from tokenplane.proof.deployability.mounted_files import mounted_files

PREFIX = "/etc/nginx"  # the images' --prefix's conf dir: relative include paths are read from here
# The images' own nginx.conf, less the directives no rule reads (user, pid, logs, sendfile, keepalive_timeout).
IMAGE_MAIN = (
    "events { worker_connections 1024; }\nhttp { include /etc/nginx/mime.types; include /etc/nginx/conf.d/*.conf; }\n"
)
_SPECIAL = ";{}"
_ESCAPES = {"t": "\t", "r": "\r", "n": "\n"}


@dataclass(frozen=True)
class Directive:
    name: str
    args: tuple[str, ...]
    block: tuple[Directive, ...] | None  # None: a simple directive (ended by ``;``)
    file: str = ""


@dataclass(frozen=True)
class Scoped:
    """A directive with the block directives that hold it, outermost first (``http``, ``server``, ``location``)."""

    directive: Directive
    parents: tuple[Directive, ...]

    @property
    def context(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parents)

    def nearest(self, name: str) -> Directive | None:
        """The ``name`` directive in scope: in the innermost enclosing block that has one (nginx's inheritance of
        an http/server/location setting); None where none has."""
        for block in reversed(self.parents):
            found = [d for d in block.block or () if d.name == name]
            if found:
                return found[-1]
        return None

    def known(self) -> bool:
        """Whether every enclosing block's directives are known (no ``include`` of unknown content left)."""
        return not any(d.name == "include" for block in self.parents for d in block.block or ())


def tokens(text: str) -> list[tuple[str, bool]] | None:
    """(word, whether it was quoted) of ``text``, ``;``/``{``/``}`` as words of their own; None on an unclosed
    quote."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif ch in _SPECIAL:
            out.append((ch, False))
            i += 1
        elif ch in "\"'":
            word, i = _quoted(text, i + 1, ch)
            if word is None:
                return None
            out.append((word, True))
        else:
            chars: list[str] = []
            while (
                i < n and not text[i].isspace() and text[i] not in ";" and not (text[i] in "{}" and not _in_var(chars))
            ):
                if text[i] == "\\" and i + 1 < n:
                    chars.append(_unescape(text[i + 1]))
                    i += 2
                    continue
                chars.append(text[i])
                i += 1
            out.append(("".join(chars), False))
    return out


def _in_var(chars: list[str]) -> bool:
    """Whether a ``{``/``}`` at this point belongs to a ``${name}`` variable (nginx keeps it in the word)."""
    word = "".join(chars)
    return word.endswith("$") or ("${" in word and "}" not in word[word.rfind("${") :])


def _unescape(ch: str) -> str:
    """What nginx makes of a backslash and ``ch``: \\" \\' \\\\ \\t \\r \\n unescaped, any other kept whole."""
    return _ESCAPES.get(ch, ch) if ch in _ESCAPES or ch in "\"'\\" else "\\" + ch


def _quoted(text: str, i: int, quote: str) -> tuple[str | None, int]:
    chars: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            chars.append(_unescape(nxt))
            i += 2
        elif ch == quote:
            return "".join(chars), i + 1
        else:
            chars.append(ch)
            i += 1
    return None, i


def parse(text: str, file: str = "") -> tuple[Directive, ...] | None:
    """The directives of ``text``, or None where it is not nginx syntax (nginx refuses it at start)."""
    words = tokens(text)
    if words is None:
        return None
    stack: list[tuple[list[Directive], str, tuple[str, ...]]] = []
    current: list[Directive] = []
    pending: list[str] = []
    for word, quoted in words:
        if not quoted and word == ";":
            if not pending:
                return None
            current.append(Directive(pending[0], tuple(pending[1:]), None, file))
            pending = []
        elif not quoted and word == "{":
            if not pending:
                return None
            stack.append((current, pending[0], tuple(pending[1:])))
            current, pending = [], []
        elif not quoted and word == "}":
            if pending or not stack:
                return None
            outer, name, args = stack.pop()
            outer.append(Directive(name, args, tuple(current), file))
            current = outer
        else:
            pending.append(word)
    if pending or stack:
        return None
    return tuple(current)


def walk(directives: tuple[Directive, ...], parents: tuple[Directive, ...] = ()) -> Iterator[Scoped]:
    """Every directive, depth first, with the blocks that hold it."""
    for directive in directives:
        yield Scoped(directive, parents)
        if directive.block is not None:
            yield from walk(directive.block, (*parents, directive))


def resolve_includes(
    directives: tuple[Directive, ...],
    files: Mapping[str, str | None],
    image_files: tuple[str, ...] = (),
    depth: int = 0,
) -> tuple[Directive, ...]:
    """``directives`` with each ``include`` replaced by the directives of the mounted files it names (a glob's in
    name order); an include of one of the image's own files (mime.types: types only) dropped; one of unknown
    content kept as it is."""
    out: list[Directive] = []
    for directive in directives:
        if directive.name == "include" and len(directive.args) == 1 and depth < 10:
            included = _included(directive.args[0], files, image_files, depth)
            if included is not None:
                out.extend(included)
                continue
        if directive.block is not None:
            out.append(
                Directive(
                    directive.name,
                    directive.args,
                    resolve_includes(directive.block, files, image_files, depth),
                    directive.file,
                )
            )
            continue
        out.append(directive)
    return tuple(out)


def _included(
    pattern: str, files: Mapping[str, str | None], image_files: tuple[str, ...], depth: int
) -> list[Directive] | None:
    path = posixpath.normpath(posixpath.join(PREFIX, pattern))
    glob = any(c in path for c in "*?[")
    names = sorted(f for f in files if fnmatch.fnmatchcase(f, path)) if glob else [path] if path in files else []
    if not names:
        if path in image_files or glob:
            return []  # the image's own mime.types, or a glob matching none of the mounted files
        return None
    out: list[Directive] = []
    for name in names:
        text = files[name]
        parsed = parse(text, name) if text is not None else None
        if parsed is None:
            return None
        out.extend(resolve_includes(parsed, files, image_files, depth + 1))
    return out


def container_config(
    graph: Graph, workload: KubeObject, pod: dict[str, Any], container: dict[str, Any]
) -> tuple[Directive, ...] | None:
    """The configuration the container's nginx runs, its includes followed; None where the container runs no
    known nginx image's server, or its main file is not known (a mounted value unknown, a relative ``-c`` or a
    ``-p``)."""
    known = config_files(str(container.get("image") or ""))
    options = nginx_options(container)
    if known is None or options is None or "p" in options:
        return None
    main, image_files = known
    main = options.get("c", main)
    if not main.startswith("/"):
        return None
    files = mounted_files(graph, workload, pod, container)
    if main in files:
        text = files[main]
    elif main == known[0]:
        text = IMAGE_MAIN
    else:
        return None
    parsed = parse(text, main) if text is not None else None
    return None if parsed is None else resolve_includes(parsed, files, image_files)
