"""BERT-style sequence classification fine-tune with a hand-written loop (no Trainer)."""

import torch
from accelerate import Accelerator
from torch.optim import AdamW
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, get_linear_schedule_with_warmup

device = "cuda" if torch.cuda.is_available() else "cpu"


def finetune(train_set, eval_set, model_name="bert-base-uncased", epochs=3, accum_steps=2):
    model = AutoModelForSequenceClassification.from_pretrained(model_name, num_labels=2).to(device)
    train_loader = DataLoader(
        train_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True, persistent_workers=True
    )
    eval_loader = DataLoader(eval_set, batch_size=64, num_workers=4, pin_memory=True)  # expect: VP103[LOW]
    optimizer = AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)
    lr_scheduler = get_linear_schedule_with_warmup(
        optimizer, num_warmup_steps=500, num_training_steps=epochs * len(train_loader) // accum_steps
    )
    scaler = torch.amp.GradScaler()  # expect: VP308[LOW]
    best_acc = 0.0

    for epoch in range(epochs):
        model.train()
        for step, batch in enumerate(train_loader):
            batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                outputs = model(**batch)
                loss = outputs.loss / accum_steps
            loss.backward()  # expect: VP303[HIGH]
            if (step + 1) % accum_steps == 0:
                scaler.step(optimizer)
                scaler.update()
                lr_scheduler.step()
                optimizer.zero_grad(set_to_none=True)

        model.eval()
        correct = torch.zeros((), device=device)
        with torch.no_grad():
            for batch in eval_loader:
                batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
                logits = model(**batch).logits
                correct += (logits.argmax(-1) == batch["labels"]).sum()
        acc = correct.item() / len(eval_set)
        print(f"epoch {epoch}: eval accuracy {acc:.4f}")
        if acc > best_acc:
            best_acc = acc
            model.save_pretrained(f"checkpoints/epoch-{epoch}")
    return best_acc


def finetune_with_accelerate(train_set, model_name="bert-base-uncased", epochs=3, log_every=50):
    """The same fine-tune on Hugging Face Accelerate: it owns precision, scaling and devices."""
    accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2)
    model = AutoModelForSequenceClassification.from_pretrained(model_name, num_labels=2)
    loader = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True, persistent_workers=True)
    optimizer = AdamW(model.parameters(), lr=2e-5)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    completed = 0
    for epoch in range(epochs):
        model.train()
        for batch in loader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    completed += 1
                optimizer.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients and completed % log_every == 0:
                mean_loss = accelerator.gather(loss.detach()).mean().item()
                accelerator.print(f"epoch {epoch} update {completed}: loss {mean_loss:.4f}")
    accelerator.wait_for_everyone()
    return accelerator.unwrap_model(model)
