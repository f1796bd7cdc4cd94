"""The comparison grid: algorithms under one model, one warm start, one budget and several seeds.

    grid      the grid file (``Grid``, ``GRIDS``), cell ids, what the recipe gives a cell and a warm start
    folder    the grid folder (``GridDir``), writing records (``atomic_json``), reading finished cells, a record's
              budget status (``budget_status``) and diagnostics (``cell_diagnostics``)
    stages    the stages (warm start, held-out of the references, learning-rate trial, cell, pass@k) and the
              driver (run, status)
    provenance  what a record stores to be reproduced: commit, package versions, threads, load, steal
    board     statistics over records: leaderboard, progression, pass@k comparison, verdicts (pure functions)
    report    the text and Markdown reports, the pass@k sentence, and ``export`` (the small files, to ship)
    results   what the explorer reads (``GridResults``, ``available_results``): the app's only import
    cli       ``python -m lab.compare run | status | report | passk | export`` (``main``)

Import from the module that owns a name; this package imports none of them. It sits in ``lab`` rather than
``reference_impls`` because it reads the Lab's recipes; imports run app -> lab -> reference_impls.
"""
