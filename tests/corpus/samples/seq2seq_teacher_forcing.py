"""LSTM encoder-decoder for translation, trained with teacher forcing (FP32)."""

import random

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

PAD, SOS, EOS = 0, 1, 2
device = torch.device("cuda")


class Encoder(nn.Module):
    def __init__(self, vocab_size, emb_dim=256, hidden=512):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=PAD)
        self.rnn = nn.LSTM(emb_dim, hidden, num_layers=2, dropout=0.2)

    def forward(self, src):
        _, (hidden, cell) = self.rnn(self.embedding(src))
        return hidden, cell


class Decoder(nn.Module):
    def __init__(self, vocab_size, emb_dim=256, hidden=512):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=PAD)
        self.rnn = nn.LSTM(emb_dim, hidden, num_layers=2, dropout=0.2)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, token, hidden, cell):
        output, (hidden, cell) = self.rnn(self.embedding(token.unsqueeze(0)), (hidden, cell))
        return self.out(output.squeeze(0)), hidden, cell


def collate(pairs):
    src = pad_sequence([torch.tensor(s) for s, _ in pairs], padding_value=PAD)
    trg = pad_sequence([torch.tensor(t) for _, t in pairs], padding_value=PAD)
    return src, trg


def train_batch(encoder, decoder, src, trg, optimizer, criterion, teacher_forcing=0.5):
    optimizer.zero_grad()
    src, trg = src.to(device), trg.to(device)  # expect: VP102[LOW]
    hidden, cell = encoder(src)
    token = trg[0]
    loss = 0
    for t in range(1, trg.size(0)):
        logits, hidden, cell = decoder(token, hidden, cell)
        loss += criterion(logits, trg[t])
        token = trg[t] if random.random() < teacher_forcing else logits.argmax(1)
    loss.backward()
    nn.utils.clip_grad_norm_(list(encoder.parameters()) + list(decoder.parameters()), 1.0)
    optimizer.step()
    return loss.item() / (trg.size(0) - 1)  # expect: VP201[MEDIUM]


def train(encoder, decoder, pairs, epochs=20, batch_size=64):
    loader = DataLoader(
        pairs, batch_size=batch_size, shuffle=True, collate_fn=collate,
        num_workers=2, pin_memory=True, persistent_workers=True,
    )
    params = list(encoder.parameters()) + list(decoder.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-3)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    for epoch in range(epochs):
        encoder.train()
        decoder.train()
        epoch_loss = 0.0
        for src, trg in loader:  # expect: VP306[INFO]
            epoch_loss += train_batch(encoder, decoder, src, trg, optimizer, criterion)
        print(f"epoch {epoch}: loss {epoch_loss / len(loader):.3f}")


@torch.no_grad()
def translate(encoder, decoder, src_ids, max_len=50):
    encoder.eval()
    decoder.eval()
    src = torch.tensor(src_ids).unsqueeze(1).to(device)
    hidden, cell = encoder(src)
    token = torch.tensor([SOS], device=device)
    result = []
    for _ in range(max_len):
        logits, hidden, cell = decoder(token, hidden, cell)
        token = logits.argmax(-1)
        next_id = token.item()  # expect: VP201[LOW]
        if next_id == EOS:
            break
        result.append(next_id)
    return result
