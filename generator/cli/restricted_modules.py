"""`--restricted-modules`, of `render`, `diff` and `post-render --domain kyma`: Lifecycle Manager's
restricted-modules list, read without importing the render pipeline (post-render starts fast)."""

from __future__ import annotations

import re

from btp_gitops.generator.core.errors import UsageError

# A module name: it names the module's app directory (kyma-<module>), a DNS label.
MODULE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def restricted_modules(values: list[str]) -> tuple[str, ...]:
    """`--restricted-modules a,b --restricted-modules c`: module names, as Lifecycle Manager's
    restricted-modules list (comma-separated)."""
    names = sorted({name.strip() for value in values for name in value.split(",") if name.strip()})
    for name in names:
        if not MODULE_NAME.fullmatch(name):
            raise UsageError(f"--restricted-modules: {name!r} is no module name (a DNS label)")
    return tuple(names)
