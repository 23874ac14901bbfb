"""Storage of projected state and the questions it answers: graph, full text, vectors."""
