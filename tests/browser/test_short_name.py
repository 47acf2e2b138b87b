"""The page's shortName (frontend/js/format.js) gives the display name that
mcuprof/names.py short_label gives every export and Compare: one name everywhere."""

from __future__ import annotations

import base64
from pathlib import Path

from playwright.sync_api import Browser

from mcuprof.names import short_label
from mcuprof.paths import default_elf
from mcuprof.symbols import SymbolTable
from tests.export.conftest import NAMES

FORMAT_JS = Path(__file__).parents[2] / "frontend" / "js" / "format.js"
MORE = [
    "Foo& Foo::operator=(Foo const&)",
    "app::Foo::operator int() const",
    "void cooperator(int)",
    "operator new(unsigned int)",
    "std::pair<int, int> ns::f(int) const",
    "(anonymous namespace)::f()",
]


def test_short_name_mirrors_short_label(chromium: Browser) -> None:
    demo = {f.name for f in SymbolTable.from_elf(default_elf()).functions}
    names = sorted({*NAMES, *MORE, *demo})
    module = "data:text/javascript;base64," + base64.b64encode(FORMAT_JS.read_bytes()).decode()
    context = chromium.new_context()
    try:
        page = context.new_page()
        got = page.evaluate(
            "([url, names]) => import(url).then(m => names.map(m.shortName))", [module, names]
        )
    finally:
        context.close()
    assert dict(zip(names, got, strict=True)) == {n: short_label(n) for n in names}
