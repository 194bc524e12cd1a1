"""An FSx file system's maintenance window and Lustre log destination are in the forms FSx accepts.

- ``weeklyMaintenanceStartTime`` is ``d:HH:MM`` in UTC, day 1 (Monday) to 7 (Sunday): the provider validates it
  as exactly 7 characters matching ``^[1-7]:([01]\\d|2[0-3]):?([0-5]\\d)$`` for Lustre, ONTAP, OpenZFS and Windows
  file systems alike (terraform-provider-aws ``internal/service/fsx/lustre_file_system.go``,
  ``ontap_file_system.go``, ``openzfs_file_system.go``, ``windows_file_system.go``; the API's own pattern:
  https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreConfiguration.html,
  WeeklyMaintenanceStartTime). The RDS/ElastiCache notation (``sun:03:00``) fails the preview, before anything
  is created.
- A Lustre file system's ``logConfiguration.destination`` is a CloudWatch Logs log group whose name begins with
  ``/aws/fsx`` ("The name of the Amazon CloudWatch Logs log group must begin with the /aws/fsx prefix":
  https://docs.aws.amazon.com/fsx/latest/APIReference/API_LustreLogCreateConfiguration.html, Destination).
  CreateFileSystem refuses any other (BadRequest); the log group is created and the file system is not. The
  name is read from the ARN, or from the program's LogGroup the ARN is the output of (its ``name``, else its
  ``namePrefix``; an autonamed group's name never begins with ``/aws/fsx``).

It cannot see: values known only at apply time, a destination that is a Kinesis Data Firehose stream or an S3
bucket (Windows audit logs; not judged), log groups named outside the program by a value not in its ARN.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "fsx-settings"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
FILE_SYSTEMS = (
    LUSTRE,
    "aws:fsx/ontapFileSystem:OntapFileSystem",
    "aws:fsx/openZfsFileSystem:OpenZfsFileSystem",
    "aws:fsx/windowsFileSystem:WindowsFileSystem",
)
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
WINDOW = re.compile(r"^[1-7]:([01]\d|2[0-3]):?([0-5]\d)$")
WINDOW_LENGTH = 7
LOG_PREFIX = "/aws/fsx"
LOG_GROUP_ARN = re.compile(r"^arn:[^:]+:logs:[^:]*:[^:]*:log-group:(?P<name>[^:]+)(:\*)?$")


def check(graph: Graph) -> Iterator[Finding]:
    for type_token in FILE_SYSTEMS:
        for fs in graph.of_type(type_token):
            yield from _window(fs)
    for fs in graph.of_type(LUSTRE):
        yield from _log_destination(graph, fs)


def _window(fs: RenderedResource) -> Iterator[Finding]:
    value = fs.inputs.get("weeklyMaintenanceStartTime")
    if not isinstance(value, str) or not value or (len(value) == WINDOW_LENGTH and WINDOW.match(value)):
        return
    yield Finding(
        RULE,
        fs.urn,
        f"FSx file system {fs.name} has weekly_maintenance_start_time {value!r}, which is not d:HH:MM (7 characters, "
        "day 1 = Monday to 7 = Sunday, UTC): the provider validates it against ^[1-7]:([01]\\d|2[0-3]):?([0-5]\\d)$ "
        "and the preview fails ('invalid pattern' / 'expected length ... (7 - 7)') before anything is created",
        "write the window as d:HH:MM, e.g. '7:03:00' for Sunday 03:00 UTC (not the RDS 'sun:03:00' notation)",
    )


def _log_destination(graph: Graph, fs: RenderedResource) -> Iterator[Finding]:
    config = fs.inputs.get("logConfiguration")
    destination = config.get("destination") if isinstance(config, dict) else None
    if not isinstance(destination, str) or not destination:
        return
    name = _group_name(graph, destination)
    if name is None or name.startswith(LOG_PREFIX):
        return
    yield Finding(
        RULE,
        fs.urn,
        f"Lustre file system {fs.name} logs to CloudWatch log group {name!r}, whose name does not begin with "
        f"{LOG_PREFIX}: CreateFileSystem refuses the LogConfiguration ('The name of the Amazon CloudWatch Logs log "
        f"group must begin with the {LOG_PREFIX} prefix', BadRequest); the log group is created, the file system "
        "is not",
        f"name the log group under {LOG_PREFIX}/ (e.g. {LOG_PREFIX}/<file-system>) and pass its ARN as "
        "log_configuration.destination",
    )


def _group_name(graph: Graph, destination: str) -> str | None:
    """The log group name a destination ARN names: the program's LogGroup's own name when the ARN is its output."""
    match = LOG_GROUP_ARN.match(destination)
    named = match.group("name") if match else None
    keys = [destination, destination.removesuffix(":*"), *([named] if named else [])]
    found = [graph.by_identifying_output.get(key) for key in keys]
    group = next((r for r in found if r is not None and r.type == LOG_GROUP), None)
    if group is not None:
        for key in ("name", "namePrefix"):
            value = group.inputs.get(key)
            if isinstance(value, str) and value:
                return value
        return None if group.inputs.get("name") is not None else group.name  # autonamed: the logical name first
    return named
