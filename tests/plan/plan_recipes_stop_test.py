#!/usr/bin/env python3
"""bench/plan_recipes.py leaves no program running: at a run's timeout, and when the script
itself is stopped by SIGTERM (an outer `timeout`), the run's whole process group is killed,
the program and any child it started (a training run left behind would hold the GPU).

The program is a stand-in shell script that starts two children, writes the three pids and waits."""
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import plan_recipes  # noqa: E402

# Every process it runs is named in the pids file, so that none is left unseen.
STAND_IN = """#!/bin/sh
sleep 600 &
a=$!
sleep 600 &
echo "$$ $a $!" > "{pids}"
wait
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is not running.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(path, seconds=10):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if os.path.exists(path) and open(path).read().strip():
            return [int(x) for x in open(path).read().split()]
        time.sleep(0.05)
    raise AssertionError(f"the stand-in never wrote {path}")


def expect_gone(pids, what):
    end = time.monotonic() + 5
    while time.monotonic() < end and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    if left:
        for p in left:
            os.kill(p, signal.SIGKILL)
        raise AssertionError(f"{what}: processes {left} of the run are still running")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "program")
        pids_file = os.path.join(tmp, "pids")
        with open(program, "w") as f:
            f.write(STAND_IN.format(pids=pids_file))
        os.chmod(program, 0o755)

        # 1. The run's timeout kills the program and its child.
        args = type("Args", (), {"out_dir": os.path.join(tmp, "out")})()
        runner = plan_recipes.Runner(args)
        t0 = time.monotonic()
        rc, out, _ = runner.run([program], timeout=1)
        assert rc == 124 and "timed out after 1 s" in out, (rc, out)
        assert time.monotonic() - t0 < 30, "the run did not end at its timeout"
        expect_gone(wait_for(pids_file), "after the timeout")

        # 2. SIGTERM to the script (as `timeout` sends it) kills the run's group too.
        os.remove(pids_file)
        driver = ("import sys; sys.path.insert(0, %r); import plan_recipes; "
                  "r = plan_recipes.Runner(type('A', (), {'out_dir': %r})()); r.run([%r], timeout=600)"
                  % (os.path.join(ROOT, "bench"), os.path.join(tmp, "out2"), program))
        script = subprocess.Popen([sys.executable, "-c", driver])
        pids = wait_for(pids_file)
        script.send_signal(signal.SIGTERM)
        rc = script.wait(timeout=30)
        assert rc == 128 + signal.SIGTERM, f"the script exited {rc} on SIGTERM, expected {128 + signal.SIGTERM}"
        expect_gone(pids, "after SIGTERM to the script")

        # 3. The check itself can fail: a run left alone is seen running.
        os.remove(pids_file)
        leftover = subprocess.Popen([program], start_new_session=True)
        pids = wait_for(pids_file)
        try:
            expect_gone(pids, "planted")
        except AssertionError as e:
            assert "still running" in str(e)
        else:
            raise AssertionError("expect_gone did not notice a running process")
        leftover.wait(timeout=10)
    print("ok")


if __name__ == "__main__":
    main()
