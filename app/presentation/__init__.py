"""The explorer's presentation: everything a page shows, computed without Streamlit.

The app's pages (``app/views/*.py``) stay thin: they read URL parameters, call these functions and hand the
results to Streamlit. Each page's data lives in the module named after it, and a page imports from that
module (and from ``common``); this package re-exports nothing, so a name has one home:

    common         URL parameters and lookups, Markdown escaping and safe links, dimensions, works tables
    overview       the survey's formalisms and Table 1, counts, the capability x task heat map, works per year
    taxonomy       trees, graph and list per dimension, the node picker, what every node page shows
    node_sections  what only some node pages show, as an ordered list of sections
    claims         does it do what the paper says: each claim's figure, verdict and settings (node pages), the
                   Algorithms page's verdict column
    work           a work's page and the work picker
    search         the search as URL parameters, why a hit matched, hits as a table
    algorithms     the survey's Table 2 with links, its filters, variants side by side
    compare        a comparison grid's leaderboard, stages, interval chart, pass@k curves
    lab            "Run this" links into the Lab, the form's errors by field, a run's stage and progress text,
                   a training transcript as HTML, a run's training-health warnings
    learning       a learning preset's measured band (seeds and the no-update control), the check of a live run
                   against it, the measured curve for node pages (benchmarks/learn_presets.py's records)
    runs           the run history, runs' metrics side by side and as CSV
    imports        the one-work form, the user's works and their placements
    docs           the project's docs/*.md for the docs page, and documentation and source paths as links
    source         a source file of the checkout for the source page, never one outside its folders

Colours, chart specs and page data shaping live here, in the app (the ``papers`` package holds the catalog,
not its looks); links come from ``app.routes``. Chart specs are plain ECharts option dicts (JSON-compatible),
each returned with an ``ids`` list that maps the chart's data index back to a node id, work key or cell, so
a click in the browser can be turned into a page.
"""
