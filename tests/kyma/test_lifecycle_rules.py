"""Table tests of Lifecycle Manager's rules as the Kyma plan applies them (domains.kyma.render).

Catalogs are written like the examples of Lifecycle Manager's docs (a ModuleTemplate
`<module>-<version>` with `spec.moduleName`, a ModuleReleaseMeta with `spec.channels`). One rule
per table:

- template lookup by `spec.moduleName`, the module-name label only when `moduleName` is empty;
- a fixed version looked up in channel `none` (and through the release meta), reported as `none`,
  and refused below the version recorded as installed;
- restricted modules: a release meta's `spec.kymaSelector` (label selector semantics);
- a mandatory module also listed in `spec.modules`: the entry is not eligible, the module is
  rendered as mandatory;
- per-module failure: the module keeps its previous app, is reported, the others are planned;
- removal of a module no longer asked for: default CR first, the module's resources next; refused
  beside an entry that cannot be resolved (a misspelt name) unless the Kyma or the flag allows it;
- maintenance: requiring downtime without a policy is an Error, not an upgrade.

Nothing is faked: YAML text in (parsed by PyYAML), the real planner, plans and reports out.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.errors import ModuleRemovalRefused
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.core.validation import problems_in
from btp_gitops.generator.domains.kyma.maintenance import PolicyText
from btp_gitops.generator.domains.kyma.record import RECORD_FILE, read_record
from btp_gitops.generator.domains.kyma.render import KymaContext, KymaPlan, plan_kyma_modules
from btp_gitops.generator.domains.kyma.selector import SelectorError, restricted_match
from btp_gitops.generator.domains.kyma.status import ModuleStatus
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.transforms.ordering import FluxStage, Stage, stage_of_directory, stage_steps
from tests.kyma.helpers import documents, release_meta

WEDNESDAY = datetime(2025, 10, 8, 12, 0, tzinfo=UTC)


def module_template(
    module: str, version: str, *, name: str | None = None, labels: dict[str, str] | None = None, **spec: Any
) -> str:
    """A ModuleTemplate as Lifecycle Manager's docs show one: `<module>-<version>`, spec.moduleName."""
    body = {
        "apiVersion": "operator.kyma-project.io/v1beta2",
        "kind": "ModuleTemplate",
        "metadata": {
            "name": name or f"{module}-{version}",
            "namespace": "kyma-system",
            "labels": labels or {},
        },
        "spec": {
            "moduleName": module,
            "version": version,
            "data": {
                "apiVersion": "operator.kyma-project.io/v1alpha1",
                "kind": "Sample",
                "metadata": {"name": f"{module}-sample"},
            },
            "descriptor": {"component": {"name": f"kyma-project.io/module/{module or name}"}},
            **spec,
        },
    }
    if not module:
        del body["spec"]["moduleName"]
    return yaml.safe_dump(body, sort_keys=False)


def kyma_text(
    modules: list[dict[str, Any]], labels: dict[str, str] | None = None, channel: str = "regular"
) -> str:
    body = {
        "apiVersion": "operator.kyma-project.io/v1beta2",
        "kind": "Kyma",
        "metadata": {"name": "default", "namespace": "kyma-system", "labels": labels or {}},
        "spec": {"channel": channel, "modules": modules},
    }
    return yaml.safe_dump(body, sort_keys=False)


def recorded(*modules: dict[str, Any]) -> dict[str, str]:
    """A previous render: its record, and one file in each recorded module's app."""
    record = {"kyma": "kyma-system/default", "modules": list(modules)}
    files = {RECORD_FILE: json.dumps(record)}
    for module in modules:
        if module.get("app"):
            files[f"{module['app']}/deployment-{module['name']}.yaml"] = (
                f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {module['name']}\n"
                "  namespace: kyma-system\n"
            )
            if module.get("resource"):
                resource = module["resource"]
                files[f"{module['app']}/{resource['kind'].lower()}-{resource['metadata']['name']}.yaml"] = (
                    f"apiVersion: {resource['apiVersion']}\nkind: {resource['kind']}\nmetadata:\n"
                    f"  name: {resource['metadata']['name']}\n  namespace: kyma-system\n"
                )
    return files


def installed(name: str, version: str, channel: str = "regular", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "state": "Ready",
        "channel": channel,
        "version": version,
        "fqdn": f"kyma-project.io/module/{name}",
        "template": {"metadata": {"name": f"{name}-{version}", "namespace": "kyma-system"}},
        "app": f"kyma-{name}",
        "mandatory": False,
        **extra,
    }


def plan(
    kyma: str,
    *catalog: str,
    previous: dict[str, str] | None = None,
    policy: str | None = None,
    restricted: frozenset[str] = frozenset(),
    allow_removal: bool = False,
) -> KymaPlan:
    sources: list[SourceDocument] = documents(kyma, file="kyma.yaml", directory=Path("/src"))
    context = KymaContext(
        catalog=tuple(documents("---\n".join(catalog))),
        maintenance_policy=PolicyText("policy.json", policy) if policy is not None else None,
        at=WEDNESDAY,
        previous=previous or {},
        where="clusters/default",
        restricted_modules=restricted,
        allow_module_removal=allow_removal,
    )
    return plan_kyma_modules(SourceSet.of(sources), context)


def statuses(result: KymaPlan) -> dict[str, ModuleStatus]:
    (report,) = result.reports
    return {status.name: status for status in report.modules}


# --- Template lookup: spec.moduleName, the label only when moduleName is empty ---------------------

LOOKUP_CATALOG = (
    module_template("example-module", "1.0.0", channel="regular"),
    # moduleName wins over the label: this template is serverless's, not keda's
    module_template(
        "serverless",
        "1.1.0",
        channel="regular",
        labels={"operator.kyma-project.io/module-name": "keda"},
    ),
    # no moduleName: the label names the module
    module_template(
        "",
        "2.0.0",
        name="keda-regular",
        channel="regular",
        labels={"operator.kyma-project.io/module-name": "keda"},
    ),
    # the label alone does not make a template with a moduleName belong to another module
    module_template(
        "api-gateway", "3.0.0", channel="regular", labels={"operator.kyma-project.io/module-name": "gateway"}
    ),
)

LOOKUP = [
    pytest.param("example-module", ("Ready", "example-module-1.0.0", ""), id="by-module-name"),
    pytest.param("serverless", ("Ready", "serverless-1.1.0", ""), id="module-name-wins-over-label"),
    pytest.param("keda", ("Ready", "keda-regular", ""), id="label-when-module-name-is-empty"),
    pytest.param("api-gateway", ("Ready", "api-gateway-3.0.0", ""), id="module-name-with-another-label"),
    pytest.param(
        "gateway",
        (
            "Warning",
            None,
            'no templates were found: for module gateway in channel regular (did you mean "api-gateway"?)',
        ),
        id="label-ignored-when-module-name-is-set",
    ),
]


@pytest.mark.parametrize(("module", "expected"), LOOKUP)
def test_template_lookup(module: str, expected: tuple[str, str | None, str]) -> None:
    status = statuses(plan(kyma_text([{"name": module}]), *LOOKUP_CATALOG))[module]
    state, template, message = expected
    assert (str(status.state), status.template.name if status.template else None) == (state, template)
    if message:
        assert status.message == message


# --- Fixed versions: channel none, through the release meta, never below the installed one --------

VERSION_CATALOG = (
    module_template("keda", "1.0.0", name="keda-regular", channel="regular"),
    module_template("keda", "1.1.0", name="keda-none-1.1.0", channel="none"),
    module_template("keda", "1.2.0", name="keda-fast", channel="fast"),
    release_meta("serverless", {"regular": "2.0.0"}, ocmComponentName="kyma-project.io/module/serverless"),
    module_template("serverless", "2.0.0"),
    module_template("serverless", "1.9.0"),
)

FIXED_VERSIONS = [
    pytest.param(
        {"name": "keda", "version": "1.1.0"},
        None,
        ("Ready", "1.1.0", "none", "keda-none-1.1.0"),
        id="classic",
    ),
    pytest.param(
        {"name": "keda", "version": "1.2.0"},
        None,
        ("Warning", "", "none", None),
        id="classic-version-of-another-channel-is-not-found",
    ),
    pytest.param(
        {"name": "serverless", "version": "1.9.0"},
        None,
        ("Ready", "1.9.0", "none", "serverless-1.9.0"),
        id="through-the-release-meta",
    ),
    pytest.param(
        {"name": "keda", "version": "1.1.0"},
        installed("keda", "1.2.0", "fast"),
        ("Warning", "1.2.0", "fast", "keda-1.2.0"),
        id="lower-than-installed-is-refused",
    ),
    pytest.param(
        {"name": "serverless", "version": "1.9.0"},
        installed("serverless", "2.0.0"),
        ("Warning", "2.0.0", "regular", "serverless-2.0.0"),
        id="lower-than-installed-through-the-release-meta-is-refused",
    ),
    pytest.param(
        {"name": "keda", "version": "1.1.0"},
        installed("keda", "1.0.0"),
        ("Ready", "1.1.0", "none", "keda-none-1.1.0"),
        id="higher-than-installed",
    ),
]


@pytest.mark.parametrize(("entry", "before", "expected"), FIXED_VERSIONS)
def test_fixed_versions(
    entry: dict[str, str], before: dict[str, Any] | None, expected: tuple[str, str, str, str | None]
) -> None:
    previous = recorded(before) if before else None
    result = plan(kyma_text([entry]), *VERSION_CATALOG, previous=previous)
    status = statuses(result)[entry["name"]]
    found = (
        str(status.state),
        status.version,
        status.channel,
        status.template.name if status.template else None,
    )
    assert found == expected
    if before and expected[0] == "Warning":
        assert status.message.startswith(
            f"module template update not allowed: ignore channel skew (from {before['channel']} to none), as a "
            f"higher version ({before['version']}) of the module was previously installed"
        )
        assert result.untouched_apps == {f"kyma-{entry['name']}"}
        assert result.problems == []  # a refused downgrade is a decision, not a problem


# --- Restricted modules: a release meta's spec.kymaSelector --------------------------------------

ACCOUNT = "kyma-project.io/global-account-id"
REGION = "kyma-project.io/region"

RESTRICTED = [
    pytest.param({"matchLabels": {ACCOUNT: "ga-1"}}, {ACCOUNT: "ga-1"}, True, id="match-labels"),
    pytest.param({"matchLabels": {ACCOUNT: "ga-1"}}, {ACCOUNT: "ga-2"}, False, id="match-labels-other-value"),
    pytest.param({"matchLabels": {ACCOUNT: "ga-1"}}, {}, False, id="match-labels-absent"),
    pytest.param(
        {"matchExpressions": [{"key": ACCOUNT, "operator": "In", "values": ["ga-1", "ga-2"]}]},
        {ACCOUNT: "ga-2"},
        True,
        id="in",
    ),
    pytest.param(
        {"matchExpressions": [{"key": ACCOUNT, "operator": "In", "values": ["ga-1"]}]},
        {},
        False,
        id="in-absent",
    ),
    pytest.param(
        {"matchExpressions": [{"key": ACCOUNT, "operator": "NotIn", "values": ["ga-1"]}]},
        {},
        True,
        id="not-in-absent",
    ),
    pytest.param(
        {"matchExpressions": [{"key": ACCOUNT, "operator": "NotIn", "values": ["ga-1"]}]},
        {ACCOUNT: "ga-1"},
        False,
        id="not-in-listed",
    ),
    pytest.param(
        {"matchExpressions": [{"key": REGION, "operator": "Exists"}]}, {REGION: "eu"}, True, id="exists"
    ),
    pytest.param(
        {"matchExpressions": [{"key": REGION, "operator": "DoesNotExist"}]},
        {REGION: "eu"},
        False,
        id="not-exists",
    ),
    pytest.param(
        {
            "matchLabels": {REGION: "eu"},
            "matchExpressions": [{"key": ACCOUNT, "operator": "In", "values": ["ga-1"]}],
        },
        {REGION: "eu", ACCOUNT: "ga-9"},
        False,
        id="all-requirements-must-hold",
    ),
    pytest.param({}, {ACCOUNT: "ga-1"}, False, id="no-requirements-matches-no-kyma"),
]


@pytest.mark.parametrize(("selector", "labels", "allowed"), RESTRICTED)
def test_restricted_modules(selector: dict[str, Any], labels: dict[str, str], allowed: bool) -> None:
    catalog = (
        release_meta("deployer", {"regular": "1.0.0"}, kymaSelector=selector),
        module_template("deployer", "1.0.0"),
    )
    found = plan(kyma_text([{"name": "deployer"}], labels), *catalog, restricted=frozenset({"deployer"}))
    status = statuses(found)["deployer"]
    assert restricted_match(selector, labels) is allowed
    if allowed:
        assert (str(status.state), status.version) == ("Ready", "1.0.0")
    else:
        assert (str(status.state), status.message) == (
            "Error",
            "module template not allowed: restricted module not allowed for this Kyma: the "
            "spec.kymaSelector of ModuleReleaseMeta kyma-system/deployer does not match the Kyma's labels",
        )


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        pytest.param(
            {"matchExpressions": [{"key": ACCOUNT, "operator": "In"}]},
            "matchExpressions[0].values: must not be empty for operator In",
            id="in-without-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": ACCOUNT, "operator": "Exists", "values": ["x"]}]},
            "matchExpressions[0].values: must be empty for operator Exists",
            id="exists-with-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": ACCOUNT, "operator": "Equals", "values": ["x"]}]},
            "matchExpressions[0].operator: must be one of In, NotIn, Exists, DoesNotExist, got 'Equals'",
            id="unknown-operator",
        ),
    ],
)
def test_an_invalid_selector_is_the_module_error(selector: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError, match=r"^matchExpressions\[0\]"):
        restricted_match(selector, {})
    catalog = (
        release_meta("deployer", {"regular": "1.0.0"}, kymaSelector=selector),
        module_template("deployer", "1.0.0"),
        module_template("keda", "1.0.0", channel="regular"),
    )
    result = plan(
        kyma_text([{"name": "deployer"}, {"name": "keda"}]), *catalog, restricted=frozenset({"deployer"})
    )
    found = statuses(result)
    assert (str(found["deployer"].state), found["deployer"].message) == (
        "Error",
        f"module template not allowed: ModuleReleaseMeta kyma-system/deployer: spec.kymaSelector.{message}",
    )
    assert str(found["keda"].state) == "Ready"
    assert [p.field_path for p in result.problems] == ["spec.modules[0].name"]


# --- Mandatory modules listed in spec.modules ----------------------------------------------------


@pytest.mark.parametrize(
    ("catalog", "state", "message"),
    [
        pytest.param(
            (release_meta("warden", mandatory={"version": "1.0.0"}), module_template("warden", "1.0.0")),
            "Error",
            "ModuleReleaseMeta kyma-system/warden has no version for channel regular (channels: none)",
            id="release-meta",
        ),
        pytest.param(
            (
                module_template("warden", "0.9.0", mandatory=True),
                module_template("warden", "1.0.0", mandatory=True),
            ),
            "Warning",
            "no templates were found: for module warden in channel regular",
            id="classic-highest",
        ),
    ],
)
def test_a_mandatory_module_listed_in_spec_modules_is_no_eligible_entry(
    catalog: tuple[str, ...], state: str, message: str
) -> None:
    """Lifecycle Manager installs the mandatory module for every Kyma whatever spec.modules says;
    the entry itself is not eligible. One app, the mandatory one, with the entry's failure."""
    result = plan(kyma_text([{"name": "warden", "customResourcePolicy": "Ignore"}]), *catalog)
    warden = [m for m in result.modules if m.status.name == "warden"]
    assert len(warden) == 1  # one app, not a mandatory one and a listed one
    status = warden[0].status
    assert (str(status.state), status.version, status.mandatory) == (state, "1.0.0", True)
    assert status.template is not None and status.template.name == "warden-1.0.0"
    assert status.message.startswith(f"{message}; the module is rendered as mandatory (mandatory: ")
    assert warden[0].render is not None and str(warden[0].render.policy) == "CreateAndDelete"
    # the Kyma's field the entry's channel came from (spec.channel), or its name when no template is found
    assert [p.message[: len(message) + 15] for p in result.problems] == [f"module warden: {message}"]
    assert [p.field_path for p in result.problems] == [
        "spec.channel" if state == "Error" else "spec.modules[0].name"
    ]


# --- Per-module failure ------------------------------------------------------------------------


def test_an_unresolvable_module_keeps_its_app_and_the_others_are_planned() -> None:
    previous = recorded(installed("keda", "1.0.0"), installed("serverless", "2.0.0"))
    catalog = (
        module_template("keda", "1.0.0", name="keda-regular", channel="regular"),
        module_template("keda", "1.0.1", name="keda-regular-2", channel="regular"),  # ambiguous now
        release_meta("serverless", {"regular": "2.1.0"}),
        module_template("serverless", "2.1.0"),
    )
    result = plan(kyma_text([{"name": "keda"}, {"name": "serverless"}]), *catalog, previous=previous)
    found = statuses(result)
    assert (str(found["keda"].state), found["keda"].version, found["keda"].app) == (
        "Error",
        "1.0.0",
        "kyma-keda",
    )
    assert found["keda"].message.startswith("no unique template could be identified")
    assert (str(found["serverless"].state), found["serverless"].version) == ("Ready", "2.1.0")
    assert result.untouched_apps == {"kyma-keda"}
    [problem] = result.problems
    assert (problem.file, problem.field_path) == ("kyma.yaml", "spec.channel")
    assert problem.message.startswith("module keda: no unique template could be identified")
    # the record keeps what is rendered: keda's old version, in Error
    record = read_record(result.record_files, "clusters/default")
    assert {n: (m.version, str(m.state)) for n, m in record.modules.items()} == {
        "keda": ("1.0.0", "Error"),
        "serverless": ("2.1.0", "Ready"),
    }


# --- Removal of modules no longer asked for ---------------------------------------------------------

SAMPLE = {
    "apiVersion": "operator.kyma-project.io/v1alpha1",
    "kind": "Sample",
    "metadata": {"name": "keda-sample"},
}


def test_removal_takes_the_default_cr_first_then_the_resources() -> None:
    previous = recorded(installed("keda", "1.0.0", resource={**SAMPLE, "metadata": {**SAMPLE["metadata"]}}))
    catalog = (module_template("keda", "1.0.0", channel="regular"),)

    first = plan(kyma_text([]), *catalog, previous=previous)

    (keda,) = [m for m in first.modules if m.status.name == "keda"]
    assert str(keda.status.state) == "Deleting"
    assert keda.status.message == (
        "removed from spec.modules: its default CR Sample keda-sample is deleted first; the module's "
        "resources are deleted with the next render"
    )
    assert (keda.keep, keda.without) == ("kyma-keda", keda.status.resource)
    assert first.untouched_apps == frozenset()  # laid out again, without the CR
    assert first.problems == []
    record = read_record(first.record_files, "clusters/default")
    assert str(record.modules["keda"].state) == "Deleting"

    # the next render: the app without its CR, the record saying Deleting
    after_first = {
        RECORD_FILE: first.record_files[RECORD_FILE],
        "kyma-keda/deployment-keda.yaml": previous["kyma-keda/deployment-keda.yaml"],
    }
    second = plan(kyma_text([]), *catalog, previous=after_first)
    (keda,) = [m for m in second.modules if m.status.name == "keda"]
    assert (str(keda.status.state), keda.keep, keda.status.app) == ("Deleting", None, "")
    assert keda.status.message == (
        "removed from spec.modules: its default CR was deleted before, the module's resources are deleted"
    )
    assert "keda" not in read_record(second.record_files, "clusters/default").modules

    third = plan(kyma_text([]), *catalog, previous={RECORD_FILE: second.record_files[RECORD_FILE]})
    assert statuses(third) == {}


@pytest.mark.parametrize(
    ("resource", "entries"),
    [
        pytest.param(None, [], id="ignore-policy-no-default-cr"),
        pytest.param(None, [{"name": "other"}], id="another-module-stays-asked-for"),
    ],
)
def test_removal_without_a_default_cr_is_at_once(resource: dict[str, Any] | None, entries: list[Any]) -> None:
    previous = recorded(installed("keda", "1.0.0"))
    catalog = (
        module_template("keda", "1.0.0", channel="regular"),
        module_template("other", "1.0.0", channel="regular"),
    )
    result = plan(kyma_text(entries), *catalog, previous=previous)
    (keda,) = [m for m in result.modules if m.status.name == "keda"]
    assert (str(keda.status.state), keda.keep, keda.status.message) == (
        "Deleting",
        None,
        "removed from spec.modules: the module's resources are deleted",
    )
    assert "keda" not in read_record(result.record_files, "clusters/default").modules


def _allowing(kyma: str, modules: str) -> str:
    """The Kyma text with the annotation that allows removing `modules`."""
    body = yaml.safe_load(kyma)
    body["metadata"]["annotations"] = {"btp-gitops.io/allow-module-removal": modules}
    return yaml.safe_dump(body, sort_keys=False)


MISSPELT = [{"name": "kdea"}, {"name": "servrless"}]
TWO_MODULES = (
    module_template("keda", "1.0.0", channel="regular"),
    module_template("serverless", "1.0.0", channel="regular"),
)


def test_a_removal_beside_an_unresolvable_entry_is_refused_naming_each_entry() -> None:
    previous = recorded(installed("keda", "1.0.0"), installed("serverless", "1.0.0"))

    with pytest.raises(ModuleRemovalRefused) as refused:
        plan(kyma_text(MISSPELT), *TWO_MODULES, previous=previous)

    assert refused.value.exit_code == ExitCode.INPUT
    assert refused.value.message.startswith(
        "refusing to remove Kyma modules keda, serverless: no longer in spec.modules while an entry there "
        "cannot be resolved"
    )
    assert refused.value.message.endswith(
        'btp-gitops.io/allow-module-removal: "keda,serverless" (2 problems)'
    )
    where = "kyma.yaml: document 1 (Kyma kyma-system/default)"
    assert [problem.render() for problem in refused.value.problems] == [
        f"{where}: spec.modules[0].name: module kdea: no templates were found: for module kdea in channel "
        'regular (did you mean "keda"?)',
        f"{where}: spec.modules[1].name: module servrless: no templates were found: for module servrless in "
        'channel regular (did you mean "serverless"?)',
    ]


def test_the_annotation_allows_the_removals_it_names_and_the_flag_all() -> None:
    previous = recorded(installed("keda", "1.0.0"), installed("serverless", "1.0.0"))
    with pytest.raises(ModuleRemovalRefused, match=r"^refusing to remove Kyma module serverless: "):
        plan(_allowing(kyma_text(MISSPELT), "keda"), *TWO_MODULES, previous=previous)

    by_annotation = plan(
        _allowing(kyma_text(MISSPELT), " keda , serverless"), *TWO_MODULES, previous=previous
    )
    by_flag = plan(kyma_text(MISSPELT), *TWO_MODULES, previous=previous, allow_removal=True)

    for allowed in (by_annotation, by_flag):
        assert {name: str(status.state) for name, status in statuses(allowed).items()} == {
            "kdea": "Warning",
            "keda": "Deleting",
            "serverless": "Deleting",
            "servrless": "Warning",
        }
        assert len(allowed.problems) == 2  # the entries stay module problems (exit 9)


def test_a_removal_under_way_or_without_an_unresolvable_entry_needs_no_allowance() -> None:
    # The previous render deleted keda's default CR (Deleting): that render chose the removal.
    under_way = recorded(installed("keda", "1.0.0", state="Deleting"))
    result = plan(kyma_text([{"name": "kdea"}]), *TWO_MODULES, previous=under_way)
    assert str(statuses(result)["keda"].state) == "Deleting"
    # Removed while every entry resolves: an ordinary removal.
    previous = recorded(installed("keda", "1.0.0"))
    result = plan(kyma_text([{"name": "serverless"}]), *TWO_MODULES, previous=previous)
    assert str(statuses(result)["keda"].state) == "Deleting"


def test_unmanaged_and_mandatory_modules_are_not_removed() -> None:
    previous = recorded(installed("keda", "1.0.0"), installed("warden", "1.0.0", mandatory=True))
    catalog = (
        module_template("keda", "1.0.0", channel="regular"),
        release_meta("warden", mandatory={"version": "1.0.0"}),
        module_template("warden", "1.0.0"),
    )
    found = statuses(plan(kyma_text([{"name": "keda", "managed": False}]), *catalog, previous=previous))
    assert (str(found["keda"].state), str(found["warden"].state)) == ("Unmanaged", "Ready")


# --- Maintenance: requiring downtime while no policy is configured ---------------------------------


@pytest.mark.parametrize(
    ("policy", "state", "message"),
    [
        pytest.param(
            None,
            "Error",
            "failed to determine if maintenance window is active: no maintenance window policy configured; "
            "the upgrade from 1.0.0 to 1.1.0 requires downtime and is not made",
            id="no-policy-error",
        ),
        pytest.param(
            '{"rules": []}',
            "Error",
            "failed to determine if maintenance window is active: policy.json: matches and defaults also failed "
            "to provide a window; the upgrade from 1.0.0 to 1.1.0 requires downtime and is not made",
            id="no-window-error",
        ),
        pytest.param(
            '{"Default": {"Days": ["Sat"], "Begin": "20:00:00Z", "End": "22:00:00Z"}}',
            "Ready",
            "waiting for next maintenance window to update module version from 1.0.0 to 1.1.0 "
            "(next window 2025-10-11T20:00:00+00:00 to 2025-10-11T22:00:00+00:00)",
            id="waits-for-the-default-window",
        ),
        pytest.param(
            '{"default": {"days": ["Wed"], "begin": "11:00:00Z", "end": "12:15:00Z"}}',
            "Ready",
            "waiting for next maintenance window to update module version from 1.0.0 to 1.1.0 "
            "(next window 2025-10-15T11:00:00+00:00 to 2025-10-15T12:15:00+00:00)",
            id="less-than-twenty-minutes-left-waits-a-week",
        ),
    ],
)
def test_an_upgrade_that_requires_downtime(policy: str | None, state: str, message: str) -> None:
    previous = recorded(installed("keda", "1.0.0"))
    catalog = (module_template("keda", "1.1.0", channel="regular", requiresDowntime=True),)
    result = plan(kyma_text([{"name": "keda"}]), *catalog, previous=previous, policy=policy)
    keda = statuses(result)["keda"]
    assert (str(keda.state), keda.version, keda.message) == (state, "1.0.0", message)
    assert result.untouched_apps == {"kyma-keda"}
    assert len(result.problems) == (1 if state == "Error" else 0)


def test_an_upgrade_that_requires_downtime_enters_a_window_with_enough_left() -> None:
    previous = recorded(installed("keda", "1.0.0"))
    catalog = (module_template("keda", "1.1.0", channel="regular", requiresDowntime=True),)
    policy = '{"default": {"days": ["Wed"], "begin": "11:00:00Z", "end": "12:30:00Z"}}'  # 30 minutes left
    result = plan(kyma_text([{"name": "keda"}]), *catalog, previous=previous, policy=policy)
    keda = statuses(result)["keda"]
    assert (str(keda.state), keda.version) == ("Ready", "1.1.0")
    assert keda.message.endswith(
        "; requires downtime, upgraded from 1.0.0 to 1.1.0 in the maintenance window "
        "2025-10-08T11:00:00+00:00 to 2025-10-08T12:30:00+00:00"
    )
    assert (result.untouched_apps, result.problems) == (frozenset(), [])


@pytest.mark.parametrize("stage", list(Stage))
def test_a_flux_stage_directory_reads_back_as_its_stage(stage: Stage) -> None:
    for step in (0, 1):
        if step < stage_steps(stage):
            placed = FluxStage(stage, step)
            assert stage_of_directory(placed.directory) == placed
    assert stage_of_directory(f"{stage.value * 10:02d}-{stage.slug}-{stage_steps(stage)}") is None


@pytest.mark.parametrize("directory", ["templates", "10-resource", "1-resources", "99-crds", "00-crds-x"])
def test_other_directories_are_no_stage(directory: str) -> None:
    assert stage_of_directory(directory) is None


# --- The ModuleReleaseMeta schema: spec.kymaSelector and spec.ocmComponentName ----------------------

MRM = "catalog.yaml: document 1 (ModuleReleaseMeta kyma-system/deployer)"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {
                "kymaSelector": {
                    "matchLabels": {ACCOUNT: "ga-1"},
                    "matchExpressions": [{"key": REGION, "operator": "NotIn", "values": ["cn"]}],
                },
                "ocmComponentName": "kyma-project.io/module/deployer",
            },
            [],
            id="valid",
        ),
        pytest.param(
            {"kymaSelector": {"matchExpressions": [{"key": REGION, "operator": "Equals"}]}},
            [
                f"{MRM}: spec.kymaSelector.matchExpressions[0].operator: must be one of 'In', 'NotIn', "
                "'Exists', 'DoesNotExist', got 'Equals'"
            ],
            id="unknown-operator",
        ),
        pytest.param(
            {"kymaSelector": {"matchLabel": {ACCOUNT: "ga-1"}}},
            [f'{MRM}: spec.kymaSelector.matchLabel: unknown field (did you mean "matchLabels"?)'],
            id="misspelt-field",
        ),
        pytest.param(
            {"ocmComponentName": "Deployer"},
            [
                f"{MRM}: spec.ocmComponentName: 'Deployer' does not match "
                "'^[a-z][-a-z0-9]*([.][a-z][-a-z0-9]*)*[.][a-z]{2,}(/[a-z][-a-z0-9_]*([.][a-z][-a-z0-9_]*)*)+$'"
            ],
            id="invalid-ocm-component-name",
        ),
    ],
)
def test_the_release_meta_schema(spec: dict[str, Any], expected: list[str]) -> None:
    [document] = documents(release_meta("deployer", {"regular": "1.0.0"}, **spec))
    problems = sorted(p.render() for p in problems_in(document, load_schema_registry()))
    assert problems == expected
