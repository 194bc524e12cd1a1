"""Every program a container runs is named by its argv's first element alone, never by a whole command line.

A container's ``command`` (and an exec probe's or hook's ``command``) is an exec array, not a shell line: the runtime
execs ``command[0]`` as a file name and passes the rest as arguments, with no shell to split words
(https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/: "The command and
arguments that you define ... are not run in a shell"). A first element holding whitespace (``"/redpanda-connect run
/etc/connect/connect.yaml"``, ``"python -m app"``, ``"/bin/sh -c"``) names a file no image has: the container fails
to start (runc: ``exec: "...": stat ...: no such file or directory``, StartError) and restarts in CrashLoopBackOff,
so the workload never becomes ready and Pulumi's await times out; an exec probe with one fails every period, a hook
fails (FailedPostStartHook kills the container).

Judged for every image: a file name with whitespace is legal but no image ships its programs so. ``sh -c "a b"``
is fine (the script is the element after ``-c``, and the shell splits it); ``args`` alone are not judged (with an
image ENTRYPOINT they are arguments, which may hold spaces).

A ``command`` whose first element is a flag (``["--config=/conf/relay.yaml"]``) fails the same way: ``command``
replaces the image's ENTRYPOINT ("If you define args, but do not define a command, the default command is used with
your new arguments"; a command replaces it: https://kubernetes.io/docs/tasks/inject-data-application/
define-command-argument-container/#notes), so the runtime execs a file named ``--config=...`` (containerd: ``exec:
"--config=...": executable file not found in $PATH``, RunContainerError) and the pod restarts in CrashLoopBackOff;
the flag belongs in ``args``, which keep the ENTRYPOINT. Judged for every image and every exec array whose first
element is a literal string starting with ``-`` (no program is named so).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.probes import PROBES
from tokenplane.proof.deployability.reachability import pod_template

RULE = "exec-argv"


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            for where, argv, effect in _argvs(container):
                program = argv[0]
                if isinstance(program, str) and program.startswith("-"):
                    yield _flag(workload, container, where, argv, effect)
                    continue
                if not isinstance(program, str) or not program.strip() or program.split() == [program]:
                    continue
                words = program.split()
                yield Finding(
                    RULE,
                    workload.urn,
                    f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name}: "
                    f"{where}'s command[0] is the whole line {program!r}, but command is an exec array run without "
                    f'a shell: the runtime looks for an executable literally named {program!r} (exec: "{program}": '
                    f"no such file or directory) and {effect}",
                    f"split it into one element per word: command: {words!r}"
                    + (" (or the program alone in command and the rest in args)" if len(words) > 1 else "")
                    + ", or run it through a shell: command: ['sh', '-c', '<the line>']",
                )


def _flag(workload: KubeObject, container: dict[str, Any], where: str, argv: list[Any], effect: str) -> Finding:
    program = argv[0]
    process = where == "its process"
    return Finding(
        RULE,
        workload.urn,
        f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name}: {where}'s "
        f"command[0] is the flag {program!r}, not a program: "
        + ("command replaces the image's ENTRYPOINT, so " if process else "")
        + f'the runtime tries to exec a file named {program!r} (exec: "{program}": executable file not found in '
        f"$PATH) and {effect}",
        (
            f"move the flags to args (args: {argv!r}) to keep the image's ENTRYPOINT, or name the program first "
            "in command"
            if process
            else "name the program first in the exec command"
        ),
    )


def _argvs(container: dict[str, Any]) -> Iterator[tuple[str, list[Any], str]]:
    """(where, argv, what its failure does) for each exec array of ``container`` that names its program."""
    command = container.get("command")
    if isinstance(command, list) and command:
        yield "its process", command, "the container fails to start (StartError) and restarts in CrashLoopBackOff"
    for probe in PROBES:
        argv = (_dict(_dict(container.get(probe)).get("exec"))).get("command")
        if isinstance(argv, list) and argv:
            yield f"its {probe}", argv, "the probe fails every period"
    for hook in ("postStart", "preStop"):
        argv = _dict(_dict(_dict(container.get("lifecycle")).get(hook)).get("exec")).get("command")
        if isinstance(argv, list) and argv:
            yield f"its {hook} hook", argv, f"the hook fails (Failed{hook[0].upper()}{hook[1:]}Hook)"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
