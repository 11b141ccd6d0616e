"""Time `hypotrack ui` from its start to a rendered experiment page, in headless Chromium.

    python tests/tools/bench_ui.py sqlite:////path/to/mlflow.db [--rounds 2] [--mlflow-defaults]

The store needs a hypotrack test (e.g. after `hypotrack run h06 --no-peft`). The browser is started
first, so its own start-up is not counted. For each round: when `hypotrack ui` printed the experiment's
link (it does once the server answers) and when the page showed the arms' reward charts.
`--mlflow-defaults` also times a plain `mlflow server` with MLflow's defaults (four web workers and
the GenAI job consumers), as `hypotrack ui` started it before. Prints the 1-minute load average too:
on a shared machine the figures are upper bounds.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from hypotrack.ports import unclaimed_port

CHART_TEXT = "treatment (reward)"  # the saved view's reward chart, both arms on it


def browser():  # a selenium WebDriver
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={tempfile.mkdtemp()}", "--window-size=1600,1100"):
        options.add_argument(flag)
    return webdriver.Chrome(service=webdriver.ChromeService("/usr/bin/chromedriver"), options=options)


def time_page(driver, url: str, started: float) -> float:
    driver.get(url)
    while CHART_TEXT not in driver.execute_script("return document.body.innerText"):
        time.sleep(0.2)
    return time.monotonic() - started


def hypotrack_ui(store: str, driver) -> tuple[float, float]:
    started = time.monotonic()
    ui = subprocess.Popen([sys.executable, "-m", "hypotrack.cli", "ui", "--tracking-uri", store, "--port",
                           str(unclaimed_port())], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for line in ui.stdout:  # each experiment: "  hypotrack/hNN: <verdict>", then its link indented below
            match = re.match(r"    (http://\S+)", line)
            if match:
                printed = time.monotonic() - started
                return printed, time_page(driver, match.group(1), started)
        raise RuntimeError("hypotrack ui printed no experiment link")
    finally:
        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=60)


def mlflow_defaults(store: str, driver, experiment_id: str) -> tuple[float, float]:
    port = unclaimed_port()
    started = time.monotonic()
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store, "--host",
                               "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                time.sleep(0.25)
        answered = time.monotonic() - started
        url = (f"http://127.0.0.1:{port}/#/experiments/{experiment_id}/runs"
               "?workflowType=machine_learning&compareRunsMode=CHART")
        return answered, time_page(driver, url, started)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", help="the MLflow tracking URI of a store holding a hypotrack test")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--mlflow-defaults", action="store_true")
    parser.add_argument("--experiment-id", default="1", help="for --mlflow-defaults: the experiment to open")
    args = parser.parse_args()
    driver = browser()
    try:
        for _ in range(args.rounds):
            printed, rendered = hypotrack_ui(args.store, driver)
            print(f"hypotrack ui: link printed {printed:.1f} s, charts rendered {rendered:.1f} s "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
            if args.mlflow_defaults:
                answered, rendered = mlflow_defaults(args.store, driver, args.experiment_id)
                print(f"mlflow server, defaults: first answer {answered:.1f} s, charts rendered {rendered:.1f} s "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
