"""Carbon-intensity files: OpenDC's two columns, evenly spaced rows; anything else is one line naming the row."""

from __future__ import annotations

import gzip

import pytest

from engine.errors import TraceError
from engine.sim.options import CarbonSeries
from engine.traces.carbon import load_carbon_csv, parse_carbon_csv

HEADER = "timestamp,carbon_intensity\n"


def test_iso_and_second_timestamps_read_as_an_evenly_spaced_series(tmp_path):
    text = HEADER + "2024-01-01T00:00:00Z,400\n2024-01-01T01:00:00+00:00,300.5\n\n2024-01-01 02:00,0\n"
    assert parse_carbon_csv(text) == CarbonSeries(3600.0, (400.0, 300.5, 0.0), "2024-01-01T00:00:00Z")
    path = tmp_path / "c.csv.gz"
    path.write_bytes(gzip.compress((HEADER + "0,10\n900,20\n1800,30\n").encode()))
    assert load_carbon_csv(path) == CarbonSeries(900.0, (10.0, 20.0, 30.0), "0")


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "time,carbon\n0,1\n",
            "c.csv, line 1: columns ['time', 'carbon']; expected exactly timestamp,carbon_intensity",
        ),
        ("timestamp,carbon_intensity,region\n0,1,x\n", "c.csv, line 1: columns ['timestamp', 'carbon_intensity', "),
        (
            HEADER + "0,1\n3600,nan\n",
            "c.csv, line 3, column 'carbon_intensity': carbon_intensity 'nan' must be a finite number >= 0",
        ),
        (HEADER + "0,1\n3600,\n", "c.csv, line 3, column 'carbon_intensity': carbon_intensity '' must be"),
        (HEADER + "0,1\n3600,-4\n", "c.csv, line 3, column 'carbon_intensity': carbon_intensity '-4' must be"),
        (
            HEADER + "0,1\n3600,2\n10800,3\n",
            "c.csv, line 4, column 'timestamp': timestamp '10800' is 7200 s after the previous row; rows must be evenly",
        ),
        (HEADER + "0,1\n3600,2\n3600,3\n", "c.csv, line 4, column 'timestamp': timestamp '3600' is not after"),
        (HEADER + "0,1\nmonday,2\n", "c.csv, line 3, column 'timestamp': timestamp 'monday' is neither ISO 8601"),
        (HEADER + "0,1\n3600\n", "c.csv, line 3: 1 fields; expected 2"),
        (HEADER + "0,1\n", "c.csv: 1 data row(s); at least 2 are needed"),
        ("", "c.csv: empty; expected the header timestamp,carbon_intensity"),
    ],
)
def test_bad_files_are_one_line_naming_the_row(tmp_path, body, message):
    path = tmp_path / "c.csv"
    path.write_text(body)
    for read in (lambda: load_carbon_csv(path), lambda: parse_carbon_csv(body, "c.csv")):
        with pytest.raises(TraceError) as err:
            read()
        assert message in str(err.value).replace(str(path), "c.csv") and "\n" not in str(err.value)
