"""Both backends plot every metric against the env step: TensorBoard's step and W&B's defined x-axis
(``ENV_STEP_AXIS``), so that lit and sb3 runs overlay (needs the loggers extra; W&B runs offline)."""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

import pytest

from lit_bench.run.loggers import ENV_STEP_AXIS
from tests.lit_bench.helpers import TINY, compose_run, read_csv

pytestmark = [
    pytest.mark.harness,
    pytest.mark.skipif(
        importlib.util.find_spec("wandb") is None or importlib.util.find_spec("tensorboard") is None,
        reason="needs the loggers extra",
    ),
]

_BLOCK, _HEADER = 32768, 7  # the .wandb file: LevelDB's log format (32 KiB blocks; records: crc, length, type)


def wandb_records(path: Path) -> list:
    """The protobuf records of an offline W&B run file."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, offset = [], b"", _HEADER
    while offset + _HEADER <= len(data):
        if _BLOCK - offset % _BLOCK < _HEADER:  # a block's tail too short for a header is padding
            offset += _BLOCK - offset % _BLOCK
            continue
        _, length, kind = struct.unpack("<IHB", data[offset : offset + _HEADER])
        if kind == 0:
            break
        pending += data[offset + _HEADER : offset + _HEADER + length]
        offset += _HEADER + length
        if kind in (1, 4):  # a full record, or the last part of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def _wandb_log(run_dir: Path) -> tuple[list[dict], dict[str, str]]:
    """(history rows, glob or name -> step metric) of the run's W&B file."""
    [path] = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    rows, axes = [], {}
    for record in wandb_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            items = record.history.item
            rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in items})
        elif kind == "metric" and record.metric.step_metric:
            axes[record.metric.glob_name or record.metric.name] = record.metric.step_metric
    return rows, axes


@pytest.mark.parametrize("backend", ["lit", "sb3"])
def test_tensorboard_and_wandb_plot_against_env_steps(backend: str, tmp_path: Path, monkeypatch) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from lit_bench.run.train import run

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    summary = run(compose_run(*TINY, f"backend={backend}", "logger=[tensorboard,wandb]", f"out_dir={tmp_path}"))
    assert summary["status"] == "completed", summary.get("error")
    run_dir = Path(summary["run_dir"])
    dumps = {int(r["step"]): r for r in read_csv(run_dir / "train" / "metrics.csv")}
    evals = {int(r["timesteps"]): float(r["mean_return"]) for r in read_csv(run_dir / "eval.csv")}

    [events] = (run_dir / "train" / "tb").glob("events.*")
    board = EventAccumulator(str(events))
    board.Reload()
    assert {e.step for e in board.Scalars("rollout/ep_rew_mean")} == {
        s for s, r in dumps.items() if r.get("rollout/ep_rew_mean")
    }
    assert {e.step: e.value for e in board.Scalars("eval/mean_reward")} == pytest.approx(evals)

    rows, axes = _wandb_log(run_dir)
    assert axes.get("*") == ENV_STEP_AXIS  # one x-axis for every metric, in both backends
    logged = [r for r in rows if "rollout/ep_rew_mean" in r]
    assert logged and all(ENV_STEP_AXIS in r for r in rows if any("/" in k and k != ENV_STEP_AXIS for k in r))
    assert {r[ENV_STEP_AXIS] for r in logged} == {s for s, r in dumps.items() if r.get("rollout/ep_rew_mean")}
    assert {r[ENV_STEP_AXIS]: r["eval/mean_reward"] for r in rows if "eval/mean_reward" in r} == pytest.approx(evals)
