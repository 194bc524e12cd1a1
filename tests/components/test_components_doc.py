"""Every snippet in docs/components.md runs: the page is one program, rendered under Pulumi's mocks.

The snippets share names in the order of the page (its first block holds the imports and the spec
vocabulary), so the page is run as the reader would paste it: block after block, in one namespace.
A snippet that names a missing argument, an undefined variable or a wrong type fails here with the
page's line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.paths import REPO_ROOT
from tokenplane.proof.testing import render_function

DOC = REPO_ROOT / "docs" / "components.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(the line its code starts on, the code) for every ```python block."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in FENCE.finditer(text)]


def run_blocks(blocks: list[tuple[int, str]], path: Path = DOC) -> dict[str, Any]:
    """Execute the blocks in order in one namespace; a failure names the block's line on the page."""
    names: dict[str, Any] = {"__name__": "components_doc"}
    for line, code in blocks:
        # Compiled with the page as its file and the block's offset, so a traceback points into the page.
        compiled = compile("\n" * (line - 1) + code, str(path), "exec")
        try:
            exec(compiled, names)
        except Exception as error:
            raise AssertionError(f"{path.name}:{line}: the snippet fails: {type(error).__name__}: {error}") from error
    return names


def test_every_snippet_is_python_that_compiles() -> None:
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 15, f"found only {len(blocks)} python blocks: is the fence pattern still right?"
    for line, code in blocks:
        compile(code, f"{DOC.name}:{line}", "exec")


def test_every_public_name_is_shown_in_a_snippet() -> None:
    from tokenplane import components

    code = "\n".join(code for _, code in python_blocks(DOC.read_text(encoding="utf-8")))
    unshown = [n for n in components.__all__ if not re.search(rf"\b{re.escape(n)}\b", code)]
    # Types a program receives rather than builds: described in their sections, returned by the others.
    received = {"PrivateSubnets", "ServingDeps", "NodeSelection"}
    assert set(unshown) <= received, f"in no snippet of docs/components.md: {sorted(set(unshown) - received)}"


def test_a_broken_snippet_fails_with_its_line_on_the_page() -> None:
    page = "intro\n\n```python\nx = 1\n```\n\ntext\n\n```python\ny = x + undefined_name\n```\n"
    with pytest.raises(AssertionError, match=r"components.md:10: the snippet fails: NameError"):
        run_blocks(python_blocks(page))


@pytest.mark.slow
def test_the_page_runs_as_one_program_under_the_mocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)  # the snippets load stacks/*.yaml as a reader in a checkout would
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    stack = render_function(lambda: run_blocks(blocks) and None, cloud_region="eu-central-1")
    assert not stack.result.issues, "\n".join(str(i) for i in stack.result.issues)
    # The snippets built what they show: the hand-built pool and gateways (TLS with the certificate given), the
    # gateways' config from its parts, and the spec-driven stacks beside them.
    stack.find("kubernetes:apps/v1:Deployment", "eu-pool-chat-deployment")
    stack.find("kubernetes:apps/v1:Deployment", "eu2-pool-chat-deployment")  # on the Foundation, from_config
    service = stack.find("kubernetes:core/v1:Service", "eu-ai-gateway-service")
    assert service.inputs["spec"]["ports"][0]["port"] == 443
    config = stack.find("kubernetes:core/v1:ConfigMap", "eu-model-gateway-config").inputs["data"]
    assert json.loads(config["platform.json"])["pools"][0]["name"] == "chat" and config["region"] == "eu"
    assert {"minimal", "byteion-eu-central"} <= {r.name for r in stack.resources if not r.custom}
