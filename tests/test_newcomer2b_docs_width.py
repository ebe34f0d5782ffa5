"""The docs site gives code blocks the page's width: at 1,400 px no code block on the home page or
a tutorial scrolls sideways (issue 43, item 8). Built with mkdocs (strict), read by headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_chromium

ROOT = Path(__file__).resolve().parents[1]

PROBE = (
    "<pre id='width-probe'></pre><script>(()=>{const out=[];"
    "document.querySelectorAll('.md-content pre').forEach((p,i)=>{const c=p.querySelector('code')||p;"
    "out.push({i,scroll:Math.max(p.scrollWidth,c.scrollWidth),client:Math.max(p.clientWidth,c.clientWidth),"
    "first:(c.textContent||'').split('\\n')[0].slice(0,60)});});"
    "const main=document.querySelector('.md-content');"
    "document.getElementById('width-probe').textContent=JSON.stringify({blocks:out,"
    "content:main?Math.round(main.getBoundingClientRect().width):0});})();</script></body>"
)


def _probe(page: Path, tmp: Path) -> dict:
    probed = page.with_name("probed-" + page.name)
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE, 1), encoding="utf-8")
    p = run_chromium(tmp / f"profile-{page.parent.name}", probed.as_uri(), "--dump-dom", "--window-size=1400,1000")
    m = re.search(r'<pre id="width-probe">([^<]*)</pre>', p.stdout)
    assert m, f"{page}: no probe output from Chromium: {p.stderr[-1500:]}"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


@pytest.mark.slow
@pytest.mark.browser
def test_no_code_block_on_the_home_page_or_a_tutorial_scrolls_sideways_at_1400px(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    assert mkdocs, "mkdocs is not installed in the virtualenv (scripts/bootstrap installs the docs extra)"
    site = tmp_path / "site"
    p = subprocess.run(
        [mkdocs, "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert p.returncode == 0, p.stderr[-3000:]
    pages = [site / "index.html", *sorted((site / "tutorials").glob("*/index.html"))]
    assert len(pages) >= 6, pages
    checked = 0
    for page in pages:
        got = _probe(page, tmp_path)
        assert got["content"] >= 800, (page, got["content"])  # the text column uses the window
        wide = [b for b in got["blocks"] if b["scroll"] > b["client"] + 1]
        assert not wide, f"{page.relative_to(site)}: code blocks scroll sideways: {wide}"
        checked += len(got["blocks"])
    assert checked >= 20, checked
