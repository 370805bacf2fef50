"""The RL Zoo (``rl_zoo3``) on lit_sb3's classes, without touching the Zoo's files.

From a shell, ``python -m lit_sb3.zoo`` runs the Zoo's own scripts with lit_sb3's algorithms::

    python -m lit_sb3.zoo train --algo sac --env Pendulum-v1 -n 5000
    python -m lit_sb3.zoo enjoy --algo sac --env Pendulum-v1 -f logs --load-best
    python -m lit_sb3.zoo record_video --algo sac --env Pendulum-v1 -f logs -n 200
    python -m lit_sb3.zoo plot_train --algo sac --env Pendulum-v1 -f logs

(every argument after the script's name is the Zoo's). From Python, :func:`use_lit_sb3` points the Zoo at lit_sb3
before its functions run::

    import lit_sb3.zoo
    lit_sb3.zoo.use_lit_sb3()
    from rl_zoo3.train import train

What it changes, in this process only: the entries of the Zoo's algorithm table ``rl_zoo3.utils.ALGOS`` become
lit_sb3's classes of the same names; the Zoo's ``ParallelTrainCallback``, which accepts SB3's SAC and TQC by
class, accepts lit_sb3's; and the Zoo's schedule class (``rl_zoo3.utils.SimpleLinearSchedule``, a plain value
holder its ``lin_...`` hyperparameters become) joins lit_sb3's loading allow-list (:func:`lit_sb3.safe_load.allow`),
so that the Zoo's ``enjoy`` and ``-i`` load the zips lit_sb3 wrote for it. Zips SB3 itself wrote (the Zoo's
rl-trained-agents) hold pickled code: trust them with ``LIT_SB3_TRUST=1``. Everything else is the Zoo's code, run
unchanged.
"""

from __future__ import annotations

import runpy
import sys
from typing import Any

import lit_sb3
from lit_sb3 import safe_load

#: the Zoo's scripts: name on the command line -> module run as ``__main__``
SCRIPTS = {
    "train": "rl_zoo3.train",
    "enjoy": "rl_zoo3.enjoy",
    "record_video": "rl_zoo3.record_video",
    "plot_train": "rl_zoo3.plots.plot_train",
    "plot_from_file": "rl_zoo3.plots.plot_from_file",
    "all_plots": "rl_zoo3.plots.all_plots",
}


def _import_zoo() -> Any:
    try:
        import rl_zoo3.callbacks
        import rl_zoo3.utils
    except ImportError as error:
        raise ImportError(f"lit_sb3.zoo: the RL Zoo is not installed ({error}); pip install 'lit-sb3[zoo]'") from None
    return rl_zoo3


def use_lit_sb3() -> dict[str, type]:
    """Point the Zoo's ``ALGOS`` (and its parallel-training callback) at lit_sb3's classes; returns the new table.

    Idempotent. Algorithms the Zoo lists that lit_sb3 does not have (none today) stay SB3's.
    """
    zoo = _import_zoo()
    algos = zoo.utils.ALGOS
    for key, cls in list(algos.items()):
        algos[key] = getattr(lit_sb3, cls.__name__, cls)
    zoo.callbacks.SAC, zoo.callbacks.TQC = lit_sb3.SAC, lit_sb3.TQC  # ParallelTrainCallback's isinstance checks
    safe_load.allow(zoo.utils.SimpleLinearSchedule)
    return dict(algos)


def main(argv: list[str] | None = None) -> None:
    """``python -m lit_sb3.zoo SCRIPT [the Zoo's arguments]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        _import_zoo()
    except ImportError as error:  # the zoo extra is missing: one line naming it, not a traceback
        sys.exit(str(error))
    if not argv or argv[0] not in SCRIPTS:
        given = repr(argv[0]) if argv else "nothing"
        sys.exit(f"lit_sb3.zoo: script must be one of {', '.join(SCRIPTS)}, got {given}")
    use_lit_sb3()
    script, *rest = argv
    sys.argv = [f"lit_sb3.zoo {script}", *rest]
    runpy.run_module(SCRIPTS[script], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
