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

    def child(self, *parts: str) -> str:
        """A child's logical name: the component's name plus a suffix, so URNs never collide."""
        return "-".join((self.component_name, *parts))

    def opts(self, **kwargs: Any) -> pulumi.ResourceOptions:
        """Options for a child: always parented here, so it inherits this component's providers."""
        return pulumi.ResourceOptions(parent=self, **kwargs)

    def invoke_opts(self) -> pulumi.InvokeOutputOptions:
        return pulumi.InvokeOutputOptions(parent=self)
