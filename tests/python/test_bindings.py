"""The Python module gives the same numbers as the CLI and maps input errors to ValueError."""
import os

import pytest

import megasim
from conftest import cli_json


def test_collective_matches_cli():
    s = megasim.Scenario()
    s.set("cluster.gpus", "64")
    s.set("simulation.seed", "3")
    from_python = megasim.collective(s, op="all_reduce", bytes="32MiB", gpus=64)
    from_cli = cli_json("collective", "--gpus", "64", "--bytes", "32MiB", "--seed", "3")
    assert from_python == from_cli
    assert from_python["busbw_gbytes_per_s"] > 0


def test_topology_summary():
    s = megasim.Scenario.from_toml("[cluster]\ngpus = 4096\n")
    summary = megasim.topology(s)
    assert summary["gpus"] == 4096 and summary["tiers"] == 3


def test_errors_are_value_errors_naming_the_key():
    s = megasim.Scenario()
    with pytest.raises(ValueError, match="fabric.routing"):
        s.set("fabric.routing", "random")
    with pytest.raises(ValueError, match="cluster.gpus"):
        megasim.Scenario.from_toml("[cluster]\ngpus = 12\n").validate()
    with pytest.raises(ValueError, match="bytes"):
        megasim.collective(op="all_reduce", bytes="lots")


def test_get_returns_typed_values():
    s = megasim.Scenario()
    assert s.get("cluster.gpus") == 1024
    assert s.get("fabric.routing") == "ecmp"
    assert s.get("fabric.ecmp_polarized") is False


def test_run_matches_cli():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "scenarios", "megatron", "korthikanti_22b.toml")
    from_python = megasim.run(megasim.load(path))
    from_cli = cli_json("run", path)
    assert from_python.to_dict() == from_cli and from_python == from_cli
    assert 0 < from_python["mfu"] < 1


def test_plan_reports_memory_fit():
    report = megasim.plan(megasim.Scenario())
    assert report["plan"]["tp"] == 8 and report["memory"]["fits"] is True


def test_campaign_matches_cli():
    path = os.path.join(os.path.dirname(__file__), "..", "data", "campaign_small.toml")
    from_python = megasim.campaign(megasim.load(path), days=2, seeds=3)
    from_cli = cli_json("campaign", path, "--days", "2", "--seeds", "3")
    assert isinstance(from_python, megasim.CampaignReport)
    assert from_python == from_cli and from_python.to_dict() == from_cli
    assert 0 < from_python.ettr <= 1
    assert set(from_python["lost_time_s"]) >= {"lost_work", "detection", "diagnosis", "waiting_for_spares"}
    with pytest.raises(ValueError, match="--days"):
        megasim.campaign(megasim.load(path), days=0)



def test_available_backends_are_those_the_cli_lists_as_built():
    built = [b["name"] for b in cli_json("backends")["backends"] if b["built"]]
    available = megasim.available_backends()
    assert sorted(available) == sorted(built)
    assert available[:2] == ["sim", "cpu"]


def test_keys_is_the_table_as_data():
    keys = megasim.keys()
    assert keys == cli_json("keys")["keys"]
    assert len(keys) == len({k["key"] for k in keys}) > 50
    python_type = {"integer": int, "number": (int, float), "boolean": bool, "string": str}
    defaults = megasim.Scenario()
    for k in keys:
        assert k["key"] == f"{k['section']}.{k['name']}"
        assert isinstance(k["default"], python_type[k["type"]]), k
        assert defaults.get(k["key"]) == k["default"], k  # the table's default is the Scenario's
        assert isinstance(k["unit"], str) and k["description"]
        if k["type"] in ("integer", "number"):  # every number has its physical range, holding its default
            r = k["range"]
            assert r["min"] <= k["default"] <= r["max"] or (r["or_zero"] and k["default"] == 0), k
        else:
            assert "range" not in k, k
    assert {"key": "fabric.routing", "type": "string"}.items() <= next(k for k in keys if k["key"] == "fabric.routing").items()
    assert "qps_per_connection" in megasim.keys_text()


def test_run_report_carries_its_provenance():
    path = os.path.join(os.path.dirname(__file__), "..", "data", "campaign_small.toml")
    scenario = megasim.load(path)
    provenance = megasim.run(scenario)["provenance"]
    assert provenance["scenario_file"] == path
    assert provenance["scenario_name"] == scenario.get("simulation.name") == "campaign-small"
    assert provenance["seed"] == scenario.get("simulation.seed")
    assert provenance["backend"] == "sim" and provenance["calibration_file"] is None
    assert provenance["megasim_version"] == megasim.__version__
    assert provenance["megasim_commit"] == megasim.__commit__ != ""
    from_dict = megasim.Scenario.from_dict(scenario.to_dict())
    assert megasim.run(from_dict)["provenance"]["scenario_file"] is None
