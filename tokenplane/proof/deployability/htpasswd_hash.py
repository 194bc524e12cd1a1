"""An nginx ``auth_basic_user_file``'s passwords are hashes nginx can check.

nginx's ngx_http_auth_basic_module reads each ``user:password[:comment]`` line of the file and checks the password
given by ``ngx_crypt(given, stored)`` against the stored text: "passwords must be encrypted with the crypt()
function", or in the ``{PLAIN}``, ``{SHA}``, ``{SSHA}`` schemes and Apache's ``$apr1$`` (ngx_crypt.c; anything else
goes to the system's crypt(3): ``$id$...`` or a 13-character DES string). A password written in clear, without a
scheme, is taken as a crypt(3) hash: crypt(given, stored) never equals the clear text, so every sign-in is refused
with 401 while the pods stay Ready (https://nginx.org/en/docs/http/ngx_http_auth_basic_module.html
#auth_basic_user_file).

Judged where the file's content is known: a ConfigMap or Secret the program makes (a Secret's ``stringData`` or
base64 ``data``), mounted in a container of a known nginx image (``known_images.DAEMONIZING``) at the path that an
nginx config the program mounts (``/etc/nginx/nginx.conf`` or ``/etc/nginx/conf.d/*.conf``) names in
``auth_basic_user_file`` (a relative path is under the config prefix ``/etc/nginx``) beside an ``auth_basic`` that
is not ``off``. Only passwords that cannot be a hash are flagged: not ``{SCHEME}...``, not ``$...``, not a
13-character DES string of ``[./0-9A-Za-z]`` nor a 20-character BSDi one (``_...``). Cannot see: files written at
run time or from objects outside the program, values unknown at render time, paths with variables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.image_files import under
from tokenplane.proof.deployability.known_images import daemonizing
from tokenplane.proof.deployability.mounted_files import REDACTED, mounted_files
from tokenplane.proof.deployability.reachability import pod_template

RULE = "htpasswd-hash"
CONF_PREFIX = "/etc/nginx"
_USER_FILE = re.compile(r"(?:^|[;{}\s])auth_basic_user_file\s+(\"[^\"]*\"|'[^']*'|[^;\s]+)\s*;")
_AUTH_BASIC = re.compile(r"(?:^|[;{}\s])auth_basic\s+(\"[^\"]*\"|'[^']*'|[^;\s]+)\s*;")
_DES = re.compile(r"[./0-9A-Za-z]{13}")
_BSDI = re.compile(r"_[./0-9A-Za-z]{19}")


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            if daemonizing(str(container.get("image") or "")) is None:
                continue
            mounted = mounted_files(graph, workload, pod, container)
            for conf, text in mounted.items():
                if not isinstance(text, str) or not _is_config(conf) or not _auth_on(text):
                    continue
                for match in _USER_FILE.finditer(text):
                    path = match.group(1).strip("\"'")
                    if "$" in path:
                        continue
                    path = path if path.startswith("/") else f"{CONF_PREFIX}/{path}"
                    users = _clear(mounted.get(path))
                    if users:
                        yield _finding(workload, container, conf, path, users)


def _is_config(path: str) -> bool:
    return path == f"{CONF_PREFIX}/nginx.conf" or (
        under(path, f"{CONF_PREFIX}/conf.d") and path.endswith(".conf") and path.count("/") == 4
    )


def _auth_on(text: str) -> bool:
    return any(m.group(1).strip("\"'") != "off" for m in _AUTH_BASIC.finditer(text))


def _clear(content: str | None) -> list[str]:
    """The users of an htpasswd file whose password cannot be a hash nginx checks."""
    if not isinstance(content, str) or REDACTED in content:
        return []
    users = []
    for line in content.replace("\r", "\n").split("\n"):
        if not line.strip() or line.startswith("#") or ":" not in line:
            continue
        user, _, rest = line.partition(":")
        password = rest.split(":", 1)[0]
        if not password or password.startswith(("{", "$")) or _DES.fullmatch(password) or _BSDI.fullmatch(password):
            continue
        users.append(user)
    return users


def _finding(workload: KubeObject, container: dict[str, Any], conf: str, path: str, users: list[str]) -> Finding:
    return Finding(
        RULE,
        workload.urn,
        f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} "
        f"({container.get('image')}) reads basic-auth users from {path} ({conf}'s auth_basic_user_file), whose "
        f"password for {', '.join(sorted(users))} is written in clear, with no scheme nginx recognises: nginx takes "
        "it for a crypt(3) hash and compares crypt(given password, stored text) with it, which never matches, so "
        "every sign-in is refused with 401",
        "store a hash: {SSHA}/{SHA} (base64 of SHA-1), $apr1$ or bcrypt/SHA-512 crypt (htpasswd -B or openssl "
        "passwd -6), or prefix the clear text with {PLAIN} (nginx's ngx_crypt)",
    )
