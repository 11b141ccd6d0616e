"""The MLflow UI a user lands on, in a real browser: after a tiny `hypotrack run h06 --no-peft`, the
link `hypotrack ui` prints opens the model-training view with the arms compared at first sight, and
every run says what it is and what it trained on.

Drives Debian's headless Chromium through selenium and /usr/bin/chromedriver (never a downloaded
browser); the packages are installed here when missing and apt-get can (root), else the module is
skipped with the reason. One run, one server and one browser for the whole module. Screenshots land
in the test's folder and, when HYPOTRACK_TEST_ARTIFACTS names a folder, are copied there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runner_support import cli, env_for, mlflow_runs, start_cli

pytestmark = pytest.mark.slow

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
# Flags that work in a container without a display, a GPU or network access beyond 127.0.0.1.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1600,1100")
TINY_H06 = ["run", "h06", "--no-peft", "--seeds", "1", "--max-steps", "3", "--batch-size", "8", "--num-generations", "4"]
PAGE_TIMEOUT = 90.0


def chromium_missing() -> str | None:
    """Install Debian's chromium and chromium-driver where missing; the reason they are not there, or None."""
    if CHROMIUM.exists() and CHROMEDRIVER.exists():
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "chromium/chromium-driver are not installed and apt-get cannot run as root here"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium", "chromium-driver"]
    for commands in ([install], [["apt-get", "update", "-q"], install]):
        if all(subprocess.run(c, env=env, capture_output=True, timeout=900).returncode == 0 for c in commands):
            break
    if CHROMIUM.exists() and CHROMEDRIVER.exists():
        return None
    return "apt-get could not install chromium and chromium-driver"


@dataclass
class Session:
    driver: object
    links: dict[str, str]  # what `hypotrack ui` printed: "ui" and each experiment name -> URL
    started: float  # when `hypotrack ui` was started (time.monotonic)
    url_after: float  # seconds until it printed the URL
    shots: Path
    runs: list = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def open(self, url: str, *texts: str, name: str) -> str:
        """Load a page, wait until it shows every text, screenshot it; the page's text."""
        self.driver.get(url)
        deadline, body = time.monotonic() + PAGE_TIMEOUT, ""
        while time.monotonic() < deadline:
            body = self.text()
            if all(text in body for text in texts):
                break
            time.sleep(0.5)
        time.sleep(1.5)  # let the charts finish drawing for the screenshot
        self.screenshot(name)
        missing = [text for text in texts if text not in body]
        assert not missing, f"{name}: the page never showed {missing}; it shows:\n{body[:3000]}"
        for button in self.driver.find_elements("xpath", "//button[normalize-space(.)='Show more']"):
            button.click()  # a long description is folded
        return self.text()

    def text(self) -> str:
        """The page's rendered text, scrolled out of view or not."""
        return self.driver.execute_script("return document.body.innerText")

    def screenshot(self, name: str) -> None:
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        keep = os.environ.get("HYPOTRACK_TEST_ARTIFACTS")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, Path(keep) / path.name)

    def run_named(self, name: str):
        return next(r for r in self.runs if r.info.run_name == name or r.info.run_name.startswith(name))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def ui(tmp_path_factory, toy_cache: Path):
    reason = chromium_missing()
    if reason:
        pytest.skip(reason)
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[test]')")
    from conftest import copy_project

    tmp = tmp_path_factory.mktemp("ui-browser")
    env = env_for(tmp, toy_cache, copy_project(tmp / "project", only=("h06",)))
    result = cli(TINY_H06, env, tmp, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    started = time.monotonic()
    server = start_cli(["ui", "--port", str(_free_port())], env, tmp)
    links: dict[str, str] = {}
    line = server.stdout.readline()
    while line and "the links above" not in line:
        if match := re.match(r"MLflow UI for \S+: (http://\S+)", line):
            links["ui"] = match.group(1)
        elif match := re.match(r"\s+(hypotrack/\S+): (http://\S+)", line):
            links[match.group(1)] = match.group(2)
        line = server.stdout.readline()
    url_after = time.monotonic() - started
    assert "ui" in links and "hypotrack/h06" in links, f"hypotrack ui printed {links}"

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tempfile.mkdtemp(dir=tmp)}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(str(CHROMEDRIVER)), options=options)
    shots = tmp / "screenshots"
    shots.mkdir()
    session = Session(driver, links, started, url_after, shots, mlflow_runs(tmp))
    session.timings["browser_ready_s"] = round(time.monotonic() - started, 1)
    try:
        yield session
    finally:
        driver.quit()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        timings = {"url_printed_s": round(url_after, 1), **session.timings}  # seconds since `hypotrack ui` started
        (shots / "timings.json").write_text(json.dumps(timings, indent=1))
        print(f"\nhypotrack ui, seconds from its start: {timings}; screenshots in {shots}")


def test_the_link_opens_the_model_training_view_with_the_arms_compared(ui: Session) -> None:
    body = ui.open(ui.links["hypotrack/h06"], "arms/outcome/reward", "Runs", name="experiment-charts")
    ui.timings["experiment_page_rendered_s"] = round(time.monotonic() - ui.started, 1)
    assert "Model training" in body
    for genai_only in ("Judges", "Sessions", "Evaluation runs"):
        assert genai_only not in body, f"the experiment opened in MLflow's GenAI view ({genai_only!r} on the page)"
    signature = sorted({key.rsplit("/", 1)[0] for key in ui.run_named("h06 test").data.metrics
                        if key.startswith("arms/signature/")})
    assert signature and signature[0] in body  # a metric the criteria read, its arms side by side
    assert ui.driver.find_elements("css selector", ".js-plotly-plot"), "no chart on the experiment page"
    table = ui.links["hypotrack/h06"].replace("compareRunsMode=CHART", "compareRunsMode=TABLE")
    ui.open(table, "Dataset", "toy-arith", name="experiment-table")  # the parent row lists its arms' data


def test_the_parent_run_shows_the_verdict_the_reward_chart_and_the_data(ui: Session) -> None:
    parent = ui.run_named("h06 test")
    base = ui.links["ui"].split("/#/")[0]
    page = f"{base}/#/experiments/{parent.info.experiment_id}/runs/{parent.info.run_id}"
    charts = ui.open(f"{page}/model-metrics?workflowType=machine_learning", "arms/outcome/reward", "control",
                     "treatment", "delta", name="parent-model-metrics")
    assert "arms/outcome/task_reward" in charts
    overview = ui.open(f"{page}?workflowType=machine_learning", "Datasets", "toy-arith", name="parent-overview")
    assert "hypotrack run h06 --no-peft" in overview  # Source: the command line
    assert f"{parent.data.tags['hypotrack.verdict'].capitalize()}, confidence" in overview
    treatment = parent.data.params["treatment"]  # every setting h06 changes, in words
    assert treatment.startswith("full fine-tuning instead of LoRA; learning_rate ") and treatment in overview


def test_an_arm_run_says_what_it_is_and_what_it_trained_on(ui: Session) -> None:
    arm = ui.run_named("treatment-seed0")
    base = ui.links["ui"].split("/#/")[0]
    body = ui.open(f"{base}/#/experiments/{arm.info.experiment_id}/runs/{arm.info.run_id}?workflowType=machine_learning",
                   "treatment arm of h06", "toy-arith", name="arm-overview")
    assert f"Changes from control: {ui.run_named('h06 test').data.params['treatment']}." in body
    assert "Parent run" in body and "hypotrack run h06 --no-peft" in body
