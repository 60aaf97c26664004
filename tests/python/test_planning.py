"""hardware_list, gemm_select and plan: the program's answers, from Python."""
import re

import pytest

import hetrec
from conftest import DEMO, SOURCE, run_program


def test_hardware_list_is_the_hw_folder():
    names = hetrec.hardware_list()
    assert names == sorted(p.stem for p in (SOURCE / "hw").glob("*.toml"))
    listed = run_program("hw", "list").stdout
    assert all(name in listed for name in names)


def without_timing(report):
    return re.sub(r"[0-9.]+ us of CPU", "<t> us of CPU", report)


@pytest.mark.parametrize("args", [
    dict(m=4096, n=1024, k=512, dtype="bf16"),
    dict(m=2048, n=16, k=256, dtype="fp32", tf32=True, hardware="a100_sxm_40gb"),
    dict(m=512, n=512, k=512, dtype="fp16", epilogue="bias_relu", trans_a=True, batch=4),
])
def test_gemm_select_prints_what_the_program_prints(args):
    cli = ["gemm", "select"]
    for key, value in args.items():
        flag = {"hardware": "--hw"}.get(key, "--" + key.replace("_", "-"))
        if value is True:
            cli.append(flag)
        else:
            cli += [flag, value]
    # The report is the program's, but for the time the selection itself took.
    assert without_timing(hetrec.gemm_select(**args)) == without_timing(run_program(*cli).stdout)


def test_gemm_select_names_a_bad_argument():
    with pytest.raises(hetrec.ConfigError, match=r"dtype"):
        hetrec.gemm_select(m=64, n=64, k=64, dtype="fp7")
    with pytest.raises(hetrec.ConfigError, match=r"m: expected a positive integer, got 0"):
        hetrec.gemm_select(m=0, n=64, k=64)


@pytest.mark.parametrize("calibrate", [True, False])
def test_plan_writes_the_programs_recipe(tmp_path, calibrate):
    out = tmp_path / "plan.toml"
    run_program("plan", "--config", DEMO, "--hw", "h200_sxm", "--out", out, *([] if calibrate else ["--no-calibration"]))
    result = hetrec.plan(DEMO, "h200_sxm", calibrate=calibrate)
    assert result["recipe_toml"] == out.read_text()
    assert result["hardware"] == "h200_sxm" and result["samples_per_s"] > 0
    assert f"batch_size = {result['batch']}\n" in result["recipe_toml"]


def test_plan_binds_the_batch_to_the_configs_unless_told(tmp_path):
    # configs/demo.toml trains at batch 2048: its learning rates are tuned there.
    bound = hetrec.plan(DEMO, "h200_sxm")
    assert bound["batch"] == 2048 and bound["note"] == ""
    smaller = hetrec.plan(DEMO, "h200_sxm", min_batch=1024, max_batch=1024)
    assert smaller["batch"] == 1024
    assert re.search(r"smaller than the config's train.batch_size 2048.*more updates per sample", smaller["note"])
    with pytest.raises(hetrec.ConfigError, match=r"min_batch 4096 is above the config's train.batch_size 2048"):
        hetrec.plan(DEMO, "h200_sxm", min_batch=4096)
    wider = hetrec.plan(DEMO, "h200_sxm", max_batch=65536)
    assert wider["batch"] > 2048
    assert re.search(r"larger than the config's train.batch_size 2048.*retune", wider["note"])
    # The same batch as the program's with the same flag.
    out = tmp_path / "plan.toml"
    run_program("plan", "--config", DEMO, "--hw", "h200_sxm", "--max-batch", 65536, "--out", out)
    assert wider["recipe_toml"] == out.read_text()


def test_plan_names_unknown_hardware():
    with pytest.raises(hetrec.ConfigError, match=r"hardware 'h900': no file .*available: .*h200_sxm"):
        hetrec.plan(DEMO, "h900")
