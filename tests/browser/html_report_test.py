#!/usr/bin/env python3
"""tests/browser/html_report_test.py — `deltaproof report html` and
`report diff --html`, opened in a real browser (headless Chromium, Debian's
chromium + chromium-driver, driven by selenium).

It makes its own reports: a clean gate report (a multi-chunk fixture and a
packed one), the same gates with a kernel fault switched on (falsify build),
and takes a campaign report (`falsify run --report`). It writes the pages,
opens each from a file URL and fails on
  - any console message of level SEVERE (a script error, a failed load),
  - any resource fetched at all (the page must be self-contained),
  - a page whose script did not finish (body[data-ready] unset),
  - a DOM that lacks the key elements or shows numbers other than the JSON's:
    each section's verdict and counts, a red gate's verdict, each of its
    terms' rel and bar in the opened details, the heat map's cells, the
    verdict filter's count, sorting by rel / bar, each fault's status and
    margin, the separation plot's points, the diff's turned-red list, and
    (on the campaign edited to break two expectations) the matrix cells that
    say Survived and GreenBroken.
It also opens the committed mutation run of the CPU kernels
(reports/gpu/717e845/mutate-cpu.json.xz): the score as the JSON says, one row
per mutant with the JSON's status, and each survivor's diff open.
Then it shows the checks can fail: a page with a script error, one with a
figure changed and one that loads an image are each refused.
Screenshots go to OUT/*.png.

  python3 tests/browser/html_report_test.py --deltaproof build/bin/deltaproof \
      --falsify-deltaproof build-falsify/bin/deltaproof \
      --campaign build-falsify/falsify-cpu.json --out build/html-test
"""
import argparse
import json
import lzma
import math
import pathlib
import shutil
import subprocess
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

CLEAN_GATES = ["gdn2.cpu-chunk.t256-c16.*", "kda.cpu-recurrent.varlen-c64-k16.*"]
FAULTED_GATES = ["gdn2.cpu-chunk.t256-c16.*"]
FAULT = "state-not-carried"


def run(command, expect=(0,)):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode not in expect:
        sys.exit(f"FAIL: {' '.join(command)} exited {result.returncode}:\n"
                 f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return result.stdout


def figure(x):
    """C++ html::figure: '{:.2e}', '0', '-' for null, 'inf'."""
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return "0" if x == 0 else f"{x:.2e}"


def browser():
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1500,1000", "--force-device-scale-factor=1"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(driver_path), options=options)


class Page:
    """One page opened in the browser; `problems` collects what is wrong."""

    def __init__(self, driver, path):
        self.driver, self.path, self.problems = driver, path, []
        driver.get(path.resolve().as_uri())
        for entry in driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                self.problems.append(f"console error: {entry['message']}")
        fetched = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")
        if fetched:
            self.problems.append(f"the page fetched {fetched}: it must be self-contained")
        external = driver.execute_script(
            "return Array.from(document.querySelectorAll('[src], link[href], a[href]'))"
            ".map(e => e.getAttribute('src') || e.getAttribute('href'))"
            ".filter(u => !u.startsWith('#'))")
        if external:
            self.problems.append(f"the page refers to external resources {external}")
        if driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready") != "1":
            self.problems.append("the page's script did not finish (body[data-ready] unset)")

    def expect(self, condition, what):
        if not condition:
            self.problems.append(what)
        return condition

    def one(self, css, root=None):
        found = (root or self.driver).find_elements(By.CSS_SELECTOR, css)
        self.expect(len(found) >= 1, f"no element {css!r}")
        return found[0] if found else None

    def shot(self, element, name):
        if element is not None:
            self.driver.execute_script("arguments[0].scrollIntoView()", element)
            element.screenshot(str(name))


def check_gate_section(page, section, report):
    gates = report["gates"]
    counts = {v: sum(g["verdict"] == v for g in gates) for v in ("pass", "fail", "skipped")}
    verdict = page.one(".verdict .badge", section)
    if verdict is not None:
        page.expect(verdict.text == report["verdict"],
                    f"verdict shows {verdict.text!r}, the JSON says {report['verdict']!r}")
    text = page.one(".counts", section)
    want = (f"{len(gates)} gates: {counts['pass']} passed, {counts['fail']} failed, "
            f"{counts['skipped']} skipped")
    if text is not None:
        page.expect(text.text == want, f"counts read {text.text!r}, want {want!r}")
    rows = section.find_elements(By.CSS_SELECTOR, "table.sortable > tbody.row")
    page.expect(len(rows) == len(gates), f"{len(rows)} gate rows for {len(gates)} gates")
    # the first red gate, else the first: verdict, then each term's rel and bar in its details
    gate = next((g for g in gates if g["verdict"] == "fail"), gates[0])
    row = page.one(f"tbody.row[data-name='{gate['name']}']", section)
    if row is None:
        return None
    badge = page.one("td .badge", row)
    page.expect(badge is not None and badge.text == gate["verdict"],
                f"{gate['name']}: verdict {badge.text if badge else None!r}, JSON {gate['verdict']!r}")
    details = page.one("tr.details", row)
    if not details.is_displayed():
        page.one("button.open", row).click()
    page.expect(details.is_displayed(), f"{gate['name']}: the details do not open")
    for term in gate["terms"]:
        cells = details.find_elements(By.CSS_SELECTOR, f"tr[data-term='{term['term']}'] td")
        if not page.expect(len(cells) >= 4, f"{gate['name']}: no row for term {term['term']}"):
            continue
        page.expect(cells[2].text == figure(term.get("rel")),
                    f"{gate['name']} {term['term']}: rel shows {cells[2].text!r}, "
                    f"JSON {figure(term.get('rel'))!r}")
        if term["bar"] > 0:
            page.expect(cells[3].text == f"{term['bar']:.1e}",
                        f"{gate['name']} {term['term']}: bar shows {cells[3].text!r}, "
                        f"JSON {term['bar']:.1e}")
    # a cell per chunk of each term, and one for the whole term
    want = sum(len(t.get("per_chunk_rel", [])) + 1 for t in gate["terms"])
    cells = details.find_elements(By.CSS_SELECTOR, ".heat svg rect")
    page.expect(len(cells) == want,
                f"{gate['name']}: heat map has {len(cells)} cells, its terms' chunks and wholes "
                f"make {want}")
    # the verdict filter: only the red gates stay
    box = page.one(".filters", section)
    select = page.one("select[data-key='verdict']", box)
    if select is not None and counts["fail"]:
        Select(select).select_by_visible_text("fail")
        shown = [r for r in rows if r.is_displayed()]
        page.expect(len(shown) == counts["fail"],
                    f"verdict filter 'fail' shows {len(shown)} rows, the JSON has {counts['fail']}")
        page.expect(page.one(".count", box).text.startswith(f"{counts['fail']} of {len(gates)}"),
                    "the filter's count line is wrong")
        Select(select).select_by_visible_text("all")
    # sorting by rel / bar, twice: descending puts the largest first
    head = page.one("th[data-key='worst']", section)
    head.click()
    head.click()
    first = section.find_elements(By.CSS_SELECTOR, "table.sortable > tbody.row")[0]
    worst = [float(r.get_attribute("data-worst")) for r in rows
             if r.get_attribute("data-worst") not in ("nan", None)]
    page.expect(float(first.get_attribute("data-worst")) == max(worst),
                "sorting by rel / bar (descending) does not put the largest first")
    return details


def check_campaign_section(page, section, report):
    d = report["deltaproof"]
    verdict = page.one(".verdict .badge", section)
    if verdict is not None:
        page.expect(verdict.text == d["verdict"],
                    f"campaign verdict {verdict.text!r}, JSON {d['verdict']!r}")
    for fault in d["faults"]:
        css = f"tbody.row[data-name='{fault['fault']}'][data-backend='{fault['backend']}']"
        row = page.one(css, section)
        if row is None:
            continue
        cells = row.find_elements(By.CSS_SELECTOR, "td")
        page.expect(cells[3].text == fault["status"],
                    f"{fault['fault']}@{fault['backend']}: status {cells[3].text!r}, "
                    f"JSON {fault['status']!r}")
        if fault["status"] != "Ignored":
            page.expect(cells[6].text == fault["margin_text"],
                        f"{fault['fault']}@{fault['backend']}: margin {cells[6].text!r}, "
                        f"JSON {fault['margin_text']!r}")
    points = section.find_elements(By.CSS_SELECTOR, ".separation svg title")
    backends = {s["backend"] for s in d["separation"]}
    page.expect(len(points) == len(d["separation"]) + len(backends),
                f"separation plot: {len(points)} points, the JSON has {len(d['separation'])} "
                f"gates (+{len(backends)} legend markers)")
    matrices = section.find_elements(By.CSS_SELECTOR, ".matrix svg")
    page.expect(len(matrices) == len(backends),
                f"{len(matrices)} fault-by-gate matrices for {len(backends)} backends")


def broken_campaign(campaign):
    """The campaign with its first killed fault judged GreenBroken: one gate it
    left green marked Survived, one it turned red marked GreenBroken."""
    d = campaign["deltaproof"]
    fault = next(f for f in d["faults"] if f["status"] == "Killed")
    gates = next(b["gate_names"] for b in d["baseline"]["backends"]
                 if b["backend"] == fault["backend"])
    red = {r["gate"] for r in fault["red"]}
    green_gate = next(g for g in gates if g not in red)
    red_gate = next(g for g in gates if g in red and g != fault["gate"])
    fault["status"] = "GreenBroken"
    fault["broken"] = [f"{green_gate} must go red and stayed green",
                       f"{red_gate} must stay green and went red: (edited by the test)"]
    fault["broken_gates"] = {green_gate: "Survived", red_gate: "GreenBroken"}
    d["verdict"] = "fail"
    return fault, green_gate, red_gate


def check_broken_matrix(driver, path, fault, green_gate, red_gate, out):
    page = Page(driver, path)
    row = page.one(f"tbody.row[data-name='{fault['fault']}'][data-backend='{fault['backend']}']")
    if row is not None:
        page.expect(row.find_elements(By.CSS_SELECTOR, "td")[3].text == "GreenBroken",
                    "the edited fault's status is not GreenBroken")
        page.expect(row.find_element(By.CSS_SELECTOR, "tr.details").is_displayed(),
                    "a fault not killed as expected does not start open")
    titles = [t.get_attribute("textContent")
              for t in driver.find_elements(By.CSS_SELECTOR, ".matrix svg rect > title")]
    for gate, status in ((green_gate, "Survived"), (red_gate, "GreenBroken")):
        want = f"{fault['fault']} on {gate}: {status}"
        page.expect(any(t.startswith(want) for t in titles), f"no matrix cell reads {want!r}")
    page.shot(page.one(".matrix"), out / "campaign-matrix-broken.png")
    return page.problems


def check_mutation_page(driver, path, report, out):
    """A mutation run's page: its score, every mutant's status, the survivors'
    diffs open."""
    page = Page(driver, path)
    summary = report["deltaproof"]["summary"]
    score = page.one("section.mutation b.score")
    if score is not None:
        page.expect(score.text == summary["score_text"],
                    f"score {score.text!r}, JSON {summary['score_text']!r}")
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('section.mutation tbody.row'))"
        ".map(r => [r.dataset.id, r.dataset.status, r.querySelector('tr.details') ? "
        "!r.querySelector('tr.details').hidden : null])")
    want = {m["id"]: m["deltaproofStatus"] for f in report["files"].values()
            for m in f["mutants"]}
    seen = {row[0]: row[1] for row in rows}
    page.expect(seen == want, f"{len(seen)} rows against {len(want)} mutants, or a status that "
                f"differs: {sorted(set(seen.items()) ^ set(want.items()))[:4]}")
    for mutant_id, status in want.items():
        if status != "Survived":
            continue
        body = page.one(f"section.mutation tbody.row[data-id='{mutant_id}']")
        if body is None:
            continue
        page.expect(body.find_elements(By.CSS_SELECTOR, "pre.diff .del") and
                    body.find_elements(By.CSS_SELECTOR, "pre.diff .ins"),
                    f"survivor {mutant_id}: no diff in its details")
        page.expect(body.find_element(By.CSS_SELECTOR, "pre.diff").is_displayed(),
                    f"survivor {mutant_id}: its diff does not start open")
        page.shot(body, out / "mutation-survivor.png")
    return page.problems


def check_reports_page(driver, path, reports, out, shots=True):
    page = Page(driver, path)
    sections = driver.find_elements(By.CSS_SELECTOR, "section")
    page.expect(len(sections) == len(reports), f"{len(sections)} sections, {len(reports)} reports")
    if shots:
        driver.save_screenshot(str(out / "page-top.png"))
    for section, report in zip(sections, reports):
        if "deltaproof" in report:
            check_campaign_section(page, section, report)
            if shots:
                page.shot(section.find_element(By.CSS_SELECTOR, "table.sortable"),
                          out / "campaign-faults.png")
                page.shot(section.find_element(By.CSS_SELECTOR, ".matrix"),
                          out / "campaign-matrix.png")
                page.shot(section.find_element(By.CSS_SELECTOR, ".separation"),
                          out / "campaign-separation.png")
        else:
            details = check_gate_section(page, section, report)
            if shots and details is not None:
                name = "red" if report["verdict"] == "fail" else "clean"
                page.shot(details, out / f"gate-{name}-details.png")
                page.shot(section.find_element(By.CSS_SELECTOR, "table.sortable"),
                          out / f"gate-{name}-table.png")
    return page.problems


def check_diff_page(driver, path, a, b, out, shots=True):
    page = Page(driver, path)
    names_a = {g["name"]: g for g in a["gates"]}
    turned = [g["name"] for g in b["gates"]
              if g["name"] in names_a and names_a[g["name"]]["verdict"] == "pass"
              and g["verdict"] == "fail"]
    verdict = page.one(".verdict .badge")
    page.expect(verdict is not None and verdict.text == ("fail" if turned else "pass"),
                "the diff's verdict does not say whether a gate turned red")
    items = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "ul.reason li")]
    for name in turned:
        page.expect(f"gate {name}" in items, f"the diff does not list {name} as turned red")
    rows = driver.find_elements(By.CSS_SELECTOR, "table.sortable > tbody.row")
    terms = sum(len(g["terms"]) for g in a["gates"] if g["name"] in {x["name"] for x in b["gates"]})
    page.expect(len(rows) >= terms, f"the diff table has {len(rows)} rows for {terms} terms")
    if shots:
        driver.save_screenshot(str(out / "diff-top.png"))
    return page.problems


def sabotaged(page_path, out, name, edit):
    text = page_path.read_text()
    broken = edit(text)
    assert broken != text, f"sabotage {name} changed nothing"
    path = out / f"sabotaged-{name}.html"
    path.write_text(broken)
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltaproof", required=True)
    parser.add_argument("--falsify-deltaproof", required=True)
    parser.add_argument("--campaign", required=True)
    parser.add_argument("--fixtures", default="fixtures")
    parser.add_argument("--mutation", default=str(pathlib.Path(__file__).resolve().parents[2] /
                                                  "reports/gpu/717e845/mutate-cpu.json.xz"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    clean, red = out / "clean.json", out / "red.json"
    run([args.deltaproof, "gate", "run", *CLEAN_GATES, "--fixtures", args.fixtures,
         "--report", str(clean)])
    run([args.falsify_deltaproof, "gate", "run", *FAULTED_GATES, "--fixtures", args.fixtures,
         "--fault", FAULT, "--report", str(red)], expect=(1,))
    page_path, diff_path = out / "report.html", out / "diff.html"
    inputs = [clean, red, pathlib.Path(args.campaign)]
    run([args.deltaproof, "report", "html", *map(str, inputs), "-o", str(page_path)])
    run([args.deltaproof, "report", "diff", str(clean), str(red), "--html", str(diff_path)],
        expect=(1,))
    reports = [json.loads(p.read_text()) for p in inputs]

    driver = browser()
    failures = []
    try:
        for problem in check_reports_page(driver, page_path, reports, out):
            failures.append(f"{page_path}: {problem}")
        for problem in check_diff_page(driver, diff_path, reports[0], reports[1], out):
            failures.append(f"{diff_path}: {problem}")
        # a campaign with broken expectations: its matrix cells say which
        broken = json.loads(pathlib.Path(args.campaign).read_text())
        fault, green_gate, red_gate = broken_campaign(broken)
        broken_path = out / "campaign-broken.json"
        broken_path.write_text(json.dumps(broken))
        broken_page = out / "campaign-broken.html"
        run([args.deltaproof, "report", "html", str(broken_path), "-o", str(broken_page)])
        for problem in check_broken_matrix(driver, broken_page, fault, green_gate, red_gate, out):
            failures.append(f"{broken_page}: {problem}")
        # the committed mutation run of the CPU kernels
        mutation = json.loads(lzma.open(args.mutation).read())
        mutation_path, mutation_page = out / "mutation.json", out / "mutation.html"
        mutation_path.write_text(json.dumps(mutation))
        run([args.deltaproof, "report", "html", str(mutation_path), "-o", str(mutation_page)])
        for problem in check_mutation_page(driver, mutation_page, mutation, out):
            failures.append(f"{mutation_page}: {problem}")
        # the checks can fail: each sabotaged page must be refused for its reason
        red_rel = figure(next(t["rel"] for g in reports[1]["gates"] if g["verdict"] == "fail"
                              for t in g["terms"]))
        sabotage = {
            "script-error": (lambda t: t.replace("</body>", "<script>no_such_function();</script></body>"),
                             "console error"),
            "changed-figure": (lambda t: t.replace(f">{red_rel}<", ">1.00e-09<"), "rel shows"),
            "fetches-image": (lambda t: t.replace("</body>", "<img src=\"missing.png\"></body>"),
                              "external resources"),
        }
        for name, (edit, reason) in sabotage.items():
            problems = check_reports_page(driver, sabotaged(page_path, out, name, edit), reports,
                                          out, shots=False)
            if not any(reason in p for p in problems):
                failures.append(f"sabotage {name}: the checks did not refuse it ({reason!r} "
                                f"expected; saw {problems})")
            else:
                print(f"sabotaged page '{name}' refused: "
                      f"{next(p for p in problems if reason in p)[:120]}")
    finally:
        driver.quit()
    if failures:
        print("\n".join(f"FAIL: {f}" for f in failures))
        return 1
    print(f"browser test passed: {page_path} ({page_path.stat().st_size / 1e6:.1f} MB, "
          f"{len(reports)} sections) and {diff_path}; screenshots in {out}/*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
