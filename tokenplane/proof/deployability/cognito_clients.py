"""A Cognito app client that signs users in through managed login has a sign-in option (``cognito-client-sign-in``).

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
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "cognito-client-sign-in"
CLIENT = "aws:cognito/userPoolClient:UserPoolClient"
USER_FLOWS = ("code", "implicit")


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
