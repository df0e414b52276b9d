#!/usr/bin/python3
"""Checks that the core library's folders include each other only downwards.

LAYERS below is the single source of truth for the order (lowest first): a folder may include
its own headers and those of the folders before it. IO sits beside the layers: it may include
the folders in IO_MAY_INCLUDE, and no other core folder includes it (tests may). No core file
includes a gRPC or protobuf header.

Scans every #include in ROOT/core/**/*.h and *.cc (ROOT defaults to the repository root) and
prints one line per violation, e.g.

  core/rig/rig.h:13 includes core/skinning/weights.h (rig may include: util, math)

Exits 1 when there is any violation, 0 otherwise.

Usage: check_layers.py [ROOT]
"""

import os
import re
import sys

# Lowest first. Keep README.md's "Repository layout" in step with this list.
LAYERS = ["util", "math", "rig", "geometry", "skinning", "solve", "weights"]
IO = "io"
IO_MAY_INCLUDE = ["util", "math", "rig", "geometry", "skinning"]

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
RPC_PREFIXES = ("grpcpp/", "grpc/", "google/protobuf/")


def allowed(folder):
    """The folders `folder` may include besides itself, or None for a folder not in the order."""
    if folder == IO:
        return IO_MAY_INCLUDE
    if folder in LAYERS:
        return LAYERS[: LAYERS.index(folder)]
    return None


def describe(folder):
    below = allowed(folder)
    return f"{folder} may include: {', '.join(below) if below else 'nothing else in core'}"


def check_file(rel, path):
    """Violations of one file; rel is its path relative to ROOT (core/<folder>/...)."""
    folder = rel.split("/")[1]
    below = allowed(folder)
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            where = f"{rel}:{number} includes {target}"
            if target.startswith(RPC_PREFIXES) or target.endswith(".pb.h"):
                out.append(f"{where} (core never includes gRPC or protobuf headers)")
                continue
            if not target.startswith("core/"):
                continue
            parts = target.split("/")
            dep = parts[1] if len(parts) > 2 else ""
            if below is None:
                out.append(f"{where} (core/{folder} is not in the layer order of "
                           "tests/layering/check_layers.py)")
            elif dep == folder:
                continue
            elif allowed(dep) is None:
                out.append(f"{where} (core/{dep} is not in the layer order of "
                           "tests/layering/check_layers.py)")
            elif dep not in below:
                out.append(f"{where} ({describe(folder)})")
    return out


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    core = os.path.join(root, "core")
    if not os.path.isdir(core):
        print(f"no core/ folder under {root}", file=sys.stderr)
        return 2
    violations, files = [], 0
    for dirpath, dirnames, filenames in os.walk(core):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if rel.count("/") < 2:  # a file directly in core/ belongs to no layer
                violations.append(f"{rel}:1 is not in a layer folder")
                continue
            files += 1
            violations.extend(check_file(rel, path))
    for v in violations:
        print(v)
    order = " → ".join(LAYERS)
    if violations:
        print(f"{len(violations)} layering violation(s) in {files} files; order: {order}, "
              f"{IO} beside them")
        return 1
    print(f"OK: {files} files include downwards only ({order}; {IO} beside them)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
