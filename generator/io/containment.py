"""What a render may read: the roots given on the command line, and nothing a source names beyond.

Sources name files (a chart, its values files, a module's raw manifests). They may come from a
fork's pull request or from another team's repository, so every such file must lie inside a
root, after resolving symbolic links: the source paths and `--catalog` directories given on the
command line, the directories given with `--allow-path`, and the charts shipped with btp-gitops.
A symbolic link inside a root that leads out of the roots is refused as well, wherever it is met
(a source directory, a chart directory Helm would read through it, a raw manifest directory).

Domains stay pure: they only produce paths. This module checks them where files are read: the
source walk (`io.sources`), and `ContainedCharts` in front of the Helm engine.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from btp_gitops.generator.charts.renderer import ChartRenderer, ChartRequest, RenderedChart
from btp_gitops.generator.core.errors import PathNotAllowed, Problem
from btp_gitops.generator.core.sources import problem_at

OUTSIDE = "outside the source roots (see --allow-path)"


def display_path(path: Path) -> str:
    """The path as the user would type it: relative to the working directory when inside it."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(absolute)


def _resolved(path: Path) -> Path | None:
    """`path` with every link followed; None for a loop of links, which leads nowhere readable."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # RuntimeError: a symlink loop (Python < 3.13)
        return None


@dataclass(frozen=True, slots=True)
class SourceRoots:
    """Resolved directories (or single files) inside which reading is allowed."""

    roots: tuple[Path, ...]

    @classmethod
    def of(cls, *groups: Iterable[Path]) -> SourceRoots:
        return cls(tuple(dict.fromkeys(Path(path).resolve() for group in groups for path in group)))

    def contains(self, path: Path) -> bool:
        resolved = _resolved(path)
        return resolved is not None and any(resolved.is_relative_to(root) for root in self.roots)

    def check_named(self, path: Path, problem: Problem) -> None:
        """A file a source names: refuse it, at `problem`'s location, when it resolves outside."""
        if not self.contains(path):
            raise PathNotAllowed("a source names a file outside the source roots", [problem])

    def check_link(self, link: Path) -> None:
        """A symbolic link met while reading: refuse it when its target is outside the roots."""
        if not self.contains(link):
            target = os.readlink(link)
            problem = Problem(
                file=display_path(link),
                message=f"a symbolic link to {target} ({_resolved(link) or 'a loop of links'}), {OUTSIDE}",
            )
            raise PathNotAllowed("a symbolic link leaves the source roots", [problem])

    def check_tree(self, directory: Path) -> None:
        """Every symbolic link under `directory` (hidden ones included: Helm reads those too),
        following the links that stay inside the roots, as Helm would, each directory once."""
        seen = {directory.resolve()}
        for parent, dirs, files in os.walk(directory, followlinks=True):
            for name in sorted([*dirs, *files]):
                entry = Path(parent) / name
                if entry.is_symlink():
                    self.check_link(entry)
            unseen = []
            for name in dirs:
                real = _resolved(Path(parent) / name)
                if real is not None and real not in seen:
                    seen.add(real)
                    unseen.append(name)
            dirs[:] = unseen

    def outside(self, path: Path) -> str:
        """Why `path` may not be read: outside the roots, through a link when it goes through one."""
        real = _resolved(path)
        if real is None:
            return f"a loop of symbolic links, {OUTSIDE}"
        shown, resolved = display_path(path), display_path(real)
        return OUTSIDE if shown == resolved else f"leads to {resolved}, {OUTSIDE}"


class ContainedCharts:
    """A `ChartRenderer` that renders only charts and values files inside the roots."""

    def __init__(self, engine: ChartRenderer, roots: SourceRoots) -> None:
        self.engine = engine
        self.roots = roots

    def _problem(self, request: ChartRequest, field_path: str, path: Path) -> Problem:
        if request.source is None:
            return Problem(file=display_path(path), message=self.roots.outside(path))
        return problem_at(request.source, field_path, f"{display_path(path)}: {self.roots.outside(path)}")

    def render_chart(self, request: ChartRequest) -> RenderedChart:
        chart_field = f"{request.field}.path"
        self.roots.check_named(request.chart, self._problem(request, chart_field, request.chart))
        for index, values_file in enumerate(request.values_files):
            field_path = f"{request.field}.valuesFiles[{index}]"
            self.roots.check_named(values_file, self._problem(request, field_path, values_file))
        if request.chart.is_dir():
            self.roots.check_tree(request.chart)  # Helm follows the links it finds in a chart
        return self.engine.render_chart(request)
