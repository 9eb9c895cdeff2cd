"""The version of llmfix (``llmfix.__version__``), on the ground floor so that reporters
and the CLI read it without importing the package face."""

__version__ = "0.1.0"
