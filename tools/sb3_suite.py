"""Run SB3's or sb3-contrib's own test suite, as written, with their algorithm classes pointed at lit_sb3's.

    python tools/sb3_suite.py sb3                 # stable-baselines3's tests/ (every file)
    python tools/sb3_suite.py contrib             # sb3-contrib's tests/
    python tools/sb3_suite.py sb3 -f test_cnn.py  # some files only (names under tests/); -k ... goes to pytest
    python tools/sb3_suite.py sb3 --as-is         # the same run on SB3's own classes, for comparison
    python tools/sb3_suite.py sb3 -x              # other arguments go to pytest

The suite comes from the PyPI sdist of the installed version (``pip download --no-binary :all:``, kept in
``--cache``). pytest runs it in the sdist's folder with its own settings; this file is also the pytest plugin
(``-p sb3_suite``) that replaces ``stable_baselines3.<Algo>`` and ``sb3_contrib.<Algo>`` by lit_sb3's classes before
any test module is imported (every test imports its algorithms from the package's top level). Everything else stays
SB3's. The script prints the pass / fail / skip counts, the pass rate (passed / (passed + failed)) and each failing
test id with the first line of its error.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ElementTree
from importlib import metadata
from pathlib import Path

SUITES = {"sb3": "stable-baselines3", "contrib": "sb3-contrib"}
PLUGIN = Path(__file__).stem


def point_at_lit_sb3() -> list[str]:
    """Replace the algorithm classes SB3 and sb3-contrib export by lit_sb3's of the same names; return the names."""
    import sb3_contrib
    import stable_baselines3

    import lit_sb3

    replaced = []
    for package in (stable_baselines3, sb3_contrib):
        for name in lit_sb3._ALGORITHMS:
            if hasattr(package, name):
                setattr(package, name, getattr(lit_sb3, name))
                replaced.append(f"{package.__name__}.{name}")
    return replaced


def pytest_configure(config: object) -> None:
    """pytest hook: runs before collection, so ``from stable_baselines3 import PPO`` in a test gets lit_sb3's."""
    if os.environ.get("SB3_SUITE_AS_IS") != "1":
        point_at_lit_sb3()


def pytest_report_header(config: object) -> str:
    mode = "SB3's own classes" if os.environ.get("SB3_SUITE_AS_IS") == "1" else "algorithms from lit_sb3"
    return f"sb3_suite: {mode}"


def fetch(distribution: str, cache: Path) -> Path:
    """The sdist of the installed version of ``distribution``, unpacked under ``cache``; its root folder."""
    version = metadata.version(distribution)
    stem = f"{distribution.replace('-', '_')}-{version}"
    root = cache / stem
    if (root / "tests").is_dir():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / f"{stem}.tar.gz"
    if not archive.exists():
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*command, f"{distribution}=={version}", "-d", str(cache)], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    return root


def summarize(junit: Path) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Counts by outcome and the failing tests (id, first line of the error) from pytest's JUnit XML."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            counts["failed"] += 1
            failures.append((test_id, (problem.get("message") or "").strip().splitlines()[0][:200]))
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", choices=sorted(SUITES), help="sb3 (stable-baselines3) or contrib (sb3-contrib)")
    parser.add_argument("-f", "--files", nargs="+", default=[], help="test files under tests/ (default: all)")
    parser.add_argument("--as-is", action="store_true", help="run on SB3's own classes (nothing replaced)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "lit_sb3_sb3_suite")
    parser.add_argument("--junit", type=Path, help="where pytest's JUnit XML goes (default: in --cache)")
    args, pytest_args = parser.parse_known_args(argv)  # the rest goes to pytest (-x, -m "not slow", ...)

    root = fetch(SUITES[args.suite], args.cache.resolve())
    junit = (args.junit or args.cache / f"{args.suite}{'-as-is' if args.as_is else ''}.xml").resolve()
    here = str(Path(__file__).resolve().parent)  # where pytest finds this file as the plugin
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    env["SB3_SUITE_AS_IS"] = "1" if args.as_is else "0"
    targets = [f"tests/{name}" for name in args.files] or ["tests"]
    # -P: the installed packages, not the sdist's copies in the working folder
    command = [sys.executable, "-P", "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider", f"--junitxml={junit}"]
    subprocess.run([*command, *pytest_args, *targets], cwd=root, env=env)
    if not junit.exists():
        print(f"pytest wrote no report ({junit})", file=sys.stderr)
        return 1

    counts, failures = summarize(junit)
    ran = counts["passed"] + counts["failed"]
    rate = 100 * counts["passed"] / ran if ran else 0.0
    print(f"\n{SUITES[args.suite]} {metadata.version(SUITES[args.suite])} ({'as is' if args.as_is else 'lit_sb3'}):")
    print(f"  passed {counts['passed']}, failed {counts['failed']}, skipped {counts['skipped']}: {rate:.1f}% pass")
    for test_id, message in failures:
        print(f"  FAILED {test_id}: {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
