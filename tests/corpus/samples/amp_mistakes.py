"""Mixed-precision segmentation training as first written, before review, next to the fixed loop."""

import torch
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_

device = "cuda"
IGNORE = 255


def train_epoch(model, loader, optimizer, scaler, max_norm=1.0):
    model.train()
    for images, masks in loader:
        images = images.to(device, non_blocking=True)
        masks = masks.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(images)
            loss = F.cross_entropy(logits, masks, ignore_index=IGNORE)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        clip_grad_norm_(model.parameters(), max_norm)  # expect: VP302[HIGH]
        scaler.step(optimizer)
        scaler.update()


def finetune_decoder(model, loader, optimizer, scaler):
    """Only the decoder is trained; the encoder stays frozen."""
    model.encoder.requires_grad_(False)
    for images, masks in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(images.to(device, non_blocking=True))
            loss = F.cross_entropy(logits, masks.to(device, non_blocking=True), ignore_index=IGNORE)
        scaler.scale(loss).backward()
        optimizer.step()  # expect: VP301[CRITICAL]
        scaler.update()  # expect: VP304[HIGH]
        optimizer.zero_grad(set_to_none=True)


def train_after_amp_port(model, loader, optimizer, scaler):
    for images, masks in loader:
        images, masks = images.cuda(), masks.cuda()  # expect: VP102[LOW]
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(images)
            loss = F.cross_entropy(logits, masks, ignore_index=IGNORE)
        loss.backward()  # expect: VP303[HIGH]
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)


def train_epochs(model, loader, optimizer, scaler, epochs):
    for epoch in range(epochs):
        for images, masks in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                logits = model(images.to(device, non_blocking=True))
                loss = F.cross_entropy(logits, masks.to(device, non_blocking=True), ignore_index=IGNORE)
            scaler.scale(loss).backward()
            scaler.step(optimizer)  # expect: VP304[HIGH]
            optimizer.zero_grad(set_to_none=True)
        scaler.update()


def train_skipping_overflow(model, loader, optimizer, scaler):
    for images, masks in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(images.to(device, non_blocking=True))
            loss = F.cross_entropy(logits, masks.to(device, non_blocking=True), ignore_index=IGNORE)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        norm = clip_grad_norm_(model.parameters(), 1.0)
        if torch.isfinite(norm):  # expect: VP305[LOW]
            scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)


def train_epoch_reviewed(model, loader, optimizer, scaler=None, max_norm=1.0):
    """The fixed loop: AMP optional, unscale before clipping, one update per step."""
    model.train()
    for images, masks in loader:
        images = images.to(device, non_blocking=True)
        masks = masks.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=scaler is not None):
            loss = F.cross_entropy(model(images), masks, ignore_index=IGNORE)
        optimizer.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
