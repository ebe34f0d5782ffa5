"""A described system in one file (`--system FILE.toml`, inputs/system.py): every file in examples/
loads, validates and matches `secperf schema system`; the file becomes the right whatif and plan
options; the command line overrides it with a note; every bad input exits 2 naming the key path."""

import json
import os
from pathlib import Path

import pytest

from conftest import run_cli
from secperf.cli import build_parser
from secperf.inputs import system as S

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))
QUESTION = ROOT / "examples" / "stm32l4-nbiot-mqtt.toml"


def _args(*argv):
    return build_parser().parse_args(list(argv))


# --- a small JSON Schema check (the keywords pydantic emits), used when jsonschema is absent ------
def _check(schema: dict, value, root: dict, path: str = "$") -> list[str]:
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return _check(root["$defs"][name], value, root, path)
    if "anyOf" in schema:
        opts = [_check(s, value, root, path) for s in schema["anyOf"]]
        return [] if any(not o for o in opts) else [f"{path}: matches none of anyOf"]
    errs: list[str] = []
    t = schema.get("type")
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    if t == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif t == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif t is not None:
        ok = isinstance(value, kinds[t])
    else:
        ok = True
    if not ok:
        return [f"{path}: not {t}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {value!r} not in {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errs.append(f"{path}: {value!r} != {schema['const']!r}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in value:
                errs.append(f"{path}.{k}: required")
        for k, v in value.items():
            if k in props:
                errs += _check(props[k], v, root, f"{path}.{k}")
            elif schema.get("additionalProperties") is False:
                errs.append(f"{path}.{k}: not allowed")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            errs += _check(schema["items"], v, root, f"{path}[{i}]")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append(f"{path}: below minimum")
        if "maximum" in schema and value > schema["maximum"]:
            errs.append(f"{path}: above maximum")
    if isinstance(value, str) and "minLength" in schema and len(value) < schema["minLength"]:
        errs.append(f"{path}: too short")
    return errs


def _schema_errors(schema: dict, doc: dict) -> list[str]:
    try:
        import jsonschema
    except ImportError:
        return _check(schema, doc, schema)
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]


@pytest.fixture(scope="module")
def schema() -> dict:
    p = run_cli("schema", "system")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_there_are_examples():
    assert QUESTION in EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_loads_and_matches_the_published_schema(path, schema):
    import tomllib

    ls = S.load_system(path)
    assert ls.system.name
    doc = tomllib.loads(path.read_text())
    assert _schema_errors(schema, doc) == []
    if ls.system.pattern is not None:
        S.pattern(ls)  # the pattern it makes validates too


def test_the_schema_check_can_fail(schema):
    assert _schema_errors(
        schema,
        {
            "name": "x",
            "device": {"core": "cortex-m4-80", "colour": "red"},
            "network": {"link": "nb-iot"},
            "protocol": {"name": "mqtt"},
        },
    )
    assert _schema_errors(schema, {"name": "x", "network": {"link": "nb-iot"}, "protocol": {"name": "mqtt"}})
    assert _schema_errors(
        schema, {"name": "x", "device": {"core": "c"}, "network": {"link": "nb-iot"}, "protocol": {"name": "smtp"}}
    )


def test_protocols_and_handshakes_agree_with_the_flight_models():
    from secperf.model import flights as F

    assert tuple(F.PROTOCOLS) == S.PROTOCOLS
    assert {p: tuple(h) for p, h in F.HANDSHAKES.items()} == S.HANDSHAKES
    from secperf.plan.design import WHATIF_PROTOCOL

    assert {v: k for k, v in WHATIF_PROTOCOL.items() if k[1] != "psk"} == S.PLAN_PROTOCOL


# --- the question of issue 29 as options -------------------------------------------------------
def test_the_question_becomes_the_whatif_options():
    from secperf.subcommands import whatif

    o = whatif.options(_args("whatif", "--system", str(QUESTION)))
    assert o.protocols == ["mqtt"] and o.networks == ["nb-iot"] and o.keys == ["se:iot-safe-sim:cold"]
    assert o.device == "cortex-m4-80" and o.stack == "wolfssl" and o.config == "sp-asm"
    assert o.handshakes == ["full", "resumed"] and o.groups == ["x25519"] and o.certs == ["ecdsa-p256"]
    assert o.baseline  # "how much of it is security": the no-security rows come with the file
    assert not whatif.options(_args("whatif", "mqtt")).baseline


def test_the_question_becomes_the_plan_options_and_pattern():
    from secperf.inputs.patterns import TIME_UNITS, parse_quantity
    from secperf.subcommands import plan

    o = plan.options(_args("plan", "--system", str(QUESTION)))
    assert o.device == "cortex-m4-80" and o.se == "se:iot-safe-sim:cold"
    assert o.network == "nb-iot" and o.radio == "nb-iot" and o.system == str(QUESTION)
    assert o.stack == "wolfssl" and o.config == "sp-asm"
    [p] = o.resolved
    assert p.name == "periodic-collection" and o.patterns == ["periodic-collection"]
    assert p.stack.protocol == "mqtt" and p.stack.auth == "mtls" and p.stack.key == "se:iot-safe-sim:cold"
    assert p.stack.network == "nb-iot"
    assert parse_quantity(p.requirements.latency, TIME_UNITS, "time") == pytest.approx(3.0)
    assert p.requirements.latency_percentile == 95
    assert p.traffic.interval_s == 900.0  # the built-in's traffic is kept


def test_the_command_line_overrides_the_file_with_a_note(capsys):
    from secperf.subcommands import plan, whatif

    o = whatif.options(_args("whatif", "--system", str(QUESTION), "--network", "lte-m", "--key", "software"))
    err = capsys.readouterr().err
    assert o.networks == ["lte-m"] and o.keys == ["software"]
    assert "--network lte-m overrides [network].link = nb-iot" in err
    assert "--key software overrides [security].key = se:iot-safe-sim:cold" in err
    o = whatif.options(_args("whatif", "--system", str(QUESTION), "--device", "host-default"))
    err = capsys.readouterr().err
    assert o.device == "host-default" and o.stack is None and o.config is None
    assert "belong to its core cortex-m4-80" in err
    o = plan.options(_args("plan", "--system", str(QUESTION), "--pattern", "event-driven"))
    assert o.patterns == ["event-driven"] and not o.resolved
    assert "replaces the [pattern] and [budgets]" in capsys.readouterr().err


def test_plan_with_the_system_file_judges_its_budget(tmp_path):
    """End to end on the host's cost table (the emulated core's costs are the device part's)."""
    p = run_cli(
        "plan",
        "--system",
        str(QUESTION),
        "--device",
        "host-default",
        "--n",
        "300",
        "--json",
        "--out",
        str(tmp_path),
        "--no-report",
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    [pl] = doc["analysis"]["plan"]["patterns"]
    assert pl["requirements"]["latency_ms"] == pytest.approx(3000.0)
    assert pl["inputs"]["key"] == "se:iot-safe-sim:cold" and pl["inputs"]["network"] == "nb-iot"
    assert doc["params"]["system"] == str(QUESTION)


# --- bad files ---------------------------------------------------------------------------------
GOOD = QUESTION.read_text()


@pytest.mark.parametrize(
    "edit,words",
    [
        (lambda t: t.replace("[budgets]", "[budget]"), ("unknown key 'budget'", "allowed", "budgets")),
        (
            lambda t: t.replace('radio = "nb-iot"', 'radio = "nb-iot"\ncolour = "red"'),
            ("[network] has unknown key 'colour'", "link, radio"),
        ),
        (lambda t: t.replace('core = "cortex-m4-80"', 'core = "m4"'), ("[device].core", "'m4'", "cortex-m4-80")),
        (lambda t: t.replace('config = "sp-asm"', 'config = "turbo"'), ("[device].config", "turbo", "sp-c")),
        (lambda t: t.replace('stack = "wolfssl"', 'stack = "gnutls"'), ("[device].stack", "gnutls", "mbedtls")),
        (lambda t: t.replace('key = "se:iot-safe-sim:cold"', 'key = "se:nope"'), ("[security].key", "nope")),
        (lambda t: t.replace('link = "nb-iot"', 'link = "carrier-pigeon"'), ("[network].link", "carrier-pigeon")),
        (lambda t: t.replace('name = "mqtt"', 'name = "smtp"'), ("[protocol].name", "smtp", "mqtt")),
        (
            lambda t: t.replace('handshakes = ["full", "resumed"]', 'handshakes = ["0rtt"]'),
            ("[protocol].handshakes", "0rtt", "psk-dhe"),
        ),
        (lambda t: t.replace('latency = "3 s"', 'latency = "3"'), ("[budgets].latency", "unit")),
        (lambda t: t.replace('name = "mqtt"', 'name = "tls1.3"'), ("[pattern]", "tls1.3")),
        (lambda t: t.replace("[device]", "device = 3\n[devices]"), ("device",)),
        (lambda t: t + "\n[pattern.traffic]\nschedule = \"hourly\"\n", ("[pattern]", "[traffic].schedule", "hourly")),
        (lambda t: t.replace("[budgets]", "[budgets"), ("not valid TOML",)),
        (lambda t: t.replace('use = "periodic-collection"', 'use = "weekly"'), ("[pattern].use", "weekly")),
    ],
)
def test_a_bad_system_file_exits_2_naming_the_key_path(tmp_path, edit, words):
    f = tmp_path / "bad.toml"
    f.write_text(edit(GOOD))
    for cmd in (("whatif",), ("plan",)):
        if "[pattern].use" in words and cmd == ("whatif",):
            continue  # whatif does not make the pattern
        p = run_cli(*cmd, "--system", str(f), "--n", "100", "--out", str(tmp_path / "o"), "--no-report")
        assert p.returncode == 2, (cmd, p.stderr)
        assert "Traceback" not in p.stderr
        for w in words:
            assert w in p.stderr, (cmd, w, p.stderr)
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").glob("*/result.json"))


def test_an_inline_pattern_takes_its_stack_from_the_system(tmp_path):
    f = tmp_path / "inline.toml"
    f.write_text(
        GOOD.replace(
            'use = "periodic-collection"    # a reading every 15 minutes; the modem sleeps in between',
            'name = "hourly-meter"\n[pattern.traffic]\nschedule = "periodic"\ninterval_s = 3600.0\n'
            'source = "example: hourly"\n[pattern.connection]\nmode = "per-message"\n'
            'source = "example"\n',
        )
    )
    ls = S.load_system(f)
    p = S.pattern(ls)
    assert p.name == "hourly-meter" and p.traffic.interval_s == 3600.0 and p.stack.key == "se:iot-safe-sim:cold"
    assert p.requirements.latency == "3 s"


def test_budgets_without_a_pattern_and_a_pattern_without_budgets_or_requirements(tmp_path):
    f = tmp_path / "nopattern.toml"
    f.write_text(GOOD.replace('[pattern]\nuse = "periodic-collection"', "[x]").replace("\n[x]", ""))
    p = run_cli("plan", "--system", str(f), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "[budgets]" in p.stderr and "[pattern]" in p.stderr


@pytest.mark.parametrize("kind", ["directory", "fifo", "big"])
def test_the_file_is_read_with_bounds(tmp_path, kind):
    f = tmp_path / "sys.toml"
    if kind == "directory":
        f.mkdir()
    elif kind == "fifo":
        os.mkfifo(f)
    else:
        f.write_text(GOOD + "\n# " + "x" * (1 << 20) + "\n")
    p = run_cli("whatif", "--system", str(f), "--out", str(tmp_path / "o"), timeout=60)
    assert p.returncode == 2 and str(f) in p.stderr and "Traceback" not in p.stderr


def test_the_readme_opens_with_the_system_file():
    text = (ROOT / "README.md").read_text()
    first = text.index("--system examples/stm32l4-nbiot-mqtt.toml")
    assert first < text.index("\n## ", text.index("\n## ") + 1)  # in the first sections
