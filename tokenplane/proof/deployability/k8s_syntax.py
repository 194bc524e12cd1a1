"""The API server's syntax rules for names, labels, ports and quantities, as apimachinery writes them.

Each function returns the messages the Go function of the same name returns (an empty list: valid), so a finding
can quote what ``kubectl`` and ``pulumi up`` would print. Sources: kubernetes/kubernetes,
staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go (IsDNS1123Label, IsDNS1123Subdomain,
IsDNS1035Label, IsQualifiedName, IsValidLabelValue, IsValidPortName, IsValidPortNum, IsRelaxedEnvVarName),
staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go (ParseQuantity) and pkg/apis/core/helper/helpers.go
(IsNativeResource, IsOvercommitAllowed, IsIntegerResourceName).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_PART = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_MAX, SUBDOMAIN_MAX, PORT_NAME_MAX = 63, 253, 15
# pkg/apis/core/validation's supportedPortProtocols (sorted as field.NotSupported lists them): a container's,
# a Service's and an EndpointSlice's port protocol, compared case-sensitively after the v1 default TCP.
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
# ParseQuantity's grammar: <signedNumber><suffix>, suffix binary SI, decimal SI, or a decimal exponent.
_QUANTITY = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?")
_FACTORS = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{s: Decimal(10) ** e for s, e in (("n", -9), ("u", -6), ("m", -3), ("k", 3), ("M", 6), ("G", 9), ("T", 12))},
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
}


def is_dns1123_label(value: str) -> list[str]:
    out = [f"must be no more than {LABEL_MAX} characters"] if len(value) > LABEL_MAX else []
    if not re.fullmatch(_DNS1123_LABEL, value):
        out.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
            "and end with an alphanumeric character"
        )
    return out


def is_dns1123_subdomain(value: str) -> list[str]:
    out = [f"must be no more than {SUBDOMAIN_MAX} characters"] if len(value) > SUBDOMAIN_MAX else []
    if not re.fullmatch(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*", value):
        out.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
            "must start and end with an alphanumeric character"
        )
    return out


def is_dns1035_label(value: str) -> list[str]:
    out = [f"must be no more than {LABEL_MAX} characters"] if len(value) > LABEL_MAX else []
    if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", value):
        out.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
            "character, and end with an alphanumeric character"
        )
    return out


def is_qualified_name(value: str) -> list[str]:
    """A label or annotation key: an optional DNS subdomain prefix and '/', then a name of at most 63."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or "/" in prefix):
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', with an optional DNS "
                "subdomain prefix and '/'"]  # fmt: skip
    out = [f"prefix part {m}" for m in is_dns1123_subdomain(prefix)] if slash else []
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > LABEL_MAX:
        out.append(f"name part must be no more than {LABEL_MAX} characters")
    if name and not re.fullmatch(_QUALIFIED_PART, name):
        out.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )
    return out


def is_valid_label_value(value: str) -> list[str]:
    out = [f"must be no more than {LABEL_MAX} characters"] if len(value) > LABEL_MAX else []
    if value and not re.fullmatch(_QUALIFIED_PART, value):
        out.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character"
        )
    return out


def is_valid_port_name(value: str) -> list[str]:
    """IANA_SVC_NAME (RFC 6335): a container port's name."""
    out = [f"must be no more than {PORT_NAME_MAX} characters"] if len(value) > PORT_NAME_MAX else []
    if not re.fullmatch(r"[-a-z0-9]+", value):
        out.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", value):
        out.append("must contain at least one letter (a-z)")
    if "--" in value:
        out.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        out.append("must not begin or end with a hyphen")
    return out


def is_valid_port_num(value: object) -> list[str]:
    if isinstance(value, int) and not isinstance(value, bool) and not 1 <= value <= 65535:
        return ["must be between 1 and 65535, inclusive"]
    return []


def is_relaxed_env_var_name(value: str) -> list[str]:
    """What every supported version rejects: the strict C identifier rule (IsEnvVarName) was relaxed by the
    RelaxedEnvironmentVariableValidation gate (beta, on, from 1.32) to any printable ASCII but '='."""
    if not value:
        return ["must be non-empty"]
    if "=" in value or any(not 32 <= ord(c) <= 126 for c in value):
        return ["a valid environment variable name must consist only of printable ASCII characters other than '='"]
    return []


def parse_quantity(value: object) -> Decimal | None:
    """A resource quantity's value (``"500m"`` -> 0.5), or None where ParseQuantity fails."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.fullmatch(str(value))
    if match is None:
        return None
    try:
        number, suffix = Decimal(match[1]), match[2] or ""
    except InvalidOperation:
        return None
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number * Decimal(10) ** int(suffix[1:])
    return number * _FACTORS[suffix] if suffix else number


def quantity(value: object) -> float:
    """A quantity as a number for the capacity checks; one that does not parse counts 0 (``api-validation``
    reports it, and a check must not crash on it)."""
    parsed = parse_quantity(value)
    return float(parsed) if parsed is not None else 0.0


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_overcommit_allowed(name: str) -> bool:
    """cpu, memory, ephemeral-storage may be requested below their limit; extended resources and hugepages not."""
    return is_native_resource(name) and not name.startswith("hugepages-")


def is_integer_resource(name: str) -> bool:
    """Extended resources (``nvidia.com/gpu``) are counted in whole units."""
    return not is_native_resource(name)


def integer(value: object) -> int | None:
    """A JSON integer as Go decodes it into an int field; None for anything else (a bool, a string, a float)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_valid_port_num_or_name(value: object) -> list[str]:
    """ValidatePortNumOrName: an int-or-string port is a number in range or an IANA_SVC_NAME; a quoted number
    ("8080") is a string, and a string must contain a letter; an absent port is the int 0."""
    if isinstance(value, str):
        return is_valid_port_name(value)
    number = integer(value)
    return is_valid_port_num(0 if value is None else number if number is not None else 1)
