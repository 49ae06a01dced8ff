"""Checkpoints of a block's fits (inference/execution/checkpoints.py): a block cut off and run
again resumes from its saved state and ends with exactly the results of a block never cut off;
a changed program, setting or data set never resumes another's state."""

from dataclasses import replace

import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt.inference.execution import bulk, bulk_group, checkpoints
from tests.unit.test_bulk import SETTINGS, regression_problem


class Cut(Exception):
    """The job killed right after a checkpoint was written."""


@pytest.fixture
def deterministic_narrowing(monkeypatch):
    # the driver narrows a program once the seconds spent on stopped fits reach its compile
    # time: a rule of wall time, which two runs need not meet at the same step; here a rule of
    # steps, so that the run never cut off and the resumed one narrow alike
    monkeypatch.setattr(bulk_group, "narrows", lambda width, running, spent, compile_seconds: running <= width // 2)


def block(settings=None):
    settings = settings or replace(SETTINGS, progress_every=0)
    return [regression_problem(s, noise, settings, f"rep{s}") for s, noise in enumerate([0.1, 1.0, 3.0, 0.5, 2.0])]


@pytest.mark.parametrize("width, cut_after", [(None, 10), (2, 30)])
def test_a_block_cut_off_resumes_to_the_results_of_a_block_never_cut_off(
    width, cut_after, deterministic_narrowing, monkeypatch, tmp_path, caplog
):
    whole = bulk.train_block(block(), width=width)  # no checkpoint folder: nothing saved

    monkeypatch.setenv(checkpoints.ENV, str(tmp_path))
    monkeypatch.setattr(checkpoints, "SAVE_EVERY_SECONDS", 0.0)  # a checkpoint after every chunk
    save, calls = checkpoints.Checkpoint.save, []

    def save_then_cut(self, state):
        save(self, state)
        calls.append(state["steps"])
        if len(calls) == cut_after:
            raise Cut

    monkeypatch.setattr(checkpoints.Checkpoint, "save", save_then_cut)
    with pytest.raises(Cut):
        bulk.train_block(block(), width=width)
    assert list(tmp_path.glob("*.pkl")), "the cut-off block left no checkpoint"

    monkeypatch.setattr(checkpoints.Checkpoint, "save", save)
    with caplog.at_level("INFO", logger="bayesirt"):
        resumed = bulk.train_block(block(), width=width)
    assert "resumed at step" in caplog.text
    assert any(r.extra["block"]["resumed_at_step"] > 0 for r in resumed)
    assert all(r.extra["block"]["resumed_at_step"] == 0 for r in whole)
    for a, b in zip(resumed, whole, strict=True):
        assert (a.steps, a.converged, a.reason) == (b.steps, b.converged, b.reason)
        assert np.array_equal(a.losses, b.losses)
        assert np.array_equal(np.asarray(a.params["m"]), np.asarray(b.params["m"]))
        assert a.extra["block"]["left_at_step"] == b.extra["block"]["left_at_step"]
    assert len({r.steps for r in whole}) > 1  # fits stop apart, so a cut may fall after narrowing
    assert not list(tmp_path.iterdir()), "a finished block removes its checkpoints"


def test_no_other_program_settings_or_data_resume_a_state_but_another_step_cap_does(monkeypatch, tmp_path):
    monkeypatch.setenv(checkpoints.ENV, str(tmp_path))
    problems = block()
    inputs = (problems[0].params, problems[0].key, problems[0].data)
    path = checkpoints.Checkpoint.for_group("program", SETTINGS, 5, inputs).path
    assert checkpoints.Checkpoint.for_group("program", SETTINGS, 5, inputs).path == path
    # the step cap alone does not tell states apart (a larger cap continues a saved state)
    assert checkpoints.Checkpoint.for_group("program", replace(SETTINGS, max_steps=10), 5, inputs).path == path
    other_data = (problems[0].params, problems[0].key, {"x": problems[0].data["x"] + 1})
    other_key = (problems[0].params, problems[1].key, problems[0].data)
    for other in (
        checkpoints.Checkpoint.for_group("another program", SETTINGS, 5, inputs),
        checkpoints.Checkpoint.for_group("program", replace(SETTINGS, learning_rate=0.01), 5, inputs),
        checkpoints.Checkpoint.for_group("program", SETTINGS, 4, inputs),
        checkpoints.Checkpoint.for_group("program", SETTINGS, 5, other_data),
        checkpoints.Checkpoint.for_group("program", SETTINGS, 5, other_key),
    ):
        assert other.path != path


def test_the_program_digest_tells_two_losses_apart():
    import jax

    x = jnp.ones(3)
    one = checkpoints.program_digest(jax.jit(lambda v: (v**2).sum()).lower(x))
    assert one == checkpoints.program_digest(jax.jit(lambda v: (v**2).sum()).lower(x))
    assert one != checkpoints.program_digest(jax.jit(lambda v: (v**3).sum()).lower(x))


def test_without_the_folder_nothing_is_written(monkeypatch):
    monkeypatch.delenv(checkpoints.ENV, raising=False)
    assert checkpoints.folder() is None
    assert checkpoints.Checkpoint.for_group("program", SETTINGS, 5, ()) is None


def test_an_unreadable_checkpoint_starts_from_step_0(tmp_path):
    (tmp_path / "c.pkl").write_bytes(b"cut off while written")
    assert checkpoints.Checkpoint(tmp_path / "c.pkl").load() is None


def test_a_block_kept_whole_is_not_fitted_again(monkeypatch, tmp_path, caplog):
    # a study's diagnostics keep their finished blocks' checkpoints until all are done
    monkeypatch.setenv(checkpoints.ENV, str(tmp_path))
    monkeypatch.setenv(checkpoints.KEEP_ENV, "1")
    monkeypatch.setattr(checkpoints, "SAVE_EVERY_SECONDS", 0.0)
    talkative = replace(SETTINGS, progress_every=1)  # a progress line after every chunk
    first = bulk.train_block(block(talkative))
    assert len(list(tmp_path.glob("*.pkl"))) == 1
    with caplog.at_level("INFO", logger="bayesirt"):
        again = bulk.train_block(block(talkative))
    assert f"resumed at step {max(r.steps for r in first)}" in caplog.text
    assert ": step " not in caplog.text  # no chunk was stepped again
    for a, b in zip(again, first, strict=True):
        assert a.steps == b.steps and np.array_equal(a.losses, b.losses)
        assert np.array_equal(np.asarray(a.params["m"]), np.asarray(b.params["m"]))


def test_a_larger_step_cap_continues_a_kept_final_state(deterministic_narrowing, monkeypatch, tmp_path, caplog):
    # a doubling check refits a block with twice the cap: from the run's last step, not step 0
    capped, twice = (replace(SETTINGS, progress_every=0, max_steps=m) for m in (100, 200))
    fresh = {m: bulk.train_block(block(s)) for m, s in ((100, capped), (200, twice))}
    assert all(not r.converged for r in fresh[100]) and any(r.converged for r in fresh[200])
    monkeypatch.setenv(checkpoints.ENV, str(tmp_path))
    monkeypatch.setenv(checkpoints.KEEP_ENV, "1")
    monkeypatch.setattr(checkpoints, "SAVE_EVERY_SECONDS", 0.0)
    bulk.train_block(block(capped))
    with caplog.at_level("INFO", logger="bayesirt"):
        continued = bulk.train_block(block(twice))
        assert "resumed at step 100" in caplog.text
        again = bulk.train_block(block(capped))  # the kept state is now past this cap: fitted afresh
        assert "past max_steps; starting afresh" in caplog.text
    for results, expected in ((continued, fresh[200]), (again, fresh[100])):
        for a, b in zip(results, expected, strict=True):
            assert (a.steps, a.converged, a.reason) == (b.steps, b.converged, b.reason)
            assert np.array_equal(a.losses, b.losses)
            assert np.array_equal(np.asarray(a.params["m"]), np.asarray(b.params["m"]))
