"""Two small runs (fifo and best-fit on a 10-GPU, two-type cluster) that the chart tests draw."""

import pytest

from engine import Job, make_scheduler, parse_cluster, simulate


def chart_jobs(user: str = "u", job_type: str = "training") -> tuple[Job, ...]:
    """24 jobs of 1, 2 and 4 GPUs, 30 s apart, of users ``user0..2``, half of type ``job_type``, half inference."""
    return tuple(
        Job(
            i,
            submit_s=30.0 * i,
            duration_s=400.0 + 50 * (i % 5),
            gpus=(1, 2, 4)[i % 3],
            user=f"{user}{i % 3}",
            job_type=(job_type, "inference")[i % 2],
        )
        for i in range(24)
    )


@pytest.fixture(scope="module")
def runs():
    cluster = parse_cluster("2x4:A100-80,1x2:V100-32")
    jobs = chart_jobs()
    return {name: simulate(cluster, jobs, make_scheduler(name)) for name in ("fifo", "best-fit")}
