"""What a researcher sees, in a real browser: the QuestionInspector rendered by JupyterLab, and the static HTML
results page, both driven in headless Chromium (Playwright for Python on Debian's chromium; `make test`
installs JupyterLab, Playwright and chromium). The screenshots go to a temporary folder (a test run never touches
a tracked file); `make screenshots` runs this module with MCQA_SCREENSHOTS=figures/inspector to refresh the
committed ones (docs/testing.md says what each shows). Nothing time-dependent is in them (the file browser, whose
"modified 8s ago" would change every run, is collapsed; the report's "written at" line is left out).

JupyterLab is started on 127.0.0.1 with a random token and private config/runtime/settings folders, on a
temporary copy of notebooks/inspect_questions.ipynb (autosave must never touch the repository's notebook)
pointed at the committed sample results in data/demo/results; it is always shut down (REST shutdown, then the
process group is killed). Any error in the browser console fails a test: that is how a widget front-end
error (a model class that does not load, a view that throws) shows itself.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from paths import REPO

from mcqa_toolkit.datasets import load
from mcqa_toolkit.records import load_results
from mcqa_toolkit.report.headline import dataset_items
from mcqa_toolkit.report.inspector_views import PNG_DPI, probs_figure
from mcqa_toolkit.report.responses import responses_frame

pytestmark = pytest.mark.browser
SAMPLE_RESULTS = REPO / "data" / "demo" / "results"
# where the screenshots go: MCQA_SCREENSHOTS (`make screenshots`: figures/inspector), else a temporary folder
SHOTS = Path(os.environ.get("MCQA_SCREENSHOTS") or tempfile.mkdtemp(prefix="mcqa_screenshots_"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
KEY_BACKGROUND = "rgb(220, 235, 247)"  # report.inspector_views.KEY_STYLE #DCEBF7
STARTUP_SECONDS = 300  # JupyterLab answering, on a busy machine: a hang's bound
TALL_VIEWPORT = 2400  # pixels: the whole inspector widget (question, translations, responses, chart) fits
RENDER_MS = 240_000  # kernel start + imports + loading the demo exam and results, on a busy 2-core machine
UPDATE_MS = 120_000  # the widget's answer to a click (a kernel call, a plot); bounds a hang, decides nothing


def _chromium() -> str:
    path = os.environ.get("MCQA_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail(f"no Chromium at {path}: `make test` installs Debian's chromium (or set MCQA_CHROMIUM)")
    return path


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        # a non-persistent context: Playwright gives Chromium a fresh, empty --user-data-dir
        chromium = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
    except Exception:
        pw.stop()
        raise
    yield chromium
    chromium.close()
    pw.stop()


@pytest.fixture
def page(browser):
    """A page whose console errors, uncaught exceptions and non-local requests are collected. Every wait for the
    page (an action's target, an `expect`) is bounded by UPDATE_MS unless given another bound: Playwright's 5 s
    for `expect` is shorter than a busy 2-core machine may need."""
    from playwright.sync_api import expect

    expect.set_options(timeout=UPDATE_MS)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(UPDATE_MS)
    pg.errors, pg.remote = [], []
    pg.on("console", lambda m: pg.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.errors.append(f"uncaught: {e}"))
    pg.on("request", lambda r: None if re.match(r"(file|data|blob):|https?://127\.0\.0\.1[:/]", r.url)
          else pg.remote.append(r.url))
    yield pg
    context.close()


def _get(url: str, method: str = "GET", timeout: float = 5) -> int:
    with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=timeout) as r:
        return r.status


def _kernels_of(pid: int) -> list[int]:
    """Kernels a server started (they run in their own session, with JPY_PARENT_PID = the server's pid)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and f"JPY_PARENT_PID={pid}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on 127.0.0.1 with a token, serving a copy of inspect_questions.ipynb. It binds a port the system
    picks (--port=0) and names it in its server-info file (jpserver-PID.json in its private runtime folder): no
    port is picked here first and bound there later, which another process could take in between."""
    root = tmp_path_factory.mktemp("lab")
    nb = nbformat.read(REPO / "notebooks" / "inspect_questions.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = re.sub(r"^RUNS_DIR = .*$", f"RUNS_DIR = {str(SAMPLE_RESULTS)!r}", params.source, flags=re.M)
    nbformat.write(nb, root / "inspect_questions.ipynb")
    token = secrets.token_hex(16)
    private = {name: str(tmp_path_factory.mktemp(name)) for name in ("config", "runtime", "settings", "workspaces")}
    news = Path(private["settings"]) / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false"}))  # no "get notified about Jupyter news?" toast
    env = {**os.environ, "JUPYTER_CONFIG_DIR": private["config"], "JUPYTER_RUNTIME_DIR": private["runtime"],
           "JUPYTERLAB_SETTINGS_DIR": private["settings"], "JUPYTERLAB_WORKSPACES_DIR": private["workspaces"]}
    log = open(root.parent / "jupyterlab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", "--port=0",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly", "--ServerApp.terminals_enabled=False",
         "--KernelManager.transport=ipc", *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    info, url = Path(private["runtime"]) / f"jpserver-{proc.pid}.json", ""
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited ({proc.returncode}):\n{(root.parent / 'jupyterlab.log').read_text()}")
            try:
                url = url or f"http://127.0.0.1:{json.loads(info.read_text())['port']}"
                if _get(f"{url}/api/status?token={token}") == 200:
                    break
            except (OSError, ValueError, KeyError):  # not listening yet, or its info file not (fully) written
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within {STARTUP_SECONDS} s")
            time.sleep(0.5)
        yield {"url": url, "token": token, "root": root}
    finally:
        kernels = _kernels_of(proc.pid)
        try:
            if url:
                _get(f"{url}/api/shutdown?token={token}", method="POST")
                proc.wait(timeout=20)
        except Exception:
            pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for pid in kernels:  # normally already gone with the server; never leave one behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()


def _shot(page, name: str, element=None) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    (element or page).screenshot(path=str(path))
    return path


def test_inspector_renders_and_responds_in_jupyterlab(lab, page):
    from playwright.sync_api import expect

    items = {lang: load("demo", language=lang) for lang in ("pt", "es")}
    page.goto(f"{lab['url']}/lab/tree/inspect_questions.ipynb?token={lab['token']}")
    # the Run menu's commands are enabled once the notebook has a kernel and is the current widget
    page.locator(".jp-StatusBar-Widget", has_text=re.compile(r"Python 3.*Idle")).wait_for(timeout=RENDER_MS)
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()  # collapse the file browser
    expect(page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")).to_have_count(0)
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.get_by_role("menuitem", name="Run", exact=True).click()
    # "Run All" in JupyterLab 4.6 ("Run All Cells" before)
    run_all = page.locator(".lm-Menu-item:not(.lm-mod-disabled) .lm-Menu-itemLabel")
    run_all.filter(has_text=re.compile(r"^Run All( Cells)?$")).click()
    inspector = page.locator(".widget-vbox", has=page.locator(".mcqa-item")).last
    inspector.wait_for(state="visible", timeout=RENDER_MS)
    counter = inspector.locator(".widget-label").filter(has_text=re.compile(r"^\d+ / \d+$"))
    assert counter.inner_text() == "1 / 264"
    first = dataset_items(SAMPLE_RESULTS)[0]   # the runs' items, merged in the order of their folders
    question = inspector.locator(".mcqa-item")
    assert question.locator("h3").inner_text() == first.item_id
    assert first.stem in question.locator(".mcqa-stem").inner_text()
    shown = "s => s.selectedIndex >= 0 ? s.options[s.selectedIndex].text : '(empty)'"
    for label, start in {"Dataset": "all", "Language": "all", "Subject": "all", "Year": "all",
                         "Outcome": "any"}.items():
        select = (inspector.locator(".widget-dropdown").filter(has=page.locator("label", has_text=label))
                  .locator("select"))
        assert select.evaluate(shown) == start, f"the {label} filter shows {select.evaluate(shown)!r}, not {start!r}"
    # the widget's top at the top of the notebook panel: the same scroll position, hence pixels, every run
    inspector.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.mouse.move(0, 0)
    _shot(page, "inspector_1_loaded")

    # filter by language: the same question stays on screen, now in Spanish
    language = inspector.locator(".widget-dropdown").filter(has=page.locator("label", has_text="Language"))
    language.locator("select").select_option(label="es")
    expect(counter).to_have_text("1 / 66", timeout=UPDATE_MS)
    expect(question.locator("h3")).to_have_text(items["es"][0].item_id)

    # next question: its text, its key highlighted
    inspector.locator("button", has_text="next ▶").click()
    item = items["es"][1]
    expect(counter).to_have_text("2 / 66", timeout=UPDATE_MS)
    expect(question.locator("h3")).to_have_text(item.item_id)  # widgets update one message at a time
    assert question.locator(".mcqa-stem").inner_text().strip() == item.stem.strip()
    key = question.locator(".mcqa-option.mcqa-key")
    assert key.count() == 1 and item.options[item.answer] in key.inner_text() and "✔ key" in key.inner_text()
    assert key.evaluate("el => getComputedStyle(el).backgroundColor") == KEY_BACKGROUND
    assert question.locator(".mcqa-option").count() == item.n_options

    # one more: the sample runs of both strategies answered this one (enem_1shot keeps bio-02 as its shot)
    inspector.locator("button", has_text="next ▶").click()
    expect(counter).to_have_text("3 / 66", timeout=UPDATE_MS)
    expect(question.locator("h3")).to_have_text(items["es"][2].item_id)

    # the option-probability chart of the three sample runs that answered it (S5, enem_1shot's five shuffles,
    # one shuffle of the enem_1shot CAT): its pixel size is the figure's, 2 x 2 panels, and 1 x 2 without enem_1shot
    item = items["es"][2]
    records = load_results(SAMPLE_RESULTS)
    records = records[records["item_id"] == item.item_id]
    runs = ["gemma-3-270m · S5", "gemma-3-270m · enem_1shot", "gemma-3-270m · enem_1shot_cat"]
    size = {n: [int(round(x * PNG_DPI)) for x in probs_figure(responses_frame(r, item), item).get_size_inches()]
            for n, r in ((3, records), (2, records[records["strategy"] != "enem_1shot"]))}
    assert size[3][1] > size[2][1]
    responses = inspector.locator("table.mcqa-responses")
    expect(responses.locator("tr td:first-child")).to_have_text(runs, timeout=UPDATE_MS)
    chart = inspector.locator(".widget-output img")
    is_drawn = "([img, w, h]) => img.complete && img.naturalWidth === w && img.naturalHeight === h"
    page.wait_for_function(is_drawn, arg=[chart.element_handle(timeout=UPDATE_MS), *size[3]], timeout=UPDATE_MS)
    assert chart.get_attribute("src").startswith("data:image/png;base64,")
    # element screenshots (the whole widget, then the chart), which do not depend on where the notebook is
    # scrolled; the notebook panel scrolls inside a fixed-size page, so the widget must fit in the viewport
    page.set_viewport_size({"width": 1400, "height": TALL_VIEWPORT})
    inspector.scroll_into_view_if_needed()
    _shot(page, "inspector_2_es_question", inspector)
    _shot(page, "inspector_3_chart", inspector.locator(".widget-output"))

    # toggle one model · strategy off: its row and its chart panel disappear, the others stay
    toggle = inspector.locator("button.widget-toggle-button").filter(has_text=re.compile(r"· enem_1shot\s*$"))
    assert "mod-active" in toggle.get_attribute("class")
    toggle.click()
    expect(responses.locator("tr td:first-child")).to_have_text([runs[0], runs[2]], timeout=UPDATE_MS)
    assert "mod-active" not in toggle.get_attribute("class")
    page.wait_for_function(is_drawn, arg=[inspector.locator(".widget-output img").element_handle(timeout=UPDATE_MS),
                                          *size[2]], timeout=UPDATE_MS)
    _shot(page, "inspector_4_toggled_off", inspector)
    assert page.errors == [], "errors in the browser console:\n" + "\n".join(page.errors)
    assert page.remote == [], f"requests left the machine: {page.remote}"


@pytest.fixture(scope="module")
def html_report(tmp_path_factory):
    """`mcqa report --html` over a copy of the committed sample results (analysis notebooks included)."""
    from mcqa_toolkit import cli

    root = tmp_path_factory.mktemp("report")
    shutil.copytree(SAMPLE_RESULTS, root / "outputs")
    assert cli.main(["report", "--runs", str(root / "outputs"), "--figures", str(root / "figures"),
                     "--latex", str(root / "latex"), "--html"]) == 0
    return root / "outputs" / "report.html"


def test_html_report_renders_sorts_and_is_self_contained(html_report, page):
    page.goto(html_report.as_uri())
    _shot(page, "report_1_headline", page.locator("table#headline"))
    assert page.title() == "mcqa_toolkit results"
    runs = page.locator("table#runs")
    assert runs.locator("tbody tr").count() == 13  # the 13 sample runs (12 demo, 1 course exam)
    header = [th.inner_text() for th in runs.locator("thead th").all()]
    col = header.index("accuracy")
    values = lambda: [float(v) for v in runs.locator(f"tbody tr td:nth-child({col + 1})").all_inner_texts()]  # noqa: E731
    runs.locator("thead th").nth(col).click()
    assert values() == sorted(values()) and runs.locator("thead th").nth(col).get_attribute("aria-sort") == "ascending"
    runs.locator("thead th").nth(col).click()
    assert values() == sorted(values(), reverse=True)
    page.mouse.move(0, 0)  # no row highlighted by the hover style
    _shot(page, "report_2_runs_by_accuracy", runs)
    link = runs.locator("tbody tr td a").first
    assert link.get_attribute("href").endswith("/run_model.ipynb") and not link.get_attribute("href").startswith("/")
    pivot = page.locator("table#headline")
    assert {"pt", "es", "it", "en"} <= {th.inner_text() for th in pivot.locator("thead th").all()}
    assert pivot.locator("tbody tr").count() == 4  # gemma-3-270m x (demo S5, enem_1shot, its CAT; course exam)
    images = page.locator("figure img")
    assert images.count() >= 10
    for img in images.all():
        img.scroll_into_view_if_needed()
        assert img.evaluate("i => i.complete && i.naturalWidth > 0")
    assert page.locator("table.sortable").count() >= 10  # runs, headline, notebook headlines, saved tables
    dif = page.locator("#sec-dif")   # 17_dif: the sample runs hold 11 patterns per language, so simulated persons
    assert dif.count() == 1 and "SIMULATED" in page.locator("#sec-dif + p").inner_text()
    assert page.locator("table#dif-items tbody tr").count() >= 1
    page.locator("#sec-figures").evaluate("h => h.scrollIntoView()")  # the heading at the top of the view
    _shot(page, "report_3_figures")
    assert page.errors == [], "errors in the browser console:\n" + "\n".join(page.errors)
    assert page.remote == [], f"the report loaded something from the network: {page.remote}"
    html = html_report.read_text()
    assert not re.search(r"""(src|href)=["']https?:""", html)
    # the analysis notebooks ran on the demo dataset's 12 runs (the course-exam run is 16_course_exam's)
    assert json.loads((html_report.parent.parent / "latex" / "10_tables_headline.json").read_text())["n_runs"] == 12
