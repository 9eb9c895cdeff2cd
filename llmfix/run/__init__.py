"""One command's run: its settings from flags, environment and config files (``settings``,
``config_file``, ``trust``, ``ceilings``), and the runs themselves (``repair``, ``jsonl``,
``llm``)."""
