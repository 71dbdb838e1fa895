"""Report.write_html and deltaproof.html_page: the page `deltaproof report html`
writes (reports/html), byte for byte, rendered in the process."""

import filecmp

import numpy as np
import pytest

import deltaproof
from conftest import KDA, run_cli


def cli_page(out, *reports):
    code, output = run_cli("report", "html", *reports, "-o", out)
    assert code == 0, output
    return out


@pytest.fixture
def reports(kda_outputs):
    green = deltaproof.check_outputs(KDA, kda_outputs)
    red = deltaproof.check_outputs(KDA, dict(kda_outputs, dq=kda_outputs["dq"] * np.float32(1.03)))
    assert green.passed and not red.passed
    return green, red


def test_write_html_is_report_html(reports, tmp_path):
    for report in reports:
        page = report.write_html(tmp_path / "page.html")
        assert page == tmp_path / "page.html" == report.html_path
        report_file = tmp_path / "page.json"  # written beside it: the page names it
        assert report_file.read_text() == report.json()
        assert filecmp.cmp(page, cli_page(tmp_path / "cli.html", report_file), shallow=False)
        assert report.data["gates"][0]["name"] in page.read_text()


def test_a_saved_report_is_the_one_named(reports, tmp_path):
    green, red = reports
    red.save(tmp_path / "saved.json")
    page = red.write_html(tmp_path / "red.html")
    assert not (tmp_path / "red.json").exists() and "saved.json" in page.read_text()
    assert filecmp.cmp(
        page, cli_page(tmp_path / "cli.html", tmp_path / "saved.json"), shallow=False
    )
    # another page: the comparison can fail
    green.write_html(tmp_path / "green.html", report_path=tmp_path / "green.json")
    assert not filecmp.cmp(tmp_path / "green.html", page, shallow=False)


def test_html_page_of_several_reports(reports, tmp_path):
    files = []
    for name, report in zip(("green.json", "red.json"), reports):
        report.save(tmp_path / name)
        files.append(tmp_path / name)
    text = deltaproof.html_page(*files)
    assert text == cli_page(tmp_path / "cli.html", *files).read_text()
    with pytest.raises(deltaproof.InputError, match="no-such.json"):
        deltaproof.html_page(tmp_path / "no-such.json")
    with pytest.raises(deltaproof.InputError, match="pass one report file or more"):
        deltaproof.html_page()
