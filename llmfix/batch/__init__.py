"""Many answers at once: ``core`` checks items (in parallel when it pays, in input order),
``gate`` decides what fails a run, ``hints`` explains fields that name nothing,
``writers`` writes repaired copies and result rows, ``columns`` works on Arrow batches and
``responses`` reads a whole API response."""
