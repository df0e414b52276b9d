#!/usr/bin/env python3
"""Checks that no error the server sent a client names a server filesystem path or an address.

Every server the test suites spawn logs each error it sends (gRPC status, Connect error body,
WebSocket close reason, HTTP refusal) to build/tests/client-errors/*.log, one line
"door<TAB>code<TAB>message" (server/api/client_errors.h). This reads them all and fails on any
message with an absolute path, one of the given directories or a host:port (the shared store's
address, say: the cluster's layout is not the client's business) in it; it also fails when there are
too few errors to mean anything (the logging broke), so it cannot pass vacuously.

  check_client_errors.py LOG_DIR [--min_errors N] [--dir D ...]
"""
import argparse
import glob
import os
import re
import sys

# An absolute path: a slash not preceded by a word character, a dot or a colon (so "1/2",
# "and/or", "rigs/rig-…" and "http://" do not count) followed by at least two components, or a
# well-known root on its own.
ABSOLUTE = re.compile(r"(?<![\w.:/-])/(?:[\w.+@-]+/)+[\w.+@-]*")
ROOTS = re.compile(r"(?<![\w.:/-])/(?:tmp|home|root|work|var|usr|etc|proc|dev|run|srv|opt|mnt)\b")
# An address with a port: an IPv4 address, localhost or a name with a dot, then ":" and a port
# (not a time such as "12:30", nor "rigs[2]:3").
ENDPOINT = re.compile(r"\b(?:(?:\d{1,3}\.){3}\d{1,3}|localhost|[a-z][\w-]*(?:\.[a-z][\w-]*)+):\d{2,5}\b", re.I)
# The front door's own URL paths are not files: /skinning.v1.<Service>/<Method>, /grpc.…
URL = re.compile(r"^/(?:skinning\.v1\.|grpc\.|healthz|metrics|ws/)")


def offending(message, dirs):
    for d in dirs:
        if d and d in message:
            return d
    for m in ABSOLUTE.finditer(message):
        if not URL.match(m.group(0)):
            return m.group(0)
    for pattern in (ROOTS, ENDPOINT):
        m = pattern.search(message)
        if m:
            return m.group(0)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_dir")
    ap.add_argument("--min_errors", type=int, default=1)
    ap.add_argument("--door", action="append", default=[], help="a door that must appear")
    ap.add_argument("--dir", action="append", default=[], help="a server directory never to name")
    args = ap.parse_args()
    lines = []
    for path in sorted(glob.glob(os.path.join(args.log_dir, "*.log"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines += [(os.path.basename(path), line.rstrip("\n")) for line in f if line.strip()]
    doors = {}
    leaks = []
    for log, line in lines:
        door, _, rest = line.partition("\t")
        code, _, message = rest.partition("\t")
        doors[door] = doors.get(door, 0) + 1
        found = offending(message, [os.path.normpath(d) for d in args.dir])
        if found:
            leaks.append(f"{log}: [{door} {code}] {message}  <-- {found}")
    print(f"{len(lines)} client errors in {args.log_dir}: " +
          ", ".join(f"{d} {n}" for d, n in sorted(doors.items())))
    status = 0
    if len(lines) < args.min_errors:
        print(f"FAIL: fewer than {args.min_errors} errors logged: the suites did not run or the log broke")
        status = 1
    for d in args.door:
        if d not in doors:
            print(f"FAIL: no error left by the {d} door")
            status = 1
    for leak in leaks:
        print("FAIL: a server path or address reached a client: " + leak)
    return 1 if leaks else status


if __name__ == "__main__":
    sys.exit(main())
