"""A Firehose stream's S3 destination as ``CreateDeliveryStream`` takes it: buffering with dynamic partitioning, and
the custom prefixes' expressions (part of ``aws-api-values``); and what the destination writes where, for the
readers of its objects (``table-partitions-found``).

Firehose validates how an ``ExtendedS3DestinationConfiguration``'s fields go together and refuses the stream with
InvalidArgumentException, so ``pulumi up`` fails at the stream:

- **Dynamic partitioning buffers**: with ``DynamicPartitioningConfiguration.Enabled``, ``BufferingHints.SizeInMBs``
  is at least 64 ("BufferingHints.SizeInMBs must be at least 64 when Dynamic Partitioning is enabled") and
  ``IntervalInSeconds`` at least 60 ("... must be at least 60 seconds when Dynamic Partitioning is enabled")
  (https://docs.aws.amazon.com/firehose/latest/dev/dynamic-partitioning.html; both messages quoted in aws/aws-cdk
  ``packages/aws-cdk-lib/aws-kinesisfirehose/lib/private/helpers.ts``, ``createBufferingHints``). The provider
  sends its schema default when the program sets none: ``buffering_size`` 5 MiB, ``buffering_interval`` 300 s
  (hashicorp/terraform-provider-aws ``internal/service/firehose/delivery_stream.go``; pulumi-aws documents "The
  default value is 5"), so a stream that leaves the size out is refused too. ``BufferingHints`` takes 1-128 MiB and
  0-900 s (https://docs.aws.amazon.com/firehose/latest/APIReference/API_BufferingHints.html).
- **Prefix expressions** (https://docs.aws.amazon.com/firehose/latest/dev/s3-prefixes.html, "Semantic rules"):
  ``!{`` appears only in ``!{namespace:value}`` expressions of the namespaces ``timestamp``, ``firehose``
  (``error-output-type``, ``random-string``), ``partitionKeyFromQuery`` and ``partitionKeyFromLambda``;
  ``ErrorOutputPrefix`` can be null only if ``Prefix`` contains no expressions ("ErrorOutputPrefix cannot be null
  or empty when Prefix contains expressions", hashicorp/terraform-provider-aws#13416); an ``ErrorOutputPrefix`` with
  expressions includes ``!{firehose:error-output-type}``; ``Prefix`` never contains
  ``!{firehose:error-output-type}``.
- **Dynamic partitioning prefixes**: a stream with dynamic partitioning has an error prefix ("You must specify an S3
  error bucket prefix for a Firehose stream if you want to enable dynamic partitioning",
  https://docs.aws.amazon.com/firehose/latest/dev/dynamic-partitioning-error-handling.html) and a prefix built of
  its partitioning keys' expressions (https://docs.aws.amazon.com/firehose/latest/dev/dynamic-partitioning-s3bucketprefix.html;
  aws/aws-cdk#24044, a timestamp-only prefix refused); the ``partitionKeyFromQuery`` and ``partitionKeyFromLambda``
  namespaces exist only with dynamic partitioning, each needing its processor (a ``MetadataExtraction`` processor
  for the query keys, a ``Lambda`` one for the Lambda keys), and a ``partitionKeyFromQuery:KEY`` names a key the
  ``MetadataExtractionQuery`` defines (judged only on a JQ object literal ``{key: expr, ...}``; the
  "Understand partitioning keys" page). The error prefix holds the records whose keys could not be evaluated, so
  it uses no partition key expression. Whether Firehose refuses these key mismatches at create or delivers every
  record to the error prefix was not confirmed from a public source: their findings say the keys cannot be
  evaluated, and claim neither.

Cannot see: values unknown at render time (not judged), processors' code, JQ queries other than an object literal,
destinations other than extended S3.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, number
from tokenplane.proof.render import RenderedResource

STREAM = "aws:kinesis/firehoseDeliveryStream:FirehoseDeliveryStream"
# The provider's schema defaults, sent when the program sets none (delivery_stream.go).
DEFAULT_SIZE_MIB = 5
DEFAULT_INTERVAL_S = 300
DYNAMIC_MIN_SIZE_MIB = 64
DYNAMIC_MIN_INTERVAL_S = 60
SIZE_RANGE = (1, 128)
INTERVAL_RANGE = (0, 900)
EXPRESSION = re.compile(r"!\{([^{}:]*):([^{}]*)\}")
NAMESPACES = ("timestamp", "firehose", "partitionKeyFromQuery", "partitionKeyFromLambda")
FIREHOSE_VALUES = ("error-output-type", "random-string")
PARTITION_NAMESPACES = ("partitionKeyFromQuery", "partitionKeyFromLambda")
# What a partition key or random string renders as in a sample path: a value unknown until the record arrives.
UNKNOWN = "\x00"
# The instant sample paths render timestamps at: month and day apart, each field distinct.
SAMPLE = datetime.datetime(2026, 12, 7, 9, 5, 3, tzinfo=datetime.UTC)


@dataclass(frozen=True)
class Writer:
    """An S3 prefix a stream writes under: its bucket, its prefix (expressions in it) and the stream."""

    stream: RenderedResource
    bucket: str
    prefix: str

    def sample(self, *, display: bool = False) -> str | None:
        """``s3://bucket/prefix`` with timestamps rendered at ``SAMPLE`` and each partition key or random string
        as ``UNKNOWN`` (``<key>`` for ``display``); None where a timestamp pattern is not one this module
        renders."""
        out: list[str] = []
        last = 0
        for match in EXPRESSION.finditer(self.prefix):
            out.append(self.prefix[last : match.start()])
            namespace, value = match.group(1), match.group(2)
            if namespace == "timestamp":
                rendered = render_date(value, SAMPLE)
                if rendered is None:
                    return None
                out.append(rendered)
            else:
                out.append(f"<{value}>" if display else UNKNOWN)
            last = match.end()
        out.append(self.prefix[last:])
        return f"s3://{self.bucket}/" + "".join(out)

    def fixed(self) -> str:
        """``s3://bucket/`` and the prefix up to its first expression: where every object lands under."""
        return f"s3://{self.bucket}/" + self.prefix.split("!{", 1)[0]


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for stream in graph.of_type(STREAM):
        config = stream.inputs.get("extendedS3Configuration")
        if stream.inputs.get("destination") != "extended_s3" or not isinstance(config, dict):
            continue
        yield from _buffers(stream, config, rule)
        yield from _prefixes(stream, config, rule)


def writers(graph: Graph) -> Iterator[Writer]:
    """Each extended S3 stream's destination with a bucket and prefix known at render time."""
    for stream in graph.of_type(STREAM):
        config = stream.inputs.get("extendedS3Configuration")
        if stream.inputs.get("destination") != "extended_s3" or not isinstance(config, dict):
            continue
        arn, prefix = config.get("bucketArn"), config.get("prefix") or ""
        if not isinstance(arn, str) or not arn.startswith("arn:aws") or ":::" not in arn or not isinstance(prefix, str):
            continue
        if not any(m.group(1) == "timestamp" for m in EXPRESSION.finditer(prefix)):
            if _dynamic(config):
                continue  # where Firehose puts the time then is not documented; not judged
            prefix += "!{timestamp:yyyy/MM/dd/HH}/"  # what Firehose appends to a prefix with no timestamp
        yield Writer(stream, arn.split(":::", 1)[1], prefix)


# Java DateTimeFormatter letters this module renders: letter -> (field at the instant, name width or None).
_FIELDS = {
    "y": lambda t: t.year,
    "u": lambda t: t.year,
    "M": lambda t: t.month,
    "L": lambda t: t.month,
    "d": lambda t: t.day,
    "D": lambda t: t.timetuple().tm_yday,
    "H": lambda t: t.hour,
    "m": lambda t: t.minute,
    "s": lambda t: t.second,
}


def render_date(pattern: str, instant: datetime.datetime) -> str | None:
    """A Java DateTimeFormatter pattern rendered at ``instant`` (numeric fields, quoted literals, punctuation);
    None where it uses a letter this does not render (month names, zones, week fields)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                return None
            out.append("'" if end == i + 1 else pattern[i + 1 : end])
            i = end + 1
            continue
        if char.isalpha():
            run = len(pattern) - i - len(pattern[i:].lstrip(char))
            if char not in _FIELDS or (char in "ML" and run > 2):
                return None
            value = _FIELDS[char](instant)
            if char in "yu" and run == 2:
                out.append(f"{value % 100:02d}")
            else:
                out.append(f"{value:0{run}d}")
            i += run
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _dynamic(config: dict[str, Any]) -> bool:
    dynamic = config.get("dynamicPartitioningConfiguration")
    return isinstance(dynamic, dict) and dynamic.get("enabled") is True


def _refused(stream: RenderedResource, rule: str, what: str, fix: str) -> Finding:
    return Finding(
        rule,
        stream.urn,
        f"Firehose refuses {stream.name} (CreateDeliveryStream: InvalidArgumentException): {what}",
        fix,
    )


def _unpartitionable(stream: RenderedResource, rule: str, what: str, fix: str) -> Finding:
    """A prefix whose partition keys Firehose cannot evaluate: refused at create or, if not, every record lands in
    the error prefix (which of the two is not confirmed from a public source, so the message claims neither)."""
    return Finding(
        rule,
        stream.urn,
        f"Firehose cannot evaluate the partition keys of {stream.name} (refused by CreateDeliveryStream or, at "
        f"best, every record delivered to the error prefix): {what}",
        fix,
    )


def _buffers(stream: RenderedResource, config: dict[str, Any], rule: str) -> Iterator[Finding]:
    size_input, interval_input = config.get("bufferingSize"), config.get("bufferingInterval")
    size = DEFAULT_SIZE_MIB if size_input is None else number(size_input)
    interval = DEFAULT_INTERVAL_S if interval_input is None else number(interval_input)
    if size is not None and not SIZE_RANGE[0] <= size <= SIZE_RANGE[1]:
        yield _refused(
            stream,
            rule,
            f"a buffering size of {size:g} MiB (BufferingHints.SizeInMBs is 1 to 128)",
            "set bufferingSize within 1-128 MiB",
        )
    if interval is not None and not INTERVAL_RANGE[0] <= interval <= INTERVAL_RANGE[1]:
        yield _refused(
            stream,
            rule,
            f"a buffering interval of {interval:g} s (BufferingHints.IntervalInSeconds is 0 to 900)",
            "set bufferingInterval within 0-900 s",
        )
    if not _dynamic(config):
        return
    if size is not None and size < DYNAMIC_MIN_SIZE_MIB:
        told = "the provider's default of 5 MiB (no bufferingSize set)" if size_input is None else f"{size:g} MiB"
        yield _refused(
            stream,
            rule,
            f"dynamic partitioning with a buffering size of {told}: BufferingHints.SizeInMBs must be at least "
            f"{DYNAMIC_MIN_SIZE_MIB} when Dynamic Partitioning is enabled",
            f"set extendedS3Configuration.bufferingSize to at least {DYNAMIC_MIN_SIZE_MIB} (MiB, up to 128)",
        )
    if interval is not None and interval < DYNAMIC_MIN_INTERVAL_S:
        yield _refused(
            stream,
            rule,
            f"dynamic partitioning with a buffering interval of {interval:g} s: BufferingHints.IntervalInSeconds "
            f"must be at least {DYNAMIC_MIN_INTERVAL_S} seconds when Dynamic Partitioning is enabled",
            f"set extendedS3Configuration.bufferingInterval to at least {DYNAMIC_MIN_INTERVAL_S} s",
        )


def _expressions(text: str) -> list[tuple[str, str]] | None:
    """The ``!{namespace:value}`` expressions of a prefix, or None where ``!{`` opens something else."""
    found = [(m.group(1), m.group(2)) for m in EXPRESSION.finditer(text)]
    return found if text.count("!{") == len(found) else None


def _prefixes(stream: RenderedResource, config: dict[str, Any], rule: str) -> Iterator[Finding]:
    prefix, error_prefix = config.get("prefix"), config.get("errorOutputPrefix")
    if (prefix is not None and not isinstance(prefix, str)) or (
        error_prefix is not None and not isinstance(error_prefix, str)
    ):
        return  # known only at apply time
    prefix, error_prefix = prefix or "", error_prefix or ""
    dynamic = _dynamic(config)
    parsed = {"Prefix": _expressions(prefix), "ErrorOutputPrefix": _expressions(error_prefix)}
    for field, expressions in parsed.items():
        text = prefix if field == "Prefix" else error_prefix
        if expressions is None:
            yield _refused(
                stream,
                rule,
                f"{field} {text!r} has '!{{' outside a !{{namespace:value}} expression",
                "write each expression as !{namespace:value}",
            )
            continue
        for namespace, value in expressions:
            if namespace not in NAMESPACES:
                yield _refused(
                    stream,
                    rule,
                    f"{field} {text!r} uses the namespace {namespace!r} (Firehose has {', '.join(NAMESPACES)})",
                    "use one of Firehose's namespaces",
                )
            elif namespace == "firehose" and value not in FIREHOSE_VALUES:
                yield _refused(
                    stream,
                    rule,
                    f"{field} {text!r} uses !{{firehose:{value}}} (the firehose namespace has error-output-type and random-string)",
                    "use !{firehose:error-output-type} or !{firehose:random-string}",
                )
    exprs, error_exprs = parsed["Prefix"] or [], parsed["ErrorOutputPrefix"] or []
    if exprs and not error_prefix:
        yield _refused(
            stream,
            rule,
            f"the prefix {prefix!r} contains expressions and no error output prefix is set (ErrorOutputPrefix cannot be "
            "null or empty when Prefix contains expressions)",
            "set extendedS3Configuration.errorOutputPrefix, with !{firehose:error-output-type} in it "
            "(e.g. 'errors/!{firehose:error-output-type}/!{timestamp:yyyy/MM/dd}/')",
        )
    elif dynamic and not error_prefix:
        yield _refused(
            stream,
            rule,
            "dynamic partitioning with no error output prefix (a stream with dynamic partitioning must have one)",
            "set extendedS3Configuration.errorOutputPrefix with !{firehose:error-output-type} in it",
        )
    if error_exprs and ("firehose", "error-output-type") not in error_exprs:
        yield _refused(
            stream,
            rule,
            f"the error output prefix {error_prefix!r} has expressions but not !{{firehose:error-output-type}}, which an ErrorOutputPrefix with expressions must include",
            "add !{firehose:error-output-type} to errorOutputPrefix",
        )
    if ("firehose", "error-output-type") in exprs:
        yield _refused(
            stream,
            rule,
            f"the prefix {prefix!r} contains !{{firehose:error-output-type}}, which only ErrorOutputPrefix may use",
            "move !{firehose:error-output-type} to errorOutputPrefix",
        )
    if any(n in PARTITION_NAMESPACES for n, _ in error_exprs):
        yield _unpartitionable(
            stream,
            rule,
            f"the error output prefix {error_prefix!r} uses a partition key expression, which the records it receives (those whose keys failed) do not have",
            "use only !{firehose:...} and !{timestamp:...} in errorOutputPrefix",
        )
    keys = [(n, v) for n, v in exprs if n in PARTITION_NAMESPACES]
    if dynamic and parsed["Prefix"] is not None and not keys:
        yield _refused(
            stream,
            rule,
            f"dynamic partitioning with a prefix {prefix!r} that has no partitionKeyFromQuery or partitionKeyFromLambda expression",
            "put the partitioning keys in the prefix, e.g. 'data/customer=!{partitionKeyFromQuery:customer}/'",
        )
    if keys and not dynamic:
        yield _unpartitionable(
            stream,
            rule,
            f"the prefix {prefix!r} uses partition key expressions, which Firehose evaluates only with dynamic partitioning enabled",
            "set dynamicPartitioningConfiguration.enabled true (with a 64 MiB buffer) or take the partition keys out of the prefix",
        )
    if keys and dynamic:
        yield from _keys_defined(stream, config, keys, rule)


def _processors(config: dict[str, Any]) -> list[dict[str, Any]] | None:
    processing = config.get("processingConfiguration")
    if processing is None:
        return []
    if not isinstance(processing, dict):
        return None
    if processing.get("enabled") is False:
        return []
    listed = processing.get("processors") or []
    return [p for p in listed if isinstance(p, dict)] if isinstance(listed, list) else None


def _parameter(processor: dict[str, Any], name: str) -> Any:
    for parameter in processor.get("parameters") or []:
        if isinstance(parameter, dict) and parameter.get("parameterName") == name:
            return parameter.get("parameterValue")
    return None


def _keys_defined(
    stream: RenderedResource, config: dict[str, Any], keys: list[tuple[str, str]], rule: str
) -> Iterator[Finding]:
    processors = _processors(config)
    if processors is None or any(not isinstance(p.get("type"), str) for p in processors):
        return
    types = {p["type"] for p in processors}
    if any(n == "partitionKeyFromQuery" for n, _ in keys) and "MetadataExtraction" not in types:
        yield _unpartitionable(
            stream,
            rule,
            "the prefix uses partitionKeyFromQuery keys but no enabled MetadataExtraction processor defines them",
            "add a MetadataExtraction processor whose MetadataExtractionQuery defines each key",
        )
    if any(n == "partitionKeyFromLambda" for n, _ in keys) and "Lambda" not in types:
        yield _unpartitionable(
            stream,
            rule,
            "the prefix uses partitionKeyFromLambda keys but no enabled Lambda processor returns them",
            "add a Lambda processor that returns the partition keys",
        )
    for processor in processors:
        if processor["type"] != "MetadataExtraction":
            continue
        defined = query_keys(_parameter(processor, "MetadataExtractionQuery"))
        if defined is None:
            continue
        missing = sorted({v for n, v in keys if n == "partitionKeyFromQuery" and v not in defined})
        if missing:
            yield _unpartitionable(
                stream,
                rule,
                f"the prefix uses partitionKeyFromQuery:{', partitionKeyFromQuery:'.join(missing)}, which the "
                f"MetadataExtractionQuery does not define (it defines {', '.join(sorted(defined)) or 'none'})",
                "define each key the prefix names in the MetadataExtractionQuery, or name only keys it defines",
            )


_QUERY_KEY = re.compile(r'^\s*(?:"([^"]+)"|([A-Za-z_][A-Za-z0-9_]*))\s*:')


def query_keys(query: Any) -> set[str] | None:
    """The keys a JQ object literal ``{key: expr, ...}`` defines; None for anything else (not judged)."""
    if not isinstance(query, str):
        return None
    text = query.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    parts, depth, current, quote = [], 0, "", False
    for char in text[1:-1]:
        if char == '"':
            quote = not quote
        elif not quote and char in "([{":
            depth += 1
        elif not quote and char in ")]}":
            depth -= 1
        if char == "," and depth == 0 and not quote:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    keys: set[str] = set()
    for part in parts:
        match = _QUERY_KEY.match(part)
        if match is None:
            return None
        keys.add(match.group(1) or match.group(2))
    return keys
