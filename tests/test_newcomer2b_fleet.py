"""fleet --from R --key a,b: one set of fleet rows per server key (exit 2 naming a key the Result
lacks), and a capacity the server run marked as limited by the load generator comes with that
warning (issue 43, item 5)."""

from __future__ import annotations

import json

from secperf.cli import main
from secperf.core import result as R
from secperf.core.result_schema import ServerDerived


def _server_result(path, rows):
    doc = R.new_result(kind="server", command=["secperf", "server"], params={}, host={}, run_id="r1")
    for key, ratio, rate, limited in rows:
        s = R.new_series(
            f"server/nginx/{key}/{ratio}",
            kind="server",
            labels={"server": "nginx", "key": key, "key_source": "software", "resume_ratio": ratio},
            timer={"name": "handshake", "start": "connect", "end": "done"},
        )
        s.derived = ServerDerived(handshakes_per_s=rate)
        if limited:
            s.derived.limited_by = "load generator"
            s.derived.warning = "the load generator limited the rate, not the server (its cores at 97%)"
        s.status = "ok"
        doc.series.append(s)
    R.finish(doc)
    path.write_text(R.dumps(doc))
    return str(path)


ROWS = [
    ("rsa-2048", 0.0, 700.0, False),
    ("rsa-2048", 1.0, 4000.0, False),
    ("ecdsa-p256", 0.0, 5000.0, True),
    ("ecdsa-p256", 1.0, 9000.0, False),
]


def test_several_keys_give_one_set_of_rows_per_key(tmp_path, capsys):
    f = _server_result(tmp_path / "server.json", ROWS)
    assert (
        main(
            [
                "fleet",
                "--from",
                f,
                "--key",
                "rsa-2048,ecdsa-p256",
                "--devices",
                "100,1000",
                "--json",
                "--out",
                str(tmp_path / "o"),
                "--no-report",
            ]
        )
        == 0
    )
    fleet = json.loads(capsys.readouterr().out)["analysis"]["fleet"]
    by_key: dict[str, set[float]] = {}
    for r in fleet["runs"]:
        by_key.setdefault(r["key"], set()).add(r["model"]["capacity_full_per_s"])
    assert by_key == {"rsa-2048": {700.0}, "ecdsa-p256": {5000.0}}
    assert len(fleet["runs"]) == 4  # 2 keys x 2 device counts
    # the generator-limited ecdsa-p256 capacity carries its warning; rsa-2048's does not
    warned = {r["key"] for r in fleet["runs"] if r.get("capacity_warning")}
    assert warned == {"ecdsa-p256"}
    assert any("load generator limited the rate" in w for w in fleet["warnings"])


def test_a_key_the_result_lacks_is_named(tmp_path, capsys):
    f = _server_result(tmp_path / "server.json", ROWS)
    assert (
        main(
            [
                "fleet",
                "--from",
                f,
                "--key",
                "rsa-2048,ed25519",
                "--devices",
                "100",
                "--out",
                str(tmp_path / "o"),
                "--no-report",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "ed25519" in err and "Traceback" not in err


def test_the_terminal_repeats_the_warning_with_the_capacity(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    f = _server_result(tmp_path / "server.json", ROWS)
    assert (
        main(
            [
                "fleet",
                "--from",
                f,
                "--key",
                "ecdsa-p256",
                "--devices",
                "100",
                "--out",
                str(tmp_path / "o"),
                "--no-report",
            ]
        )
        == 0
    )
    cap = capsys.readouterr()
    text = cap.out + cap.err
    assert "lower bound" in text and "load generator limited the rate" in text, text
