"""pytest plugin: how the suite is shared between pytest-xdist workers, and which tests run alone.

Register it from ``tests/conftest.py`` (``pytest_plugins = [..., "tests.support.parallel"]``).

``scripts/test.sh`` runs the suite twice over: ``pytest -n N --serial-tests=skip`` on every core,
then ``pytest --serial-tests=only`` with nothing else running. Each worker is a process of its own
with its own session fixtures (its own kube-apiserver and etcd, Prometheus servers, wheel,
temporary directories and state home), so the workers share only what is outside pytest: the
checkout, the per-user cache of tools and CRDs (read only), and the machine's cores.

Work units (``--dist loadfile``, in the pytest options)
    A test module is one unit, run by one worker: its module- and class-scoped fixtures, and what
    it caches for itself, are set up once, not once per worker. A directory in
    :data:`SHARED_DIRECTORIES` is one unit as a whole: its modules share a session fixture that
    must not exist twice (the OCI image: two workers would build it into the same cache entry of
    ``scripts/build-image.sh`` at once). xdist's own ``--dist loadgroup`` cannot do this here: with
    pytest 9.2 it no longer groups anything (pytest-dev/pytest-xdist#1386).

Order
    Units go to the workers in collection order, and a worker collects the modules holding a test
    marked ``slow`` (minutes: the image, Flux, the 1,000-tenant render) first: started last, one
    would keep a worker busy long after the other ran out of work.

``serial`` tests
    A test that holds a process to a wall-clock bound tight enough that a second worker competing
    for the cores could break it is marked ``serial``. ``--serial-tests=skip`` deselects them (the
    parallel run), ``--serial-tests=only`` runs nothing else (the run after it); the default, ``run``,
    treats them like any other test. Mark a test ``serial`` only for that reason: state shared
    between tests is fixed where it is shared, not hidden by running alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

__all__ = ["SERIAL_CHOICES", "SHARED_DIRECTORIES", "FilesAndSharedDirectories"]

SERIAL_CHOICES = ("run", "skip", "only")
# Directories (relative to the root, with a trailing slash) whose modules form one work unit.
SHARED_DIRECTORIES = ("tests/image/",)


class FilesAndSharedDirectories(LoadFileScheduling):
    """xdist's file-by-file scheduling, with each of SHARED_DIRECTORIES as one unit, in collection
    order."""

    def _split_scope(self, nodeid: str) -> str:
        for directory in SHARED_DIRECTORIES:
            if nodeid.startswith(directory):
                return directory
        return str(super()._split_scope(nodeid))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--serial-tests",
        choices=SERIAL_CHOICES,
        default="run",
        help="tests marked serial: run them like any other (run, the default), deselect them "
        "(skip: the parallel run of scripts/test.sh) or run only them (only: the run after it)",
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadFileScheduling | None:
    if config.getoption("dist") != "loadfile":
        return None  # another mode asked for by name: xdist's own
    # Collection order, not xdist's largest-unit-first (by test count, which says nothing of time).
    config.option.loadscopereorder = False
    return FilesAndSharedDirectories(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _select_serial(config, items)
    if hasattr(config, "workerinput"):  # an xdist worker: the controller hands out its order
        _slow_modules_first(items)


def _select_serial(config: pytest.Config, items: list[pytest.Item]) -> None:
    choice = config.getoption("serial_tests")
    if choice == "run":
        return
    keep_serial = choice == "only"
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        is_serial = item.get_closest_marker("serial") is not None
        (kept if is_serial == keep_serial else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def _slow_modules_first(items: list[pytest.Item]) -> None:
    """Every module (or shared directory) holding a `slow` test before the others, each in place."""

    def unit(item: pytest.Item) -> str:
        module = item.nodeid.split("::", 1)[0]
        return next((d for d in SHARED_DIRECTORIES if module.startswith(d)), module)

    slow = {unit(item) for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: unit(item) not in slow)  # stable: the order within stays
