"""Lazy package faces (PEP 562): a package's `__init__` lists its public names, and each is
imported from its module when it is first asked for.

A face that imported its modules eagerly would make every import of one of them (an `__init__`
always runs first) load all of them: `core.errors` would bring PyYAML and the schema validator,
`io.cluster` the data-file finder. Start-up is most of the work of `btp-gitops post-render`,
which Helm runs on every install, so the faces the commands pass through are lazy. A face module
keeps the same names three times, for readers and type checkers (imports under TYPE_CHECKING),
for `import *` (`__all__`) and for this loader (the mapping); tests/unit/test_faces.py keeps them
equal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_face(package: str, face: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`'s face. `face` maps each module of the package (or, with a
    dot, any module: a name another package defines) to the names it gives the face; a name equal
    to its module's gives the module itself (io's `bundled`)."""
    module_of = {name: module for module, names in face.items() for name in names}
    namespace = import_module(package).__dict__

    def attribute(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        found = import_module(module if "." in module else f"{package}.{module}")
        value = found if name == module else getattr(found, name)
        namespace[name] = value  # asked once
        return value

    return attribute
