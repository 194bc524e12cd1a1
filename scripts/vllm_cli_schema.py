"""Write components/schemas/vllm-<version>-cli.json: every option ``vllm serve`` accepts at the pinned release.

Usage: python scripts/vllm_cli_schema.py [--installed | --wheel PATH]

With ``--installed`` it walks the parser itself: ``make_arg_parser`` of the vLLM installed in this
Python (``pip install 'tokenplane[cpu-engine]'``: the CPU build shares the CUDA wheel's parser
source), which is the parser ``vllm serve`` runs, so nothing is inferred. This is how the current
schema is made. The source reading below stays for a machine where vLLM cannot be imported.

Without ``--wheel`` it runs ``pip download vllm==<pin> --no-deps`` (the pin is
the tag of ``components.pins.VLLM_IMAGE``). It reads the parser's own source
from the wheel, without importing it (importing vLLM needs torch and CUDA):

- ``vllm/entrypoints/cli/serve.py`` and ``make_arg_parser`` in
  ``vllm/entrypoints/openai/cli_args.py``: explicit ``add_argument`` calls;
- ``FrontendArgs.add_cli_args``: one ``--field-name`` per dataclass field;
- ``EngineArgs.add_cli_args`` / ``AsyncEngineArgs.add_cli_args`` in
  ``vllm/engine/arg_utils.py``: ``add_argument("--flag", **x_kwargs["field"])``
  where ``x_kwargs = get_kwargs(SomeConfig)``.

The field's type annotation decides the option's shape as ``get_kwargs`` does:
``bool`` becomes a BooleanOptionalAction (``--x`` and ``--no-x``, no value),
``Literal[...]`` (directly or through an alias) gives choices, anything else
takes a value. The script fails if an ``add_argument`` call has a shape it
cannot read, rather than leave an option out.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokenplane.components.pins import VLLM_IMAGE  # noqa: E402 - the repository root goes on the path first

SERVE = "vllm/entrypoints/cli/serve.py"
FRONTEND = "vllm/entrypoints/openai/cli_args.py"
ENGINE = "vllm/engine/arg_utils.py"
TYPED_MODULES = re.compile(r"vllm/(config/[a-z_]+|engine/arg_utils|entrypoints/openai/cli_args)\.py")


@dataclass
class Option:
    dest: str
    takes_value: bool
    choices: list[str] | None = None
    negatable: bool = False  # BooleanOptionalAction: --no-<name> too
    source: str = ""
    nargs: str | None = None  # "+" or "*": several values follow (list/tuple/set fields)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dest": self.dest, "takes_value": self.takes_value, "source": self.source}
        if self.choices is not None:
            out["choices"] = self.choices
        if self.nargs is not None:
            out["nargs"] = self.nargs
        return out


@dataclass
class Sources:
    files: dict[str, str]
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    aliases: dict[str, ast.expr] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for path, text in self.files.items():
            if not TYPED_MODULES.fullmatch(path):
                continue
            for node in ast.parse(text).body:
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, node)
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    self.aliases.setdefault(node.targets[0].id, node.value)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    self.aliases.setdefault(node.target.id, node.value)

    def fields(self, cls: str) -> dict[str, ast.expr]:
        """Annotated fields of a dataclass, its bases' first (as ``dataclasses.fields`` orders them)."""
        node = self.classes.get(cls)
        if node is None:
            raise SystemExit(f"class {cls} not found in the wheel's config modules")
        out: dict[str, ast.expr] = {}
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                out.update(self.fields(base.id))
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                if "ClassVar" in ast.unparse(item.annotation) or item.target.id.startswith("_"):
                    continue
                out[item.target.id] = item.annotation
        return out

    def option(self, cls: str, name: str, source: str) -> Option:
        annotation = self.fields(cls).get(name)
        if annotation is None:
            raise SystemExit(f"{source}: {cls} has no field {name}")
        members = self._members(annotation)
        if any(isinstance(m, ast.Name) and m.id == "bool" for m in members):
            return Option(name, takes_value=False, negatable=True, source=source)
        choices: list[str] = []
        literal = False
        for m in members:
            values = self._literal(m)
            if values is not None:
                literal = True
                choices += values
        if literal and any(isinstance(m, ast.Constant) and m.value is None for m in members):
            choices.append("None")
        collection = not literal and any(
            isinstance(m, ast.Subscript) and ast.unparse(m.value) in ("list", "tuple", "set") for m in members
        )
        return Option(
            name,
            takes_value=True,
            choices=choices if literal else None,
            source=source,
            nargs="+" if collection else None,
        )

    def _members(self, annotation: ast.expr) -> list[ast.expr]:
        """The members of a union (``A | B``, ``Optional[A]``), aliases resolved."""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = ast.parse(annotation.value, mode="eval").body  # a string annotation
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            return self._members(annotation.left) + self._members(annotation.right)
        if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) in ("Optional", "typing.Optional"):
            return [*self._members(annotation.slice), ast.Constant(None)]
        if isinstance(annotation, ast.Name) and annotation.id in self.aliases:
            alias = self.aliases[annotation.id]
            if isinstance(alias, ast.Subscript | ast.BinOp | ast.Name):
                return self._members(alias)
        return [annotation]

    def _literal(self, node: ast.expr) -> list[str] | None:
        """A Literal's values, nested Literals and aliases of them flattened (``Literal["auto", RunnerType]``)."""
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return self._literal(self.aliases[node.id])
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("Literal", "typing.Literal"):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            values: list[str] = []
            for item in items:
                if isinstance(item, ast.Constant):
                    values.append(str(item.value))
                else:
                    nested = self._literal(item)
                    if nested is None:
                        raise SystemExit(f"a Literal member this script cannot read: {ast.unparse(item)}")
                    values += nested
            return values
        return None


def explicit(call: ast.Call, source: str) -> tuple[list[str], Option] | None:
    """``add_argument("--flag", action=..., type=..., choices=...)`` without a ``**kwargs`` spread."""
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not flags:
        return None
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    action = keywords.get("action")
    action_name = ast.unparse(action) if action is not None else ""
    dest = flags[0].lstrip("-").replace("-", "_")
    if not flags[0].startswith("-"):
        return flags, Option(dest, takes_value=True, source=source)  # a positional
    if action_name in ("'store_true'", "'store_false'"):
        return flags, Option(dest, takes_value=False, source=source)
    if "BooleanOptionalAction" in action_name:
        return flags, Option(dest, takes_value=False, negatable=True, source=source)
    choices = keywords.get("choices")
    values = None
    if isinstance(choices, ast.List | ast.Tuple):
        values = [str(c.value) for c in choices.elts if isinstance(c, ast.Constant)]
    nargs = keywords.get("nargs")
    many = str(nargs.value) if isinstance(nargs, ast.Constant) and nargs.value in ("+", "*") else None
    return flags, Option(dest, takes_value=True, choices=values, source=source, nargs=many)


def collect(sources: Sources, path: str) -> dict[str, Option]:
    """Every option added in ``path``: explicit calls, and ``**x_kwargs["field"]`` spreads of get_kwargs(Config)."""
    options: dict[str, Option] = {}
    tree = ast.parse(sources.files[path])
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        configs: dict[str, str] = {}
        picked: dict[str, tuple[str, str]] = {}  # moe_kwargs = kernel_kwargs["moe_backend"] -> (config var, field)
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Subscript)
                and isinstance(node.value.value, ast.Name)
                and isinstance(node.value.slice, ast.Constant)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                picked[node.targets[0].id] = (node.value.value.id, str(node.value.slice.value))
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func) == "get_kwargs"
                and isinstance(node.value.args[0], ast.Name)
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        configs[target.id] = node.value.args[0].id
        for node in ast.walk(function):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func).endswith(".add_argument")):
                continue
            where = f"{path}:{node.lineno}"
            if function.name == "add_cli_args" and path == FRONTEND:
                continue  # FrontendArgs' loop over its own fields, read from the dataclass (frontend())
            spreads = [k.value for k in node.keywords if k.arg is None]
            if not spreads:
                found = explicit(node, where)
                if found is None:
                    raise SystemExit(f"{where}: an add_argument call this script cannot read")
                flags, option = found
            else:
                spread = spreads[0]
                if isinstance(spread, ast.Dict):  # **{**x_kwargs["field"], "default": None}: the field's shape
                    keys = [ast.unparse(k) for k in spread.keys if k is not None]
                    if any(k in ("'action'", "'type'", "'choices'", "'nargs'") for k in keys):
                        raise SystemExit(f"{where}: overrides the field's shape ({keys}); extend this script")
                    spread = next((v for k, v in zip(spread.keys, spread.values, strict=True) if k is None), spread)
                if isinstance(spread, ast.Name) and spread.id in picked:
                    var, name = picked[spread.id]
                    spread = ast.Subscript(value=ast.Name(id=var), slice=ast.Constant(value=name))
                if not (
                    isinstance(spread, ast.Subscript)
                    and isinstance(spread.value, ast.Name)
                    and spread.value.id in configs
                    and isinstance(spread.slice, ast.Constant)
                ):
                    raise SystemExit(f"{where}: a **kwargs spread this script cannot read: {ast.unparse(spread)}")
                flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if not flags:
                    raise SystemExit(f"{where}: add_argument without a literal flag")
                option = sources.option(configs[spread.value.id], str(spread.slice.value), where)
            for flag in flags:
                options[flag] = option
                if option.negatable and flag.startswith("--"):
                    options[f"--no-{flag[2:]}"] = option
    return options


def frontend(sources: Sources) -> dict[str, Option]:
    options: dict[str, Option] = {}
    for name in sources.fields("FrontendArgs"):
        option = sources.option("FrontendArgs", name, f"{FRONTEND}:FrontendArgs.{name}")
        flag = f"--{name.replace('_', '-')}"
        options[flag] = option
        if option.negatable:
            options[f"--no-{flag[2:]}"] = option
    return options


def schema(wheel: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel) as z:
        files = {n: z.read(n).decode() for n in z.namelist() if n.endswith(".py") and TYPED_MODULES.fullmatch(n)}
        files[SERVE] = z.read(SERVE).decode()
        version = next(
            n.split("/")[0].removesuffix(".dist-info").split("-")[1]
            for n in z.namelist()
            if n.endswith(".dist-info/METADATA")
        )
    sources = Sources(files)
    options = {**collect(sources, ENGINE), **frontend(sources), **collect(sources, FRONTEND), **collect(sources, SERVE)}
    positional = sorted(f for f in options if not f.startswith("-"))
    return {
        "$comment": (
            f"Options of `vllm serve` in vllm=={version}, generated by scripts/vllm_cli_schema.py from the "
            "wheel's parser source; do not edit by hand."
        ),
        "version": version,
        "positional": positional,
        "options": {f: options[f].to_json() for f in sorted(options) if f.startswith("-")},
    }


def installed_schema() -> dict[str, Any]:
    """The options of the installed vLLM's own ``vllm serve`` parser, read from its argparse actions."""
    from tokenplane.dev.vllm_serve import patch_version

    patch_version()
    import importlib.metadata

    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    version = importlib.metadata.version("vllm").split("+")[0]
    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    options: dict[str, dict[str, Any]] = {}
    positional: list[str] = []
    for action in parser._actions:  # argparse has no public walk of a parser's options
        if not action.option_strings:
            positional.append(action.dest)
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        negatable = isinstance(action, argparse.BooleanOptionalAction)
        takes_value = not negatable and action.nargs != 0
        for flag in action.option_strings:
            option = Option(dest=action.dest, takes_value=takes_value, negatable=negatable, source="installed parser")
            if action.choices is not None and takes_value:
                option.choices = [str(c) for c in action.choices]
            if action.nargs in ("+", "*"):
                option.nargs = str(action.nargs)
            options[flag] = option.to_json()
    return {
        "$comment": f"Options of `vllm serve` in vllm=={version}, generated by scripts/vllm_cli_schema.py "
        "--installed from the installed release's own parser; do not edit by hand.",
        "version": version,
        "positional": positional,
        "options": dict(sorted(options.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="a downloaded vllm wheel; default: pip download the pin")
    parser.add_argument("--installed", action="store_true", help="walk the installed vLLM's own parser")
    args = parser.parse_args()
    version = VLLM_IMAGE.rsplit(":v", 1)[1]
    wheel = args.wheel
    if args.installed:
        data = installed_schema()
    elif wheel is None:
        tmp = Path(tempfile.mkdtemp(prefix="vllm-wheel-"))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"vllm=={version}",
                "--no-deps",
                "--only-binary",
                ":all:",
                "-d",
                str(tmp),
            ],
            check=True,
        )
        wheel = next(tmp.glob("vllm-*.whl"))
    if not args.installed:
        data = schema(wheel)
    if data["version"] != version:
        raise SystemExit(
            f"{wheel or 'the installed vLLM'} is vllm {data['version']}, but components/pins.py pins {version}"
        )
    out = ROOT / "components" / "schemas" / f"vllm-{version}-cli.json"
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{out.relative_to(ROOT)}: {len(data['options'])} options of vllm serve {version}")


if __name__ == "__main__":
    main()
