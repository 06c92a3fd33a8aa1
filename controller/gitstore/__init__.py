"""The controller's writer for the source repository: many concurrent edits, few commits, safe pushes.

The subscription server and the reconcilers describe an edit as a `TreeChange`, a pure function of
the working tree, and `SourceRepo.submit` queues it; one writer thread owns a clone of the remote,
takes the queued changes in batches, applies each batch to the remote's newest tree, makes one
commit of it and pushes that commit by sha, applying the next batch on top while the push is in
flight. A refused push is rebased onto the remote's new head and pushed again, so other writers
(people, CI, other controllers) may push to the same branch at any time without any change being
lost or applied twice, and without any of their commits being lost. A change's future resolves
only once the push carrying it succeeded; Git commands that talk to the remote are killed after
`network_timeout`, and the remote's health, probed when idle, drives readiness.

source_repo   SourceRepo, the face: wires the parts below and delegates to them
interface     RepoSettings, CommitOutcome, RemoteHealth; the TreeChange and TreeTracker protocols
batches       the queue: submissions, batches taken within `batch_window`
writer        the writer thread: a batch to the pipeline, failures contained, the idle probe
pipeline      one batch committed and pushed, the next prepared meanwhile, refusals tried again
apply         a batch applied to the tree and committed (failing changes leave it)
rebase        a refused commit put on the new head: quick (from Git's index) or long (changes again)
clone         the clone: fetch, push, resets, files taken from the remote's head
runner        Git commands: local ones, and network ones killed (group and all) after a timeout
probe         the remote's health and the `git ls-remote` probe
listeners     readers told of new heads and of commits in flight
messages      commit messages, Git's output masked (no credentials)
"""

from btp_gitops.controller.gitstore.batches import Request
from btp_gitops.controller.gitstore.interface import (
    CommitOutcome,
    Footprint,
    RemoteHealth,
    RepoSettings,
    TreeChange,
    TreeTracker,
)
from btp_gitops.controller.gitstore.messages import COMMITTED_BY_TRAILER, commit_message, mask_credentials
from btp_gitops.controller.gitstore.pipeline import backoff
from btp_gitops.controller.gitstore.rebase import directories
from btp_gitops.controller.gitstore.source_repo import SourceRepo

__all__ = [
    "COMMITTED_BY_TRAILER",
    "CommitOutcome",
    "Footprint",
    "RemoteHealth",
    "RepoSettings",
    "SourceRepo",
    "TreeChange",
    "TreeTracker",
    "commit_message",
    "mask_credentials",
]

# The names the tests imported from the single module this package replaced, kept under them.
_Request = Request
_backoff = backoff
_directories = directories
