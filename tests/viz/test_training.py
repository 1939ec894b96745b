"""Live training curves read from TensorBoard files."""

from engine.viz import training


def test_training_curves_read_live_tensorboard_scalars(tmp_path):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path / "tb" / "ppo_1"))
    for step, reward in ((1024, -5.0), (2048, -3.5), (3072, -2.0)):
        for tag, value in (("rollout/ep_rew_mean", reward), ("train/loss", 0.1), ("eval/mean_reward", reward + 1)):
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
            writer.add_event(event_pb2.Event(step=step, summary=summary))
    writer.flush()  # still open: the reader must cope with a file being written
    curves = training.training_curves(tmp_path / "tb")
    assert set(curves["tag"]) == {"rollout/ep_rew_mean", "eval/mean_reward"}
    ep = curves[curves["tag"] == "rollout/ep_rew_mean"]
    assert ep["step"].tolist() == [1024, 2048, 3072] and ep["value"].tolist() == [-5.0, -3.5, -2.0]
    fig = training.training_figure(curves)
    assert [t.name for t in fig.data if len(t.x)] == [
        training.TRAINING_TAGS["rollout/ep_rew_mean"],
        training.TRAINING_TAGS["eval/mean_reward"],
    ]
    assert training.training_curves(tmp_path / "nothing").empty
    writer.close()
