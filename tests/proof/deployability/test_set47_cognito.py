"""The rule set 47's Cognito machine-to-machine misses led to (written after its blind run, so not held out), planted in
the shipped dev render beside correct twins: an app client whose OAuth flows or scopes CreateUserPoolClient refuses
(cognito-client-oauth). The planted defects are of other pools, resource servers, flows and scopes than the held-out
cases' (client_credentials with implicit, or with code and implicit; a secret left unset rather than false; a scope
under a wrong identifier, a scope name the server lacks, a scope of another pool's server, a scope on a pool with no
resource server)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import cognito_clients
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
POOL = "aws:cognito/userPool:UserPool"
SERVER = "aws:cognito/resourceServer:ResourceServer"
CLIENT = "aws:cognito/userPoolClient:UserPoolClient"
POOL_ID = physical_id(POOL, "planted-pool")
OTHER_POOL_ID = physical_id(POOL, "planted-other-pool")


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


def _pools() -> list[RenderedResource]:
    return [_aws(POOL, "planted-pool", {"name": "partners"}), _aws(POOL, "planted-other-pool", {"name": "staff"})]


def _server(name: str, identifier: Any, scopes: list[Any], pool: str = POOL_ID) -> RenderedResource:
    inputs = {"userPoolId": pool, "identifier": identifier, "name": name, "scopes": [{"scopeName": s} for s in scopes]}
    return _aws(SERVER, name, {k: v for k, v in inputs.items() if v is not None})  # unknown: absent, as rendered


def _client(**inputs: Any) -> RenderedResource:
    base: dict[str, Any] = {
        "userPoolId": POOL_ID,
        "name": "partner-batch",
        "generateSecret": True,
        "allowedOauthFlowsUserPoolClient": True,
        "allowedOauthFlows": ["client_credentials"],
        "allowedOauthScopes": ["orders/read"],
        "supportedIdentityProviders": ["COGNITO"],
    }
    base.update(inputs)
    return _aws(CLIENT, "planted-client", {k: v for k, v in base.items() if v is not None})


def _oauth(client: RenderedResource, *servers: RenderedResource) -> list[Finding]:
    return _findings(cognito_clients.check_oauth, *_pools(), *servers, client)


ORDERS = _server("planted-orders", "orders", ["read", "write"])
STAFF_API = _server("planted-staff-api", "https://staff.example.com", ["admin"], pool=OTHER_POOL_ID)


@pytest.mark.parametrize(
    ("client", "says"),
    [
        (_client(allowedOauthFlows=["client_credentials", "implicit"]), "along with code flow or implicit flow"),
        (
            _client(
                allowedOauthFlows=["code", "implicit", "client_credentials"], callbackUrls=["https://a.example/cb"]
            ),
            "along with code flow or implicit flow",
        ),
        (_client(generateSecret=None), "does not have a client secret"),
        (_client(generateSecret=False, allowedOauthScopes=["orders/write"]), "does not have a client secret"),
    ],
)
def test_oauth_flows_create_user_pool_client_refuses_are_reported(client: RenderedResource, says: str) -> None:
    found = _oauth(client, ORDERS)
    assert len(found) == 1 and says in found[0].message and "InvalidOAuthFlowException" in found[0].message, found


@pytest.mark.parametrize(
    ("client", "servers", "scope"),
    [
        (_client(allowedOauthScopes=["https://orders/read"]), [ORDERS], "https://orders/read"),  # a wrong identifier
        (_client(allowedOauthScopes=["orders/read", "orders/delete"]), [ORDERS], "orders/delete"),  # not a scope of it
        (_client(allowedOauthScopes=["https://staff.example.com/admin"]), [ORDERS, STAFF_API], "staff.example.com"),
        (_client(allowedOauthFlows=["code"], allowedOauthScopes=["openid", "read"]), [], "'read'"),  # no server at all
    ],
)
def test_a_scope_the_pool_does_not_have_is_reported(
    client: RenderedResource, servers: list[RenderedResource], scope: str
) -> None:
    found = _oauth(client, *servers)
    assert len(found) == 1 and "ScopeDoesNotExistException" in found[0].message and scope in found[0].message, found


@pytest.mark.parametrize(
    ("client", "servers"),
    [
        (_client(), [ORDERS]),
        (_client(allowedOauthScopes=["orders/read", "orders/write"]), [ORDERS, STAFF_API]),
        (_client(allowedOauthFlows=["code", "implicit"], generateSecret=None, allowedOauthScopes=["openid"]), []),
        (_client(userPoolId="eu-west-1_External", allowedOauthScopes=["billing/read"]), [ORDERS]),  # outside pool
        (_client(allowedOauthScopes=["orders/read"]), [_server("planted-orders", None, ["read"])]),  # unknown id
        (_client(allowedOauthFlows=None, generateSecret=None), [ORDERS]),  # flows unknown at render time
    ],
)
def test_flows_and_scopes_cognito_takes_are_not_reported(
    client: RenderedResource, servers: list[RenderedResource]
) -> None:
    assert _oauth(client, *servers) == []
