"""Pictures of a workload before any run."""

from engine import Job
from engine.traces.load import offered_load_series
from engine.viz import workload


def test_workload_figures_name_their_units():
    jobs = tuple(Job(i, submit_s=100.0 * i, duration_s=50.0 * (1 + i % 4), gpus=1 + (i % 2),
                     gpu_fraction=0.5 if i % 7 == 0 and i % 2 == 0 else 1.0, user=f"u{i % 4}") for i in range(40))
    df = workload.jobs_frame(jobs)
    assert "<1" in list(workload.gpu_count_figure(df).data[0].x)
    for fig in (workload.arrivals_figure(df), workload.duration_figure(df), workload.user_volume_figure(df),
                workload.offered_load_figure(*offered_load_series(jobs, 4), 4)):
        assert "(" in fig.layout.yaxis.title.text
        assert fig.layout.xaxis.title.text
