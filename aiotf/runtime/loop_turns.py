"""Turns: many short runs started together take turns with the rest of the event loop.

Why. A run whose kernels all run inline never suspends. Start 256 of them with one ``gather``
and all 256 tasks sit in the loop's ready queue, and asyncio (and uvloop) runs a whole ready
queue in one iteration of the loop: some 60 ms in which no timer fires, no socket is read and no
other task moves. The executor's own yields (every ``YIELD_INTERVAL`` of *one* run's inline
work) never come for runs of 250 µs each.

How. The steps a thread's loop starts in one iteration form a *turn*. The turn's first step
begins it and schedules ``_end_turn`` with ``call_soon``, which runs in the loop's next
iteration. A step that would start after the turn has lasted ``TURN_SECONDS`` waits instead, in
a FIFO line, for a later turn. ``_end_turn`` lets go as many waiters as the ending turn started
per ``TURN_SECONDS`` (at least one); they start in the iteration after it, the first of them
beginning the next turn. So a crowd of steps holds the loop for about ``TURN_SECONDS`` at a
time, with timers, I/O and other tasks served in between, and a lone run (the common case)
pays a clock read and, once per turn, one ``call_soon``. ``Session.run`` takes its turn before
anything else (so a waiting run has not planned its fetches or converted its feeds: 233 runs
doing that before waiting held the loop 3 ms more), and tells the runtime it has; any other
step (a callable's) takes it in ``DirectSession``.

Lockstep. A crowd of steps of one program is faster run kernel by kernel than step by step:
each kernel's code, and its weights, are still in cache for the next step (256 runs of mlp_b1
in numpy, one after another 33-39 ms, layer by layer in groups of 8 17-19 ms, the same bits).
So a step that starts its compiled program while steps wait for a later turn, or that started
in a turn whose woken waiters start together, runs in lockstep (:func:`lockstep`): its program
is told to pause after each costly pool kernel (a product, a convolution: not after a small
elementwise one, ``flat_compiler``; ``executor._program_deadline``), and the loop resumes the
turn's steps in the order they paused, one round of kernels an iteration. The turn holds, its
waiters waiting, until a round in which no step of it paused (``held``), or HOLD_SECONDS: its
steps finish before new ones start, and its length, over all its rounds, sizes the next one as
before. A lone run, and runs one after another in a task, never pause so. Steps of a program
that can run stacked go further (``runtime/crowd.py``): the steps of a turn run it once for them
all, their feeds stacked, and pause only for that; not only in lockstep, but also in a turn where
steps of several tasks started (:func:`crowded`: a gather's first turn), never for the steps
one task awaits one after another.

State (one ``_LoopTurns`` per event loop; a loop is only ever used from its own thread):

- ``active``: a turn began in this iteration of the loop, or its steps are still in lockstep
  (its last ``_end_turn`` has not run yet).
- ``start``, ``deadline``: when the current turn began, and ``TURN_SECONDS`` later.
- ``started``: steps started in the current turn, woken waiters included.
- ``in_step``: the current turn's steps run in lockstep; ``held``: how many times they paused
  since the last ``_end_turn``.
- ``first_task``, ``many_tasks``: the task of the first step admitted in the current turn
  (None in a turn of one woken step, until its next), and whether a step of another task was
  admitted in it, or it was let go with others.
- ``waiters``: futures of steps waiting for a turn, oldest first; a cancelled one (its run was
  cancelled or its session closed) is skipped.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque

TURN_SECONDS = 0.002  # the longest a turn starts new steps, as the executor's YIELD_INTERVAL
# The longest a turn holds its waiters while its steps pause in lockstep: a step with much more
# to do than the others (a big batch among small requests) does not keep new steps out until it
# is done, but from then on shares each turn with them.
HOLD_SECONDS = 0.01


class _LoopTurns:
    __slots__ = (
        "__weakref__", "active", "deadline", "first_task", "held", "in_step", "many_tasks",
        "start", "started", "waiters",
    )  # fmt: skip

    def __init__(self) -> None:
        self.active = False
        self.start = 0.0
        self.deadline = 0.0
        self.started = 0
        self.in_step = False
        self.held = 0
        self.first_task: object = None  # the task of the turn's first step admitted here
        self.many_tasks = False  # steps of more than one task started in the turn
        self.waiters: deque[asyncio.Future[None]] = deque()


class _Current(threading.local):
    """This thread's running loop and its turns, as last seen (saves the weak-dict lookup)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.turns = _LoopTurns()


_current = _Current()
_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopTurns]
_by_loop = weakref.WeakKeyDictionary()
_by_loop_lock = threading.Lock()


def admit() -> asyncio.Future[None] | None:
    """Let a step start now (None), or the future to await before it may start.

    Call it on the loop that runs the step; if the wait is cancelled, so is the step.
    """
    loop = asyncio.get_running_loop()
    current = _current
    if current.loop is loop:
        turns = current.turns
    else:
        turns = _switch(current, loop)
    now = time.perf_counter()
    if not turns.active:
        _begin(turns, loop, now)
        turns.first_task = asyncio.current_task(loop)
    elif now >= turns.deadline:
        waiter = loop.create_future()
        turns.waiters.append(waiter)
        return waiter
    elif not turns.many_tasks:
        task = asyncio.current_task(loop)
        if turns.first_task is None:  # a turn of one woken step: this may be its task's next
            turns.first_task = task
        elif task is not turns.first_task:
            turns.many_tasks = True
    turns.started += 1
    return None


def lockstep() -> bool:
    """Whether a step about to run (or resume) its compiled program takes this loop's turn in
    lockstep with others: when steps wait for a later turn, or others of this turn do. Then
    it pauses after each costly pool kernel, telling :func:`hold` (see *Lockstep*). Call it
    on the loop's thread, for a step that took its turn there."""
    turns = _current.turns
    if turns.active and (turns.in_step or turns.waiters):
        turns.in_step = True
        return True
    return False


def crowded() -> bool:
    """Whether a step about to run its compiled program shares this loop's turn with steps of
    other tasks (started in it, let go with it, or waiting for a later turn): then a crowd may
    run the program once for them, stacked (``runtime/crowd.py``). Steps one task awaits one
    after another never share so. Call it as :func:`lockstep`."""
    turns = _current.turns
    return turns.active and (turns.many_tasks or turns.in_step or bool(turns.waiters))


def spend(seconds: float) -> None:
    """Work a step of this turn leaves for later in the turn (its share of a crowd's stacked
    run, ``runtime/crowd.py``) counts against the turn's time now: fewer steps start in it."""
    _current.turns.deadline -= seconds


def hold() -> None:
    """A step in lockstep pauses: its turn goes on into the loop's next iteration."""
    _current.turns.held += 1


def _switch(current: _Current, loop: asyncio.AbstractEventLoop) -> _LoopTurns:
    with _by_loop_lock:
        turns = _by_loop.get(loop)
        if turns is None:
            turns = _by_loop[loop] = _LoopTurns()
    current.loop = loop
    current.turns = turns
    return turns


def _begin(turns: _LoopTurns, loop: asyncio.AbstractEventLoop, now: float) -> None:
    turns.active = True
    turns.start = now
    turns.deadline = now + TURN_SECONDS
    turns.started = 0
    turns.first_task = None
    turns.many_tasks = False
    loop.call_soon(_end_turn, turns, loop)


def _end_turn(turns: _LoopTurns, loop: asyncio.AbstractEventLoop) -> None:
    """Runs in the iteration after a turn began: end it and let the next waiters go; or, while
    steps of the turn pause in lockstep, in the iteration after that, and so on."""
    held, turns.held = turns.held, 0
    elapsed = time.perf_counter() - turns.start
    if held and elapsed < HOLD_SECONDS:
        loop.call_soon(_end_turn, turns, loop)
        return
    turns.active = turns.in_step = False
    turns.first_task = None  # a finished task (and its result) is not kept till the next turn
    waiters = turns.waiters
    if not waiters:
        return
    per_step = elapsed / max(turns.started, 1)
    release = max(1, int(TURN_SECONDS / per_step)) if per_step > 0 else len(waiters)
    woken = 0
    while waiters and woken < release:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)
            woken += 1
    if woken:
        # The woken steps start in the next iteration, as one turn; begun here so that a step
        # started beside them there joins it rather than beginning its own.
        _begin(turns, loop, time.perf_counter())
        turns.started = woken
        turns.in_step = turns.many_tasks = woken > 1  # a crowd: in lockstep
