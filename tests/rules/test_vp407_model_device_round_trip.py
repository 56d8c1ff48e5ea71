"""VP407: a model moved to the host and back inside one step; one-way and periodic moves are fine."""

from __future__ import annotations

SELECT = ("VP407",)


def test_a_parameter_server_worker_ships_the_whole_model_every_step(analyse):
    code = """\
    import torch

    class Worker:
        def train(self, server):
            m = server.get_model().cuda()
            for inputs, labels in self.batches():
                self.loss_fn(m(inputs), labels).backward()
                grads = [p.grad for p in m.cpu().parameters()]
                m = server.update_and_fetch(grads).cuda()
    """
    assert analyse(code, select=SELECT) == [("VP407", 8, "HIGH")]


def test_an_offloaded_frozen_encoder_in_a_step_method(analyse):
    code = """\
    import torch

    class Trainer:
        def step(self, batch):
            self.text_encoder.to(self.device)
            with torch.no_grad():
                context = self.text_encoder(batch["ids"])
            self.text_encoder.to(torch.device("cpu"))
            loss = self.unet_model(batch["latents"], context).mean()
            loss.backward()
            self.optimizer.step()

        def fit(self, loader):
            for batch in loader:
                self.step(batch)
    """
    assert analyse(code, select=SELECT) == [("VP407", 8, "HIGH")]


def test_one_way_periodic_and_tensor_moves_stay_quiet(analyse):
    code = """\
    import torch
    model = model.cuda()
    for step, (x, y) in enumerate(loader):
        x = x.cpu().cuda()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        if step % 5000 == 0:
            model.cpu()
            torch.save(model.state_dict(), "ckpt.pt")
            model.cuda()
        ema_model.to(torch.float16)
        ema_model.to(device)
    for epoch in range(3):
        model.cpu()
        evaluate_on_host(model)
        model.cuda()
    model.to("cpu")
    """
    assert analyse(code, select=SELECT) == []


def test_the_round_trip_replaces_the_sync_finding_on_the_same_call(analyse):
    code = """\
    import torch
    for inputs, labels in loader:
        loss_fn(m(inputs), labels).backward()
        grads = [p.grad for p in m.cpu().parameters()]
        m = server.exchange(grads).cuda()
    """
    assert analyse(code, select=("VP201", "VP407")) == [("VP407", 4, "HIGH")]
