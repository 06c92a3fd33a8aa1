"""The controller's stop signal: delivered twice, the second handler running inside the first
(Python runs a pending handler between any two bytecodes, as while the first one logs), the stop
is one event, reported once at info."""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator

import pytest

from btp_gitops.controller import app
from btp_gitops.controller.app import StopSignal


@pytest.fixture
def restored_handlers() -> Iterator[None]:
    saved = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    yield
    for number, handler in saved.items():
        signal.signal(number, handler)


def test_a_signal_arriving_while_the_first_is_handled_is_not_a_second_stop(
    restored_handlers: None, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = StopSignal()
    info = app.log.info
    nested: list[bool] = []

    def logging_the_first(message: str, *args: object) -> None:
        if not nested:  # the second SIGTERM lands while the first handler logs
            nested.append(True)
            stop._handle(signal.SIGTERM, None)
        info(message, *args)

    monkeypatch.setattr(app.log, "info", logging_the_first)
    with caplog.at_level(logging.DEBUG, logger=app.log.name):
        stop._handle(signal.SIGTERM, None)
    assert stop.event.is_set()
    stopping = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert stopping == [f"received signal {signal.SIGTERM.value}: stopping"]
    already = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert already == [f"received signal {signal.SIGTERM.value}: already stopping"]
