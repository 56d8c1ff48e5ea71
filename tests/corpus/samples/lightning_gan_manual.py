"""A GAN as a LightningModule with manual optimisation: two optimizers stepped by hand.

With `automatic_optimization = False`, `self.manual_backward` and the LightningOptimizer's
`step()` go through Lightning's precision plugin, which owns any loss scaling.
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader


class LitGAN(L.LightningModule):
    def __init__(self, generator, discriminator, latent_dim=128, lr=2e-4):
        super().__init__()
        self.automatic_optimization = False
        self.generator = generator
        self.discriminator = discriminator
        self.latent_dim = latent_dim
        self.lr = lr

    def training_step(self, batch, batch_idx):
        real, _ = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(real.size(0), self.latent_dim, device=self.device)

        self.toggle_optimizer(opt_d)
        fake = self.generator(z).detach()
        d_real = self.discriminator(real)
        d_fake = self.discriminator(fake)
        d_loss = (
            F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real))
            + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
        ) / 2
        opt_d.zero_grad(set_to_none=True)
        self.manual_backward(d_loss)
        self.clip_gradients(opt_d, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        self.toggle_optimizer(opt_g)
        g_out = self.discriminator(self.generator(z))
        g_loss = F.binary_cross_entropy_with_logits(g_out, torch.ones_like(g_out))
        opt_g.zero_grad(set_to_none=True)
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)

        self.log_dict({"d_loss": d_loss, "g_loss": g_loss}, prog_bar=True)  # expect: VP501[LOW]

    def on_train_epoch_end(self):
        sched_g, sched_d = self.lr_schedulers()
        sched_g.step()
        sched_d.step()

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=self.lr, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=self.lr, betas=(0.5, 0.999))
        sched_g = torch.optim.lr_scheduler.ExponentialLR(opt_g, gamma=0.99)
        sched_d = torch.optim.lr_scheduler.ExponentialLR(opt_d, gamma=0.99)
        return [opt_g, opt_d], [sched_g, sched_d]


def faces_loader(dataset, batch_size=128):
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=0, drop_last=True)  # expect: VP103[LOW]


def sample_grid(generator, n=64, latent_dim=128, device="cuda"):
    generator.eval()
    z = torch.randn(n, latent_dim).to(device)
    with torch.no_grad():
        images = generator(z)
    return (images.clamp(-1, 1) + 1) / 2


if __name__ == "__main__":
    from torchvision.datasets import CelebA

    from dcgan import build_discriminator, build_generator

    trainer = L.Trainer(max_epochs=25, precision="16-mixed", accelerator="gpu", devices=1)
    model = LitGAN(build_generator(), build_discriminator())
    trainer.fit(model, faces_loader(CelebA("data", download=True)))
