"""A Lambda function's environment variables: keys Lambda takes, none of its reserved ones, 4 KB in all.

``CreateFunction`` and ``UpdateFunctionConfiguration`` validate ``Environment.Variables`` before anything else:

- each key matches ``[a-zA-Z]([a-zA-Z0-9_])+`` (https://docs.aws.amazon.com/lambda/latest/api/API_Environment.html):
  a key with a hyphen, a dot or a leading digit or underscore is refused with a ValidationException ("Value at
  'environment.variables' failed to satisfy constraint: Map keys must satisfy constraint: [Member must satisfy
  regular expression pattern: [a-zA-Z]([a-zA-Z0-9_])+]");
- no key is one of the runtime's reserved variables (the "Reserved environment variables" list of
  https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html: "The keys for these environment variables
  are reserved and can't be set in your function configuration"): InvalidParameterValueException "Lambda was unable
  to configure your environment variables because the environment variables you have provided contains reserved
  keys that are currently not supported for modification";
- the variables take at most 4 KB ("The total size of all environment variables doesn't exceed 4 KB", the same
  page). Lambda does not say how it counts; the keys' and values' UTF-8 bytes are a lower bound of any count, and
  only that bound above 4,096 is judged.

``pulumi up`` fails at the function and whatever waits for it. A key or value unknown at render time is not judged
(a secret's value counts only the render's placeholder, so the size is a lower bound still). Variables that are
settable though the runtime also uses them (``AWS_LAMBDA_EXEC_WRAPPER``, ``NODE_OPTIONS``...) pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.runtime_env import Var

FUNCTION = "aws:lambda/function:Function"
KEY = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]+$")
# The configuration-envvars page's reserved keys (those the key pattern would not already refuse); the four the
# platform's own processes also read are spelled through runtime_env.Var, the one place env names are written.
RESERVED = frozenset(
    {
        Var.AWS_REGION,
        Var.AWS_DEFAULT_REGION,
        "AWS_EXECUTION_ENV",
        "AWS_LAMBDA_FUNCTION_NAME",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
        "AWS_LAMBDA_FUNCTION_VERSION",
        "AWS_LAMBDA_INITIALIZATION_TYPE",
        "AWS_LAMBDA_LOG_GROUP_NAME",
        "AWS_LAMBDA_LOG_STREAM_NAME",
        "AWS_ACCESS_KEY",
        Var.AWS_ACCESS_KEY_ID,
        Var.AWS_SECRET_ACCESS_KEY,
        "AWS_SESSION_TOKEN",
        "AWS_LAMBDA_RUNTIME_API",
        "LAMBDA_TASK_ROOT",
        "LAMBDA_RUNTIME_DIR",
    }
)
MAX_BYTES = 4_096


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for function in graph.of_type(FUNCTION):
        variables = lookup(function.inputs, "environment.variables")
        if not isinstance(variables, dict):
            continue
        keys = [k for k in variables if isinstance(k, str)]
        for key in keys:
            if not KEY.match(key):
                fixed = re.sub(r"[^a-zA-Z0-9_]", "_", key)
                fixed = fixed if KEY.match(fixed) else f"V_{fixed}".replace("__", "_")
                yield Finding(
                    rule,
                    function.urn,
                    f"Lambda refuses {function.name}: environment variable key {key!r} does not match "
                    "[a-zA-Z]([a-zA-Z0-9_])+ (ValidationException: Map keys must satisfy constraint), so "
                    "CreateFunction fails at pulumi up",
                    f"rename the variable to a letter followed by letters, digits or underscores (e.g. {fixed!r}), "
                    "and read that name in the code",
                )
            elif key in RESERVED:
                yield Finding(
                    rule,
                    function.urn,
                    f"Lambda refuses {function.name}: environment variable {key} is reserved by the Lambda runtime "
                    "(InvalidParameterValueException: ... contains reserved keys that are currently not supported "
                    "for modification), so CreateFunction fails at pulumi up",
                    f"drop {key} (the runtime sets it) or use another name",
                )
        size = sum(
            len(k.encode()) + (len(v.encode()) if isinstance(v, str) else 0)
            for k, v in variables.items()
            if isinstance(k, str)
        )
        if size > MAX_BYTES:
            yield Finding(
                rule,
                function.urn,
                f"Lambda refuses {function.name}: its environment variables take at least {size:,} bytes, over "
                "Lambda's 4 KB limit (InvalidParameterValueException: ... exceeded the 4KB limit), so "
                "CreateFunction fails at pulumi up",
                "move large values to SSM Parameter Store or Secrets Manager and pass their names",
            )
