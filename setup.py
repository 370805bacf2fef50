"""The wheel carries the harness's configs and reference data inside ``lit_bench`` (``lit_bench.config.resources``).

The repository keeps them at its top, where they are edited (``conf/``, ``results/reference/``,
``results/baselines/``); this build step copies them into the built package. Everything else is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# the repository's folder -> its place inside the built package (lit_bench.config.resources.SHIPPED, read the other way)
SHIPPED = {
    "conf": "lit_bench/conf",
    "results/reference": "lit_bench/data/reference",
    "results/baselines": "lit_bench/data/baselines",
}


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads them from the clone
            return
        for source, target in SHIPPED.items():
            for path in sorted(Path(source).rglob("*")):
                if path.is_file() and path.suffix in (".yaml", ".csv", ".md"):
                    destination = Path(self.build_lib) / target / path.relative_to(source)
                    self.mkpath(str(destination.parent))
                    self.copy_file(str(path), str(destination))


setup(cmdclass={"build_py": BuildWithData})
