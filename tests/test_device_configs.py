"""`secperf device --config`: named library build configurations (data/device_builds.toml).

Names are checked before anything is built (exit 2 naming the stack's configurations); each
configuration is its own cached build; the direction of a configuration's effect is asserted, never
a number.
"""

import pytest

from conftest import device_build_or_skip, run_cli
from secperf.core.errors import InputError
from secperf.inputs.devices import resolve_core
from secperf.measure import device as D
from secperf.measure import device_build as B

# --- the table (pure) -----------------------------------------------------------------------------


def test_every_source_stack_has_a_default_and_every_removal_a_guard():
    src = B.sources_dir()
    cfgs = B.build_configs()
    for stack, name in B.default_configs().items():
        assert stack in cfgs[name].stacks
    for stack in ("wolfssl", "wolfssl59", "mbedtls", "mbedtls3"):
        # the default adds nothing: the build it names is the one without a configuration
        name = B.default_configs()[stack]
        assert cfgs[name].make_defs == "" and cfgs[name].opt == "-O2"
    for c in cfgs.values():
        assert c.description and c.source
        for stack in c.stacks:
            if c.undef:
                B.check_config_guards(src, stack, c)  # raises if a removal has no SECPERF_NO_ guard


def test_configurations_per_build_prebuilt_has_only_debian():
    assert B.configs_for("wolfssl", "armhf") == ["debian"]
    assert B.configs_for("openssl", "armhf") == ["debian"]
    assert "sp-c" in B.configs_for("wolfssl", "cortex-m4") and "debian" not in B.configs_for("wolfssl", "cortex-m4")
    assert "sp-c" in B.configs_for("wolfssl59", "armhf")  # built from source on the A profile too
    assert "no-asm" in B.configs_for("mbedtls3", "armhf")
    assert B.default_config("wolfssl59", "cortex-m4") == "sp-asm"
    assert B.default_config("mbedtls", "armhf") == "debian"


def test_plan_makes_one_series_key_per_configuration():
    cfgs = D.plan(
        resolve_core("cortex-m4-80"), "wolfssl59", "1.3", "x25519", "aes128gcm", build_configs="sp-asm,sp-c,bigint"
    )
    assert [c.build_config for c in cfgs] == [None, "sp-c", "bigint"]  # the default keeps its series id
    assert len({c.key for c in cfgs}) == 3
    assert cfgs[1].key.startswith("wolfssl59[sp-c]/")
    assert D.plan(resolve_core("cortex-m4-80"), "wolfssl59", "1.3", "x25519", "aes128gcm")[0].key == cfgs[0].key


def test_config_names_are_checked_per_stack_and_core():
    dev = resolve_core("cortex-m4-80")
    with pytest.raises(InputError, match="sp-asm, sp-asm-os, sp-c"):
        D.check_build_configs("sp-x", ["wolfssl59"], dev)
    with pytest.raises(InputError, match="no configuration 'sp-c' of mbedtls3"):
        D.check_build_configs("sp-c", ["wolfssl59", "mbedtls3"], dev)
    both = D.check_build_configs("sp-c,no-asm", ["wolfssl59", "mbedtls3"], dev)
    assert both == {"wolfssl59": ["sp-c"], "mbedtls3": ["no-asm"]}


# --- bad input on the command line (nothing is built) -----------------------------------------


@pytest.mark.parametrize(
    "cmd, args, names",
    [
        (
            "crypto",
            ["--device", "cortex-m4-80", "--stack", "wolfssl59", "--config", "fastest"],
            ["--config fastest", "sp-asm", "sp-c", "sp-small", "bigint"],
        ),
        (
            "handshake",
            ["--device", "cortex-m4-80", "--stack", "mbedtls", "--config", "turbo"],
            ["--config turbo", "default", "no-asm", "ecp-window-2"],
        ),
        (
            "crypto",
            ["--device", "cortex-m4-80", "--stack", "mbedtls3", "--config", "sp-c"],
            ["no configuration 'sp-c' of mbedtls3", "no-asm"],
        ),
        (
            "handshake",
            ["--device", "cortex-a9-400", "--stack", "wolfssl", "--config", "sp-c"],
            ["Debian's prebuilt armhf package", "debian"],
        ),
        (
            "crypto",
            ["--device", "cortex-m4-80", "--stack", "wolfssl", "--config", "debian"],
            ["--config debian", "sp-asm"],
        ),
    ],
)
def test_unknown_or_inapplicable_config_exits_2_naming_the_known_ones(tmp_path, cmd, args, names):
    p = run_cli("device", cmd, *args, "--out", str(tmp_path), timeout=120)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    for n in names:
        assert n in p.stderr, p.stderr


# --- real builds under qemu-arm ----------------------------------------------------------------------


@pytest.mark.slow  # a cold cache compiles wolfSSL twice (about 20 s each)
def test_sp_c_is_its_own_build_and_costs_more_than_the_cortex_m_assembly():
    asm = device_build_or_skip("wolfssl59", "cortex-m4")
    c = device_build_or_skip("wolfssl59", "cortex-m4", "sp-c")
    assert (asm.config, c.config) == ("sp-asm", "sp-c")
    assert asm.client.parent != c.client.parent and c.client.is_file()
    assert "WOLFSSL_SP_ARM_CORTEX_M_ASM" in c.config_note
    counts = {}
    for b in (asm, c):
        (s,) = D.measure_crypto(resolve_core("cortex-m4-80"), "wolfssl59", ["ecdsa-p256-sign"], 1, b)
        assert s.status == "ok", s.failures
        assert s.labels["config"] == b.config and s.labels["config_description"] == b.config_note
        counts[b.config] = s.derived.instructions_median
    assert counts["sp-c"] > counts["sp-asm"]  # the portable C maths costs more instructions on the M4
