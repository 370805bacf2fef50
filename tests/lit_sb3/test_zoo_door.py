"""``python -m lit_sb3.zoo`` without the ``zoo`` extra: one line naming the extra, never a traceback (the Zoo's own
scripts are tested with the extra in tests/zoo, marker zoo)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lit_sb3 import zoo


@pytest.mark.parametrize("argv", [[], ["train", "--algo", "ppo", "--env", "CartPole-v1"]])
def test_the_zoo_command_without_the_extra_names_it_in_one_line(argv, monkeypatch):
    monkeypatch.setitem(sys.modules, "rl_zoo3", None)  # as if not installed (an import of it raises ImportError)
    with pytest.raises(SystemExit) as stopped:
        zoo.main(argv)
    message = str(stopped.value.code)
    assert "\n" not in message and "pip install 'lit-sb3[zoo]'" in message


def test_the_module_run_without_the_extra_prints_no_traceback():
    try:
        import rl_zoo3  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("the zoo extra is installed here")
    done = subprocess.run([sys.executable, "-m", "lit_sb3.zoo", "train"], capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "lit_sb3.zoo: the RL Zoo is not installed (No module named 'rl_zoo3'); pip install 'lit-sb3[zoo]'"
    ]
