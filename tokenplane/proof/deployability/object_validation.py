"""Every object's metadata, pod templates and Services as the API server validates them at create time.

The OpenAPI schema the render checks says "a string", "an int-or-string"; the API server's validation functions
(kubernetes/kubernetes pkg/apis/core/validation/validation.go, pkg/apis/apps/validation, pkg/apis/batch/validation)
then hold those strings to the syntax rules in ``k8s_syntax`` and relate fields to each other. A rejected create
fails ``pulumi up``. What is read, with the function that rejects it:

- every object: its name per kind (ValidateObjectMeta with the kind's name function: NameIsDNSSubdomain for most
  kinds and custom resources, ValidateNamespaceName (DNS-1123 label) for Namespaces, ValidateServiceName (DNS-1035
  label) for Services, ValidateRBACName (a path segment) for RBAC kinds, validateCronJob's 52 characters for
  CronJobs), its namespace (ValidateNamespaceName), labels (ValidateLabels: IsQualifiedName keys, IsValidLabelValue
  values), annotations (ValidateAnnotations: IsQualifiedName keys, 256 KiB in all) and finalizers
  (ValidateFinalizers: each a qualified name, not both orphan and foregroundDeletion);
- every pod template: ``pod_validation``;
- every Service (ValidateService, validateServicePort): each port named when there are several, names DNS-1123
  labels and unique, (port, protocol) pairs unique, port numbers in range, a named targetPort a valid port name,
  no nodePort on a ClusterIP Service;
- every ValidatingAdmissionPolicyBinding (pkg/apis/admissionregistration/validation/validation.go,
  validateValidatingAdmissionPolicyBindingSpec, validateValidationActions): a policyName, at least one
  validationAction, none repeated, each Deny, Warn or Audit, and not both Deny and Warn; a paramRef with a name or
  a selector, not both; and every ValidatingAdmissionPolicy (validateValidatingAdmissionPolicySpec): a
  matchConstraints, at least one validation or auditAnnotation, each validation with an expression;
- every Helm release's name (helm pkg/chartutil/validate_name.go, ValidateReleaseName: a DNS-1123 subdomain of at
  most 53 characters) and namespace.

A StatefulSet is held to one more rule its pods impose: each pod is named ``<name>-<ordinal>`` and that name is the
pod's hostname (a DNS-1123 label), so a longer or dotted name makes the controller's pod creates fail.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject, lookup
from tokenplane.proof.render import RenderedResource

RULE = "api-validation"
ANNOTATIONS_MAX_BYTES = 256 * 1024  # TotalAnnotationSizeLimitB
RELEASE_NAME_MAX = 53  # helm's maxReleaseNameLen
CRONJOB_NAME_MAX = 52  # validateCronJob: the Job it makes appends an 11-character suffix
RBAC_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
REPLICATED = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"})
Validator = Callable[[str], list[str]]


def rejected(obj: KubeObject, what: str, source: str, fix: str) -> Finding:
    return Finding(
        RULE,
        obj.urn,
        f"{obj.kind} {obj.namespace}/{obj.name} {what}: the API server rejects it (kubernetes {source}) and "
        "pulumi up fails",
        fix,
    )


def unsupported(obj: KubeObject, field: str, value: object, allowed: Iterable[str], source: str, fix: str) -> Finding:
    """The API server's NotSupported error for an enum field, worded as field.NotSupported words it:
    ``Unsupported value: "v": supported values: "a", "b"``."""
    supported = ", ".join(f'"{v}"' for v in allowed)
    return rejected(
        obj, f"has {field} {value!r}", f'{source}: Unsupported value: "{value}": supported values: {supported}', fix
    )


def path_segment_errors(value: str) -> list[str]:
    """IsValidPathSegmentName (apimachinery api/validation/path): not '.' or '..', no '/' or '%'."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in "/%" if c in value]


def _name_rule(kind: str) -> tuple[Validator, str]:
    if kind == "Namespace":
        return syntax.is_dns1123_label, "ValidateNamespaceName"
    if kind == "Service":
        return syntax.is_dns1035_label, "ValidateServiceName"
    if kind in RBAC_KINDS:
        return path_segment_errors, "ValidateRBACName"
    return syntax.is_dns1123_subdomain, "NameIsDNSSubdomain"


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube_objects:
        yield from _metadata(obj)
        if obj.kind == "Service":
            yield from _service(obj)
        if obj.kind in ("ConfigMap", "Secret"):
            yield from _data(obj)
        if obj.kind == "ValidatingAdmissionPolicyBinding":
            yield from _admission_binding(obj)
        if obj.kind == "ValidatingAdmissionPolicy":
            yield from _admission_policy(obj)
    for release in graph.of_type(HELM_RELEASE):
        yield from _release(release)


def _release(release: RenderedResource) -> Iterator[Finding]:
    """Helm refuses a release name its charts could not build object names from (helm pkg/chartutil/
    validate_name.go, ValidateReleaseName: a DNS-1123 subdomain of at most 53 characters)."""
    name, namespace = release.inputs.get("name"), release.inputs.get("namespace")
    errors = []
    if isinstance(name, str):  # absent: Pulumi makes one from the resource name
        errors += [m for m in syntax.is_dns1123_subdomain(name) if str(syntax.SUBDOMAIN_MAX) not in m]
        errors += [f"must be no more than {RELEASE_NAME_MAX} characters"] if len(name) > RELEASE_NAME_MAX else []
    if errors:
        yield Finding(
            RULE,
            release.urn,
            f"Helm release name {name!r} {'; '.join(errors)}: helm install fails (ValidateReleaseName: invalid "
            "release name) and pulumi up fails",
            f"name the release with lowercase letters, digits, '-' and '.', at most {RELEASE_NAME_MAX} characters",
        )
    if isinstance(namespace, str) and (problems := syntax.is_dns1123_label(namespace)):
        yield Finding(
            RULE,
            release.urn,
            f"Helm release {name or release.name!r} installs into namespace {namespace!r}, which "
            f"{'; '.join(problems)}: the API server rejects every object of the release (ValidateNamespaceName) and "
            "pulumi up fails",
            "use an RFC 1123 label (lowercase letters, digits, '-') as the namespace",
        )


def problems(obj: KubeObject, field: str, value: str, validate: Validator, source: str, fix: str) -> Iterator[Finding]:
    if errors := validate(value):
        yield rejected(obj, f"has {field} {value!r}, which {'; '.join(errors)}", source, fix)


def _metadata(obj: KubeObject) -> Iterator[Finding]:
    meta = obj.manifest.get("metadata") or {}
    validate, source = _name_rule(obj.kind)
    if isinstance(meta.get("name"), str):  # an absent name is Pulumi's to make
        yield from problems(obj, "metadata.name", meta["name"], validate, source, "rename it to fit the rule")
        if obj.kind == "CronJob" and len(meta["name"]) > CRONJOB_NAME_MAX:
            yield rejected(
                obj,
                f"has a {len(meta['name'])}-character name",
                f"validateCronJob: must be no more than {CRONJOB_NAME_MAX} characters",
                f"shorten metadata.name to {CRONJOB_NAME_MAX} characters",
            )
        if obj.kind == "StatefulSet" and not validate(meta["name"]):  # else reported above, once
            replicas = lookup(obj.manifest, "spec.replicas")
            last = f"{meta['name']}-{max(replicas - 1, 0) if isinstance(replicas, int) else 0}"
            if errors := syntax.is_dns1123_label(last):
                yield Finding(
                    RULE,
                    obj.urn,
                    f"StatefulSet {obj.namespace}/{obj.name} names its pods like {last!r}, the pods' hostname, which "
                    f"{'; '.join(errors)}: the StatefulSet is created but every pod create is rejected "
                    "(ValidatePodSpec, spec.hostname) and pulumi up waits until it times out",
                    "rename the StatefulSet to a DNS-1123 label short enough for its ordinal suffix",
                )
    if "namespace" in meta and isinstance(meta["namespace"], str):
        fix = "use an RFC 1123 label (lowercase letters, digits, '-') as the namespace"
        yield from problems(
            obj, "metadata.namespace", meta["namespace"], syntax.is_dns1123_label, "ValidateNamespaceName", fix
        )
    yield from check_labels(obj, "metadata.labels", meta.get("labels"))
    yield from check_annotations(obj, "metadata.annotations", meta.get("annotations"))
    yield from _finalizers(obj, meta.get("finalizers"))


def _finalizers(obj: KubeObject, finalizers: Any) -> Iterator[Finding]:
    """ValidateFinalizers (apimachinery pkg/api/validation/objectmeta.go): each a qualified name
    (ValidateFinalizerName), and not both orphan and foregroundDeletion."""
    names = [f for f in finalizers if isinstance(f, str)] if isinstance(finalizers, list) else []
    fix = "a finalizer is a qualified name, domain-prefixed by its controller (example.com/cleanup)"
    for name in names:
        yield from problems(obj, "metadata.finalizers", name, syntax.is_qualified_name, "ValidateFinalizerName", fix)
    if "orphan" in names and "foregroundDeletion" in names:
        yield rejected(
            obj,
            "has both orphan and foregroundDeletion in metadata.finalizers",
            "ValidateFinalizers: metadata.finalizers: Invalid value: finalizer orphan and foregroundDeletion "
            "cannot be both set",
            "keep one: orphan leaves the dependents behind, foregroundDeletion deletes them first",
        )


def check_labels(obj: KubeObject, field: str, values: Any, *, source: str = "ValidateLabels") -> Iterator[Finding]:
    fix = "label keys: [prefix/]name (name at most 63 of [A-Za-z0-9-_.]); values: at most 63 of the same, or empty"
    for key, value in (values or {}).items() if isinstance(values, dict) else ():
        yield from problems(obj, f"{field} key", str(key), syntax.is_qualified_name, source, fix)
        yield from problems(obj, f"{field}[{key}]", str(value), syntax.is_valid_label_value, source, fix)


def check_annotations(obj: KubeObject, field: str, annotations: Any) -> Iterator[Finding]:
    if not isinstance(annotations, dict):
        return
    fix = "annotation keys are [prefix/]name like label keys"
    for key in annotations:
        yield from problems(obj, f"{field} key", str(key).lower(), syntax.is_qualified_name, "ValidateAnnotations", fix)
    size = sum(len(str(k).encode()) + len(_text(v).encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        yield rejected(
            obj,
            f"has {size} bytes of {field}",
            f"ValidateAnnotations: Too long: must have at most {ANNOTATIONS_MAX_BYTES} bytes",
            "move the large value into a ConfigMap the pod mounts",
        )


DATA_MAX_BYTES = (
    1024 * 1024
)  # ValidateConfigMap's MaxConfigMapSize (TotalAnnotationSizeLimitB's sibling); Secrets' MaxSecretSize
CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")  # IsConfigMapKey, for ConfigMap and Secret keys alike


def _data(obj: KubeObject) -> Iterator[Finding]:
    """A ConfigMap's or Secret's keys (IsConfigMapKey: at most 253 of ``[-._a-zA-Z0-9]``, not ``.`` or ``..``) and
    its size: at most 1 MiB of data in all (ValidateConfigMap, ValidateSecret), base64 fields counted decoded; a
    ConfigMap's key in data and binaryData both (ValidateConfigMap: "duplicate of key present in binaryData")."""
    fields = ("data", "binaryData") if obj.kind == "ConfigMap" else ("data", "stringData")
    size = 0
    for field in fields:
        values = obj.manifest.get(field)
        if not isinstance(values, dict):
            continue
        for raw, value in values.items():
            key = str(raw)
            if len(key) > 253 or not CONFIG_KEY.fullmatch(key) or key in (".", ".."):
                yield rejected(
                    obj,
                    f"has {field} key {key!r}, which a key may not be (at most 253 of a-z, A-Z, 0-9, '-', '_', '.')",
                    f"Validate{obj.kind}: IsConfigMapKey",
                    "rename the key: a file name without '/' (the key is the file's name where the object is mounted)",
                )
            text = _text(value)
            encoded = field == "binaryData" or (obj.kind == "Secret" and field == "data")
            size += len(key.encode()) + (len(text) * 3 // 4 if encoded else len(text.encode()))
    binary, data = obj.manifest.get("binaryData"), obj.manifest.get("data")
    if obj.kind == "ConfigMap" and isinstance(binary, dict) and isinstance(data, dict):
        for key in sorted(set(binary) & set(data)):
            yield rejected(
                obj,
                f"has key {key!r} in both data and binaryData",
                f"ValidateConfigMap: data[{key}]: Invalid value: duplicate of key present in binaryData",
                "keep each key in one of data (text) and binaryData (base64)",
            )
    if size > DATA_MAX_BYTES:
        yield rejected(
            obj,
            f"holds {size:,} bytes",
            f"Validate{obj.kind}: Too long: must have at most {DATA_MAX_BYTES} bytes",
            "keep large files out of the API: an image layer, an S3 object fetched by an init container, or a volume",
        )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _service(obj: KubeObject) -> Iterator[Finding]:
    spec = obj.manifest.get("spec") or {}
    ports = spec.get("ports") or []
    yield from check_labels(obj, "spec.selector", spec.get("selector"))
    fix = "name every port of a Service with several, each name an RFC 1123 label, once"
    if len(ports) > 1:
        for port in ports:
            if not port.get("name"):
                yield rejected(
                    obj,
                    f"has {len(ports)} ports and port {port.get('port')} has no name",
                    "validateServicePort: spec.ports.name: Required value",
                    fix,
                )
    names = Counter(str(p["name"]) for p in ports if p.get("name"))
    for name in names:
        yield from problems(obj, "spec.ports name", name, syntax.is_dns1123_label, "validateServicePort", fix)
    for name in sorted(n for n, count in names.items() if count > 1):
        yield rejected(obj, f"names two ports {name!r}", "validateServicePort: Duplicate value", fix)
    pairs = Counter((p.get("port"), p.get("protocol") or "TCP") for p in ports)
    for (number, protocol), count in pairs.items():
        if count > 1:
            yield rejected(
                obj,
                f"declares port {number}/{protocol} twice",
                "ValidateService: spec.ports: Duplicate value",
                "keep one entry per port and protocol",
            )
    for port in ports:
        if errors := syntax.is_valid_port_num(port.get("port")):
            yield rejected(
                obj, f"has port {port.get('port')}, which {errors[0]}", "validateServicePort", "use a port in 1-65535"
            )
        target = port.get("targetPort")
        if isinstance(target, str):
            yield from problems(
                obj,
                "spec.ports targetPort",
                target,
                syntax.is_valid_port_name,
                "validateServicePort",
                "name a container port (IANA_SVC_NAME) or give its number",
            )
        if port.get("nodePort") and spec.get("type", "ClusterIP") == "ClusterIP":
            yield rejected(
                obj,
                f"sets nodePort {port['nodePort']} on a ClusterIP Service",
                "ValidateService: may not be used when `type` is 'ClusterIP'",
                "drop nodePort, or make the Service a NodePort or LoadBalancer",
            )


ADMISSION_ACTIONS = ("Deny", "Warn", "Audit")
ADMISSION_SOURCE = "pkg/apis/admissionregistration/validation/validation.go"


def _admission_binding(obj: KubeObject) -> Iterator[Finding]:
    """validateValidatingAdmissionPolicyBindingSpec and validateValidationActions."""
    spec = obj.manifest.get("spec")
    if not isinstance(spec, dict):
        return
    name = spec.get("policyName")
    if name is None or name == "":
        yield rejected(
            obj,
            "has no spec.policyName",
            f"{ADMISSION_SOURCE}, validateValidatingAdmissionPolicyBindingSpec: spec.policyName: Required value",
            "name the ValidatingAdmissionPolicy the binding applies in spec.policyName",
        )
    actions = spec.get("validationActions")
    if isinstance(actions, list) and all(isinstance(a, str) for a in actions):
        yield from _validation_actions(obj, actions)
    elif actions is None:
        yield rejected(
            obj,
            "has no spec.validationActions",
            f"{ADMISSION_SOURCE}, validateValidationActions: spec.validationActions: Required value: at least one "
            "validation action is required",
            'set spec.validationActions, e.g. ["Deny"] (or ["Deny", "Audit"])',
        )
    ref = spec.get("paramRef")
    if isinstance(ref, dict) and "name" in ref and "selector" in ref:
        yield rejected(
            obj,
            "has a spec.paramRef with both name and selector",
            f"{ADMISSION_SOURCE}, validateParamRef: spec.paramRef.name: Forbidden: name and selector are mutually "
            "exclusive",
            "give the paramRef either a name or a selector",
        )
    elif isinstance(ref, dict) and "name" not in ref and "selector" not in ref:
        yield rejected(
            obj,
            "has a spec.paramRef with neither name nor selector",
            f"{ADMISSION_SOURCE}, validateParamRef: spec.paramRef: Required value: one of name or selector must be "
            "specified",
            "give the paramRef a name (one parameter object) or a selector",
        )


def _validation_actions(obj: KubeObject, actions: list[str]) -> Iterator[Finding]:
    source = f"{ADMISSION_SOURCE}, validateValidationActions: spec.validationActions"
    if not actions:
        yield rejected(
            obj,
            "has an empty spec.validationActions",
            f"{source}: Required value: at least one validation action is required",
            'set spec.validationActions, e.g. ["Deny"]',
        )
    for action, count in Counter(actions).items():
        if action not in ADMISSION_ACTIONS:
            yield unsupported(
                obj, "spec.validationActions entry", action, ADMISSION_ACTIONS, source, "use Deny, Warn or Audit"
            )
        elif count > 1:
            yield rejected(
                obj, f"lists {action} twice in spec.validationActions", f"{source}: Duplicate value", "list it once"
            )
    if "Deny" in actions and "Warn" in actions:
        yield rejected(
            obj,
            f"has spec.validationActions {actions}",
            f"{source}: Invalid value: must not contain both Deny and Warn (repeating the same validation failure "
            "information in the API response and headers serves no purpose)",
            "keep Deny alone (a denied request already carries the message) or add Audit; use Warn without Deny to "
            "only warn",
        )


def _admission_policy(obj: KubeObject) -> Iterator[Finding]:
    """validateValidatingAdmissionPolicySpec."""
    spec = obj.manifest.get("spec")
    if not isinstance(spec, dict):
        return
    source = f"{ADMISSION_SOURCE}, validateValidatingAdmissionPolicySpec"
    if spec.get("matchConstraints") is None:
        yield rejected(
            obj,
            "has no spec.matchConstraints",
            f"{source}: spec.matchConstraints: Required value",
            "set spec.matchConstraints.resourceRules to the requests the policy judges",
        )
    validations, audits = spec.get("validations"), spec.get("auditAnnotations")
    if validations is None and audits is None:
        yield rejected(
            obj,
            "has neither validations nor auditAnnotations",
            f"{source}: spec.validations: Required value: validations or auditAnnotations must contain at least "
            "one item",
            "add the policy's validations (CEL expressions)",
        )
    for i, validation in enumerate(validations if isinstance(validations, list) else []):
        if isinstance(validation, dict) and validation.get("expression") in (None, ""):
            yield rejected(
                obj,
                f"has spec.validations[{i}] without an expression",
                f"{source}: spec.validations[{i}].expression: Required value: expression is not specified",
                "give each validation its CEL expression",
            )
