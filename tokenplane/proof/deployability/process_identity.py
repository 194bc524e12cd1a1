"""The user and group a container's process runs as: its own securityContext, else the pod's, else the image's USER.

Shared by the rules that judge what that process may do (``run-as-user``, ``volume-writable``,
``mounted-file-readable``), so that they agree on who the process is. The image's USER is known only for the images
``known_images`` describes; elsewhere the identity is None and those rules do not judge.
"""

from __future__ import annotations

from typing import Any

from tokenplane.proof.deployability import known_images


def effective(pod: dict[str, Any], container: dict[str, Any], key: str) -> Any:
    """A securityContext field as the kubelet applies it: the container's own value wins over the pod's."""
    own = (container.get("securityContext") or {}).get(key)
    return own if own is not None else (pod.get("securityContext") or {}).get(key)


def numeric(value: Any) -> int | None:
    """An ID as the mocks may carry it (an int, or a float where the program's ints crossed the RPC), else None."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def identity(pod: dict[str, Any], container: dict[str, Any]) -> tuple[int | None, int | None]:
    """The process's user and primary group (None: not known)."""
    user, group = numeric(effective(pod, container, "runAsUser")), numeric(effective(pod, container, "runAsGroup"))
    image = known_images.known(str(container.get("image") or ""))
    if image is not None:
        name, _, image_group = known_images.FACTS[image].user.partition(":")
        if user is None:
            user = 0 if name == "root" else int(name) if name.isdigit() else None
            if group is None and image_group.isdigit():
                group = int(image_group)
        elif group is None and image_group.isdigit() and name.isdigit() and int(name) == user:
            group = int(image_group)
    if user == 0 and group is None:
        group = 0  # root's primary group, where nothing else is said
    return user, group
