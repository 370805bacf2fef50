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
rl-trained-agents) hold pickled code: trust them with ``LIT_SB3_TRUST=1``. And the Zoo's YAML files of a log folder
(``config.yml``, ``args.yml``), which the Zoo reads with ``yaml.UnsafeLoader``, are read with :class:`ZooLoader` in
its place: plain YAML plus exactly what the Zoo writes there (``!!python/object/apply:collections.OrderedDict``,
``!!python/tuple``, and ``!!python/name:`` of an object on lit_sb3's allow-list, such as an activation class given with
``--hyperparams``); any other ``!!python/`` tag is refused in one line unless ``LIT_SB3_TRUST=1``. The
``vecnormalize.pkl`` the Zoo's ``enjoy`` / ``record_video`` load is unpickled through lit_sb3's allow-list as well.
Everything else is the Zoo's code, run unchanged.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

import yaml
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

import lit_sb3
from lit_sb3 import safe_load

_PYTHON_TAG = "tag:yaml.org,2002:python/"
#: the Python tags the Zoo's own ``yaml.dump`` of its hyperparameters and arguments writes
ZOO_TAGS = (f"{_PYTHON_TAG}object/apply:collections.OrderedDict", f"{_PYTHON_TAG}tuple")
_NAME_TAG = f"{_PYTHON_TAG}name:"


class ZooLoader(yaml.UnsafeLoader):
    """``yaml.UnsafeLoader`` for the Zoo's files, minus the code: a ``!!python/`` tag other than :data:`ZOO_TAGS` (or
    a ``!!python/name:`` of an allow-listed object, taken from the list, never imported) raises a ``ConstructorError``
    naming the tag, unless files are trusted (``LIT_SB3_TRUST=1`` / ``lit_sb3.safe_load.trusted()``)."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        tag = str(node.tag)
        if tag.startswith(_PYTHON_TAG) and tag not in ZOO_TAGS and not safe_load.is_trusted():
            listed = safe_load.allowed_name(tag[len(_NAME_TAG) :]) if tag.startswith(_NAME_TAG) else None
            if listed is None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"{tag.removeprefix('tag:yaml.org,2002:')} is not a tag the RL Zoo writes (loading it would run "
                    f"code); trust this log folder with LIT_SB3_TRUST=1",
                    node.start_mark,
                )
            return listed
        return super().construct_object(node, deep)


#: the Zoo's scripts: name on the command line -> module run as ``__main__``
SCRIPTS = {
    "train": "rl_zoo3.train",
    "enjoy": "rl_zoo3.enjoy",
    "record_video": "rl_zoo3.record_video",
    "plot_train": "rl_zoo3.plots.plot_train",
    "plot_from_file": "rl_zoo3.plots.plot_from_file",
    "all_plots": "rl_zoo3.plots.all_plots",
}


class ZooVecNormalize(VecNormalize):
    """The name the Zoo's ``create_test_env`` (``enjoy``, ``record_video``) loads a log folder's VecNormalize
    statistics with: :meth:`load` unpickles through lit_sb3's allow-list unless files are trusted."""

    @staticmethod
    def load(load_path: str, venv: VecEnv) -> VecNormalize:
        if safe_load.is_trusted():
            return VecNormalize.load(load_path, venv)
        saved = safe_load.loads(Path(load_path).read_bytes(), f"vecnormalize: {load_path}", "SB3's VecNormalize.load")
        if not isinstance(saved, VecNormalize):
            raise safe_load.Refused(f"vecnormalize: {load_path} holds a {type(saved).__name__}, not VecNormalize")
        saved.set_venv(venv)
        return saved


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
    # the name the Zoo's scripts read their log folder's YAML with (looked up at each call)
    yaml.UnsafeLoader = ZooLoader  # type: ignore[misc]
    zoo.utils.VecNormalize = ZooVecNormalize  # (create_test_env only loads with it)
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
    try:
        runpy.run_module(SCRIPTS[script], run_name="__main__", alter_sys=True)
    except yaml.constructor.ConstructorError as error:  # a log folder's file naming code: one line
        mark = error.problem_mark
        where = f"{mark.name}, line {mark.line + 1}" if mark is not None else "a YAML file"
        sys.exit(f"lit_sb3.zoo: {where}: {error.problem}")
    except safe_load.Refused as error:  # a pickle naming code
        sys.exit(f"lit_sb3.zoo: {error}")


if __name__ == "__main__":
    main()
