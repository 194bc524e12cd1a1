"""Every program a container runs is in its image: its process, its exec probes, its hooks.

The container runtime execs ``command`` (the image's ENTRYPOINT without one; ``args`` alone replace only CMD, so
with no ENTRYPOINT ``args[0]`` becomes the program); a name the image lacks fails at start with ``exec: "curl":
executable file not found in $PATH`` (runc's error, surfaced as the container's StartError) and the pod restarts in
CrashLoopBackOff. An exec probe runs the same way (``pkg/kubelet/prober``): a missing program is a failed probe
every period, so a readiness probe keeps the pod out of its Service for ever and a liveness probe restarts it in a
loop; a hook's (``lifecycle.preStop``/``postStart``) fails with FailedPreStopHook/FailedPostStartHook, and a failed
postStart kills the container. ``sh -c`` scripts are read for the first word of each command. ``python -m M``
fails with "No module named M" when the image has no such module.

Judged for the images whose files the program knows (``image_files``): tokenplane's serving image (Debian 12 slim
with CPython and the locked packages) and the official python and debian slim images it builds on. A path under one of the container's volumes (a script from a ConfigMap) is not
judged: the volume brings it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.image_files import (
    SERVING,
    SERVING_MODULES,
    SERVING_PACKAGE,
    ImageFiles,
    files,
    names,
    under,
)
from tokenplane.proof.deployability.probes import PROBES
from tokenplane.proof.deployability.reachability import pod_template

RULE = "image-command"
SHELLS = frozenset({"sh", "bash", "dash", "/bin/sh", "/bin/bash", "/bin/dash", "/usr/bin/bash", "/usr/bin/sh"})
# Shell words that are not programs: keywords and builtins (POSIX sh and bash), which need nothing from the image.
SHELL_WORDS = names(
    """
    if then else elif fi for while until do done case esac in function select time ! { } [[ ]] : . source alias
    break cd command continue echo eval exec exit export false getopts hash kill local printf pwd read readonly
    return set shift test [ times trap true type ulimit umask unalias unset wait
    """
)
_SEPARATORS = re.compile(r"&&|\|\||[;|&\n()`]")
_PLAIN = re.compile(r"^[A-Za-z0-9_./+-]+$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            image = files(str(container.get("image") or ""))
            if image is None or image.system is None:
                continue
            mounts = [str(m.get("mountPath")) for m in container.get("volumeMounts") or [] if m.get("mountPath")]
            for where, argv, effect in _executions(container, image):
                problem = _missing(argv, mounts, image)
                if problem is not None:
                    yield _finding(workload, container, where, problem, effect)


def _executions(container: dict[str, Any], image: ImageFiles) -> Iterator[tuple[str, list[str], str]]:
    """(where, argv, what its failure does) for each thing the runtime or kubelet execs in the container."""
    command = [str(c) for c in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    process = command + args if command else (list(image.entrypoint) + args if image.entrypoint else args)
    if process:
        yield "its process", process, "the container fails to start (StartError) and restarts in CrashLoopBackOff"
    for probe in PROBES:
        exec_command = ((container.get(probe) or {}).get("exec") or {}).get("command")
        if exec_command:
            effect = (
                "the probe fails every period: the pod never turns Ready and stays out of its Service"
                if probe == "readinessProbe"
                else "the probe fails every period and the kubelet restarts the container in a loop"
            )
            yield f"its {probe}", [str(c) for c in exec_command], effect
    for hook, effect in (
        ("postStart", "the hook fails (FailedPostStartHook) and the kubelet kills the container"),
        ("preStop", "the hook fails (FailedPreStopHook): the drain it was for never happens"),
    ):
        exec_command = (((container.get("lifecycle") or {}).get(hook) or {}).get("exec") or {}).get("command")
        if exec_command:
            yield f"its {hook} hook", [str(c) for c in exec_command], effect


def _missing(argv: list[str], mounts: list[str], image: ImageFiles) -> str | None:
    """What of ``argv`` ``image`` lacks, as the runtime would say it, or None."""
    program = argv[0]
    if any(under(program, m) for m in mounts if program.startswith("/")):
        return None
    if not image.has(program):
        return f'exec: "{program}": executable file not found in $PATH'
    name = program.rsplit("/", 1)[-1]
    if name in SHELLS or program in SHELLS:
        if "-c" in argv[1:-1]:
            script = argv[argv.index("-c") + 1]
            for word in _programs(script):
                if not any(under(word, m) for m in mounts if word.startswith("/")) and not image.has(word):
                    return f"{name}: 1: {word}: not found"
        return None
    if image is SERVING and name.startswith("python") and "-m" in argv[1:-1]:
        module = argv[argv.index("-m") + 1]
        top = module.split(".", 1)[0]
        if (module.startswith(f"{SERVING_PACKAGE}.") and module not in SERVING_MODULES) or top == "serving":
            return f"{program}: No module named {module}"
    return None


def _programs(script: str) -> Iterator[str]:
    """The first word of each simple command in a shell script (best effort: quoting and expansions skipped)."""
    for part in _SEPARATORS.split(script):
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in ("exec", "!", "then", "do", "else")):
            words = words[1:]
        if words and _PLAIN.match(words[0]) and words[0] not in SHELL_WORDS:
            yield words[0]


def _finding(workload: KubeObject, container: dict[str, Any], where: str, problem: str, effect: str) -> Finding:
    return Finding(
        RULE,
        workload.urn,
        f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs "
        f"{container.get('image')}, which lacks what {where} execs ({problem}): {effect}",
        "call what the image has (python and the standard library: e.g. an httpGet probe, or python -c with "
        f"urllib.request; the serving image's entry points {', '.join(sorted(SERVING_MODULES))}), use an image "
        "that has the tool, or mount it from a volume",
    )
