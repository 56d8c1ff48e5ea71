"""VP501 and VP201 on logging lines: one finding per problem."""

from __future__ import annotations


def test_explicit_reads_are_vp201_and_tensors_handed_to_loggers_are_vp501(analyse):
    code = """\
    import torch
    import logging
    logger = logging.getLogger(__name__)
    device = "cuda"
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        logger.info(f"loss {loss.item():.3f}")
        logger.info("loss %s", loss)
        progress.set_postfix(loss=loss)
        writer.add_scalar("loss", "{}".format(loss), step)
    """
    assert analyse(code, select=("VP201", "VP501")) == [
        ("VP201", 10, "MEDIUM"),
        ("VP501", 11, "LOW"),
        ("VP501", 12, "LOW"),
        ("VP501", 13, "LOW"),
    ]


def test_logging_helpers_and_per_epoch_logging_are_not_reported(analyse):
    code = """\
    import torch

    def log_metrics(writer, loss, step):
        writer.add_scalar("loss", loss, step)

    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            if step % 50 == 0:
                log_metrics(writer, loss, step)
        writer.add_scalar("epoch_loss", loss, epoch)
    """
    assert analyse(code, select=("VP501",)) == []


def test_loggers_are_the_ones_vp502_knows(analyse):
    """VP501 and VP502 share one recogniser: a private `_log` owner and `logger.log(level, ...)` too."""
    code = """\
    import torch
    import logging
    device = "cuda"

    class Trainer:
        def fit(self, loader):
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = self.criterion(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                self._log.warning("loss %s", loss)
                self.logger.log(logging.INFO, "loss %s", loss)
                self.catalog.info("loss %s", loss)
    """
    assert analyse(code, select=("VP501",)) == [
        ("VP501", 12, "LOW"),
        ("VP501", 13, "LOW"),
    ]
