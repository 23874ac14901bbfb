"""Pure folds: evolve(state, event) for write-side streams (read-model projectors come later)."""
