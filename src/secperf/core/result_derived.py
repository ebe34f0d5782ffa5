"""The derived fields of every series kind, as models: what each measurement computes over its
samples (medians, rates, counts, breakdowns) and writes to `series.derived`. A Series of a kind named
in DERIVED_BY_KIND holds its derived fields as that model (core/result_schema.Series checks it on
load and on assignment); readers take them through attributes, e.g.
`s.derived_as(HandshakeDerived).tcp_connect_p50_us`.

Fields whose inner shape varies per protocol or stack (flights, per-call breakdowns, footprints) stay
`dict`/`list` here and are documented where they are written. A key no model names is still read (old
files keep reading), so the JSON on disk has the same shape as before the models existed."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from .record import MAX_US, Duration, FiniteFloat, Millis, _Record

Count = int  # a number of connections, calls or datagrams
# a figure as the measurement computed it: a whole number stays whole on disk (a median of counts)
Num = int | FiniteFloat
NonNeg = Annotated[int, Field(ge=0)] | Annotated[float, Field(ge=0, allow_inf_nan=False)]
Us = Annotated[int, Field(ge=0, le=MAX_US)] | Duration  # a time in µs, whole or not
Rate = NonNeg | None


class LinkCounts(_Record):
    """What an emulated link and the device's kernel saw during one configuration's run
    (measure/handshake.link_counters): the relay's counters per direction, the kernel's TCP segments,
    retransmissions and UDP datagrams; `runs`, when set, is how many runs shared them (vpn)."""

    up: dict[str, Any] | None = None
    down: dict[str, Any] | None = None
    relay_load_sleeps: int | None = None
    device_Tcp_RetransSegs: int | None = None
    device_Tcp_OutSegs: int | None = None
    device_Udp_OutDatagrams: int | None = None
    device_Udp_InDatagrams: int | None = None
    runs: int | None = None


class LinkedDerived(_Record):
    """A kind that may run over an emulated link: its counters (the netem view reads them)."""

    link: LinkCounts | None = None


class HandshakeDerived(LinkedDerived):
    """A handshake series' derived fields (measure/handshake.py, handshake_stack.py): the per-message
    breakdown and the sum-rule check, phase medians, what was negotiated, resumption and early-data
    counts, the first connection's flights, the server's CPU and its side of failed connections."""

    breakdown: dict[str, Any] | None = None
    tcp_connect_p50_us: Us | None = None
    wait_p50_us: Us | None = None
    app_write_p50_us: Us | None = None
    app_read_p50_us: Us | None = None
    negotiated: dict[str, Any] | None = None
    resumed: Count | None = None
    early_data_accepted: Count | None = None
    flights_first_conn: list[dict[str, Any]] | None = None
    server_failures: list[dict[str, Any]] | None = None
    server_cpu_p50_us: Us | None = None


class ConnectDerived(LinkedDerived):
    """A connect series' derived fields (measure/connect_series.py and the per-protocol modules: quic,
    dtls13, edhoc, vpn, californium, kept, connect_external): phase medians, what was negotiated,
    resumption, the secure element's calls, and each protocol's own medians (handshake, round trips,
    bytes, datagrams, EDHOC/OSCORE costs)."""

    phases_p50_us: list[dict[str, Any]] | None = None
    negotiated: dict[str, Any] | None = None
    resumed: Count | None = None
    resumption: str | None = None
    resumption_note: str | None = None
    se_calls: dict[str, Any] | None = None
    se_p50_us: Us | None = None
    se_calls_per_run: Num | None = None
    token_sign_per_connection: Num | None = None
    token_verify_per_connection: Num | None = None
    handshakes_per_request: Num | None = None
    server_handshakes: dict[str, Any] | None = None
    server_resumed: Count | None = None
    server_pid: int | None = None
    startup_p50_us: Us | None = None
    init_p50_us: Us | None = None
    tunnel_ping_ok: Count | None = None
    kept_session: bool | None = None
    # QUIC and DTLS 1.3 (measure/quic.py, dtls13.py)
    handshake_p50_us: Us | None = None
    round_trips_p50: Num | None = None
    handshake_round_trips_p50: Num | None = None
    round_trips_note: str | None = None
    bytes_c2s_p50: Num | None = None
    bytes_s2c_p50: Num | None = None
    datagrams_p50: Num | None = None
    early_data_accepted: Count | None = None
    cid: Count | None = None
    cpu_segments_p50_us: list[dict[str, Any]] | None = None
    flights: list[dict[str, Any]] | None = None
    # EDHOC + OSCORE (measure/edhoc.py)
    attribution: str | None = None
    cipher_suite: int | None = None
    edhoc_p50_us: Us | None = None
    edhoc_library_cpu_p50_us: Us | None = None
    first_request_p50_us: Us | None = None
    cpu_per_message_p50_us: dict[str, Any] | None = None
    edhoc_bytes: dict[str, Any] | None = None
    coap_bytes: dict[str, Any] | None = None
    oscore_protect_cpu_p50_us: Us | None = None
    oscore_unprotect_cpu_p50_us: Us | None = None
    oscore_request_bytes: int | None = None
    round_trips_to_first_response: int | None = None


class CryptoDerived(_Record):
    """A crypto series' rates (measure/crypto.py): operations per second by wall and by CPU time,
    bytes per second and ns per byte for bulk operations, the timer's own overhead, JMH's score."""

    ops_per_s: Rate = None
    cpu_ops_per_s: Rate = None
    bytes_per_s: Rate = None
    ns_per_byte: Rate = None
    timer_overhead_ns: Num | None = None
    timer_overhead_share: Num | None = None
    jmh_score_us: Num | None = None
    jmh_error_us: Num | None = None


class SignerDerived(LinkedDerived):
    """A signer series' secure-element calls per kind and their time (measure/signer.py)."""

    per_call: dict[str, Any] | None = None


class JwtDerived(SignerDerived):
    """A JWT series (measure/jwt.py): the signer's per-call breakdown plus the medians of signing and
    of the request."""

    sign_p50_us: Us | None = None
    request_p50_us: Us | None = None


class CortexmDerived(_Record):
    """A Cortex-M MAC row (measure/cortexm.py): instructions counted under QEMU, per byte and per
    added byte, the stack used and whether the tag matched the reference."""

    instructions: int | None = None
    instructions_per_byte: Num | None = None
    marginal_instructions_per_byte: Num | None = None
    stack_bytes: int | None = None
    tag_ok: bool | None = None


class DeviceTime(_Record):
    """The timing model's cycles and milliseconds for a counted handshake, with their band."""

    cycles: FiniteFloat | None = None
    cycles_low: FiniteFloat | None = None
    cycles_high: FiniteFloat | None = None
    ms: FiniteFloat | None = None
    ms_low: FiniteFloat | None = None
    ms_high: FiniteFloat | None = None
    # what produced the figure (measure/device_timing.model_note) and where its cycles come from
    model: str | None = None
    clock_mhz: Num | None = None
    rule: str | None = None
    sources: dict[str, Any] | None = None
    banded: dict[str, Any] | None = None
    memory: dict[str, Any] | None = None
    counters: dict[str, Any] | None = None


class CountedDerived(_Record):
    """What every counted device run has: instructions under QEMU, the stack's high-water mark, the
    earlier CPI estimate (derived_ms), the timing model's time and the code's footprint."""

    instructions_median: FiniteFloat | None = Field(default=None, ge=0)
    instructions_min: FiniteFloat | None = Field(default=None, ge=0)
    instructions_max: FiniteFloat | None = Field(default=None, ge=0)
    stack_bytes_max: int | None = Field(default=None, ge=0)
    derived_ms: dict[str, Any] | None = None
    time: DeviceTime | None = None
    footprint: dict[str, Any] | None = None


class DeviceDerived(CountedDerived):
    """A device series' derived fields (measure/device.py, quic_device.py, edhoc_device.py): the
    application's share, the spread of the counts, the per-message rows and how far their sum is
    from the whole, the application's own parts and time, the protocol's message sizes."""

    app_instructions_median: FiniteFloat | None = Field(default=None, ge=0)
    connection_instructions_median: NonNeg | None = None
    process_instructions_median: NonNeg | None = None
    spread: Num | None = None
    parts_sum_max_error: Num | None = None
    messages: list[dict[str, Any]] | None = None
    app_messages: list[dict[str, Any]] | None = None
    app_parts: list[dict[str, Any]] | None = None
    app_time: dict[str, Any] | None = None
    sizes: dict[str, Any] | None = None


class DeviceCryptoDerived(CountedDerived):
    """One operation counted on a device (measure/device.py's crypto rows, device_user.py's user
    code): the cold first call, the guest's own check, the harness taken out, the entry's size."""

    instructions_cold: NonNeg | None = None
    time_cold: dict[str, Any] | None = None
    check: Any = None
    harness: dict[str, Any] | None = None
    entry_bytes: int | None = None


class Percentiles(_Record):
    """A what-if percentile summary of simulated draws (µs); `percentiles_from` says whether the
    percentiles come from every draw ("exact") or the stored reservoir."""

    n: int | None = None
    mean_us: Duration | None = None
    sd_us: Duration | None = None
    min_us: Duration | None = None
    max_us: Duration | None = None
    p50_us: Duration | None = None
    p90_us: Duration | None = None
    p95_us: Duration | None = None
    p99_us: Duration | None = None
    median_ci95_us: list[Duration] | None = None
    percentiles_from: str | None = None


class WhatifDerived(_Record):
    """A what-if series' derived fields (app/whatif.py writes them): the usable-connection and
    handshake percentiles, where the mean time goes, bytes and packets, round trips, the flights with
    their operations and costs, the secure element, the calibration, the seed, the energy and what
    security adds (security_cost)."""

    usable: Percentiles | None = None
    handshake: Percentiles | None = None
    handshake_timer: str | None = None
    breakdown_mean_us: dict[str, FiniteFloat] | None = None
    bytes_up_mean: FiniteFloat | None = None
    bytes_down_mean: FiniteFloat | None = None
    packets_up_mean: FiniteFloat | None = None
    packets_down_mean: FiniteFloat | None = None
    radio: dict[str, Any] | None = None
    failed_share: FiniteFloat | None = Field(default=None, ge=0, le=1)
    end_point: str | None = None
    end_point_description: str | None = None
    round_trips: int | None = None
    round_trips_to_response: int | None = None
    round_trips_to_handshake_done: int | None = None
    security: str | None = None
    no_security: Any = None
    flights: list[dict[str, Any]] | None = None
    crosses: dict[str, bool] | None = None
    costs: list[dict[str, Any]] | None = None
    se: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    seed: int | None = None
    energy: dict[str, Any] | None = None
    security_cost: dict[str, Any] | None = None


class LatencyMs(_Record):
    """The load generator's latency percentiles, in ms."""

    p50_ms: Millis | None = None
    p90_ms: Millis | None = None
    p95_ms: Millis | None = None
    p99_ms: Millis | None = None
    max_ms: Millis | None = None


class ServerDerived(_Record):
    """A server load level's derived fields (measure/server.py, server_target.py, the cluster's
    levels): handshake counts and rate, both sides' CPU per handshake, latency percentiles, what
    limited the rate and why, the key operation's split, the load generator's cores."""

    handshakes: int | None = Field(default=None, ge=0)
    full: int | None = Field(default=None, ge=0)
    resumed: int | None = Field(default=None, ge=0)
    failed: int | None = Field(default=None, ge=0)
    not_started: int | None = Field(default=None, ge=0)
    resume_missed: int | None = Field(default=None, ge=0)
    retransmits: int | None = Field(default=None, ge=0)
    cookie_exchanges: int | None = Field(default=None, ge=0)
    errors: dict[str, Any] | None = None
    elapsed_s: FiniteFloat | None = None
    handshakes_per_s: FiniteFloat | None = Field(default=None, ge=0)
    started_per_s: FiniteFloat | None = Field(default=None, ge=0)
    offered_per_s: FiniteFloat | None = Field(default=None, ge=0)
    resumed_share: FiniteFloat | None = None
    server_utilisation: FiniteFloat | None = None
    server_core_busy: FiniteFloat | None = None
    server_cpu_s: FiniteFloat | None = None
    server_wall_s: FiniteFloat | None = None
    server_cpu: str | None = None  # a --target's: why secperf has no number for the server's CPU
    server_cpu_us_per_handshake: FiniteFloat | None = None
    loadgen_cpu_us_per_handshake: FiniteFloat | None = None
    loadgen_cpu_s: FiniteFloat | None = None
    loadgen_busy: FiniteFloat | None = None
    loadgen_cores_busy: FiniteFloat | None = None
    loadgen_cores_n: int | None = None
    loadgen_share_of_cores: FiniteFloat | None = None
    loadgen: dict[str, Any] | None = None
    latency_ms: LatencyMs | None = None
    handshake_ms: LatencyMs | None = None
    latency_hist_us: list[Any] | None = None
    split: dict[str, Any] | None = None
    limited_by: str | None = None
    limited_by_why: str | None = None
    limit_note: str | None = None
    negotiated: dict[str, Any] | None = None
    warning: str | None = None
    private_op: dict[str, Any] | None = None
    cluster: dict[str, Any] | None = None


class MqttDerived(_Record):
    """An mqtt-load series' derived fields (app/mqtt_load_series.py): one latency of one phase (ramp,
    hold, storm). The percentiles are the phase's own (the generator's nearest rank over its samples,
    or the merged histogram's on a cluster); `hist_us` is the phase's histogram as it holds it
    ([lower_us, count] in core/histogram's bins), exact and mergeable; the counts are the phase's."""

    phase: str | None = None
    latency: str | None = None
    n: int | None = Field(default=None, ge=0)
    p50_ms: Millis | None = None
    p90_ms: Millis | None = None
    p99_ms: Millis | None = None
    max_ms: Millis | None = None
    percentiles_from: str | None = None
    hist_us: list[Any] | None = None
    bins: str | None = None
    attempts: int | None = Field(default=None, ge=0)
    connacks: int | None = Field(default=None, ge=0)
    failed: int | None = Field(default=None, ge=0)
    refused: int | None = Field(default=None, ge=0)
    dropped: int | None = Field(default=None, ge=0)
    gave_up: int | None = Field(default=None, ge=0)
    failed_connections: int | None = Field(default=None, ge=0)
    errors: dict[str, Any] | None = None
    time_all_up_s: FiniteFloat | None = None
    published: int | None = Field(default=None, ge=0)
    pubacks: int | None = Field(default=None, ge=0)
    pubacks_outstanding_at_end: int | None = Field(default=None, ge=0)
    broker_cpu_s: FiniteFloat | None = None
    broker_utilisation: FiniteFloat | None = None


# every series kind's derived model (a kind not named here has none: a Result from a newer secperf)
DERIVED_BY_KIND: dict[str, type[_Record]] = {
    "handshake": HandshakeDerived,
    "connect": ConnectDerived,
    "crypto": CryptoDerived,
    "signer": SignerDerived,
    "jwt": JwtDerived,
    "cortexm": CortexmDerived,
    "device": DeviceDerived,
    "device_crypto": DeviceCryptoDerived,
    "whatif": WhatifDerived,
    "server": ServerDerived,
    "mqtt": MqttDerived,
}
Derived = (
    HandshakeDerived
    | ConnectDerived
    | CryptoDerived
    | SignerDerived
    | JwtDerived
    | CortexmDerived
    | DeviceDerived
    | DeviceCryptoDerived
    | WhatifDerived
    | ServerDerived
    | MqttDerived
    | dict[str, Any]
)
