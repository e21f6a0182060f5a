"""Hybrid DRAM/PCM page-placement policy study: trace-driven LRU, 2Q, the paper's
foreground/background policy and CLOCK-DWF.

The fast core is the Rust binary ``manylab-pcmsim`` (``pcmsim/``); this package finds and runs
it, shapes its JSON-lines output into a results table, and draws the plots and the report.

Modules: ``engine`` (find/run the binary), ``traceio`` (traces to and from the binary, which
owns the formats), ``capture`` (guest-recorded page requests -> trace), ``sweep``
(sweep config, results table), ``plots``, ``paper`` (the paper's published numbers),
``report`` (Markdown), ``cli`` (the ``manylab pcm-policy`` subcommand).
"""
