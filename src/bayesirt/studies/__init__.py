"""Studies: the only layer that knows configs and result folders.

One module (or subpackage) per study, all of one shape:

* ``conditions(config)``: the fits a config asks for (plain Python, cheap enough for
  Snakemake's parse time);
* ``run_fit(...)``: one fit from its inputs, returning a ``records.FitOutput`` that
  ``records.write_fit`` writes;
* ``aggregate(...)``: the fits of a study (or one design) into tidy tables;
* ``figures(...)``: its PNG figures.
"""
