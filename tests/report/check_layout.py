#!/usr/bin/env python3
"""Renders hetrec's pictures in headless Chromium and fails when a text label overflows
its box or the SVG viewport, or two labels overlap (layout_check.js measures them).

Pictures: the planner's chart (`hetrec plan --svg`, five accelerators and two GPUs of
one) and the run report (`hetrec report` over a short demo run). Then the test of the
test: the same pictures with a planted overlapping label, a planted label past the
viewport's edge and a planted overflowing table cell must each be flagged.

Exit status: 0 all clean and every planted fault found; 1 a problem; 77 (CTest's skip)
when no Chromium is installed, with the reason printed.
"""
import argparse
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def page_for(picture_path):
    """The HTML page Chromium renders: an SVG file inline in a blank page, an HTML page as
    it is; the checker script appended at the end of the body."""
    text = open(picture_path, encoding="utf-8").read()
    script = "<script>\n" + open(os.path.join(HERE, "layout_check.js")).read() + "\n</script>\n"
    if picture_path.endswith(".svg"):
        return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body style=\"margin:0\">\n" + text + \
            script + "</body></html>\n"
    if "</body>" not in text:
        raise SystemExit("%s: no </body> to add the checker to" % picture_path)
    return text.replace("</body>", script + "</body>")


# Chromium is started afresh for each picture; on a loaded machine a start can stall or end
# without rendering. Such a run gives no verdict at all (never a passing one), so it is tried
# again, up to this many times, before the check fails.
RENDER_ATTEMPTS = 3
RENDER_TIMEOUT_S = 60


def render(browser, picture_path, work):
    harness = os.path.join(work, os.path.basename(picture_path) + ".check.html")
    with open(harness, "w", encoding="utf-8") as f:
        f.write(page_for(picture_path))
    failures = []
    for attempt in range(1, RENDER_ATTEMPTS + 1):
        profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=work)
        cmd = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--window-size=1400,1000",
               "--user-data-dir=" + profile, "--dump-dom", "file://" + harness]
        # In a process group of its own, so that a stalled attempt is stopped with every
        # process the browser started.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=RENDER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            failures.append("attempt %d: no answer within %d s" % (attempt, RENDER_TIMEOUT_S))
            continue
        # The last one: the script's own text (in the dumped DOM too) names the element.
        found = re.findall(r'<pre id="layout-verdict">(\{.*?)</pre>', stdout, re.S)
        if found:
            if failures:
                print("%s: rendered on attempt %d (%s)" % (picture_path, attempt, "; ".join(failures)))
            return json.loads(html.unescape(found[-1]))
        failures.append("attempt %d: exit %d, no verdict\n%s" % (attempt, proc.returncode, stderr[-2000:]))
    raise RuntimeError("%s: Chromium gave no verdict in %d attempts\n%s" %
                       (picture_path, RENDER_ATTEMPTS, "\n".join(failures)))


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))


def make_pictures(hetrec, source, work):
    """The planner's charts and a run report, from the real program."""
    run([hetrec, "plan", "--config", "configs/dlrm_dcnv2_mlperf.toml", "--hw", "h100_sxm,h200_sxm,b200,mi300x,mi350x",
         "--svg", os.path.join(work, "plan.svg")], source)
    run([hetrec, "plan", "--config", "configs/dlrm_dcnv2_mlperf.toml", "--hw", "h200_sxm", "--gpus", "2",
         "--svg", os.path.join(work, "plan2.svg")], source)
    metrics = os.path.join(work, "m.jsonl")
    run([hetrec, "train", "--config", "configs/demo.toml", "--set", "train.steps=60", "--set", "train.eval_every=20",
         "--set", "train.eval_samples=4096", "--set", "train.progress=off", "--set", "train.log_level=warn",
         "--set", "train.threads=2", "--set", "train.log_every=5", "--set", "train.checkpoint_dir=''",
         "--set", "train.metrics_path='%s'" % metrics], source)
    run([hetrec, "report", "--metrics", metrics, "--out", os.path.join(work, "report.html")], source)
    return [os.path.join(work, p) for p in ("plan.svg", "plan2.svg", "report.html")]


def planted(path, work, kind):
    """A copy of the picture with one planted fault."""
    text = open(path, encoding="utf-8").read()
    if kind == "overlap":
        # A second label drawn over the first text label of the first SVG.
        m = re.search(r'<text x="([0-9.]+)" y="([0-9.]+)"', text)
        fault = '<text x="%s" y="%s">planted overlapping label</text>' % (m.group(1), m.group(2))
    elif kind == "viewport":
        width = float(re.search(r'<svg [^>]*width="([0-9.]+)"', text).group(1))
        fault = '<text x="%.0f" y="30">planted label past the edge</text>' % (width - 40)
    else:  # a table cell too narrow for its word
        fault = None
    if fault:
        at = text.index("</svg>")
        text = text[:at] + fault + "\n" + text[at:]
    else:
        text = text.replace("</table>", '<tr><th>planted</th><td style="white-space: nowrap; max-width: 40px; '
                            'overflow: hidden">planted-cell-content-wider-than-its-box</td></tr></table>', 1)
    out = os.path.join(work, "planted-%s-%s" % (kind, os.path.basename(path)))
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hetrec", required=True)
    p.add_argument("--source", required=True)
    args = p.parse_args()
    browser = chromium()
    if not browser:
        print("SKIPPED: no Chromium (Debian package chromium; tools/install_deps.sh installs it): "
              "the pictures' layout is not checked")
        return SKIP
    work = tempfile.mkdtemp(prefix="hetrec_layout_")
    failed = False
    try:
        pictures = make_pictures(args.hetrec, args.source, work)
        for path in pictures:
            v = render(browser, path, work)
            clean = not v["problems"] and v["labels"] > 0
            print("%-12s %3d labels, %3d cells: %s" % (os.path.basename(path), v["labels"], v["cells"],
                                                       "clean" if clean else "PROBLEMS"))
            for problem in v["problems"]:
                print("    %s: %s" % (problem["kind"], problem["what"]))
            if v["labels"] == 0:
                print("    no text label was measured")
            failed = failed or not clean
        # The test of the test: each planted fault is found.
        for kind, path, expected in (("overlap", pictures[0], "overlap"), ("viewport", pictures[0], "overflow"),
                                     ("overlap", pictures[2], "overlap"), ("cell", pictures[2], "overflow")):
            v = render(browser, planted(path, work, kind), work)
            found = any(pr["kind"] == expected and "planted" in pr["what"] for pr in v["problems"])
            print("planted %-8s in %-11s: %s" % (kind, os.path.basename(path), "found" if found else "NOT FOUND"))
            failed = failed or not found
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
