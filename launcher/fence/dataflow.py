"""Forward may-analysis of pending generic-proxy shared-memory accesses.

Both front ends (PTX and TTGIR) lower a function to a control-flow graph of ``Block``s whose events are
shared-memory ``Access``es and proxy ``Fence``s. The analysis keeps, at each program point, the set of
generic accesses not yet ordered with the async proxy by a fence. It runs to a fixed point over loops and
branches (join = union): a generic access reaches an async access if it does so on *some* path.

Rules (PTX ISA 8.6 / 9.7.9.25.2; Triton's ProxyFenceInsertion):
- a generic write followed by an async read of the same bytes is a RAW hazard;
- a generic read or write followed by an async write is a WAR / WAW hazard;
- only a proxy fence clears pending accesses; barriers do not. A CTA-scope fence is enough for
  a CTA-scope async access; a cluster-scope access (multicast TMA, two-CTA MMA) needs a cluster fence;
- async -> async and async -> generic need no fence (completion carries an implicit proxy fence),
  so async accesses never become pending.
After reporting a hazard the analysis continues as if the suggested fence were there, so one missing
fence gives one report per (writer, reader) pair and no cascade.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol, Sequence, Union


class AccessKind(enum.Enum):
    GENERIC_WRITE = "generic write"
    GENERIC_READ = "generic read"
    ASYNC_READ = "async read"
    ASYNC_WRITE = "async write"

    @property
    def is_async(self) -> bool:
        return self in (AccessKind.ASYNC_READ, AccessKind.ASYNC_WRITE)


class Scope(enum.Enum):
    CTA = "cta"
    CLUSTER = "cluster"


class Overlap(enum.Enum):
    NO = 0
    UNKNOWN = 1  # the analysis cannot tell (an address or buffer it cannot resolve)
    YES = 2


class Region(Protocol):
    def overlap(self, other: "Region") -> Overlap:
        ...


@dataclass(frozen=True)
class Instruction:
    """An instruction (PTX) or operation (TTGIR) as the user sees it."""
    text: str
    line: int  # 1-based line in the analysed text
    source: str | None = None  # Python "file:line" when the IR records it


@dataclass(frozen=True, eq=False)  # identity: each access event is created once
class Access:
    kind: AccessKind
    region: Region
    instruction: Instruction
    scope: Scope = Scope.CTA  # for async accesses: the fence scope they need
    unresolved: str | None = None  # why the region is not precise, if it is not


@dataclass(frozen=True)
class Fence:
    scope: Scope
    instruction: Instruction


Event = Union[Access, Fence]


@dataclass
class Block:
    events: list[Event] = field(default_factory=list)
    successors: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Hazard:
    kind: str  # "RAW", "WAR" or "WAW"
    generic: Access
    async_access: Access
    certain: bool  # False when the overlap is only possible because something was not resolved
    cta_fence_seen: bool  # a CTA fence ordered the access but the async access needs a cluster fence


@dataclass(frozen=True)
class _Pending:
    access: Access
    cta_fenced: bool


_State = frozenset  # of _Pending


def _hazard_kind(generic: AccessKind, async_kind: AccessKind) -> str | None:
    if async_kind is AccessKind.ASYNC_READ:
        return "RAW" if generic is AccessKind.GENERIC_WRITE else None
    return "WAW" if generic is AccessKind.GENERIC_WRITE else "WAR"


def _fence(state: _State, scope: Scope) -> _State:
    if scope is Scope.CLUSTER:
        return frozenset()
    return frozenset(_Pending(p.access, True) for p in state)


def _run(state: _State, events: Sequence[Event], hazards: list[Hazard] | None) -> _State:
    """Apply a block's events. The fence a hazard calls for is applied after the whole instruction,
    so every operand of one instruction (wgmma A and B) is checked against the same state."""
    deferred: Scope | None = None
    for index, event in enumerate(events):
        if isinstance(event, Fence):
            state = _fence(state, event.scope)
        elif not event.kind.is_async:
            state = state | {_Pending(event, False)}
        elif _check(state, event, hazards):
            deferred = Scope.CLUSTER if Scope.CLUSTER in (deferred, event.scope) else Scope.CTA
        following = events[index + 1] if index + 1 < len(events) else None
        if deferred is not None and (following is None or following.instruction != event.instruction):
            state, deferred = _fence(state, deferred), None
    return state


def _check(state: _State, event: Access, hazards: list[Hazard] | None) -> bool:
    found = False
    for pending in state:
        if pending.cta_fenced and event.scope is Scope.CTA:
            continue
        kind = _hazard_kind(pending.access.kind, event.kind)
        if kind is None:
            continue
        overlap = pending.access.region.overlap(event.region)
        if overlap is Overlap.NO:
            continue
        found = True
        if hazards is not None:
            hazards.append(Hazard(kind, pending.access, event, overlap is Overlap.YES, pending.cta_fenced))
    return found


def find_hazards(blocks: Sequence[Block], entry: int = 0) -> list[Hazard]:
    """Run the may-analysis from ``blocks[entry]`` to a fixed point and return every hazard once."""
    states: dict[int, _State] = {entry: frozenset()}
    worklist = [entry]
    while worklist:
        index = worklist.pop()
        state = _run(states[index], blocks[index].events, None)
        for successor in blocks[index].successors:
            old = states.get(successor)
            new = state if old is None else old | state
            if new != old:
                states[successor] = new
                worklist.append(successor)
    hazards: list[Hazard] = []
    for index in sorted(states):
        _run(states[index], blocks[index].events, hazards)
    unique: dict[tuple, Hazard] = {}
    for hazard in hazards:
        key = (hazard.kind, hazard.generic.instruction, hazard.async_access.instruction)
        previous = unique.get(key)
        if previous is None or (hazard.certain and not previous.certain):
            unique[key] = hazard
    return list(unique.values())
