"""VP307: regions end with their `with` and at function boundaries; only redundant nesting is reported."""

from __future__ import annotations


def test_backward_after_the_region_or_in_a_nested_function_is_fine(analyse):
    code = """\
    import torch
    with torch.autocast("cuda"):
        loss = model(x).sum()
        def later():
            loss.backward()
    loss.backward()
    """
    assert analyse(code, select=("VP307",)) == []


def test_deprecated_and_aliased_regions_count(analyse):
    code = """\
    import torch
    from torch.cuda.amp import autocast as ac
    with ac():
        with torch.autocast("cuda", dtype=torch.half):
            loss = model(x).sum()
        loss.backward()
    """
    assert analyse(code, select=("VP307",)) == [("VP307", 4, "LOW"), ("VP307", 6, "LOW")]


def test_nested_regions_that_change_something_or_are_decided_at_run_time_are_fine(analyse):
    code = """\
    import torch
    with torch.autocast("cuda", dtype=torch.bfloat16):
        with torch.autocast("cuda", dtype=torch.float16):
            a = model(x)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=flag):
            b = model(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            c = model(x)
    """
    assert analyse(code, select=("VP307",)) == []


def test_backward_in_a_disabled_region_nested_in_an_enabled_one_is_fine(analyse):
    code = """\
    import torch
    with torch.autocast("cuda"):
        loss = model(x).sum()
        with torch.autocast("cuda", enabled=False):
            loss.backward()
    """
    assert analyse(code, select=("VP307",)) == []
