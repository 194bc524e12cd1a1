"""The six kinds of defect a blind held-out set found no check for (issue 27), planted in the dev stack.

Each check is an invariant over the rendered graph (``endpoints``, ``irsa``, ``iam_s3``, ``store_ports``); every
kind is planted at least three ways that are not the held-out case itself, and correct variants of the same shape
(a named targetPort, a probe on a named port, a StringLike trust, ListBucket on the bucket with GetObject on its
objects, an all-protocols group) must stay quiet. The shipped stacks giving no finding is
``test_examples.test_example_stack_passes_every_deployability_check``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_flows import edit
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Finding, endpoints, iam_s3, irsa, service_accounts, store_ports
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult

RULES = (
    endpoints.SELECTS,
    endpoints.TARGET_PORT,
    endpoints.PROBE_PORT,
    irsa.RULE,
    service_accounts.RULE,  # the ServiceAccount side of IRSA, which irsa-trust leaves to it
    iam_s3.RULE,
    store_ports.RULE,
)
Change = Callable[[RenderedResource], RenderedResource]


def found(*changes: Change, extra: list[RenderedResource] | None = None) -> list[Finding]:
    result: RenderResult = rendered("dev")
    for change in changes:
        result = mutated(result, change)
    if extra:
        result = mutated(result, lambda r: r, extra=extra)
    graph = Graph(spec("dev"), result)
    return [f for rule in RULES for f in deploy.CHECKS[rule](graph)]


def only(findings: list[Finding], rule: str, urn_end: str, *words: str) -> Finding:
    """The one finding there is: of ``rule``, on the resource named ``urn_end``, naming ``words``."""
    assert len(findings) == 1, "\n".join(str(f) for f in findings) or "no finding"
    [finding] = findings
    assert finding.rule == rule and finding.urn.endswith(f"::{urn_end}"), finding
    assert all(w in str(finding) for w in words), finding
    return finding


def container(inputs: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return dict(inputs["spec"]["template"]["spec"]["containers"][index])


def set_container(name: str, change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(inputs: dict[str, Any]) -> None:
        target = next(c for c in inputs["spec"]["template"]["spec"]["containers"] if c["name"] == name)
        change(target)

    return apply


def test_the_dev_stack_gives_none_of_these_findings() -> None:
    assert found() == []


# service-selects ---------------------------------------------------------------------------------------------
def test_a_service_selector_typo_leaves_it_without_endpoints() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["selector"] = {"app.kubernetes.io/name": "model-gatway"}

    finding = only(found(edit("Service", "model-gateway", typo)), endpoints.SELECTS, "dev-local-model-gateway-service")
    assert "model-gatway" in finding.message and "app.kubernetes.io/name=model-gateway" in finding.message


def test_a_selector_label_the_pods_lack_is_found() -> None:
    def extra_label(inputs: dict[str, Any]) -> None:
        inputs["spec"]["selector"]["tokenplane.io/tier"] = "gold"

    only(found(edit("Service", "clickhouse", extra_label)), endpoints.SELECTS, "dev-local-clickhouse-service")


def test_a_service_in_another_namespace_than_its_pods_is_found() -> None:
    def move(inputs: dict[str, Any]) -> None:
        inputs["metadata"]["namespace"] = "llm-serving"

    only(found(edit("Service", "qdrant", move)), endpoints.SELECTS, "dev-local-qdrant-service", "llm-serving")


def test_pods_relabelled_under_their_service_are_found() -> None:
    def relabel(inputs: dict[str, Any]) -> None:
        inputs["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] = "modelgw"

    # Both Services that select the model gateway's pods lose them: the ClusterIP one and the headless one its
    # processes find their peers by.
    findings = found(edit("Deployment", "model-gateway", relabel))
    assert sorted(f.urn.rsplit("::", 1)[1] for f in findings) == [
        "dev-local-model-gateway-peers",
        "dev-local-model-gateway-service",
    ], findings
    assert all(f.rule == endpoints.SELECTS and "app.kubernetes.io/name=modelgw" in f.message for f in findings)


def test_a_service_without_a_selector_or_in_a_chart_namespace_is_not_judged() -> None:
    def no_selector(inputs: dict[str, Any]) -> None:
        del inputs["spec"]["selector"]

    def into_monitoring_typo(inputs: dict[str, Any]) -> None:  # monitoring holds kube-prometheus-stack's release
        inputs["spec"]["selector"] = {"app.kubernetes.io/name": "grafana"}

    assert found(edit("Service", "qdrant", no_selector), edit("Service", "otel-collector", into_monitoring_typo)) == []


def otel_typo(inputs: dict[str, Any]) -> None:
    for selector in (inputs["spec"].get("selector"), inputs["spec"].get("podSelector")):
        labels = selector.get("matchLabels", selector) if selector is not None else {}
        if labels.get("app.kubernetes.io/name") == "otel-collector":
            labels["app.kubernetes.io/name"] = "otel-collectro"


@pytest.mark.parametrize(
    ("kind", "name", "rule"),
    [
        ("Service", "otel-collector", endpoints.SELECTS),
        ("PodDisruptionBudget", "otel-collector", "target-exists"),
        ("NetworkPolicy", "otel-collector-ingress", "selector-selects"),
    ],
)
def test_a_typo_of_the_programs_own_pods_in_a_chart_namespace_is_found(kind: str, name: str, rule: str) -> None:
    # From the reference-mutation benchmark: monitoring holds kube-prometheus-stack's release, whose pods are not all
    # in the graph, so these were not judged; a value two edits from the program's own otel-collector pods is a typo.
    findings = [
        f for f in deploy.run(spec("dev"), mutated(rendered("dev"), edit(kind, name, otel_typo))) if f.rule == rule
    ]
    assert len(findings) == 1 and "app.kubernetes.io/name=otel-collector" in findings[0].message, findings


# service-target-port -----------------------------------------------------------------------------------------
def test_a_numeric_target_port_the_pods_do_not_declare_is_found() -> None:
    def wrong(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ports"][0]["targetPort"] = 8081

    finding = only(
        found(edit("Service", "model-gateway", wrong)), endpoints.TARGET_PORT, "dev-local-model-gateway-service"
    )
    assert "targets port 8081" in finding.message and "http=" in finding.message


def test_an_undeclared_number_on_an_image_that_may_listen_there_is_not_judged() -> None:
    # The collector listens on ports it does not declare (its health check on 13133, say): Kubernetes does not
    # require a container to declare a port, so only the program's known images are held to their declared ports.
    def elsewhere(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ports"][0]["targetPort"] = 13133

    def health(c: dict[str, Any]) -> None:
        c["readinessProbe"] = {"httpGet": {"path": "/", "port": 13133}, "periodSeconds": 10}

    change = (
        edit("Service", "otel-collector", elsewhere),
        edit("Deployment", "otel-collector", set_container("otel-collector", health)),
    )
    assert found(*change) == []


def test_a_named_target_port_typo_is_found() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ports"][0]["targetPort"] = "htp"

    finding = only(
        found(edit("Service", "model-gateway", typo)), endpoints.TARGET_PORT, "dev-local-model-gateway-service"
    )
    assert "names port 'htp'" in finding.message


def test_a_container_port_renamed_under_a_named_target_port_is_found() -> None:
    def rename(port: dict[str, Any]) -> None:
        port["ports"][0]["name"] = "web"

    change = edit("Deployment", "vllm-embed", set_container("vllm", rename))
    # Both Services in front of the pool name the port: the ClusterIP one and the headless one the model gateway
    # resolves to every replica.
    findings = found(change)
    assert sorted(f.urn.rsplit("::", 1)[1] for f in findings) == [
        "dev-local-pool-embed-replicas",
        "dev-local-pool-embed-service",
    ], findings
    for finding in findings:
        assert finding.rule == endpoints.TARGET_PORT and "'http'" in finding.message and "web=8000" in finding.message


def test_a_named_target_port_and_pods_that_declare_no_ports_are_not_flagged() -> None:
    def undeclared(c: dict[str, Any]) -> None:
        c.pop("ports")

    def elsewhere(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ports"][0]["targetPort"] = 7000  # the pods declare nothing: Kubernetes does not require it

    assert (
        found(edit("StatefulSet", "qdrant", set_container("qdrant", undeclared)), edit("Service", "qdrant", elsewhere))
        == []
    )


# probe-port ----------------------------------------------------------------------------------------------------
def test_a_readiness_probe_on_an_undeclared_port_is_found() -> None:
    def wrong(c: dict[str, Any]) -> None:
        c["readinessProbe"]["httpGet"]["port"] = 8081

    finding = only(
        found(edit("Deployment", "ai-gateway", set_container("ai-gateway", wrong))),
        endpoints.PROBE_PORT,
        "dev-local-ai-gateway-deployment",
    )
    assert "readinessProbe httpGet asks port 8081" in finding.message and "never becomes ready" in finding.message


def test_a_liveness_probe_on_an_unknown_port_name_is_found() -> None:
    def typo(c: dict[str, Any]) -> None:
        c["livenessProbe"]["httpGet"]["port"] = "healthz"

    finding = only(
        found(edit("Deployment", "otel-collector", set_container("otel-collector", typo))),
        endpoints.PROBE_PORT,
        "dev-local-observability-otel",
    )
    assert "'healthz'" in finding.message and "restarts it" in finding.message


@pytest.mark.parametrize("handler", ["tcpSocket", "grpc"])
def test_a_startup_probe_by_socket_or_grpc_on_an_undeclared_port_is_found(handler: str) -> None:
    def wrong(c: dict[str, Any]) -> None:
        c["startupProbe"] = {handler: {"port": 9999}, "periodSeconds": 10}

    change = edit("Deployment", "vllm-small", set_container("vllm", wrong))
    only(found(change), endpoints.PROBE_PORT, "dev-local-pool-small-deployment", f"startupProbe {handler}", "9999")


@pytest.mark.parametrize("port", [6334, "grpc"])
def test_an_http_probe_on_the_grpc_port_is_found(port: int | str) -> None:
    # From the reference-mutation benchmark: Qdrant's readiness probe moved from 6333 (HTTP) to 6334, a port the
    # container declares, but gRPC's: the HTTP/1.1 GET gets a protocol error.
    def wrong(c: dict[str, Any]) -> None:
        c["readinessProbe"]["httpGet"]["port"] = port

    finding = only(
        found(edit("StatefulSet", "qdrant", set_container("qdrant", wrong))),
        endpoints.PROBE_PORT,
        "dev-local-qdrant-statefulset",
    )
    assert "serves gRPC" in finding.message and "speaks HTTP/1.1" in finding.message


def test_a_grpc_probe_on_the_grpc_port_and_an_http_probe_on_the_http_port_are_not_flagged() -> None:
    def grpc(c: dict[str, Any]) -> None:
        c["livenessProbe"] = {"grpc": {"port": 6334}, "periodSeconds": 20}
        c["readinessProbe"]["httpGet"]["port"] = "http"

    changes = [edit("StatefulSet", "qdrant", set_container("qdrant", grpc))]
    assert [f for f in found(*changes) if f.rule == endpoints.PROBE_PORT] == []


def test_a_probe_on_a_named_port_or_in_a_container_without_ports_is_not_flagged() -> None:
    def named(c: dict[str, Any]) -> None:
        c["readinessProbe"]["httpGet"]["port"] = "http"

    def undeclared(c: dict[str, Any]) -> None:
        c.pop("ports")
        c["readinessProbe"]["httpGet"]["port"] = 7000

    changes = [
        edit("Deployment", "ai-gateway", set_container("ai-gateway", named)),
        edit("StatefulSet", "qdrant", set_container("qdrant", undeclared)),
    ]
    assert [f for f in found(*changes) if f.rule == endpoints.PROBE_PORT] == []


# irsa-trust ----------------------------------------------------------------------------------------------------
def trust(role: str, change: Callable[[dict[str, Any]], None]) -> Change:
    def apply(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["assumeRolePolicy"])
        change(document["Statement"][0]["Condition"])
        inputs["assumeRolePolicy"] = json.dumps(document)

    return edit("aws:iam/role:Role", role, apply)


def sub_key(condition: dict[str, Any]) -> str:
    return str(next(k for k in condition["StringEquals"] if k.endswith(":sub")))


def test_a_trust_naming_another_namespace_is_found_on_the_service_account() -> None:
    def other_namespace(condition: dict[str, Any]) -> None:
        condition["StringEquals"][sub_key(condition)] = "system:serviceaccount:llm-serving:model-gateway"

    only(
        found(trust("dev-local-model-gateway-role", other_namespace)),
        service_accounts.RULE,
        "dev-local-model-gateway-sa",
    )


def test_a_service_account_renamed_away_from_its_trust_is_found() -> None:
    def rename(inputs: dict[str, Any]) -> None:
        inputs["metadata"]["name"] = "clickhouse-server"

    findings = found(edit("ServiceAccount", "clickhouse", rename))
    assert {f.rule for f in findings} == {service_accounts.RULE}, findings  # the pod's account is now missing too
    assert any(f.urn.endswith("::dev-local-clickhouse-sa") and "clickhouse-server" in f.message for f in findings)


def test_a_string_like_pattern_that_misses_the_service_account_is_found() -> None:
    def pattern(condition: dict[str, Any]) -> None:
        key = sub_key(condition)
        del condition["StringEquals"][key]
        condition["StringLike"] = {key: "system:serviceaccount:llm-serving:*"}

    only(found(trust("dev-local-ai-gateway-role", pattern)), service_accounts.RULE, "dev-local-ai-gateway-sa")


def test_a_service_account_its_role_trusts_that_lacks_the_role_annotation_is_found() -> None:
    def forget(inputs: dict[str, Any]) -> None:
        del inputs["metadata"]["annotations"]["eks.amazonaws.com/role-arn"]

    finding = only(found(edit("ServiceAccount", "batch-workers", forget)), irsa.RULE, "dev-local-batch-sa")
    assert "nothing in the program carries the role's ARN" in finding.message


def audience(condition: dict[str, Any]) -> None:
    key = next(k for k in condition["StringEquals"] if k.endswith(":aud"))
    condition["StringEquals"][key] = "sts.amazon.com"


def test_an_add_on_role_whose_audience_is_not_sts_is_found_once() -> None:
    """The EBS CSI add-on's ServiceAccount is not in the graph, but the add-on names its role: service-account-trust
    reads it as the add-on's account, and irsa-trust leaves it (one root cause, one finding)."""
    role = "dev-local-cluster-ebs-csi-role"
    finding = only(found(trust(role, audience)), service_accounts.RULE, "dev-local-cluster-addon-aws-ebs-csi-driver")
    assert "sts.amazon.com" in finding.message and "EKS add-on aws-ebs-csi-driver" in finding.message


def test_a_role_nothing_reads_whose_audience_is_not_sts_is_found_on_the_role() -> None:
    """A web-identity role with no account that any rule reads: irsa-trust reads its audience on the role."""

    def unnamed(inputs: dict[str, Any]) -> None:
        inputs["serviceAccountRoleArn"] = None

    role = "dev-local-cluster-ebs-csi-role"
    addon = edit("aws:eks/addon:Addon", "dev-local-cluster-addon-aws-ebs-csi-driver", unnamed)
    finding = only(found(trust(role, audience), addon), irsa.RULE, role)
    assert "sts.amazon.com" in finding.message and '"sts.amazonaws.com"' in finding.fix


def test_a_carried_role_whose_audience_is_not_sts_is_found_once() -> None:
    only(found(trust("dev-local-batch-role", audience)), service_accounts.RULE, "dev-local-batch-sa")


def test_an_add_on_role_read_with_the_shared_matcher_takes_a_string_like_audience_as_iam_does() -> None:
    """The add-on's trust is read with the one matcher (``web_identity``): a StringLike audience pattern that matches
    sts.amazonaws.com admits it, one that does not is refused, for the add-on's account as for the graph's."""

    def like(pattern: str) -> Callable[[dict[str, Any]], None]:
        def apply(condition: dict[str, Any]) -> None:
            key = next(k for k in condition["StringEquals"] if k.endswith(":aud"))
            del condition["StringEquals"][key]
            condition["StringLike"] = {key: pattern}

        return apply

    assert found(trust("dev-local-cluster-ebs-csi-role", like("sts.amazonaws.*"))) == []
    only(
        found(trust("dev-local-cluster-ebs-csi-role", like("sts.amazon.*"))),
        service_accounts.RULE,
        "dev-local-cluster-addon-aws-ebs-csi-driver",
    )
    only(found(trust("dev-local-batch-role", like("sts.amazon.*"))), service_accounts.RULE, "dev-local-batch-sa")


def test_string_like_wildcards_that_admit_the_service_account_are_not_flagged() -> None:
    def namespace_wide(condition: dict[str, Any]) -> None:
        key = sub_key(condition)
        del condition["StringEquals"][key]
        condition["StringLike"] = {key: ["system:serviceaccount:llm-gateway:*"]}

    def any_namespace(condition: dict[str, Any]) -> None:
        key = sub_key(condition)
        del condition["StringEquals"][key]
        condition["StringLike"] = {key: "system:serviceaccount:*:finops-consume?"}

    changes = [
        trust("dev-local-ai-gateway-role", namespace_wide),
        trust("dev-local-finops-consumer-role", any_namespace),
    ]
    assert found(*changes) == []


# iam-resource-type ---------------------------------------------------------------------------------------------
def policy(name: str, change: Callable[[list[dict[str, Any]]], None]) -> Change:
    def apply(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["policy"])
        change(document["Statement"])
        inputs["policy"] = json.dumps(document)

    return edit("aws:iam/rolePolicy:RolePolicy", name, apply)


def statement(statements: list[dict[str, Any]], action: str) -> dict[str, Any]:
    return next(s for s in statements if action in s["Action"])


def test_get_object_on_the_bucket_arn_is_found() -> None:
    def on_bucket(statements: list[dict[str, Any]]) -> None:
        grant = statement(statements, "s3:GetObject")
        grant["Resource"] = [r.split("/", 1)[0] for r in grant["Resource"]]

    finding = only(
        found(policy("dev-local-pool-small-weights-role-policy", on_bucket)),
        iam_s3.RULE,
        "dev-local-pool-small-weights-role-policy",
    )
    assert "s3:GetObject acts on S3 objects" in finding.message and "BUCKET/*" in finding.fix


def test_list_bucket_on_object_arns_is_found() -> None:
    def on_objects(statements: list[dict[str, Any]]) -> None:
        grant = statement(statements, "s3:ListBucket")
        grant["Resource"] = [f"{r}/*" for r in grant["Resource"]]

    finding = only(
        found(policy("dev-local-publish-role-policy", on_objects)), iam_s3.RULE, "dev-local-publish-role-policy"
    )
    assert "s3:ListBucket acts on S3 buckets" in finding.message


def test_put_object_and_abort_multipart_upload_on_the_bucket_arn_are_found() -> None:
    def on_bucket(statements: list[dict[str, Any]]) -> None:
        grant = statement(statements, "s3:PutObject")
        grant["Action"] = ["s3:PutObject", "s3:AbortMultipartUpload"]
        grant["Resource"] = [r.split("/", 1)[0] for r in grant["Resource"]]

    findings = found(policy("dev-local-publish-role-policy", on_bucket))
    assert sorted(f.message.split(" allows ")[1].split(" ")[0] for f in findings) == [
        "s3:AbortMultipartUpload",
        "s3:PutObject",
    ], findings


def test_matching_types_wildcards_and_other_services_are_not_flagged() -> None:
    def correct(statements: list[dict[str, Any]]) -> None:
        bucket = statement(statements, "s3:ListBucket")["Resource"][0]
        statements[:] = [
            {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": bucket},
            {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": f"{bucket}/*"},
            {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"},
            {"Effect": "Allow", "Action": ["s3:Get*"], "Resource": bucket},  # a wildcard action spans both types
            {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": f"{bucket}*"},  # may run on into a key
            {"Effect": "Deny", "Action": ["s3:GetObject"], "Resource": bucket},
            {"Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": bucket},
        ]

    assert found(policy("dev-local-pool-medium-weights-role-policy", correct)) == []


# store-port-open -----------------------------------------------------------------------------------------------
def ingress_port(group: str, port: int, protocol: str = "tcp") -> Change:
    def apply(inputs: dict[str, Any]) -> None:
        inputs["ingress"][0].update(fromPort=port, toPort=port, protocol=protocol)

    return edit("aws:ec2/securityGroup:SecurityGroup", group, apply)


def test_a_redis_group_that_opens_another_port_is_found() -> None:
    finding = only(found(ingress_port("dev-local-redis-sg", 6380)), store_ports.RULE, "dev-local-redis-rg")
    assert "listens on TCP 6379" in finding.message and "tcp 6380-6380" in finding.message


def test_an_msk_group_open_on_plaintext_while_the_cluster_speaks_iam_is_found() -> None:
    finding = only(found(ingress_port("dev-local-kafka-sg", 9092)), store_ports.RULE, "dev-local-kafka-msk")
    assert "TCP 9098" in finding.message


def database(port: int | None, engine: str = "postgres") -> RenderedResource:
    """An RDS instance in the dev VPC behind the Redis group (6379 from the VPC)."""
    template = next(r for r in rendered("dev").resources if r.name == "dev-local-redis-rg")
    inputs: dict[str, Any] = {"engine": engine, "vpcSecurityGroupIds": template.inputs["securityGroupIds"]}
    if port is not None:
        inputs["port"] = port
    return RenderedResource(
        urn=template.urn.replace("dev-local-redis-rg", "dev-local-ledger-db"),
        type="aws:rds/instance:Instance",
        name="dev-local-ledger-db",
        parent=template.parent,
        provider=template.provider,
        region=template.region,
        inputs=inputs,
        custom=True,
    )


@pytest.mark.parametrize(("port", "engine", "listens"), [(5432, "postgres", 5432), (None, "mysql", 3306)])
def test_a_database_whose_group_does_not_open_its_port_is_found(port: int | None, engine: str, listens: int) -> None:
    """No pod reads this database: the finding needs no consumer (the held-out p11's shape)."""
    finding = only(found(extra=[database(port, engine)]), store_ports.RULE, "dev-local-ledger-db")
    assert f"listens on TCP {listens}" in finding.message and "tcp 6379-6379" in finding.message


def test_a_database_on_the_port_its_group_opens_or_behind_an_all_traffic_rule_is_not_flagged() -> None:
    assert found(extra=[database(6379)]) == []
    assert found(ingress_port("dev-local-redis-sg", 0, protocol="-1"), extra=[database(5432)]) == []


# One root cause, one finding: a Service something calls is not reported again by flow-allowed -------------------
def every_finding(*changes: Change) -> list[Finding]:
    result: RenderResult = rendered("dev")
    for change in changes:
        result = mutated(result, change)
    return deploy.run(spec("dev"), result)


def test_a_called_service_that_selects_nothing_is_one_finding() -> None:
    def typo(inputs: dict[str, Any]) -> None:  # the AI gateway calls it (MODEL_GATEWAY_URL)
        inputs["spec"]["selector"] = {"app.kubernetes.io/name": "model-gatway"}

    only(every_finding(edit("Service", "model-gateway", typo)), endpoints.SELECTS, "dev-local-model-gateway-service")


def test_a_called_service_with_a_wrong_target_port_is_one_finding() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ports"][0]["targetPort"] = "htp"

    def wrong_number(inputs: dict[str, Any]) -> None:  # the pool's NetworkPolicy admits only the real port
        inputs["spec"]["ports"][0]["targetPort"] = 8001

    for change in (edit("Service", "model-gateway", typo), edit("Service", "vllm-embed", wrong_number)):
        found_now = every_finding(change)
        assert [f.rule for f in found_now] == [endpoints.TARGET_PORT], "\n".join(map(str, found_now))
