"""A VPC-attached Lambda function's execution role may manage the function's network interfaces when it is created.

Lambda creates the function's network interfaces with the function's own execution role, and checks that role when
the function is created: "Lambda uses your function's permissions to create and manage network interfaces", and
the role needs ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces and ec2:DeleteNetworkInterface (with
DescribeSubnets, AssignPrivateIpAddresses and UnassignPrivateIpAddresses), as the AWS managed policy
AWSLambdaVPCAccessExecutionRole grants them
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-vpc.html#configuration-vpc-permissions). Without them
CreateFunction fails with InvalidParameterValueException "The provided execution role does not have permissions to
call CreateNetworkInterface on EC2" (aws/aws-sam-cli#617, serverless/serverless#1966,
cloudposse/terraform-aws-lambda-function#13).

Two defects follow: the role grants none of them (every run fails), or it grants them through a policy attachment
or role policy the function does not wait for (Pulumi creates both at once, and the first run fails whenever
CreateFunction comes first: Pulumi orders only through outputs and ``depends_on``,
https://www.pulumi.com/docs/iac/concepts/inputs-outputs/). A role's inline ``inlinePolicies`` and
``managedPolicyArns`` exist with the role, which the function references, so they are in place.

AWS managed policies are read from IAM's own documents as moto records them (``ListPolicies --scope AWS``).
It cannot see: a role the program does not create, a policy known only at apply time, permission boundaries and
explicit denies (it reads Allow statements only).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.iam_policy import allows, as_list, document, role_grants, role_named

RULE = "function-vpc-permissions"
FUNCTION = "aws:lambda/function:Function"
# What CreateFunction checks the execution role for, of the list in configuration-vpc.html#configuration-vpc-permissions.
ENI_ACTIONS = ("ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface")
VPC_POLICY = "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"


def check(graph: Graph) -> Iterator[Finding]:
    for function in graph.of_type(FUNCTION):
        if not as_list(lookup(function.inputs, "vpcConfig.subnetIds")):
            continue  # not in a VPC
        role = role_named(graph, function.inputs.get("role"))
        if role is None:
            continue
        grants = role_grants(graph, role, aws_managed=True)
        if any(document(d) is None for _, d in grants):
            continue  # a policy known only at apply time may grant them
        missing = [a for a in ENI_ACTIONS if not allows([d for _, d in grants], a)]
        if missing:
            yield Finding(
                RULE,
                function.urn,
                f"Lambda function {function.name} runs in a VPC (vpcConfig.subnetIds), but its execution role "
                f"{role.name} does not allow {', '.join(missing)}: Lambda creates the function's network interfaces "
                'with that role, and CreateFunction fails with InvalidParameterValueException ("The provided '
                'execution role does not have permissions to call CreateNetworkInterface on EC2")',
                f"attach {VPC_POLICY} to {role.name} (RolePolicyAttachment) and make the function depend on the "
                "attachment",
            )
            continue
        waited = graph.waits_for(function.urn) | {role.urn}
        holders = [h for h, d in grants if all(allows([d], a) for a in ENI_ACTIONS)]
        if holders and not any(h.urn in waited for h in holders):
            names = ", ".join(sorted({h.name for h in holders}))
            yield Finding(
                RULE,
                function.urn,
                f"Lambda function {function.name} runs in a VPC (vpcConfig.subnetIds), and its execution role "
                f"{role.name} gets the network interface permissions ({', '.join(ENI_ACTIONS)}) only from {names}, "
                "which the function does not wait for: Pulumi creates both at once, and whenever CreateFunction "
                "comes first the first run fails with InvalidParameterValueException (the role may not call "
                "CreateNetworkInterface)",
                f"make the function depend on {names} (ResourceOptions(depends_on=[...]))",
            )
