"""Word-level LSTM language model with truncated backpropagation through time (FP32)."""

import math
import time

import torch
import torch.nn as nn


class LSTMModel(nn.Module):
    def __init__(self, ntokens, emb=650, hidden=650, layers=2, dropout=0.5):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntokens, emb)
        self.rnn = nn.LSTM(emb, hidden, layers, dropout=dropout)
        self.decoder = nn.Linear(hidden, ntokens)
        self.layers, self.hidden = layers, hidden

    def forward(self, tokens, state):
        output, state = self.rnn(self.drop(self.encoder(tokens)), state)
        return self.decoder(self.drop(output)), state

    def init_state(self, batch_size):
        weight = next(self.parameters())
        shape = (self.layers, batch_size, self.hidden)
        return weight.new_zeros(shape), weight.new_zeros(shape)


def detach_state(state):
    return tuple(s.detach() for s in state)


def batchify(tokens, batch_size, device):
    # The whole corpus goes to the GPU once; chunks are views of it.
    columns = tokens.size(0) // batch_size
    return tokens[: columns * batch_size].view(batch_size, -1).t().contiguous().to(device)


def get_chunk(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def train_epoch(model, train_data, bptt, lr, clip, criterion, ntokens, log_interval=200):
    # TODO: try bfloat16 autocast once the fused LSTM kernels are validated.
    model.train()
    total_loss = 0.0
    started = time.time()
    state = model.init_state(train_data.size(1))
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):  # expect: VP306[INFO]
        data, targets = get_chunk(train_data, i, bptt)
        state = detach_state(state)
        for p in model.parameters():
            p.grad = torch.zeros_like(p)  # expect: VP405[LOW]
        output, state = model(data, state)
        loss = criterion(output.view(-1, ntokens), targets)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
        total_loss += loss.item()  # expect: VP201[MEDIUM]
        if batch % log_interval == 0 and batch > 0:
            cur_loss = total_loss / log_interval
            ms = (time.time() - started) * 1000 / log_interval
            print(f"| {batch:5d} batches | lr {lr:.2f} | {ms:5.1f} ms/batch | ppl {math.exp(cur_loss):8.2f}")
            total_loss, started = 0.0, time.time()


def evaluate(model, data_source, bptt, criterion, ntokens, batch_size=10):
    model.eval()
    total_loss = 0.0
    state = model.init_state(batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_chunk(data_source, i, bptt)
            output, state = model(data, state)
            total_loss += len(data) * criterion(output.view(-1, ntokens), targets).item()  # expect: VP201[LOW]
    return total_loss / (len(data_source) - 1)


def run(model, train_data, val_data, ntokens, epochs=40, lr=20.0, bptt=35, clip=0.25):
    criterion = nn.CrossEntropyLoss()
    best_val = None
    for epoch in range(1, epochs + 1):
        train_epoch(model, train_data, bptt, lr, clip, criterion, ntokens)
        val_loss = evaluate(model, val_data, bptt, criterion, ntokens)
        print(f"end of epoch {epoch:3d} | valid ppl {math.exp(val_loss):8.2f}")
        if best_val is None or val_loss < best_val:
            torch.save(model.state_dict(), "lstm_lm.pt")
            best_val = val_loss
        else:
            lr /= 4.0
    return best_val
