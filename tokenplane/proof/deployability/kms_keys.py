"""What a KMS key's spec allows: the usages CreateKey takes with it, its algorithms, and whether it can rotate.

A KMS key's ``KeySpec`` (the provider's ``customerMasterKeySpec``, default ``SYMMETRIC_DEFAULT``) fixes what the key
can do (https://docs.aws.amazon.com/kms/latest/developerguide/symm-asymm-choose-key-spec.html,
https://docs.aws.amazon.com/kms/latest/developerguide/asymmetric-key-specs.html, ``KEY_SPECS`` below):

- **CreateKey** takes a ``KeyUsage`` (the provider's default ``ENCRYPT_DECRYPT``) only of those the spec supports:
  a symmetric key encrypts, an HMAC key generates and verifies MACs, an RSA key encrypts or signs, an ECC NIST key
  signs or agrees keys, secp256k1, Ed25519 and ML-DSA keys sign
  (https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateKey.html, KeyUsage and KeySpec); another pairing is
  refused (ValidationException) and the key is never created. An ECC key left at the provider's default usage is the
  usual form of it.
- **EnableKeyRotation**, which the provider calls right after CreateKey when ``enableKeyRotation`` is true, works
  only on symmetric encryption keys in AWS KMS's own key store: "Automatic key rotation is supported only on
  symmetric encryption KMS keys. You cannot enable automatic rotation of asymmetric KMS keys, HMAC KMS keys, KMS keys
  with imported key material, or KMS keys in custom key stores"
  (https://docs.aws.amazon.com/kms/latest/developerguide/rotate-keys.html;
  https://docs.aws.amazon.com/kms/latest/APIReference/API_EnableKeyRotation.html: UnsupportedOperationException). The
  key is created and the resource then fails, so ``pulumi up`` fails at it. ``rotationPeriodInDays`` is 90 to 2,560
  (the same page; the provider's ``IntBetween(90, 2560)``).

``kms-key-usage`` reads the same table for the calls a container makes with the key (``kms_usage``).
A value unknown at render time is not judged. It cannot see: keys of other stacks, imported keys
(``aws.kms.ExternalKey`` takes no rotation setting), and KMS's own messages' exact text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, number
from tokenplane.proof.deployability.iam_policy import arns_of
from tokenplane.proof.render import RenderedResource

KEY = "aws:kms/key:Key"
ALIAS = "aws:kms/alias:Alias"
SYMMETRIC = "SYMMETRIC_DEFAULT"
DEFAULT_USAGE = "ENCRYPT_DECRYPT"
ROTATION_DAYS = (90, 2_560)
USAGES = frozenset({"ENCRYPT_DECRYPT", "SIGN_VERIFY", "GENERATE_VERIFY_MAC", "KEY_AGREEMENT"})


@dataclass(frozen=True)
class Spec:
    """What one key spec supports: its key usages, signing and encryption algorithms."""

    usages: frozenset[str]
    signing: frozenset[str] = frozenset()
    encryption: frozenset[str] = frozenset()


_RSA_SIGNING = frozenset(
    f"{scheme}_SHA_{bits}" for scheme in ("RSASSA_PSS", "RSASSA_PKCS1_V1_5") for bits in (256, 384, 512)
)
_RSA = Spec(
    frozenset({"ENCRYPT_DECRYPT", "SIGN_VERIFY"}), _RSA_SIGNING, frozenset({"RSAES_OAEP_SHA_1", "RSAES_OAEP_SHA_256"})
)
_HMAC = Spec(frozenset({"GENERATE_VERIFY_MAC"}))
_ML_DSA = Spec(frozenset({"SIGN_VERIFY"}), frozenset({"ML_DSA_SHAKE_256"}))
# The asymmetric-key-specs page's tables: each spec's usages and algorithms.
KEY_SPECS: dict[str, Spec] = {
    SYMMETRIC: Spec(frozenset({"ENCRYPT_DECRYPT"}), encryption=frozenset({SYMMETRIC})),
    "RSA_2048": _RSA,
    "RSA_3072": _RSA,
    "RSA_4096": _RSA,
    "HMAC_224": _HMAC,
    "HMAC_256": _HMAC,
    "HMAC_384": _HMAC,
    "HMAC_512": _HMAC,
    "ECC_NIST_P256": Spec(frozenset({"SIGN_VERIFY", "KEY_AGREEMENT"}), frozenset({"ECDSA_SHA_256"})),
    "ECC_NIST_P384": Spec(frozenset({"SIGN_VERIFY", "KEY_AGREEMENT"}), frozenset({"ECDSA_SHA_384"})),
    "ECC_NIST_P521": Spec(frozenset({"SIGN_VERIFY", "KEY_AGREEMENT"}), frozenset({"ECDSA_SHA_512"})),
    "ECC_SECG_P256K1": Spec(frozenset({"SIGN_VERIFY"}), frozenset({"ECDSA_SHA_256"})),
    "ECC_NIST_EDWARDS25519": Spec(frozenset({"SIGN_VERIFY"}), frozenset({"ED25519_SHA_512", "ED25519_PH_SHA_512"})),
    "ML_DSA_44": _ML_DSA,
    "ML_DSA_65": _ML_DSA,
    "ML_DSA_87": _ML_DSA,
    "SM2": Spec(
        frozenset({"ENCRYPT_DECRYPT", "SIGN_VERIFY", "KEY_AGREEMENT"}), frozenset({"SM2DSA"}), frozenset({"SM2PKE"})
    ),
}


def spec_of(key: RenderedResource) -> str | None:
    """The key's spec (the provider's default when unset), or None when not known at render time."""
    value = key.inputs.get("customerMasterKeySpec", key.inputs.get("keySpec"))
    if value is None:
        return SYMMETRIC
    return value if isinstance(value, str) and value in KEY_SPECS else None


def usage_of(key: RenderedResource) -> str | None:
    """The key's usage (the provider's default when unset), or None when not known at render time."""
    value = key.inputs.get("keyUsage")
    if value is None:
        return DEFAULT_USAGE
    return value if value in USAGES else None


def key_named(graph: Graph, key_id: str) -> RenderedResource | None:
    """The program's key that a ``KeyId`` parameter names: its ID or ARN, or an alias's name or ARN resolved
    through the program's ``aws.kms.Alias``; None when it names none of the program's keys."""
    for key in graph.of_type(KEY):
        if key_id in arns_of(graph, key):
            return key
    for alias in graph.of_type(ALIAS):
        name = alias.inputs.get("name")
        if not isinstance(name, str):
            continue
        if key_id == name or (key_id.startswith("arn:") and key_id.endswith(f":{name}")):
            targets = [k for k in graph.referenced(alias, "targetKeyId") if k.type == KEY]
            return targets[0] if targets else None
    return None


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for key in graph.of_type(KEY):
        yield from _create(key, rule)
        yield from _rotation(key, rule)


def _refused(key: RenderedResource, rule: str, what: str, fix: str) -> Finding:
    return Finding(rule, key.urn, f"KMS refuses {key.name}: {what}", fix)


def _create(key: RenderedResource, rule: str) -> Iterator[Finding]:
    spec, usage = spec_of(key), usage_of(key)
    if spec is None or usage is None or usage in KEY_SPECS[spec].usages:
        return
    allowed = ", ".join(sorted(KEY_SPECS[spec].usages))
    default = " (the provider's default)" if key.inputs.get("keyUsage") is None else ""
    yield _refused(
        key,
        rule,
        f"CreateKey with KeySpec {spec} and KeyUsage {usage}{default}: a {spec} key's usages are {allowed} "
        "(ValidationException; https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateKey.html), so the key is "
        "never created and pulumi up fails at it",
        f"set key_usage to one of {allowed}, or choose a key spec that supports {usage}",
    )


def _rotation(key: RenderedResource, rule: str) -> Iterator[Finding]:
    inputs = key.inputs
    period = number(inputs.get("rotationPeriodInDays"))
    if period is not None and not ROTATION_DAYS[0] <= period <= ROTATION_DAYS[1]:
        yield _refused(
            key,
            rule,
            f"a rotation period of {period:g} days ({ROTATION_DAYS[0]} to {ROTATION_DAYS[1]:,} allowed: "
            "EnableKeyRotation's RotationPeriodInDays)",
            f"set rotation_period_in_days between {ROTATION_DAYS[0]} and {ROTATION_DAYS[1]}",
        )
    if inputs.get("enableKeyRotation") is not True:
        return
    spec = spec_of(key)
    if spec is not None and spec != SYMMETRIC:
        kind = "an HMAC" if spec.startswith("HMAC") else "an asymmetric"
        why = f"it is {kind} key ({spec})"
    elif any(isinstance(inputs.get(k), str) and inputs.get(k) for k in ("customKeyStoreId", "xksKeyId")):
        why = "it is in a custom key store (custom_key_store_id)"
    else:
        return
    yield _refused(
        key,
        rule,
        f"enable_key_rotation is true but {why}: automatic rotation exists only for symmetric encryption keys in "
        "KMS's own key store, so the provider's EnableKeyRotation call after CreateKey answers "
        "UnsupportedOperationException and the key resource fails "
        "(https://docs.aws.amazon.com/kms/latest/developerguide/rotate-keys.html)",
        "set enable_key_rotation=False (rotate such a key by creating a new key and moving its alias to it)",
    )
