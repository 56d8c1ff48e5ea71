"""Fine-tuning loop with TensorBoard, Weights & Biases and a tqdm progress bar (FP32)."""

import logging

import torch
import wandb
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from train_utils import batch_accuracy, count_parameters, gpu_memory_used_mb, log_scalars, move_batch, summarize

logger = logging.getLogger(__name__)


def fit(model, loader, optimizer, criterion, epochs, device, log_every=50):
    writer = SummaryWriter("runs/finetune")
    wandb.init(project="finetune", config={"epochs": epochs, "params": count_parameters(model)})
    global_step = 0
    step_losses = []
    for epoch in range(epochs):
        model.train()
        progress = tqdm(loader, desc=f"epoch {epoch}")
        for inputs, targets in progress:  # expect: VP306[INFO]
            inputs, targets = move_batch(inputs, targets, device)
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            global_step += 1

            writer.add_scalar("train/loss", loss, global_step)  # expect: VP501[LOW]
            wandb.log({"train/loss": loss, "epoch": epoch}, step=global_step)  # expect: VP501[LOW]
            progress.set_postfix(loss=loss.item())  # expect: VP201[MEDIUM]
            step_losses.append(loss.item())  # expect: VP202[LOW], VP402[LOW]
            acc = batch_accuracy(outputs, targets)
            if global_step % log_every == 0:
                logger.info("step %d loss %s acc %.3f", global_step, loss, acc)
                log_scalars(writer, {"train/acc": acc}, global_step)
                log_scalars(writer, {"gpu/memory_mb": gpu_memory_used_mb()}, global_step)
        logger.info("epoch %d finished, last loss %s", epoch, loss)
        writer.add_scalar("train/epoch_loss", loss, epoch)
    writer.close()
    return summarize(step_losses)
