"""The generated campaign (benchmarks/campaign.py) in the slow tier: every command and option from the
parser and the system file's keys from its schema, with the measuring step replaced, plus real PSK
handshakes under a /proc/*/cmdline scan: 0 tracebacks, hangs, unreadable Results, ignored options and
secrets on a command line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "campaign.py"


def test_the_campaign_generates_cases_from_the_parser_and_the_schema():
    sys.path.insert(0, str(BENCH.parent))
    try:
        import campaign
    finally:
        sys.path.pop(0)
    from secperf.cli import build_parser

    cases = campaign.parser_cases()
    commands = {argv[0] for _, argv in cases}
    assert commands >= set(campaign.subparsers(build_parser())) - {"netem"}, commands
    assert len(cases) > 1000
    example = BENCH.parent.parent / "examples" / "stm32l4-nbiot-mqtt.toml"
    assert len(campaign.schema_cases(example)) > 20


@pytest.mark.slow
def test_the_campaign_counts_zero_of_each(tmp_path):
    out = tmp_path / "campaign.json"
    p = subprocess.run(
        [sys.executable, str(BENCH), "--timeout", "20", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    doc = json.loads(out.read_text())
    counts = doc["counts"]
    assert counts["cases"] > 1000 and counts["results"] > 50, counts
    for k in ("traceback", "hang", "unreadable", "ignored", "secrets"):
        assert counts[k] == 0, (k, p.stdout[-3000:])
    # every real PSK path ran (a run that failed before its handshakes could not have shown a key), and the
    # scan looked for the device runs' random keys (TLS 1.3's and DTLS 1.2's) while they ran
    assert counts["real_failed"] == 0, [b for b in doc["bad"] if b.startswith("real run failed")]
    assert counts["device_keys_watched"] >= 2, counts
