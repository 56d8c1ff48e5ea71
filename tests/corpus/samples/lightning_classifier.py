"""An image classifier as a LightningModule (automatic optimisation) with its DataModule.

Lightning calls these hooks; nothing in this file loops over batches, so under the hot-path
model of RULES.md every hook runs `once` as far as the analysed code shows.
"""

import lightning as L
import torch
import torch.nn.functional as F
import torchmetrics
from torch.utils.data import DataLoader, random_split


class LitClassifier(L.LightningModule):
    def __init__(self, backbone, num_classes=10, lr=1e-3):
        super().__init__()
        self.save_hyperparameters(ignore=["backbone"])
        self.backbone = backbone
        self.head = torch.nn.Linear(backbone.out_features, num_classes)
        self.val_acc = torchmetrics.Accuracy(task="multiclass", num_classes=num_classes)
        self.best_val_loss = float("inf")
        self.val_losses = []

    def forward(self, x):
        return self.head(self.backbone(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean().item()  # unscored: VP201
        self.log("train_loss", loss, prog_bar=True)  # expect: VP501[LOW]
        self.log("train_acc", acc)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.val_acc.update(logits, y)
        self.val_losses.append(loss)
        self.log("val_loss", loss, sync_dist=True)

    def on_validation_epoch_end(self):
        mean_loss = torch.stack(self.val_losses).mean()
        self.val_losses.clear()
        if mean_loss.item() < self.best_val_loss:
            self.best_val_loss = mean_loss.item()
        self.log("val_acc", self.val_acc.compute(), prog_bar=True)
        self.val_acc.reset()

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.05)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=self.trainer.max_epochs)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "epoch"}}


class ImageDataModule(L.LightningDataModule):
    def __init__(self, dataset, batch_size=64, workers=8):
        super().__init__()
        self.dataset = dataset
        self.batch_size = batch_size
        self.workers = workers

    def setup(self, stage=None):
        n_val = int(len(self.dataset) * 0.1)
        self.train_set, self.val_set = random_split(self.dataset, [len(self.dataset) - n_val, n_val])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, num_workers=8)  # expect: VP103[LOW]

    def val_dataloader(self):
        return DataLoader(
            self.val_set,
            batch_size=2 * self.batch_size,
            num_workers=self.workers,
            pin_memory=True,
            persistent_workers=self.workers > 0,
        )

    def test_dataloader(self):
        return DataLoader(self.val_set, batch_size=256, num_workers=4, persistent_workers=True)
