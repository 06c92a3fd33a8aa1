"""The lazy package faces (core.faces): each lists the same names three times, and each name is the
object of the module it comes from.

A face module names its exports in the imports for type checkers, in `__all__` and in the mapping
`lazy_face` loads from; a name missing from one of them would be untyped for mypy, missing from
`import *`, or an AttributeError at run time only when first used. Read from the source (AST), so
that nothing here imports the modules before the face is asked.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

FACES = (
    "btp_gitops.generator.core",
    "btp_gitops.generator.io",
    "btp_gitops.generator.domains.btp_operator",
    "btp_gitops.generator.domains.kyma",
)


def _source(package: str) -> ast.Module:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None
    return ast.parse(Path(spec.origin).read_text())


def _type_checking_names(tree: ast.Module) -> dict[str, str]:
    """name -> module, from the `if TYPE_CHECKING:` imports."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                for alias in statement.names:
                    names[alias.asname or alias.name] = statement.module
    return names


def _all(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return value
    raise AssertionError("no __all__")


def _lazy_mapping(tree: ast.Module) -> dict[str, str]:
    """name -> module, from the `__getattr__ = lazy_face(__name__, {...})` call."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "__getattr__"
            and isinstance(node.value, ast.Call)
        ):
            face = ast.literal_eval(node.value.args[1])
            return {name: module for module, names in face.items() for name in names}
    raise AssertionError("no lazy_face call")


@pytest.mark.parametrize("package", FACES)
def test_the_three_lists_of_a_face_agree(package: str) -> None:
    tree = _source(package)
    typed = _type_checking_names(tree)
    exported = _all(tree)
    lazy = _lazy_mapping(tree)
    assert sorted(exported) == sorted(typed) == sorted(lazy)
    for name, module in lazy.items():
        # `from package import bundled` names the module itself; others come from package.<module>.
        expected = module if "." in module else package if name == module else f"{package}.{module}"
        assert typed[name] == expected, name


@pytest.mark.parametrize("package", FACES)
def test_every_name_of_a_face_is_its_module_object(package: str) -> None:
    tree = _source(package)
    face = importlib.import_module(package)
    for name, module in _lazy_mapping(tree).items():
        source = importlib.import_module(module if "." in module else f"{package}.{module}")
        expected = source if name == module else getattr(source, name)
        assert getattr(face, name) is expected, name
    assert set(_all(tree)) <= set(dir(face))


@pytest.mark.parametrize("package", FACES)
def test_a_name_not_on_a_face_is_refused(package: str) -> None:
    face = importlib.import_module(package)
    with pytest.raises(AttributeError, match="has no attribute 'not_on_the_face'"):
        face.not_on_the_face  # noqa: B018
    with pytest.raises(ImportError):
        exec(f"from {package} import not_on_the_face")


def test_importing_one_kernel_module_loads_only_what_it_imports() -> None:
    """What the laziness is for, in a fresh interpreter: `core.errors` without PyYAML, and a face
    name loads its module when asked."""
    program = (
        "import sys\n"
        "import btp_gitops.generator.core.errors\n"
        "print('yaml' in sys.modules, 'btp_gitops.generator.core.validation' in sys.modules)\n"
        "from btp_gitops.generator.core import dump_object\n"
        "print('yaml' in sys.modules, 'btp_gitops.generator.core.validation' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["False False", "True False"]
