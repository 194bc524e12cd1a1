"""Stages 2 and 3: API key -> tenant.

Keys are resolved from the tenants' secret references once at start-up and
kept only as SHA-256 digests, so a heap dump or a debug log never shows one.
A secret may hold several keys separated by commas, which is how a key is
rotated without downtime: add the new one, move clients, drop the old one.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping

from tokenplane.serving.errors import AuthenticationFailed
from tokenplane.spec import PlatformSpec, Tenant

log = logging.getLogger(__name__)

Resolver = Callable[[str], str | None]
HTTP_WHITESPACE = " \t"  # RFC 9110's OWS: the only white space a header value may carry around the key


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class KeyRing:
    """Digests of every tenant's API keys."""

    def __init__(self, digests: Mapping[str, Tenant]) -> None:
        self._tenants = dict(digests)

    @classmethod
    def from_spec(cls, spec: PlatformSpec, resolve: Resolver) -> KeyRing:
        """Resolve each tenant's ``api_key_secret``; a tenant whose secret is absent cannot sign in (logged)."""
        digests: dict[str, Tenant] = {}
        for tenant in spec.tenants:
            secret = resolve(tenant.api_key_secret)
            if not secret:
                log.warning(
                    "tenant %s has no API key (%s is not set); it cannot sign in", tenant.name, tenant.api_key_secret
                )
                continue
            for key in (k.strip() for k in secret.split(",")):
                if key:
                    digests[digest(key)] = tenant
        return cls(digests)

    def __len__(self) -> int:
        return len(self._tenants)

    def authenticate(self, authorization: str | None) -> Tenant:
        """The tenant of ``Authorization: Bearer <key>``; ``AuthenticationFailed`` (401) otherwise."""
        if not authorization:
            raise AuthenticationFailed(
                "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.", code="missing_api_key"
            )
        scheme, _, key = authorization.partition(" ")
        # Only HTTP's own white space is trimmed: str.strip() also took a non-breaking space (and every other
        # Unicode space) off the key, so "<key>\xa0" signed in as "<key>".
        key = key.strip(HTTP_WHITESPACE)
        if scheme.lower() != "bearer" or not key:
            raise AuthenticationFailed("The Authorization header must be 'Bearer <key>'.")
        tenant = self._tenants.get(digest(key))
        if tenant is None:
            # No part of the key is echoed: a short key would be shown whole, and a response is logged by
            # whatever sits between the client and us.
            raise AuthenticationFailed("Incorrect API key provided. Check the key your platform team issued.")
        return tenant
