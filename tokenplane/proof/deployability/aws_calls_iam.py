"""IAM as the provider creates it: roles with their trust, inline and managed policies, policies, instance profiles,
OIDC providers (see ``aws_calls``)."""

from __future__ import annotations

from tokenplane.proof.deployability.aws_calls import (
    AWS_MANAGED_POLICY,
    Api,
    Made,
    builds,
    drop_none,
    need,
    physical_name,
    tags,
    whole,
)

# --- IAM ----------------------------------------------------------------------------------------------------------


@builds("aws:iam/role:Role")
def role(api: Api) -> Made:
    name = physical_name(api, limit=64)
    params = drop_none(
        RoleName=name,
        AssumeRolePolicyDocument=need(api, "assumeRolePolicy"),
        Path=api.inputs.get("path"),
        Description=api.inputs.get("description"),
        MaxSessionDuration=whole(api.inputs.get("maxSessionDuration")),
        PermissionsBoundary=api.inputs.get("permissionsBoundary"),
        Tags=tags(api) or None,
    )
    arn = api.call("iam", "create_role", **params)["Role"]["Arn"]
    for inline in api.inputs.get("inlinePolicies") or []:
        if inline.get("name") and inline.get("policy"):
            api.call(
                "iam", "put_role_policy", RoleName=name, PolicyName=inline["name"], PolicyDocument=inline["policy"]
            )
    for policy_arn in api.inputs.get("managedPolicyArns") or []:
        _attach(api, name, policy_arn)
    return Made(name, arn, aliases={str(api.render_outputs.get("name")): name})


@builds("aws:iam/policy:Policy")
def policy(api: Api) -> Made:
    params = drop_none(
        PolicyName=physical_name(api, limit=128),
        PolicyDocument=need(api, "policy"),
        Path=api.inputs.get("path"),
        Description=api.inputs.get("description"),
        Tags=tags(api) or None,
    )
    arn = api.call("iam", "create_policy", **params)["Policy"]["Arn"]
    return Made(arn, arn)


@builds("aws:iam/rolePolicy:RolePolicy")
def role_policy(api: Api) -> Made:
    role_name, name = need(api, "role"), physical_name(api, limit=128)
    api.call("iam", "put_role_policy", RoleName=role_name, PolicyName=name, PolicyDocument=need(api, "policy"))
    return Made(f"{role_name}:{name}")


@builds("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
def role_policy_attachment(api: Api) -> Made:
    role_name = need(api, "role")
    _attach(api, role_name, need(api, "policyArn"))
    return Made(f"{role_name}-{api.inputs['policyArn']}")


def _attach(api: Api, role_name: str, policy_arn: str) -> None:
    if policy_arn.startswith(AWS_MANAGED_POLICY):
        api.attach_managed(role_name, policy_arn)
    else:
        api.call("iam", "attach_role_policy", RoleName=role_name, PolicyArn=policy_arn)


@builds("aws:iam/instanceProfile:InstanceProfile")
def instance_profile(api: Api) -> Made:
    name = physical_name(api, limit=128)
    arn = api.call("iam", "create_instance_profile", InstanceProfileName=name, **drop_none(Path=api.inputs.get("path")))
    if (role_name := api.inputs.get("role")) is not None:
        api.call("iam", "add_role_to_instance_profile", InstanceProfileName=name, RoleName=role_name)
    return Made(name, arn["InstanceProfile"]["Arn"])


@builds("aws:iam/openIdConnectProvider:OpenIdConnectProvider")
def oidc_provider(api: Api) -> Made:
    params = drop_none(
        Url=need(api, "url"),
        ClientIDList=api.inputs.get("clientIdLists"),
        ThumbprintList=api.inputs.get("thumbprintLists"),
        Tags=tags(api) or None,
    )
    arn = api.call("iam", "create_open_id_connect_provider", **params)["OpenIDConnectProviderArn"]
    return Made(arn, arn)
