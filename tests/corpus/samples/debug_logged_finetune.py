"""Fine-tuning with verbose debug logging left in the step loop (BF16)."""

import logging

import torch

logger = logging.getLogger("finetune")


def finetune(model, loader, optimizer, epochs, device="cuda"):
    model.to(device)
    for epoch in range(epochs):
        for step, (inputs, targets) in enumerate(loader):
            inputs = inputs.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                outputs = model(inputs)
                loss = torch.nn.functional.cross_entropy(outputs, targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            logger.debug("step %d loss %s grad norm %s", step, loss, grad_norm)  # expect: VP501[LOW]
            logger.debug("grad norm %s" % grad_norm)  # expect: VP502[MEDIUM], VP501[LOW]
            logging.warning("loss now {}".format(loss.detach()))  # expect: VP502[LOW], VP501[LOW]
            if step % 200 == 0:
                logger.debug(f"step {step} logits std {outputs.float().std():.3f}")
        logger.info("epoch %d done", epoch)
