"""Server memory under uploads: RSS of ``streamlit run app.py`` after N uploads in one browser session.

Half of the uploads are valid canonical-CSV traces, half fail on a malformed row after the whole file; each is
about ``--mib`` MiB (200 jobs with long names). Prints the server's RSS before, after
every fifth upload and at the end, and the session store's limit. The store keeps at most
``PLAYGROUND_UPLOAD_STORE_MB`` (default 128 MiB) per session and never a failed upload.

Usage: ``.venv/bin/python -m benchmarks.upload_memory [--uploads 20] [--mib 5]``.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

from benchmarks.app_compare import CHROMIUM, CHROMIUM_ARGS, serve_app, wait_idle


def server_pid(port: str) -> int:
    """The streamlit process serving ``port`` (found by its command line)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(cmd) and port.encode() in cmd:
            return int(pid)
    raise RuntimeError(f"no streamlit process on port {port}")


def rss_mib(pid: int) -> float:
    """Resident memory of process ``pid``, MiB (0 once it has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(r"VmRSS:\s+(\d+)", status)
    return int(found.group(1)) / 1024 if found else 0.0


def server_rss_mib(port: str) -> float:
    """RSS of the streamlit process serving ``port``."""
    return rss_mib(server_pid(port))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--mib", type=float, default=5.0)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from engine import Job
    from engine.traces import write_csv
    from engine.traces.generator import generate

    with tempfile.TemporaryDirectory() as tmp, serve_app() as url, sync_playwright() as pw:
        port = url.rsplit(":", 1)[1]
        name_chars = int(args.mib * 2**20 / 200)
        files = []
        for i in range(args.uploads):
            jobs = [
                Job(
                    j.job_id,
                    j.submit_s,
                    j.duration_s,
                    j.gpus,
                    j.gpu_fraction,
                    j.vram_gib,
                    j.user,
                    j.job_type,
                    j.priority,
                    j.allowed_types,
                    j.estimate_s,
                    f"{i}-{j.job_id}-" + "n" * name_chars,
                )
                for j in generate("2x4:V100-32", 200, load=0.9, seed=i)
            ]
            path = write_csv(jobs, Path(tmp) / (f"bad{i}.csv" if i % 2 else f"good{i}.csv"))
            if i % 2:
                with open(path, "a") as f:
                    f.write("x,y,z\n")
            files.append(path)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        page.goto(f"{url}/workload?cluster=2x4:V100-32")
        page.get_by_role("tab", name="Upload a trace").click(timeout=120_000)
        wait_idle(page)
        print(f"server RSS before: {server_rss_mib(port):.0f} MiB")
        uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Trace file")
        start = time.perf_counter()
        for i, path in enumerate(files, 1):
            uploader.locator('input[type="file"]').set_input_files(str(path))
            page.get_by_text(path.name).first.wait_for(timeout=120_000)
            page.wait_for_timeout(1000)  # the file's bytes reach the server after its name is shown
            wait_idle(page)
            page.get_by_role("button", name="Load trace").click()
            # Each upload is answered: loaded, or an error naming its line.
            answer = "line 202" if i % 2 == 0 else f"Loaded 200 jobs from {path.name}"
            page.get_by_text(answer).first.wait_for(timeout=120_000)
            wait_idle(page)
            if i % 5 == 0 or i == len(files):
                print(
                    f"after {i} uploads ({i * args.mib:.0f} MiB sent): server RSS {server_rss_mib(port):.0f} MiB, "
                    f"{time.perf_counter() - start:.0f} s"
                )
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
