"""Every ```python block of README.md and of the docs pages (docs/**/*.md) runs as written, each in a fresh namespace
and its own working directory.

One mechanism keeps them fast, documented in docs/testing.md ("The docs' code runs"): every env-step budget written as
an integer literal -- the first argument of ``.learn(...)`` and the keywords ``total_timesteps=``, ``max_steps=`` and
``budget=`` -- is divided by ``BUDGET_DIVISOR`` (at least 1) before the block runs. A block opts out with the comment
``<!-- docs-test: skip (reason) -->`` on the line just above its opening fence (a block that needs a GPU, a cluster
or files of the reader's own); it is then reported as skipped with that reason.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
# The README and every page of the docs site (generated reference pages hold no Python blocks; the build is skipped)
PAGES = [README, *sorted(p for p in (REPO / "docs").rglob("*.md") if "_build" not in p.relative_to(REPO).parts)]
BUDGET_DIVISOR = 250
BUDGET_KEYWORDS = ("total_timesteps", "max_steps", "budget")
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*(?:\((?P<reason>.*)\))?\s*-->")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>\{[\w-]+\}|[\w+-]*)(?:\s+\S.*)?$")  # and MyST's ```{figure} x.png


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    code: str
    skip: str | None  # the opt-out reason (None: runs)


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, with the opt-out comment of each."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), len(lines))
        if fence["lang"] == "python":
            indent = len(fence["indent"])
            code = "\n".join(line[indent:] for line in lines[i + 1 : end])
            above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            opt_out = SKIP.search(above)
            blocks.append(Block(i + 1, code, (opt_out["reason"] or "opted out") if opt_out else None))
        i = end + 1
    return blocks


class _SmallBudgets(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "learn" and node.args:
            node.args[0] = _divided(node.args[0])
        for keyword in node.keywords:
            if keyword.arg in BUDGET_KEYWORDS:
                keyword.value = _divided(keyword.value)
        return node


def _divided(value: ast.expr) -> ast.expr:
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return ast.copy_location(ast.Constant(max(1, value.value // BUDGET_DIVISOR)), value)
    return value


def small_budgets(code: str) -> ast.Module:
    return ast.fix_missing_locations(_SmallBudgets().visit(ast.parse(code)))


def _name(page: Path) -> str:
    return page.relative_to(REPO).as_posix()


BLOCKS = {page: python_blocks(page.read_text()) for page in PAGES}
ALL = [(page, block) for page, blocks in BLOCKS.items() for block in blocks]


def test_the_readme_has_python_blocks_and_the_runner_finds_opt_outs():
    assert len(BLOCKS[README]) >= 2 and len(PAGES) > 10
    sample = "text\n<!-- docs-test: skip (needs a GPU) -->\n```python\nx = 1\n```\n\n```python\ny = 2\n```\n"
    assert python_blocks(sample) == [Block(3, "x = 1", "needs a GPU"), Block(7, "y = 2", None)]
    myst = "```{figure} a.png\ncaption\n```\n\n```python\nz = 3\n```\n"  # a directive's fence is not a block
    assert python_blocks(myst) == [Block(5, "z = 3", None)]
    tree = small_budgets("m.learn(50_000, env=e)\nRLTrainer(max_steps=100_000)\nm.learn(n)\nf(total_timesteps=10)")
    assert ast.unparse(tree) == "m.learn(200, env=e)\nRLTrainer(max_steps=400)\nm.learn(n)\nf(total_timesteps=1)"


@pytest.mark.parametrize(("page", "block"), ALL, ids=[f"{_name(p)}:{b.line}" for p, b in ALL])
def test_readme_python_block_runs(page: Path, block: Block, tmp_path: Path) -> None:
    if block.skip:
        pytest.skip(block.skip)
    code = compile(small_budgets(block.code), f"{_name(page)}:{block.line}", "exec")
    exec(code, {"__name__": "__readme__"})  # the working directory is tmp_path (conftest)


def test_the_lightning_snippet_resumes_into_a_trainer_that_saves(tmp_path: Path) -> None:
    """The Lightning-style block's resume (docs/guides/lit_sb3.md): its final ``load_from_checkpoint`` returns the
    resumed model (at the longer budget), with no ModelCheckpoint warning and no stray ``lightning_logs/``."""
    import warnings

    [block] = [b for p, b in ALL if "load_from_checkpoint" in b.code and "ckpt_path=" in b.code]
    namespace: dict[str, object] = {"__name__": "__readme__"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(small_budgets(block.code), f"lit_sb3.md:{block.line}", "exec"), namespace)
    trainer, model = namespace["trainer"], namespace["model"]
    assert model.num_timesteps == trainer.rl_num_timesteps >= 200_000 // BUDGET_DIVISOR  # type: ignore[attr-defined]
    assert not [w for w in caught if "ModelCheckpoint" in str(w.message)], [str(w.message) for w in caught]
    assert not (tmp_path / "lightning_logs").exists()
