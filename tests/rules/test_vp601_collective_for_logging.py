"""VP601: a per-step collective whose result is only logged, or read as a flag; quiet when the
result feeds the computation, under a log interval, once per epoch, in evaluation and in tests."""

from __future__ import annotations

PRETRAIN = """\
import torch
import torch.distributed as dist


def train(model, loader, optimizer, accum, ddp, device):
    for step in range(num_steps):
        mean_loss = 0.0
        for micro_step in range(accum):
            x, y = loader.next_batch()
            loss = model(x.to(device), y.to(device)) / accum
            mean_loss += loss.detach()
            loss.backward()
        if ddp:
            dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        mean_loss = mean_loss.item()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step} | loss {mean_loss:.4f}")
        with open("log.txt", "a") as f:
            f.write("%d %f\\n" % (step, mean_loss))
"""


def test_loss_reduced_every_step_only_to_be_printed(analyse):
    assert analyse(PRETRAIN, select=("VP601",)) == [("VP601", 14, "MEDIUM")]


def test_a_helper_that_reduces_and_returns_a_python_number_every_step(analyse):
    code = """\
    import torch
    import torch.distributed as dist


    def global_mean(value):
        reduced = torch.tensor(value, device="cuda")
        dist.all_reduce(reduced)
        reduced /= dist.get_world_size()
        return reduced.item()


    for step, (x, y) in enumerate(train_loader):
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        meter.update(loss=global_mean(loss.detach()))
    """
    assert analyse(code, select=("VP601",)) == [("VP601", 7, "MEDIUM")]


def test_accelerate_gather_then_item_and_a_stop_flag(analyse):
    code = """\
    import torch
    import torch.distributed as dist

    for step, batch in enumerate(train_dataloader):
        outputs = model(**batch)
        accelerator.backward(outputs.loss)
        optimizer.step()
        optimizer.zero_grad()
        step_loss = accelerator.gather(outputs.loss.detach()).mean().item()
        progress_bar.set_postfix(loss=step_loss)
        stop = torch.tensor(int(time_is_up()), device=accelerator.device)
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            break
    """
    assert analyse(code, select=("VP601",)) == [("VP601", 9, "MEDIUM"), ("VP601", 12, "MEDIUM")]


def test_results_that_feed_the_computation_stay_quiet(analyse):
    code = """\
    import torch
    import torch.distributed as dist

    for step, (images, targets) in enumerate(loader):
        outputs = model(images.cuda())
        num_boxes = torch.as_tensor([float(sum(len(t) for t in targets))], device="cuda")
        dist.all_reduce(num_boxes)
        num_boxes = torch.clamp(num_boxes / dist.get_world_size(), min=1).item()
        loss = criterion(outputs, targets, num_boxes)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()
        stats = torch.stack([loss.detach(), torch.ones((), device="cuda")])
        dist.all_reduce(stats)
        ema.update_with(stats)
    """
    assert analyse(code, select=("VP601",)) == []


def test_periodic_epoch_and_eval_collectives_stay_quiet(analyse):
    code = """\
    import torch
    import torch.distributed as dist


    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        for x, y in loader:
            correct = (model(x.cuda()).argmax(-1) == y.cuda()).sum()
            dist.all_reduce(correct)
            print(f"batch accuracy {correct.item() / len(y):.3f}")


    for epoch in range(epochs):
        total = torch.zeros((), device="cuda")
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            total += loss.detach()
            if step % args.log_interval == 0:
                logged = loss.detach().clone()
                dist.all_reduce(logged)
                print(f"step {step}: {logged.item():.4f}")
        dist.all_reduce(total)
        print(f"epoch {epoch}: {total.item():.4f}")
        evaluate(model, val_loader)
    """
    assert analyse(code, select=("VP601",)) == []


def test_test_code_is_not_a_training_hot_path(analyse):
    assert analyse(PRETRAIN, name="test_pretrain.py", select=("VP601",)) == []


def test_a_function_that_reduces_several_metrics_for_its_log_is_one_finding(analyse):
    code = """\
    class Trainer:
        def compute_loss(self, model, inputs):
            outputs = model(**inputs)
            loss = outputs.loss
            loss.backward()
            self.optimizer.step()
            if self.track_entropy:
                entropy = self.accelerator.gather_for_metrics(outputs.entropy.mean()).mean().item()
                self.metrics["entropy"].append(entropy)
            tokens = self.accelerator.gather_for_metrics(inputs["attention_mask"].sum()).sum().item()
            self.metrics["tokens"].append(tokens)
            return loss

    trainer = Trainer()
    for batch in loader:
        trainer.compute_loss(model, batch)
    """
    found = analyse(code, select=("VP601",))
    assert found == [("VP601", 8, "MEDIUM")]
