"""BF16 autocast for a vision transformer: no GradScaler needed, and where regions go wrong."""

import torch
import torch.nn.functional as F


class StableLogSumExp(torch.autograd.Function):
    """Log-sum-exp computed in FP32 even inside an autocast region."""

    @staticmethod
    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)  # expect: VP308[LOW]
    def forward(ctx, x):
        peak = x.amax(dim=-1, keepdim=True)
        out = peak + (x - peak).exp().sum(dim=-1, keepdim=True).log()
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    @torch.cuda.amp.custom_bwd  # expect: VP308[LOW]
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        return grad * (x - out).exp()


def train_bf16(model, loader, optimizer, epochs, device="cuda"):
    for epoch in range(epochs):
        epoch_loss = 0.0
        for images, targets in loader:
            images = images.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(images), targets, label_smoothing=0.1)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            epoch_loss += loss  # expect: VP401[LOW]  (the backward above frees the activations)
        print(f"epoch {epoch}: loss {epoch_loss.item() / len(loader):.4f}")


def train_bf16_wrapped_backward(model, loader, opt, device="cuda"):
    for images, targets in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(images.to(device, non_blocking=True))
            loss = F.cross_entropy(logits, targets.to(device, non_blocking=True))
            loss.backward()  # expect: VP307[LOW]
        opt.step()
        opt.zero_grad()


def distillation_loss(student, teacher, head, images, temperature=2.0):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        features = student.backbone(images)
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: VP307[LOW]
            logits = head(features)
        with torch.no_grad():
            target_logits = teacher(images)
        with torch.autocast("cuda", enabled=False):
            # KL on soft targets is computed in FP32 on purpose: an opt-out, not a redundant region.
            student_lse = StableLogSumExp.apply(logits.float() / temperature)
            teacher_lse = StableLogSumExp.apply(target_logits.float() / temperature)
            student_logp = logits.float() / temperature - student_lse
            teacher_logp = target_logits.float() / temperature - teacher_lse
            kl = F.kl_div(student_logp, teacher_logp, log_target=True, reduction="batchmean")
    return kl * temperature**2


def predict(model, images):
    model.eval()
    with torch.no_grad(), torch.cuda.amp.autocast(dtype=torch.bfloat16):  # expect: VP308[LOW]
        return model(images).float().softmax(-1)
