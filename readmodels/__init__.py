"""Storage of projected state and the questions it answers (the current graph, full text, vectors)."""
