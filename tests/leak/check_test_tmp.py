#!/usr/bin/env python3
"""A test process leaves nothing in $TMPDIR (tests/support/test_main.cc).

Runs a test binary with a gtest filter twice, each time with TMPDIR pointing at a fresh, empty
folder: once as the suite runs (the folder must be empty afterwards), and once with
SKINNING_KEEP_TEST_TMP=1, where the process's folder must be kept with files in it. The second
run shows the tests did write temporary files, so the first run's empty folder is the cleanup's
doing and not a filter that wrote nothing.

usage: check_test_tmp.py WORK_DIR BINARY FILTER
"""
import os
import shutil
import subprocess
import sys


def run(work, binary, gtest_filter, keep):
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    env = dict(os.environ, TMPDIR=work)
    env.pop("TEST_TMPDIR", None)
    env.pop("SKINNING_TEST_TMP_ROOT", None)
    env.pop("SKINNING_KEEP_TEST_TMP", None)
    if keep:
        env["SKINNING_KEEP_TEST_TMP"] = "1"
    result = subprocess.run([binary, "--gtest_filter=" + gtest_filter], env=env, capture_output=True, text=True,
                            timeout=300)
    if result.returncode != 0:
        sys.exit(f"{binary} --gtest_filter={gtest_filter} failed ({result.returncode}):\n"
                 f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    left = []
    for parent, _, files in os.walk(work):
        left.extend(os.path.relpath(os.path.join(parent, name), work) for name in files)
    entries = sorted(os.listdir(work))
    return entries, sorted(left)


def main():
    work, binary, gtest_filter = sys.argv[1:4]
    entries, files = run(work, binary, gtest_filter, keep=False)
    if entries:
        sys.exit(f"the tests left {len(entries)} entries in TMPDIR: {entries[:10]}")
    entries, files = run(work, binary, gtest_filter, keep=True)
    if len(entries) != 1 or not entries[0].startswith("skinning-test-"):
        sys.exit(f"with SKINNING_KEEP_TEST_TMP=1, expected one skinning-test-* folder, found {entries}")
    if not files:
        sys.exit("the kept folder is empty: the filter runs no test that writes a temporary file, so the "
                 "first run proved nothing")
    shutil.rmtree(work)
    print(f"{binary} {gtest_filter}: nothing left; kept run had {len(files)} files, e.g. {files[0]}")


if __name__ == "__main__":
    main()
