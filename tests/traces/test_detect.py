"""Format auto-detection from a file's first line."""

from __future__ import annotations

import pytest

from engine.traces.detect import detect_format

SWF_LINE = " ".join(["1", "0", "0", "5", "1", "-1", "-1", "1", "60", "-1", "1", "1", "1", "-1", "-1", "-1", "-1", "-1"])


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("; Version: 2.2\n" + SWF_LINE + "\n", "swf"),
        ("\n\n" + SWF_LINE + "\n", "swf"),
        ("\t".join(["ResNet-50 (batch size 64)", "cmd", "dir", "--n", "1", "10", "1", "1", "-1", "0"]) + "\n", "gavel"),
        ("\t".join(["ResNet-50 (batch size 64)", "cmd", "--n", "4", "2931", "12.500000", "1"]) + "\n", "gavel"),
        ("job_id,submit_s,duration_s\n", "csv"),
        ("timestamp,duration,num_gpus,gpu_time,cluster\n", "philly"),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n", "openb"),
        ("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n", "tiresias"),
        ("name,time,application,num_replicas,batch_size\n", "pollux"),
    ],
)
def test_detects(tmp_path, text, fmt):
    path = tmp_path / "trace"
    path.write_text(text)
    assert detect_format(path) == fmt
