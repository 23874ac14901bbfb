"""The application services: the write pipeline, upkeep operations, queries and recall."""
