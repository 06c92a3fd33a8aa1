"""pytest plugin: how the suite is shared between pytest-xdist workers, and which tests run alone.

Register it from ``tests/conftest.py`` (``pytest_plugins = [..., "tests.support.parallel"]``).

``scripts/test.sh`` runs the suite twice over: ``pytest -n N --dist loadgroup --serial-tests=skip``
on every core, then ``pytest --serial-tests=only`` with nothing else running. Each worker is a
process of its own with its own session fixtures (its own kube-apiserver and etcd, Prometheus
servers, wheel, temporary directories and state home), so the workers share only what is outside
pytest: the checkout, the per-user cache of tools and CRDs (read only), and the machine's cores.

Two things follow:

``serial`` tests
    A test that holds a process to a wall-clock bound tight enough that a second worker competing
    for the cores could break it is marked ``serial``. ``--serial-tests=skip`` deselects them (the
    parallel run), ``--serial-tests=only`` runs nothing else (the run after it); the default, ``run``,
    treats them like any other test. Mark a test ``serial`` only for that reason: shared state
    between tests is fixed where it is shared, not hidden by running alone.

Groups
    With ``--dist loadgroup`` xdist sends the tests of one ``xdist_group`` to one worker. A test
    using a fixture of module, class or package scope joins the group of that module (or package),
    so such a fixture is set up once, not once per worker that happens to get one of its tests.
    Tests sharing a session fixture that must not exist twice (the OCI image and its build cache)
    carry an explicit ``@pytest.mark.xdist_group``.
"""

from __future__ import annotations

import pytest

__all__ = ["SERIAL_CHOICES"]

SERIAL_CHOICES = ("run", "skip", "only")
_SHARED_SCOPES = ("module", "class", "package")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--serial-tests",
        choices=SERIAL_CHOICES,
        default="run",
        help="tests marked serial: run them like any other (run, the default), deselect them "
        "(skip: the parallel run of scripts/test.sh) or run only them (only: the run after it)",
    )


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _select_serial(config, items)
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = _shared_fixture_group(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))


def _select_serial(config: pytest.Config, items: list[pytest.Item]) -> None:
    choice = config.getoption("serial_tests")
    if choice == "run":
        return
    keep_serial = choice == "only"
    kept, deselected = [], []
    for item in items:
        is_serial = item.get_closest_marker("serial") is not None
        (kept if is_serial == keep_serial else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def _shared_fixture_group(item: pytest.Item) -> str | None:
    """The module (or package) whose module-, class- or package-scoped fixture `item` uses."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module = item.nodeid.split("::", 1)[0]
    group = None
    for definitions in info.name2fixturedefs.values():
        if not definitions:
            continue
        scope = definitions[-1].scope
        if scope == "package":
            return definitions[-1].baseid or module
        if scope in _SHARED_SCOPES:
            group = module
    return group
