"""Many answers at once: ``core`` checks one item, ``pool`` runs many (in parallel when it
pays, in input order), ``judge`` decides what fails a run (with ``gate``) and tallies it,
``hints`` explains fields that name nothing, ``writers`` writes repaired copies and result
rows, ``columns`` works on Arrow batches and ``responses`` reads a whole API response."""
