"""Source snippets several CLI test modules run verify-perf on."""

# A training loop with one blocking per-step `synchronize()` (VP203 HIGH on line 7).
SYNC = (
    "import torch\n\n"
    "for batch in loader:\n"
    "    loss = model(batch.cuda())\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    torch.cuda.synchronize()\n"
)
