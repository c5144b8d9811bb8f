"""The HTML report (`--report-dir DIR` writes DIR/report.html) as a person sees it: a
concurrency sweep, a `--ramp` run and a run that never stabilizes (exit code 2) against
`inferperf serve`, each page opened in headless Chromium (driven over the DevTools protocol,
chromium_lib.py). Each page loads with no uncaught exception, console error or failed load;
every chart is there and holds marks that the browser laid out inside the chart; the page
of the unstable run says so. A full-page screenshot of each is written to
target/e2e/report-{sweep,ramp,unstable}.png to be looked at.
"""

import json
import shutil

import pytest

from chromium_lib import Chromium, find_chromium
from e2e_lib import ARTIFACTS, INFERPERF, note, run_tool

EMBEDDED_MODELS = {
    # 5 ms per request, four executions in parallel: throughput grows over concurrency 1-4.
    "slow": "sleep:ms=5,instances=4",
    # A service time drawn from an exponential law: no three windows agree within 1%.
    "wild": "sleep:ms=5,dist=exponential",
}

# What the page's charts hold once laid out: per <svg>, its title (aria-label), its marks by
# element, the filled and hollow circles, marks with a <title>, and marks that the browser
# drew with no size or (partly) outside the chart.
CHARTS_JS = r"""
(() => Array.from(document.querySelectorAll('svg')).map(svg => {
  const view = svg.viewBox.baseVal;
  const box = svg.getBoundingClientRect();
  const marks = Array.from(svg.querySelectorAll('.mark'));
  const byTag = {};
  let titled = 0, empty = 0, outside = 0, filled = 0, hollow = 0;
  for (const m of marks) {
    const tag = m.tagName.toLowerCase();
    byTag[tag] = (byTag[tag] || 0) + 1;
    if (m.querySelector(':scope > title') && m.querySelector(':scope > title').textContent) titled++;
    const b = m.getBBox();
    const onePoint = tag === 'polyline' && m.points.numberOfItems === 1;
    if (!(b.width > 0 || b.height > 0) && !onePoint) empty++;
    if (!(b.x >= -0.5 && b.y >= -0.5 && b.x + b.width <= view.width + 0.5
          && b.y + b.height <= view.height + 0.5)) outside++;
    if (tag === 'circle') {
      if (m.getAttribute('fill') === 'white') hollow++; else filled++;
    }
  }
  return {title: svg.getAttribute('aria-label'), marks: marks.length, byTag, titled, empty,
          outside, filled, hollow, width: box.width, height: box.height};
}))()
"""


@pytest.fixture(scope="module")
def chromium():
    exe, version = find_chromium()
    note(f"html     browser: {version} ({exe})")
    with Chromium(exe, ARTIFACTS / "chromium.log") as browser:
        yield browser


def profile(server, name, args, codes):
    """One inferperf run with --report-dir target/e2e/html-report/NAME; returns the folder
    and the results file."""
    folder = ARTIFACTS / "html-report" / name
    shutil.rmtree(folder, ignore_errors=True)
    run = run_tool(
        [INFERPERF, "-u", server.http, *args, "--report-dir", folder],
        f"html-report-{name}",
        timeout=120,
    )
    assert run.returncode in codes, run.show()
    assert (folder / "report.html").is_file(), run.show()
    results = json.loads((folder / "results.json").read_text())
    return folder, results, run


def load_page(chromium, folder, name):
    """Opens the page, fails on any error it logged, writes its screenshot; the charts."""
    errors = chromium.open(folder / "report.html")
    assert not errors, f"{name}: the page logged errors while loading:\n" + "\n".join(errors)
    shot = ARTIFACTS / f"report-{name}.png"
    width, height, size = chromium.screenshot(shot)
    assert size > 10_000, f"{shot}: {size} bytes"
    charts = chromium.evaluate(CHARTS_JS)
    assert charts, f"{name}: the page has no chart"
    for chart in charts:
        where = f"{name}: chart {chart['title']!r}: {chart}"
        assert chart["marks"] > 0, "an empty chart: " + where
        assert chart["titled"] == chart["marks"], "a mark without its <title>: " + where
        assert chart["empty"] == 0, "a mark drawn with no size: " + where
        assert chart["outside"] == 0, "a mark outside its chart: " + where
        assert chart["width"] > 100 and chart["height"] > 100, "a chart not laid out: " + where
    counts = ", ".join(f"{c['title']}: {c['marks']}" for c in charts)
    note(f"html     {name}: {len(charts)} charts, marks per chart: {counts}")
    note(f"html     {name}: screenshot {shot.relative_to(ARTIFACTS.parent.parent)} ({width}x{height})")
    by_title = {chart["title"]: chart for chart in charts}
    assert len(by_title) == len(charts), f"{name}: two charts share a title: {counts}"
    return by_title


def level_name(level):
    return f"concurrency {level['load']['concurrency']}"


def test_sweep_report_in_chromium(embedded_server, chromium):
    folder, results, run = profile(
        embedded_server,
        "sweep",
        ["-m", "slow", "--concurrency-range", "1:4:1", "-p", "500", "-r", "5"],
        (0, 2),
    )
    levels = results["levels"]
    assert [level_name(l) for l in levels] == [f"concurrency {c}" for c in (1, 2, 3, 4)]
    charts = load_page(chromium, folder, "sweep")

    # The throughput-latency curve: p50, p90, p99, a point per level each (and the knee).
    curve = charts.pop("Latency against throughput")
    assert curve["byTag"].get("polyline") == 3 and curve["byTag"].get("circle") == 3 * 4, curve
    assert curve["byTag"].get("line", 0) == (1 if results["knee"] is not None else 0), curve
    # A latency percentile plot per level, the curve through a dozen percentiles or more.
    for level in levels:
        plot = charts.pop(f"Latency percentiles, {level_name(level)}")
        assert plot["byTag"].get("polyline") == 1 and plot["byTag"]["circle"] >= 12, plot
    # Where the time went: a stacked bar per level, every part a rect.
    bars = charts.pop("Average latency by part")
    assert set(bars["byTag"]) == {"rect"} and bars["marks"] >= 4, bars
    # The windows of each level over time: one point per window, the merged ones filled.
    for level in levels:
        n, merged = len(level["windows"]), len(level["merged_windows"])
        tput = charts.pop(f"Windows, {level_name(level)}: throughput")
        assert (tput["filled"], tput["hollow"]) == (merged, n - merged), (level["load"], tput)
        latency = charts.pop(f"Windows, {level_name(level)}: latency")
        assert latency["byTag"].get("polyline") == 2 and latency["filled"] == 2 * merged, latency
    # Client health: client CPU and send lag, a point per level.
    cpu = charts.pop(next(t for t in charts if t.startswith("Client CPU (share of")))
    assert cpu["byTag"].get("circle") == 4, cpu
    lag = charts.pop("Send lag")
    assert lag["byTag"].get("circle") == 2 * 4, lag
    assert not charts, f"charts not expected on a sweep's page: {list(charts)}"


def test_ramp_report_in_chromium(embedded_server, chromium):
    folder, results, run = profile(
        embedded_server,
        "ramp",
        ["-m", "slow", "--ramp", "3s", "--request-rate-range", "50:200"],
        (0,),
    )
    buckets = results["timeline"]["buckets"]
    assert len(buckets) >= 3, buckets
    charts = load_page(chromium, folder, "ramp")
    # The per-second timeline: throughput and target per second, latency p50 and p99.
    tput = charts.pop("Timeline (rate): throughput per second")
    assert tput["byTag"] == {"polyline": 2, "circle": 2 * len(buckets)}, tput
    latency = charts.pop("Timeline (rate): latency per second")
    answered = sum(1 for b in buckets if b["window"]["latency"]["count"] > 0)
    assert latency["byTag"] == {"polyline": 2, "circle": 2 * answered}, latency
    assert not charts, f"charts not expected on a ramp's page: {list(charts)}"


def test_unstable_report_in_chromium(embedded_server, chromium):
    folder, results, run = profile(
        embedded_server,
        "unstable",
        ["-m", "wild", "--concurrency-range", "2", "-p", "300", "-s", "1", "-r", "3"],
        (2,),
    )
    (level,) = results["levels"]
    assert not level["stable"] and len(level["windows"]) == 3, level
    charts = load_page(chromium, folder, "unstable")
    tput = charts["Windows, concurrency 2: throughput"]
    assert tput["filled"] + tput["hollow"] == 3, tput
    assert charts["Windows, concurrency 2: latency"]["byTag"].get("circle") == 6, charts
    assert "Latency against throughput" in charts and "Average latency by part" in charts
    # The page says, in words a reader sees, that the level is unstable.
    text = chromium.evaluate("document.body.innerText")
    says_unstable = "unstable" in text.lower()
    assert says_unstable, f"the page of an unstable run never says 'unstable': {text[:600]}"
    header, row = chromium.evaluate(
        "Array.from(document.querySelectorAll('table')[1].rows).slice(0, 2)"
        ".map(r => Array.from(r.cells).map(c => c.innerText))"
    )
    stable = row[header.index("Stable")]
    assert stable == "no (unstable)", dict(zip(header, row))
    note(f"html     unstable: the levels table says Stable: {stable!r}")
