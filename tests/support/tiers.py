"""pytest plugin: a test that reaches a tier a newcomer's machine may lack must carry its marker.

Register it from ``tests/conftest.py`` (``pytest_plugins = [..., "tests.support.tiers"]``).

The tiers (markers in ``pyproject.toml``):

``kube``
    the real kube-apiserver and etcd (``scripts/build-tools.sh``);
``tools``
    CLIs outside the venv: the Go-built ones (``scripts/build-tools.sh``), Prometheus,
    ssh-keygen, and for the image tests mmdebstrap, umoci and root;
``crds``
    the pinned third-party CRDs (``scripts/fetch-crds.sh``).

``pytest -m "not kube and not tools and not crds"`` must pass on a clone set up with plain
``scripts/setup.sh``. A missing marker would show only there, as a failure far from its cause;
so the helpers that reach a tier call :func:`require_marker`, which fails the running test at
once, on every machine, when it lacks the marker. Tests that use a session fixture of a tier
(``_FIXTURE_TIERS``) are checked before they start: the fixture is set up once, so a check inside
it would see only the first test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

__all__ = ["require_marker"]

_running: list[pytest.Item] = []
# Teardown is not checked: a session fixture is torn down during whichever test ran last, which
# owes the fixture nothing (the image bundle's clean-up ran as root after a wiring test).
_tearing_down: list[bool] = [False]

_FIXTURE_TIERS = {
    "kube_api": ("kube", "the real API server (the kube_api fixture)"),
    "chart_api": ("crds", "the pinned third-party CRDs (the chart_api fixture installs them)"),
    "helm_home": ("tools", "helm3 and helm4 (the helm_home fixture and the streams it renders)"),
    "prometheus_with": ("tools", "Prometheus (the prometheus_with fixture)"),
}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _tearing_down[0] = True
    try:
        return (yield)
    finally:
        _tearing_down[0] = False


def pytest_runtest_setup(item: pytest.Item) -> None:
    for fixture in getattr(item, "fixturenames", ()):
        if fixture in _FIXTURE_TIERS:
            _check(item, *_FIXTURE_TIERS[fixture])


def require_marker(marker: str, needs: str) -> None:
    """Fail the running test unless it is marked `marker`; outside a test (a script) do nothing."""
    if _running and not _tearing_down[0]:
        _check(_running[-1], marker, needs)


def _check(item: pytest.Item, marker: str, needs: str) -> None:
    if item.get_closest_marker(marker) is None:
        pytest.fail(
            f"{item.nodeid} needs {needs} but is not marked @pytest.mark.{marker}: without the mark, "
            f'`pytest -m "not kube and not tools and not crds"` fails on a machine without them',
            pytrace=False,
        )
