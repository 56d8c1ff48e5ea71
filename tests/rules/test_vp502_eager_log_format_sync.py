"""VP502: logging arguments that read a device tensor before the level check."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).parents[1] / "corpus" / "samples"


def test_debug_logged_finetune_sample(analyse):
    code = (SAMPLES / "debug_logged_finetune.py").read_text(encoding="utf-8")
    assert analyse(code, select=("VP502", "VP501", "VP201"), preview=True) == [
        ("VP501", 23, "LOW"),
        ("VP501", 24, "LOW"),
        ("VP502", 24, "MEDIUM"),
        ("VP501", 25, "LOW"),
        ("VP502", 25, "LOW"),
    ]


def test_eager_forms_by_level(analyse):
    code = """\
    import logging
    import torch
    log = logging.getLogger(__name__)
    device = torch.device("cuda")
    for step, (x, y) in enumerate(loader):
        out = model(x.to(device))
        loss = criterion(out, y.to(device))
        loss.backward()
        optimizer.step()
        log.debug(f"loss {loss.item():.4f}")
        log.info("loss %.4f", loss.item())
        log.log(logging.DEBUG, f"mean logit {out.mean()}")
    """
    assert analyse(code, select=("VP502",), preview=True) == [
        ("VP502", 10, "MEDIUM"),
        ("VP502", 11, "LOW"),
        ("VP502", 12, "MEDIUM"),
    ]


def test_lazy_guarded_epoch_and_host_values_stay_quiet(analyse):
    code = """\
    import logging
    import torch
    logger = logging.getLogger(__name__)
    device = "cuda"
    for epoch in range(10):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
            logger.debug("loss %s", loss)
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(f"loss {loss.item():.4f}")
            if args.debug:
                logger.debug(f"loss {loss}")
            logger.debug(f"step {step} of epoch {epoch}")
        logger.info(f"epoch {epoch} last loss {loss.item():.4f}")
    """
    assert analyse(code, select=("VP502",), preview=True) == []
    cpu_only = """\
    import logging
    import torch
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        logging.debug(f"loss {loss.item()}")
    """
    assert analyse(cpu_only, select=("VP502",), preview=True) == []
