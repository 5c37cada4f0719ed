#!/usr/bin/env python3
"""Sets every numeric key of `megasim keys` to hostile values and lists the runs that do not end cleanly.

Each (key, value) goes into a copy of a small scenario (tests/data/campaign_small.toml by default) as
TOML, and `megasim run`, `megasim campaign --days 1` and `megasim collective` run on it under a
timeout and an address-space limit. A clean end is exit 0 (the value is valid) or exit 2 with the
key named in the message (refused). Anything else is listed: a signal (an abort on MEGASIM_ASSERT),
exit 1 ("internal error"), a timeout (a hang), exit 2 without the key's name, or memory exhausted.

    python3 scripts/hostile_numbers.py build-dev/cli/megasim [--jobs 2] [--timeout 30] [--keys cluster.]

Prints one line per unclean run and a summary; exits 1 when any run was unclean.
"""

import argparse
import concurrent.futures
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import tomllib

VALUES = ["0", "-1", "1e-300", "1e300", "inf", "nan", "9223372036854775807", "9223372036854775808",
          "18446744073709551616"]
COMMANDS = {
    "run": ["run", "{S}"],
    "campaign": ["campaign", "{S}", "--days", "1"],
    "collective": ["collective", "{S}", "--bytes", "1MiB", "--gpus", "16"],
}
ROOT = pathlib.Path(__file__).resolve().parent.parent


def numeric_keys(megasim):
    """(section, name, type) of every integer or number key, from `megasim keys`."""
    text = subprocess.run([megasim, "keys"], check=True, capture_output=True, text=True).stdout
    keys, section = [], None
    for line in text.splitlines():
        header = re.match(r"^\[(\w+)\]$", line.strip())
        if header:
            section = header.group(1)
            continue
        fields = line.split()
        if section and len(fields) >= 2 and fields[1] in ("integer", "number"):
            keys.append((section, fields[0], fields[1]))
    return keys


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    return str(value)


def scenario_text(base, section, name, literal):
    """The base scenario as TOML with section.name = literal (written as is, so 2^64 stays 2^64)."""
    lines = []
    sections = dict(base)
    sections.setdefault(section, {})
    for sec, keys in sections.items():
        lines.append(f"[{sec}]")
        for key, value in keys.items():
            if sec == section and key == name:
                continue
            lines.append(f"{key} = {toml_value(value)}")
        if sec == section:
            lines.append(f"{name} = {literal}")
    return "\n".join(lines) + "\n"


def run_case(megasim, base, case, timeout, memory_mib, show_accepted):
    section, name, _, literal, command = case
    with tempfile.TemporaryDirectory(prefix="megasim_hostile_numbers_") as folder:
        path = pathlib.Path(folder) / "scenario.toml"
        path.write_text(scenario_text(base, section, name, literal))
        args = [a.replace("{S}", str(path)) for a in COMMANDS[command]]
        limit = f"ulimit -v {memory_mib * 1024}; " if memory_mib else ""
        shell = limit + "exec timeout -s KILL " + str(timeout) + " " + megasim + " " + " ".join(args)
        r = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, cwd=folder)
    out = (r.stdout + r.stderr)[-400:].replace("\n", " | ")
    key = f"{section}.{name}"
    if r.returncode == 0:
        return f"{key} = {literal} [{command}]: accepted (exit 0)" if show_accepted else None
    if r.returncode == 2 and "internal error" not in out and (key in out or "simulated time" in out):
        return None
    kind = {137: "killed (timeout or memory)", 134: "abort", 1: "internal error", 2: "exit 2 without the key"}
    return f"{key} = {literal} [{command}]: exit {r.returncode} ({kind.get(r.returncode, 'signal')}): {out}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("megasim")
    p.add_argument("--scenario", default=str(ROOT / "tests/data/campaign_small.toml"))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("--memory-mib", type=int, default=4096, help="address-space limit per run (0: none)")
    p.add_argument("--keys", default="", help="only keys whose section.name starts with this")
    p.add_argument("--commands", default="run,campaign,collective")
    p.add_argument("--show-accepted", action="store_true", help="also list the values accepted (exit 0)")
    a = p.parse_args()
    megasim = os.path.abspath(a.megasim)
    base = tomllib.loads(pathlib.Path(a.scenario).read_text())
    cases = [(s, n, t, v, c) for s, n, t in numeric_keys(megasim) if f"{s}.{n}".startswith(a.keys)
             for v in VALUES for c in a.commands.split(",")]
    unclean = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for line in pool.map(lambda c: run_case(megasim, base, c, a.timeout, a.memory_mib, a.show_accepted), cases):
            if line and "accepted (exit 0)" in line:
                print(line, flush=True)
            elif line:
                unclean.append(line)
                print(line, flush=True)
    print(f"{len(unclean)} unclean of {len(cases)} runs")
    return 1 if unclean else 0


if __name__ == "__main__":
    sys.exit(main())
