"""Live training curves of an agent: TensorBoard scalars read back and drawn."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.viz.style import PALETTE

#: TensorBoard tags of a MaskablePPO run worth plotting live, with their labels.
TRAINING_TAGS = {
    "rollout/ep_rew_mean": "training episode return (mean)",
    "eval/mean_reward": "evaluation return (mean, deterministic policy)",
    "rollout/ep_len_mean": "episode length (decisions)",
}


def training_curves(log_dir) -> pd.DataFrame:
    """Scalars logged so far under ``log_dir`` (TensorBoard event files, searched recursively) for the tags in
    :data:`TRAINING_TAGS`: columns ``tag, step, value``, sorted by tag and step. Empty when nothing is logged
    yet. Reads files that are still being written (a live run)."""
    from pathlib import Path

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    rows: list[tuple] = []
    for events in sorted(Path(log_dir).rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events.parent), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in TRAINING_TAGS:
            if tag in acc.Tags().get("scalars", ()):
                rows.extend((tag, int(e.step), float(e.value)) for e in acc.Scalars(tag))
    frame = pd.DataFrame(rows, columns=["tag", "step", "value"])
    return frame.drop_duplicates(["tag", "step"], keep="last").sort_values(["tag", "step"], ignore_index=True)


def training_figure(curves: pd.DataFrame) -> go.Figure:
    """Returns (training and evaluation) against environment steps, and episode length."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("return", "episode length"))
    for i, tag in enumerate(TRAINING_TAGS):
        part = curves[curves["tag"] == tag]
        col = 2 if tag.endswith("ep_len_mean") else 1
        fig.add_trace(
            go.Scatter(
                x=part["step"],
                y=part["value"],
                mode="lines+markers",
                name=TRAINING_TAGS[tag],
                line=dict(color=PALETTE[i]),
            ),
            row=1,
            col=col,
        )
    fig.update_xaxes(title_text="environment steps (count)")
    fig.update_yaxes(title_text="return (reward units)", row=1, col=1)
    fig.update_yaxes(title_text="length (decisions)", row=1, col=2)
    fig.update_layout(
        template="plotly_white", height=340, margin=dict(l=60, r=20, t=40, b=40), legend=dict(orientation="h", y=-0.3)
    )
    return fig
