"""Tables for people: the best value is chosen on the values as shown, and utilisation is never crowned alone."""

from __future__ import annotations

import pandas as pd

from engine.viz.tables import best_shown, failures_table, metrics_table, plan_table, sweep_table, user_energy_table


def table() -> pd.DataFrame:
    # Four schedulers whose Jain index all shows as 0.539, one a hair above the others; waits that differ.
    return pd.DataFrame(
        {
            "a": [0.5391, 600.0, 0.90, 10.0],
            "b": [0.5392, 600.4, 0.95, 12.0],
            "c": [0.5389, 1200.0, 0.99, 12.0],
            "d": [0.5390, 900.0, 0.80, float("nan")],
        },
        index=["jain_user_wait", "mean_wait_s", "utilization", "completed"],
    )


def test_values_that_look_the_same_are_tied():
    t = table()
    shown = metrics_table(t, list(t.index))
    assert set(shown.iloc[0, 1:]) == {"0.539"} and list(shown.iloc[1, 1:3]) == ["10 min", "10 min"]
    best = best_shown(t, list(t.index))
    assert "jain_user_wait" not in best  # all four show 0.539: nothing to choose
    assert best["mean_wait_s"] == ("a", "b")  # 600 s and 600.4 s both show as 10 min
    assert best["completed"] == ("b", "c")


def test_utilisation_is_not_crowned_on_its_own():
    t = table()
    assert "utilization" not in best_shown(t, list(t.index))
    names = list(metrics_table(t, list(t.index))["metric"])
    assert names[2] == "GPU utilisation" and names[1] == "Mean wait ↓"


def test_sweep_and_plan_tables_have_full_names_and_no_none():
    frame = pd.DataFrame(
        [
            {
                "cluster": '{"groups": [{"nodes": 2, "gpus_per_node": 4, "gpu_type": "T4", "rack": "r"}]}',
                "load": 0.5,
                "seed": 0,
                "scheduler": "fifo",
                "jobs": 10,
                "p95_wait_s": 7200.0,
                "utilization": float("nan"),
            }
        ]
    )
    shown = sweep_table(frame, "offered load")
    assert list(shown.columns) == [
        "cluster",
        "offered load",
        "seed",
        "scheduler",
        "Jobs",
        "p95 wait ↓",
        "GPU utilisation ↑",
    ]
    assert shown.iloc[0].tolist() == ["2x4:T4 on 1 rack", 0.5, 0, "fifo", "10", "2 h", "–"]
    answer = pd.DataFrame(
        [
            {
                "scheduler": "fifo",
                "nodes": 3,
                "gpus": 12,
                "metric": "p95_wait_s",
                "value_at_nodes": 1500.0,
                "value_at_nodes_minus_1": 4000.0,
                "error": None,
            },
            {
                "scheduler": "sjf",
                "nodes": None,
                "gpus": None,
                "metric": "p95_wait_s",
                "value_at_nodes": float("nan"),
                "value_at_nodes_minus_1": float("nan"),
                "error": "9 nodes: too big",
            },
        ]
    ).astype({"nodes": "Int64", "gpus": "Int64"})
    rows = plan_table(answer).to_dict("records")
    assert rows[0] == {
        "scheduler": "fifo",
        "fewest nodes": "3",
        "GPUs": "12",
        "metric": "p95 wait",
        "value there": "25 min",
        "with one node fewer": "66.7 min",
        "problem": "–",
    }
    assert rows[1]["fewest nodes"] == "not met" and rows[1]["problem"] == "9 nodes: too big"
    assert "None" not in str(rows)


def test_failed_cells_name_their_cluster_shortly():
    racks = '{"groups": [{"nodes": 1, "gpus_per_node": 8, "gpu_type": "A100-80", "rack": "a"}]}'
    shown = failures_table(
        [{"cluster": racks, "load": 0.5, "seed": 1, "scheduler": "rl:x", "error": "no model"}], "load scale"
    )
    assert list(shown.columns) == ["cluster", "load scale", "seed", "scheduler", "what went wrong"]
    assert shown.iloc[0].tolist() == ["1x8:A100-80 on 1 rack", 0.5, 1, "rl:x", "no model"]


def test_user_energy_table_sums_each_users_jobs_per_scheduler():
    jobs = pd.DataFrame(
        {
            "user": ["b", "a", "b"],
            "status": ["completed", "completed", "failed"],
            "energy_kwh": [1.0, 2.0, 0.5],
            "cost_usd": [1.0, 0.25, 2.0],
            "co2_kg": [0.1, 0.2, 0.3],
            "useful_gpu_s": [1800.0, 3600.0, 0.0],
        }
    )
    table = user_energy_table({"fifo": jobs, "sjf": jobs.assign(cost_usd=0.0)})
    assert list(table.columns) == [
        "user",
        "scheduler",
        "jobs",
        "Energy",
        "Cost of GPUs held",
        "Carbon",
        "Energy per completed job",
        "Cost per completed job",
        "Energy per useful GPU-hour",
        "Cost per useful GPU-hour",
    ]
    # b: 1.5 kWh and $3 over one completed job and half a useful GPU-hour (the failed job's run is paid for)
    assert table.values.tolist() == [
        ["a", "fifo", 1, "2 kWh", "$0.25", "0.2 kg CO2", "2 kWh", "$0.25", "2 kWh", "$0.25"],
        ["a", "sjf", 1, "2 kWh", "$0.00", "0.2 kg CO2", "2 kWh", "$0.00", "2 kWh", "$0.00"],
        ["b", "fifo", 2, "1.5 kWh", "$3.00", "0.4 kg CO2", "1.5 kWh", "$3.00", "3 kWh", "$6.00"],
        ["b", "sjf", 2, "1.5 kWh", "$0.00", "0.4 kg CO2", "1.5 kWh", "$0.00", "3 kWh", "$0.00"],
    ]
