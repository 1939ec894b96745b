"""Mean wait per user, at few and at hundreds of users."""

import numpy as np
import pandas as pd

from engine.analysis.metrics import job_frame
from engine.viz import users


def test_user_wait_figure_names_few_users_and_ranks_hundreds_even_when_most_waits_are_zero():
    few = {
        "fifo": pd.DataFrame({"user": ["a", "a", "b", "c"], "wait_s": [0.0, 600.0, 0.0, np.nan]}),
        "sjf": pd.DataFrame({"user": ["a", "a", "b", "c"], "wait_s": [0.0, 0.0, 0.0, 120.0]}),
    }
    fig = users.user_wait_figure(few, {"fifo": (0.25, 0.8)})
    assert [t.type for t in fig.data] == ["bar", "bar"] and list(fig.data[0].x) == ["a", "c", "b"]
    assert list(fig.data[0].y[:1]) == [5.0] and fig.layout.yaxis.title.text == "mean wait (min)"
    assert fig.data[0].name == "fifo (Gini 0.25, Jain 0.80; 50% of users never waited)" and "nan" in fig.data[1].name
    # 400 users, 90 % of whom never wait: one ranked line per run, every user on it, zeros included.
    rng = np.random.default_rng(0)
    waits = np.where(np.arange(400) % 10 == 0, rng.uniform(3600, 7200, 400), 0.0)
    many = {"fifo": pd.DataFrame({"user": [f"u{i}" for i in range(400)], "wait_s": waits})}
    fig = users.user_wait_figure(many, {})
    (line,) = fig.data
    assert line.type == "scatter" and len(line.y) == 400 and list(line.y).count(0.0) == 360
    assert list(line.y) == sorted(line.y, reverse=True) and line.x[-1] == 100
    assert "90% of users never waited" in line.name and "400 users" in fig.layout.xaxis.title.text


def test_user_wait_figure_names_each_run_with_its_fairness(runs):
    frames = {name: job_frame(r) for name, r in runs.items()}
    fig = users.user_wait_figure(frames, {"fifo": (0.25, 0.8)})
    assert fig.data[0].name.startswith("fifo (Gini 0.25, Jain 0.80;") and "nan" in fig.data[1].name
