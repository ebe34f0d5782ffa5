"""An option that cannot act on anything the command measures is refused naming both the option and
what makes it idle (it used to be dropped silently, and the rows looked as if it had acted)."""

import pytest

from secperf.app.connect import connect_configs
from secperf.core.errors import InputError


@pytest.mark.parametrize(
    "kwargs, names",
    [
        (dict(protocols=["mqtt"], keys=["software"], key_sessions=("cold",)), ["--key-session cold", "--key software"]),
        (dict(protocols=["coap"], keys=["software"], nagle=True), ["--nagle", "coap"]),
        (dict(protocols=["https"], keys=["software"], coap_security=["psk"]), ["--coap-security psk", "https"]),
    ],
)
def test_an_option_that_cannot_act_is_refused_naming_it(kwargs, names):
    base = dict(handshakes=["full"], clients=[], auths=["mtls"])
    with pytest.raises(InputError) as exc:
        connect_configs(**{**base, **kwargs})
    for n in names:
        assert n in str(exc.value)


def test_the_same_options_where_they_act_are_kept():
    assert any(
        c.key_session == "cold"
        for c in connect_configs(["https"], ["token"], ["full"], [], ["mtls"], key_sessions=("cold",))
    )
    assert connect_configs(["mqtt", "coap"], ["software"], ["full"], [], ["mtls"], nagle=True)
    assert connect_configs(["https"], ["software"], ["full"], [], ["mtls"], coap_security=["pki"])  # the default


def test_connect_scope_table_names_options_connect_has():
    """app/option_scope.ACTS_ON (which protocols each option acts on) speaks of real options only; the
    table of options x protocols generated from the parser is tests/test_reliability4b_options_table.py."""
    import argparse

    from secperf.app.option_scope import ACTS_ON
    from secperf.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["connect"]
    options = {o for a in sub._actions for o in a.option_strings}
    assert set(ACTS_ON) <= options, set(ACTS_ON) - options
