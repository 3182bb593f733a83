"""The training benchmark: a standalone worker in the target environment, and everything that
starts it, reads its stream, compares its results with published numbers and shows them."""
