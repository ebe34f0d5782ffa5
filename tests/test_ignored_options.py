"""An option that cannot act on anything the command measures is refused naming both the option and
what makes it idle (it used to be dropped silently, and the rows looked as if it had acted)."""

import pytest

from secperf.app.connect import connect_configs
from secperf.core.errors import InputError


@pytest.mark.parametrize("kwargs, names", [
    (dict(protocols=["mqtt"], keys=["software"], key_sessions=("cold",)), ["--key-session cold", "--key software"]),
    (dict(protocols=["coap"], keys=["software"], nagle=True), ["--nagle", "coap"]),
    (dict(protocols=["https"], keys=["software"], coap_security=["psk"]), ["--coap-security psk", "https"]),
])
def test_an_option_that_cannot_act_is_refused_naming_it(kwargs, names):
    base = dict(handshakes=["full"], clients=[], auths=["mtls"])
    with pytest.raises(InputError) as exc:
        connect_configs(**{**base, **kwargs})
    for n in names:
        assert n in str(exc.value)


def test_the_same_options_where_they_act_are_kept():
    assert any(c.key_session == "cold" for c in connect_configs(["https"], ["token"], ["full"], [], ["mtls"],
                                                                 key_sessions=("cold",)))
    assert connect_configs(["mqtt", "coap"], ["software"], ["full"], [], ["mtls"], nagle=True)
    assert connect_configs(["https"], ["software"], ["full"], [], ["mtls"], coap_security=["pki"])   # the default
