"""Files: where a run may read and write (``containment``), bounded reads (``read``) and
atomic writes (``atomic``). The ground floor: nothing here knows about answers."""
