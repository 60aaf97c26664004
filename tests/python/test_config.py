"""Configs from Python: a file or a dict, with overrides, and the errors of either."""
import re
import tomllib

import pytest

import hetrec
from conftest import DEMO


def demo_tables():
    with open(DEMO, "rb") as f:
        return tomllib.load(f)


def without_place(message):
    """The message after its file name and line ("<name>:12: ")."""
    return re.sub(r"^[^:]*(:\d+)*: ", "", message)


def file_error(tmp_path, old, new):
    """The error of the demo config file with its text `old` replaced by `new`."""
    path = tmp_path / "bad.toml"
    text = DEMO.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    with pytest.raises(hetrec.ConfigError) as e:
        hetrec.Session(path)
    assert str(e.value).startswith(str(path))
    return without_place(str(e.value))


def test_a_bad_key_in_a_dict_names_it_as_the_file_would(tmp_path):
    tables = demo_tables()
    tables["model"]["embedding_dimm"] = 16
    with pytest.raises(hetrec.ConfigError) as e:
        hetrec.Session(tables)
    message = str(e.value)
    assert message.startswith("<config dict>") and "'model.embedding_dimm'" in message
    assert without_place(message) == file_error(tmp_path, "[model]\n", "[model]\nembedding_dimm = 16\n")


def test_a_wrong_type_in_a_dict_names_the_key(tmp_path):
    tables = demo_tables()
    tables["train"]["batch_size"] = "large"
    with pytest.raises(hetrec.ConfigError, match=r"'train.batch_size'") as e:
        hetrec.Session(tables)
    expected = file_error(tmp_path, "batch_size = 2048\n", 'batch_size = "large"\n')
    assert without_place(str(e.value)) == expected


def test_a_value_toml_cannot_hold_names_the_key():
    with pytest.raises(hetrec.ConfigError, match=r"config key 'data.synthetic.seed': expected a bool, int, float"):
        hetrec.Session({"data": {"synthetic": {"seed": object()}}})


def test_overrides_as_a_list_or_a_dict():
    assert hetrec.Session(DEMO, {"data.synthetic.seed": 11}).seed == 11
    assert hetrec.Session(DEMO, ["data.synthetic.seed=12"]).seed == 12
    with pytest.raises(hetrec.ConfigError, match=r"train.stepz"):
        hetrec.Session(DEMO, {"train.stepz": 3})
    with pytest.raises(hetrec.ConfigError, match=r"overrides: expected a list"):
        hetrec.Session(DEMO, "train.steps=3")
    with pytest.raises(hetrec.ConfigError, match=r"config: expected a path"):
        hetrec.Session(42)


def test_a_missing_config_file_is_named(tmp_path):
    missing = tmp_path / "none.toml"
    with pytest.raises(hetrec.Error, match=str(missing)):
        hetrec.Session(missing)
    assert issubclass(hetrec.ConfigError, hetrec.Error) and issubclass(hetrec.ConfigError, ValueError)
    assert issubclass(hetrec.IoError, OSError) and issubclass(hetrec.NumericError, ArithmeticError)
