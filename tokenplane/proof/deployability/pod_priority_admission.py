"""A pod that sets ``spec.priority`` itself is admitted only when it equals what its PriorityClass resolves to.

The Priority admission plugin (kubernetes ``plugin/pkg/admission/priority/admission.go``) resolves every pod's
priority on CREATE from its ``priorityClassName`` (or, without one, the ``globalDefault`` class's value, else 0) and
refuses a pod whose spec already carries a different integer: "the integer value of priority (%d) must not be
provided in pod spec; priority admission controller computed %d from the given PriorityClass name". Workload
templates are not judged by it, so ``pulumi up`` sends the Deployment (or StatefulSet, Job...) and only its
controller's pods are refused (``FailedCreate`` on the ReplicaSet): no replica ever exists and the await times out
(https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/: priority is set through a
PriorityClass).

The class is resolved as priority_preemption.py does: a class the program creates (its ``value``), the reserved
``system-*`` classes, or, without a class name, the program's ``globalDefault`` class, else 0. Cannot see: a class or
a ``globalDefault`` class made outside the program (a named class not in the graph is not judged; a cluster-wide
default made by hand would change the computed value), values unknown at render time, pods a chart makes.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.priority_preemption import int_value, pod_priority, priority_classes

RULE = "pod-priority-admits"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        classes = priority_classes(graph, region)
        for obj in graph.pod_bearers(region):
            if obj.is_patch or not obj.pod_template():
                continue
            pod = obj.pod_spec()
            given = int_value(pod.get("priority"))
            if given is None:
                continue
            computed, _, name = pod_priority(pod, classes)
            if computed is None or computed == given:
                continue
            source = f"PriorityClass {name}" if name else "no priorityClassName and no globalDefault class"
            yield Finding(
                RULE,
                obj.urn,
                f"{obj.kind} {obj.namespace}/{obj.name}'s pod template sets spec.priority: {given}, while the "
                f'Priority admission plugin computes {computed} ({source}): every pod it creates is forbidden ("the '
                f"integer value of priority ({given}) must not be provided in pod spec; priority admission controller "
                f'computed {computed} from the given PriorityClass name"), so no replica ever exists',
                "remove spec.priority from the pod template and set priorityClassName to a PriorityClass whose value "
                f"is {given} (create one in the program)",
            )
