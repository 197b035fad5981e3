"""A labelled step turned into a pinned test: the call a person said the model should have made, expected there.

The test keeps the run's task (prompt, system prompt, tools, settings) and the labelled run as its pinned
run, and expects one thing: at the annotated step, the model's reply makes the correct call. It fails on
the run that was labelled, by construction, and passes on a run that gets that step right.
"""

from __future__ import annotations

from ..annotations import Annotation
from ..errors import UsageError
from ..run import Run
from .pinned import ArgMatch, CallExpect, Expectations, PinnedTest, Trajectory, check, propose


def expected_call(annotation: Annotation) -> Trajectory:
    """The annotation's correct call, expected among the calls of its step's reply."""
    if annotation.correct_call is None:
        raise UsageError(f"the annotation on {annotation.target} has no correct call to expect")
    call = annotation.correct_call
    expect = CallExpect(name=call.name, args=ArgMatch(equals=call.arguments))
    return Trajectory(mode="contains", calls=[expect], step=annotation.step)


def from_annotation(run: Run, annotation: Annotation, name: str | None = None) -> PinnedTest:
    """A pinned test from a labelled step with a correct call: the run's task, expecting that call at that step.

    A UsageError when the annotation has no correct call, or when the run already makes that call there
    (a test that the labelled run passes would guard nothing).
    """
    expect = Expectations(tool_calls=expected_call(annotation))
    if not [f for f in check(expect, run) if f.expectation.startswith("tool_calls")]:
        raise UsageError(
            f"run {run.id} already calls {annotation.correct_call.text} at step {annotation.step}: "
            "a test expecting it would pass on this run"
        )
    labels = ", ".join(annotation.all_labels) or "labelled"
    test = propose(run, name or f"{run.title or run.id} · step {annotation.step}: {labels}")
    return test.model_copy(update={"expect": expect})
