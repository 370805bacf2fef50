"""The parts of ``python -m lit_bench.cli.report`` (the command line and the public names stay in ``cli.report``).

``tables`` reads the run directories into the report's tables, ``markdown`` writes them as text, ``figures`` draws
them, ``pool`` draws and saves the figures in one process or several, ``write`` puts a report's files in one folder.
"""
