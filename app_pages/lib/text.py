"""User text inside Markdown: whatever a link, a file name or an error message holds is shown as text.

Streamlit renders the body of ``st.markdown``, ``st.caption``, ``st.error`` and friends as Markdown (links,
images, emphasis, HTML-like tags, colour directives). Text that came from a user goes through
:func:`as_text` first, so ``[x](http://...)`` shows as those characters, never as a link.
"""

from __future__ import annotations

import re

# CommonMark lets any ASCII punctuation character be backslash-escaped, which makes it literal.
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


def as_text(value: object) -> str:
    """Markdown source that shows ``str(value)`` literally, on one line (control characters become spaces)."""
    return _PUNCTUATION.sub(r"\\\1", _CONTROL.sub(" ", str(value)))
