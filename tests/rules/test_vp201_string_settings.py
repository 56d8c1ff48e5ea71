"""VP201: a comparison with a string is a setting's test, never an element-wise tensor test, even
when the setting's name reads like a tensor's (`args.optim.loss == "l1"`)."""

from __future__ import annotations

SELECT = ("VP201",)


def test_a_setting_compared_with_a_string_is_no_device_read(analyse):
    code = """\
    import torch
    import torch.nn.functional as F

    def run(args, model, optimizer, loader):
        for x, y in loader:
            estimate = model(x.cuda())
            if args.optim.loss == 'l1':
                loss = F.l1_loss(estimate, y)
            elif loss_name != f"{prefix}mse":
                loss = F.mse_loss(estimate, y)
            loss.backward()
            optimizer.step()
            if loss > 10:
                print("large")
    """
    # Only the tensor compared with a number is read on the host.
    assert analyse(code, select=SELECT) == [("VP201", 13, "MEDIUM")]
