"""The names the controller gives consumer tenants it records: made from the application and the
tenant id alone (the same subscription names the same record on every replica), and always a valid
Kubernetes name; and where a tenant's record file goes beside its application's."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from btp_gitops.controller.records import ApplicationRecord, consumer_tenant_name, record_path
from btp_gitops.generator.domains.cap.identity import sha1_hex

FIRST_ID = "7d1c0b9a-8e2f-4a6d-9b3c-5e4f6a7b8c9d"
SECOND_ID = "3a4b5c6d-7e8f-4091-a2b3-c4d5e6f70812"
DNS_1123_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def test_consumer_tenant_names_are_derived_from_the_tenant_id_alone() -> None:
    assert consumer_tenant_name("bookshop", FIRST_ID) == f"bookshop-consumer-{sha1_hex(FIRST_ID)[:8]}"
    assert consumer_tenant_name("bookshop", FIRST_ID) != consumer_tenant_name("bookshop", SECOND_ID)
    app = ApplicationRecord(
        "bookshop", "bookshop", "bookshop", "sub", Path("apps/shop/app.yaml"), (), {}, "p", "pid"
    )
    assert record_path(app, "t") == Path("apps/shop/tenants/t.yaml")


@given(
    application=st.from_regex(r"\A[a-z0-9]([-a-z0-9.]{0,120}[a-z0-9])?\Z"),
    tenant_id=st.text(min_size=1, max_size=80),
)
def test_consumer_tenant_names_are_short_valid_names(application: str, tenant_id: str) -> None:
    name = consumer_tenant_name(application, tenant_id)
    assert DNS_1123_NAME.match(name), name
    assert len(name) <= 63
    assert name == consumer_tenant_name(application, tenant_id)
