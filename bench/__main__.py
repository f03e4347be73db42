"""`python -m bench [--full] [--only NAME ...] [--runs N]`: run the benchmarks, print one table,
write bench/results/latest.json. Benchmarks report; they never fail (exit status 0)."""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

from .common import ROOT, Config, Row, machine_info

# (key, module, function): run in this order; the core ones first, the dashboard last.
BENCHES = [
    ("pipe", "b_ingest", "run_pipe"),
    ("pty", "b_ingest", "run_pty"),
    ("spawn", "b_spawn", "run"),
    ("wait", "b_wait", "run"),
    ("poll", "b_poll", "run"),
    ("search", "b_search", "run"),
    ("tail", "b_tail", "run"),
    ("cli", "b_cli", "run"),
    ("mcp", "b_mcp", "run"),
    ("keys", "b_keys", "run"),
    ("memory", "b_memory", "run"),
    ("dashboard", "b_dashboard", "run"),
    ("remote", "b_remote", "run"),
    ("web", "b_web", "run"),
]


def fmt(x) -> str:
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def table(rows: list[Row]) -> str:
    head = ("benchmark", "value (median [min-max])", "baseline (median)", "ratio", "target", "met?")
    lines = []
    for r in rows:
        if r.error:
            lines.append((r.name, "ERROR: " + r.error[:70], "", "", r.target, "-"))
            continue
        val = f"{fmt(r.value)} [{fmt(min(r.values))}-{fmt(max(r.values))}] {r.unit}" if r.values else "-"
        base = f"{fmt(r.base)} {r.unit} ({r.base_name})" if r.base_values else (r.base_name or "-")
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else "-"
        met = {True: "yes", False: "NO", None: "-"}[r.met]
        lines.append((r.name, val, base, ratio, r.target or "-", met))
    widths = [max(len(str(x[i])) for x in [head, *lines]) for i in range(len(head))]
    out = [" | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)),
           "-|-".join("-" * w for w in widths)]
    out += [" | ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--full", action="store_true", help="bigger sizes and more runs")
    ap.add_argument("--only", nargs="*", default=[], help=f"run only these: {', '.join(b[0] for b in BENCHES)}")
    ap.add_argument("--runs", type=int, default=None, help="runs per side (default 5; 7 with --full)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "latest.json"))
    args = ap.parse_args(argv)
    cfg = Config(full=args.full, runs=args.runs or (7 if args.full else 5), only=args.only)
    info = machine_info()
    print(f"hermes-procs benchmarks ({'full' if cfg.full else 'quick'}, {cfg.runs} runs per side, interleaved)")
    print(f"machine: {info['cpu_model']}, {info['cores']} cores, Python {info['python']}, "
          f"load {info['loadavg_at_start']}, {info['date']}", flush=True)
    rows: list[Row] = []
    timings = {}
    start = time.monotonic()
    for key, module, func in BENCHES:
        if cfg.only and key not in cfg.only:
            continue
        t0 = time.monotonic()
        print(f"  running {key} ...", end="", flush=True)
        try:
            mod = __import__(f"bench.{module}", fromlist=[func])
            got = getattr(mod, func)(cfg)
        except Exception as exc:  # noqa: BLE001 - a benchmark never fails the run
            got = [Row(key, "", error=f"{type(exc).__name__}: {exc}")]
            traceback.print_exc(file=sys.stderr)
        rows.extend(got)
        timings[key] = round(time.monotonic() - t0, 1)
        print(f" {timings[key]} s", flush=True)
    print()
    print(table(rows))
    total = round(time.monotonic() - start, 1)
    print(f"\ntotal {total} s; ratio = value / baseline; each figure: median of >= {cfg.runs} interleaved runs "
          "[min-max]")
    info["loadavg_at_end"] = [round(x, 2) for x in __import__("os").getloadavg()]
    result = {"machine": info, "mode": "full" if cfg.full else "quick", "runs": cfg.runs, "seconds": timings,
              "total_seconds": total, "rows": [r.as_dict() for r in rows], "table": table(rows)}
    try:
        from pathlib import Path

        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
        print(f"wrote {out}")
    except OSError as exc:
        print(f"could not write results: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
