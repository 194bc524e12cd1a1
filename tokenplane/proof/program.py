"""Run any Pulumi Python program offline, under the same recording mocks as ``tokenplane plan``.

``tokenplane check --program DIR`` uses this to apply the policy pack to a
team's own program, without the Pulumi CLI, a backend or cloud credentials.
The project is read the way the Pulumi CLI reads it: ``Pulumi.yaml`` names the
runtime and ``main``, ``Pulumi.<stack>.yaml`` holds the stack's config, and the
program runs with its ``main`` directory as working directory and on
``sys.path``. A secure config value, which only the backend can decrypt, is an
error that asks for a stand-in; what the mocks do not model (a
``StackReference``'s outputs, most invokes such as ``aws.ec2.get_ami``) comes back empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import runpy
import sys
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from tokenplane.contract import OFFLINE_RENDER_ENV
from tokenplane.errors import SpecError
from tokenplane.spec import DEFAULT_KUBERNETES_VERSION  # a program's objects are checked against it

if TYPE_CHECKING:
    from tokenplane.proof.render import RenderResult

DEFAULT_STACK = "dev"
DEFAULT_REGION = "us-east-1"  # what an AWS provider without a region would be asked for; only labels resources


@dataclass(frozen=True)
class Project:
    """A Pulumi project as the CLI sees it: its name, its entry file and one stack's config."""

    name: str
    directory: Path
    entry: Path  # the file the Python language host runs
    stack: str
    config: dict[str, str]  # fully qualified keys (``aws:region``), values as the CLI passes them: strings

    @property
    def entry_path(self) -> str:
        """The entry file relative to the working directory where possible (a SARIF artifact URI)."""
        try:
            return self.entry.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return self.entry.as_posix()

    @property
    def aws_region(self) -> str:
        return self.config.get("aws:region", DEFAULT_REGION)


def load_project(directory: Path, *, stack: str = DEFAULT_STACK, config: Mapping[str, str] | None = None) -> Project:
    """Read ``DIR/Pulumi.yaml`` and ``DIR/Pulumi.<stack>.yaml``; ``config`` overrides the stack file.

    Raises:
        SpecError: no project file, a runtime other than Python, a missing entry file, a
            malformed stack file or a secure value the offline run cannot decrypt.
    """
    directory = directory.resolve()  # the program runs with its own cwd; relative paths would dangle
    project_file = directory / "Pulumi.yaml"
    if not project_file.is_file():
        raise SpecError(
            f"{directory}: no Pulumi.yaml; --program takes the directory of a Pulumi project (the one `pulumi up` runs in)"
        )
    meta = _yaml_mapping(project_file)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{project_file}: name must be the project's name, got {name!r}")
    runtime = meta.get("runtime")
    runtime_name = runtime.get("name") if isinstance(runtime, Mapping) else runtime
    if runtime_name != "python":
        raise SpecError(
            f"{project_file}: runtime {runtime_name!r} is not supported; the offline render runs Python programs only "
            "(use `pulumi preview --policy-pack policies` for other languages)"
        )
    main = directory / str(meta.get("main") or ".")
    entry = main / "__main__.py" if main.is_dir() else main
    if not entry.is_file():
        raise SpecError(
            f"{project_file}: main {meta.get('main') or '.'!r} has no {entry.name}; point main at the program"
        )
    # As the Pulumi CLI layers them: Pulumi.yaml's project config, then the stack file, then the command line.
    values = _project_config(meta.get("config"), project_file, name)
    stack_dir = directory / str(meta.get("stackConfigDir") or ".")
    values |= _stack_config(stack_dir / f"Pulumi.{stack}.yaml", name)
    for key, value in (config or {}).items():
        values[_qualified(key, name)] = value
    return Project(name, directory, entry, stack, values)


def _yaml_mapping(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise SpecError(f"{path}{where}: not valid YAML ({getattr(e, 'problem', e)})") from e
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: cannot read it ({e})") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping at the top, got {type(data).__name__}")
    return data


def _project_config(raw: Any, path: Path, project: str) -> dict[str, str]:
    """Pulumi.yaml's ``config:``: a plain value, ``{value: V}``, or a schema whose ``default`` applies.

    A schema without a default (``{type: string}``) declares a key each stack must set: it adds no value.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: config must be a mapping of key: value, got {type(raw).__name__}")
    values = {}
    for key, declared in raw.items():
        if isinstance(declared, dict):
            if "value" in declared:
                value = declared["value"]
            elif "default" in declared:
                value = declared["default"]
            elif "type" in declared:
                continue
            else:
                raise SpecError(
                    f"{path}: config.{key} is a mapping without value, default or type; write `{key}: VALUE`, "
                    f"`{key}: {{value: VALUE}}` or a schema with type and default"
                )
        else:
            value = declared
        values[_qualified(str(key), project)] = value if isinstance(value, str) else json.dumps(value)
    return values


def _stack_config(path: Path, project: str) -> dict[str, str]:
    if not path.is_file():
        return {}
    raw = _yaml_mapping(path).get("config") or {}
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: config must be a mapping of key: value, got {type(raw).__name__}")
    values = {}
    for key, value in raw.items():
        if isinstance(value, dict) and "secure" in value:
            raise SpecError(
                f"{path}: {key} is a secure value, which only the Pulumi backend can decrypt; pass a stand-in "
                f"with --config {key}=VALUE"
            )
        # The CLI hands structured values to the program as JSON strings.
        values[_qualified(str(key), project)] = value if isinstance(value, str) else json.dumps(value)
    return values


def _qualified(key: str, project: str) -> str:
    return key if ":" in key else f"{project}:{key}"


def parse_config(pairs: list[str]) -> dict[str, str]:
    """``["aws:region=eu-west-1"]`` -> ``{"aws:region": "eu-west-1"}``.

    Raises:
        SpecError: a pair without ``=``.
    """
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SpecError(f"--config {pair!r} must be KEY=VALUE, e.g. --config aws:region=eu-west-1")
        out[key] = value
    return out


def kubernetes_minor(version: str) -> str:
    """``1.31`` or ``v1.31.4`` -> ``1.31``.

    Raises:
        SpecError: anything that is not a Kubernetes version.
    """
    match = re.fullmatch(r"v?(1\.\d+)(\.\d+)?", version.strip())
    if match is None:
        raise SpecError(f"--kubernetes-version {version!r} is not a Kubernetes version; use MAJOR.MINOR, e.g. 1.31")
    return match.group(1)


def render_project(project: Project, *, kubernetes_version: str | None = DEFAULT_KUBERNETES_VERSION) -> RenderResult:
    """Run the project's program under the recording mocks and return its checked resource graph.

    Raises:
        SpecError: the program raised; the message carries the program's own frame and error.
    """
    import pulumi
    from pulumi.runtime import config as runtime_config
    from pulumi.runtime import settings

    from tokenplane.proof.render import render_program

    def program() -> Any:
        runtime_config.set_all_config(dict(project.config))
        with _program_environment(project):
            try:
                runpy.run_path(str(project.entry), run_name="__main__")
            except SystemExit as e:
                raise SpecError(f"{project.entry}: the program exited: {e.code}") from e
            except pulumi.ConfigMissingError as e:
                # Pulumi's own message says to run `pulumi config set`, a CLI the offline check does not need.
                raise SpecError(
                    f"{project.entry}: the program failed{_program_line(e, project.directory)}: it needs config "
                    f"{e.key!r}, which is not set; add it to Pulumi.{project.stack}.yaml's or Pulumi.yaml's config, "
                    f"or pass --config {e.key}=VALUE"
                ) from e
            except Exception as e:
                raise SpecError(f"{project.entry}: the program failed: {_program_frames(e, project.directory)}") from e
        stack = settings.get_root_resource()
        return dict(getattr(stack, "outputs", {}) or {})  # what the program passed to pulumi.export

    result = render_program(
        program,
        regions={project.aws_region: project.aws_region},
        stack=project.stack,
        project=project.name,
        kubernetes_version=kubernetes_version,
        default_region=project.aws_region,
    )
    result.directory = project.entry.parent.resolve()  # as _program_environment's cwd
    return result


@contextlib.contextmanager
def _program_environment(project: Project) -> Iterator[None]:
    """The language host's view: cwd and ``sys.path`` at the program; its own modules forgotten afterwards,
    so that two programs with a module of the same name each import their own."""
    home = project.entry.parent.resolve()
    before = set(sys.modules)
    cwd = Path.cwd()
    sys.path.insert(0, str(home))
    os.chdir(home)
    offline = os.environ.get(OFFLINE_RENDER_ENV)
    os.environ[OFFLINE_RENDER_ENV] = "1"
    try:
        yield
    finally:
        if offline is None:
            os.environ.pop(OFFLINE_RENDER_ENV, None)
        else:
            os.environ[OFFLINE_RENDER_ENV] = offline
        os.chdir(cwd)
        with contextlib.suppress(ValueError):
            sys.path.remove(str(home))
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if origin and Path(origin).resolve().is_relative_to(home):
                del sys.modules[name]


def _program_frames(error: BaseException, directory: Path) -> str:
    """The error with the innermost frame inside the program's directory, as ``file:line``."""
    return f"{type(error).__name__}: {error}{_program_line(error, directory)}"


def _program_line(error: BaseException, directory: Path) -> str:
    """`` at file:line`` of the innermost frame inside the program's directory, or nothing."""
    home = str(directory.resolve())
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith(home)]
    return f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
