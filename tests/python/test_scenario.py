"""Scenarios from a dict, TOML text and a TOML file are the same Scenario; keys set from Python
values; errors are ValueError naming the key."""
import copy
import pickle

import numpy as np
import pytest

import megasim
from conftest import SMALL

tomllib = pytest.importorskip("tomllib")


def test_from_dict_equals_load_of_the_same_toml():
    with open(SMALL, "rb") as f:
        sections = tomllib.load(f)
    from_dict = megasim.Scenario.from_dict(sections)
    assert from_dict == megasim.load(SMALL)
    assert from_dict == megasim.Scenario.from_toml(SMALL.read_text())
    assert from_dict != megasim.Scenario()
    assert from_dict.get("plan.tensor_model_parallel_size") == sections["plan"]["tensor_model_parallel_size"]


def test_to_dict_round_trips_every_key():
    s = megasim.load(SMALL)
    d = s.to_dict()
    assert megasim.Scenario.from_dict(d) == s
    assert d["cluster"]["gpus"] == 64 and d["plan"]["sequence_parallel"] is True
    # One entry per key of the key table.
    assert sum(len(keys) for keys in d.values()) == sum(len(keys) for keys in megasim.Scenario().to_dict().values())


def test_set_takes_python_values_and_text():
    s = megasim.Scenario()
    s.set("plan.micro_batch_size", 2)
    assert s.get("plan.micro_batch_size") == 2
    s.set("plan.micro_batch_size", "4")  # text, as --set parses it
    assert s.get("plan.micro_batch_size") == 4
    s.set("plan.micro_batch_size", np.int64(8))
    assert s.get("plan.micro_batch_size") == 8
    s.set("fabric.stall_timeout_s", 5)  # an int for a float key
    assert s.get("fabric.stall_timeout_s") == 5.0 and isinstance(s.get("fabric.stall_timeout_s"), float)
    s.set("plan.sequence_parallel", False)
    assert s.get("plan.sequence_parallel") is False


def test_copies_and_pickles_are_independent_equal_scenarios():
    s = megasim.load(SMALL)
    for other in (s.copy(), copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert other == s
        other.set("cluster.gpus", 128)
        assert other != s and s.get("cluster.gpus") == 64


def test_errors_name_the_key():
    with pytest.raises(ValueError, match="plan.micro_batch_size"):
        megasim.Scenario.from_dict({"plan": {"micro_batch_size": "2"}})  # a string, as TOML "2" would be
    with pytest.raises(ValueError, match="plan.micro_batch_size"):
        megasim.Scenario.from_dict({"plan": {"micro_batch_size": [1, 2]}})
    with pytest.raises(ValueError, match="no_such_key"):
        megasim.Scenario.from_dict({"plan": {"no_such_key": 1}})
    with pytest.raises(ValueError, match="plan"):
        megasim.Scenario.from_dict({"plan": 3})
    with pytest.raises(ValueError, match="plan.micro_batch_size"):
        megasim.Scenario().set("plan.micro_batch_size", 1.5)
    with pytest.raises(ValueError, match="section.key"):
        megasim.Scenario().set("micro_batch_size", 2)
    with pytest.raises(ValueError, match="fabric.routing"):
        megasim.Scenario().set("fabric.routing", "random")


def test_same_errors_as_a_toml_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[plan]\nmicro_batch_size = \"2\"\n")
    with pytest.raises(ValueError) as from_file:
        megasim.load(bad)
    with pytest.raises(ValueError) as from_dict:
        megasim.Scenario.from_dict({"plan": {"micro_batch_size": "2"}})
    assert str(from_file.value) == str(from_dict.value)
