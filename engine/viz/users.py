"""Per-user views of a run: mean wait per user, readable at any number of users."""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.viz.style import PALETTE, plain, plain_all, time_scale

#: Up to this many users the per-user chart names each user (grouped bars); above, it ranks them (lines).
USER_BARS = 30


def user_wait_frame(job_frames: Mapping[str, pd.DataFrame], column: str = "wait_s") -> pd.DataFrame:
    """Mean ``column`` per user (over completed jobs) for each run: rows = users (those with a completed job in
    any run), columns = runs; users sorted by their mean over runs, largest first (ties by name)."""
    per = {name: f.dropna(subset=[column]).groupby("user")[column].mean() for name, f in job_frames.items()}
    table = pd.DataFrame(per)
    if table.empty:
        return table
    order = table.mean(axis=1).rename("m").to_frame().assign(u=table.index.astype(str))
    return table.loc[order.sort_values(["m", "u"], ascending=[False, True]).index]


def user_wait_figure(
    job_frames: Mapping[str, pd.DataFrame], fairness: Mapping[str, tuple[float, float]], column: str = "wait_s"
) -> go.Figure:
    """Mean wait per user for each run, readable at any number of users and when most waits are 0.

    Up to :data:`USER_BARS` users: grouped bars, one per user and run, users by mean wait (largest first). More:
    one line per run through its users ranked by their own mean wait, against the share of users (%), so
    hundreds of users read as a profile (how many wait, how long the worst-off wait). The legend gives each
    run's Gini and Jain index of per-user mean wait (``fairness``) and its share of users who never waited.
    """
    table = user_wait_frame(job_frames, column)
    top = float(np.nanmax(table.to_numpy())) if table.size and np.isfinite(table.to_numpy()).any() else 1.0
    unit, div = time_scale(top)
    fig = go.Figure()
    n_users = len(table)
    for i, name in enumerate(job_frames):
        gini, jain = fairness.get(name, (math.nan, math.nan))
        values = table[name].dropna() if name in table else pd.Series(dtype=float)
        zero = float((values <= 0).mean() * 100) if len(values) else math.nan
        label = f"{plain(name)} (Gini {gini:.2f}, Jain {jain:.2f}; {zero:.0f}% of users never waited)"
        colour = PALETTE[i % len(PALETTE)]
        if n_users <= USER_BARS:
            fig.add_trace(
                go.Bar(
                    x=plain_all(table.index),
                    y=table[name] / div if name in table else [],
                    name=label,
                    marker_color=colour,
                    hovertemplate=f"%{{x}}: mean wait %{{y:.3g}} {unit}<extra>{plain(name)}</extra>",
                )
            )
        else:
            ranked = values.sort_values(ascending=False)
            share = (np.arange(1, len(ranked) + 1) / max(len(ranked), 1)) * 100
            fig.add_trace(
                go.Scatter(
                    x=share,
                    y=ranked.to_numpy() / div,
                    name=label,
                    mode="lines",
                    line=dict(color=colour, shape="hv"),
                    text=plain_all(ranked.index),
                    hovertemplate=f"%{{text}}: mean wait %{{y:.3g}} {unit} (top %{{x:.0f}}% of "
                    f"users)<extra>{plain(name)}</extra>",
                )
            )
    many = n_users > USER_BARS
    fig.update_layout(
        barmode="group",
        title="wait per user",
        template="plotly_white",
        height=380,
        xaxis_title=(
            f"users ranked by mean wait, longest first (% of {n_users} users)"
            if many
            else "user (longest mean wait first)"
        ),
        yaxis_title=f"mean wait ({unit})",
        margin=dict(l=60, r=20, t=50, b=40),
        legend=dict(orientation="h", y=-0.3),
    )
    fig.update_yaxes(rangemode="tozero")
    return fig
