"""What every chart shares: colours per category and readable time units."""

import math

from engine.viz import style


def test_time_scale_picks_readable_units():
    assert style.time_scale(50) == ("s", 1.0)
    assert style.time_scale(600) == ("min", 60.0)
    assert style.time_scale(5 * 3600) == ("h", 3600.0)
    assert style.time_scale(10 * 86400) == ("d", 86400.0)
    assert style.time_scale(math.nan) == ("s", 1.0)


def test_category_colours_groups_the_rare_ones_as_other():
    values = [f"u{i}" for i in range(20) for _ in range(20 - i)]
    colours = style.category_colours(values, limit=5)
    assert sum(c != style.OTHER_COLOUR for c in colours.values()) == 4
    assert colours["u0"] != style.OTHER_COLOUR and colours["u19"] == style.OTHER_COLOUR
    assert style.category_colours(values, limit=5) == colours
