"""An import-linter contract type of our own: the modules of some packages may import, of one root
package, only a few of its modules (and themselves).

import-linter's ``forbidden`` contract names what may not be imported, so a package added later
would be allowed silently; this one names what may be: "plug-ins import only the plug-in
surface" holds every built-in environment and backend to ``ovtui.plugins``, whatever ovtui
grows. ``pyproject.toml`` registers it (``contract_types``); lint-imports imports it from the
project's root.
"""

from __future__ import annotations

from typing import Any

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


class OnlySurfaceContract(Contract):
    """Configuration: ``source_packages`` (each checked with everything below it), ``root`` (the
    package whose modules are restricted) and ``allowed`` (modules of ``root`` the sources may
    import, each with everything below it). Imports inside one source package are always allowed."""

    type_name = "only_surface"

    source_packages = fields.ListField(subfield=fields.ModuleField())
    root = fields.ModuleField()
    allowed = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        root = self.root.name  # type: ignore[attr-defined]
        allowed = [m.name for m in self.allowed]  # type: ignore[attr-defined]
        illegal: list[dict[str, Any]] = []
        for package in (m.name for m in self.source_packages):  # type: ignore[attr-defined]
            if package not in graph.modules:
                raise ValueError(f"{package} is not a module of the graph")
            for importer in sorted({package, *graph.find_descendants(package)}):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if not _within(imported, root) or _within(imported, package):
                        continue
                    if any(_within(imported, surface) for surface in allowed):
                        continue
                    details = graph.get_import_details(importer=importer, imported=imported)
                    lines = sorted({d["line_number"] for d in details})
                    illegal.append({"importer": importer, "imported": imported, "lines": lines})
                    output.verbose_print(verbose, f"{importer} -> {imported}")
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        allowed = ", ".join(m.name for m in self.allowed)  # type: ignore[attr-defined]
        output.print_error(f"Only {allowed} may be imported of {self.root}:", bold=False)
        output.new_line()
        for link in check.metadata["illegal"]:
            where = ", ".join(map(str, link["lines"]))
            output.print_error(f"- {link['importer']} -> {link['imported']} (l.{where})", bold=False)
        output.new_line()


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")
