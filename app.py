"""The GPU scheduling playground: `streamlit run app.py` (or `make run`).

A router and nothing more: the pages live in ``pages/``, the shared sidebar and session helpers in
``pages/common.py``, every computation in ``engine/``.
"""

import streamlit as st

from pages import common

st.set_page_config(page_title="GPU scheduling playground", page_icon="🧮", layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Home", icon="🏠", default=True),
    st.Page("pages/cluster.py", title="Cluster", icon="🖥️"),
    st.Page("pages/workload.py", title="Workload", icon="📥"),
    st.Page("pages/compare.py", title="Compare", icon="📊"),
    st.Page("pages/train.py", title="Train", icon="🎓"),
    st.Page("pages/learn.py", title="Learn", icon="📖"),
]

page = st.navigation(PAGES)
common.sync_query_params(common.scenario())  # the link reproduces the scenario on every page
common.sidebar()
page.run()
