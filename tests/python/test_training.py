"""hetrec.Session.train: the trainer `hetrec train` runs, driven from Python."""
import json
import threading
import time
import tomllib

import pytest

import hetrec
from conftest import DEMO, run_program, small_demo


def records(path, kind):
    with open(path) as f:
        return [r for r in map(json.loads, f) if r.get("type") == kind]


def test_module_trains_the_demo_to_the_programs_auc(tmp_path):
    cli, mod = tmp_path / "cli", tmp_path / "module"
    run_program("train", "--config", DEMO, *[a for o in small_demo(cli) for a in ("--set", o)])
    cli_final = records(cli / "metrics.jsonl", "final")[-1]
    cli_steps = records(cli / "metrics.jsonl", "train")

    seen = []
    summary = hetrec.Session(DEMO, small_demo(mod)).train(callback=seen.append)
    assert summary["steps"] == 32
    assert summary["auc"] == cli_final["auc"]  # the same seed gives the same model
    assert summary["log_loss"] == cli_final["log_loss"]
    logged = [r for r in seen if r["type"] == "train"]
    assert [r["step"] for r in logged] == [8, 16, 24, 32]
    assert [r["samples"] for r in logged] == [8 * 512, 16 * 512, 24 * 512, 32 * 512]
    assert [r["loss"] for r in logged] == [r["loss"] for r in cli_steps]
    evals = [r for r in seen if r["type"] == "eval"]
    assert len(evals) == 1 and evals[0]["auc"] == summary["auc"]


def test_a_dict_config_trains_as_its_file(tmp_path):
    with open(DEMO, "rb") as f:
        tables = tomllib.load(f)
    from_file = hetrec.Session(DEMO, small_demo(tmp_path / "file")).train()
    from_dict = hetrec.Session(tables, small_demo(tmp_path / "dict")).train()
    assert from_dict["auc"] == from_file["auc"]
    # A different seed trains a different model: the comparison above can fail.
    tables["model"]["init_seed"] = 99
    reseeded = hetrec.Session(tables, small_demo(tmp_path / "seed")).train()
    assert reseeded["auc"] != from_file["auc"]


def test_the_trained_model_stays_and_its_checkpoint_loads(tmp_path):
    session = hetrec.Session(DEMO, small_demo(tmp_path))
    summary = session.train()
    assert session.step == 32
    assert session.evaluate()["auc"] == summary["auc"]
    fresh = hetrec.Session(DEMO, small_demo(tmp_path / "other"))
    untrained = fresh.evaluate()["auc"]
    assert fresh.load_checkpoint(summary["checkpoint"]) == 32
    assert fresh.evaluate()["auc"] == summary["auc"] != untrained


def test_an_exception_in_the_callback_stops_training(tmp_path):
    def stop(record):
        raise KeyError("stop at step %d" % record["step"])

    with pytest.raises(KeyError, match="stop at step 8"):
        hetrec.Session(DEMO, small_demo(tmp_path)).train(callback=stop)


def test_other_python_threads_run_while_the_engine_trains(tmp_path):
    # Training releases the GIL: a thread that needs it keeps counting meanwhile (with the
    # GIL held for the whole run it could not count at all without a callback).
    ticks, done = [0], threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        before = ticks[0]
        started = time.monotonic()
        hetrec.Session(DEMO, small_demo(tmp_path)).train()
        seconds = time.monotonic() - started
        during = ticks[0] - before
    finally:
        done.set()
        counter.join()
    assert during >= 20, (during, seconds)
