"""How the report notebooks show their tables: every cell in full, and every table within the
width of the page (a wide one scrolls sideways inside it, long text wraps).

A notebook calls ``display(report_display.setup())`` once, before its first table: the pandas
options apply to the rest of the notebook, and the returned style travels with the notebook's
outputs into the HTML export (nbconvert keeps a cell's HTML output as it is).
"""

from __future__ import annotations

import pandas as pd

# The class names cover nbconvert's lab and classic templates and pandas' own tables.
TABLE_STYLE = """<style>
.jp-RenderedHTMLCommon table, .rendered_html table, table.dataframe {
  display: block; max-width: 100%; overflow-x: auto;
}
table.dataframe td, table.dataframe th {
  white-space: normal; overflow-wrap: anywhere; max-width: 40em; vertical-align: top; text-align: left;
}
</style>"""


def setup():
    """Show tables in full (no cell cut with an ellipsis, no columns left out) and return the
    style that keeps them within the page, as an object the notebook displays."""
    from IPython.display import HTML

    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.max_columns", None)
    pd.set_option("display.width", None)
    return HTML(TABLE_STYLE)
