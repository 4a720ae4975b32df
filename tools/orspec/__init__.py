"""orspec: the schema-first toolchain for the Open Responses specification."""

__version__ = "0.1.0"
