#!/usr/bin/env python3
"""The layering of DESIGN.md "Layers and folders", checked on every #include "..." of the sources:
a folder includes only from the folders below it, the backends not from each other, and cli/ and
bindings/ from no backend's internals (backend/sim/, backend/cpu/, backend/cuda/, backend/mpi/): only
backend/'s own headers (the interface, the registry, the trace). tests/ and bench/ may include
anything.

Known debt is listed in PENDING by file and include, with the issue that removes it; an entry that
no longer occurs is an error too, so the list only shrinks.
Usage: check_layering.py SOURCE_DIR     (exit 1 and one line per violation)
       check_layering.py --self-test    (the checker catches a violation and a stale entry)"""
import pathlib
import re
import sys

# A source file's layer: its first folder, or backend/<name> for a backend's folder, or
# scenarios/<library> (and scenarios/studies/<study>) for the scenarios libraries.
BACKENDS = ("backend/sim", "backend/cpu", "backend/cuda", "backend/mpi")
BELOW_BACKENDS = {"sim", "topology", "models"}
BELOW_SCENARIOS = BELOW_BACKENDS | {"backend", *BACKENDS}
# scenarios/ in order: config <- report <- trace <- studies; the studies in their own folders use the
# studies' common files, not one another.
SCENARIOS = ("scenarios/config", "scenarios/report", "scenarios/trace", "scenarios/studies")
STUDIES = ("scenarios/studies/sweep", "scenarios/studies/campaign", "scenarios/studies/calibrate")
ALLOWED = {
    "sim": {"sim"},
    "topology": {"sim", "topology"},
    "models": {"sim", "models"},
    "backend": BELOW_BACKENDS | {"backend", *BACKENDS},  # backend/'s own files: the registry sees them all
    "backend/sim": BELOW_BACKENDS | {"backend", "backend/sim"},
    "backend/cpu": BELOW_BACKENDS | {"backend", "backend/cpu", "backend/mpi"},
    "backend/cuda": BELOW_BACKENDS | {"backend", "backend/cuda", "backend/mpi"},
    "backend/mpi": BELOW_BACKENDS | {"backend", "backend/mpi"},
    "scenarios/config": BELOW_SCENARIOS | {"scenarios/config"},
    "scenarios/report": BELOW_SCENARIOS | {"scenarios/config", "scenarios/report"},
    "scenarios/trace": BELOW_SCENARIOS | {"scenarios/config", "scenarios/report", "scenarios/trace"},
    "scenarios/studies": BELOW_SCENARIOS | {*SCENARIOS},
    **{study: BELOW_SCENARIOS | {*SCENARIOS, study} for study in STUDIES},
    "scenarios": BELOW_SCENARIOS | {"scenarios", *SCENARIOS, *STUDIES},  # scenarios/api.h, the whole API
    "bindings": BELOW_SCENARIOS - set(BACKENDS) | {"scenarios", *SCENARIOS, *STUDIES, "bindings"},
    "cli": BELOW_SCENARIOS - set(BACKENDS) | {"scenarios", *SCENARIOS, *STUDIES, "cli"},
}
FOLDERS = {"sim", "topology", "models", "backend", "scenarios", "bindings", "cli"}
SUFFIXES = {".h", ".cc", ".cu", ".cuh"}

# (file, include) -> the issue that removes it. Empty: cli/ reaches the backends only through
# backend/backend.h and backend/registry.h (issue 28 section 1).
PENDING = {}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def layer_of(path):
    """The layer of a path relative to the source root ("backend/sim/fabric.h" -> "backend/sim"), or
    None outside the layered folders (tests/, bench/, third-party)."""
    parts = pathlib.PurePosixPath(path).parts
    if not parts or parts[0] not in FOLDERS:
        return None
    if parts[0] == "backend" and len(parts) > 2:
        sub = f"backend/{parts[1]}"
        return sub if sub in BACKENDS else "backend"
    if parts[0] == "scenarios" and len(parts) > 2:
        study = "/".join(parts[:3])
        if study in STUDIES and len(parts) > 3:
            return study
        library = "/".join(parts[:2])
        return library if library in SCENARIOS else "scenarios"
    return parts[0]


def violations(sources, pending):
    """sources: {relative path: text}. The violations and the stale pending entries, as lines."""
    out, seen = [], set()
    for path in sorted(sources):
        layer = layer_of(path)
        if layer is None:
            continue
        for include in INCLUDE.findall(sources[path]):
            target = layer_of(include)
            if target is None or target in ALLOWED[layer]:
                continue
            if (path, include) in pending:
                seen.add((path, include))
                continue
            out.append(f'{path}: includes "{include}": {layer}/ may use {", ".join(sorted(ALLOWED[layer]))}')
    for key in sorted(set(pending) - seen):
        out.append(f"{key[0]}: no longer includes \"{key[1]}\": remove it from PENDING in {__file__}")
    return out


def self_test():
    sources = {"models/plan.cc": '#include "models/plan.h"\n#include "topology/topology.h"\n',
               "cli/run_command.cc": '#include "scenarios/studies/run_study.h"\n#include "backend/sim/fabric.h"\n',
               "backend/cpu/x.cc": '#include "backend/cuda/y.h"\n',
               "scenarios/report/r.cc": '#include "scenarios/config/c.h"\n#include "scenarios/trace/t.h"\n',
               "scenarios/studies/sweep/s.cc": '#include "scenarios/studies/run_study.h"\n'
                                               '#include "scenarios/studies/campaign/c.h"\n'}
    found = violations(sources, {("cli/gone.cc", "backend/cpu/z.h"): "test"})
    expected = ['models/plan.cc: includes "topology/topology.h"', 'cli/run_command.cc: includes "backend/sim/fabric.h"',
                'backend/cpu/x.cc: includes "backend/cuda/y.h"', 'cli/gone.cc: no longer includes "backend/cpu/z.h"',
                'scenarios/report/r.cc: includes "scenarios/trace/t.h"',
                'scenarios/studies/sweep/s.cc: includes "scenarios/studies/campaign/c.h"']
    missing = [e for e in expected if not any(line.startswith(e) for line in found)]
    if missing or len(found) != len(expected):
        sys.exit(f"self-test failed: missing {missing}, found {found}")
    print("layering self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[1])
    sources = {}
    for folder in sorted(FOLDERS):
        for file in sorted((root / folder).rglob("*")):
            if file.suffix in SUFFIXES and file.is_file():
                sources[file.relative_to(root).as_posix()] = file.read_text(errors="replace")
    found = violations(sources, PENDING)
    for line in found:
        print(line)
    if found:
        sys.exit(1)
    print(f"layering: {len(sources)} files, {len(PENDING)} known exceptions, no violation")


if __name__ == "__main__":
    main()
