"""controller.gitstore's queue (`batches.ChangeQueue`) on its own: what the writer takes as one batch,
within the batch window and `max_batch`, with cancelled changes dropped and the stop marker seen;
what it takes while a push is in flight; and what a closed queue or a silent remote answers.
The queue touches no Git: its callers are threads, and these tests are too."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

import pytest

from btp_gitops.controller.gitstore import CommitOutcome, RepoSettings
from btp_gitops.controller.gitstore.batches import ChangeQueue, Request, fail, resolve
from btp_gitops.generator.core.errors import GitError


def nothing(tree: Path) -> str | None:
    return None


def queue_with(**overrides: object) -> ChangeQueue:
    values: dict[str, object] = {"url": "unused", "workdir": Path("unused"), "batch_window": 0.2}
    values.update(overrides)
    return ChangeQueue(RepoSettings(**values))  # type: ignore[arg-type]


def take_batch(changes: ChangeQueue) -> tuple[list[Request], bool]:
    first = changes.first(1.0)
    assert first is not None
    return changes.collect(first)


def test_changes_queued_within_the_window_share_one_batch_in_their_order() -> None:
    changes = queue_with(batch_window=0.3)
    futures = [changes.submit(nothing, f"change {n}") for n in range(3)]
    late = threading.Timer(0.1, lambda: futures.append(changes.submit(nothing, "change 3")))
    late.start()
    batch, stopping = take_batch(changes)
    late.join()
    assert [r.message for r in batch] == ["change 0", "change 1", "change 2", "change 3"]
    assert not stopping
    assert all(f is not None and f.running() for f in futures)


def test_a_change_after_the_window_waits_for_the_next_batch() -> None:
    changes = queue_with(batch_window=0.05)
    changes.submit(nothing, "early")
    threading.Timer(0.4, lambda: changes.submit(nothing, "late")).start()
    batch, _ = take_batch(changes)
    assert [r.message for r in batch] == ["early"]
    assert [r.message for r in take_batch(changes)[0]] == ["late"]


def test_a_batch_holds_at_most_max_batch_changes() -> None:
    changes = queue_with(max_batch=3, batch_window=5.0)
    for n in range(5):
        changes.submit(nothing, f"change {n}")
    started = time.monotonic()
    batch, _ = take_batch(changes)
    assert [r.message for r in batch] == ["change 0", "change 1", "change 2"]
    assert time.monotonic() - started < 2  # full: taken without waiting out the window
    assert [r.message for r in take_batch(changes)[0]] == ["change 3", "change 4"]


def test_a_cancelled_change_is_dropped_and_the_stop_marker_ends_the_batch() -> None:
    changes = queue_with(batch_window=5.0)
    kept = changes.submit(nothing, "kept")
    cancelled = changes.submit(nothing, "cancelled")
    assert kept is not None and cancelled is not None and cancelled.cancel()
    changes.close(stop_marker=True)
    batch, stopping = take_batch(changes)
    assert [r.message for r in batch] == ["kept"]
    assert stopping


def test_a_closed_queue_takes_nothing_and_the_stop_marker_comes_last() -> None:
    changes = queue_with()
    before = changes.submit(nothing, "before")
    changes.close(stop_marker=True)
    assert changes.submit(nothing, "after") is None
    first = changes.first(1.0)
    assert first is not None and first.future is before
    assert changes.first(1.0) is None  # the stop marker
    with pytest.raises(queue.Empty):
        changes.first(0)
    changes.open()
    assert changes.submit(nothing, "reopened") is not None


def test_while_a_push_is_in_flight_the_next_batch_is_taken_for_one_window() -> None:
    changes = queue_with(batch_window=0.1)
    for n in range(2):
        changes.submit(nothing, f"queued {n}")
    busy_until = time.monotonic() + 2.0
    started = time.monotonic()
    requests, stopping = changes.collect_while(lambda: time.monotonic() < busy_until)
    assert [r.message for r in requests] == ["queued 0", "queued 1"]
    assert not stopping
    assert time.monotonic() - started < 1.5  # one window after the first, not the whole push


def test_nothing_is_taken_once_the_push_ended() -> None:
    changes = queue_with()
    changes.submit(nothing, "for the next batch")
    assert changes.collect_while(lambda: False) == ([], False)
    assert [r.message for r in take_batch(changes)[0]] == ["for the next batch"]


def test_the_stop_marker_met_while_a_push_is_in_flight_is_reported() -> None:
    changes = queue_with()
    changes.submit(nothing, "last")
    changes.close(stop_marker=True)
    requests, stopping = changes.collect_while(lambda: True)
    assert [r.message for r in requests] == ["last"]
    assert stopping


def test_failing_what_waits_answers_every_queued_change_and_reports_the_stop_marker() -> None:
    changes = queue_with()
    futures = [changes.submit(nothing, f"change {n}") for n in range(3)]
    changes.close(stop_marker=True)
    error = GitError("the remote does not answer")
    assert changes.fail_waiting(error)
    for future in futures:
        assert future is not None and future.exception(timeout=0) is error
    assert not changes.fail_waiting(error)  # nothing left


def test_resolved_changes_carry_the_commit_only_when_they_changed_something() -> None:
    changes = queue_with()
    changes.submit(nothing, "changed")
    changes.submit(nothing, "unchanged")
    batch, _ = take_batch(changes)
    batch[0].summary = "write a"
    resolve(batch, "c0ffee", 2)
    assert batch[0].future.result(0) == CommitOutcome("c0ffee", "write a", 2)
    assert batch[1].future.result(0) == CommitOutcome(None, None, 2)
    changes.submit(nothing, "failed")
    failed, _ = take_batch(changes)
    fail(failed, GitError("declined"))
    assert str(failed[0].future.exception(0)) == "declined"
