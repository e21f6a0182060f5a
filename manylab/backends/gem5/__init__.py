"""The detailed tier: a point as a gem5 full-system run (gem5-configs/), and its stats read back."""
