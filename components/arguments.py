"""Checks of the components' own arguments, run where the Args are built.

An argument with a closed set of meanings refuses what it does not know: a
misspelled environment (``"production"`` for ``"prod"``) would otherwise fall
to the non-prod branch and deploy one replica on a small volume, silently. A
base URL that the serving code joins with the OpenAI path (``/v1/...``) refuses
a path of its own: ``http://model-gateway:8080/v1`` would make every request
``/v1/v1/chat/completions``, a 404 behind green probes. Both raise a
``ValueError`` (``SpecError`` for the environment) at construction, so ``pulumi preview`` and ``tokenplane check``
fail on the line that made the mistake.
"""

from __future__ import annotations

from typing import Literal, get_args
from urllib.parse import urlsplit

from tokenplane.errors import SpecError
from tokenplane.spec import Environment

EnvironmentName = Literal["dev", "staging", "prod"]
ENVIRONMENTS: tuple[str, ...] = get_args(EnvironmentName)


def check_environment(owner: str, value: object) -> None:
    """Refuse an environment other than ``dev``, ``staging`` or ``prod`` (``Environment``'s values).

    Args:
        owner: the Args class, named in the message (``VectorDbArgs``).
        value: what was passed; an ``Environment`` member passes as its value.

    Raises:
        SpecError: ``value`` is not a known environment (it stands for ``spec.platform.environment``; a
            ``ValueError``); the message names the allowed ones.
    """
    if isinstance(value, str) and value in ENVIRONMENTS:
        return
    allowed = ", ".join(map(repr, ENVIRONMENTS))
    hint = " (did you mean 'prod'?)" if isinstance(value, str) and value.lower().startswith("prod") else ""
    raise SpecError(
        f"{owner}.environment={value!r} is not an environment; allowed: {allowed}{hint}. Pass one of them "
        f"(or spec.platform.environment, an {Environment.__name__}): the components size by it, and an "
        "unknown one would silently get a default (one Qdrant or ClickHouse replica on the default volume, not "
        "prod's three)"
    )


def check_base_url(owner: str, argument: str, value: object) -> None:
    """Refuse a literal base URL with a path: the serving code appends ``/v1/...`` itself.

    A ``pulumi.Output`` (a component's URL) is not known until the deployment and passes unchecked; the
    components' own URLs (``ModelGateway.url``, ``VllmPool.service_url``) have no path.

    Args:
        owner: the Args class, named in the message (``GatewayArgs``).
        argument: the argument's name (``model_gateway_url``, ``pool_urls['chat']``).
        value: what was passed.

    Raises:
        ValueError: ``value`` is a string with a path, a query or a fragment, or without a scheme and host.
    """
    if not isinstance(value, str) or not value:
        return
    parts = urlsplit(value)
    if (
        parts.scheme in ("http", "https")
        and parts.netloc
        and parts.path in ("", "/")
        and not (parts.query or parts.fragment)
    ):
        return
    base = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "http://<host>:<port>"
    raise ValueError(
        f"{owner}.{argument}={value!r} is not a base URL; pass scheme, host and port only ({base!r}): the client "
        "appends the OpenAI path itself (/v1/chat/completions), so a path here (such as /v1) sends every request "
        "to a route the server does not have (/v1/v1/...) and it answers 404"
    )
