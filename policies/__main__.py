"""The CrossGuard entry point: `pulumi preview --policy-pack policies`."""

from pulumi_policy import EnforcementLevel, PolicyPack

from tokenplane.policies import ALL

PolicyPack(name="tokenplane", enforcement_level=EnforcementLevel.MANDATORY, policies=ALL)
