"""The comparison grid: algorithms under one model, one warm start, one budget and several seeds.

    grid      the grid file (``Grid``, ``GRIDS``), cell ids, what the recipe gives a cell and a warm start
    folder    the grid folder (``GridDir``), writing records (``atomic_json``), reading finished cells, a record's
              budget status (``budget_status``) and diagnostics (``cell_diagnostics``)
    warm      an environment's warm start (the trainer's ``sft.warm_start``) and the restore of its weights
    heldout   held-out success: the untrained model's, a warm start's, the record every stage stores
    training  one training run (a cell's or a trial's) and its record's work part: budget, diagnostics
    trial     the learning-rate trials, scored on validation, and the choice
    cell      a cell: trained, then scored once on the test problems
    passk     pass@k of the models the grid names in advance
    driver    validate, sweep, run (every missing stage, each in its own process), status
    sweep     issue 65: a sweep grid (one run option over values, each point a grid of its own): run, status,
              export, and its curve (``load_sweep``, ``sweep_for_node``: what the scaling nodes' pages draw)
    forms     issue 65: one task in two forms (a sweep over implementation, ``prelim.yaml``) read back per form:
              each seed's training-reward curve, held-out before and after (what the prelim nodes' pages draw)
    provenance  what a record stores to be reproduced: commit, package versions, threads, load, steal
    board     statistics over records: leaderboard, progression, pass@k comparison, verdicts (pure functions)
    report    the text and Markdown reports, the pass@k sentence, and ``export`` (the small files, to ship)
    results   what the explorer reads (``GridResults``, ``available_results``, ``claims_report``): the app's only import
    claims    issue 61: the claims file, each claim's two arms as grids, per-seed summaries, verdicts (pure functions)
    claims_run  the claims' paired experiments: a warm start per seed shared by both arms, each arm in its own
              process, resumable; status and export
    cli       ``python -m lab.compare run | status | report | passk | export | claims`` (``main``; a sweep grid's
              commands go to ``sweep``)

Import from the module that owns a name; this package imports none of them. It sits in ``lab`` rather than
``reference_impls`` because it reads the Lab's recipes; imports run app -> lab -> reference_impls.
"""
