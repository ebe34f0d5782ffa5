"""Every file input is checked before it is read: a FIFO, a device or a file over its kind's size
limit is an input error naming the limit (exit 2), never a hang or all the machine's memory; TOML
nesting is bounded; an error about many unknown keys is built in linear time."""

import os

import pytest

from secperf.cli import main
from secperf.core import files


def _err_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _argv(kind, path, tmp_path):
    return {
        "result": ["report", path, "-o", str(tmp_path / "r.html")],
        "compare": ["compare", path, path],
        "metrics": ["metrics", path],
        "scenario": ["run", "--scenario", path, "--out", str(tmp_path / "res")],
        "pattern": ["plan", "--pattern", path, "--out", str(tmp_path / "res")],
        "ca": ["handshake", "versions", "--connect", "127.0.0.1:443", "--ca", path, "--out", str(tmp_path / "res")],
        "client-key": [
            "connect",
            "https",
            "--connect",
            "127.0.0.1:443",
            "--client-cert",
            path,
            "--client-key",
            path,
            "--out",
            str(tmp_path / "res"),
        ],
    }[kind]


KINDS = ["result", "compare", "metrics", "scenario", "pattern", "ca", "client-key"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_fifo_input_is_refused_without_blocking(tmp_path, capsys, kind):
    fifo = tmp_path / "in.toml"
    os.mkfifo(fifo)  # nobody writes: reading it would block forever
    assert main(_argv(kind, str(fifo), tmp_path)) == 2
    line = _err_line(capsys)
    assert "not a regular file" in line or "no such file" in line or "neither" in line


@pytest.mark.parametrize("kind", KINDS)
def test_a_device_input_is_refused(tmp_path, capsys, kind):
    assert main(_argv(kind, "/dev/zero", tmp_path)) == 2
    _err_line(capsys)


@pytest.mark.parametrize("kind", KINDS)
def test_a_huge_sparse_input_is_refused_naming_the_limit(tmp_path, capsys, kind):
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(3 << 30)  # 3 GiB, sparse: costs no disk
    assert main(_argv(kind, str(big), tmp_path)) == 2
    line = _err_line(capsys)
    assert "limit" in line and "MiB" in line


def test_read_input_never_reads_past_the_limit(tmp_path, monkeypatch):
    monkeypatch.setitem(files.LIMITS, "pem", 10)
    p = tmp_path / "k.pem"
    p.write_bytes(b"x" * 11)
    with pytest.raises(files.InputError, match="10 bytes limit"):
        files.read_input(p, "pem")


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 5000 + "]" * 5000 + "\n",
        "a = " + "{ b = " * 200 + "1" + " }" * 200 + "\n",
        "".join(f"[{'.'.join(['t'] * 60)}]\n"),
    ],
)
def test_deeply_nested_toml_is_an_input_error(tmp_path, capsys, text):
    p = tmp_path / "deep.toml"
    p.write_text(text)
    assert main(["run", "--scenario", str(p), "--out", str(tmp_path / "res")]) == 2
    assert "nested more than" in _err_line(capsys)
    assert main(["plan", "--pattern", str(p), "--out", str(tmp_path / "res")]) == 2
    assert "nested more than" in _err_line(capsys)


def test_many_unknown_keys_are_reported_as_the_first_few_and_a_count():
    from secperf.inputs import schema

    calls = []
    real = schema._describe

    def counting(err):
        calls.append(1)
        return real(err)

    schema._describe, saved = counting, schema._describe
    try:
        with pytest.raises(schema.InputError, match=r"\(and 49994 more\)"):
            schema.validate_scenario({"crypto": {f"k{i}": 1 for i in range(50_000)}})
    finally:
        schema._describe = saved
    assert len(calls) == schema.SHOWN_PROBLEMS  # only the problems shown are described
