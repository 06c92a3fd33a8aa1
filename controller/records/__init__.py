"""The controller's one owner of the source tree's files: CAPApplication, CAPApplicationVersion and
CAPTenant documents read, and records edited.

    index           the one reader: every CAP document of a tree, checked and indexed (`SourceIndex`)
    tree_records    what a CAP document says, as the index answers it (`ApplicationRecord`, ...)
    parsed_files    each YAML file of a tree parsed once, again only when it changed
    working_index   the writer's index of its tree, updated in place per file (`WorkingIndex`)
    editor          the one editor: one document of a file replaced or removed, comments kept, and
                    one policy for a file it cannot cut into documents (refused, never rewritten)
    changes         the change set: subscribe, unsubscribe, operation outcomes, removals (`TreeChange`s)
    unreadable      the one outcome of a tree that cannot be read (`UnreadableSource`)

Import from this package, not its modules.
"""

from btp_gitops.controller.records.changes import (
    FAILURE_STATES,
    TENANTS_DIRECTORY,
    OperationOutcome,
    SubdomainTaken,
    Subscription,
    consumer_tenant_name,
    record_operation_outcome,
    record_path,
    remove_tenant_record,
    remove_version,
    subscribe_tenant,
    unsubscribe_tenant,
)
from btp_gitops.controller.records.editor import DocumentRef, remove_document
from btp_gitops.controller.records.index import SourceIndex
from btp_gitops.controller.records.tree_records import ApplicationRecord, TenantRecord, VersionRecord
from btp_gitops.controller.records.working_index import WorkingIndex

__all__ = [
    "FAILURE_STATES",
    "TENANTS_DIRECTORY",
    "ApplicationRecord",
    "DocumentRef",
    "OperationOutcome",
    "SourceIndex",
    "SubdomainTaken",
    "Subscription",
    "TenantRecord",
    "VersionRecord",
    "WorkingIndex",
    "consumer_tenant_name",
    "record_operation_outcome",
    "record_path",
    "remove_document",
    "remove_tenant_record",
    "remove_version",
    "subscribe_tenant",
    "unsubscribe_tenant",
]
