"""resolve_secret: each scheme, absent secrets, and the errors that name the fix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tokenplane.serving.secrets import resolve_secret


def test_env_ref_reads_the_variable() -> None:
    assert resolve_secret("env://OPENAI_API_KEY", environ={"OPENAI_API_KEY": "sk-test"}) == "sk-test"


def test_env_ref_to_an_unset_variable_is_none() -> None:
    assert resolve_secret("env://OPENAI_API_KEY", environ={}) is None


def test_k8s_ref_reads_the_mounted_file_without_its_trailing_newline(tmp_path: Path) -> None:
    (tmp_path / "serving" / "providers").mkdir(parents=True)
    (tmp_path / "serving" / "providers" / "openai").write_text("sk-mounted\n")
    environ = {"TOKENPLANE_SECRETS_DIR": str(tmp_path)}
    assert resolve_secret("k8s://serving/providers/openai", environ=environ) == "sk-mounted"


def test_k8s_ref_without_a_mounted_file_is_none(tmp_path: Path) -> None:
    environ = {"TOKENPLANE_SECRETS_DIR": str(tmp_path)}
    assert resolve_secret("k8s://serving/providers/openai", environ=environ) is None


@pytest.mark.parametrize("ref", ["k8s://serving/openai", "k8s://serving/../etc/passwd", "k8s://a//b"])
def test_malformed_k8s_ref_names_the_expected_form(ref: str) -> None:
    with pytest.raises(ValueError, match=r"k8s://<namespace>/<name>/<key>"):
        resolve_secret(ref, environ={})


def test_unsupported_scheme_names_it_and_the_supported_ones() -> None:
    with pytest.raises(ValueError, match=r"vault:// is not supported.*env://, k8s://, aws-sm://"):
        resolve_secret("vault://kv/openai", environ={})


def test_ref_without_a_scheme_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValueError, match="has no scheme") as info:
        resolve_secret("sk-live-secret", environ={})
    assert "sk-live-secret" not in str(info.value)  # a scheme-less "reference" may be a pasted secret


def test_aws_ref_without_boto3_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # what an image without boto3 looks like to `import`
    with pytest.raises(RuntimeError, match="pip install boto3") as info:
        resolve_secret("aws-sm://prod/openai", environ={})
    assert isinstance(info.value.__cause__, ImportError)


def test_an_aws_secret_is_read_by_name_here_and_by_arn_in_the_arns_region(monkeypatch: pytest.MonkeyPatch) -> None:
    moto = pytest.importorskip("moto")
    import boto3

    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    with moto.mock_aws():
        monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
        arn = boto3.client("secretsmanager").create_secret(Name="acme/tenant", SecretString="sk-tenant")["ARN"]
        assert resolve_secret("aws-sm://acme/tenant", environ={}) == "sk-tenant"
        # A pod in another region given the ARN (copied from the console) reads it where it lives.
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        assert resolve_secret(f"aws-sm://{arn}", environ={}) == "sk-tenant"
        assert resolve_secret("aws-sm://acme/tenant", environ={}) is None  # by name: only this region's


def test_an_aws_secret_the_role_may_not_decrypt_fails_closed_naming_the_secret_and_the_grant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GetSecretValue on a secret under a CMK the role may not use answers AccessDeniedException ("Access to KMS is
    not allowed"): not an absent secret (None), but an error that names the secret and the missing kms:Decrypt."""
    pytest.importorskip("boto3")
    import boto3
    from botocore.stub import Stubber  # type: ignore[import-untyped]

    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    client = boto3.client("secretsmanager", aws_access_key_id="testing", aws_secret_access_key="testing")
    stub = Stubber(client)
    stub.add_client_error(
        "get_secret_value", service_error_code="AccessDeniedException", service_message="Access to KMS is not allowed"
    )
    monkeypatch.setattr(boto3, "client", lambda *a, **k: client)
    with stub, pytest.raises(PermissionError, match=r"aws-sm://acme/tenants/data/api-key.*kms:Decrypt") as info:
        resolve_secret("aws-sm://acme/tenants/data/api-key", environ={})
    assert "Access to KMS is not allowed" in str(info.value)
