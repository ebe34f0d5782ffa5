"""Accuracy of `secperf whatif` for QUIC and DTLS 1.3 against the emulator (issue 33), on the grid
of the TLS validation (benchmarks/whatif_validation.py) and with its targets: median |error| <= 10 %
at P50 and <= 25 % at P95 over the validation cells.

1. Calibrate: the cells' connections on loopback (measure/quic.py, measure/dtls13.py), read by
   model/costs.calibrate as `secperf whatif --calibrate` reads a connect Result.
2. Measure every cell over emulated links delay=RTT/2 with loss L (lab/netns.Link; as root).
3. Predict each cell with the flight models (model/flights/quic.py, dtls13.py) and the
   Monte Carlo, from the loopback calibration only, and print each cell's P50/P95 error.

Rounds (--rounds R): calibration, grid, calibration, ..., each with 1/R of the connections; a cell's
prediction pools the predictions from the calibrations before and after its round (the host's speed drifts).

The host term, measured, never fitted to a cell (README: host scheduling, path floor): the calibration is
taken on loopback, where client and server ping-pong without sleeping; over an emulated link every flight
crosses the relay and wakes a process that slept for it.
- path floor: before each round's grid, a UDP echo of one datagram over a `delay=0ms` link and on
  loopback, PROBES times each; half the difference of their medians is the one-way forwarding cost of
  the path (TUN, relay, namespace) that every flight pays (network.with_path_floor);
- host scheduling: a process that sleeps 20 ms and records how late it woke (whatif_validation's probe)
  runs through the whole measurement; each cell is predicted with the lateness recorded while it was
  measured, one draw per flight over links of RTT >= 10 ms (network.with_host_wakeups).
--no-host predicts without both (the configured link alone).

    sudo .venv/bin/python benchmarks/whatif_beyond_validation.py [--rtt 20,100,300] [--loss 0,1,5]
        [--cells quic-full,quic-resumed,quic-0rtt,dtls13-full,dtls13-resumed,dtls13-full-cid]
        [--n 21] [--n-cal 30] [--rounds 1] [--out DIR] [--reuse]

The library is imported from this checkout (PYTHONPATH=src) or the installed package.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from secperf.core import result as R
from secperf.inputs import netspec as NS
from secperf.inputs import se_profiles as SE
from secperf.lab.netns import Link
from secperf.lab.pki import LabPKI
from secperf.measure import dtls13 as D
from secperf.measure import quic as Q
from secperf.model import costs as C
from secperf.model import flights as F
from secperf.model import network as N
from secperf.model import predict as P
from secperf.sim import montecarlo as M

PROBES = 300  # echoes per path-floor measurement

CELLS = {
    "quic-full": (lambda net: Q.QuicConfig("full", network=net), F.Scenario("quic", "full")),
    "quic-resumed": (lambda net: Q.QuicConfig("resumed", network=net), F.Scenario("quic", "resumed")),
    "quic-0rtt": (lambda net: Q.QuicConfig("0rtt", network=net), F.Scenario("quic", "0rtt")),
    "dtls13-full": (lambda net: D.Dtls13Config("1.3", "full", network=net), F.Scenario("dtls1.3", "full")),
    "dtls13-resumed": (lambda net: D.Dtls13Config("1.3", "resumed", network=net), F.Scenario("dtls1.3", "resumed")),
    "dtls13-full-cid": (
        lambda net: D.Dtls13Config("1.3", "full", cid=True, network=net),
        F.Scenario("dtls1.3", "full-cid"),
    ),
    "dtls13-resumed-cid": (
        lambda net: D.Dtls13Config("1.3", "resumed", cid=True, network=net),
        F.Scenario("dtls1.3", "resumed-cid"),
    ),
}


def series_json(s) -> dict:
    """A measured series as its JSON object (the stored measurements are plain JSON)."""
    return s.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)


def measure_cell(cfg, n: int, warmup: int, pki, link, exe) -> dict:
    t_s = 60.0
    if isinstance(cfg, Q.QuicConfig):
        return series_json(Q.measure(cfg, n, warmup, pki, link, t_s))
    return series_json(D.measure(cfg, n, warmup, pki, link, t_s, exe))


def doc_of(series: list[dict], run_id: str) -> dict:
    from secperf.core import host

    doc = R.to_json(
        R.new_result(
            kind="connect",
            command=["benchmarks/whatif_beyond_validation.py"],
            params={},
            host=host.collect(),
            run_id=run_id,
        )
    )
    doc["series"] = series
    return doc


def _echo_ms(a, b, addr, n: int) -> list[float]:
    """Round trips (ms) of one 64-byte datagram from socket a to b (bound at addr) and back, one
    process driving both ends; lost echoes are left out."""
    import select

    out = []
    for _ in range(n):
        t = time.perf_counter()
        a.sendto(b"e" * 64, addr)
        if not select.select([b], [], [], 1.0)[0]:
            continue
        data, peer = b.recvfrom(2048)
        b.sendto(data, peer)
        if not select.select([a], [], [], 1.0)[0]:
            continue
        a.recvfrom(2048)
        out.append((time.perf_counter() - t) * 1e3)
        time.sleep(0.002)
    return out


def path_floor_ms(seed: int) -> dict:
    """One-way forwarding cost of the emulated path per flight: half of (echo P50 over delay=0ms -
    echo P50 on loopback)."""
    import socket

    got = {}
    for net in ("loopback", "delay=0ms"):
        with Link(net, seed=seed) as link:
            srv = link.socket("srv", socket.AF_INET, socket.SOCK_DGRAM)
            dev = link.socket("dev", socket.AF_INET, socket.SOCK_DGRAM)
            try:
                srv.bind((link.server_addr, 0))
                got[net] = _echo_ms(dev, srv, (link.server_addr, srv.getsockname()[1]), PROBES)
            finally:
                srv.close()
                dev.close()
    lo, em = statistics.median(got["loopback"]), statistics.median(got["delay=0ms"])
    return {"loopback_p50_ms": lo, "link_p50_ms": em, "floor_ms": max(0.0, (em - lo) / 2), "n": len(got["delay=0ms"])}


def wakeups_between(out: Path, t0: float, t1: float) -> tuple[float, ...] | None:
    """Wake-up lateness samples (ms) the probe recorded between t0 and t1 (at least 20), else None."""
    try:
        xs = (out / "wakeups.txt").read_text().split()
    except OSError:
        return None
    got = tuple(max(0.0, float(v)) for t, v in zip(xs[0::2], xs[1::2]) if t0 <= float(t) <= t1)
    return got if len(got) >= 20 else None


def predict(sc, tables, link, n_meas: int, sim_n: int = 20000, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    v = np.concatenate(
        [
            M.simulate_chunk(P.plan(sc, t, link, se=SE.profile_of_key(sc.key)), rng, sim_n)["usable"] * 1e6
            for t in tables
        ]
    )
    return {"p50_us": float(np.percentile(v, 50)), "p95_us": float(np.percentile(v, 95))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtt", default="20,100,300")
    ap.add_argument("--loss", default="0,1,5")
    ap.add_argument("--cells", default="quic-full,quic-resumed,quic-0rtt,dtls13-full,dtls13-resumed,dtls13-full-cid")
    ap.add_argument("--n", type=int, default=21)
    ap.add_argument("--n-cal", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default="results/whatif-beyond-validation")
    ap.add_argument("--reuse", action="store_true", help="predict again from the measurements in --out")
    ap.add_argument("--no-host", action="store_true", help="predict without the measured path floor and wake-ups")
    a = ap.parse_args()
    cells = a.cells.split(",")
    for c in cells:
        if c not in CELLS:
            print(f"unknown cell {c!r}; known: {', '.join(CELLS)}", file=sys.stderr)
            return 2
    rtts = [float(x) for x in a.rtt.split(",")]
    losses = [float(x) for x in a.loss.split(",")]
    nets = [f"delay={r / 2:g}ms" + (f",loss={lo:g}%" if lo else "") for r in rtts for lo in losses]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "measured.json"
    if a.reuse:
        data = json.loads(store.read_text())
    else:
        from whatif_validation import start_wakeup_probe  # the TLS bench's probe (this directory)

        pki = LabPKI().ensure()
        exe = D.ensure_tool()
        data = {"cal": [], "grid": [], "floors": []}
        n_cal, n = max(1, a.n_cal // a.rounds), max(1, a.n // a.rounds)
        (out / "wakeups.txt").unlink(missing_ok=True)
        probe = start_wakeup_probe(out, 6 * 3600)
        try:
            for rnd in range(a.rounds + 1):
                t0 = time.time()
                data["cal"].append([measure_cell(CELLS[c][0]("loopback"), n_cal, 3, pki, None, exe) for c in cells])
                print(f"round {rnd}: calibration {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
                store.write_text(json.dumps(data))
                if rnd == a.rounds:
                    break
                data["floors"].append(path_floor_ms(rnd + 1))
                print(f"round {rnd}: path floor {data['floors'][-1]}", file=sys.stderr, flush=True)
                grid = {}
                for net in nets:
                    t0 = time.time()
                    with Link(net, seed=rnd + 1) as link:
                        grid[net] = [measure_cell(CELLS[c][0](net), n, 1, pki, link, exe) for c in cells]
                    print(f"round {rnd}: {net} {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
                    data["grid"].append(
                        {"round": rnd, "network": net, "series": grid[net], "window": [t0, time.time()]}
                    )
                    store.write_text(json.dumps(data))
        finally:
            probe.terminate()
            probe.wait(timeout=10)
    floors = [f["floor_ms"] for f in data.get("floors", [])]
    floor = statistics.median(floors) if floors and not a.no_host else 0.0
    print(
        f"path floor {floor:.3f} ms one way per flight ("
        + (
            f"median of {len(floors)} measurements: " + ", ".join(f"{x:.3f}" for x in floors)
            if floors
            else "not measured"
        )
        + ")",
        file=sys.stderr,
    )
    tables = [C.calibrate(doc_of(cal, f"cal{i}")) for i, cal in enumerate(data["cal"])]
    rows = []
    by_cell: dict[tuple[str, str], list] = {}
    wakes: dict[tuple[str, str], list] = {}
    for g in data["grid"]:
        w = wakeups_between(out, *g["window"]) if "window" in g and not a.no_host else None
        for c, s in zip(cells, g["series"]):
            by_cell.setdefault((c, g["network"]), []).append((g["round"], s))
            wakes.setdefault((c, g["network"]), []).extend(w or ())
    print(
        f"{'cell':20} {'network':22} {'n':>3} {'meas P50':>9} {'pred P50':>9} {'err':>7} {'meas P95':>9} "
        f"{'pred P95':>9} {'err':>7}  bytes up/down meas | model"
    )
    for (c, net), got in by_cell.items():
        vals = [v for _, s in got for v in s["values_us"]]
        if not vals:
            rows.append({"cell": c, "network": net, "missing": True, "failures": [s["failures"][:2] for _, s in got]})
            print(f"{c:20} {net:22} (no connection succeeded: {got[0][1]['failures'][:1]})")
            continue
        m50, m95 = float(np.percentile(vals, 50)), float(np.percentile(vals, 95))
        sc = CELLS[c][1]
        # each round predicted from the mean of the calibrations before and after it
        rt = [t for r, _ in got for t in tables[r : r + 2]]  # pooled over the calibration before and after
        link = N.with_path_floor(
            N.from_spec(NS.parse(net), coap_random_factor=1.0), floor
        )  # the pair: no random factor
        if wakes.get((c, net)):
            link = N.with_host_wakeups(link, wakes[(c, net)])
        pr = predict(sc, rt, link, len(vals))
        model = F.build(sc)
        ok = [x for _, s in got for x in s["samples"] if x.get("ok") and not x.get("dropped")]
        mb = (
            (statistics.median([x["bytes_c2s"] for x in ok]), statistics.median([x["bytes_s2c"] for x in ok]))
            if ok
            else (None, None)
        )
        row = {
            "cell": c,
            "network": net,
            "n": len(vals),
            "measured_p50_ms": m50 / 1e3,
            "measured_p95_ms": m95 / 1e3,
            "predicted_p50_ms": pr["p50_us"] / 1e3,
            "predicted_p95_ms": pr["p95_us"] / 1e3,
            "err_p50": (pr["p50_us"] - m50) / m50,
            "err_p95": (pr["p95_us"] - m95) / m95,
            "bytes_measured": mb,
            # up to the response (QUIC 0-RTT's Finished leaves after it: transport quic-final)
            "bytes_model": tuple(
                sum(
                    f.payload
                    for e in model.exchanges
                    if e.transport != "quic-final"
                    for f in (e.out, e.back)
                    if f is not None and f.sender == side
                )
                for side in ("client", "server")
            ),
            "failures": sum(len(s["failures"]) for _, s in got),
            "path_floor_ms": floor,
            "wakeup_mean_ms": float(np.mean(wakes[(c, net)])) if wakes.get((c, net)) else None,
        }
        rows.append(row)
        print(
            f"{c:20} {net:22} {row['n']:>3} {m50 / 1e3:9.1f} {pr['p50_us'] / 1e3:9.1f} {row['err_p50'] * 100:+6.1f}% "
            f"{m95 / 1e3:9.1f} {pr['p95_us'] / 1e3:9.1f} {row['err_p95'] * 100:+6.1f}%  {mb[0]}/{mb[1]} | "
            f"{row['bytes_model'][0]}/{row['bytes_model'][1]}"
        )
    val = [r for r in rows if not r.get("missing")]
    if val:
        e50 = [abs(r["err_p50"]) for r in val]
        e95 = [abs(r["err_p95"]) for r in val]
        ok = statistics.median(e50) <= 0.10 and statistics.median(e95) <= 0.25
        print(
            f"\n{len(val)} validation cells: median |error| P50 {statistics.median(e50) * 100:.1f}% (target <= 10%), "
            f"P95 {statistics.median(e95) * 100:.1f}% (target <= 25%); worst P50 {max(e50) * 100:.1f}% -> "
            f"{'PASS' if ok else 'MISS'}"
        )
        for proto in ("quic", "dtls13"):
            pv = [r for r in val if r["cell"].startswith(proto)]
            if pv:
                print(
                    f"  {proto}: {len(pv)} cells, median |error| P50 "
                    f"{statistics.median([abs(r['err_p50']) for r in pv]) * 100:.1f}%, P95 "
                    f"{statistics.median([abs(r['err_p95']) for r in pv]) * 100:.1f}%"
                )
                for k in ("err_p50", "err_p95"):
                    worst = sorted(pv, key=lambda r: -abs(r[k]))[:3]
                    print(
                        f"    worst {k[4:].upper()}: "
                        + "; ".join(f"{r['cell']} @ {r['network']} {r[k] * 100:+.0f}%" for r in worst)
                    )
    (out / "validation.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
