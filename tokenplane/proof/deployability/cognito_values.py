"""Cognito user pool prefix domains as ``CreateUserPoolDomain`` takes them (``aws-api-values``).

A prefix domain (``aws.cognito.UserPoolDomain`` without ``customDomainConfig``: the ``domain`` is the first label of
``<prefix>.auth.<region>.amazoncognito.com``) is refused with InvalidParameterException when:

- it contains a reserved word, ``aws``, ``amazon`` or ``cognito``, anywhere in the prefix ("Domain cannot contain
  reserved word: cognito", "... reserved word: aws" as the service answers: aws-amplify/amplify-cli#3854 for an
  environment named ``newcognito``, aws-solutions/content-analysis-on-aws#8 for ``aws-content-analysis-...``,
  amazon-connect/voicemail-for-amazon-connect#3 for Amazon; the developer guide's "Using the Amazon Cognito prefix
  domain for managed login",
  https://docs.aws.amazon.com/cognito/latest/developerguide/cognito-user-pools-assign-domain-prefix.html);
- it is not 1-63 lowercase letters, digits and hyphens that neither start nor end with a hyphen (the API reference's
  pattern ``^[a-z0-9](?:[a-z0-9\\-]{0,61}[a-z0-9])?$``,
  https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_CreateUserPoolDomain.html: "The
  domain name contains an invalid character. Domain names can only contain lower-case letters, numbers, and
  hyphens").

It cannot see: a prefix taken by another account (prefixes are unique per region: "Domain already associated with
another user pool"), values unknown at render time, and custom domains (their rules are DNS's and ACM's).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

DOMAIN = "aws:cognito/userPoolDomain:UserPoolDomain"
RESERVED = ("aws", "amazon", "cognito")
PREFIX = re.compile(r"^[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?$")


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for domain in graph.of_type(DOMAIN):
        prefix = domain.inputs.get("domain")
        if not isinstance(prefix, str) or domain.inputs.get("customDomainConfig") or "." in prefix:
            continue  # unknown, or a custom domain (a fully qualified name)
        reserved = [w for w in RESERVED if w in prefix.lower()]
        if reserved:
            yield Finding(
                rule,
                domain.urn,
                f"Cognito refuses {domain.name}: its prefix domain {prefix!r} contains the reserved word "
                f"{reserved[0]!r} (CreateUserPoolDomain: InvalidParameterException, Domain cannot contain reserved "
                f"word: {reserved[0]}; aws, amazon and cognito are reserved anywhere in a prefix)",
                f"choose a prefix for {domain.name} without aws, amazon or cognito (e.g. "
                f"{_without(prefix)!r}), and update the URLs that name the domain",
            )
        elif not PREFIX.match(prefix):
            yield Finding(
                rule,
                domain.urn,
                f"Cognito refuses {domain.name}: its prefix domain {prefix!r} is not 1-63 lowercase letters, digits "
                "and hyphens that neither start nor end with a hyphen (CreateUserPoolDomain: InvalidParameterException, "
                "Domain names can only contain lower-case letters, numbers, and hyphens)",
                f"give {domain.name} a prefix of lowercase letters, digits and inner hyphens",
            )


def _without(prefix: str) -> str:
    out = prefix.lower()
    for word in RESERVED:
        out = out.replace(word, "")
    out = re.sub(r"-+", "-", out).strip("-")
    return out or "login"
