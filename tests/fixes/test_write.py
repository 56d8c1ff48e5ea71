"""A fixed file replaces the original whole or not at all, keeps its permissions and links, and
is never written over a change made since it was read."""

from __future__ import annotations

import os
import stat

import pytest

from verifier.fixes.write import NotWritten, rewrite_source

BEFORE = b"optimizer.zero_grad(set_to_none=False)\n"
AFTER = b"optimizer.zero_grad()\n"


def test_the_file_is_replaced_with_its_permissions_and_no_temporary_file_is_left(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(BEFORE)
    os.chmod(path, 0o751)
    rewrite_source(str(path), BEFORE, AFTER)
    assert path.read_bytes() == AFTER
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert os.listdir(tmp_path) == ["train.py"]


def test_a_link_stays_a_link_to_the_file_that_was_fixed(tmp_path):
    (tmp_path / "real.py").write_bytes(BEFORE)
    (tmp_path / "train.py").symlink_to("real.py")
    rewrite_source(str(tmp_path / "train.py"), BEFORE, AFTER)
    assert os.readlink(tmp_path / "train.py") == "real.py"
    assert (tmp_path / "real.py").read_bytes() == AFTER


def test_a_file_changed_since_it_was_read_is_left_as_it_is(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(b"# edited in the editor meanwhile\n" + BEFORE)
    with pytest.raises(NotWritten) as refused:
        rewrite_source(str(path), BEFORE, AFTER)
    assert str(refused.value) == "it changed while verify-perf was fixing it"
    assert path.read_bytes() == b"# edited in the editor meanwhile\n" + BEFORE


def test_a_file_in_a_folder_that_cannot_take_the_temporary_file_is_left_as_it_is(tmp_path, monkeypatch):
    path = tmp_path / "train.py"
    path.write_bytes(BEFORE)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "open", full)
    with pytest.raises(NotWritten) as refused:
        rewrite_source(str(path), BEFORE, AFTER)
    assert str(refused.value) == "No space left on device"
    monkeypatch.undo()
    assert path.read_bytes() == BEFORE
    assert os.listdir(tmp_path) == ["train.py"]
