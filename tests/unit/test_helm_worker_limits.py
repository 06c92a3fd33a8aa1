"""The chart worker's memory bound where /proc is not mounted (a bare chroot, as the image tests
run the image): an upper estimate, finite, above what the process holds."""

from __future__ import annotations

import builtins
import resource
from typing import Any

import pytest

from btp_gitops.generator.io import helm_worker


def test_the_address_space_is_read_from_proc_where_it_is_mounted() -> None:
    with open("/proc/self/status", encoding="ascii") as status:
        assert any(line.startswith("VmSize:") for line in status)
    assert helm_worker.address_space_in_use() > 0


def test_without_proc_the_bound_is_an_upper_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = builtins.open

    def no_proc(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith("/proc/"):
            raise FileNotFoundError(2, "No such file or directory", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_proc)
    estimate = helm_worker.address_space_in_use()
    held = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert estimate >= 2 * helm_worker.GO_RESERVATIONS + held
    assert estimate < 2 * helm_worker.GO_RESERVATIONS + held + 64 * helm_worker.MIB
