"""Experiment trackers (MLflow, Weights & Biases): optional sinks that receive what the run folder receives, from a
background thread, so that a tracker that is down or slow never stops or slows training."""
