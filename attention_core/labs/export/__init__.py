"""Taking the numbers away: .npz and CSV files, a numpy-only script, and the settings as a URL.

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config())
    >>> arrays = load_npz(npz_bytes(trace))
    >>> bool((arrays["weights"] == trace["weights"].value).all())
    True
    >>> config_from_query(config_to_query(Config(d_k=6)))[0] == Config(d_k=6)
    True

Each way out has its module:

    link              the share link: config_to_query, config_from_query
    arrays            the step symbols, .npz (npz_bytes, load_npz), CSV (step_csv, csv_files, csv_zip …)
    script            python_script: the runnable numpy script, its docstring and helpers
    script_base       the script being written: settings, parameters drawn or written in
    script_inputs     the script's X, Q, K, V and RoPE
    script_attention  the script's scores, ALiBi, mask, weights, context and output
"""
from __future__ import annotations

from .arrays import (HEAD_COLUMN, MANIFEST, PER_HEAD, STEP_SYMBOLS, array_from_csv, csv_files, csv_names,
                            csv_readme, csv_zip, load_npz, npz_bytes, step_csv, step_symbol)
from .link import CHOICES, FLOATS, INTS, QUERY_FIELDS, config_from_query, config_to_query
from .script import python_script

__all__ = ["config_to_query", "config_from_query", "QUERY_FIELDS", "CHOICES", "INTS", "FLOATS",
           "npz_bytes", "load_npz", "MANIFEST", "step_csv", "array_from_csv", "csv_names", "csv_files", "csv_readme",
           "csv_zip", "HEAD_COLUMN", "STEP_SYMBOLS", "PER_HEAD", "step_symbol", "python_script"]
