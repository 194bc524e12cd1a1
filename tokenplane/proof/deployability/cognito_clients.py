"""A Cognito app client that signs users in through managed login has a sign-in option (``cognito-client-sign-in``),
and CreateUserPoolClient takes its OAuth flows and scopes (``cognito-client-oauth``).

An ``aws.cognito.UserPoolClient`` with ``allowedOauthFlowsUserPoolClient`` true and a user flow (``code`` or
``implicit``) sends its users to the user pool's ``/oauth2/authorize`` endpoint, where managed login (the hosted UI)
offers the identity providers of ``supportedIdentityProviders``: "This parameter sets the IdPs that managed login will
display on the login page for your app client" (CreateUserPoolClient,
https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_CreateUserPoolClient.html), the user
pool's own directory being ``COGNITO``. CreateUserPoolClient takes a client without any (the parameter is optional;
the developer guide's app client identity provider settings: "Before you can use an identity provider in your app
client, you need to enable it first. You can enable more than one identity provider for an app, but you must enable at
least one", https://docs.aws.amazon.com/cognito/latest/developerguide/cognito-user-pools-app-idp-settings.html; a
user's report, hashicorp/terraform-provider-aws#23374: "Without this value being set, the app client will not have an
identity provider and the hosted UI will not be available"), so ``pulumi up``
succeeds and the authorize request shows no way to sign in: the relying party's login never completes.

A ``client_credentials``-only client (machine to machine) signs no user in and is not judged; neither is a list whose
value is unknown at render time.

It cannot see: identity providers added to the client outside the program, and sign-in through the user pools API
(``InitiateAuth``), which ``supportedIdentityProviders`` does not govern.

An app client's OAuth flows and scopes that CreateUserPoolClient refuses (``cognito-client-oauth``), so the first
``pulumi up`` fails on the client
(https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_CreateUserPoolClient.html):

- ``AllowedOAuthFlows`` names ``client_credentials`` on a client without a secret (``generateSecret`` false or
  unset, the provider's default): the API reference sets ``client_credentials`` "to specify that the client should
  get the access token ... from the token endpoint using a combination of client and client_secret"; the service
  answers
  ``InvalidOAuthFlowException: client_credentials flow can not be selected if client does not have a client secret.``
- ``client_credentials`` together with ``code`` or ``implicit``: ``InvalidOAuthFlowException: client_credentials flow
  can not be selected along with code flow or implicit flow.`` (aws/aws-sdk-js-v3#2650: "Cognito does not allow
  combining client_credentials with either of code or implicit").
- ``AllowedOAuthScopes`` names a scope that is neither a standard one nor ``<identifier>/<scope name>`` of a
  resource server of the pool ("Possible values provided by OAuth are: phone, email, openid, and profile. Possible
  values provided by AWS are: aws.cognito.signin.user.admin. Custom scopes created in Resource Servers are also
  supported"; a custom scope is named by its server's identifier, a slash and its name, the developer guide's
  "Scopes, M2M, and resource servers"): ``ScopeDoesNotExistException: Invalid scope requested: <scope>``
  (awsdocs/aws-cloudformation-user-guide#564). Judged only for a pool the program creates, whose resource servers
  are all in the program with known identifiers and scope names; the resource server's ``scopeIdentifiers`` output
  is ``<identifier>/<scope name>`` for each of its scopes.

It cannot see: a pool made outside the program (its resource servers may be too), values unknown at render time
(a flow list, a scope list, an identifier or scope name), a ``generateSecret`` computed from another output (read as
unset), and a client created before the resource server whose scope it names (not ordered by Pulumi: a race the
client may lose even with a right name).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "cognito-client-sign-in"
RULE_OAUTH = "cognito-client-oauth"
CLIENT = "aws:cognito/userPoolClient:UserPoolClient"
POOL = "aws:cognito/userPool:UserPool"
RESOURCE_SERVER = "aws:cognito/resourceServer:ResourceServer"
USER_FLOWS = ("code", "implicit")
STANDARD_SCOPES = ("phone", "email", "openid", "profile", "aws.cognito.signin.user.admin")
API = "CreateUserPoolClient"


def check(graph: Graph) -> Iterator[Finding]:
    for client in graph.of_type(CLIENT):
        inputs = client.inputs
        flows = inputs.get("allowedOauthFlows")
        if inputs.get("allowedOauthFlowsUserPoolClient") is not True or not isinstance(flows, list):
            continue
        user_flows = [f for f in flows if f in USER_FLOWS]
        providers = inputs.get("supportedIdentityProviders")
        if not user_flows or (providers is not None and providers != []):
            continue
        yield Finding(
            RULE,
            client.urn,
            f"nobody can sign in through app client {client.name}: it allows the OAuth {user_flows[0]} flow but "
            "names no supportedIdentityProviders (not even COGNITO, the user pool's own directory), so managed login "
            "at /oauth2/authorize offers no sign-in option and the relying party's login never completes "
            "(CreateUserPoolClient accepts it: the parameter sets the IdPs that managed login will display)",
            f"set supportedIdentityProviders on {client.name}: ['COGNITO'] for the user pool's users, and/or the "
            "names of its federated identity providers",
        )


def check_oauth(graph: Graph) -> Iterator[Finding]:
    for client in graph.of_type(CLIENT):
        inputs = client.inputs
        flows = inputs.get("allowedOauthFlows")
        if isinstance(flows, list) and "client_credentials" in flows:
            user_flows = [f for f in flows if f in USER_FLOWS]
            if user_flows:
                yield Finding(
                    RULE_OAUTH,
                    client.urn,
                    f"Cognito refuses app client {client.name}: its allowedOauthFlows combine client_credentials with "
                    f"{' and '.join(user_flows)} ({API}: InvalidOAuthFlowException, client_credentials flow can not "
                    "be selected along with code flow or implicit flow)",
                    f"split {client.name} in two: a client with a secret and client_credentials alone for machines, "
                    f"and another with {user_flows[0]} (and its callback URLs) for people",
                )
            if inputs.get("generateSecret") is not True:
                yield Finding(
                    RULE_OAUTH,
                    client.urn,
                    f"Cognito refuses app client {client.name}: it allows the client_credentials flow but has no "
                    f"client secret (generateSecret {'unset' if 'generateSecret' not in inputs else 'false'}) ({API}: "
                    "InvalidOAuthFlowException, client_credentials flow can not be selected if client does not have "
                    "a client secret)",
                    f"set generateSecret: true on {client.name} (the client authenticates to the token endpoint "
                    "with its ID and secret)",
                )
        yield from _scopes(graph, client)


def _scopes(graph: Graph, client: RenderedResource) -> Iterator[Finding]:
    scopes = client.inputs.get("allowedOauthScopes")
    if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
        return
    pool_id = client.inputs.get("userPoolId")
    if not isinstance(pool_id, str) or not any(p.type == POOL for p in graph.by_physical_ids(pool_id)):
        return  # a pool made outside the program: its resource servers may be too
    known: set[str] = set()
    for server in graph.of_type(RESOURCE_SERVER):
        if server.inputs.get("userPoolId") != pool_id:
            if not isinstance(server.inputs.get("userPoolId"), str):
                return  # a server of an unknown pool may be this pool's
            continue
        identifier = server.inputs.get("identifier")
        names = [s.get("scopeName") if isinstance(s, dict) else None for s in server.inputs.get("scopes") or []]
        if not isinstance(identifier, str) or not all(isinstance(n, str) for n in names):
            return  # unknown at render time
        known |= {f"{identifier}/{n}" for n in names}
    missing = [s for s in scopes if s not in STANDARD_SCOPES and s not in known]
    if not missing:
        return
    bare = [k for k in sorted(known) if k.rsplit("/", 1)[-1] == missing[0]]
    hint = f" (did you mean {bare[0]!r}?)" if bare else ""
    yield Finding(
        RULE_OAUTH,
        client.urn,
        f"Cognito refuses app client {client.name}: its allowedOauthScopes name {missing[0]!r}, which is neither a "
        "standard scope (openid, email, phone, profile, aws.cognito.signin.user.admin) nor "
        f"<resource server identifier>/<scope name> of a resource server of its user pool{hint} ({API}: "
        f"ScopeDoesNotExistException, Invalid scope requested: {missing[0]})",
        f"name custom scopes in full on {client.name}: the resource server's identifier, a slash and the scope name "
        "(its scopeIdentifiers output), or add the scope to the pool's resource server"
        + (f"; the pool has {', '.join(sorted(known))}" if known else "; the pool has no resource server"),
    )
