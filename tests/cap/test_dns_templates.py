"""DNS templates of Custom-mode domains: the Go template subset with Sprig functions (issue 20).

Covers, as tables: what templates render to (the upstream documentation's templates, the issue's
`{{list "*" .domain | join "."}}`, every supported function, pipelines, parenthesised pipelines,
variables, `$`, trim markers, comments, string literals); what is refused and with which message
(other functions and actions by name, unknown variables, wrong arguments, values past the size
bound); and, through the real pipeline, the DNSEntries of examples/cap-app's templated
ClusterDomain field by field and a refused template reported at its file, object and field.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from btp_gitops.generator.core.errors import InvalidSpec
from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.domains.cap.templates import MAX_TEMPLATE, MAX_VALUE, TemplateError, parse, render
from tests.cap.conftest import CAP_APP, objects_of, render_result

VALUES = {
    "domain": "my.cluster.shoot.url.k8s.example.com",
    "dnsTarget": "public-ingress.cluster.domain",
    "subDomain": "tenant-a",
}

RENDERED = [
    # the upstream documentation's templates
    ("*.{{ .domain }}", "*.my.cluster.shoot.url.k8s.example.com"),
    ("{{ .dnsTarget }}", "public-ingress.cluster.domain"),
    ("{{ .subDomain }}.{{ .domain }}", "tenant-a.my.cluster.shoot.url.k8s.example.com"),
    ("{{ .subDomain }}.myapp.com", "tenant-a.myapp.com"),
    ("{{.subDomain}}.{{.domain}}", "tenant-a.my.cluster.shoot.url.k8s.example.com"),
    # Sprig functions and pipelines
    ('{{list "*" .domain | join "."}}', "*.my.cluster.shoot.url.k8s.example.com"),
    ('{{ join "." (list .subDomain "apps" "example.org") }}', "tenant-a.apps.example.org"),
    ('{{ join "-" "single" }}', "single"),
    ('{{ list "a" .subDomain }}', "[a tenant-a]"),
    ("{{ .subDomain | upper }}", "TENANT-A"),
    ('{{ "MiXeD" | lower }}', "mixed"),
    ('{{ "  padded  " | trim }}x', "paddedx"),
    ('{{ .domain | trimSuffix ".example.com" }}', "my.cluster.shoot.url.k8s"),
    ('{{ trimPrefix "my." .domain }}', "cluster.shoot.url.k8s.example.com"),
    ('{{ .domain | replace "." "-" }}', "my-cluster-shoot-url-k8s-example-com"),
    ('{{ .subDomain | replace "-" "" | upper | lower }}.x', "tenanta.x"),
    # variables, $, trim markers, comments, literals
    ("{{ $d := .domain }}{{ $d }}", "my.cluster.shoot.url.k8s.example.com"),
    ('{{ $d := "a" }}{{ $d = "b" }}{{ $d }}', "b"),
    ("{{ $.subDomain }}", "tenant-a"),
    ('{{ $parts := list .subDomain "shop" }}{{ $parts | join "." }}', "tenant-a.shop"),
    ("a {{- .subDomain -}} b", "atenant-ab"),
    ("{{/* a comment */}}{{ .subDomain }}", "tenant-a"),
    ("{{ `raw\\n` }}", "raw\\n"),
    ('{{ "quoted \\"x\\"" }}', 'quoted "x"'),
    ("plain.example.com", "plain.example.com"),
    ("a}}b.{{ .subDomain }}", "a}}b.tenant-a"),  # `}}` outside an action is text, as in Go
]


@pytest.mark.parametrize(("text", "expected"), RENDERED)
def test_rendered(text: str, expected: str) -> None:
    assert render(text, VALUES) == expected


SUPPORTED = "(supported: join, list, lower, replace, trim, trimPrefix, trimSuffix, upper)"

REFUSED = [
    ('{{ printf "%s" .domain }}', f"function 'printf' is not supported {SUPPORTED}"),
    ("{{ .domain | sha256sum }}", f"function 'sha256sum' is not supported {SUPPORTED}"),
    ('{{ env "HOME" }}', f"function 'env' is not supported {SUPPORTED}"),
    ("{{ if .domain }}x{{ end }}", "{{if}} is not supported: DNS templates take no control actions"),
    ("{{ range .domain }}{{ end }}", "{{range}} is not supported: DNS templates take no control actions"),
    ('{{ template "x" }}', "{{template}} is not supported: DNS templates take no control actions"),
    ("{{ .tenant }}", "unknown variable .tenant (available: .domain, .dnsTarget, .subDomain)"),
    ("{{ .domain.host }}", "unknown variable .domain.host (available: .domain, .dnsTarget, .subDomain)"),
    ("{{ . }}", "`.` alone is the whole data; use one of .domain, .dnsTarget, .subDomain"),
    ("{{ $ }}", "`$` alone is the whole data; use one of .domain, .dnsTarget, .subDomain"),
    ("{{ $x }}", "undefined variable $x"),
    ('{{ $x = "a" }}', "undefined variable $x"),
    ("{{ 3 }}", "'3' is not supported (only string literals, variables and functions)"),
    ("{{ true }}", "true is not supported (only string literals)"),
    (
        "{{ lower (list .domain) }}",
        "lower: argument 1 must be a string, got the list [my.cluster.shoot.url.k8s.example.com]",
    ),
    ('{{ replace "a" .domain }}', "replace takes 3 arguments, got 2"),
    ("{{ .domain .subDomain }}", "only a function takes arguments (or a piped value)"),
    ("{{ .domain | .subDomain }}", "only a function takes arguments (or a piped value)"),
    ('{{ join "." list }}', "function 'list' used as an argument: put it in parentheses"),
    ("{{ join (list .domain }}", "unclosed parenthesis"),
    ("{{ .domain ", "unclosed action: {{ without }}"),
    ("{{ .domain | }}", "missing value in pipeline"),
    ('{{ "\\q" }}', 'unsupported escape \\q in "\\q"'),
    ("{{ ((((((((((((((((((.domain)))))))))))))))))) }}", "parentheses nested more than 16 deep"),
    ("x" * (MAX_TEMPLATE + 1), f"longer than {MAX_TEMPLATE} characters"),
    (
        '{{ $d := replace "." .domain .domain }}{{ $d = replace "." $d $d }}{{ $d }}',
        f"a value grows past {MAX_VALUE} characters",
    ),
    ("{{ .domain }}" * 30, f"renders more than {MAX_VALUE} characters"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_refused(text: str, message: str) -> None:
    with pytest.raises(TemplateError) as raised:
        render(text, VALUES)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("*.{{ .domain }}", {"domain"}),
        ('{{ list .subDomain "x" | join "." }}', {"subDomain"}),
        ("{{ $.subDomain }}.{{ .dnsTarget }}", {"subDomain", "dnsTarget"}),
        ("static", set()),
    ],
)
def test_fields_read_decide_subdomain_expansion(text: str, fields: set[str]) -> None:
    assert parse(text).fields == fields


# --- through the pipeline ----------------------------------------------------------------------------


def _dns_entries(files: dict[str, str]) -> dict[str, list[tuple[str, list[str]]]]:
    """app directory -> (dnsName, targets) of its DNSEntries of the templated ClusterDomain."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for path, obj in objects_of(files).items():
        if (
            obj["kind"] == "DNSEntry"
            and obj["metadata"]["annotations"]["sme.sap.com/owner-identifier"] == "shops-external"
        ):
            found.setdefault(app_path(path).app, []).append((obj["spec"]["dnsName"], obj["spec"]["targets"]))
    return {app: sorted(entries) for app, entries in sorted(found.items())}


def test_example_templates_with_functions_render_dns_entries() -> None:
    entries = _dns_entries(render_result(CAP_APP).files)
    assert entries == {
        # `{{ list "*" .domain | join "." }}` reads no subdomain: one record, the domain's
        "cap-clusterdomain.shops-external": [("*.shops.example.net", ["public-ingress.apps.example.com"])],
        # `{{ .subDomain | lower }}.{{ .domain | replace ".net" ".org" }}`: one per served tenant
        "cap-tenant.bookshop.acme": [("acme.shops.example.org", ["acme.shops.example.net"])],
        "cap-tenant.bookshop.bookshop-provider": [
            ("bookshop-provider.shops.example.org", ["bookshop-provider.shops.example.net"])
        ],
        "cap-tenant.bookshop.globex": [("globex.shops.example.org", ["globex.shops.example.net"])],
    }


def _broken_example(tmp_path: Path, name: str) -> Path:
    source = tmp_path / "source"
    shutil.copytree(CAP_APP, source)
    path = source / "domains.yaml"
    documents: list[dict[str, Any]] = list(yaml.safe_load_all(path.read_text()))
    documents[1]["spec"]["dnsTemplates"][1]["name"] = name
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return source


def test_a_refused_template_is_reported_at_its_file_object_and_field(tmp_path: Path) -> None:
    source = _broken_example(tmp_path, "{{ .subDomain | b64enc }}.{{ .domain }}")
    with pytest.raises(InvalidSpec) as raised:
        render_result(source)
    assert [(p.file, p.object_ref, p.field_path, p.message) for p in raised.value.problems] == [
        (
            str(source / "domains.yaml"),
            "ClusterDomain shops-external",
            "spec.dnsTemplates[1].name",
            f"Go template: function 'b64enc' is not supported {SUPPORTED}",
        )
    ]


def test_a_template_one_subdomain_makes_too_long_is_refused_at_render(tmp_path: Path) -> None:
    """Validation renders every template with the longest subdomain; a value that only a given
    subdomain makes grow past the bound is refused when that subdomain's record is rendered."""
    source = _broken_example(tmp_path, '{{ replace "a" (list .domain .domain | join "") .subDomain }}')
    long_a = "aza" * 16  # 32 a: each one becomes both domains
    tenant = yaml.safe_load((source / "tenants" / "globex.yaml").read_text())
    tenant["metadata"]["name"] = "aaa"
    tenant["spec"].update(subDomain=long_a, tenantId="aaaaaaaa-0000-4000-8000-000000000001")
    tenant["metadata"].pop("labels", None)
    tenant["metadata"].pop("annotations", None)
    (source / "tenants" / "aaa.yaml").write_text(yaml.safe_dump(tenant, sort_keys=False))
    with pytest.raises(InvalidSpec) as raised:
        render_result(source)
    assert [(p.object_ref, p.field_path, p.message) for p in raised.value.problems] == [
        (
            "ClusterDomain shops-external",
            "spec.dnsTemplates[1].name",
            f"subdomain {long_a}: a value grows past {MAX_VALUE} characters",
        )
    ]


# --- any text: a value or a TemplateError, never anything else -----------------------------------

_PIECES = [
    "{{",
    "}}",
    "{{-",
    "-}}",
    " ",
    ".",
    ".domain",
    ".subDomain",
    ".x",
    "$",
    "$v",
    ":=",
    "=",
    "|",
    "(",
    ")",
    '"',
    '"a"',
    "`b`",
    "\\",
    "list",
    "join",
    "lower",
    "replace",
    "if",
    "printf",
    "3",
    "/*",
    "*/",
    "*",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), max_size=24).map("".join))
def test_any_text_renders_or_is_refused(text: str) -> None:
    try:
        rendered = render(text, VALUES)
    except TemplateError as error:
        assert str(error)
    else:
        assert isinstance(rendered, str) and len(rendered) <= MAX_VALUE
