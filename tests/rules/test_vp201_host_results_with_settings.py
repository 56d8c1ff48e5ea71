"""VP201: a torch function of host tensors gives a host tensor, whatever settings it is passed
(`dim=1`, `keepdim=True`, `dtype=torch.float16`): reading its result waits for nothing."""

from __future__ import annotations

SELECT = ("VP201",)


def test_results_of_host_tensors_with_keyword_settings_stay_on_the_host(analyse):
    code = """\
    import torch
    import torch.nn.functional as F

    def infer(model, loader):
        model.cuda()
        model.eval()
        with torch.no_grad():
            for x in loader:
                features = model(x.cuda(non_blocking=True))
                probs = F.softmax(features, dim=1).cpu()
                scores, predictions = torch.max(probs, dim=1)
                top = torch.topk(probs, k=3, dim=-1, largest=True).values
                half = torch.sum(probs, dim=1, dtype=torch.float16)
                out = [s.item() for s in scores] + top.tolist() + half.tolist()
                still = torch.max(features, dim=1).values.tolist()
    """
    # Only the softmax's `.cpu()` (the one wait) and the device result's `.tolist()` read the device.
    assert analyse(code, select=SELECT) == [("VP201", 10, "LOW"), ("VP201", 15, "LOW")]
