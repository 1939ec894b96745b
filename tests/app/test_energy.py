"""Energy, cost and carbon in the app: the Cluster page sets the scenario's energy model (watts and prices in the
cluster's gpu_types, PUE, price list, carbon constant or CSV), Compare and Explore show what it makes of runs."""

from __future__ import annotations

import gc
import json
import re

import pytest

from app_pages.lib import energy
from engine import EngineError, parse_cluster
from engine.analysis.metrics import ENERGY_METRICS, metric_name, summarize
from engine.analysis.scenario import Scenario
from engine.errors import ClusterSpecError
from engine.sim.options import CarbonSeries, EnergyModel, PowerDownModel
from engine.units import human_value
from tests.app.test_explore import explore
from tests.app.test_pages import REPO, app, assert_kpi_rows, errors, run_compare

APPLY_ENERGY = "FormSubmitter:cluster_energy_form-Apply energy and cost"
DAILY = (REPO / "sample_traces" / "carbon" / "daily.csv").read_bytes()


def test_edited_watts_and_prices_travel_in_the_cluster_json():
    cluster = parse_cluster("2x4:T4")
    rows = [{"GPU type": "T4", "board_w": 70.0, "idle_w": 9.0, "busy_w": float("nan"), "price_per_h": 0.2}]
    spec = energy.with_power(cluster, rows).to_spec()
    t4 = parse_cluster(spec).catalog["T4"]
    assert (t4.idle_w, t4.busy_w, t4.price_per_h) == (9.0, 70.0 * 0.76, 0.2)  # an empty cell: from board power
    assert json.loads(spec)["gpu_types"][0]["price_per_h"] == 0.2
    with pytest.raises(ClusterSpecError, match="T4: price_per_h must be a number >= 0"):
        energy.with_power(cluster, [{**rows[0], "price_per_h": -1.0}])


def test_carbon_is_a_constant_a_csv_or_the_series_held_and_bad_files_are_one_line():
    assert energy.carbon_of(300.0, ("x.csv", DAILY), 480.0) == 300.0
    day = energy.carbon_of(None, ("daily.csv", DAILY), 480.0)
    assert isinstance(day, CarbonSeries) and len(day.g_per_kwh) == 24 and day.step_s == 3600.0
    assert energy.carbon_of(None, None, day) is day
    for upload, words in (
        ((None, None), "upload a CSV"),
        (("bad.csv", b"time,co2\n0,1\n"), "bad.csv"),
        (("gap.csv", b"timestamp,carbon_intensity\n0,1\n3600,2\n10800,3\n"), "evenly spaced"),
        (("nan.csv", b"timestamp,carbon_intensity\n0,1\n3600,nan\n"), "finite number >= 0"),
        (("bin.csv", b"\xff\xfe\x00"), "not UTF-8"),
    ):
        with pytest.raises(EngineError, match=words) as err:
            energy.carbon_of(None, None if upload[0] is None else upload, 480.0)
        assert "\n" not in str(err.value)


def test_cluster_page_sets_the_energy_model_and_a_bad_carbon_csv_is_an_inline_error():
    at = app("app_pages/cluster.py")
    assert "Energy and cost" in [s.value for s in at.subheader]
    assert at.toggle(key="cluster_count_energy").value is False  # the defaults: not counted
    at.number_input(key="cluster_pue").set_value(1.2)
    at.selectbox(key="cluster_price_list").select("on-demand")
    at.button(key=APPLY_ENERGY).click().run()
    assert not at.exception and not errors(at), errors(at)
    assert at.query_params["o.energy.pue"] == "1.2" and at.query_params["o.energy.price_list"] == '"on-demand"'
    # A carbon file with the wrong columns: one line naming it, and the scenario keeps its constant.
    at.radio(key="cluster_carbon_kind").set_value("hourly CSV")
    at.file_uploader(key="cluster_carbon_csv").upload("grid.csv", b"time,co2\n0,1\n", "text/csv")
    at.button(key=APPLY_ENERGY).click().run()
    assert not at.exception
    (line,) = errors(at)
    assert line.startswith("energy and cost: grid.csv") and "timestamp,carbon_intensity" in line
    assert "o.energy.carbon_g_per_kwh" not in at.query_params
    at.file_uploader(key="cluster_carbon_csv").upload("daily.csv", DAILY, "text/csv")
    at.button(key=APPLY_ENERGY).click().run()
    assert not at.exception and not errors(at), errors(at)
    carbon = at.session_state["scenario"].options.energy.carbon_g_per_kwh
    assert isinstance(carbon, CarbonSeries) and len(carbon.g_per_kwh) == 24
    assert json.loads(at.query_params["o.energy.carbon_g_per_kwh"])["step_s"] == 3600.0
    captions = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]  # as the reader sees them
    assert any("24 values, one every 60 min, from 2024-01-01T00:00:00Z" in c for c in captions), captions
    assert at.toggle(key="cluster_count_energy").value is True  # applying the form turned counting on
    at.toggle(key="cluster_count_energy").set_value(False).run()
    assert at.session_state["scenario"].options.energy == EnergyModel()
    assert not any(k.startswith("o.energy") for k in at.query_params)


def test_the_count_switch_counts_the_default_model_in_the_link_and_on_compare():
    at = app("app_pages/cluster.py")
    at.toggle(key="cluster_count_energy").set_value(True).run()
    assert not at.exception and not errors(at), errors(at)
    assert at.session_state["scenario"].options.energy == EnergyModel(count=True)
    assert at.query_params["o.energy.count"] == "true"
    compare = run_compare(dict(at.query_params))  # the link alone carries the switch
    kpi = compare.dataframe[0].value.set_index("metric")
    assert kpi.loc[metric_name("energy_kwh")].str.endswith("kWh").all()  # the default model, counted
    assert kpi.loc[metric_name("cost_per_job_usd")].str.startswith("$").all()


def test_the_energy_form_powers_idle_nodes_down_and_the_link_carries_it():
    at = app("app_pages/cluster.py")
    at.checkbox(key="cluster_power_down").check()
    at.number_input(key="cluster_power_down_after").set_value(900.0)
    at.number_input(key="cluster_wake_s").set_value(120.0)
    at.button(key=APPLY_ENERGY).click().run()
    assert not at.exception and not errors(at), errors(at)
    options = at.session_state["scenario"].options
    assert options.power_down == PowerDownModel(idle_timeout_s=900.0, wake_s=120.0, sleep_w=0.0)
    assert options.energy.count  # what powering down saves is counted
    assert at.query_params["o.power_down.idle_timeout_s"] == "900.0"
    at.checkbox(key="cluster_power_down").uncheck()
    at.button(key=APPLY_ENERGY).click().run()
    assert at.session_state["scenario"].options.power_down == PowerDownModel()
    assert not any(k.startswith("o.power_down") for k in at.query_params)


ENERGY_QUERY = {
    "cluster": "1x4:A100-80,1x4:T4",
    "sched": "first-fit,cost-aware",
    "w.n_jobs": "40",
    "o.energy.pue": "1.2",
}


def downloaded(filename: str) -> bytes:
    """The bytes of the page's latest download of ``filename`` (AppTest keeps them in its media storage)."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    files = [
        f
        for o in gc.get_objects()
        if isinstance(o, MemoryMediaFileStorage)
        for f in o._files_by_id.values()
        if f.filename == filename
    ]
    assert files, f"no download called {filename}"
    return files[-1].content


def test_compare_shows_energy_rows_per_user_power_and_exports_them_when_the_scenario_sets_a_model():
    at = run_compare(ENERGY_QUERY)
    model = Scenario.from_query(ENERGY_QUERY).options.energy
    assert_kpi_rows(at, ENERGY_METRICS, energy=model)  # every energy row is the run's own figure, in its human unit
    results = at.session_state["results"]["results"]
    kpi = at.dataframe[0].value.set_index("metric")
    assert kpi.loc[metric_name("cost_usd"), "first-fit"].startswith("$")
    assert kpi.loc[metric_name("co2_kg"), "first-fit"].endswith(" kg CO2")
    per_user = next(d.value for d in at.dataframe if "Carbon" in getattr(d.value, "columns", []))
    assert set(per_user["scheduler"]) == set(results) and per_user["Cost of GPUs held"].str.startswith("$").all()
    series = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "kW (PUE 1.2)" in c.proto.spec)
    assert sum(t.get("yaxis") == "y3" for t in series["data"]) == len(results)  # a power line per run
    payload = json.loads(downloaded("results.json"))
    assert payload["energy_model"]["pue"] == 1.2
    assert payload["summaries"]["cost-aware"]["cost_usd"] == summarize(results["cost-aware"], energy=model).value(
        "cost_usd"
    )
    # Over several workload seeds, the energy rows get their confidence intervals too.
    at.number_input(key="compare_seeds").set_value(2)
    at.button(key="compare_run").click().run()
    seeds = at.session_state["compare_seed_table"][3]
    assert seeds.set_index("metric").loc[metric_name("cost_usd"), "cost-aware"].count("$") == 2  # mean ± half-width


def test_compare_without_an_energy_model_has_no_energy_rows():
    at = app("app_pages/compare.py")
    at.button(key="compare_run").click().run()
    kpi = at.dataframe[0].value
    assert not any(m.startswith(("Energy", "Cost of", "Carbon")) for m in kpi["metric"])
    assert any(
        "turn on Count energy, cost and carbon (or set an energy model) on the Cluster page" in c.value
        for c in at.caption
    )


@pytest.mark.timeout(300)
def test_a_sweep_with_an_energy_model_carries_cost_and_draws_wait_against_cost(ray_local):
    at = explore({**ENERGY_QUERY, "cluster": "1x4:A100-80,2x4:T4"})
    at.text_input(key="sweep_loads").set_value("0.5,1.2")
    at.number_input(key="sweep_seeds").set_value(1)
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and not errors(at), errors(at)
    frame = at.session_state["explore_sweep"]["frame"]
    assert set(ENERGY_METRICS) <= set(frame.columns) and (frame["cost_usd"] > 0).all()
    figure = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "Pareto" in c.proto.spec)
    front = next(t for t in figure["data"] if t["name"] == "Pareto front")
    means = frame.groupby(["cluster", "load", "scheduler"])[["cost_usd", "mean_wait_s"]].mean()
    # The front is exactly the cells no other cell beats on both cost and wait.
    beaten = [any((o <= r).all() and (o < r).any() for _, o in means.iterrows()) for _, r in means.iterrows()]
    assert sorted(front["x"]) == sorted(means["cost_usd"][[not b for b in beaten]].tolist())
    assert metric_name("cost_usd") in at.dataframe[-1].value.columns


def test_a_sweep_without_an_energy_model_says_where_to_set_one(ray_local):
    at = explore({"cluster": "1x4:T4", "sched": "fifo", "w.n_jobs": "20"})
    at.text_input(key="sweep_loads").set_value("0.8")
    at.number_input(key="sweep_seeds").set_value(1)
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert "cost_usd" not in at.session_state["explore_sweep"]["frame"].columns
    assert any(
        "Turn on Count energy, cost and carbon (or set an energy model) on the Cluster page" in c.value
        for c in at.caption
    )


@pytest.mark.timeout(300)
def test_the_cheapest_cluster_of_two_node_shapes_shows_its_price_and_the_runner_up(ray_local):
    from engine.analysis.energy import cluster_price_per_h

    at = explore(ENERGY_QUERY)
    at.text_input(key="mix_node_a").set_value("4:T4")
    at.text_input(key="mix_node_b").set_value("4:A100-80")
    at.number_input(key="mix_max_nodes").set_value(4)
    at.selectbox(key="mix_metric").select("mean_wait_s")
    at.text_input(key="mix_value").set_value("10 min")
    at.multiselect(key="mix_schedulers").set_value(["first-fit"])
    at.button(key="FormSubmitter:mix_form-▶ Find the cheapest cluster").click().run()
    assert not at.exception and not errors(at), errors(at)
    answer = at.session_state["explore_mix"]["answer"]
    row = answer.iloc[0]
    assert isinstance(row["cluster"], str)
    price = cluster_price_per_h(parse_cluster(row["cluster"]), "catalog")
    card = next(m for m in at.metric if m.label == "first-fit")
    assert card.value == f"${price:,.2f}/h"
    probes = answer.attrs["probes"]
    assert not any(p["meets"] and p["cluster_price_per_h"] < price for p in probes)  # nothing cheaper meets it
    if isinstance(row["runner_up"], str):
        assert card.proto.delta == f"runner-up {row['runner_up']}: ${row['runner_up_price_per_h']:,.2f}/h"


def test_the_cheap_gpu_preset_opens_compare_with_its_energy_model_and_shows_its_lesson():
    at = app()
    at.button(key="preset_cheap-gpu-slow-jobs").click().run()
    assert at.query_params["o.energy.pue"] == "1.2"  # the preset's energy model travels in the link
    at.button(key="compare_run").click().run()
    assert not at.exception and not errors(at), errors(at)
    results = at.session_state["results"]["results"]
    model = at.session_state["scenario"].options.energy
    cost = {name: summarize(r, energy=model).value("cost_usd") for name, r in results.items()}
    assert cost["first-fit"] >= 1.25 * cost["cost-aware"]  # the lesson, on the run the page shows
    kpi = at.dataframe[0].value.set_index("metric")
    assert kpi.loc[metric_name("cost_usd"), "cost-aware"] == human_value(cost["cost-aware"], "USD")


def test_a_gpu_type_without_watts_is_one_line_and_the_other_metrics_still_show():
    cluster = json.dumps(
        {
            "groups": [{"gpu_type": "MY-GPU", "nodes": 1, "gpus_per_node": 4}],
            "gpu_types": [{"name": "MY-GPU", "vram_gib": 48, "speed": 1.5}],
        }
    )
    at = app("app_pages/compare.py", query={**ENERGY_QUERY, "cluster": cluster, "sched": "fifo"})
    at.button(key="compare_run").click().run()
    assert not at.exception
    (line,) = errors(at)
    assert line.startswith("energy and cost") and "GPU type MY-GPU has no power figures" in line
    kpi = at.dataframe[0].value
    assert "Mean wait ↓" in set(kpi["metric"]) and metric_name("cost_usd") not in set(kpi["metric"])
