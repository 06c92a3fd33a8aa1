"""Table tests of module resolution (generator.domains.kyma.resolution), one rule per row.

Covered: the desired channel (module, Kyma, `regular`; `none` for a fixed version); classic
resolution by channel or by a fixed version in channel `none`, with the errors for no template
(Warning) and for several (Error, naming the candidates) and the hint for deprecated references by
name or FQDN; ModuleReleaseMeta resolution (channel -> version -> `<module>-<version>`), with its
errors for a missing channel, a missing template and several release metas, and its precedence
over classic templates; beta and internal gating; invalid OCM component names; mandatory modules
(resolved by release meta or highest classic version, ties, missing templates and versions,
invalid component names, each failure naming its catalog object); the entry checks (`none`,
version with channel, duplicates); the catalog checks. Every failure is one module's, in Lifecycle
Manager's state, and its problem points at the Kyma's entry.

Nothing is faked: YAML text in (parsed by PyYAML), the real resolver, values out.
"""

from __future__ import annotations

import pytest
import semver

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.domains.kyma.catalog import build_catalog, foreign_documents
from btp_gitops.generator.domains.kyma.resolution import (
    Resolved,
    Unresolved,
    desired_channel,
    is_lower,
    request_problems,
    resolve_mandatory,
    resolve_module,
    semantic_version,
)
from btp_gitops.generator.domains.kyma.status import ModuleState
from tests.kyma.helpers import HEADER, catalog_of, documents, kyma, release_meta, template

BETA = {"operator.kyma-project.io/beta": "true"}
INTERNAL = {"operator.kyma-project.io/internal": "true"}

CATALOG = catalog_of(
    template("greeter-regular", module="greeter", channel="regular", version="1.0.0"),
    template("greeter-fast", module="greeter", channel="fast", version="1.1.0"),
    template("twin-a", module="twin", channel="regular", version="1.0.0"),
    template("twin-b", module="twin", channel="regular", version="1.0.1"),
    template("shiny-regular", module="shiny", channel="regular", version="0.1.0", labels=BETA),
    template("mixed-stable", module="mixed", channel="regular", version="1.0.0"),
    template("mixed-beta", module="mixed", channel="regular", version="1.1.0", labels=BETA),
    template("vault-regular", module="vault", channel="regular", version="2.0.0", labels=INTERNAL),
    template("greeter-none-1.1.0", module="greeter", channel="none", version="1.1.0"),
    template("auditor-1", module="auditor", version="1.0.0", mandatory=True),
    template(
        "badname-regular",
        module="badname",
        channel="regular",
        version="1.0.0",
        descriptor={"component": {"name": "Example.com/BadName"}},
    ),
    release_meta("nopath", {"regular": "1.0.0"}),
    template("nopath-1.0.0", version="1.0.0", descriptor={"component": {"name": "kyma-project.io"}}),
    template(
        "legacy-template",
        channel="regular",
        version="1.0.0",
        descriptor={"component": {"name": "example.com/legacy"}},
    ),
    release_meta("relay", {"regular": "0.2.0", "fast": "0.3.0"}, ocmComponentName="example.com/relay"),
    template("relay-0.2.0", version="0.2.0"),
    template("relay-0.3.0", version="0.3.0"),
    template("relay-0.4.0", version="0.4.0"),
    release_meta("gone", {"regular": "9.9.9"}),
    release_meta("preview", {"regular": "1.0.0"}, beta=True),
    template("preview-1.0.0", version="1.0.0"),
    release_meta("labelled", {"regular": "1.0.0"}),
    template("labelled-1.0.0", version="1.0.0", labels=INTERNAL),
    release_meta("dual", {"regular": "2.0.0"}),
    template("dual-2.0.0", version="2.0.0"),
    template("dual-classic", module="dual", channel="regular", version="1.0.0"),
    release_meta("core", mandatory={"version": "1.0.0"}),
    template("core-1.0.0", version="1.0.0"),
)


def resolve(spec: str, labels: dict[str, str] | None = None) -> Resolved | Unresolved:
    subject = kyma(spec, labels)
    return resolve_module(CATALOG, subject, subject.modules[0])


RESOLVED = [
    pytest.param(
        "{modules: [{name: greeter}]}",
        None,
        ("greeter-regular", "1.0.0", "regular"),
        id="default-channel-regular",
    ),
    pytest.param(
        "{channel: fast, modules: [{name: greeter}]}",
        None,
        ("greeter-fast", "1.1.0", "fast"),
        id="kyma-channel",
    ),
    pytest.param(
        "{channel: fast, modules: [{name: greeter, channel: regular}]}",
        None,
        ("greeter-regular", "1.0.0", "regular"),
        id="module-channel-over-kyma-channel",
    ),
    pytest.param(
        "{modules: [{name: greeter, version: 1.1.0}]}",
        None,
        ("greeter-none-1.1.0", "1.1.0", "none"),
        id="classic-fixed-version-in-channel-none",
    ),
    pytest.param(
        "{modules: [{name: relay}]}", None, ("relay-0.2.0", "0.2.0", "regular"), id="release-meta-channel"
    ),
    pytest.param(
        "{channel: fast, modules: [{name: relay}]}",
        None,
        ("relay-0.3.0", "0.3.0", "fast"),
        id="release-meta-kyma-channel",
    ),
    pytest.param(
        "{modules: [{name: relay, version: 0.4.0}]}",
        None,
        ("relay-0.4.0", "0.4.0", "none"),
        id="release-meta-fixed-version",
    ),
    pytest.param(
        "{modules: [{name: dual}]}",
        None,
        ("dual-2.0.0", "2.0.0", "regular"),
        id="release-meta-wins-over-classic",
    ),
    pytest.param(
        "{modules: [{name: shiny}]}",
        BETA,
        ("shiny-regular", "0.1.0", "regular"),
        id="beta-template-for-beta-kyma",
    ),
    pytest.param(
        "{modules: [{name: mixed}]}",
        None,
        ("mixed-stable", "1.0.0", "regular"),
        id="beta-candidate-invisible-to-others",
    ),
    pytest.param(
        "{modules: [{name: vault}]}",
        INTERNAL,
        ("vault-regular", "2.0.0", "regular"),
        id="internal-template-for-internal-kyma",
    ),
    pytest.param(
        "{modules: [{name: preview}]}",
        BETA,
        ("preview-1.0.0", "1.0.0", "regular"),
        id="beta-release-meta-for-beta-kyma",
    ),
]


@pytest.mark.parametrize(("spec", "labels", "expected"), RESOLVED)
def test_resolved(spec: str, labels: dict[str, str] | None, expected: tuple[str, str, str]) -> None:
    found = resolve(spec, labels)
    assert isinstance(found, Resolved), found
    assert (found.template.name, found.version, found.channel) == expected


def test_release_meta_resolution_names_its_component_and_why() -> None:
    found = resolve("{channel: fast, modules: [{name: relay}]}")
    assert isinstance(found, Resolved)
    assert found.fqdn == "example.com/relay"
    assert found.how == "ModuleReleaseMeta kyma-system/relay: channel fast has version 0.3.0"


NOT_ALLOWED = "module template not allowed"
WARNING, ERROR = ModuleState.WARNING, ModuleState.ERROR

UNRESOLVED = [
    pytest.param(
        "{modules: [{name: greeter, channel: experimental}]}",
        None,
        "no templates were found: for module greeter in channel experimental (channels with templates: fast, regular)",
        "spec.modules[0].channel",
        WARNING,
        id="classic-no-template-in-channel",
    ),
    pytest.param(
        "{channel: experimental, modules: [{name: greeter}]}",
        None,
        "no templates were found: for module greeter in channel experimental (channels with templates: fast, regular)",
        "spec.channel",
        WARNING,
        id="classic-no-template-in-kyma-channel",
    ),
    pytest.param(
        "{modules: [{name: nothing}]}",
        None,
        "no templates were found: for module nothing in channel regular",
        "spec.modules[0].name",
        WARNING,
        id="classic-unknown-module",
    ),
    pytest.param(
        "{channel: fast, modules: [{name: nothing}]}",
        None,
        "no templates were found: for module nothing in channel fast",
        "spec.modules[0].name",
        WARNING,
        id="classic-unknown-module-points-at-its-name",
    ),
    pytest.param(
        "{modules: [{name: twin}]}",
        None,
        "no unique template could be identified: more than one module template found for module twin in "
        "channel regular: candidates: [kyma-system/twin-a, kyma-system/twin-b]",
        "spec.modules[0].name",
        ERROR,
        id="classic-several-candidates",
    ),
    pytest.param(
        "{modules: [{name: mixed}]}",
        BETA,
        "no unique template could be identified: more than one module template found for module mixed in "
        "channel regular: candidates: [kyma-system/mixed-beta, kyma-system/mixed-stable]",
        "spec.modules[0].name",
        ERROR,
        id="classic-several-candidates-for-beta-kyma",
    ),
    pytest.param(
        "{modules: [{name: greeter, version: 2.0.0}]}",
        None,
        "no templates were found: for module greeter in version 2.0.0 (versions in channel none: 1.1.0)",
        "spec.modules[0].version",
        WARNING,
        id="classic-fixed-version-missing",
    ),
    pytest.param(
        "{modules: [{name: greeter, version: 1.0.0}]}",
        None,
        "no templates were found: for module greeter in version 1.0.0 (versions in channel none: 1.1.0)",
        "spec.modules[0].version",
        WARNING,
        id="classic-fixed-version-only-in-channel-none-not-in-regular",
    ),
    pytest.param(
        "{modules: [{name: legacy-template}]}",
        None,
        "no templates were found: for module legacy-template in channel regular; templates are found by "
        "their spec.moduleName (or, without one, their operator.kyma-project.io/module-name label), "
        "references by template name or FQDN are deprecated and not supported",
        "spec.modules[0].name",
        WARNING,
        id="deprecated-reference-by-name",
    ),
    pytest.param(
        "{modules: [{name: example.com/legacy}]}",
        None,
        "no templates were found: for module example.com/legacy in channel regular; templates are found by "
        "their spec.moduleName (or, without one, their operator.kyma-project.io/module-name label), "
        "references by template name or FQDN are deprecated and not supported",
        "spec.modules[0].name",
        WARNING,
        id="deprecated-reference-by-fqdn",
    ),
    pytest.param(
        "{modules: [{name: relay, channel: experimental}]}",
        None,
        "ModuleReleaseMeta kyma-system/relay has no version for channel experimental (channels: fast, regular)",
        "spec.modules[0].channel",
        ERROR,
        id="release-meta-no-channel-entry",
    ),
    pytest.param(
        "{modules: [{name: gone}]}",
        None,
        "ModuleReleaseMeta kyma-system/gone: channel regular has version 9.9.9, but the catalog has no "
        "ModuleTemplate kyma-system/gone-9.9.9",
        "spec.modules[0].name",
        ERROR,
        id="release-meta-template-missing",
    ),
    pytest.param(
        "{modules: [{name: relay, version: 1.0.0}]}",
        None,
        "version 1.0.0 fixed in spec.modules, but the catalog has no ModuleTemplate kyma-system/relay-1.0.0",
        "spec.modules[0].version",
        ERROR,
        id="release-meta-fixed-version-missing",
    ),
    pytest.param(
        "{modules: [{name: shiny}]}",
        None,
        f"{NOT_ALLOWED}: beta module: template kyma-system/shiny-regular is beta, only a Kyma labelled "
        'operator.kyma-project.io/beta: "true" may use it',
        "spec.modules[0].name",
        ERROR,
        id="beta-template-gated",
    ),
    pytest.param(
        "{modules: [{name: shiny}]}",
        INTERNAL,
        f"{NOT_ALLOWED}: beta module: template kyma-system/shiny-regular is beta, only a Kyma labelled "
        'operator.kyma-project.io/beta: "true" may use it',
        "spec.modules[0].name",
        ERROR,
        id="internal-kyma-is-not-beta",
    ),
    pytest.param(
        "{modules: [{name: vault}]}",
        BETA,
        f"{NOT_ALLOWED}: internal module: template kyma-system/vault-regular is internal, only a Kyma labelled "
        'operator.kyma-project.io/internal: "true" may use it',
        "spec.modules[0].name",
        ERROR,
        id="internal-template-gated",
    ),
    pytest.param(
        "{modules: [{name: preview}]}",
        None,
        f"{NOT_ALLOWED}: beta module: ModuleReleaseMeta kyma-system/preview is beta, only a Kyma labelled "
        'operator.kyma-project.io/beta: "true" may use it',
        "spec.modules[0].name",
        ERROR,
        id="beta-release-meta-gated",
    ),
    pytest.param(
        "{modules: [{name: labelled}]}",
        None,
        f"{NOT_ALLOWED}: internal module: template kyma-system/labelled-1.0.0 is internal, only a Kyma "
        'labelled operator.kyma-project.io/internal: "true" may use it',
        "spec.modules[0].name",
        ERROR,
        id="internal-template-of-release-meta-gated",
    ),
    pytest.param(
        "{modules: [{name: badname}]}",
        None,
        "failed to get descriptor: template kyma-system/badname-regular: spec.descriptor.component.name "
        "'Example.com/BadName' is not a valid OCM component name (a domain, then a path, in lower case, "
        "at most 255 characters)",
        "spec.modules[0].name",
        ERROR,
        id="invalid-ocm-component-name-classic",
    ),
    pytest.param(
        "{modules: [{name: nopath}]}",
        None,
        "failed to get descriptor: template kyma-system/nopath-1.0.0: spec.descriptor.component.name "
        "'kyma-project.io' is not a valid OCM component name (a domain, then a path, in lower case, "
        "at most 255 characters)",
        "spec.modules[0].name",
        ERROR,
        id="invalid-ocm-component-name-release-meta",
    ),
]


@pytest.mark.parametrize(("spec", "labels", "message", "field_path", "state"), UNRESOLVED)
def test_unresolved(
    spec: str, labels: dict[str, str] | None, message: str, field_path: str, state: ModuleState
) -> None:
    found = resolve(spec, labels)
    assert isinstance(found, Unresolved), found
    assert (found.message, found.field_path, found.state) == (message, field_path, state)
    problem = found.problem(kyma(spec, labels))
    assert (problem.file, problem.object_ref, problem.field_path) == (
        "kyma.yaml",
        "Kyma kyma-system/default",
        field_path,
    )
    assert problem.message == f"module {found.module}: {message}"


def test_several_release_metas_named_after_the_module() -> None:
    other = release_meta("relay", {"regular": "0.2.0"}).replace(
        "namespace: kyma-system", "namespace: kcp-system"
    )
    catalog = catalog_of(
        release_meta("relay", {"regular": "0.2.0"}), other, template("relay-0.2.0", version="0.2.0")
    )
    subject = kyma("{modules: [{name: relay}]}")
    found = resolve_module(catalog, subject, subject.modules[0])
    assert found == Unresolved(
        "relay",
        "regular",
        "no unique ModuleReleaseMeta for module relay: candidates: [kcp-system/relay, kyma-system/relay]",
        "spec.modules[0].name",
    )


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("{modules: [{name: a}]}", "regular"),
        ("{channel: fast, modules: [{name: a}]}", "fast"),
        ("{channel: fast, modules: [{name: a, channel: experimental}]}", "experimental"),
        ("{channel: fast, modules: [{name: a, version: 1.0.0}]}", "none"),
    ],
)
def test_desired_channel(spec: str, expected: str) -> None:
    subject = kyma(spec)
    assert desired_channel(subject, subject.modules[0]) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            "{channel: none}", [("spec.channel", "'none' is not a release channel")], id="kyma-channel-none"
        ),
        pytest.param(
            "{modules: [{name: a, channel: none}]}",
            [("spec.modules[0].channel", "'none' is not a release channel")],
            id="module-channel-none",
        ),
        pytest.param(
            "{modules: [{name: a, channel: fast, version: 1.0.0}]}",
            [("spec.modules[0].version", "version and channel are mutually exclusive")],
            id="version-and-channel",
        ),
        pytest.param(
            "{modules: [{name: a}, {name: b}, {name: a}]}",
            [("spec.modules[2].name", "module a is listed twice")],
            id="listed-twice",
        ),
        pytest.param(
            "{channel: fast, modules: [{name: a, version: 1.0.0}]}", [], id="version-with-kyma-channel"
        ),
    ],
)
def test_request_problems(spec: str, expected: list[tuple[str, str]]) -> None:
    subject = kyma(spec)
    problems = request_problems(subject, subject.modules)
    assert [(p.field_path, p.message) for p in problems] == expected
    assert all(p.object_ref == "Kyma kyma-system/default" and p.file == "kyma.yaml" for p in problems)


def test_mandatory_modules_by_release_meta_and_by_highest_template() -> None:
    catalog = catalog_of(
        release_meta("core", mandatory={"version": "1.0.0"}),
        template("core-1.0.0", version="1.0.0"),
        template("core-classic", module="core", version="9.0.0", mandatory=True),
        template("auditor-1.9", module="auditor", version="1.9.0", mandatory=True),
        template("auditor-1.10", module="auditor", version="1.10.0", mandatory=True),
        template("greeter-regular", module="greeter", channel="regular", version="1.0.0"),
    )
    found = resolve_mandatory(catalog)
    assert all(isinstance(r, Resolved) for r in found.values()), found
    resolved = [r for r in found.values() if isinstance(r, Resolved)]
    assert [(r.module, r.template.name, r.version, r.mandatory) for r in resolved] == [
        ("auditor", "auditor-1.10", "1.10.0", True),
        ("core", "core-1.0.0", "1.0.0", True),
    ]
    assert resolved[0].how == "mandatory: template kyma-system/auditor-1.10 is the highest mandatory version"
    assert resolved[1].how == "mandatory: ModuleReleaseMeta kyma-system/core has version 1.0.0"


def _mandatory_failures(*texts: str) -> list[tuple[str, str, str, str]]:
    found = resolve_mandatory(catalog_of(*texts))
    return [
        (r.module, str(r.source.ref if r.source else None), r.field_path, r.message)
        for r in found.values()
        if isinstance(r, Unresolved)
    ]


MANDATORY_FAILURES = [
    pytest.param(
        [release_meta("core", mandatory={"version": "2.0.0"})],
        [
            (
                "core",
                "ModuleReleaseMeta kyma-system/core",
                "spec.mandatory.version",
                "mandatory version 2.0.0 has no ModuleTemplate kyma-system/core-2.0.0 in the catalog",
            )
        ],
        id="release-meta-template-missing",
    ),
    pytest.param(
        [
            template("auditor-a", module="auditor", version="1.0.0", mandatory=True),
            template("auditor-b", module="auditor", version="1.0.0", mandatory=True),
        ],
        [
            (
                "auditor",
                "ModuleTemplate kyma-system/auditor-a",
                "spec.version",
                "no unique mandatory template of module auditor: candidates: [kyma-system/auditor-a, "
                "kyma-system/auditor-b]",
            )
        ],
        id="tied-versions",
    ),
    pytest.param(
        [
            template("warden-1", module="warden", version="1.0.0", mandatory=True),
            template("warden-next", module="warden", mandatory=True),
        ],
        [
            (
                "warden",
                "ModuleTemplate kyma-system/warden-next",
                "spec.version",
                "mandatory template kyma-system/warden-next has no version (spec.version, or the "
                "operator.kyma-project.io/module-version annotation of older templates)",
            )
        ],
        id="template-without-version-is-named",
    ),
    pytest.param(
        [template("lonely", module="lonely", mandatory=True)],
        [
            (
                "lonely",
                "ModuleTemplate kyma-system/lonely",
                "spec.version",
                "mandatory template kyma-system/lonely has no version (spec.version, or the "
                "operator.kyma-project.io/module-version annotation of older templates)",
            )
        ],
        id="the-only-template-without-version",
    ),
    pytest.param(
        [
            template(
                "probe-1",
                module="probe",
                version="1.0.0",
                mandatory=True,
                descriptor={"component": {"name": "probe"}},
            )
        ],
        [
            (
                "probe",
                "ModuleTemplate kyma-system/probe-1",
                "spec.descriptor.component.name",
                "failed to get descriptor: template kyma-system/probe-1: spec.descriptor.component.name "
                "'probe' is not a valid OCM component name (a domain, then a path, in lower case, at most "
                "255 characters)",
            )
        ],
        id="invalid-ocm-component-name",
    ),
]


@pytest.mark.parametrize(("texts", "expected"), MANDATORY_FAILURES)
def test_mandatory_failures_name_the_catalog_object(
    texts: list[str], expected: list[tuple[str, str, str, str]]
) -> None:
    assert _mandatory_failures(*texts) == expected


CATALOG_PROBLEMS = [
    pytest.param(
        template("both", rawManifest={"path": "a"}, chart={"path": "b"}),
        [("spec.chart", "rawManifest and chart are mutually exclusive")],
        id="template-with-manifest-and-chart",
    ),
    pytest.param(
        release_meta("mrm", {"regular": "1.0.0"}, mandatory={"version": "1.0.0"}),
        [("spec", "exactly one of 'mandatory' or 'channels' must be specified")],
        id="release-meta-with-both",
    ),
    pytest.param(
        release_meta("mrm"),
        [("spec", "exactly one of 'mandatory' or 'channels' must be specified")],
        id="release-meta-with-neither",
    ),
    pytest.param(
        release_meta("mrm", {"regular": "1.0.0"}).replace("moduleName: mrm", "moduleName: other"),
        [
            (
                "spec.moduleName",
                "must equal metadata.name ('mrm'): a module's release meta is found by its name",
            )
        ],
        id="release-meta-module-name-differs",
    ),
    pytest.param(
        template("twice") + "---\n" + template("twice"),
        [(None, "given twice: also in catalog.yaml: document 1")],
        id="template-twice",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CATALOG_PROBLEMS)
def test_catalog_problems(text: str, expected: list[tuple[str | None, str]]) -> None:
    _, problems = build_catalog(documents(text))
    assert [(p.field_path, p.message) for p in problems] == expected


def test_a_catalog_directory_holds_catalog_objects_only() -> None:
    given = documents(HEADER + "kind: Kyma\nmetadata: {name: k}\n---\n" + template("t"))
    assert foreign_documents(given) == [
        Problem(
            file="catalog.yaml",
            document=1,
            object_ref="Kyma k",
            field_path="kind",
            message="a --catalog directory holds only ModuleTemplates and ModuleReleaseMetas",
        )
    ]


@pytest.mark.parametrize(
    ("candidate", "installed", "lower"),
    [
        pytest.param("1.0.0", "1.0.1", True, id="patch"),
        pytest.param("1.9.0", "1.10.0", True, id="minor-numerically"),
        pytest.param("1.0.0", "2.0.0", True, id="major"),
        pytest.param("1.0.1", "1.0.0", False, id="higher"),
        pytest.param("1.0.0", "1.0.0", False, id="same"),
        pytest.param("1.0.0-rc.1", "1.0.0", False, id="pre-release-of-the-same-patch"),
        pytest.param("latest", "1.0.0", False, id="candidate-no-semver"),
        pytest.param("1.0.0", "v2", False, id="installed-no-semver"),
        pytest.param("", "", False, id="both-empty"),
    ],
)
def test_is_lower_compares_semver_and_never_fails_on_other_text(
    candidate: str, installed: str, lower: bool
) -> None:
    assert is_lower(candidate, installed) is lower


def test_semantic_version_is_none_for_anything_but_semver() -> None:
    assert semantic_version("1.2.3") == semver.Version(1, 2, 3)
    assert semantic_version("v1.2.3") is None
    assert semantic_version(None) is None  # type: ignore[arg-type]  # a YAML null where text belongs


def test_a_mandatory_template_without_semver_ranks_below_every_release() -> None:
    catalog = catalog_of(
        template("auditor-latest", module="auditor", version="latest", mandatory=True),
        template("auditor-0.0.1", module="auditor", version="0.0.1", mandatory=True),
        template("meter-nightly", module="meter", version="nightly", mandatory=True),
        template("probe-a", module="probe", version="main", mandatory=True),
        template("probe-b", module="probe", version="dev", mandatory=True),
    )
    found = resolve_mandatory(catalog)
    assert [(m, r.template.name) for m, r in found.items() if isinstance(r, Resolved)] == [
        ("auditor", "auditor-0.0.1"),
        ("meter", "meter-nightly"),  # alone: the only candidate, whatever its version says
    ]
    assert [(m, r.message) for m, r in found.items() if isinstance(r, Unresolved)] == [
        (
            "probe",
            "no unique mandatory template of module probe: candidates: [kyma-system/probe-a, kyma-system/probe-b]",
        )
    ]


def test_fqdn_of_the_release_meta_else_of_the_template_and_only_mandatory_when_it_is() -> None:
    catalog = catalog_of(
        release_meta("plain", {"regular": "1.0.0"}, ocmComponentName="example.com/plain-meta"),
        template("plain-1.0.0", version="1.0.0", descriptor={"component": {"name": "example.com/plain"}}),
        template(
            "solo",
            module="solo",
            channel="regular",
            version="1.0.0",
            descriptor={"component": {"name": "example.com/solo"}},
        ),
    )
    subject = kyma("{modules: [{name: plain}, {name: solo}]}")
    plain, solo = (resolve_module(catalog, subject, request) for request in subject.modules)
    assert isinstance(plain, Resolved)
    assert isinstance(solo, Resolved)
    assert (plain.fqdn, plain.mandatory) == ("example.com/plain-meta", False)
    assert (solo.fqdn, solo.mandatory) == ("example.com/solo", False)


def test_no_deprecation_hint_for_a_module_found_by_its_label() -> None:
    catalog = catalog_of(template("meter", module="meter", channel="regular", version="1.0.0"))
    subject = kyma("{modules: [{name: meter, channel: fast}]}")
    found = resolve_module(catalog, subject, subject.modules[0])
    assert isinstance(found, Unresolved)
    assert found.message == (
        "no templates were found: for module meter in channel fast (channels with templates: regular)"
    )


def test_a_release_meta_without_channels_says_none() -> None:
    catalog = catalog_of(release_meta("bare", {}))
    subject = kyma("{modules: [{name: bare}]}")
    found = resolve_module(catalog, subject, subject.modules[0])
    assert isinstance(found, Unresolved)
    assert (
        found.message
        == "ModuleReleaseMeta kyma-system/bare has no version for channel regular (channels: none)"
    )


def test_a_classic_resolution_says_why_by_channel_or_by_version() -> None:
    catalog = catalog_of(
        template("solo", module="solo", channel="regular", version="1.0.0"),
        template("solo-pinned", module="solo", channel="none", version="1.0.0"),
    )
    by_channel = kyma("{modules: [{name: solo}]}")
    by_version = kyma("{modules: [{name: solo, version: 1.0.0}]}")
    found = [resolve_module(catalog, k, k.modules[0]) for k in (by_channel, by_version)]
    assert [(r.template.name, r.channel, r.how) for r in found if isinstance(r, Resolved)] == [
        (
            "solo",
            "regular",
            "template kyma-system/solo: operator.kyma-project.io/module-name=solo, channel regular",
        ),
        (
            "solo-pinned",
            "none",
            "template kyma-system/solo-pinned: operator.kyma-project.io/module-name=solo, version 1.0.0 in "
            "channel none",
        ),
    ]
