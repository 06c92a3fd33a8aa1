"""The writer's clone: where its tree is, which commit of the remote it knows, and the Git commands
that move the tree (fetch, reset, push, paths taken from the remote's head).

The clone is the writer's own (one per replica, in `workdir`); its lock (`lock`) is held by the
writer's cycles and by every read, so reads run on a tree that is exactly a commit of the remote.
With a `TreeTracker`, every command that rewrites files tells the tracker which ones."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from pathlib import Path

import git

from btp_gitops.controller.clone_files import discard_beneath
from btp_gitops.controller.gitstore.interface import REMOTE, RepoSettings, TreeTracker, tracking_ref
from btp_gitops.controller.gitstore.messages import detail
from btp_gitops.controller.gitstore.runner import MISSING_BRANCH_MARKERS, REJECTION_MARKERS, GitRunner
from btp_gitops.generator.core import GitError

log = logging.getLogger(__name__)

# A rejection because the branch moved since our fetch: Git's own check before sending
# (`[rejected]`, "fetch first", "non-fast-forward"), or the remote's, when another push updated the
# branch while ours was in flight ("cannot lock ref ...: is at X but expected Y", reported as
# `[remote rejected] ... (failed to update ref)`). Any other `[remote rejected]` is the remote
# declining the push whatever the branch (a hook, a protection rule).
_LOST_RACE_MARKERS = ("[rejected]", "non-fast-forward", "fetch first", "but expected", "cannot lock ref")
# Git's words for a connection lost after the push may have been sent: the remote may have taken it.
# (A refused connection, an unknown host or an HTTP error status are answers: nothing landed.)
_LOST_CONNECTION_MARKERS = (
    "hung up unexpectedly",
    "rpc failed",
    "connection reset",
    "broken pipe",
    "early eof",
    "transfer closed",
    "empty reply from server",
)


class PushUnanswered(GitError):
    """The connection was lost during a push: it may have landed."""


class PushRejected(Exception):
    """The remote refused the push; `detail` is Git's masked explanation. `lost_race`: because
    another writer moved the branch first (not a hook or the remote's policy declining it)."""

    def __init__(self, detail: str, *, lost_race: bool | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.lost_race = (
            any(marker in detail for marker in _LOST_RACE_MARKERS) if lost_race is None else lost_race
        )


def remove_stale_locks(git_dir: Path) -> None:
    """Remove the lock files a Git command killed mid-way left in a clone this process now owns.

    Only called when the writer opens its clone, before it runs any Git command there: the workdir
    is the writer's own (one per replica), so a lock found then belongs to a process that is gone,
    e.g. a container killed by the OOM killer with its Git children, whose emptyDir (and clone)
    the restarted container reuses. Left in place, `index.lock` makes every checkout fail and the
    process could never start again. Git writes objects and refs to a temporary file and renames
    it, so what a killed command leaves is a lock, never a half-written object."""
    for lock in sorted(git_dir.rglob("*.lock")):  # index, HEAD, config, packed-refs, refs, ...
        if lock.is_file():
            lock.unlink()
            log.warning(
                "removed %s, left behind by a Git command that did not finish", lock.relative_to(git_dir)
            )


def chunks(paths: list[str], size: int = 200) -> Iterable[list[str]]:
    for start in range(0, len(paths), size):
        yield paths[start : start + size]


class Clone:
    """The clone in `settings.workdir` and what the writer knows of it: `head`, the last commit
    known to be on the remote's branch; `pristine`, the tree is exactly that commit with nothing
    else in it; `moves`, how many times the tree was reset (a reader may move it between batches)."""

    def __init__(self, settings: RepoSettings, runner: GitRunner, remote: str) -> None:
        self.settings = settings
        self.tree = settings.workdir
        self.runner = runner
        self.tracker: TreeTracker | None = None
        self.lock = threading.Lock()  # the working tree: the writer's cycles and every read
        self.head = ""
        self.pristine = False  # the tree is exactly origin/<branch>, nothing else in it
        self.moves = 0  # resets of the tree so far
        self.last_fetch_started = float("-inf")
        self._remote = remote
        self._tracking = tracking_ref(settings)

    @property
    def tracking(self) -> str:
        return self._tracking

    def open(self) -> None:
        """Open (or create) the clone and check out the remote's newest commit. Raises GitError when
        the remote or its branch cannot be read."""
        self.runner.repo = self._open_repo()
        self.fetch()
        self.runner.run(
            "checkout", "--quiet", "--force", "--no-track", "-B", self.settings.branch, self._tracking
        )
        self.runner.run("clean", "-ffdxq")
        self.pristine = True

    def close(self) -> None:
        if self.runner.repo is not None:
            self.runner.repo.close()
            self.runner.repo = None

    def _open_repo(self) -> git.Repo:
        """The clone in `workdir`, created when missing, with `origin` pointing at the remote.

        The URL goes into the clone's configuration through gitpython's config writer rather than a
        `git remote` command line, which gitpython would log with any credentials in it."""
        workdir = self.tree
        try:
            if (workdir / ".git").is_dir():
                remove_stale_locks(workdir / ".git")
                repo = git.Repo(workdir)
            elif workdir.exists() and any(workdir.iterdir()):
                raise GitError(f"{workdir} is neither empty nor a clone of {self._remote}")
            else:
                workdir.mkdir(parents=True, exist_ok=True)
                repo = git.Repo.init(workdir, initial_branch=self.settings.branch)
            with repo.config_writer() as config:
                section = f'remote "{REMOTE}"'
                config.set_value(section, "url", self.settings.url)
                config.set_value(section, "fetch", f"+refs/heads/*:refs/remotes/{REMOTE}/*")
        except (git.GitError, OSError) as error:
            raise GitError(
                f"cannot open a clone of {self._remote} in {workdir}: {type(error).__name__}"
            ) from error
        return repo

    # --- the remote -------------------------------------------------------------------------------

    def fetch(self) -> None:
        started = time.monotonic()
        branch = self.settings.branch
        # The one branch, nothing else: no tags, no FETCH_HEAD, no check for forced updates (the
        # refspec forces), no housekeeping afterwards (`git commit` runs it): a rebase pushes
        # right after this fetch, and every command in between is time for a competitor.
        status, out, err = self.runner.network(
            "fetch", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-show-forced-updates",
            "--no-auto-maintenance", REMOTE, f"+refs/heads/{branch}:{self._tracking}",
        )  # fmt: skip
        if status != 0:
            if any(marker in err for marker in MISSING_BRANCH_MARKERS):
                raise GitError(f"branch {branch} does not exist on {self._remote}")
            raise GitError(f"cannot fetch branch {branch} from {self._remote}: {detail(err or out)}")
        self.head = self._tracked_head()
        self.last_fetch_started = started

    def _tracked_head(self) -> str:
        """The sha `origin/<branch>` names, read by gitpython from the ref files (no Git process);
        `git rev-parse` when they cannot be read so."""
        try:
            sha = git.SymbolicReference.dereference_recursive(self.runner.require(), self._tracking)
        except (ValueError, OSError, git.GitError):
            sha = ""
        if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha or ""):
            return sha
        return self.runner.run("rev-parse", "--verify", self._tracking)

    def push(self, commit: str) -> None:
        """Push `commit` (by sha, so a commit made meanwhile cannot slip into it) to the branch.
        PushRejected when the remote refused it, PushUnanswered when the connection was lost on
        the way (it may have landed), GitTimeout or GitError otherwise."""
        branch = self.settings.branch
        status, out, err = self.runner.network(
            "push", "push", "--quiet", REMOTE, f"{commit}:refs/heads/{branch}"
        )
        if status == 0:
            return
        output = f"{err}\n{out}"
        if any(marker in output for marker in REJECTION_MARKERS):
            raise PushRejected(detail(output))
        if any(marker in output.lower() for marker in _LOST_CONNECTION_MARKERS):
            raise PushUnanswered(f"the connection to {self._remote} was lost during a push: {detail(output)}")
        raise GitError(f"cannot push branch {branch} to {self._remote}: {detail(output)}")

    # --- the tree ---------------------------------------------------------------------------------

    def local_head(self) -> str:
        return self.runner.run("rev-parse", "--verify", "HEAD")

    def reset_to_remote(self) -> None:
        """The tree exactly at the remote's commit; the tracker learns which files that rewrote."""
        if self.pristine and self.local_head() == self.head:
            return  # nothing to rewrite: the files (and what the tracker knows of them) stay
        self.reset_to(self._tracking)
        self.pristine = True

    def reset_to(self, target: str) -> None:
        """The tree (and the local branch) exactly at `target`, nothing else in it; the tracker
        learns which files that rewrote."""
        changed: list[str] | None = None
        if self.tracker is not None:
            try:
                changed = sorted({*self.status_paths(), *self.changed_paths("HEAD", target)})
            except GitError:
                changed = None  # the tracker reads the whole tree again
        self.pristine = False
        self.moves += 1
        self.runner.run("reset", "--quiet", "--hard", target)
        self.runner.run("clean", "-ffdxq")
        self.rewritten(changed)

    def restore_quietly(self) -> None:
        """After a failed cycle: back to the remote's commit, or marked for a reset before any read."""
        try:
            self.reset_to_remote()
        except GitError as error:
            self.pristine = False
            log.warning("cannot reset the clone of %s: %s", self._remote, error.message)

    def take_from_head(self, paths: Iterable[str]) -> None:
        """The working tree's `paths` as the remote's head holds them (gone when it does not)."""
        wanted = sorted(set(paths))
        if not wanted:
            return
        present = set(self.tree_paths(self._tracking, wanted))
        for chunk in chunks([p for p in wanted if p in present]):
            self.runner.run("checkout", "--quiet", self._tracking, "--", *chunk)
        for path in wanted:
            if path not in present:
                discard_beneath(self.tree, path)  # nothing beyond a link in the clone is touched

    def tree_paths(self, commit: str, paths: list[str]) -> list[str]:
        """Those of `paths` that `commit` holds."""
        found: list[str] = []
        for chunk in chunks(paths):
            out = self.runner.run("ls-tree", "-z", "--name-only", "--full-tree", commit, "--", *chunk)
            found += [p for p in out.split("\0") if p]
        return found

    def changed_paths(self, old: str, new: str) -> list[str]:
        out = self.runner.run("diff", "--name-only", "--no-renames", "-z", old, new, "--")
        return [p for p in out.split("\0") if p]

    def status_paths(self) -> list[str]:
        """Files of the working tree that differ from HEAD (untracked ones included)."""
        out = self.runner.run("status", "--porcelain", "-z", "--untracked-files=all", "--no-renames")
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3]

    def is_ancestor(self, commit: str, ref: str) -> bool:
        status, out, err = self.runner.execute("merge-base", "--is-ancestor", commit, ref)
        if status not in (0, 1):
            raise GitError(f"git merge-base failed for {self._remote}: {detail(err or out)}")
        return status == 0

    # --- the tracker of the tree ------------------------------------------------------------------

    def open_tracker(self) -> None:
        if self.tracker is not None:
            self.tracker.open(self.tree)

    def close_tracker(self) -> None:
        if self.tracker is not None:
            self.tracker.close()

    def rewritten(self, paths: Iterable[str] | None) -> AbstractSet[Hashable]:
        """Tell the tracker Git rewrote `paths` (None: any); the keys their files answer(ed)."""
        return self.tracker.rewritten(paths) if self.tracker is not None else frozenset()
