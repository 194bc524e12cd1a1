"""Every Ingress is claimed by an ingress controller the program installs.

An Ingress is only an object in the API server until a controller that owns its class acts on it. Which class an
Ingress has: ``spec.ingressClassName``, else the deprecated ``kubernetes.io/ingress.class`` annotation, else the
cluster's default IngressClass (the one annotated ``ingressclass.kubernetes.io/is-default-class: "true"``, which the
API server writes into a new Ingress that names none, https://kubernetes.io/docs/concepts/services-networking/ingress/#default-ingress-class).
An Ingress with no class and no default, or with a class no installed controller serves, is accepted and then
ignored: no load balancer, no address, no event (the AWS Load Balancer Controller reconciles only Ingresses of an
IngressClass whose ``spec.controller`` is ``ingress.k8s.aws/alb``, or annotated ``alb``:
https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/ingress/ingress_class/).

The classes known: the IngressClass objects the program creates, and the one the Load Balancer Controller's chart
creates (values ``ingressClass``, default ``alb``; ``createIngressClassResource``, default true; default class only
with ``ingressClassConfig.default``). A class's controller counts as installed when it is the Load Balancer
Controller's and its chart is in the graph; an IngressClass of another controller is taken as served (its chart is
not modelled). Judged only where the program creates the cluster: an existing one may have classes of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, Graph, KubeObject, lookup
from tokenplane.proof.render import LB_CONTROLLER_CHART

RULE = "ingress-claimed"
ALB_CONTROLLER = "ingress.k8s.aws/alb"
CLASS_ANNOTATION = "kubernetes.io/ingress.class"
DEFAULT_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"


@dataclass(frozen=True)
class IngressClass:
    name: str
    controller: str
    default: bool
    served: bool


def classes(graph: Graph, region: str) -> dict[str, IngressClass]:
    """The region's IngressClasses by name: the program's, and the Load Balancer Controller chart's."""
    releases = graph.releases(region, LB_CONTROLLER_CHART)
    out: dict[str, IngressClass] = {}
    for release in releases:
        values = release.inputs.get("values") or {}
        if values.get("createIngressClassResource", True) is not False:
            name = str(values.get("ingressClass") or "alb")
            out[name] = IngressClass(name, ALB_CONTROLLER, lookup(values, "ingressClassConfig.default") is True, True)
    for obj in graph.kube(region, "IngressClass"):
        controller = str(lookup(obj.manifest, "spec.controller") or "")
        default = str((lookup(obj.manifest, "metadata.annotations") or {}).get(DEFAULT_ANNOTATION)).lower() == "true"
        served = controller != ALB_CONTROLLER or bool(releases)
        out[obj.name] = IngressClass(obj.name, controller, default, served)
    return out


def class_of(ingress: KubeObject, known: dict[str, IngressClass]) -> IngressClass | None:
    """The IngressClass an Ingress gets: the one it names, else the default; None when neither is known."""
    named = lookup(ingress.manifest, "spec.ingressClassName") or (
        lookup(ingress.manifest, "metadata.annotations") or {}
    ).get(CLASS_ANNOTATION)
    if named is None:
        return next((c for c in known.values() if c.default), None)
    return known.get(str(named))


def by_alb_controller(graph: Graph, region: str, ingress: KubeObject) -> bool:
    """Whether the Load Balancer Controller builds this Ingress's ALB (its class is the controller's, installed)."""
    found = class_of(ingress, classes(graph, region))
    return found is not None and found.controller == ALB_CONTROLLER and found.served


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        if not graph.of_type(CLUSTER, region):
            continue
        known = classes(graph, region)
        defaults = [c for c in known.values() if c.default]
        has_alb = bool(graph.releases(region, LB_CONTROLLER_CHART))
        for ingress in graph.kube(region, "Ingress"):
            annotations = lookup(ingress.manifest, "metadata.annotations") or {}
            named = lookup(ingress.manifest, "spec.ingressClassName") or annotations.get(CLASS_ANNOTATION)
            who = f"Ingress {ingress.namespace}/{ingress.name}"
            if named is None:
                if defaults:
                    continue
                why = (
                    "names no class (no spec.ingressClassName, no kubernetes.io/ingress.class annotation) and no "
                    f"IngressClass is the default (known: {', '.join(sorted(known)) or 'none'})"
                )
                fix = f"set spec.ingressClassName: {next(iter(sorted(known)), 'alb')}"
            elif (found := known.get(str(named))) is not None and found.served:
                continue
            elif found is None and str(named) == "alb" and has_alb and CLASS_ANNOTATION in annotations:
                continue  # the annotation form the controller still honours
            else:
                why = (
                    f"names class {named!r}, which "
                    + (
                        "no IngressClass defines"
                        if found is None
                        else f"the controller {found.controller} serves, and it is not installed"
                    )
                    + f" (known: {', '.join(sorted(known)) or 'none'})"
                )
                fix = "name an IngressClass the program installs (the Load Balancer Controller's chart creates 'alb')"
            yield Finding(
                RULE,
                ingress.urn,
                f"{who} {why}: no ingress controller claims it, so it is accepted and never acted on (no load "
                "balancer, no address, no event)",
                fix,
            )
