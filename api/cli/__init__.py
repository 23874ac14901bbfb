"""The apexmem command line."""

from apexmem.cli.main import cli, main

__all__ = ["cli", "main"]
