#!/usr/bin/python3
"""Proves that check_layers.py can fail: runs it on a small temporary tree with one upward
include and one protobuf include, and expects exit status 1 with both violations named."""

import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")

FILES = {
    "core/rig/pose.h": '#include "core/util/progress.h"\n#include "core/weights/bake.h"\n',
    "core/geometry/mesh.cc": '#include "core/geometry/mesh.h"\n#include "google/protobuf/message.h"\n',
    "core/weights/bake.cc": '#include "core/solve/elastic.h"\n#include "core/rig/pose.h"\n',
}
EXPECTED = [
    "core/rig/pose.h:2 includes core/weights/bake.h (rig may include: util, math)",
    "core/geometry/mesh.cc:2 includes google/protobuf/message.h (core never includes gRPC or "
    "protobuf headers)",
]


def main():
    with tempfile.TemporaryDirectory() as root:
        for rel, text in FILES.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        run = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
    print(run.stdout, end="")
    ok = run.returncode == 1
    if not ok:
        print(f"FAIL: exit status {run.returncode}, expected 1")
    lines = run.stdout.splitlines()
    for want in EXPECTED:
        if want not in lines:
            print(f"FAIL: missing line: {want}")
            ok = False
    violations = [l for l in lines if " includes " in l]
    if len(violations) != len(EXPECTED):
        print(f"FAIL: {len(violations)} violations reported, expected {len(EXPECTED)}")
        ok = False
    print("OK: the check names both violations and fails" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
