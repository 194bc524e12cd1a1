"""Where the Batch API's files live in a region: a folder of the batch workers' results bucket.

The AI gateway stores uploads there and serves outputs back; the batch workers
read the inputs and write the outputs. Their pods share no volume, and the
gateway's root filesystem is read-only, so S3 is where the two meet. The
environment set here is what ``serving.gateway.runtime.file_store`` reads.
"""

from __future__ import annotations

from typing import Any

import pulumi

from tokenplane.runtime_env import DEFAULT_FILES_PREFIX as FILES_PREFIX
from tokenplane.runtime_env import Var, env_list

GATEWAY_ACTIONS = ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"]  # upload; retrieve and content; delete
WORKER_ACTIONS = ["s3:PutObject", "s3:GetObject"]  # read the input; write the output and error files


def files_env(bucket: pulumi.Input[str]) -> list[dict[str, Any]]:
    """The container env that selects the S3 file store on ``bucket``, under ``FILES_PREFIX``."""
    return env_list({Var.FILES_BUCKET: bucket, Var.FILES_PREFIX: FILES_PREFIX})


def bucket_arn(bucket: str) -> str:
    return f"arn:aws:s3:::{bucket}"


def files_statements(bucket: str, actions: list[str]) -> list[dict[str, Any]]:
    """IAM statements: ``actions`` on the objects under ``FILES_PREFIX``, and ListBucket on ``bucket``.

    Without ListBucket S3 answers a read of a missing key with 403, not 404, and the store could not
    tell a file that does not exist (the tenant's 404) from a role it lacks (an outage).
    """
    arn = bucket_arn(bucket)
    return [
        {"Effect": "Allow", "Action": list(actions), "Resource": [f"{arn}/{FILES_PREFIX}/*"]},
        {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [arn]},
    ]
