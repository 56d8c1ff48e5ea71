"""DCGAN training with FP16 autocast and one GradScaler shared by both optimizers."""

import torch
import torch.nn as nn
from torch.amp import GradScaler, autocast
from torchvision.utils import save_image


def train_gan(generator, discriminator, loader, epochs, latent_dim=100, device="cuda"):
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    scaler = GradScaler("cuda")
    bce = nn.BCEWithLogitsLoss()
    d_losses, g_losses = [], []
    fixed_noise = torch.randn(64, latent_dim, 1, 1, device=device)

    for epoch in range(epochs):
        for real, _ in loader:
            real = real.to(device, non_blocking=True)
            batch_size = real.size(0)
            noise = torch.randn(batch_size, latent_dim, 1, 1).to(device)  # expect: VP104[MEDIUM]
            ones = torch.ones(batch_size, device=device)
            zeros = torch.zeros(batch_size, device=device)

            opt_d.zero_grad(set_to_none=True)
            with autocast("cuda", dtype=torch.float16):
                fake = generator(noise)
                d_loss = bce(discriminator(real).view(-1), ones) + bce(discriminator(fake.detach()).view(-1), zeros)
            scaler.scale(d_loss).backward()
            nn.utils.clip_grad_norm_(discriminator.parameters(), 10.0)  # expect: VP302[HIGH]
            scaler.step(opt_d)

            opt_g.zero_grad(set_to_none=True)
            with autocast("cuda", dtype=torch.float16):
                g_loss = bce(discriminator(fake).view(-1), ones)
            scaler.scale(g_loss).backward()
            opt_g.step()  # expect: VP301[CRITICAL]
            scaler.update()

            d_value = d_loss.item()  # expect: VP201[MEDIUM]
            d_losses.append(d_value)  # expect: VP402[LOW]
            g_losses.append(g_loss)  # expect: VP402[HIGH]
            lr_factor = 0.5 if g_loss > 20.0 else 1.0  # expect: VP201[MEDIUM]
            for group in opt_g.param_groups:
                group["lr"] *= lr_factor

        with torch.no_grad():
            samples = generator(fixed_noise).float().cpu()
        save_image(samples, f"samples/epoch_{epoch:03d}.png", normalize=True)
    return d_losses, g_losses
