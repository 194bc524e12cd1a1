"""Secret references, resolved where the secret is used and never written down.

The spec names secrets by reference only (``tokenplane.spec.secret_ref``)::

    env://VAR                   an environment variable (dev, CI)
    k8s://namespace/name/key    a Kubernetes Secret mounted as files under
                                /var/run/secrets/tokenplane/<namespace>/<name>/<key>
    aws-sm://path               AWS Secrets Manager (boto3)

A secret that is simply absent resolves to ``None``: the caller marks what
needed it unavailable (a provider without a key is skipped, never faked). A
reference the process cannot read at all (an unknown scheme, boto3 missing, a
secret its role may not read or decrypt: PermissionError naming the grant)
raises, because that is a deployment mistake to fix, not a state to run in.
Values are never logged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from tokenplane.contract import SECRET_SCHEMES
from tokenplane.contract import SECRETS_DIR as MOUNTED_SECRETS
from tokenplane.runtime_env import Var

SECRETS_DIR = Path(MOUNTED_SECRETS)  # where the pod spec mounts the referenced Secrets (tokenplane.contract)
SCHEMES = tuple(f"{scheme}://" for scheme in SECRET_SCHEMES)  # the spec accepts exactly these


def resolve_secret(ref: str, *, environ: Mapping[str, str] | None = None) -> str | None:
    """Read the secret that ``ref`` names.

    Args:
        ref: ``env://VAR``, ``k8s://namespace/name/key`` or ``aws-sm://path``.
        environ: The environment to read ``env://`` variables and ``TOKENPLANE_SECRETS_DIR``
            from; the process's own when ``None``.

    Returns:
        The secret, or ``None`` when it is not there (unset variable, no mounted file,
        no such AWS secret).

    Raises:
        ValueError: ``ref`` has an unsupported scheme or a malformed path.
        RuntimeError: ``aws-sm://`` was asked for and boto3 is not installed.
    """
    env = os.environ if environ is None else environ
    scheme, sep, path = ref.partition("://")
    if not sep or not path:
        # Only a prefix: a "reference" with no scheme may be the secret itself, pasted in by mistake.
        raise ValueError(
            f"secret reference {ref[:6]!r}... has no scheme; write one of {', '.join(s + '...' for s in SCHEMES)}"
        )
    if scheme == "env":
        return env.get(path)
    if scheme == "k8s":
        return _read_mounted(ref, path, Path(env.get(Var.SECRETS_DIR) or SECRETS_DIR))
    if scheme == "aws-sm":
        return _read_aws(path)
    raise ValueError(
        f"secret reference {ref!r}: scheme {scheme}:// is not supported here; use one of {', '.join(SCHEMES)}"
    )


def _read_mounted(ref: str, path: str, base: Path) -> str | None:
    parts = path.split("/")
    if len(parts) != 3 or not all(parts) or any(p in (".", "..") for p in parts):
        raise ValueError(f"secret reference {ref!r} must be k8s://<namespace>/<name>/<key>")
    file = base.joinpath(*parts)
    try:
        # Mounted Secret files often end in a newline that is not part of the key.
        return file.read_text().strip()
    except FileNotFoundError:
        return None


def _read_aws(path: str) -> str | None:
    try:
        import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints; boto3-stubs is not a dependency
    except ImportError as e:
        raise RuntimeError(
            f"aws-sm://{path} needs boto3, which is not installed; pip install boto3 "
            "(the serving image includes it) or reference the secret as k8s:// or env://"
        ) from e
    # A secret named by its ARN is read in the ARN's region (a replica elsewhere has another ARN); by name, here.
    fields = path.split(":")
    region = fields[3] if path.startswith("arn:") and len(fields) > 6 and fields[3] else None
    client = boto3.client("secretsmanager", region_name=region) if region else boto3.client("secretsmanager")
    try:
        value = client.get_secret_value(SecretId=path)
    except client.exceptions.ResourceNotFoundException:
        return None
    except client.exceptions.ClientError as e:
        # Denied is not absent: the secret exists and this process may not read it. Still raised (nothing is served
        # on a key that cannot be checked), with what to grant; a secret under a customer managed KMS key also needs
        # kms:Decrypt on that key ("Access to KMS is not allowed"; Secrets Manager user guide, "Secret encryption and
        # decryption in AWS Secrets Manager").
        if e.response.get("Error", {}).get("Code") != "AccessDeniedException":
            raise
        raise PermissionError(
            f"aws-sm://{path} cannot be read by this pod's role ({e.response['Error'].get('Message', '')}): allow "
            "secretsmanager:GetSecretValue on the secret and, when the secret is encrypted with a customer managed "
            "KMS key, kms:Decrypt on that key (condition kms:ViaService secretsmanager.<region>.amazonaws.com)"
        ) from e
    secret = value.get("SecretString")
    return secret if isinstance(secret, str) else None
