"""The dynamic harness: measures speed, peak memory, accuracy and host syncs per precision mode.

Importing this package does not import torch; `results` is the light contract the reports read.
"""
