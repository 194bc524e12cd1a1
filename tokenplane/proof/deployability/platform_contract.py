"""The platform's own contract: what its processes and controllers need from the graph in order to work.

Each item converges (``pulumi up`` succeeds) and is still broken, so nothing else reports it:

- Kafka: a topic with fewer replicas than ``min.insync.replicas`` (its own config, else the broker
  configuration's) refuses every ``acks=all`` produce, and the gateways produce usage and audit with acks=all;
- metrics API: a HorizontalPodAutoscaler never acts on a metric whose API no server in its cluster serves:
  Resource metrics (CPU, memory) need metrics-server (an EKS add-on or a Helm release), Pods and Object metrics
  custom.metrics.k8s.io, External ones external.metrics.k8s.io (an adapter such as prometheus-adapter; KEDA's
  answers only for its own HPAs);
- Cluster Autoscaler: on AWS it knows a GPU node only by ``k8s.amazonaws.com/accelerator``; a GPU node group
  without it is scaled up again while each new node's device plugin starts, and is never scaled down right;
- DCGM: its series name the pod using the GPU; a pod scrape job without ``honor_labels`` overwrites that;
- IAM: every ``Resource`` of a policy statement the graph carries is ``*`` or an ARN of six fields; anything
  else (``""``, a bare name) is refused by IAM or matches nothing;
- Kafka topics: the processes that read a runtime document (the gateways, the FinOps consumer) produce to and
  consume its queues' topics (usage, audit, batch); an MSK cluster whose configuration sets
  ``auto.create.topics.enable=false`` (tokenplane's, and MSK's default configuration) answers
  UNKNOWN_TOPIC_OR_PARTITION for a topic nobody created, so every topic the document names must be a Topic
  resource on a cluster in the graph;
- tenants: the AI gateway answers ``/readyz`` with 503 while it knows no API key (serving/gateway/app.py), and
  its readiness probe is ``/readyz``, so a gateway whose runtime document names no tenant never becomes Ready
  and ``pulumi up`` waits on its Deployment until the await times out;
- mounted keys: a ``k8s://namespace/name/key`` tenant or provider key is read from the file
  ``SECRETS_DIR/namespace/name/key`` (``tokenplane.serving.secrets``), so the gateway's pod must mount Secret
  ``name`` there, and a pod mounts Secrets of its own namespace only. Unmounted, a tenant has no key (the AI gateway
  never becomes Ready) and a provider is never available (the model gateway starts without it);
- granted keys: an ``aws-sm://`` key (a secret's name, or its ARN) is read with the pod's role, so that role must
  allow ``secretsmanager:GetSecretValue`` on the secret's ARN; a role that allows it on another ARN (one built
  from a reference that was already an ARN, say) leaves the key unread, with the same effect;
- stored keys: an ``aws-sm://`` key is the secret's whole ``SecretString`` (``serving.secrets._read_aws`` returns it
  as it is; the AI gateway splits it on commas into the tenant's keys, ``serving.gateway.auth``; the model gateway
  sends it as the provider's key, ``serving.modelgw.config``), so a ``SecretVersion`` of the program that stores a
  JSON object there (Secrets Manager's key/value form, e.g. ``{"api_key": "..."}``) gives the tenant no key a client
  can send (every request is answered 401 while the gateway is Ready) and the provider a key it refuses. Judged
  only where every version of the secret the program writes is a JSON object known at render time
  (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html: SecretString is the
  text stored);
- binary keys: ``serving.secrets._read_aws`` uses only the ``SecretString`` of GetSecretValue's answer, and a version
  stored with ``SecretBinary`` has none (GetSecretValue returns the one field the version was written with:
  https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html), so a secret whose every
  ``SecretVersion`` in the program sets ``secretBinary`` resolves to no key: the tenant can never sign in (the AI
  gateway logs ``tenant ... has no API key``, serving.gateway.auth; with no other tenant's key /readyz answers 503),
  the provider is unavailable. A version written outside the program (console, CLI) is not seen.

It cannot see: policies whose JSON is unknown until apply (they are skipped, not passed), add-ons
installed outside the program, and a runtime document that is unknown until apply (skipped, not passed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokenplane.catalog import instance_type
from tokenplane.contract import SECRETS_DIR, k8s_secret_parts
from tokenplane.errors import CatalogError
from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject, lookup
from tokenplane.proof.deployability.iam_policy import allows_on, known_documents, pod_roles
from tokenplane.proof.deployability.references import PROVIDER_KEY_RESOLVER, TENANT_KEY_RESOLVER
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource
from tokenplane.spec import DEFAULT_TOPICS

RULE = "platform-contract"
TOPIC = "aws:msk/topic:Topic"
MSK_CONFIGURATION = "aws:msk/configuration:Configuration"
ADDON = "aws:eks/addon:Addon"
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
POLICY_TYPES = ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy")
MSK_JMX_PORT, MSK_NODE_PORT = 11001, 11002  # MSK open monitoring's exporters
ARN_FIELDS = 6  # arn:partition:service:region:account:resource
MSK_CLUSTER = "aws:msk/cluster:Cluster"
RUNTIME_DOCUMENT = "platform.json"
# The serving processes that resolve keys, by `python -m` module: what they read and what a key they cannot read does.
SECRET = "aws:secretsmanager/secret:Secret"
SECRET_VERSION = "aws:secretsmanager/secretVersion:SecretVersion"
# What each reader does with a secret that holds a JSON object instead of the key itself.
_JSON_EFFECTS = {
    TENANT_KEY_RESOLVER: (
        "the AI gateway takes the whole SecretString as the tenant's keys (split on commas: serving.gateway.auth), "
        "so the key inside the JSON is never accepted and every request with it is answered 401, though the "
        "gateway is Ready"
    ),
    PROVIDER_KEY_RESOLVER: (
        "the model gateway sends the whole SecretString as the provider's API key (serving.modelgw.config), which "
        "the provider refuses on every call"
    ),
}
# What each reader does with a secret that holds no SecretString (a SecretBinary version).
_BINARY_EFFECTS = {
    TENANT_KEY_RESOLVER: (
        "the tenant has no key (serving.gateway.auth logs 'tenant ... has no API key') and can never sign in: every "
        "request with its key is answered 401, and /readyz answers 503 while no tenant has a key"
    ),
    PROVIDER_KEY_RESOLVER: "the provider has no key and is marked unavailable for as long as the pod runs",
}
_READERS = {
    TENANT_KEY_RESOLVER: ("tenants", "the tenant has no key, /readyz answers 503 and the pods never become Ready"),
    PROVIDER_KEY_RESOLVER: ("providers", "the provider is marked unavailable for as long as the pod runs"),
}  # the key of the serving ConfigMap the gateways read (components.gateway)


def check(graph: Graph) -> Iterator[Finding]:
    yield from _kafka(graph)
    yield from _metrics_api(graph)
    yield from _accelerator_label(graph)
    yield from _iam_resources(graph)
    yield from _dcgm_labels(graph)
    yield from _msk_monitoring(graph)
    yield from _mounted_keys(graph)
    yield from _granted_keys(graph)
    yield from _stored_keys(graph)
    yield from _gateway_tenants(graph)
    yield from _topics_exist(graph)


def _properties(text: object) -> dict[str, str]:
    out = {}
    for line in str(text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _kafka(graph: Graph) -> Iterator[Finding]:
    for topic in graph.of_type(TOPIC):
        brokers = [
            _properties(c.inputs.get("serverProperties")) for c in graph.of_type(MSK_CONFIGURATION, topic.region)
        ]
        configs = _json(topic.inputs.get("configs")) or {}
        wanted = configs.get("min.insync.replicas") or next(
            (b["min.insync.replicas"] for b in brokers if "min.insync.replicas" in b), "1"
        )
        replicas = int(float(topic.inputs.get("replicationFactor") or 1))
        if replicas < int(wanted):
            yield Finding(
                RULE,
                topic.urn,
                f"topic {topic.inputs.get('name')} has {replicas} replica(s) but min.insync.replicas={wanted}: "
                "every acks=all produce (the gateways' usage and audit events) fails with NotEnoughReplicas",
                f"set the topic's min.insync.replicas to at most {replicas} (its configs), or raise its replication "
                "factor (queues.topics[].replication_factor)",
            )


# Which metrics API each HPA metric type is read from (kubernetes pkg/controller/podautoscaler/metrics/client.go:
# resourceMetricsClient -> metrics.k8s.io, customMetricsClient -> custom.metrics.k8s.io for Pods and Object,
# externalMetricsClient -> external.metrics.k8s.io; https://kubernetes.io/docs/tasks/run-application/
# horizontal-pod-autoscale/#support-for-metrics-apis), and the condition reason the controller sets without it.
RESOURCE_METRICS, CUSTOM_METRICS, EXTERNAL_METRICS = (
    "metrics.k8s.io",
    "custom.metrics.k8s.io",
    "external.metrics.k8s.io",
)
METRIC_APIS = {
    "Resource": (RESOURCE_METRICS, "FailedGetResourceMetric"),
    "ContainerResource": (RESOURCE_METRICS, "FailedGetContainerResourceMetric"),
    "Pods": (CUSTOM_METRICS, "FailedGetPodsMetric"),
    "Object": (CUSTOM_METRICS, "FailedGetObjectMetric"),
    "External": (EXTERNAL_METRICS, "FailedGetExternalMetric"),
}


def _served_metric_apis(graph: Graph, region: str) -> set[str]:
    """The metrics API groups some installed server answers for an HPA of one's own.

    metrics-server serves metrics.k8s.io; prometheus-adapter's chart registers custom.metrics.k8s.io, and
    external.metrics.k8s.io only with ``rules.external`` (charts/prometheus-adapter templates); an APIService object
    registers its group. KEDA's chart registers external.metrics.k8s.io, but its metrics server answers only for the
    HPAs its own ScaledObjects create (keda-hpa-*; https://keda.sh/docs/latest/operate/metrics-server/), so it serves
    no HPA a program declares.
    """
    served = set()
    if any(a.inputs.get("addonName") == "metrics-server" for a in graph.of_type(ADDON, region)) or graph.releases(
        region, "metrics-server"
    ):
        served.add(RESOURCE_METRICS)
    for adapter in graph.releases(region, "prometheus-adapter"):
        served.add(CUSTOM_METRICS)
        if lookup(adapter.inputs.get("values") or {}, "rules.external"):
            served.add(EXTERNAL_METRICS)
    for service in graph.kube(region, "APIService"):
        if group := lookup(service.manifest, "spec.group"):
            served.add(str(group))
    return served


def _metrics_api(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        served = _served_metric_apis(graph, region)
        for hpa in graph.kube(region, "HorizontalPodAutoscaler"):
            types = sorted({str(m.get("type")) for m in lookup(hpa.manifest, "spec.metrics") or []} & set(METRIC_APIS))
            for api in sorted({METRIC_APIS[t][0] for t in types} - served):
                reasons = ", ".join(METRIC_APIS[t][1] for t in types if METRIC_APIS[t][0] == api)
                if api == RESOURCE_METRICS:
                    what, fix = (
                        "CPU or memory, which only metrics-server serves (metrics.k8s.io)",
                        "install metrics-server (the EKS add-on, components.cluster.ADDONS, or its Helm chart)",
                    )
                else:
                    what = (
                        f"a {'/'.join(t for t in types if METRIC_APIS[t][0] == api)} metric, read from {api}, "
                        "which no adapter in the cluster serves (KEDA's metrics server answers only for its own "
                        "ScaledObjects' HPAs)"
                    )
                    fix = (
                        "scale it with a KEDA ScaledObject (a prometheus trigger on the same query), or install an "
                        f"adapter that serves {api} (prometheus-adapter with a rule for the metric)"
                    )
                yield Finding(
                    RULE,
                    hpa.urn,
                    f"HorizontalPodAutoscaler {hpa.namespace}/{hpa.name} scales on {what}: the API server accepts "
                    f"it, and the HPA controller sets ScalingActive=False ({reasons}: the server could not find "
                    "the requested resource) and never scales",
                    fix,
                )


def _accelerator_label(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        if not graph.releases(region, "cluster-autoscaler"):
            continue
        for group in graph.of_type(NODE_GROUP, region):
            types = group.inputs.get("instanceTypes") or []
            try:
                gpus = instance_type(str(types[0])).gpus if types else 0
            except CatalogError:
                continue  # not a GPU type the catalog knows: a CPU group
            if gpus and ACCELERATOR_LABEL not in (group.inputs.get("labels") or {}):
                yield Finding(
                    RULE,
                    group.urn,
                    f"GPU node group {group.name} ({types[0]}) has no {ACCELERATOR_LABEL} label: Cluster "
                    "Autoscaler takes its new nodes for nodes without GPUs until the device plugin starts, scales "
                    "up again for the same pending pods, and misjudges scale-down",
                    f"label the node group {ACCELERATOR_LABEL}=<gpu model> (components.gpu_node_group)",
                )


def _iam_resources(graph: Graph) -> Iterator[Finding]:
    for policy in (r for r in graph.resources if r.type in POLICY_TYPES):
        document = _json(policy.inputs.get("policy"))
        if document is None:
            continue
        for statement in _list(document.get("Statement")):
            for resource in _list(statement.get("Resource")):
                text = str(resource)
                if text == "*" or (text.startswith("arn:") and len(text.split(":", 5)) == ARN_FIELDS):
                    continue
                yield Finding(
                    RULE,
                    policy.urn,
                    f"policy statement {statement.get('Sid') or statement.get('Action')} names Resource {text!r}, "
                    "which is not an ARN: IAM refuses the policy (MalformedPolicyDocument) or it grants nothing",
                    "give the full ARN (arn:<partition>:<service>:<region>:<account>:<resource>), or * where the "
                    "action takes no resource",
                )


def _dcgm_labels(graph: Graph) -> Iterator[Finding]:
    """DCGM's series carry the pod using the GPU: a pod-annotation scrape job must keep them (honor_labels)."""
    for region in graph.regions():
        dcgm = graph.releases(region, "dcgm-exporter")
        if not dcgm or lookup(dcgm[0].inputs.get("values") or {}, "serviceMonitor.enabled") is not False:
            continue  # its own ServiceMonitor sets honorLabels
        for release in graph.releases(region, "kube-prometheus-stack"):
            jobs = lookup(release.inputs.get("values") or {}, "prometheus.prometheusSpec.additionalScrapeConfigs")
            for job in _list(jobs):
                roles = {c.get("role") for c in _list(job.get("kubernetes_sd_configs"))}
                if "pod" in roles and not job.get("honor_labels"):
                    yield Finding(
                        RULE,
                        release.urn,
                        f"scrape job {job.get('job_name')} scrapes the DCGM exporter's pods without honor_labels: "
                        "their target labels overwrite the pod and namespace DCGM reports (the GPU's user), so "
                        "every per-pod GPU query and trigger reads nothing",
                        "set honor_labels: true on the job (components.observability.POD_SCRAPE)",
                    )


def _msk_monitoring(graph: Graph) -> Iterator[Finding]:
    """MSK's open-monitoring exporters listen on 11001/11002: enabled, the brokers' firewall must let them in."""
    groups = {g.urn: g for g in graph.of_type("aws:ec2/securityGroup:SecurityGroup")}
    for cluster in graph.of_type("aws:msk/cluster:Cluster"):
        exporters = lookup(cluster.inputs, "openMonitoring.prometheus") or {}
        enabled = [
            port
            for key, port in (("jmxExporter", MSK_JMX_PORT), ("nodeExporter", MSK_NODE_PORT))
            if lookup(exporters, f"{key}.enabledInBroker")
        ]
        firewall = [groups[u] for u in cluster.property_dependencies.get("brokerNodeGroupInfo", []) if u in groups]
        opened = {
            p
            for g in firewall
            for rule in _list(g.inputs.get("ingress"))
            for p in enabled
            if int(float(rule.get("fromPort", 0))) <= p <= int(float(rule.get("toPort", 0)))
        }
        for port in sorted(set(enabled) - opened):
            yield Finding(
                RULE,
                cluster.urn,
                f"MSK open monitoring exports on port {port}, which the brokers' security group does not open: "
                "nothing can scrape it",
                f"open {port} to the VPC in the brokers' security group and add a scrape job, or turn the exporter off",
            )


def _gateway_tenants(graph: Graph) -> Iterator[Finding]:
    """An AI gateway becomes Ready only with an API key: its runtime document must name a tenant."""
    for region in graph.regions():
        for workload, config_map, document in _runtime_documents(graph, region):
            runs_gateway = any(_runs_gateway(c) for c in workload.pod_spec().get("containers") or [])
            if runs_gateway and not document.get("tenants"):
                yield _no_tenant(workload, config_map)


def _runtime_documents(graph: Graph, region: str) -> Iterator[tuple[KubeObject, str, dict[str, Any]]]:
    """(workload, ConfigMap name, runtime document) for each runtime document a workload mounts; a document
    unknown until apply is skipped."""
    maps = {(m.namespace, m.name): m for m in graph.kube(region, "ConfigMap")}
    for workload in graph.workloads(region):
        for volume in workload.pod_spec().get("volumes") or []:
            name = lookup(volume, "configMap.name")
            source = maps.get((workload.namespace, str(name))) if name else None
            document = _json((source.manifest.get("data") or {}).get(RUNTIME_DOCUMENT)) if source else None
            if document is not None:
                yield workload, str(name), document


def _auto_creates(graph: Graph, region: str) -> bool:
    """Whether the region's MSK clusters create a topic on first use: only where a configuration says so
    (``auto.create.topics.enable=true``); MSK's default configuration sets it false
    (https://docs.aws.amazon.com/msk/latest/developerguide/msk-default-configuration.html)."""
    brokers = [_properties(c.inputs.get("serverProperties")) for c in graph.of_type(MSK_CONFIGURATION, region)]
    return any(b.get("auto.create.topics.enable", "false").lower() == "true" for b in brokers)


def _topics_exist(graph: Graph) -> Iterator[Finding]:
    """Every topic a runtime document names exists, where the region's MSK cluster does not auto-create them."""
    for region in graph.regions():
        if not graph.of_type(MSK_CLUSTER, region) or _auto_creates(graph, region):
            continue  # brokers outside the graph (their topics are not in it either), or topics made on first use
        created = {str(t.inputs.get("name")) for t in graph.of_type(TOPIC, region)}
        for workload, config_map, document in _runtime_documents(graph, region):
            listed = {str(t.get("purpose")): str(t.get("name")) for t in lookup(document, "queues.topics") or []}
            wanted = {**{str(p): n for p, n in DEFAULT_TOPICS.items()}, **listed}  # the spec fills in defaults
            missing = sorted({n for n in wanted.values() if n not in created})
            if missing:
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name} reads runtime document {config_map}, "
                    f"whose queues name topic(s) {', '.join(missing)} that no Topic in {region} creates, and the "
                    "MSK cluster's auto.create.topics.enable is false: every produce and fetch on them fails with "
                    "UNKNOWN_TOPIC_OR_PARTITION, so usage and audit events never reach Kafka (they pile up in "
                    "the gateway's spool) and batch jobs have no queue",
                    "create the topics with the cluster (KafkaArgs(topics=spec.queues.topics), as the stack does), "
                    "or name only topics that exist in the runtime document's queues",
                )


def _mounted_keys(graph: Graph) -> Iterator[Finding]:
    """Every ``k8s://`` key a gateway resolves is a file of a Secret its pod mounts, from the pod's own namespace."""
    for region in graph.regions():
        for workload, _, document in _runtime_documents(graph, region):
            pod = workload.pod_spec()
            for container in pod.get("containers") or []:
                if (resolver := _resolver(container)) is None:
                    continue
                field, effect = _READERS[resolver]
                for entry in _list(document.get(field)):
                    ref = str(entry.get("api_key_secret") or "") if isinstance(entry, dict) else ""
                    parts = k8s_secret_parts(ref)
                    if parts is not None and not _mounts(pod, container, workload.namespace, *parts):
                        yield _unmounted(workload, container, ref, parts, effect)


def _granted_keys(graph: Graph) -> Iterator[Finding]:
    """Every ``aws-sm://`` key a gateway resolves is one its pod's role may read."""
    for region in graph.regions():
        cloud = cloud_region_of(graph, region)
        for workload, _, document in _runtime_documents(graph, region):
            readers = [c for c in workload.pod_spec().get("containers") or [] if _resolver(c) is not None]
            if not readers:
                continue
            account = str(workload.pod_spec().get("serviceAccountName") or "default")
            roles = pod_roles(graph, workload, account)
            for role in roles:
                if (documents := known_documents(graph, role)) is None:
                    continue
                for container in readers:
                    field, effect = _READERS[str(_resolver(container))]
                    for entry in _list(document.get(field)):
                        ref = str(entry.get("api_key_secret") or "") if isinstance(entry, dict) else ""
                        if not ref.startswith("aws-sm://"):
                            continue
                        arn = _secret_arn(ref.removeprefix("aws-sm://"), cloud)
                        if not allows_on(documents, "secretsmanager:GetSecretValue", (arn,)):
                            yield Finding(
                                RULE,
                                workload.urn,
                                f"{workload.kind} {workload.namespace}/{workload.name} resolves {ref} with role "
                                f"{role.name} (ServiceAccount {account}), which allows secretsmanager:GetSecretValue "
                                f"nowhere on {arn}: the read is denied, and {effect}",
                                f"allow secretsmanager:GetSecretValue on {arn} in role {role.name}'s policy "
                                "(tokenplane's gateways build it from the reference: components.gateway.secret_arns)",
                            )


def _stored_keys(graph: Graph) -> Iterator[Finding]:
    """Every ``aws-sm://`` key a gateway resolves whose secret the program writes holds the key, not a JSON object."""
    seen: set[tuple[str, str]] = set()
    for region in graph.regions():
        for workload, _, document in _runtime_documents(graph, region):
            for container in workload.pod_spec().get("containers") or []:
                resolver = _resolver(container)
                if resolver is None:
                    continue
                field, _ = _READERS[resolver]
                for entry in _list(document.get(field)):
                    ref = str(entry.get("api_key_secret") or "") if isinstance(entry, dict) else ""
                    if not ref.startswith("aws-sm://") or (workload.urn, ref) in seen:
                        continue
                    seen.add((workload.urn, ref))
                    binary = _binary_secret(graph, ref.removeprefix("aws-sm://"))
                    if binary is not None:
                        yield Finding(
                            RULE,
                            workload.urn,
                            f"{workload.kind} {workload.namespace}/{workload.name} resolves {ref}, and the program "
                            f"stores secret {binary.name}'s value as secretBinary only: the gateway reads the "
                            "SecretString of GetSecretValue's answer (serving.secrets._read_aws), which a SecretBinary "
                            f"version has not, so {_BINARY_EFFECTS[resolver]}",
                            f"store the key as text: set secretString (not secretBinary) on {binary.name}'s "
                            "SecretVersion (several keys: comma-separated)",
                        )
                        continue
                    found = _json_secret(graph, ref.removeprefix("aws-sm://"))
                    if found is None:
                        continue
                    secret, fields = found
                    yield Finding(
                        RULE,
                        workload.urn,
                        f"{workload.kind} {workload.namespace}/{workload.name} resolves {ref}, and the program "
                        f"stores secret {secret.name}'s value as a JSON object (keys {', '.join(fields)}): an "
                        f"aws-sm:// reference reads the whole SecretString (serving.secrets): {_JSON_EFFECTS[resolver]}",
                        f"store the key itself as {secret.name}'s secretString (several keys: comma-separated), not "
                        "a JSON object",
                    )


def _versions(graph: Graph, secret: RenderedResource) -> list[RenderedResource]:
    """The program's SecretVersions of ``secret``."""
    return [
        v for v in graph.of_type(SECRET_VERSION) if any(s.urn == secret.urn for s in graph.referenced(v, "secretId"))
    ]


def _binary_secret(graph: Graph, path: str) -> RenderedResource | None:
    """The program's secret ``path`` names (by name or ARN) when every version the program writes of it stores
    ``secretBinary`` and no ``secretString`` (a value unknown at render time still shows which field it sets)."""
    secret = graph.by_physical_id.get(path) or graph.by_identifying_output.get(path)
    if secret is None or secret.type != SECRET:
        return None
    versions = _versions(graph, secret)

    def sets(version: RenderedResource, key: str) -> bool:
        return version.secret_inputs.get(key, version.inputs.get(key)) is not None

    binary = [
        v for v in versions if sets(v, "secretBinary") and not (sets(v, "secretString") or sets(v, "secretStringWo"))
    ]
    return secret if versions and len(binary) == len(versions) else None


def _json_secret(graph: Graph, path: str) -> tuple[RenderedResource, list[str]] | None:
    """The program's secret ``path`` names (by name or ARN) and its JSON object's keys, when every version the
    program writes of it is a JSON object known at render time."""
    secret = graph.by_physical_id.get(path) or graph.by_identifying_output.get(path)
    if secret is None or secret.type != SECRET:
        return None
    values = [
        v.secret_inputs.get("secretString", v.inputs.get("secretString"))
        for v in graph.of_type(SECRET_VERSION)
        if any(s.urn == secret.urn for s in graph.referenced(v, "secretId"))
    ]
    objects = [_json(v) if isinstance(v, str) and v.lstrip().startswith("{") else None for v in values]
    if not objects or any(o is None for o in objects):
        return None  # no version, a plain or unknown value, or some version stores the key itself
    return secret, sorted({str(k) for o in objects if o is not None for k in o})


def _secret_arn(path: str, cloud_region: str) -> str:
    """The ARN a secret named by ``path`` has: its ARN when the reference is one (with a made-up suffix when it has
    none), else the region's secret of that name with the six characters Secrets Manager appends."""
    if path.startswith("arn:"):
        return path if len(path.split(":")) > 6 else f"{path}-AbCdEf"
    return f"arn:aws:secretsmanager:{cloud_region}:{ACCOUNT_ID}:secret:{path}-AbCdEf"


def _resolver(container: dict[str, Any]) -> str | None:
    command = [str(c) for c in container.get("command") or []]
    if len(command) == 3 and command[:2] == ["python", "-m"] and command[2] in _READERS:
        return command[2]
    return None


def _mounts(pod: dict[str, Any], container: dict[str, Any], namespace: str, ns: str, name: str, key: str) -> bool:
    """Whether ``container`` sees Secret ``name``'s ``key`` at ``SECRETS_DIR/ns/name/key``."""
    if ns != namespace:
        return False
    volumes = {str(v.get("name")): v.get("secret") for v in pod.get("volumes") or [] if v.get("secret")}
    for mount in container.get("volumeMounts") or []:
        source = volumes.get(str(mount.get("name")))
        if not source or source.get("secretName") != name:
            continue
        path = str(mount.get("mountPath") or "").rstrip("/")
        items = {str(i.get("key")): str(i.get("path")) for i in source.get("items") or []}
        file = items.get(key, key) if items else key  # with items, only the keys listed are files
        if mount.get("subPath"):
            if path == f"{SECRETS_DIR}/{ns}/{name}/{key}" and str(mount["subPath"]) == file:
                return True
        elif path == f"{SECRETS_DIR}/{ns}/{name}" and file == key and (not items or key in items):
            return True
    return False


def _unmounted(
    workload: KubeObject, container: dict[str, Any], ref: str, parts: tuple[str, str, str], effect: str
) -> Finding:
    ns, name, key = parts
    where = f"{workload.kind} {workload.namespace}/{workload.name}"
    if ns != workload.namespace:
        why = f"a pod mounts Secrets of its own namespace only, and {where} runs in {workload.namespace}"
        fix = f"keep the Secret in {workload.namespace} and reference it as k8s://{workload.namespace}/{name}/{key}"
    else:
        why = f"container {container.get('name')} mounts no Secret {name} at {SECRETS_DIR}/{ns}/{name}"
        fix = (
            f"mount Secret {name} (key {key}) at {SECRETS_DIR}/{ns}/{name}, as tokenplane's gateway components do "
            "(components.gateway.mounted_secrets)"
        )
    return Finding(
        RULE,
        workload.urn,
        f"{where} resolves {ref} from the file {SECRETS_DIR}/{ns}/{name}/{key}, but {why}: {effect}",
        fix,
    )


def _runs_gateway(container: dict[str, Any]) -> bool:
    return [str(c) for c in container.get("command") or []] == ["python", "-m", TENANT_KEY_RESOLVER]


def _no_tenant(workload: KubeObject, config_map: str) -> Finding:
    return Finding(
        RULE,
        workload.urn,
        f"{workload.kind} {workload.namespace}/{workload.name} runs the AI gateway, whose runtime document "
        f"(ConfigMap {config_map}, {RUNTIME_DOCUMENT}) names no tenant: with no API key /readyz answers 503, "
        "its pods never become Ready, and pulumi up waits on the Deployment until its await times out",
        "add at least one tenant (GatewayConfig(tenants=[Tenant(..., api_key_secret='aws-sm://...')]) or the "
        "spec's tenants:), with its key in Secrets Manager or in the stack's env secrets",
    )


def _json(value: object) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    try:
        data = json.loads(str(value)) if value else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _list(value: object) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]
