"""The apexmem command line."""
