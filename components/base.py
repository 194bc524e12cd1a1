"""The shape every tokenplane component shares.

``Name(name, args, opts)``, the type token ``tokenplane:<module>:<Name>``,
``parent=self`` on every child, child names derived from the component's name,
and a real ``register_outputs`` at the end of each constructor.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pulumi


class Component(pulumi.ComponentResource):
    """Base class: derives the type token from the module name and the class name."""

    MODULE: ClassVar[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"tokenplane:{self.MODULE}:{type(self).__name__}", name, None, opts)
        self.component_name = name
        # Pulumi does not pass a component's depends_on to its children, so "this component after X" would
        # order only the component's own (empty) registration. Every child repeats it, so that, e.g., pods
        # wait for their namespace and a LoadBalancer Service for its controller.
        after = opts.depends_on if opts is not None else None
        self._after: list[pulumi.Resource] = (
            list(after) if isinstance(after, list | tuple) else [after] if isinstance(after, pulumi.Resource) else []
        )

    def wait_for(self, *resources: pulumi.Resource) -> None:
        """Every child created from now on waits for ``resources`` too (its namespace, a controller)."""
        self._after.extend(resources)

    def child(self, *parts: str) -> str:
        """A child's logical name: the component's name plus a suffix, so URNs never collide."""
        return "-".join((self.component_name, *parts))

    def opts(self, **kwargs: Any) -> pulumi.ResourceOptions:
        """Options for a child: parented here (it inherits the providers) and after what this component is after."""
        if self._after:
            extra = kwargs.pop("depends_on", None)
            extra = list(extra) if isinstance(extra, list | tuple) else [extra] if extra is not None else []
            kwargs["depends_on"] = [*self._after, *extra]
        return pulumi.ResourceOptions(parent=self, **kwargs)

    def invoke_opts(self) -> pulumi.InvokeOutputOptions:
        return pulumi.InvokeOutputOptions(parent=self)
