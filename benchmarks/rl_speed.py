"""Speed of learned schedulers: decision latency on one CPU core and training throughput.

Measures, with ``torch.set_num_threads(1)``:

* **decision parts**: snapshot (window + mask), encode and the policy's forward pass, each timed alone;
* **decision latency** of every shipped model (``models/*.json``): each ``rl:<name>`` scheduler schedules a
  generated workload; every decision (encode the state, run the policy, decode the action) is timed on its
  own. Printed: median, p95 and mean in microseconds, against the 1 ms target, and as a ratio to the time
  ``first-fit`` spends per started job on the same workload (measured in the same run);
* **environment throughput**: steps per second of ``GpuSchedulingEnv`` under random masked actions (no
  network);
* **training throughput**: environment steps per second of MaskablePPO (4 ``DummyVecEnv`` environments,
  MLP and attention policies), rollouts and updates included.

Usage: ``.venv/bin/python -m benchmarks.rl_speed [--jobs 300] [--train-steps 4096] [--json FILE]``.
Numbers depend on the machine and on what else runs on it; compare ratios, not absolute values.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from engine import make_scheduler, parse_cluster, simulate
from engine.analysis.workload import make_jobs
from engine.rl.agent import RLScheduler, model_names
from engine.rl.encoding import EncodingConfig
from engine.rl.env import EnvConfig, GpuSchedulingEnv
from engine.rl.policies import PolicySpec
from engine.rl.train import TrainConfig, train

CLUSTER = "2x8:A100-80,4x4:V100-32"


class _Timed:
    """Wraps an RL scheduler and times each decision the policy makes (a start or a wait).

    One decision = from asking the scheduler for its next decision to getting it: encode the state, run the
    policy, decode. Decision points where nothing can start (the policy is not consulted) are not counted.
    """

    def __init__(self, inner: RLScheduler) -> None:
        self.inner, self.name = inner, inner.name
        self.samples_s: list[float] = []
        self._acts = 0
        act = inner.act

        def counted(obs, mask):
            self._acts += 1
            return act(obs, mask)

        inner.act = counted

    def reset(self, state) -> None:
        self.inner.reset(state)

    def decide(self, state):
        it = iter(self.inner.decide(state))
        while True:
            before = self._acts
            t0 = time.perf_counter()
            d = next(it, None)
            dt = time.perf_counter() - t0
            if self._acts > before:
                self.samples_s.append(dt)
            if d is None:
                return
            yield d


def decision_latency(jobs_n: int) -> list[dict]:
    cluster = parse_cluster(CLUSTER)
    jobs = make_jobs(cluster, jobs_n, 1.5, 0)
    t0 = time.perf_counter()
    ff = simulate(cluster, jobs, make_scheduler("first-fit"))
    ff_per_job_us = (time.perf_counter() - t0) / max(int((ff.status == 0).sum()), 1) * 1e6
    out = []
    for name in model_names():
        timed = _Timed(make_scheduler(f"rl:{name}"))
        simulate(cluster, jobs, timed)
        us = np.array(timed.samples_s) * 1e6
        row = {"model": name, "decisions": int(us.size), "median_us": float(np.median(us)),
               "p95_us": float(np.percentile(us, 95)), "mean_us": float(us.mean()),
               "vs_first_fit_per_job": float(us.mean() / ff_per_job_us)}
        out.append(row)
        print(f"decision latency rl:{name}: median {row['median_us']:.0f} us, p95 {row['p95_us']:.0f} us, "
              f"mean {row['mean_us']:.0f} us over {row['decisions']} decisions "
              f"({'meets' if row['p95_us'] <= 1000 else 'misses'} the 1 ms target at p95; "
              f"{row['vs_first_fit_per_job']:.1f}x first-fit's {ff_per_job_us:.0f} us per job)")
    return out


def components(repeat: int = 300) -> list[dict]:
    """Per model, the three parts of one decision timed alone on a mid-episode state: min and median of
    ``repeat`` runs (the minimum is the cost without interference from other processes)."""
    from engine.rl.agent import load_agent
    from engine.rl.encoding import encode, snapshot

    out = []
    for name in model_names():
        agent = load_agent(name)
        env = GpuSchedulingEnv(EnvConfig(clusters=(CLUSTER,), loads=(1.5,), n_jobs=150, encoding=agent.encoding))
        obs, _ = env.reset(seed=1)
        rng = np.random.default_rng(0)
        for _ in range(60):
            obs, *_ = env.step(rng.choice(np.flatnonzero(env.action_masks())))
        state, mask, enc = env.simulation.state, env.action_masks(), agent.encoding
        row: dict = {"model": name}
        for part, fn in (("snapshot", lambda: snapshot(state, enc)), ("encode", lambda: encode(state, enc)),
                         ("policy", lambda: agent.act(obs, mask))):
            ts = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            row[f"{part}_min_us"], row[f"{part}_median_us"] = min(ts) * 1e6, float(np.median(ts)) * 1e6
        total = row["snapshot_min_us"] + row["encode_min_us"] + row["policy_min_us"]
        row["decision_min_us"] = total
        print(f"decision parts rl:{name} (min / median us): snapshot {row['snapshot_min_us']:.0f} / "
              f"{row['snapshot_median_us']:.0f}, encode {row['encode_min_us']:.0f} / {row['encode_median_us']:.0f}, "
              f"policy {row['policy_min_us']:.0f} / {row['policy_median_us']:.0f}; sum of minima {total:.0f} us "
              f"({'within' if total <= 1000 else 'over'} the 1 ms target)")
        out.append(row)
    return out


def env_throughput(jobs_n: int) -> dict:
    env = GpuSchedulingEnv(EnvConfig(clusters=(CLUSTER,), loads=(1.5,), n_jobs=jobs_n,
                                     encoding=EncodingConfig(window=8, window_order="mixed")))
    rng = np.random.default_rng(0)
    steps, t0 = 0, time.perf_counter()
    for ep in range(3):
        env.reset(seed=ep)
        done = False
        while not done:
            _, _, done, _, _ = env.step(rng.choice(np.flatnonzero(env.action_masks())))
            steps += 1
    rate = steps / (time.perf_counter() - t0)
    print(f"env throughput: {rate:.0f} steps/s ({steps} steps, random masked actions)")
    return {"steps": steps, "steps_per_s": rate}


def train_throughput(steps: int, tmp: str) -> list[dict]:
    out = []
    for kind in ("mlp", "attention"):
        cfg = TrainConfig(name=f"bench-{kind}", env=EnvConfig(clusters=(CLUSTER,), loads=(1.5,), n_jobs=100,
                                                               encoding=EncodingConfig(window=8, window_order="mixed")),
                          policy=PolicySpec(kind=kind, net_arch=(64, 64) if kind == "mlp" else (64,)),
                          total_timesteps=steps, n_envs=4, n_steps=256, batch_size=256, eval_freq=10**9,
                          checkpoint_freq=10**9, progress_bar=False, runs_dir=tmp)
        card = train(cfg, export=False)
        rate = card["training"]["timesteps"] / card["training"]["wall_time_s"]
        print(f"training throughput ({kind}): {rate:.0f} env steps/s (MaskablePPO, 4 envs, updates included)")
        out.append({"policy": kind, "steps": card["training"]["timesteps"], "steps_per_s": rate})
    return out


def main() -> None:
    import tempfile

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=300, help="jobs in the latency workload (default 300)")
    p.add_argument("--train-steps", type=int, default=4096, help="MaskablePPO steps per policy (default 4096)")
    p.add_argument("--json", help="write the numbers as JSON")
    args = p.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        res = {"latency": decision_latency(args.jobs), "parts": components(), "env": env_throughput(100),
               "train": train_throughput(args.train_steps, tmp)}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    print(json.dumps({"median_latency_us": {r["model"]: round(r["median_us"]) for r in res["latency"]},
                      "env_steps_per_s": round(res["env"]["steps_per_s"]),
                      "train_steps_per_s": {r["policy"]: round(r["steps_per_s"]) for r in res["train"]}}))


if __name__ == "__main__":
    main()
