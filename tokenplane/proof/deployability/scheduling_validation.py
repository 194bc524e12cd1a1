"""A pod template's scheduling and DNS fields as ValidatePodSpec sees them (part of ``api-validation``).

These fields are written by hand in almost every program (a toleration for the GPU taint, a zone spread, a node
affinity on the instance type) and the schema checks only their types. Sources (kubernetes/kubernetes,
pkg/apis/core/validation/validation.go):

- tolerations (ValidateTolerations): an empty key needs operator Exists; operator Exists takes no value; an operator
  other than Equal/Exists; tolerationSeconds only with effect NoExecute; an effect other than NoSchedule,
  PreferNoSchedule, NoExecute (validateTaintEffect); a key that is not a qualified name (ValidateLabelName);
- node affinity (validateNodeAffinity, ValidateNodeSelector: at least one nodeSelectorTerm;
  ValidateNodeSelectorRequirement: In/NotIn need values, Exists/DoesNotExist take none, Gt/Lt take exactly one,
  a key that is a qualified name (ValidateLabelName; the values are not validated there);
  ValidatePreferredSchedulingTerms: weight 1-100);
- pod (anti-)affinity terms (validatePodAffinityTerm: topologyKey required and a qualified name
  (ValidateLabelName), each of namespaces a namespace name; validateWeightedPodAffinityTerms: weight 1-100);
- matchFields (ValidateNodeFieldSelectorRequirement: key metadata.name, operator In or NotIn, exactly one value,
  a node name);
- topologySpreadConstraints (validateTopologySpreadConstraints: maxSkew above 0, topologyKey required,
  whenUnsatisfiable DoNotSchedule or ScheduleAnyway, one constraint per {topologyKey, whenUnsatisfiable};
  nodeAffinityPolicy and nodeTaintsPolicy Honor or Ignore, validateNodeInclusionPolicy;
  validateMinDomains: above 0 and only with DoNotSchedule);
- matchLabelKeys of a spread constraint (validateMatchLabelKeysInTopologySpread: each key a label name; a key the
  constraint's labelSelector also selects on is refused, "exists in both matchLabelKeys and labelSelector": on 1.32
  the object itself; from 1.33, MatchLabelKeysInPodTopologySpreadSelectorMerge (beta, on) merges the keys into the
  pod's selector and validates like affinity, kubernetes/kubernetes#129874, so every pod the controller creates is
  refused instead); judged only where the pod's labels carry the key (the merge adds only those);
- matchLabelKeys/mismatchLabelKeys of a pod (anti-)affinity term (validateMatchLabelKeysAndMismatchLabelKeys,
  MatchLabelKeysInPodAffinity beta and on from 1.31): each key a label name; a key in both lists is refused on the
  object; a matchLabelKeys key the term's labelSelector also selects on is refused on the pods, once the API server
  has merged it into their selector (kubernetes/kubernetes#130063: a template passes, its pods do not).
  Not judged: matchLabelKeys without a labelSelector (Forbidden), since an absent selector may be one unknown
  until apply;
- nodeSelector (ValidatePodSpec: ValidateLabels, so "g5.xlarge,g5.2xlarge" or a key with a space is refused);
- dnsPolicy (validateDNSPolicy, after the v1 default ClusterFirst) and dnsConfig (validatePodDNSConfig: None needs
  a dnsConfig with a nameserver; at most 3 nameservers, each an IP; at most 32 search paths; options named);
- hostNetwork (validateHostNetwork): a container port's hostPort, where written, equal to its containerPort;
- activeDeadlineSeconds (ValidatePodSpec: between 1 and 2147483647).
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import KubeObject
from tokenplane.proof.deployability.object_validation import check_labels, problems, rejected, unsupported

TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SPREAD_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
MAX_DNS_NAMESERVERS, MAX_DNS_SEARCH_PATHS = 3, 32  # validation.go MaxDNSNameservers, MaxDNSSearchPaths
INT32_MAX = 2**31 - 1
AFFINITY_TERMS = ("requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution")


def check(obj: KubeObject, where: str, pod: Mapping[str, Any]) -> Iterator[Finding]:
    """``where`` is the template's field path with a trailing dot ("" for a Pod)."""
    at = f"{where}spec"
    for i, toleration in enumerate(_dicts(pod.get("tolerations"))):
        yield from _toleration(obj, f"{at}.tolerations[{i}]", toleration)
    raw = pod.get("affinity")
    affinity: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    yield from _node_affinity(obj, f"{at}.affinity.nodeAffinity", affinity.get("nodeAffinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        yield from _pod_affinity(obj, f"{at}.affinity.{kind}", affinity.get(kind))
    yield from _spread(obj, f"{at}.topologySpreadConstraints", _dicts(pod.get("topologySpreadConstraints")))
    labels = _pod_labels(obj, where)
    for i, constraint in enumerate(_dicts(pod.get("topologySpreadConstraints"))):
        yield from _match_label_keys(obj, f"{at}.topologySpreadConstraints[{i}]", constraint, labels, spread=True)
    for kind in ("podAffinity", "podAntiAffinity"):
        for where_term, term in _affinity_terms(f"{at}.affinity.{kind}", affinity.get(kind)):
            yield from _match_label_keys(obj, where_term, term, labels, spread=False)
    yield from _dns(obj, at, pod)
    yield from check_labels(obj, f"{at}.nodeSelector", pod.get("nodeSelector"), source="ValidatePodSpec/ValidateLabels")
    if pod.get("hostNetwork") is True:
        yield from _host_network(obj, at, pod)
    deadline = syntax.integer(pod.get("activeDeadlineSeconds"))
    if deadline is not None and not 1 <= deadline <= INT32_MAX:
        yield rejected(
            obj,
            f"has {at}.activeDeadlineSeconds {deadline}",
            f"ValidatePodSpec: spec.activeDeadlineSeconds: Invalid value: must be between 1 and {INT32_MAX}, inclusive",
            "set activeDeadlineSeconds to 1 or more, or drop it (no deadline)",
        )


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _toleration(obj: KubeObject, at: str, toleration: Mapping[str, Any]) -> Iterator[Finding]:
    key, operator = toleration.get("key") or "", toleration.get("operator") or ""
    value, effect = toleration.get("value") or "", toleration.get("effect") or ""
    if key and (errors := syntax.is_qualified_name(str(key))):
        yield rejected(
            obj,
            f"has {at}.key {key!r}, which {'; '.join(errors)}",
            "ValidateTolerations: ValidateLabelName",
            "use the taint's key as the node carries it, e.g. nvidia.com/gpu",
        )
    if not key and operator != "Exists":
        yield rejected(
            obj,
            f"has {at} with no key and operator {operator or 'Equal (the default)'}",
            'ValidateTolerations: operator must be Exists when `key` is empty, which means "match all values and all '
            'keys"',
            "name the taint's key, or set operator Exists to tolerate every taint",
        )
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        yield rejected(
            obj,
            f"has {at}.tolerationSeconds with effect {effect or 'unset (every effect)'}",
            "ValidateTolerations: effect must be 'NoExecute' when `tolerationSeconds` is set",
            "set effect NoExecute (tolerationSeconds bounds how long the pod stays on a NoExecute-tainted node), or "
            "drop tolerationSeconds",
        )
    if operator == "Exists" and value:
        yield rejected(
            obj,
            f"has {at} with operator Exists and value {value!r}",
            "ValidateTolerations: value must be empty when `operator` is 'Exists'",
            "drop the value (Exists matches any value), or use operator Equal to match this one",
        )
    elif operator in ("", "Equal") and (errors := syntax.is_valid_label_value(str(value))):
        yield rejected(
            obj, f"has {at}.value {value!r}, which {'; '.join(errors)}", "ValidateTolerations", "use the taint's value"
        )
    elif operator not in ("", *TOLERATION_OPERATORS):
        yield unsupported(
            obj,
            f"{at}.operator",
            operator,
            ("Equal", "Exists"),
            "ValidateTolerations",
            "use operator Equal (with a value) or Exists (without one)",
        )
    if effect and effect not in TAINT_EFFECTS:
        yield unsupported(
            obj,
            f"{at}.effect",
            effect,
            ("NoSchedule", "PreferNoSchedule", "NoExecute"),
            "validateTaintEffect",
            "use the effect the taint has (case matters), or leave it empty to match every effect",
        )


def _node_affinity(obj: KubeObject, at: str, affinity: Any) -> Iterator[Finding]:
    if not isinstance(affinity, dict):
        return
    required = affinity.get(AFFINITY_TERMS[0])
    if isinstance(required, dict):
        terms = _dicts(required.get("nodeSelectorTerms"))
        if not terms:
            yield rejected(
                obj,
                f"has {at}.{AFFINITY_TERMS[0]} with no nodeSelectorTerms",
                "ValidateNodeSelector: Required value: must have at least one node selector term",
                "add a term with matchExpressions, or drop the required node affinity",
            )
        for i, term in enumerate(terms):
            yield from _node_term(obj, f"{at}.{AFFINITY_TERMS[0]}.nodeSelectorTerms[{i}]", term)
    for i, preferred in enumerate(_dicts(affinity.get(AFFINITY_TERMS[1]))):
        yield from _weight(obj, f"{at}.{AFFINITY_TERMS[1]}[{i}]", preferred, "ValidatePreferredSchedulingTerms")
        if isinstance(preferred.get("preference"), dict):
            yield from _node_term(obj, f"{at}.{AFFINITY_TERMS[1]}[{i}].preference", preferred["preference"])


def _node_term(obj: KubeObject, at: str, term: Mapping[str, Any]) -> Iterator[Finding]:
    for j, requirement in enumerate(_dicts(term.get("matchExpressions"))):
        where = f"{at}.matchExpressions[{j}]"
        operator, values = requirement.get("operator"), requirement.get("values") or []
        count = len(values) if isinstance(values, list) else 0
        if operator in ("In", "NotIn") and count == 0:
            message, fix = "must be specified when `operator` is 'In' or 'NotIn'", "list the values to match"
        elif operator in ("Exists", "DoesNotExist") and count > 0:
            message = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            fix = "drop values (Exists matches the key alone), or use operator In"
        elif operator in ("Gt", "Lt") and count != 1:
            message, fix = "must be specified single value when `operator` is 'Lt' or 'Gt'", "give exactly one integer"
        elif operator not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            message = 'Unsupported value: supported values: "DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"'
            fix = "use In, NotIn, Exists, DoesNotExist, Gt or Lt (case matters)"
        else:
            continue
        yield rejected(
            obj,
            f"has {where} {requirement.get('key')} {operator} with {count} values",
            f"ValidateNodeSelectorRequirement: {message}",
            fix,
        )
    for j, requirement in enumerate(_dicts(term.get("matchExpressions"))):
        if isinstance(key := requirement.get("key"), str):
            fix = "a node label key is [prefix/]name (name at most 63 of [A-Za-z0-9-_.]), e.g. node.kubernetes.io/instance-type"
            source = "ValidateNodeSelectorRequirement/ValidateLabelName"
            yield from problems(obj, f"{at}.matchExpressions[{j}].key", key, syntax.is_qualified_name, source, fix)
    yield from _node_fields(obj, at, term)


def _node_fields(obj: KubeObject, at: str, term: Mapping[str, Any]) -> Iterator[Finding]:
    """ValidateNodeFieldSelectorRequirement: a node field selector knows one key, metadata.name, operators In and
    NotIn only, and exactly one value, a node name (a DNS-1123 subdomain)."""
    for j, requirement in enumerate(_dicts(term.get("matchFields"))):
        where = f"{at}.matchFields[{j}]"
        key, operator, values = requirement.get("key"), requirement.get("operator"), requirement.get("values")
        source = "ValidateNodeFieldSelectorRequirement"
        if isinstance(operator, str) and operator not in ("In", "NotIn"):
            yield rejected(
                obj,
                f"has {where}.operator {operator!r}",
                f'{source}: {where}.operator: Invalid value: "{operator}": not a valid selector operator',
                "use In or NotIn with a node field selector (matchExpressions take Exists and the others)",
            )
        elif operator in ("In", "NotIn") and isinstance(values, list) and len(values) != 1:
            yield rejected(
                obj,
                f"has {where} {key} {operator} with {len(values)} values",
                f"{source}: {where}.values: Required value: must be only one value when `operator` is 'In' or "
                "'NotIn' for node field selector",
                "give exactly one node name, or select nodes by label in matchExpressions",
            )
        if isinstance(key, str) and key != "metadata.name":
            yield rejected(
                obj,
                f"has {where}.key {key!r}",
                f'{source}: {where}.key: Invalid value: "{key}": not a valid field selector key',
                "matchFields knows only metadata.name; select by a node label in matchExpressions instead",
            )
        elif isinstance(key, str) and isinstance(values, list):
            for i, value in enumerate(values):
                if isinstance(value, str) and (errors := syntax.is_dns1123_subdomain(value)):
                    yield rejected(
                        obj,
                        f"has {where}.values[{i}] {value!r}, which {'; '.join(errors)}",
                        f"{source} (ValidateNodeName)",
                        "write the node's name (a lowercase RFC 1123 subdomain)",
                    )


def _weight(obj: KubeObject, at: str, term: Mapping[str, Any], source: str) -> Iterator[Finding]:
    weight = syntax.integer(term.get("weight"))
    if weight is None or not 1 <= weight <= 100:
        yield rejected(
            obj,
            f"has {at}.weight {term.get('weight')}",
            f"{source}: must be in the range 1-100",
            "give each preferred term a weight from 1 to 100",
        )


def _affinity_terms(at: str, affinity: Any) -> list[tuple[str, dict[str, Any]]]:
    if not isinstance(affinity, dict):
        return []
    terms = [(f"{at}.{AFFINITY_TERMS[0]}[{i}]", t) for i, t in enumerate(_dicts(affinity.get(AFFINITY_TERMS[0])))]
    for i, weighted in enumerate(_dicts(affinity.get(AFFINITY_TERMS[1]))):
        if isinstance(weighted.get("podAffinityTerm"), dict):
            terms.append((f"{at}.{AFFINITY_TERMS[1]}[{i}].podAffinityTerm", weighted["podAffinityTerm"]))
    return terms


def _pod_labels(obj: KubeObject, where: str) -> dict[str, Any] | None:
    """The pod's (or template's) metadata.labels where the render knows them."""
    node: Any = obj.manifest
    for part in f"{where}metadata".split("."):
        node = node.get(part) if isinstance(node, dict) else None
    labels = node.get("labels") if isinstance(node, dict) else None
    return labels if isinstance(labels, dict) else None


def _selector_keys(selector: Mapping[str, Any]) -> set[str]:
    keys = (
        {str(k) for k in selector.get("matchLabels") or {}} if isinstance(selector.get("matchLabels"), dict) else set()
    )
    keys.update(str(e["key"]) for e in _dicts(selector.get("matchExpressions")) if isinstance(e.get("key"), str))
    return keys


def _match_label_keys(
    obj: KubeObject, at: str, term: Mapping[str, Any], labels: Mapping[str, Any] | None, *, spread: bool
) -> Iterator[Finding]:
    """matchLabelKeys (and an affinity term's mismatchLabelKeys): validateMatchLabelKeysInTopologySpread,
    validateMatchLabelKeysAndMismatchLabelKeys."""
    source = "validateMatchLabelKeysInTopologySpread" if spread else "validateMatchLabelKeysAndMismatchLabelKeys"
    lists: dict[str, list[Any]] = {}
    for name in ("matchLabelKeys", "mismatchLabelKeys"):
        value = term.get(name)
        lists[name] = value if isinstance(value, list) and not (spread and name == "mismatchLabelKeys") else []
    for field, keys in lists.items():
        for i, key in enumerate(keys):
            if isinstance(key, str):
                fix = "list pod label keys ([prefix/]name), e.g. pod-template-hash"
                yield from problems(obj, f"{at}.{field}[{i}]", key, syntax.is_qualified_name, source, fix)
    mismatch = {k for k in lists["mismatchLabelKeys"] if isinstance(k, str)}
    for i, key in enumerate(lists["matchLabelKeys"]):
        if isinstance(key, str) and key in mismatch:
            yield rejected(
                obj,
                f"has {key!r} in both {at}.matchLabelKeys and mismatchLabelKeys",
                f'{source}: {at}.matchLabelKeys[{i}]: Invalid value: "{key}": exists in both matchLabelKeys and '
                "mismatchLabelKeys",
                "keep each key in one of the two lists",
            )
    selector = term.get("labelSelector")
    if not isinstance(selector, dict) or labels is None:
        return
    selected = _selector_keys(selector)
    for i, key in enumerate(lists["matchLabelKeys"]):
        if not (isinstance(key, str) and key in selected and key in labels):
            continue
        path = f"{at}.matchLabelKeys[{i}]" if spread else f"{at}[{i}]"
        when = (
            "on EKS 1.32 the object itself is refused; from 1.33 the API server merges matchLabelKeys into each "
            "pod's selector and refuses every pod the controller creates"
            if spread
            else "the API server merges matchLabelKeys into each pod's selector and refuses every pod (a template "
            "passes, kubernetes/kubernetes#130063)"
        )
        yield rejected(
            obj,
            f"has {key!r} in {at}.matchLabelKeys and in its labelSelector ({when})",
            f'{source}: {path}: Invalid value: "{key}": exists in both matchLabelKeys and labelSelector',
            f"drop {key!r} from matchLabelKeys (the labelSelector already pins it), or from the labelSelector; "
            "to spread each rollout on its own, use matchLabelKeys: [pod-template-hash]",
        )


def _pod_affinity(obj: KubeObject, at: str, affinity: Any) -> Iterator[Finding]:
    if not isinstance(affinity, dict):
        return
    for i, weighted in enumerate(_dicts(affinity.get(AFFINITY_TERMS[1]))):
        yield from _weight(obj, f"{at}.{AFFINITY_TERMS[1]}[{i}]", weighted, "validateWeightedPodAffinityTerms")
    for where, term in _affinity_terms(at, affinity):
        if not term.get("topologyKey"):
            yield rejected(
                obj,
                f"has {where} without a topologyKey",
                "validatePodAffinityTerm: topologyKey: Required value: can not be empty",
                "set topologyKey, e.g. kubernetes.io/hostname (per node) or topology.kubernetes.io/zone (per zone)",
            )
        elif isinstance(key := term.get("topologyKey"), str):
            fix = "a topologyKey is a node label key: kubernetes.io/hostname or topology.kubernetes.io/zone"
            source = "validatePodAffinityTerm/ValidateLabelName"
            yield from problems(obj, f"{where}.topologyKey", key, syntax.is_qualified_name, source, fix)
        for j, namespace in enumerate(term.get("namespaces") or [] if isinstance(term.get("namespaces"), list) else []):
            if isinstance(namespace, str):
                fix = "list namespaces by name (RFC 1123 labels), or select them with namespaceSelector"
                source = "validatePodAffinityTerm/ValidateNamespaceName"
                yield from problems(obj, f"{where}.namespaces[{j}]", namespace, syntax.is_dns1123_label, source, fix)


def _spread(obj: KubeObject, at: str, constraints: list[dict[str, Any]]) -> Iterator[Finding]:
    for i, constraint in enumerate(constraints):
        where = f"{at}[{i}]"
        skew, action = syntax.integer(constraint.get("maxSkew")), constraint.get("whenUnsatisfiable")
        if skew is None or skew <= 0:
            yield rejected(
                obj,
                f"has {where}.maxSkew {constraint.get('maxSkew')}",
                "validateTopologySpreadConstraints: maxSkew: must be greater than zero",
                "set maxSkew to 1 or more (1 spreads evenly)",
            )
        if not constraint.get("topologyKey"):
            yield rejected(
                obj,
                f"has {where} without a topologyKey",
                "validateTopologySpreadConstraints: topologyKey: Required value: can not be empty",
                "set topologyKey, e.g. topology.kubernetes.io/zone",
            )
        if action not in SPREAD_ACTIONS:
            yield unsupported(
                obj,
                f"{where}.whenUnsatisfiable",
                action,
                ("DoNotSchedule", "ScheduleAnyway"),
                "ValidateWhenUnsatisfiable",
                "set whenUnsatisfiable to DoNotSchedule (hard) or ScheduleAnyway (soft)",
            )
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(field)
            if isinstance(policy, str) and policy not in ("Honor", "Ignore"):
                yield unsupported(
                    obj,
                    f"{where}.{field}",
                    policy,
                    ("Honor", "Ignore"),
                    "validateNodeInclusionPolicy",
                    "use Honor or Ignore (case matters)",
                )
        domains = constraint.get("minDomains")
        if domains is not None and ((syntax.integer(domains) or 0) <= 0 or action != "DoNotSchedule"):
            yield rejected(
                obj,
                f"has {where}.minDomains {domains} with whenUnsatisfiable {action}",
                "validateMinDomains: must be greater than 0, and can only use minDomains if "
                "whenUnsatisfiable=DoNotSchedule",
                "use minDomains (1 or more) only with whenUnsatisfiable DoNotSchedule, or drop it",
            )
    pairs = Counter((str(c.get("topologyKey")), str(c.get("whenUnsatisfiable"))) for c in constraints)
    for (key, action), count in sorted(pairs.items()):
        if count > 1:
            yield rejected(
                obj,
                f"has {count} {at} on {{{key}, {action}}}",
                "ValidateSpreadConstraintNotRepeat: {topologyKey, whenUnsatisfiable}: Duplicate value",
                "merge them into one constraint per topologyKey and whenUnsatisfiable",
            )


def _dns(obj: KubeObject, at: str, pod: Mapping[str, Any]) -> Iterator[Finding]:
    policy, config = pod.get("dnsPolicy") or "ClusterFirst", pod.get("dnsConfig")
    if policy not in DNS_POLICIES:
        yield unsupported(
            obj,
            f"{at}.dnsPolicy",
            policy,
            DNS_POLICIES,
            "validateDNSPolicy",
            "use ClusterFirst (cluster DNS), ClusterFirstWithHostNet (with hostNetwork), Default or None",
        )
    nameservers = config.get("nameservers") or [] if isinstance(config, dict) else []
    if policy == "None" and (not isinstance(config, dict) or not nameservers):
        yield rejected(
            obj,
            f"has {at}.dnsPolicy None without " + ("a dnsConfig" if not isinstance(config, dict) else "a nameserver"),
            "validatePodDNSConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None (with at least "
            "one DNS nameserver)",
            "give spec.dnsConfig.nameservers (the resolver's addresses), or use dnsPolicy ClusterFirst",
        )
    if not isinstance(config, dict):
        return
    if len(nameservers) > MAX_DNS_NAMESERVERS:
        yield rejected(
            obj,
            f"has {len(nameservers)} {at}.dnsConfig.nameservers",
            f"validatePodDNSConfig: must not have more than {MAX_DNS_NAMESERVERS} nameservers",
            f"keep at most {MAX_DNS_NAMESERVERS} nameservers (resolv.conf's limit)",
        )
    for server in nameservers:
        if not is_ip(str(server)):
            yield rejected(
                obj,
                f"has {at}.dnsConfig.nameservers entry {server!r}",
                "validatePodDNSConfig: must be a valid IP address",
                "give the resolver's IP address, not its name",
            )
    searches = config.get("searches") or []
    if len(searches) > MAX_DNS_SEARCH_PATHS:
        yield rejected(
            obj,
            f"has {len(searches)} {at}.dnsConfig.searches",
            f"validatePodDNSConfig: must not have more than {MAX_DNS_SEARCH_PATHS} search paths",
            f"keep at most {MAX_DNS_SEARCH_PATHS} search domains",
        )
    for option in _dicts(config.get("options")):
        if not option.get("name"):
            yield rejected(
                obj,
                f"has an {at}.dnsConfig.options entry without a name",
                "validatePodDNSConfig: Required value: must not be empty",
                "name each resolver option, e.g. {name: ndots, value: '2'}",
            )


def is_ip(text: str) -> bool:
    """IsValidIPForLegacyField: Go's ParseIP, which (unlike Python) also accepts IPv4 octets with leading zeros."""
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        parts = text.split(".")
        return len(parts) == 4 and all(p.isdigit() and len(p) <= 3 and int(p) <= 255 for p in parts)


def _host_network(obj: KubeObject, at: str, pod: Mapping[str, Any]) -> Iterator[Finding]:
    """A hostPort left unset is defaulted to the containerPort; one written differently is rejected. Only the
    regular containers: validatePodSpecSecurityContext passes spec.Containers alone."""
    for field in ("containers",):
        for container in _dicts(pod.get(field)):
            for port in _dicts(container.get("ports")):
                host, number = syntax.integer(port.get("hostPort")), port.get("containerPort")
                if host and host != number:
                    yield rejected(
                        obj,
                        f"has {at}.{field}[{container.get('name')}] containerPort {number} with hostPort {host} on "
                        "the host network",
                        "validateHostNetwork: containerPort: Invalid value: must match `hostPort` when `hostNetwork` "
                        "is true",
                        "listen on the host port itself (containerPort = hostPort), or leave hostPort out",
                    )
