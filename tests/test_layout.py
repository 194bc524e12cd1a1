"""The rooms hold what they say: one place per derived value, no import cycles, a layout the README tells true.

These read the source as text or syntax trees; each check is also run on a small
snippet with the defect put back, to show that it fires.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tokenplane.runtime_env import POOL_URL_PREFIX, Var

ROOT = REPO_ROOT
PACKAGES = ("tokenplane", "serving", "components", "policies")
PRODUCTION = ("tokenplane", "serving", "components")
# The repository's top-level folders that install as tokenplane.components, tokenplane.serving, tokenplane.policies.
NAMESPACED = ("components", "serving", "policies")
OLD_IMPORT = re.compile(r"^\s*(from|import) (components|serving|policies)\b", re.MULTILINE)
ENV_NAMES = {v.value for v in Var}
# Where a value is derived; nowhere else may derive it again.
# The node a pool runs on: its instance_type, else its GPU's default (a validator checking the pair is not this).
NODE_EXPR = re.compile(
    r"instance_type\(\s*(\w+)\.instance_type\s*\)\s+if\s+\1\.instance_type|default_instance\(\s*\w+\.gpu\s*\)"
)
GPUS_EXPR = re.compile(r"tensor_parallel\s*\*\s*\w*\.?pipeline_parallel")
NODE_HOME = {"tokenplane/pool_model.py"}
GPUS_HOME = {"tokenplane/spec.py"}
# Where a request may go: the routing section's decisions are read in one module (tokenplane.routes).
ROUTING_FIELDS = {"mix", "fallbacks", "rules"}
ROUTES_HOME = {"tokenplane/routes.py"}


def _sources(roots: Iterable[str]) -> Iterator[tuple[str, str]]:
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.split("/")[:2] in ([root, n] for n in NAMESPACED):
                continue  # tokenplane/components is the link to components/: each file is read once
            yield rel, path.read_text(encoding="utf-8")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def env_literals(source: str) -> list[str]:
    """Environment variable names written as string literals (docstrings aside)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and (node.value in ENV_NAMES or node.value.startswith(POOL_URL_PREFIX))
    ]


def module_name(relative: str) -> str:
    """The dotted name a file is imported as: the top-level folders install under ``tokenplane``."""
    name = relative.removesuffix(".py").replace("/", ".")
    if name.split(".", 1)[0] in NAMESPACED:
        name = f"tokenplane.{name}"
    return name.removesuffix(".__init__")


def import_graph(sources: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Module -> the modules it imports, lazily or not, type-only imports included."""
    files = dict(sources)
    modules = {module_name(rel) for rel in files}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for rel, text in files.items():
        me = module_name(rel)
        targets: set[str] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.update(filter(None, (resolve(f"{node.module}.{a.name}") for a in node.names)))
            elif isinstance(node, ast.Import):
                targets.update(filter(None, (resolve(a.name) for a in node.names)))
        # A package's __init__ re-exporting its children is not a cycle with them.
        graph[me] = {t for t in targets if t != me and not me.startswith(f"{t}.")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _held_out_case(rel: str) -> bool:
    """A held-out deployability case: a user's program written blind (its runner is ours and is scanned)."""
    parts = rel.split("/")
    return len(parts) > 3 and parts[0] == "benchmarks" and parts[1].startswith("heldout_deployability")


def test_no_env_var_name_is_written_outside_runtime_env() -> None:
    found = {
        rel: hits
        for rel, text in _sources((*PRODUCTION, "benchmarks"))
        if rel != "tokenplane/runtime_env.py" and not _held_out_case(rel) and (hits := env_literals(text))
    }
    assert not found, f"use tokenplane.runtime_env.Var instead: {found}"


def test_the_env_check_fires_on_a_literal_name() -> None:
    assert env_literals('env = [{"name": "REDIS_URL", "value": url}, {"name": "POOL_URL_SMALL"}]') == [
        "REDIS_URL",
        "POOL_URL_SMALL",
    ]
    assert env_literals('"""REDIS_URL in a docstring is prose."""\nx = Var.REDIS_URL') == []


def test_no_module_rederives_a_pools_node_or_gpus() -> None:
    for rel, text in _sources(PRODUCTION):
        if rel not in NODE_HOME:
            assert not NODE_EXPR.search(text), f"{rel} derives a pool's node; use pool_model.node_for"
        if rel not in GPUS_HOME:
            assert not GPUS_EXPR.search(text), f"{rel} multiplies TP x PP; use pool.gpus_per_replica"


def test_the_rederivation_check_fires_on_the_old_expression() -> None:
    old = "node = instance_type(pool.instance_type) if pool.instance_type else default_instance(pool.gpu)"
    assert NODE_EXPR.search(old)
    assert GPUS_EXPR.search("needed = sum(p.tensor_parallel * p.pipeline_parallel for p in pools)")


def routing_reads(source: str) -> list[str]:
    """``<x>.routing.mix`` / ``.fallbacks`` / ``.rules`` (or the same through a name ``routing``), as written."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or node.attr not in ROUTING_FIELDS:
            continue
        owner = node.value
        if (isinstance(owner, ast.Attribute) and owner.attr == "routing") or (
            isinstance(owner, ast.Name) and owner.id == "routing"
        ):
            found.append(ast.unparse(node))
    return found


def test_only_routes_reads_the_routing_sections_decisions() -> None:
    found = {
        rel: hits
        for rel, text in _sources((*PACKAGES, "benchmarks", "stacks"))
        if rel not in ROUTES_HOME and (hits := routing_reads(text))
    }
    assert not found, f"ask tokenplane.routes.Routes (split, chain, first_provider, rules) instead: {found}"


def test_the_routing_check_fires_on_a_second_walk_of_the_fallbacks() -> None:
    old = "for target in spec.routing.fallbacks.get(tier, []):\n    pass\nshare = spec.routing.mix[tier]\n"
    assert sorted(routing_reads(old)) == ["spec.routing.fallbacks", "spec.routing.mix"]
    assert routing_reads("routing = spec.routing\nrules = routing.rules\n") == ["routing.rules"]
    assert routing_reads("mix = self.routes.mix\nrouting = starlette.routing\n") == []


def test_no_import_cycle() -> None:
    found = cycles(import_graph(_sources(PACKAGES)))
    assert found == [], f"import cycles: {found}"


def test_the_cycle_check_fires_on_two_modules_that_import_each_other() -> None:
    graph = import_graph(
        [("serving/a.py", "from tokenplane.serving.b import X\n"), ("serving/b.py", "import tokenplane.serving.a\n")]
    )
    assert cycles(graph) == [frozenset({"tokenplane.serving.a", "tokenplane.serving.b"})]


@pytest.mark.parametrize(
    "package",
    sorted((p.parent.relative_to(ROOT) for r in PRODUCTION for p in (ROOT / r).rglob("__init__.py")), key=str),
)
def test_each_package_says_what_it_holds_and_may_import(package: Path) -> None:
    relative = package
    package = ROOT / package
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert len(doc) > 80, f"{relative}/__init__.py should say what the package holds"
    assert "import" in doc.lower(), f"{relative}/__init__.py should say what the package may import"


def test_the_readme_layout_names_only_what_exists() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Layout", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    for folder in re.findall(r"^([\w./-]+/)\s", block, flags=re.MULTILINE):
        assert (ROOT / folder).is_dir(), f"README's layout names {folder}, which is not in the tree"
    core = [line for line in block.splitlines() if line.startswith(" ") and "  " in line.strip()]
    for line in core:
        names = line.strip().split("  ")[0]
        for name in re.findall(r"[a-z_]+/?", names):
            where = ROOT / "tokenplane" / name.rstrip("/")
            found = where.is_dir() if name.endswith("/") else any((ROOT / "tokenplane").rglob(f"{name}.py"))
            assert found, f"README's layout names tokenplane {name}, not in the tree"


def test_nothing_imports_the_old_top_level_names() -> None:
    roots = (*PACKAGES, "stacks", "tests", "benchmarks", "examples", "scripts")
    found = [rel for rel, text in _sources(roots) if OLD_IMPORT.search(text)]
    assert not found, f"import tokenplane.components / tokenplane.serving / tokenplane.policies instead: {found}"


def test_the_old_name_check_fires_on_an_old_import() -> None:
    assert OLD_IMPORT.search("import json\nfrom components import VllmPool\n")
    assert OLD_IMPORT.search("    import serving.gateway.app\n")
    assert not OLD_IMPORT.search("from tokenplane.components import VllmPool\n")


@pytest.mark.parametrize("folder", NAMESPACED)
def test_each_top_level_folder_installs_under_tokenplane(folder: str) -> None:
    link = ROOT / "tokenplane" / folder
    assert link.is_symlink(), f"tokenplane/{folder} must be the link to {folder}/"
    assert link.resolve() == (ROOT / folder).resolve(), f"tokenplane/{folder} must link to {folder}/"


# The core's root holds three kinds only; the performance model, the proof and the commands have folders.
ROOT_MODULES = {
    "vocabulary": {
        "spec",
        "load",
        "catalog",
        "transformer",
        "quantization",
        "schedule",
        "allocatable",
        "aws_offerings",
        "aws_zones",
        "aws_iam_actions",
        "spec_rules",
        "errors",
    },
    "derived once": {"pool_model", "routes"},
    "presentation shared by commands and the workbench": {"tables", "plain_text"},
    "contracts": {"runtime_env", "vllm_args", "vllm_cli", "vllm_metrics", "contract", "package_data", "weights_fetch"},
}


def test_the_core_root_holds_only_the_vocabulary_the_derived_homes_and_the_contracts() -> None:
    allowed = set().union(*ROOT_MODULES.values()) | {"__init__", "__main__"}
    stray = sorted(p.stem for p in (ROOT / "tokenplane").glob("*.py") if p.stem not in allowed)
    assert not stray, f"tokenplane/ root modules of another kind (move to model/, proof/ or commands/): {stray}"


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _names(cell: str) -> set[str]:
    return {g.strip() for g in cell.split(",") if g.strip()}


def import_rules(text: str) -> dict[str, tuple[tuple[str, ...], set[str], set[str]]]:
    """docs/architecture.md's "Who may import whom" table: group -> (module prefixes, may import, never imports)."""
    section = text.split("## Who may import whom", 1)[1].split("\n## ", 1)[0]
    rules: dict[str, tuple[tuple[str, ...], set[str], set[str]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] == "group" or set(cells[0]) <= {"-", " "}:
            continue
        group, modules, may, never = cells
        rules[group] = (tuple(re.findall(r"`([\w.]+)`", modules)), _names(may), _names(never))
    return rules


def group_of(module: str, rules: dict[str, tuple[tuple[str, ...], set[str], set[str]]]) -> str | None:
    """The group whose longest module prefix matches (``tokenplane`` alone holds the core's root modules)."""
    best: str | None = None
    length = -1
    for group, (prefixes, _, _) in rules.items():
        for prefix in prefixes:
            if (module == prefix or module.startswith(f"{prefix}.")) and len(prefix) > length:
                best, length = group, len(prefix)
    return best


def crossings(graph: dict[str, set[str]], rules: dict[str, tuple[tuple[str, ...], set[str], set[str]]]) -> list[str]:
    found: list[str] = []
    for module, targets in sorted(graph.items()):
        mine = group_of(module, rules)
        if mine is None:
            continue
        for target in sorted(targets):
            theirs = group_of(target, rules)
            if theirs not in (None, mine) and theirs not in rules[mine][1]:
                found.append(f"{module} ({mine}) imports {target} ({theirs})")
    return found


def external_imports(text: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_every_import_stays_within_what_the_architecture_page_allows() -> None:
    rules = import_rules(ARCHITECTURE.read_text(encoding="utf-8"))
    sources = list(_sources(PACKAGES))
    assert not crossings(import_graph(sources), rules), "\n".join(crossings(import_graph(sources), rules))
    for rel, text in sources:
        group = group_of(module_name(rel), rules)
        if group is not None:
            banned = {n for n in external_imports(text) if any(n.startswith(b) for b in rules[group][2])}
            assert not banned, f"{rel} ({group}) imports {sorted(banned)}, which docs/architecture.md forbids"


def test_the_architecture_check_fires_on_a_core_module_that_imports_the_glue() -> None:
    rules = import_rules(ARCHITECTURE.read_text(encoding="utf-8"))
    graph = import_graph(
        [
            ("tokenplane/spec.py", "import pydantic\n"),
            ("tokenplane/model/planner.py", "from tokenplane.proof.render import render\n"),
            ("tokenplane/proof/render.py", "from tokenplane.spec import PlatformSpec\n"),
            ("serving/gateway/app.py", "from tokenplane.components import VllmPool\n"),
            ("components/__init__.py", "from tokenplane.spec import PlatformSpec\n"),
        ]
    )
    assert crossings(graph, rules) == [
        "tokenplane.model.planner (core) imports tokenplane.proof.render (proof)",
        "tokenplane.serving.gateway.app (serving) imports tokenplane.components (components)",
    ]
    assert group_of("tokenplane.spec", rules) == "core"
    assert group_of("tokenplane.sim.report", rules) == "sim"


TEST_PATH = re.compile(r"\btests/[\w/]+\.py\b")
SHIPPED_TEXT = ("README.md", "examples", "stacks", "docs", "components", "serving", "policies", "tokenplane")


def stale_test_paths(root: Path) -> list[str]:
    """Each ``tests/....py`` that a shipped file (docs, examples, code, the example's Pulumi.yaml) names and that is gone."""
    stale = []
    for top in SHIPPED_TEXT:
        where = root / top
        files = [where] if where.is_file() else [p for p in where.rglob("*") if p.suffix in (".py", ".md", ".yaml")]
        for path in files:
            if path.is_symlink() or "__pycache__" in path.parts:
                continue
            for named in TEST_PATH.findall(path.read_text(encoding="utf-8", errors="replace")):
                if not (root / named).is_file():
                    stale.append(f"{path.relative_to(root)} names {named}")
    return stale


def test_every_test_file_a_shipped_file_names_exists() -> None:
    assert stale_test_paths(ROOT) == []


def test_the_test_path_check_fires_on_a_moved_test(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "Pulumi.yaml").write_text("description: checked by tests/deploy/test_gone.py\n")
    assert stale_test_paths(tmp_path) == ["examples/Pulumi.yaml names tests/deploy/test_gone.py"]


def escaping_links(links: dict[str, str]) -> list[str]:
    """Tracked symbolic links (path -> target) whose target is absolute or leads out of the repository.

    A worktree's ``.venv``, linked to another checkout's, was once committed: merging it replaced that checkout's
    virtual environment with a link to itself, and a clean clone's setup would have built its venv through the link.
    The package's own links (``tokenplane/serving`` -> ``../serving``) stay inside.
    """
    out = []
    for path, target in links.items():
        inside = (Path("/repo") / path).parent.joinpath(target).resolve().is_relative_to("/repo")
        if Path(target).is_absolute() or not inside:
            out.append(path)
    return out


def test_no_tracked_symbolic_link_leaves_the_repository() -> None:
    import os
    import subprocess

    listing = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=False).stdout
    if not listing:
        pytest.skip("not a git checkout")
    paths = [line.split("\t", 1)[1] for line in listing.splitlines() if line.startswith("120000 ")]
    assert paths, "the package's links to components/, serving/ and policies/ are tracked"
    assert escaping_links({p: os.readlink(ROOT / p) for p in paths if (ROOT / p).is_symlink()}) == []


def test_the_link_check_fires_on_a_venv_linked_elsewhere() -> None:
    links = {"tokenplane/serving": "../serving", ".venv": "/work/main/.venv", "docs/x": "../../outside"}
    assert escaping_links(links) == [".venv", "docs/x"]
