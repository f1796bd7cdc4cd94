"""The Lab: the catalog of runnable implementations and presets for the explorer, and the run manager
that trains them as separate processes. Sits between the app and ``reference_impls``::

    app -> lab -> reference_impls -> papers -> taxonomy
"""
