"""The one reading of who a container's process is, which run-as-user, volume-writable and mounted-file-readable share."""

from __future__ import annotations

from tokenplane.proof.deployability.known_images import VLLM_PUBLIC
from tokenplane.proof.deployability.process_identity import effective, identity


def test_the_containers_context_wins_over_the_pods() -> None:
    pod = {"securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "runAsNonRoot": True}}
    container = {"image": "busybox", "securityContext": {"runAsUser": 2000}}
    assert identity(pod, container) == (2000, 3000)
    assert effective(pod, container, "runAsNonRoot") is True
    assert effective(pod, {"securityContext": {"runAsNonRoot": False}}, "runAsNonRoot") is False


def test_ids_that_crossed_the_mock_rpc_as_floats_are_read() -> None:
    # The mocks carry a program's ints as floats; an ID of 101.0 is user 101, not an unknown user.
    assert identity({"securityContext": {"runAsUser": 101.0, "runAsGroup": 101.0}}, {"image": "x"}) == (101, 101)
    # A boolean is not an ID (True is an int in Python).
    assert identity({"securityContext": {"runAsUser": True}}, {"image": "x"}) == (None, None)


def test_the_images_user_where_the_program_knows_the_image() -> None:
    assert identity({}, {"image": f"{VLLM_PUBLIC}:v0.19.0"}) == (0, 0)  # vLLM's image runs as root
    assert identity({}, {"image": "docker.io/library/unknown:1"}) == (None, None)  # not known: not judged
