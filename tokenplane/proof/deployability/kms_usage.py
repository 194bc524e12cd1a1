"""Every AWS CLI KMS call a container makes suits the key it names: the key's usage, and an algorithm of its spec.

A KMS key does only what its ``KeyUsage`` and ``KeySpec`` allow (``kms_keys.KEY_SPECS``, from
https://docs.aws.amazon.com/kms/latest/developerguide/asymmetric-key-specs.html). KMS refuses any other call with
InvalidKeyUsageException, on every run, after ``pulumi up`` has succeeded:

- ``aws kms sign|verify --key-id K --signing-algorithm A``: K must be a ``SIGN_VERIFY`` key, and A one of its spec's
  signing algorithms (ECC_NIST_P256 signs only with ECDSA_SHA_256, P384 with ECDSA_SHA_384, P521 with ECDSA_SHA_512,
  ECC_SECG_P256K1 with ECDSA_SHA_256, RSA keys with RSASSA_PSS_* and RSASSA_PKCS1_V1_5_*, SM2 with SM2DSA)
  (https://docs.aws.amazon.com/kms/latest/APIReference/API_Sign.html, InvalidKeyUsageException: "The encryption
  algorithm or signing algorithm specified for the operation is incompatible with the type of key material in the
  KMS key", and "the KeyUsage value of the KMS key must be SIGN_VERIFY");
- ``aws kms encrypt|decrypt|generate-data-key*|re-encrypt`` with a key whose usage is not ``ENCRYPT_DECRYPT``, and an
  ``--encryption-algorithm`` not of the key's spec; ``generate-data-key`` and ``generate-data-key-without-plaintext``
  only with a symmetric key (API_GenerateDataKey: "you must use a symmetric encryption KMS key");
- ``aws kms generate-mac|verify-mac`` with a key whose usage is not ``GENERATE_VERIFY_MAC``.

The commands are read as ``aws-cli-permissions`` reads them (``aws_cli.commands``: a ``sh -c`` script, its variables
from the container's literal env), and ``--key-id`` is resolved to the program's key by its ID or ARN, or by an
alias's name or ARN through the program's ``aws.kms.Alias``. It cannot see: keys of other stacks, key IDs or
algorithms built from values it cannot resolve, and SDK calls made by the container's own code.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from tokenplane.proof.deployability.aws_cli import commands, flag
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.kms_keys import KEY_SPECS, SYMMETRIC, key_named, spec_of, usage_of
from tokenplane.proof.render import RenderedResource

RULE = "kms-key-usage"
# The usage each command needs of its key, and the option naming its algorithm (if any).
USAGE = {
    "sign": ("SIGN_VERIFY", "--signing-algorithm"),
    "verify": ("SIGN_VERIFY", "--signing-algorithm"),
    "encrypt": ("ENCRYPT_DECRYPT", "--encryption-algorithm"),
    "decrypt": ("ENCRYPT_DECRYPT", "--encryption-algorithm"),
    "re-encrypt": ("ENCRYPT_DECRYPT", "--destination-encryption-algorithm"),
    "generate-data-key": ("ENCRYPT_DECRYPT", None),
    "generate-data-key-without-plaintext": ("ENCRYPT_DECRYPT", None),
    "generate-data-key-pair": ("ENCRYPT_DECRYPT", None),
    "generate-data-key-pair-without-plaintext": ("ENCRYPT_DECRYPT", None),
    "generate-mac": ("GENERATE_VERIFY_MAC", None),
    "verify-mac": ("GENERATE_VERIFY_MAC", None),
}
SYMMETRIC_ONLY = frozenset({"generate-data-key", "generate-data-key-without-plaintext"})


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = workload.pod_spec()
        for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
            for argv in commands(container):
                if argv[1] != "kms" or argv[2] not in USAGE:
                    continue
                option = "--destination-key-id" if argv[2] == "re-encrypt" else "--key-id"
                key_id = flag(argv[3:], option)
                key = key_named(graph, key_id) if key_id and "\0" not in key_id else None
                if key is None:
                    continue
                why = _refusal(key, argv[2], argv[3:])
                if why is not None:
                    yield _finding(workload, str(container.get("name")), argv, key, *why)


def _refusal(key: RenderedResource, verb: str, rest: list[str]) -> tuple[str, str] | None:
    """Why KMS refuses ``aws kms VERB`` on ``key`` (and the fix), or None when it takes it or it is not known."""
    spec, usage = spec_of(key), usage_of(key)
    if spec is None or usage is None:
        return None
    needed, option = USAGE[verb]
    if usage != needed:
        return (
            f"{verb} needs a {needed} key but {key.name} is a {usage} key ({spec})",
            f"call {verb} with a {needed} key, or create {key.name} with key_usage={needed}",
        )
    if verb in SYMMETRIC_ONLY and spec != SYMMETRIC:
        return (
            f"{verb} needs a symmetric encryption key but {key.name} is {spec}",
            f"generate data keys under a {SYMMETRIC} key",
        )
    algorithm = flag(rest, option) if option else None
    if algorithm is None or "\0" in algorithm:
        return None
    spec_of_key = KEY_SPECS[spec]
    allowed = spec_of_key.signing if option == "--signing-algorithm" else spec_of_key.encryption
    if algorithm in allowed:
        return None
    return (
        f"{option} {algorithm} is not an algorithm of {key.name}'s key spec {spec}, which takes "
        f"{', '.join(sorted(allowed))}",
        f"use {option} {sorted(allowed)[0]}"
        + (f" (or another of {', '.join(sorted(allowed))})" if len(allowed) > 1 else "")
        + f", or a key whose spec supports {algorithm}",
    )


def _finding(
    workload: KubeObject, container: str, argv: list[str], key: RenderedResource, why: str, fix: str
) -> Finding:
    command = shlex.join(argv).replace("\0", "$")
    return Finding(
        RULE,
        workload.urn,
        f"{workload.kind} {workload.namespace}/{workload.name} container {container} runs `{command}` on KMS key "
        f"{key.name}: {why}, so KMS answers InvalidKeyUsageException on every run after pulumi up succeeds "
        "(https://docs.aws.amazon.com/kms/latest/developerguide/asymmetric-key-specs.html)",
        fix,
    )
