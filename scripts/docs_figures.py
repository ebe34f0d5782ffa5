#!/usr/bin/env python3
"""Draw the documentation's figures (docs/figures/*.png) from small secperf runs: `make docs-figures`.

Each figure comes from one or two short secperf commands (seconds each; the commands are printed, and
each page that shows a figure gives its command), read back as Results (`--json`) and drawn with
matplotlib. The images are committed, so building the documentation never measures anything.

The validation figures:
- validation-whatif.png is recomputed here: a loopback calibration run, the same handshakes measured
  over two emulated links, and the what-if model's prediction for them from that calibration
  (needs root or the rootless link mode, like `secperf netem`; skipped with a note otherwise);
- validation-boards.png is drawn from the output of `benchmarks/device_boards.py --json FILE` (too
  slow to re-run here: minutes of emulation per board); pass the files with --boards-json. Without
  them the committed image stays as it is;
- cluster-sweep.png (the per-worker figures that size a sweep cluster) is drawn from the output of
  `benchmarks/cluster_sweep.py --json FILE` (minutes of Ray rounds); pass it with --sweep-json, and the
  figures behind it are written beside it (cluster-sweep.json).

Usage: scripts/docs_figures.py [--only NAME[,NAME]] [--boards-json FILES...] [--sweep-json FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"
DPI = 110


class Runner:
    def __init__(self, out: Path):
        self.out = out

    def __call__(self, *args: str) -> dict:
        """Run `secperf ARGS --json` from the source tree and return its Result."""
        cmd = [sys.executable, "-m", "secperf", *args, "--json", "--no-report", "--out", str(self.out)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
        print("  $ secperf " + " ".join(args), file=sys.stderr)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        if r.returncode not in (0, 1) or not r.stdout.strip():
            raise SystemExit(f"docs_figures: `secperf {' '.join(args)}` exited {r.returncode}:\n{r.stderr[-2000:]}")
        return json.loads(r.stdout)


def save(fig, name: str) -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(FIGURES / f"{name}.png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    print(f"docs_figures: wrote docs/figures/{name}.png", file=sys.stderr)


def p50_ms(series: dict) -> float:
    return (series.get("summary") or {}).get("p50_us", float("nan")) / 1e3


def cpu_p50_ms(series: dict) -> float:
    """The thread's CPU time per operation (P50): steadier than wall time on a shared machine."""
    summary = series.get("cpu_summary") or series.get("summary") or {}
    return summary.get("p50_us", float("nan")) / 1e3


def grouped_bars(ax, groups: list[str], series: list[tuple[str, list[float]]], fmt: str | None = None) -> None:
    """One bar per series within each group, side by side; values printed on the bars with fmt."""
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(groups))]
        bars = ax.bar(xs, values, width, label=name)
        if fmt:
            ax.bar_label(bars, fmt=fmt, fontsize=7)
    ax.set_xticks(range(len(groups)), groups)


# ---- the figures -------------------------------------------------------------------------------------

BREAKDOWN = [
    ("client_compute", "client compute"),
    ("server_compute", "server compute"),
    ("secure_element", "secure element"),
    ("propagation", "propagation"),
    ("serialisation", "serialisation"),
    ("retransmission_wait", "retransmission waits"),
]


def fig_device(run: Runner) -> None:
    """The device question: MQTT over TLS 1.3 from a Cortex-M4 at 80 MHz over NB-IoT, where the time goes."""
    doc = run(
        "whatif",
        "mqtt",
        "--device",
        "cortex-m4-80",
        "--network",
        "nb-iot",
        "--key",
        "software,se:iot-safe-sim:cold",
        "--baseline",
    )
    rows = [s for s in doc["series"] if s.get("derived", {}).get("breakdown_mean_us")]
    seen, uniq = set(), []
    for s in rows:
        if s["id"] not in seen:
            seen.add(s["id"])
            uniq.append(s)

    def label(s: dict) -> str:
        lab = s["labels"]
        if lab.get("security") == "none":
            return "MQTT without security\n(plain TCP)"
        key = "software key" if lab["key"] == "software" else lab["key"].replace("se:", "secure element ")
        return f"MQTT over TLS 1.3\n{key}"

    labels = [label(s) for s in uniq]
    fig, ax = plt.subplots(figsize=(8, 3.3))
    left = [0.0] * len(uniq)
    for key, name in BREAKDOWN:
        vals = [s["derived"]["breakdown_mean_us"].get(key, 0.0) / 1e6 for s in uniq]
        ax.barh(labels, vals, left=left, label=name)
        left = [a + b for a, b in zip(left, vals)]
    for i, s in enumerate(uniq):
        ax.text(left[i] + 0.05, i, f"P50 {p50_ms(s) / 1e3:.2f} s", va="center", fontsize=8)
    ax.set_xlabel("mean set-up until CONNACK, s (Cortex-M4 at 80 MHz, NB-IoT)")
    ax.set_xlim(0, max(left) * 1.22)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.45, -0.32), frameon=False)
    save(fig, "device-mqtt-nbiot")


def fig_s1(run: Runner) -> None:
    """Study S1 on the emulated Cortex-A9: wolfSSL's client, millions of instructions per handshake message."""
    doc = run(
        "device",
        "handshake",
        "--device",
        "cortex-a9-400",
        "--stack",
        "wolfssl",
        "--group",
        "x25519,p-256",
        "--tls",
        "1.3,1.2",
        "--n",
        "3",
    )
    warm = [s for s in doc["series"] if s["id"].endswith("/warm") and s.get("status", "ok") == "ok"]
    if not warm:
        raise SystemExit("docs_figures: the device run gave no warm rows")
    per = []
    for s in warm:
        parts = s.get("derived", {}).get("messages") or {}
        if isinstance(parts, dict):
            msgs = {k: (v.get("instructions") if isinstance(v, dict) else v) for k, v in parts.items()}
        else:
            msgs = {f"{m['message']} ({m.get('dir', '')})": m.get("instructions") for m in parts}
        lab = s["labels"]
        per.append((f"TLS {lab.get('tls')} {lab.get('group')}", {k: float(v) / 1e6 for k, v in msgs.items() if v}))
    names = []
    for _, msgs in per:
        for k, v in msgs.items():
            if k not in names and v >= 0.05:
                names.append(k)
    fig, ax = plt.subplots(figsize=(8, 3.2))
    left = [0.0] * len(per)
    for k in names:
        vals = [msgs.get(k, 0.0) for _, msgs in per]
        ax.barh([p[0] for p in per], vals, left=left, label=k)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_xlabel("client instructions per handshake, millions (wolfSSL, Cortex-A9, RSA-2048 server, warm)")
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    ax.set_xlim(0, max(left) * 1.05)
    save(fig, "s1-per-message")


def fig_s2(run: Runner) -> None:
    """Study S2: connection set-up with a software key against the IoT SAFE SIM, warm and cold, per protocol."""
    doc = run(
        "whatif", "https,mqtt,coap", "--key", "software,se:iot-safe-sim,se:iot-safe-sim:cold", "--network", "lte-m"
    )
    by = {}
    for s in doc["series"]:
        lab = s["labels"]
        if lab.get("security", "on") != "on":
            continue
        by[(lab["protocol"], lab["key"])] = p50_ms(s)
    protocols = ["https", "mqtt", "coap"]
    keys = ["software", "se:iot-safe-sim", "se:iot-safe-sim:cold"]
    fig, ax = plt.subplots(figsize=(7, 3))
    grouped_bars(
        ax,
        [{"coap": "CoAP"}.get(p, p.upper()) for p in protocols],
        [(k, [by.get((p, k), 0.0) for p in protocols]) for k in keys],
        fmt="%.0f",
    )
    ax.set_ylabel("predicted set-up P50, ms (LTE-M)")
    ax.set_ylim(0, max(by.values()) * 1.3)
    ax.legend(fontsize=8, ncol=3, loc="upper left")
    save(fig, "s2-secure-element")


def fig_s3(run: Runner) -> None:
    """Study S3: RSA private-key operations with and without the CRT, by modulus."""
    sizes = ["1024", "2048", "3072"]
    algs = ",".join(f"rsa-{n},rsa-{n}-nocrt" for n in sizes)
    doc = run("crypto", "--alg", algs, "--op", "sign", "--n", "10", "--duration", "0.3")
    p50 = {s["labels"]["alg"]: cpu_p50_ms(s) for s in doc["series"] if s.get("status", "ok") == "ok"}
    fig, ax = plt.subplots(figsize=(6, 3))
    grouped_bars(
        ax,
        [f"RSA-{n}" for n in sizes],
        [
            (name, [p50.get(f"rsa-{n}{suffix}", 0.0) for n in sizes])
            for suffix, name in [("", "with CRT"), ("-nocrt", "without CRT (n, e, d only)")]
        ],
        fmt="%.2f",
    )
    ax.set_ylabel("sign (SHA-256 + private op),\nCPU ms per operation, P50")
    ax.legend(fontsize=8)
    save(fig, "s3-rsa-crt")


def fig_s4(run: Runner) -> None:
    """Study S4: CPU load of frame authentication on the RL78 for a tag every k frames."""
    doc = run("can", "--device", "rl78,rh850", "--mac", "chaskey,aes-128-cmac")
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    for sweep in doc["analysis"]["can"]["sweeps"]:
        if sweep.get("fd"):  # CAN FD carries the tag in the frame: same CPU load, no extra frame
            continue
        rows = sweep["rows"]
        ax.plot(
            [r["k"] for r in rows],
            [100 * r["cpu_load"] for r in rows],
            marker="o",
            label=f"{sweep['device']} {sweep['mac']}",
        )
    budget = doc["analysis"]["can"]["params"].get("cpu_budget")
    if budget:
        ax.axhline(100 * budget, color="grey", linestyle="--", linewidth=1, label=f"CPU budget {100 * budget:g} %")
    ax.set_yscale("log")
    ax.set_xlabel("one tag every k frames")
    ax.set_ylabel("CPU load of MAC processing, %")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save(fig, "s4-can-load")


def fig_s5(run: Runner) -> None:
    """Study S5: sign and verify by algorithm, grouped by SP 800-57 strength."""
    algs = [
        "rsa-1024",
        "ecdsa-secp160r1",
        "rsa-2048",
        "ecdsa-secp224r1",
        "rsa-3072",
        "ecdsa-p256",
        "ed25519",
        "ecdsa-p384",
    ]
    doc = run("crypto", "--alg", ",".join(algs), "--op", "sign,verify", "--n", "10", "--duration", "0.3")
    val = {
        (s["labels"]["alg"], s["labels"]["op"]): (cpu_p50_ms(s) * 1e3, s["labels"].get("security_bits"))
        for s in doc["series"]
        if s.get("status", "ok") == "ok"
    }
    present = [a for a in algs if (a, "sign") in val]
    fig, ax = plt.subplots(figsize=(8, 3.3))
    grouped_bars(
        ax,
        [f"{a}\n({val[(a, 'sign')][1]} bit)" for a in present],
        [(op, [val.get((a, op), (0, 0))[0] for a in present]) for op in ("sign", "verify")],
    )
    ax.tick_params(axis="x", labelsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("CPU µs per operation, P50 (log)")
    ax.legend(fontsize=8)
    save(fig, "s5-signatures")


def fig_validation_whatif(run: Runner) -> None:
    """Predicted against measured: the what-if model, calibrated on a loopback run, against the same
    handshakes measured over emulated links (P50 from the first packet to the handshake's end)."""
    links = ["delay=5ms", "delay=25ms", "delay=25ms,loss=2%"]
    cal = run("handshake", "versions", "--n", "40")
    cal_path = run.out / "calibration.json"
    cal_path.write_text(json.dumps(cal))
    measured = run("handshake", "versions", "--n", "15", *sum((["--network", n] for n in links), []))
    predicted = run(
        "whatif",
        "tls1.3,tls1.2",
        *sum((["--network", n] for n in links), []),
        "--calibrate",
        str(cal_path),
        "--until",
        "handshake",
        "--host-scheduling",
        "measure",
        "--seed",
        "1",
    )
    meas = {}
    for s in measured["series"]:
        lab = s["labels"]
        net = lab.get("network_spec") or lab.get("network") or ""
        # the handshake end point, as `openssl s_time` stops: TCP connect + the handshake, per connection
        times = sorted(
            float(c.get("tcp_connect_us") or 0.0) + float(c["handshake_wall_us"])
            for c in s.get("samples") or []
            if c.get("ok") and c.get("handshake_wall_us") is not None
        )
        if times:
            meas[(f"tls{lab.get('tls')}", lab.get("network"), net)] = statistics.median(times) / 1e3
    pairs = []
    for s in predicted["series"]:
        lab = s["labels"]
        for (proto, net, spec), m in meas.items():
            if proto == lab.get("protocol") and (net == lab.get("network") or spec == lab.get("network_spec")):
                pairs.append((f"{proto} {lab.get('network')}", m, p50_ms(s)))
    if not pairs:
        raise SystemExit("docs_figures: no predicted row matched a measured one")
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    ys = list(range(len(pairs)))
    ax.barh([y + 0.2 for y in ys], [m for _, m, _ in pairs], 0.4, label="measured (secperf handshake)")
    ax.barh([y - 0.2 for y in ys], [p for _, _, p in pairs], 0.4, label="predicted (secperf whatif)")
    for y, (_, m, p) in zip(ys, pairs):
        ax.text(max(m, p) * 1.01, y, f"{100 * (p - m) / m:+.0f} %", va="center", fontsize=8)
    ax.set_yticks(ys, [name for name, _, _ in pairs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("P50, ms: first packet to the end of the client's handshake (TCP connect included)")
    ax.set_xlim(0, max(max(m, p) for _, m, p in pairs) * 1.15)
    ax.legend(fontsize=7, loc="upper right")
    save(fig, "validation-whatif")
    (FIGURES / "validation-whatif.json").write_text(
        json.dumps(
            [
                {
                    "cell": n,
                    "measured_p50_ms": round(m, 3),
                    "predicted_p50_ms": round(p, 3),
                    "error": round((p - m) / m, 4),
                }
                for n, m, p in pairs
            ],
            indent=1,
        )
        + "\n"
    )


def fig_validation_boards(files: list[Path]) -> None:
    """Predicted (the device timing model) against published figures, from benchmarks/device_boards.py --json."""
    rows = []
    for f in files:
        doc = json.loads(f.read_text())
        rows += [
            r for r in doc.get("rows", []) if r.get("matchable") and r.get("predicted_ms") and r.get("published_ms")
        ]
    if not rows:
        raise SystemExit("docs_figures: no matched rows in " + ", ".join(map(str, files)))
    fig, ax = plt.subplots(figsize=(5.6, 4.6))
    doubt = [r for r in rows if r.get("version_match") == "doubt"]  # listed apart by the bench: drawn apart
    boards = sorted({r["board"] for r in rows})
    for b in boards:
        rs = [r for r in rows if r["board"] == b and r not in doubt]
        ax.errorbar(
            [r["published_ms"] for r in rs],
            [r["predicted_ms"] for r in rs],
            yerr=[  # a band computed over other draws than the point (a mean of signatures) may not hold it
                [max(0.0, r["predicted_ms"] - r.get("predicted_low_ms", r["predicted_ms"])) for r in rs],
                [max(0.0, r.get("predicted_high_ms", r["predicted_ms"]) - r["predicted_ms"]) for r in rs],
            ],
            fmt="o",
            markersize=3,
            linewidth=0.8,
            label=f"{b} ({len(rs)})",
        )
    if doubt:
        ax.plot(
            [r["published_ms"] for r in doubt],
            [r["predicted_ms"] for r in doubt],
            "x",
            color="black",
            markersize=4,
            label=f"version in doubt, not counted ({len(doubt)})",
        )
    lo = min(min(r["published_ms"], r["predicted_ms"]) for r in rows) * 0.7
    hi = max(max(r["published_ms"], r["predicted_ms"]) for r in rows) * 1.4
    ax.plot([lo, hi], [lo, hi], color="grey", linewidth=1)
    ax.fill_between([lo, hi], [lo * 0.7, hi * 0.7], [lo * 1.3, hi * 1.3], color="grey", alpha=0.12, label="±30 %")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("published, ms per operation")
    ax.set_ylabel("predicted by the timing model, ms (band)")
    ax.legend(fontsize=6, loc="upper left")
    save(fig, "validation-boards")


def sweep_sizing(doc: dict) -> dict:
    """The per-worker figures of a sweep cluster from benchmarks/cluster_sweep.py --json: one worker
    core's cells per second, the driver's CPU per cell, where the driver saturates, and what was measured."""
    z = doc["sizing"]
    return {
        "n": doc["n"],
        "cells": doc["cells"],
        "cell_cpu_ms": round(z["cell_cpu_ms"], 3),
        "cells_per_s_per_worker_core": round(z["cells_per_s_per_worker_core"]),
        "driver_cpu_ms_per_cell": round(z["driver_cpu_ms_per_cell"], 4),
        "driver_main_thread_cpu_ms_per_cell": (
            round(z["driver_main_thread_cpu_ms_per_cell"], 4) if "driver_main_thread_cpu_ms_per_cell" in z else None
        ),
        "driver_rows_per_s": round(z["driver_rows_per_s"]) if z.get("driver_rows_per_s") else None,
        "driver_saturates_at_workers": round(z["driver_saturates_at_workers"], 1),
        "quiet_host_bound_two_workers": round(doc["quiet_host_bound"], 3),
        "measured_ratio_two_over_one": round(doc["ratio"], 3),
        "measured_ratio_median_of_rounds": (
            round(doc["ratio_median_of_rounds"], 3) if "ratio_median_of_rounds" in doc else None
        ),
        "cpu_time_bound_per_round": [round(b, 3) for b in doc.get("cpu_time_bound_per_round", [])],
        "ray_processes_cpu_ms_per_cell": (
            round(z["ray_processes_cpu_ms_per_cell"], 4) if "ray_processes_cpu_ms_per_cell" in z else None
        ),
        "rounds": [
            {
                "workers": x["workers"],
                "cells_per_s": round(x["cells_per_s"]),
                "load": [round(x["load_before"], 2), round(x["load_after"], 2)],
                "worker_cpu_share": [round(w["cpu_share"], 2) for w in x["per_worker"]],
                "worker_busy_fraction": [round(w["busy_fraction"], 3) for w in x["per_worker"]],
                "worker_idle_tail_ms": [round(w["idle_tail_s"] * 1e3) for w in x["per_worker"]],
            }
            for x in doc.get("rounds", [])
        ],
        "measured_ratio_per_round": [round(r, 3) for r in doc["ratio_per_round"]],
        "one_worker_cells_per_s": [round(r) for r in doc["one_worker_cells_per_s"]],
        "two_workers_cells_per_s": [round(r) for r in doc["two_workers_cells_per_s"]],
        "load_average": [[k, round(a, 2), round(b, 2)] for k, a, b in doc["load"]],
        "rows_equal_to_local": doc["equal_to_local"],
    }


def fig_cluster_sweep(file: Path) -> None:
    """Cells per second against worker cores: the workers' capacity, the driver's ceiling, and the
    rounds measured, from benchmarks/cluster_sweep.py --json."""
    z = sweep_sizing(json.loads(file.read_text()))
    per, ceiling = z["cells_per_s_per_worker_core"], z["driver_rows_per_s"] or float("inf")
    top = max(4, min(64, int(z["driver_saturates_at_workers"] * 1.5) + 1))
    ws = list(range(1, top + 1))
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.plot(
        ws, [w * per for w in ws], "--", color="grey", linewidth=1, label=f"workers alone: {per:,} cells/s per core"
    )
    if ceiling != float("inf"):
        ax.axhline(ceiling, color="tab:red", linewidth=1, label=f"driver: {ceiling:,} rows/s per core")
    ax.plot(
        ws, [min(w * per, ceiling) for w in ws], color="tab:blue", linewidth=1.6, label="a sweep: the lower of the two"
    )
    ax.plot(
        [1] * len(z["one_worker_cells_per_s"]) + [2] * len(z["two_workers_cells_per_s"]),
        z["one_worker_cells_per_s"] + z["two_workers_cells_per_s"],
        "o",
        color="black",
        markersize=3,
        label="measured rounds here (a shared host)",
    )
    ax.set_xlabel("worker cores (one driver core)")
    ax.set_ylabel(f"what-if cells per second (n {z['n']})")
    ax.set_xlim(0, top + 0.5)
    ax.set_ylim(0, min(top * per, ceiling * 1.3 if ceiling != float("inf") else top * per) * 1.05)
    ax.legend(fontsize=7, loc="lower right")
    save(fig, "cluster-sweep")
    (FIGURES / "cluster-sweep.json").write_text(json.dumps(z, indent=1) + "\n")


FIGS = {
    "device": fig_device,
    "s1": fig_s1,
    "s2": fig_s2,
    "s3": fig_s3,
    "s4": fig_s4,
    "s5": fig_s5,
    "validation-whatif": fig_validation_whatif,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma list of: " + ", ".join(FIGS) + ", validation-boards, cluster-sweep")
    ap.add_argument(
        "--boards-json",
        nargs="+",
        type=Path,
        default=[],
        help="outputs of benchmarks/device_boards.py --json (draws validation-boards.png)",
    )
    ap.add_argument(
        "--sweep-json", type=Path, help="the output of benchmarks/cluster_sweep.py --json (draws cluster-sweep.png)"
    )
    ap.add_argument("--keep", type=Path, help="keep the Results in this directory (default: a temporary one)")
    args = ap.parse_args(argv)
    only = (
        set(args.only.split(","))
        if args.only
        else set(FIGS)
        | ({"validation-boards"} if args.boards_json else set())
        | ({"cluster-sweep"} if args.sweep_json else set())
    )
    unknown = only - set(FIGS) - {"validation-boards", "cluster-sweep"}
    if unknown:
        ap.error(f"--only: unknown figure(s) {', '.join(sorted(unknown))}")
    if "cluster-sweep" in only:
        if not args.sweep_json:
            ap.error("cluster-sweep needs --sweep-json FILE (benchmarks/cluster_sweep.py --json)")
        try:
            sweep_sizing(json.loads(args.sweep_json.read_text()))
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
            ap.error(f"--sweep-json {args.sweep_json}: not an output of benchmarks/cluster_sweep.py --json ({e!r})")
    for f in args.boards_json:
        try:
            json.loads(f.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as e:
            ap.error(f"--boards-json {f}: not a readable JSON file ({e})")
    with tempfile.TemporaryDirectory(prefix="secperf-docs-") as tmp:
        out = args.keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        run = Runner(out)
        for name, draw in FIGS.items():
            if name in only:
                draw(run)
        if "validation-boards" in only:
            if not args.boards_json:
                ap.error("validation-boards needs --boards-json FILES (benchmarks/device_boards.py --json)")
            fig_validation_boards(args.boards_json)
        if "cluster-sweep" in only:
            fig_cluster_sweep(args.sweep_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
