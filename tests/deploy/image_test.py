#!/usr/bin/env python3
"""Checks, without a Docker engine, that the images of deploy/docker/Dockerfile hold every shared
library their binaries load. For each binary of $PHALANX_BINARIES (paths separated by ';', set
by ctest), each library `ldd` resolves on this host (Debian 12, like the image) must belong, per
`dpkg -S`, to a package the runtime stage will have: one its `apt-get install` names, one of
debian:12-slim (approximated as this host's installed Priority: required packages plus apt), or one
they need per `apt-cache depends --recurse` (Depends and PreDepends, every alternative; a virtual
package stands for its providers installed on this host). This catches a library whose package the
runtime stage forgets, as happened with libcpp-httplib0.11. Also checks that the build stage copies
every file of the repository that scripts/setup reads before it runs it.
Run one class with `image_test.py ClassName` (ctest registers one test per class)."""

import functools
import os
import re
import shlex
import subprocess
import unittest
from pathlib import Path

from deploylib import phalanx_binaries

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE_NAME = "deploy/docker/Dockerfile"
DOCKERFILE = REPO / DOCKERFILE_NAME
RUNTIME_FROM = re.compile(r"FROM\s+debian:12-slim\s+AS\s+runtime", re.IGNORECASE)
PACKAGE_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]+")
SHELL_OPERATOR = re.compile(r"[;&|()<>]+")
DEPENDS_OPTIONS = ["--recurse", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks",
                   "--no-replaces", "--no-enhances"]


def run(*cmd):
    """The stdout of cmd; a non-zero exit raises CalledProcessError."""
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def instructions(dockerfile):
    """The Dockerfile's instructions, comment lines dropped and continuation lines joined."""
    lines = [line for line in dockerfile.read_text().splitlines()
             if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\[ \t]*\n", " ", "\n".join(lines))
    return [line.strip() for line in joined.splitlines() if line.strip()]


def shell_commands(script):
    """The simple commands of a shell script as word lists, split at operators such as && and ;."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    command = []
    for token in lexer:
        if SHELL_OPERATOR.fullmatch(token):
            yield command
            command = []
        else:
            command.append(token)
    yield command


def apt_get_installs(script):
    """The package names given to `apt-get install` in a shell script (options skipped)."""
    packages = []
    for words in shell_commands(script):
        if "apt-get" in words and "install" in words[words.index("apt-get"):]:
            args = words[words.index("install", words.index("apt-get")) + 1:]
            packages += [word for word in args if PACKAGE_NAME.fullmatch(word)]
    return packages


def runtime_stage_packages(dockerfile=DOCKERFILE):
    """The packages that the RUN instructions of the stage `FROM debian:12-slim AS runtime`
    install with apt-get."""
    in_stage, packages = False, []
    for line in instructions(dockerfile):
        keyword, _, rest = line.partition(" ")
        if keyword.upper() == "FROM":
            in_stage = bool(RUNTIME_FROM.fullmatch(line))
        elif keyword.upper() == "RUN" and in_stage:
            packages += apt_get_installs(rest)
    return packages


def installed_priorities():
    """Package name -> Priority of every package installed on this host."""
    out = run("dpkg-query", "-W", "-f", "${db:Status-Abbrev}\t${Package}\t${Priority}\n")
    rows = [line.split("\t") for line in out.splitlines()]
    return {name: priority for status, name, priority in rows if status.startswith("ii")}


def dependency_graph(roots, installed):
    """Package -> the packages it depends on, from `apt-cache depends --recurse` over roots; a
    virtual package maps to its providers installed on this host."""
    graph, package, virtual = {}, None, None
    for line in run("apt-cache", "depends", *DEPENDS_OPTIONS, *roots).splitlines():
        if not line.startswith(" "):
            package, virtual = line.strip("<>").split(":")[0], None
            graph.setdefault(package, set())
        elif line.startswith("    "):
            provider = line.strip().split(":")[0]
            if virtual and provider in installed:
                graph.setdefault(virtual, set()).add(provider)
        else:
            kind, _, target = line.strip(" |").partition(": ")
            name = target.strip("<>").split(":")[0]
            needed = kind in ("Depends", "PreDepends")
            virtual = name if needed and target.startswith("<") else None
            if needed:
                graph[package].add(name)
    return graph


def closure(roots, graph):
    """roots and every package reachable from them in graph."""
    seen, todo = set(), list(roots)
    while todo:
        package = todo.pop()
        if package not in seen:
            seen.add(package)
            todo += graph.get(package, ())
    return seen


def libraries(binary):
    """(soname, path) of each library ldd resolves for binary, path None when ldd finds none. The
    lines without "=>" (linux-vdso, which no file backs, and the dynamic loader) are skipped."""
    for line in run("ldd", binary).splitlines():
        soname, arrow, target = line.strip().partition(" => ")
        if not arrow:
            continue
        if target.startswith("not found"):
            yield soname, None
        elif not target.startswith("("):
            yield soname, target.rsplit(" (", 1)[0]


def path_forms(path):
    """The real path of path and path itself, each with and without the /usr prefix (merged /usr on
    Debian 12: dpkg knows a file only under the name its package ships it by)."""
    forms = []
    for form in (os.path.realpath(path), path):
        bare = form[len("/usr"):] if form.startswith("/usr/") else form
        forms += [form, bare, "/usr" + bare]
    return list(dict.fromkeys(forms))


@functools.cache
def owners(path):
    """The packages that own path per `dpkg -S`, tried under each of path_forms(path)."""
    for form in path_forms(path):
        try:
            out = run("dpkg", "-S", form)
        except subprocess.CalledProcessError:
            continue
        lines = [line for line in out.splitlines() if not line.startswith("diversion by ")]
        return {name.split(":")[0] for line in lines for name in line.split(": ")[0].split(", ")}
    return set()


SETUP_READS = re.compile(r'"\$\(dirname "\$0"\)/\.\./([^"]+)"')


def copied_before_setup(dockerfile=DOCKERFILE):
    """The sources of the COPY instructions of the first stage before its RUN of scripts/setup;
    None when that stage has no such RUN."""
    copied = []
    for line in instructions(dockerfile):
        keyword, _, rest = line.partition(" ")
        if keyword.upper() == "COPY":
            copied += rest.split()[:-1]
        elif keyword.upper() == "RUN" and "scripts/setup" in rest:
            return copied
    return None


class BuildStage(unittest.TestCase):
    def test_setup_runs_with_every_file_it_reads(self):
        copied = copied_before_setup()
        self.assertIsNotNone(copied, f"{DOCKERFILE_NAME}: no RUN of scripts/setup, which this "
                                     "test reads")
        reads = SETUP_READS.findall((REPO / "scripts/setup").read_text())
        self.assertTrue(reads, "scripts/setup reads no file of the repository: nothing was checked")
        for path in reads:
            self.assertTrue((REPO / path).is_file(), f"scripts/setup reads {path}, which is gone")
            self.assertTrue(any(path == src or path.startswith(src.rstrip("/") + "/")
                                for src in copied),
                            f"scripts/setup reads {path}, which {DOCKERFILE_NAME} does not COPY "
                            "before it runs scripts/setup: the image build would fail there")


class RuntimeLibraries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stage_packages = runtime_stage_packages()
        if not cls.stage_packages:
            raise AssertionError(f"{DOCKERFILE_NAME}: no apt-get install in a stage "
                                 "`FROM debian:12-slim AS runtime`, which this test reads")
        installed = installed_priorities()
        base = [name for name, priority in installed.items() if priority == "required"] + ["apt"]
        cls.graph = dependency_graph(cls.stage_packages + base, installed)
        cls.image_packages = closure(cls.stage_packages + base, cls.graph)

    def test_runtime_stage_names_only_known_packages(self):
        unknown = [name for name in self.stage_packages if name not in self.graph]
        self.assertEqual(unknown, [], f"apt does not know these packages of the runtime stage of "
                                      f"{DOCKERFILE_NAME}, so apt-get install would fail")

    def test_every_library_comes_from_an_image_package(self):
        for binary in phalanx_binaries().values():
            with self.subTest(binary):
                found = list(libraries(binary))
                self.assertTrue(found, f"ldd listed no library of {binary}: nothing was checked")
                problems = [self.problem(binary, *library) for library in found]
                problems = [problem for problem in problems if problem]
                if problems:
                    self.fail("\n" + "\n".join(problems))

    def problem(self, binary, soname, path):
        """Why the image cannot give binary its library soname at path, or None when it can."""
        if path is None:
            return f"{binary}: ldd finds no {soname} on this host (not found)"
        packages = owners(path)
        if not packages:
            return (f"{binary}: {soname} ({path}) belongs to no Debian package (dpkg -S), so the "
                    f"image cannot install it: link it statically or package it")
        if packages & self.image_packages:
            return None
        names = " or ".join(sorted(packages))
        return (f"{binary}: {soname} ({path}) comes from package {names}, which the image lacks: "
                f"add {names} to the runtime stage of {DOCKERFILE_NAME}")


if __name__ == "__main__":
    unittest.main()
