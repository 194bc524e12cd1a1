"""A Lambda function's handler names a module its code archive holds, and a function that module defines.

Lambda's Python runtime splits ``handler`` at its last dot and imports the part before it as a module from the
code's root (``a/b.handler`` or ``a.b.handler``: ``a/b.py``), then takes the function after it
(https://docs.aws.amazon.com/lambda/latest/dg/python-handler.html; awslambdaric's bootstrap ``_get_handler``).
Node.js's runtime loads the file named before the first dot of the handler's last path segment (``.js``, ``.mjs``
or ``.cjs``) and the export after it (https://docs.aws.amazon.com/lambda/latest/dg/nodejs-handler.html). A module
the archive does not hold deploys, then every invocation fails: ``Runtime.ImportModuleError`` ("Unable to import
module 'index': No module named 'index'"; cattle-ops/terraform-aws-gitlab-runner#1346) or, for a function the module
does not define, ``Runtime.HandlerNotFound``.

The archive is read where the program builds it: a ``pulumi.AssetArchive`` (its file names, and each file's text
for a ``StringAsset`` or a readable ``FileAsset``) or a ``pulumi.FileArchive`` of a directory or a .zip/.jar that
exists (a relative path resolves against the program's directory, its working directory under ``pulumi up``; one
that is not found is not judged). A function is "defined" when its name
appears in the module's text at all, so only a name that is nowhere in it is reported.

It cannot see: code from S3 (``s3Bucket``) or an image (``packageType`` Image), remote assets, functions with
layers (a layer's ``/opt/python`` or ``/opt/nodejs`` may hold the module), runtimes other than Python and Node.js,
and modules the runtime itself provides.
"""

from __future__ import annotations

import re
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "lambda-handler-resolves"
FUNCTION = "aws:lambda/function:Function"
NODE_EXTENSIONS = (".js", ".mjs", ".cjs")


def archive_files(code: Any, base: Path | None = None) -> dict[str, str | None] | None:
    """The files of a program-built code archive (name -> text, None where unknown); None if not knowable.

    ``base``: the directory relative paths resolve against (the program's); the working directory if None.
    """
    assets = getattr(code, "assets", None)
    if isinstance(assets, dict):
        files: dict[str, str | None] = {}
        for name, member in assets.items():
            if hasattr(member, "assets") or _is_file_archive(member):
                inner = archive_files(member, base)
                if inner is None:
                    return None
                files.update({f"{str(name).rstrip('/')}/{n}": t for n, t in inner.items()})
            elif hasattr(member, "text"):
                files[str(name)] = str(member.text)
            elif hasattr(member, "path"):
                files[str(name)] = _read(_resolved(member.path, base))
            elif hasattr(member, "uri"):
                if str(member.uri).endswith("/"):
                    return None
                files[str(name)] = None
            else:
                return None
        return files
    if _is_file_archive(code):
        return _file_archive(_resolved(code.path, base))
    return None


def _resolved(path: Any, base: Path | None) -> Path:
    return (base or Path.cwd()) / Path(str(path))  # an absolute path stays itself


def _is_file_archive(value: Any) -> bool:
    return type(value).__name__ == "FileArchive" and hasattr(value, "path")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _file_archive(path: Path) -> dict[str, str | None] | None:
    try:
        if path.is_dir():
            return {
                file.relative_to(path).as_posix(): _read(file) if file.suffix in (".py", *NODE_EXTENSIONS) else None
                for file in path.rglob("*")
                if file.is_file()
            }
        if path.suffix in (".zip", ".jar") and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                return {
                    n: archive.read(n).decode("utf-8", "replace") if n.endswith((".py", *NODE_EXTENSIONS)) else None
                    for n in archive.namelist()
                    if not n.endswith("/")
                }
        if path.is_file() and tarfile.is_tarfile(path):
            with tarfile.open(path) as archive:
                return {m.name.removeprefix("./"): None for m in archive.getmembers() if m.isfile()}
    except (OSError, zipfile.BadZipFile, tarfile.TarError, ValueError):
        return None
    return None


def python_handler(handler: str, files: dict[str, str | None]) -> tuple[str, str | None, str] | None:
    """(module, its text or None, function) for a Python handler; module None-text means present but unread."""
    if "." not in handler:
        return None
    module, function = handler.rsplit(".", 1)
    path = module.replace(".", "/")
    for candidate in (f"{path}.py", f"{path}/__init__.py"):
        if candidate in files:
            return candidate, files[candidate], function
    if any(n.startswith((f"{path}.", f"{path}/")) for n in files):  # a compiled module or a namespace package
        return path, None, function
    return None


def node_handler(handler: str, files: dict[str, str | None]) -> tuple[str, str | None, str] | None:
    head, _, last = handler.rpartition("/")
    if "." not in last:
        return None
    name, function = last.split(".", 1)
    path = f"{head}/{name}" if head else name
    for candidate in (path + ext for ext in NODE_EXTENSIONS):
        if candidate in files:
            return candidate, files[candidate], function.split(".", 1)[0]
    if any(n.startswith(f"{path}/") for n in files):  # a directory with an index or a package.json
        return path, None, function
    return None


def check(graph: Graph) -> Iterator[Finding]:
    for function in graph.of_type(FUNCTION):
        if (finding := _judge(function, graph.result.directory)) is not None:
            yield finding


def _judge(function: RenderedResource, base: Path | None) -> Finding | None:
    inputs = function.inputs
    runtime = str(inputs.get("runtime") or "")
    handler = inputs.get("handler")
    if not isinstance(handler, str) or inputs.get("layers") or str(inputs.get("packageType") or "Zip") != "Zip":
        return None
    if runtime.startswith("python"):
        language, resolve = "Python", python_handler
    elif runtime.startswith("nodejs"):
        language, resolve = "Node.js", node_handler
    else:
        return None
    files = archive_files(inputs.get("code"), base)
    if files is None or not files:
        return None
    if language == "Node.js" and any(n.startswith("node_modules/") or "/node_modules/" in n for n in files):
        return None  # Node resolves a bare module name through node_modules too
    listed = ", ".join(sorted(files)[:8]) + (", ..." if len(files) > 8 else "")
    found = resolve(handler, files)
    if found is None:
        module = handler.rsplit(".", 1)[0] if language == "Python" else handler.rpartition("/")[2].split(".", 1)[0]
        return Finding(
            RULE,
            function.urn,
            f"Lambda function {function.name} ({runtime}) has handler {handler!r}, but its code archive holds no "
            f"module {module!r} (it holds {listed}): every invocation fails with Runtime.ImportModuleError "
            f"(\"Unable to import module '{module}'\")",
            "name the archived module in the handler (<file without extension>.<function>), or archive the module "
            "the handler names",
        )
    path, text, name = found
    if text is None or re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text):
        return None
    return Finding(
        RULE,
        function.urn,
        f"Lambda function {function.name} ({runtime}) has handler {handler!r}, but {path} in its code archive "
        f"never names {name!r}: every invocation fails with Runtime.HandlerNotFound",
        f"define {name} in {path}, or name the function it defines in the handler",
    )
