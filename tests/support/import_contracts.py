"""An import-linter contract type that names what a set of modules may import, not what they may not.

`lint-imports` loads it through `contract_types` in pyproject.toml (the working directory is on its
path, so `tests.support` is found from the checkout). The built-in `forbidden` contract lists what
is refused, so anything nobody thought of (`os`, `pathlib`, an HTTP client) passes; this one refuses
every import of a source module that no entry of `allowed_modules` covers.

Each import is judged by the module its statement names, as written: `import a.b` names `a.b`,
`from a.b import c` names `a.b`. An entry covers that module and everything below it, so
`urllib.parse` allows `from urllib.parse import urljoin` but not `from urllib import request`.
Imports inside the source packages themselves are always allowed. `ignore_imports` names single
exceptions as `importer -> module` with the module as its statement names it; an exception that
matches no import is an error, so the list cannot outlive the code it excuses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck, InvalidContractOptions

# The first line of an import statement names its module, even when its names run on.
_FROM = re.compile(r"\s*from\s+([\w.]+)\s+import\b")
_IMPORT = re.compile(r"\s*import\s+(.+)")


@dataclass(frozen=True, order=True)
class RefusedImport:
    importer: str
    module: str
    line_number: int


def named_modules(line: str) -> list[str]:
    """The modules an import statement's first line names (`import a, b.c as d` names two)."""
    line = line.split("#", 1)[0]
    if found := _FROM.match(line):
        return [found.group(1)]
    if found := _IMPORT.match(line):
        names = found.group(1).strip().strip("()\\").split(",")
        return [name.split(" as ")[0].strip() for name in names if name.strip()]
    return []


def covers(entry: str, module: str) -> bool:
    return module == entry or module.startswith(entry + ".")


class AllowedImportsContract(Contract):
    """Every import of `source_modules` (each a package: all its modules) is of a module that
    `allowed_modules` names, of the source packages themselves, or one `ignore_imports` excuses."""

    type_name = "allowed_imports"

    source_modules = fields.ListField(subfield=fields.StringField())
    allowed_modules = fields.ListField(subfield=fields.StringField())
    ignore_imports = fields.ListField(subfield=fields.StringField(), required=False, default=[])

    def _exceptions(self) -> set[tuple[str, str]]:
        pairs = set()
        for text in self.ignore_imports:  # type: ignore[attr-defined]
            importer, arrow, module = (part.strip() for part in str(text).partition("->"))
            if not arrow or not importer or not module:
                raise InvalidContractOptions({"ignore_imports": f"{text!r} is not 'importer -> module'"})
            pairs.add((importer, module))
        return pairs

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        sources = [str(name) for name in self.source_modules]  # type: ignore[attr-defined]
        allowed = [str(name) for name in self.allowed_modules]  # type: ignore[attr-defined]
        exceptions = self._exceptions()
        missing = [name for name in sources if name not in graph.modules]
        if missing:
            raise ValueError(f"source modules not in the import graph: {', '.join(missing)}")
        importers = sorted(
            module for module in graph.modules if any(covers(source, module) for source in sources)
        )
        refused: list[RefusedImport] = []
        used_exceptions: set[tuple[str, str]] = set()
        for importer in importers:
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    # grimp names an external import by its top-level package; the statement is exact.
                    for module in named_modules(str(detail["line_contents"])) or [imported]:
                        if any(covers(entry, module) for entry in (*sources, *allowed)):
                            continue
                        if (importer, module) in exceptions:
                            used_exceptions.add((importer, module))
                            continue
                        refused.append(RefusedImport(importer, module, int(detail["line_number"])))
        unused = sorted(exceptions - used_exceptions)
        output.verbose_print(verbose, f"Checked the imports of {len(importers)} modules.")
        return ContractCheck(
            kept=not refused and not unused,
            metadata={
                "refused": sorted(set(refused)),
                "unused": [f"{importer} -> {module}" for importer, module in unused],
            },
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for refused in check.metadata["refused"]:
            output.print_error(
                f"{refused.importer} imports {refused.module} (l.{refused.line_number}), "
                "which allowed_modules does not name",
                bold=False,
            )
        for text in check.metadata["unused"]:
            output.print_error(f"ignore_imports {text} matches no import: remove it", bold=False)
        output.new_line()
