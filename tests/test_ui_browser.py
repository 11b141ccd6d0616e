"""The MLflow UI a user lands on, in a real browser: after a tiny `hypotrack run h06 --no-peft`, the link
`hypotrack ui` prints under the test's verdict opens the model-training view with both arms on each chart
(grouped by arm: the mean over seeds and the band across them), the runs list shows the verdict, and the
hint about MLflow's GenAI view says what really happens.

Drives Debian's headless Chromium through selenium and /usr/bin/chromedriver (never a downloaded
browser); the packages are installed here when missing and apt-get can (root), else the module is
skipped with the reason. One run, one server and one browser for the whole module. Screenshots land
in the test's folder and are copied to $HYPOTRACK_TEST_REPORTS/ui-browser (in CI: ./test-reports).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from runner_support import cli, env_for, mlflow_runs, start_cli

from hypotrack.ports import unclaimed_port

pytestmark = pytest.mark.slow

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
# Flags that work in a container without a display, a GPU or network access beyond 127.0.0.1.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1600,1100")
TINY_H06 = ["run", "h06", "--no-peft", "--seeds", "2", "--max-steps", "3", "--batch-size", "8", "--num-generations", "4"]
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
    verdicts: dict[str, str]  # each experiment name -> the verdict printed above its link
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
        reports = os.environ.get("HYPOTRACK_TEST_REPORTS") or ("test-reports" if os.environ.get("CI") else None)
        if reports:
            keep = Path(reports) / "ui-browser"
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, keep / path.name)

    def click(self, xpath: str) -> str:
        """Click once the element shows, as a user would, through MLflow's popups (the GenAI view opens one over
        the page); the URL the click leads to."""
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.wait import WebDriverWait

        before = self.driver.current_url
        element = WebDriverWait(self.driver, PAGE_TIMEOUT).until(
            expected_conditions.presence_of_element_located(("xpath", xpath)))
        self.driver.execute_script("arguments[0].click()", element)
        WebDriverWait(self.driver, PAGE_TIMEOUT).until(lambda driver: driver.current_url != before)
        time.sleep(2)  # MLflow settles the URL's own parameters
        return self.driver.current_url

    def run_named(self, name: str):
        return next(r for r in self.runs if r.info.run_name == name or r.info.run_name.startswith(name))

    def parent(self):
        return next(r for r in self.runs if r.data.tags.get("hypotrack.kind") == "test")


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
    server = start_cli(["ui", "--port", str(unclaimed_port())], env, tmp)
    links: dict[str, str] = {}
    verdicts: dict[str, str] = {}
    line, name = server.stdout.readline(), None
    while line and "'Model training'" not in line:  # the hint closes the list
        if match := re.match(r"MLflow UI for \S+: (http://\S+)", line):
            links["ui"] = match.group(1)
        elif match := re.match(r"  (hypotrack/\S+): (.+)", line):
            name, verdicts[match.group(1)] = match.group(1), match.group(2)
        elif (match := re.match(r"    (http://\S+)", line)) and name:
            links[name] = match.group(1)
        line = server.stdout.readline()
    hint = line
    url_after = time.monotonic() - started
    assert "ui" in links and "hypotrack/h06" in links, f"hypotrack ui printed {links}"
    assert "click 'Model training' at the top left once" in hint

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tempfile.mkdtemp(dir=tmp)}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(str(CHROMEDRIVER)), options=options)
    shots = tmp / "screenshots"
    shots.mkdir()
    session = Session(driver, links, verdicts, started, url_after, shots, mlflow_runs(tmp))
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


def test_the_link_shows_both_arms_on_one_reward_chart(ui: Session) -> None:
    parent = ui.parent()
    assert ui.verdicts["hypotrack/h06"] == parent.data.tags["hypotrack.headline"]  # printed above the link
    test_id = parent.data.tags["hypotrack.test"]
    body = ui.open(ui.links["hypotrack/h06"], f"Arms compared (test {test_id[:5]}", "control (reward)",
                   "treatment (reward)", name="test-arms-compared")
    ui.timings["both_arms_on_one_chart_s"] = round(time.monotonic() - ui.started, 1)
    assert "Model training" in body and "Group by: hypotrack.arm" in body
    for genai_only in ("Judges", "Sessions", "Evaluation runs"):
        assert genai_only not in body, f"the experiment opened in MLflow's GenAI view ({genai_only!r} on the page)"
    assert "h06: LoRA weight sync" in body  # the experiment's description: the hypothesis
    section = body.split("Arms compared", 1)[1]
    first_chart = section.split("task_reward", 1)[0]  # the reward chart comes first, both arms on it
    assert "reward" in first_chart and "control (reward)" in first_chart and "treatment (reward)" in first_chart
    assert "ctrl s0" in body and "treat s1" in body  # short run names, whole
    assert ui.driver.find_elements("css selector", ".js-plotly-plot"), "no chart on the page"


def test_the_runs_list_shows_the_verdict_and_each_arm_its_own_duration(ui: Session) -> None:
    table = ui.links["hypotrack/h06"].replace("compareRunsMode=CHART", "compareRunsMode=TABLE")
    headline = ui.parent().data.tags["hypotrack.headline"]
    body = ui.open(table, "hypotrack.headline", headline[:40], name="test-runs-list")
    assert body.count(headline[:40]) >= 4  # on every arm run
    arm = ui.run_named("treat s0")
    assert arm.data.tags["hypotrack.verdict"] == ui.parent().data.tags["hypotrack.verdict"]
    arm_seconds = (arm.info.end_time - arm.info.start_time) / 1000
    test_seconds = (ui.parent().info.end_time - ui.parent().info.start_time) / 1000
    assert 0 < arm_seconds < test_seconds


def test_the_hint_says_how_to_stay_in_the_training_view(ui: Session) -> None:
    ui.open(ui.links["hypotrack/h06"], "Arms compared", name="before-the-click")
    assert "workflowType=genai" in ui.click("//a[normalize-space(.)='h06']")  # MLflow's own link: as the hint warns
    ui.screenshot("breadcrumb-opens-genai")
    assert "workflowType=machine_learning" in ui.click("//*[normalize-space(text())='Model training']")
    ui.click("//a[normalize-space(.)='Experiments']")
    # clicked once, the browser keeps it: MLflow's own links now open the training view
    listed = "//a[normalize-space(.)='hypotrack/h06' and contains(@href, '/experiments/')]"  # not the sidebar's
    assert "workflowType=machine_learning" in ui.click(listed)
    ui.screenshot("after-model-training-once")


def test_the_parent_run_shows_the_verdict_and_the_data(ui: Session) -> None:
    parent = ui.parent()
    base = ui.links["ui"].split("/#/")[0]
    page = f"{base}/#/experiments/{parent.info.experiment_id}/runs/{parent.info.run_id}"
    overview = ui.open(f"{page}?workflowType=machine_learning", "Datasets", "toy-arith", name="parent-overview")
    assert "hypotrack run h06 --no-peft" in overview  # Source: the command line
    verdict = parent.data.tags["hypotrack.verdict"]
    assert f"{verdict.capitalize()}, confidence" in overview or f"{verdict.capitalize()}: h06" in overview
    treatment = parent.data.params["treatment"]  # every setting h06 changes, in words
    assert treatment.startswith("full fine-tuning instead of LoRA; learning_rate ") and treatment in overview


def test_an_arm_run_says_what_it_is_and_what_it_trained_on(ui: Session) -> None:
    arm = ui.run_named("treat s0")
    base = ui.links["ui"].split("/#/")[0]
    body = ui.open(f"{base}/#/experiments/{arm.info.experiment_id}/runs/{arm.info.run_id}?workflowType=machine_learning",
                   "treatment arm of h06", "toy-arith", name="arm-overview")
    assert f"Changes from control: {ui.parent().data.params['treatment']}." in body
    assert "Parent run" in body and "hypotrack run h06 --no-peft" in body
