"""Fixtures for render tests: writable copies of the bundled example source."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import CHART, EXAMPLES

MakeSource = Callable[..., Path]


@pytest.fixture
def make_source(tmp_path: Path) -> MakeSource:
    """Copy examples/btp-operator into tmp, chart path made absolute; optionally edit the config."""

    def make(name: str = "source", chart_dir: Path = CHART, **spec: Any) -> Path:
        target = tmp_path / name
        shutil.copytree(EXAMPLES / "btp-operator", target)
        config_path = target / "btpoperatorconfig.yaml"
        config = yaml.safe_load(config_path.read_text())
        config["spec"].setdefault("chart", {})["path"] = str(chart_dir)
        config["spec"].update(spec)
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        return target

    return make
