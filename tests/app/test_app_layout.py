"""Pages and their helpers are told apart by the layout: every module directly in app_pages/ is a page that app.py
routes to, every routed page exists, and the helpers in app_pages/lib/ never import a page."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "app_pages"


def _routed() -> set[str]:
    return set(re.findall(r'st\.Page\("(app_pages/[^"]+)"', (ROOT / "app.py").read_text()))


def test_every_module_in_app_pages_is_a_routed_page_and_back():
    modules = {f"app_pages/{p.name}" for p in PAGES.glob("*.py") if p.name != "__init__.py"}
    assert modules == _routed()


def test_helpers_import_no_page():
    pages = {Path(p).stem for p in _routed()}
    for path in (PAGES / "lib").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("app_pages"):
                named = {node.module.split(".")[-1], *(f"{a.name}" for a in node.names)}
                assert node.module.startswith("app_pages.lib") and not named & pages, (path.name, node.module)
