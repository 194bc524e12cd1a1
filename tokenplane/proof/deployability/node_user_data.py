"""A managed node group's launch template carries user data in the form EKS can merge with its own bootstrap.

When a managed node group runs an EKS AMI (no ``imageId`` in its launch template, an ``amiType`` other than
``CUSTOM``), EKS writes the bootstrap itself and merges it with the launch template's user data. For Amazon Linux
(AL2's bootstrap.sh, AL2023's nodeadm ``NodeConfig``) the template's user data must then be a MIME multi-part
archive ("Content-Type: multipart/mixed" with a boundary): anything else and CreateNodegroup fails
``Ec2LaunchTemplateInvalidConfiguration`` ("User data was not in the MIME multipart format"), so the node group is
never created and ``pulumi up`` fails there
(https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html#launch-template-user-data;
terraform-aws-modules/terraform-aws-eks#1875). Bottlerocket takes TOML settings instead, which EKS merges with its
own: user data that is not TOML is refused the same way. A custom AMI gets no merge (the user data is the whole
bootstrap, in whatever form the AMI reads), and Windows AMIs take PowerShell: neither is judged.

The user data is read as EC2 takes it, base64-encoded (as written, when it does not decode). It cannot see user
data known only at apply time, nor launch templates the program does not create.
"""

from __future__ import annotations

import base64
import binascii
import email
import tomllib
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.deployability.node_disk import launch_template
from tokenplane.proof.render import RenderedResource

RULE = "node-user-data"
MIME_EXAMPLE = (
    'MIME-Version: 1.0 / Content-Type: multipart/mixed; boundary="BOUNDARY", then each part after a --BOUNDARY line '
    "with its own Content-Type (application/node.eks.aws for a NodeConfig, text/x-shellscript for a script), closed "
    "by --BOUNDARY--"
)


def check(graph: Graph) -> Iterator[Finding]:
    for group in graph.of_type(NODE_GROUP):
        _, template = launch_template(graph, group)
        if template is None:
            continue  # no template, or one made elsewhere: its user data is not in the graph
        raw = template.inputs.get("userData")
        ami = str(group.inputs.get("amiType") or "")
        if not isinstance(raw, str) or not raw.strip() or template.inputs.get("imageId") or ami == "CUSTOM":
            continue  # nothing to merge, or a custom AMI: EKS adds no bootstrap of its own
        if ami.startswith("WINDOWS"):
            continue
        text = user_data_text(raw)
        if ami.startswith("BOTTLEROCKET"):
            problem = _not_toml(text)
            form, fix = "TOML settings", "write the settings as TOML ([settings.kubernetes] ...), without MIME"
        else:
            problem = None if is_mime_multipart(text) else _first_line(text)
            form = "a MIME multi-part archive"
            fix = f"wrap it in a MIME multi-part archive ({MIME_EXAMPLE})"
        if problem is None:
            continue
        yield _finding(group, template, ami or "the default Amazon Linux AMI", form, problem, fix)


def user_data_text(raw: str) -> str:
    """The user data as the instance reads it: base64-decoded, or as written when it is not base64."""
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return raw


def is_mime_multipart(text: str) -> bool:
    """Whether ``text`` parses as a MIME multipart message with at least one part (what EKS's merge reads)."""
    message = email.message_from_string(text.lstrip())
    if message.get_content_maintype() != "multipart" or not message.get_boundary():
        return False
    payload = message.get_payload()
    return isinstance(payload, list) and len(payload) > 0


def _not_toml(text: str) -> str | None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        return f"not TOML ({e})"
    return None


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f"it begins {line[:60]!r}, with no multipart/mixed Content-Type and boundary"


def _finding(
    group: RenderedResource, template: RenderedResource, ami: str, form: str, problem: str, fix: str
) -> Finding:
    said = ": User data was not in the MIME multipart format" if form.startswith("a MIME") else ""
    return Finding(
        RULE,
        group.urn,
        f"node group {group.name} runs {ami} from launch template {template.name}, whose user data EKS merges with "
        f"its own bootstrap and so must be {form}: {problem}. CreateNodegroup fails "
        f"Ec2LaunchTemplateInvalidConfiguration{said}, and the node group is never created",
        f"in {template.name}'s user_data, {fix}; or set image_id in the template (a custom AMI, whose user data is "
        "its whole bootstrap)",
    )
