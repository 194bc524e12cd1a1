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

A server that daemonizes leaves the container with nothing to run: the official ``nginx`` and nginx-unprivileged
images keep nginx in the foreground only through their CMD, ``["nginx", "-g", "daemon off;"]`` (``known_images.
DAEMONIZING``). A ``command`` replaces the image's ENTRYPOINT and, without ``args``, its CMD too; ``args`` alone
replace the CMD (https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/#notes).
So an argv that runs ``nginx`` (or ``nginx-debug``, directly or through the image's ``/docker-entrypoint.sh``)
without ``-g 'daemon off;'`` starts it with its default ``daemon on`` (https://nginx.org/en/docs/ngx_core_module.html
#daemon): the master forks into the background and the container's process exits 0 at once; in a pod whose
restartPolicy is Always (every Deployment, StatefulSet, DaemonSet, ReplicaSet; a sidecar init container) the
kubelet restarts it in CrashLoopBackOff, the pod is never Ready and Pulumi's await on the workload times out.
nginx's options are read as its ``ngx_get_options`` reads them (the last ``-g`` counts). Not judged: an argv not
fully known, one through a shell, one that does not start the server (``-t``, ``-T``, ``-v``, ``-V``, ``-h``,
``-s``), one with ``-c`` or ``-p`` (another config), a container with a volume at or above ``/etc/nginx/nginx.conf``
(its config may say ``daemon off;``), a Job's pods (an exit 0 completes them), other images.

``args`` without ``command`` are arguments to the image's ENTRYPOINT, not a program of their own (the notes above).
Where that ENTRYPOINT is a program that takes a command of its own first (``image_files``' ``entrypoint_refusal``:
the AWS CLI image's ``ENTRYPOINT ["/usr/local/bin/aws"]``, aws/aws-cli ``docker/Dockerfile``), ``args: ["sh", "-c",
SCRIPT]`` runs ``aws sh -c SCRIPT``: the CLI's parser refuses ``sh`` (``aws: error: argument command: Invalid
choice``, exit 252) and the script never runs; the container exits at once, a Job's pods fail until its
backoffLimit, a Deployment's restart in CrashLoopBackOff. Judged where ``args[0]`` is a literal shell or a program
path (``/...`` or ``./...``: no CLI command is named so), for every workload and init container; not judged for
images whose ENTRYPOINT is not known, or is a wrapper that execs its arguments (the nginx and Envoy images'
``docker-entrypoint.sh``).

Prometheus exporters that parse their command line with kingpin (v2) take long flags only with two dashes: kingpin's
lexer (alecthomas/kingpin ``parser.go``, ``ParseContext.Next``) reads a word ``-xyz`` as the short flag ``-x``
(and the rest as its value or more short flags), and ``flags.go`` refuses a short flag the program does not define
(``unknown short flag '-x'``); ``kingpin.Parse`` then exits 1 with ``blackbox_exporter: error: unknown short flag
'-c', try --help``. So ``-config.file=...`` (the single-dash form of Prometheus 1.x and Go's ``flag`` package) stops
the container at start: a Deployment's pods restart in CrashLoopBackOff and never turn Ready. Judged for the images
read (``KINGPIN``): prometheus/blackbox_exporter from v0.8.0 (``main.go``: ``kingpin.Flag("config.file", ...)``,
``kingpin.HelpFlag.Short('h')``, ``kingpin.Parse()``; Dockerfile ``ENTRYPOINT ["/bin/blackbox_exporter"]``) and
prometheus/node_exporter from v0.15.0 (``node_exporter.go``, the same; CHANGELOG 0.15.0: "all flags now require
double-dashes"), by tag (``latest`` and untagged count as current; a digest alone or another tag is not judged):
``args`` alone (arguments to that ENTRYPOINT) or a ``command`` whose program is the exporter's binary. A word
``-X...`` whose ``X`` is a short flag the program defines (``-h``) stops the judgement, as do ``--`` and the word
after a ``--flag`` without ``=`` (it may be that flag's value). Not judged: other images, argv through a shell.
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
from tokenplane.proof.deployability.known_images import NGINX_CONF, daemonizing, repository
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
    yield from _daemons(graph)
    yield from _programs_as_arguments(graph)
    yield from _kingpin_flags(graph)


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


def _programs_as_arguments(graph: Graph) -> Iterator[Finding]:
    """Containers whose ``args`` (no ``command``) name a program that the image's ENTRYPOINT takes as a command
    of its own and refuses."""
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        once = (pod.get("restartPolicy") or "Always") != "Always"
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            image = files(str(container.get("image") or ""))
            args = container.get("args")
            if image is None or image.entrypoint_refusal is None or container.get("command"):
                continue
            if not isinstance(args, list) or not args or not isinstance(args[0], str):
                continue
            program = args[0]
            if program not in SHELLS and not program.startswith(("/", "./")):
                continue
            argv = [*image.entrypoint, *(str(a) for a in args)]
            given = [str(a) for a in args[:2]] + (["..."] if len(args) > 2 else [])
            shown = " ".join(argv[: len(image.entrypoint) + 2]) + (
                " ..." if len(argv) > len(image.entrypoint) + 2 else ""
            )
            effect = (
                "every run fails (a Job fails once its backoffLimit is spent)"
                if once
                else "the kubelet restarts it in CrashLoopBackOff and the pod never turns Ready"
            )
            yield Finding(
                RULE,
                workload.urn,
                f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs "
                f"{container.get('image')} with args {given} and no command: args are arguments to the "
                f"image's ENTRYPOINT {list(image.entrypoint)}, so the container runs `{shown}`, and "
                f"{image.entrypoint[0].rsplit('/', 1)[-1]} takes {program!r} as its command and refuses it "
                f"({image.entrypoint_refusal}): what args name never runs, the container exits at once and {effect}",
                f"put the program in command (command: {given}), "
                "which replaces the ENTRYPOINT, or pass the ENTRYPOINT's own arguments in args",
            )


# nginx's command-line options (src/core/nginx.c, ngx_get_options): flags, and those that take a value (attached,
# "-gdaemon off;", or as the next word); the flags that make it exit without serving.
NGINX_FLAGS = frozenset("?hvVtTq")
NGINX_VALUED = frozenset("pecgs")
NGINX_NOT_SERVING = frozenset("?hvVtTs")
NGINX_PROGRAMS = ("nginx", "nginx-debug")
_DAEMON = re.compile(r"(?:^|[;{}\s])daemon\s+(on|off)\s*;")
_DAEMON_WORD = re.compile(r"(?:^|[;{}\s])daemon(?:\s|;|$)")


def _daemons(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        always = (pod.get("restartPolicy") or "Always") == "Always"
        init = [c for c in pod.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
        for container in [*init, *(pod.get("containers") or [] if always else [])]:
            image = container.get("image")
            default = daemonizing(image) if isinstance(image, str) else None
            argv = _process(container, default[0]) if default else None
            if default is None or argv is None or _mounts_config(container):
                continue
            if _daemonizes(argv):
                yield _daemon_finding(workload, container, list(default[1]))


def _process(container: dict[str, Any], entrypoint: tuple[str, ...]) -> list[str] | None:
    """The argv the runtime execs where ``command`` or ``args`` replace the image's, every word known; else None."""
    command, args = container.get("command") or [], container.get("args") or []
    if not isinstance(command, list) or not isinstance(args, list) or not (command or args):
        return None
    if not all(isinstance(word, str) for word in [*command, *args]):
        return None
    return [*command, *args] if command else [*entrypoint, *args]


def _daemonizes(argv: list[str]) -> bool:
    """Whether ``argv`` starts nginx's server with daemon on (the image's nginx.conf sets no daemon directive)."""
    if argv and argv[0].rsplit("/", 1)[-1] == "docker-entrypoint.sh":
        argv = argv[1:]  # the image's entrypoint script: it ends in exec "$@"
    if not argv or argv[0].rsplit("/", 1)[-1] not in NGINX_PROGRAMS:
        return False
    options = _nginx_options(argv[1:])
    if options is None or options.keys() & (NGINX_NOT_SERVING | {"c", "p"}):
        return False
    directives = options.get("g", "")
    setting = _DAEMON.findall(directives)
    if not setting and _DAEMON_WORD.search(directives):
        return False  # a daemon directive nginx cannot parse: it exits with an error of its own
    return not setting or setting[-1] == "on"


def _nginx_options(words: list[str]) -> dict[str, str] | None:
    """nginx's options as ngx_get_options reads them (a later value replaces an earlier one), or None where nginx
    refuses the command line (an invalid option or a missing value: it exits with an error of its own)."""
    options: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("-") or len(word) < 2:
            return None
        rest = word[1:]
        while rest:
            flag, rest = rest[0], rest[1:]
            if flag in NGINX_FLAGS:
                options[flag] = ""
            elif flag in NGINX_VALUED:
                if not rest:
                    index += 1
                    if index >= len(words):
                        return None
                    rest = words[index]
                options[flag], rest = rest, ""
            else:
                return None
        index += 1
    return options


def _mounts_config(container: dict[str, Any]) -> bool:
    mounts = [str(m.get("mountPath")) for m in container.get("volumeMounts") or [] if m.get("mountPath")]
    return any(under(NGINX_CONF, mount) for mount in mounts)


def _daemon_finding(workload: KubeObject, container: dict[str, Any], cmd: list[str]) -> Finding:
    given = [f"{k} {container[k]!r}" for k in ("command", "args") if container.get(k)]
    return Finding(
        RULE,
        workload.urn,
        f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs "
        f"{container.get('image')} with {' and '.join(given)}, which replaces the image's CMD {cmd} and with it "
        "-g 'daemon off;': nginx starts with its default daemon on, its master forks into the background and the "
        "container's process exits 0 at once; the kubelet restarts it (restartPolicy Always) in CrashLoopBackOff, "
        "the pod never turns Ready, and Pulumi's await on the workload times out",
        "keep nginx in the foreground: add -g 'daemon off;' (command: ['nginx', '-g', 'daemon off;']), drop "
        "command and args to run the image's default, or set `daemon off;` in an nginx.conf mounted from a "
        "ConfigMap",
    )


def nginx_options(container: dict[str, Any]) -> dict[str, str] | None:
    """The options of the nginx server a container of an nginx image runs (the image's CMD's without ``command``
    or ``args``), or None where its argv does not start nginx's server, is not fully known or nginx refuses it."""
    default = daemonizing(str(container.get("image") or ""))
    if default is None:
        return None
    argv = _process(container, default[0]) if container.get("command") or container.get("args") else None
    argv = argv if argv is not None else ([] if container.get("command") or container.get("args") else [*default[1]])
    return nginx_server_options(argv)


def nginx_server_options(argv: list[str]) -> dict[str, str] | None:
    """nginx's options where ``argv`` (directly or through the images' ``docker-entrypoint.sh``) starts nginx's
    server, else None."""
    if argv and argv[0].rsplit("/", 1)[-1] == "docker-entrypoint.sh":
        argv = argv[1:]
    if not argv or argv[0].rsplit("/", 1)[-1] not in NGINX_PROGRAMS:
        return None
    options = _nginx_options(argv[1:])
    return None if options is None or options.keys() & NGINX_NOT_SERVING else options


def nginx_stays_up(options: dict[str, str]) -> bool:
    """Whether nginx's server, started with ``options``, keeps its master in the foreground: -g says daemon off."""
    setting = _DAEMON.findall(options.get("g", ""))
    return bool(setting) and setting[-1] == "off"


# Images whose program parses its flags with kingpin, by repository (``known_images.repository``): (the program's
# path, the first version that does, the short flags it defines). Sources in the module docstring.
KINGPIN: dict[str, tuple[str, tuple[int, int], frozenset[str]]] = {
    **{
        repo: ("/bin/blackbox_exporter", (0, 8), frozenset("h"))
        for repo in ("prom/blackbox-exporter", "quay.io/prometheus/blackbox-exporter")
    },
    **{
        repo: ("/bin/node_exporter", (0, 15), frozenset("h"))
        for repo in ("prom/node-exporter", "quay.io/prometheus/node-exporter")
    },
}
_VERSION_TAG = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+.].*)?$")
CURRENT_TAGS = frozenset({"latest", "master", "main"})


def _kingpin_program(image: str) -> tuple[str, frozenset[str]] | None:
    """(program path, its short flags) where ``image`` runs a kingpin-parsed program at a version known to, else None."""
    known = KINGPIN.get(repository(image))
    if known is None:
        return None
    name, _, digest = image.partition("@")
    colon, slash = name.rfind(":"), name.rfind("/")
    tag = name[colon + 1 :] if colon > slash else ("" if digest else "latest")
    match = _VERSION_TAG.match(tag)
    if tag in CURRENT_TAGS or (match is not None and (int(match[1]), int(match[2])) >= known[1]):
        return known[0], known[2]
    return None


def kingpin_refusal(words: list[str], shorts: frozenset[str]) -> str | None:
    """The first word of ``words`` (a kingpin program's arguments) that kingpin lexes as an undefined short flag."""
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return None
        if word.startswith("--"):
            index += 1 if "=" in word else 2
            continue
        if word.startswith("-") and len(word) > 1:
            return None if word[1] in shorts else word
        index += 1
    return None


def _kingpin_flags(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            image = container.get("image")
            known = _kingpin_program(image) if isinstance(image, str) else None
            command, args = container.get("command") or [], container.get("args") or []
            if known is None or not isinstance(command, list) or not isinstance(args, list):
                continue
            if not all(isinstance(word, str) for word in [*command, *args]):
                continue
            program, shorts = known
            binary = program.rsplit("/", 1)[-1]
            if command and command[0].rsplit("/", 1)[-1] != binary:
                continue
            word = kingpin_refusal([*command[1:], *args], shorts)
            if word is None:
                continue
            yield Finding(
                RULE,
                workload.urn,
                f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs "
                f"{image}, whose {binary} parses its flags with kingpin, with the argument {word!r}: kingpin takes "
                f"a single dash for short flags, so it reads '-{word[1]}' and exits 1 at start ({binary}: error: "
                f"unknown short flag '-{word[1]}', try --help); the container restarts in CrashLoopBackOff, the "
                "pod never turns Ready and pulumi up's await on the workload times out",
                f"write long flags with two dashes: -{word} (kingpin's and the exporter's --help spell them so)",
            )
