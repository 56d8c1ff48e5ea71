"""VP402: how long a history list lives decides whether, and how severely, it is reported."""

from __future__ import annotations

SELECT = ("VP402",)


def test_severity_follows_the_value_kind_for_a_run_long_list(analyse):
    code = """\
    import torch
    graph_list = []
    tensor_list = []
    float_list = []
    for epoch in range(epochs):
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            graph_list.append(loss)
            tensor_list.append(loss.detach())
            float_list.append(loss.item())
    """
    assert analyse(code, select=SELECT) == [("VP402", 10, "HIGH"), ("VP402", 11, "HIGH"), ("VP402", 12, "LOW")]


def test_a_list_reset_per_epoch_only_matters_for_graphs(analyse):
    code = """\
    import torch
    model.train()
    for epoch in range(epochs):
        outputs = []
        losses = []
        features = []
        for x, y in loader:
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            optimizer.step()
            outputs.append(out)
            losses.append(loss.detach())
            features.append(model.encoder(x))
    """
    # `out`'s graph is freed by the backward: a per-epoch list of outputs is bounded by the data.
    # The encoder's second forward is never backwarded: its activations stay alive all epoch.
    assert analyse(code, select=SELECT) == [("VP402", 14, "HIGH")]


def test_lists_trimmed_within_the_step_loop_or_cleared_by_a_hook_are_bounded(analyse):
    code = """\
    import torch

    class Trainer:
        def __init__(self):
            self.losses = []

        def on_epoch_end(self):
            self.losses.clear()

        def fit(self, loader):
            recent = []
            for step, (x, y) in enumerate(loader):
                loss = self.model(x).sum()
                loss.backward()
                self.losses.append(loss.item())
                recent.append(loss.item())
                if len(recent) > 100:
                    recent = recent[-100:]
    """
    assert analyse(code, select=SELECT) == []


def test_attribute_history_never_cleared_grows_for_the_run(analyse):
    code = """\
    import torch

    class Trainer:
        def __init__(self):
            self.history = []

        def fit(self, loader):
            for x, y in loader:
                loss = self.model(x).sum()
                loss.backward()
                self.history.append(loss.item())
    """
    assert analyse(code, select=SELECT) == [("VP402", 11, "LOW")]


def test_rows_of_a_profiling_sweep_are_no_step_history(analyse):
    # `profile_model(m)` profiles a model (an action on one, named by its verb), it is no forward:
    # the loop over model names is a sweep, and its rows are Python values.
    code = """\
    import torch

    def profile_model(name):
        model = build(name).cuda()
        return {"name": name, "gflops": count(model)}

    def main():
        results = []
        for m in names:
            row = profile_model(m)
            results.append(row)
    """
    assert analyse(code, name="profiler.py", select=("VP402",)) == []


def test_a_helper_the_step_loop_calls_grows_a_module_level_history(tmp_path):
    # The list lives at module level of another file, the append sits in a helper with no loop of
    # its own; the step loop hands it the device loss every step.
    import textwrap

    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    (tmp_path / "history.py").write_text(textwrap.dedent("""\
        _losses = []

        def remember(loss):
            _losses.append(loss)
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch
        import torch.nn.functional as F
        from history import remember

        model.cuda()
        for x, y in loader:
            loss = F.cross_entropy(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            remember(loss)
    """))
    result = analyze_paths([str(tmp_path)], Settings(select=("VP402",)))
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name, f.heat.label) for f in result.findings] == [
        ("history.py", 4, "HIGH", "step"),
    ]


def test_a_local_of_a_function_called_once_lives_for_the_run(analyse):
    code = """\
    import torch

    def main():
        history = []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            history.append(loss.detach())

    def train_one_epoch(model, loader):
        losses = []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
        return losses

    def per_round():
        rounds = []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            rounds.append(loss.detach())

    if __name__ == "__main__":
        main()
        for r in range(5):
            per_round()
    """
    # `main()` runs once: its list lives for the run. `train_one_epoch` is called by nobody seen
    # here (maybe per epoch elsewhere), `per_round` five times: their lists live for one call.
    assert analyse(code, select=SELECT) == [("VP402", 9, "HIGH")]


def test_repeats_around_the_minibatches_of_one_update_are_not_the_run(analyse):
    # An RL learner's update: `repeat` passes over the minibatches of the data handed to this
    # call, the list summarised at its end. Only the loop over epochs makes a list live for the run.
    code = """\
    class Learner:
        def learn(self, batch, repeat):
            actor_losses = []
            for _ in range(repeat):
                for part in batch.split(64):
                    loss = self.loss_of(part)
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                    actor_losses.append(loss.item())
            return sum(actor_losses) / len(actor_losses)

    def fit(model, loader, num_epochs):
        history = []
        for _ in range(num_epochs):
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                history.append(loss.item())
        return history

    def fit_steps(model, loader, max_steps):
        seen = []
        step = 0
        while step < max_steps:
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                seen.append(loss.item())
                step += 1
        return seen
    """
    assert analyse(code, select=SELECT) == [("VP402", 20, "LOW"), ("VP402", 31, "LOW")]


def test_a_list_the_function_returns_is_its_result_not_a_history(analyse):
    # airbench's proxy run: a function called once collects one mask per step and returns the
    # list for the caller's next run. What it collects is its product; graphs in it still count.
    code = """\
    import torch

    def collect_masks(model, loader, optimizer):
        masks = []
        grads = []
        for x, y in loader:
            loss = criterion(model(x), y)
            mask = torch.zeros(len(x), device="cuda").bool()
            masks.append(mask)
            grads.append(model.encoder(x))
            loss.backward()
            optimizer.step()
        return masks, grads

    def main():
        history = []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            history.append(loss.detach())
        return len(history)

    if __name__ == "__main__":
        masks, grads = collect_masks(model, loader, optimizer)
        main()
    """
    # The returned masks are its result; the returned outputs keep their graphs (assumed: MEDIUM);
    # main's history is not returned (only its length is).
    assert analyse(code, select=SELECT) == [("VP402", 10, "MEDIUM"), ("VP402", 21, "HIGH")]
    assert analyse(code.replace("return masks, grads", "return None"), select=SELECT) == [
        ("VP402", 9, "HIGH"), ("VP402", 10, "MEDIUM"), ("VP402", 21, "HIGH")
    ]


def test_a_returned_loss_history_is_still_a_history(analyse):
    # Detached, or freed by its backward, a loss appended every step and returned for plotting
    # grows the list as any history does; only data never part of a graph is a result.
    code = """\
    import torch

    def fit(model, loader, optimizer):
        losses, detached = [], []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss)
            detached.append(loss.detach())
        return losses, detached

    if __name__ == "__main__":
        fit(model, loader, optimizer)
    """
    assert analyse(code, select=SELECT) == [("VP402", 9, "HIGH"), ("VP402", 10, "HIGH")]
