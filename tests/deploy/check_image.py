#!/usr/bin/python3
"""Checks deploy/Dockerfile against this machine's Debian 12 without a container engine.

  - build stage: the install script is copied where the Dockerfile copies it (alone, in an
    otherwise empty tree) and run with the Dockerfile's arguments; it must succeed (it found no
    tests/ folder to run npm in when it ran from /tmp without --build-only);
  - runtime stage: every shared library `ldd` lists for the built programs belongs to a Debian
    package that the runtime stage installs, that one of those depends on (recursively), or
    that the base image has (Priority: required, and their dependencies). A library missing
    from the image ends the container at start ("error while loading shared libraries").

Dependencies are read from dpkg's database of installed packages (no network, no apt lists):
the build machine has every runtime package installed, as the -dev packages depend on them.

Usage: check_image.py --repo REPO_ROOT BINARY...
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile


def stages(dockerfile_text):
    """The Dockerfile's instructions (continuation lines joined), split by stage name."""
    joined = re.sub(r"\\\n", " ", dockerfile_text)
    result, name = {}, None
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"FROM\s+\S+(?:\s+AS\s+(\S+))?", line, re.IGNORECASE)
        if match:
            name = (match.group(1) or "").lower()
            result[name] = []
            continue
        if name is not None:
            result[name].append(line)
    return result


def check_build_stage(repo, instructions, failures):
    copies = [shlex.split(i)[1:] for i in instructions if i.startswith("COPY ")]
    dest = next((c[-1] for c in copies if c[0] == "scripts/install-deps.sh"), None)
    if dest is None:
        failures.append("build stage: no COPY of scripts/install-deps.sh")
        return
    runs = [i[4:] for i in instructions if i.startswith("RUN ") and dest in i]
    if not runs:
        failures.append(f"build stage: nothing runs {dest}")
        return
    command = runs[0].split("&&")[0].strip()
    words = shlex.split(command)
    if words[:2] != ["bash", dest]:
        failures.append(f"build stage: unexpected command '{command}'")
        return
    with tempfile.TemporaryDirectory() as root:
        copy = os.path.join(root, dest.lstrip("/"))
        os.makedirs(os.path.dirname(copy))
        with open(os.path.join(repo, "scripts/install-deps.sh"), "rb") as src, open(copy, "wb") as dst:
            dst.write(src.read())
        result = subprocess.run(["bash", copy] + words[2:], cwd="/", capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            failures.append(f"build stage: '{command}' with the script alone at {dest} exits {result.returncode}: "
                            f"{(result.stdout + result.stderr).strip()[-500:]}")
        else:
            print(f"ok: build stage runs '{command}' from a tree holding only the script")


def runtime_packages(instructions):
    packages = []
    for instruction in instructions:
        if not instruction.startswith("RUN ") or "apt-get install" not in instruction:
            continue
        for part in instruction[4:].split("&&"):
            words = shlex.split(part)
            if "install" in words and "apt-get" in words:
                packages += [w for w in words[words.index("install") + 1:] if not w.startswith("-") and "=" not in w]
    return packages


class Dpkg:
    """dpkg's database of installed packages, read once."""

    def __init__(self):
        fields = ["Package", "Status", "Depends", "Pre-Depends", "Provides", "Priority", "Essential"]
        out = subprocess.run(["dpkg-query", "-W", "-f", "\t".join("${" + f + "}" for f in fields) + "\n"],
                             capture_output=True, text=True, check=True).stdout
        self.packages, self.providers = {}, {}
        for line in out.splitlines():
            row = dict(zip(fields, line.split("\t")))
            if not row.get("Status", "").endswith("install ok installed"):
                continue
            self.packages[row["Package"]] = row
            for item in row["Provides"].split(","):
                name = re.sub(r"\(.*?\)", "", item).strip()
                if name:
                    self.providers.setdefault(name, []).append(row["Package"])

    def installed(self, package):
        return package in self.packages

    def dependencies(self, package):
        """Installed packages `package` depends on (Depends, Pre-Depends; the installed choice of
        an alternative `a | b`; a virtual package resolved to an installed package providing it)."""
        row = self.packages[package]
        found = []
        for clause in (row["Depends"] + "," + row["Pre-Depends"]).split(","):
            for alternative in clause.split("|"):
                name = re.sub(r"\(.*?\)", "", alternative).strip().split(":")[0]
                if name in self.packages:
                    found.append(name)
                    break
                if self.providers.get(name):
                    found.append(self.providers[name][0])
                    break
        return found

    def closure(self, packages):
        seen, todo = set(), list(packages)
        while todo:
            package = todo.pop()
            if package in seen or package not in self.packages:
                continue
            seen.add(package)
            todo += self.dependencies(package)
        return seen

    def base_image(self):
        return self.closure(p for p, row in self.packages.items()
                            if row["Priority"] == "required" or row["Essential"] == "yes")

    @staticmethod
    def owners(paths):
        """path -> the package that ships it, trying both sides of Debian 12's merged /usr."""
        variants = {}
        for path in paths:
            variants[path] = [path, path[len("/usr"):] if path.startswith("/usr/lib/") else "/usr" + path]
        asked = sorted({v for vs in variants.values() for v in vs})
        out = subprocess.run(["dpkg", "-S"] + asked, capture_output=True, text=True).stdout
        by_file = {}
        for line in out.splitlines():
            packages, _, file = line.partition(": ")
            by_file[file.strip()] = packages.split(",")[0].split(":")[0].strip()
        return {path: next((by_file[v] for v in vs if v in by_file), None) for path, vs in variants.items()}


def libraries(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        match = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
        if match and match.group(2) != "not":
            found.append((match.group(1), match.group(2)))
    return found


def check_runtime_stage(instructions, binaries, failures):
    dpkg = Dpkg()
    listed = runtime_packages(instructions)
    if not listed:
        failures.append("runtime stage: no apt-get install")
        return
    missing_on_machine = [p for p in listed if not dpkg.installed(p)]
    if missing_on_machine:
        failures.append(f"runtime stage: packages not installed here, so not checkable: {missing_on_machine}")
        return
    image = dpkg.closure(listed) | dpkg.base_image()
    for binary in binaries:
        libs = libraries(binary)
        owners = Dpkg.owners([p for _, path in libs for p in (path, os.path.realpath(path))])
        for soname, path in libs:
            packages = [p for p in (owners[path], owners[os.path.realpath(path)]) if p]
            if not packages:
                failures.append(f"{os.path.basename(binary)}: {soname} ({path}) belongs to no Debian package")
            elif not any(p in image for p in packages):
                failures.append(f"{os.path.basename(binary)}: {soname} comes from {packages[0]}, which the runtime "
                                f"stage does not install (add it to the apt-get install list)")
        print(f"ok: checked the {len(libs)} libraries of {os.path.basename(binary)} against {len(listed)} listed "
              f"packages and the base image")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    with open(os.path.join(args.repo, "deploy/Dockerfile")) as f:
        by_stage = stages(f.read())
    failures = []
    if "build" not in by_stage or "runtime" not in by_stage:
        failures.append(f"stages 'build' and 'runtime' expected, found {sorted(by_stage)}")
    else:
        check_build_stage(args.repo, by_stage["build"], failures)
        check_runtime_stage(by_stage["runtime"], args.binaries, failures)
    for failure in failures:
        print("FAIL: " + failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
