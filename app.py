"""The GPU scheduling playground: `streamlit run app.py` (or `make run`).

A router and nothing more: the pages live in ``app_pages/``, the shared sidebar and session helpers in
``app_pages/lib/common.py``, every computation in ``engine/``. (The folder is not called ``pages/``: Streamlit
treats a ``pages/`` folder beside the main script as an old-style multipage app, and a link straight to a
page would then skip this router and its sidebar.)
"""

import streamlit as st

from app_pages.lib import common

# The icon is a file of the repository: a named icon would be fetched from the internet (and fail offline).
st.set_page_config(
    page_title="GPU scheduling playground", page_icon=str(common.REPO / "app_pages" / "icon.png"), layout="wide"
)

PAGES = [
    st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("app_pages/cluster.py", title="Cluster", icon=":material/dns:"),
    st.Page("app_pages/workload.py", title="Workload", icon=":material/work_history:"),
    st.Page("app_pages/compare.py", title="Compare", icon=":material/compare:"),
    st.Page("app_pages/explore.py", title="Explore", icon=":material/query_stats:"),
    st.Page("app_pages/train.py", title="Train", icon=":material/model_training:"),
    st.Page("app_pages/learn.py", title="Learn", icon=":material/school:"),
]

page = st.navigation(PAGES)
common.sync_query_params(common.scenario())  # the link reproduces the scenario on every page
common.sidebar()
page.run()
