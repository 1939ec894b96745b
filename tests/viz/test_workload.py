"""Pictures of a workload before any run."""

from engine import Job
from engine.traces.load import offered_load_series
from engine.viz import workload


def test_workload_figures_name_their_units():
    jobs = tuple(
        Job(
            i,
            submit_s=100.0 * i,
            duration_s=50.0 * (1 + i % 4),
            gpus=1 + (i % 2),
            gpu_fraction=0.5 if i % 7 == 0 and i % 2 == 0 else 1.0,
            user=f"u{i % 4}",
        )
        for i in range(40)
    )
    df = workload.jobs_frame(jobs)
    assert "<1" in list(workload.gpu_count_figure(df).data[0].x)
    for fig in (
        workload.arrivals_figure(df),
        workload.duration_figure(df),
        workload.user_volume_figure(df),
        workload.offered_load_figure(*offered_load_series(jobs, 4), 4),
    ):
        assert "(" in fig.layout.yaxis.title.text
        assert fig.layout.xaxis.title.text


def test_arrivals_bins_are_named_in_human_units_and_one_gpu_is_singular():
    # 60 bins over 12,000 years (a trace in ms read as seconds): each bin is 200 years, not "count per 7.3e+04 d".
    span = 12_000 * 365.25 * 86_400
    df = workload.jobs_frame([Job(0, 0.0, 10.0), Job(1, span, 10.0)])
    fig = workload.arrivals_figure(df).to_plotly_json()
    assert fig["layout"]["yaxis"]["title"]["text"] == "jobs (per 200 years)"
    small = workload.jobs_frame([Job(0, 0.0, 10.0), Job(1, 7200.0, 10.0)])
    assert workload.arrivals_figure(small).to_plotly_json()["layout"]["yaxis"]["title"]["text"] == "jobs (per 2 min)"
    series = offered_load_series(tuple(Job(i, 60.0 * i, 100.0) for i in range(5)), 1)
    title = workload.offered_load_figure(*series, 1).to_plotly_json()["layout"]["title"]["text"]
    assert title == "offered load on 1 GPU"
