"""Reference AMP training: a small decoder-only transformer LM on a synthetic task, written
the way verify-perf's rules recommend. Run it with `python -m verifier.reference_impl`, or
as DDP with `torchrun --nproc-per-node N -m verifier.reference_impl`."""
