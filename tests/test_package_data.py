"""Every data file a command reads is package data: listed once, declared in pyproject, reached by import name.

The built wheel itself is checked in tests/test_wheel.py (slow: it builds and installs one); these checks
need no build, so a file added beside the code without a declaration fails here, in the fast tier.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tokenplane import package_data
from tokenplane.components.pins import VLLM_IMAGE

ROOT = REPO_ROOT
PACKAGES = ("tokenplane", "components", "serving", "policies")


def expected_files() -> set[str]:
    """What the code reads, as "package/name": the fixed list and the pinned vLLM release's CLI schema."""
    release = VLLM_IMAGE.rsplit(":v", 1)[1]
    pinned = (package_data.vllm_cli_schema(release), package_data.vllm_metrics(release))
    return {f"{d.package.replace('.', '/')}/{d.name}" for d in (*package_data.DATA_FILES, *pinned)}


def declared_files(pyproject: dict[str, object], root: Path) -> set[str]:
    """The files pyproject's [tool.setuptools.package-data] globs match under ``root``."""
    tool = pyproject["tool"]
    assert isinstance(tool, dict)
    table: dict[str, list[str]] = tool["setuptools"]["package-data"]
    return {
        f"{package.replace('.', '/')}/{match.relative_to(root / package.replace('.', '/')).as_posix()}"
        for package, globs in table.items()
        for glob in globs
        for match in (root / package.replace(".", "/")).glob(glob)
        if match.is_file()
    }


def file_references(source: str) -> list[int]:
    """The lines on which a module names ``__file__``: how a path beside the source tree is built."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name) and node.id == "__file__"]


def test_pyproject_declares_exactly_the_files_the_code_reads() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared, expected = declared_files(pyproject, ROOT), expected_files()
    assert declared == expected, (
        f"declared in pyproject but read by nothing: {sorted(declared - expected)}; "
        f"read but not declared (missing from the wheel): {sorted(expected - declared)}. "
        "Add the file to tokenplane/package_data.py and to [tool.setuptools.package-data] together"
    )


def test_a_file_missing_from_the_declaration_is_caught() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pyproject["tool"]["setuptools"]["package-data"]["tokenplane.components"] = []  # the wheel as it was: no schemas
    assert "tokenplane/components/schemas/keda-scaledobject-v1alpha1.json" in expected_files() - declared_files(
        pyproject, ROOT
    )


@pytest.mark.parametrize("data", package_data.DATA_FILES, ids=lambda d: f"{d.package.replace('.', '/')}/{d.name}")
def test_every_listed_file_is_found_through_its_package(data: package_data.DataFile) -> None:
    found = package_data.path(data)
    assert found.is_file()
    assert found.is_relative_to(package_data.package_dir(data.package))


def test_a_missing_file_names_the_package_the_file_and_the_fix() -> None:
    missing = package_data.DataFile("tokenplane.components", "schemas/absent.json", "a test reads it")
    with pytest.raises(package_data.PackageDataError) as raised:
        package_data.path(missing)
    assert "tokenplane.components/schemas/absent.json is missing" in str(raised.value)
    assert "a test reads it" in str(raised.value)
    assert "reinstall tokenplane" in str(raised.value)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_builds_a_path_from_its_own_file(package: str) -> None:
    offenders = {
        module.relative_to(ROOT).as_posix(): lines
        for module in sorted((ROOT / package).rglob("*.py"))
        if (lines := file_references(module.read_text(encoding="utf-8")))
    }
    assert not offenders, (
        f"{offenders} (module: lines) build a path from __file__, which an installed wheel does not have "
        "beside it: make the file package data and read it through tokenplane.package_data"
    )


def test_the_source_tree_guard_fires_on_the_old_lookup() -> None:
    old = 'KEDA = Path(__file__).resolve().parent.parent / "components" / "schemas" / "keda.json"\n'
    assert file_references(old) == [1]
    assert file_references('origin = getattr(module, "__file__", None)\n') == []


def test_the_vllm_cli_schema_is_read_from_the_components_package() -> None:
    from tokenplane.vllm_cli import load_schema

    version = VLLM_IMAGE.rsplit(":v", 1)[1]
    assert load_schema(version)["options"], f"the vLLM {version} CLI schema has no options"
