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
  so async accesses never become pending;
- a non-bulk ``cp.async`` write (generic proxy) is made when the copy completes, not when it is issued: a
  fence orders only what its thread has performed, so a copy still in flight at the fence needs another
  fence after it completes. Copies complete at ``cp.async.wait_group N`` (every committed group but the N
  most recent; ``wait_all`` is a commit and ``wait_group 0``) or, once ``cp.async.mbarrier.arrive`` made an
  mbarrier track them, at a wait on that mbarrier (on one whose address may be the same, where the
  addresses are not known). The front ends give only the completions that surely happen: a predicated
  commit, wait or arrive is taken not to run, and only a ``try_wait`` (which Triton retries until it
  succeeds) completes, not a ``test_wait`` whose answer may be no. A copy in flight that no fence has
  followed yet is checked as the write it will be (no fence at all between a copy and its reader is a
  hazard, whatever the waits); one that a fence followed is not checked until it completes: reading or
  overwriting bytes still being copied is a race that no fence repairs, and in a ring of stages the
  copies in flight are the other stages'.
After reporting a hazard the analysis continues as if the suggested fence were there, so one missing
fence gives one report per (writer, reader) pair and no cascade.
"""
from __future__ import annotations

import enum
import heapq
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
    in_flight: bool = False  # a cp.async write: made when the copy completes (see the module's rules)


@dataclass(frozen=True)
class Fence:
    scope: Scope
    instruction: Instruction


@dataclass(frozen=True)
class CopyCommit:
    """``cp.async.commit_group``: the copies not yet in a group become the newest group."""
    instruction: Instruction


@dataclass(frozen=True)
class CopyWait:
    """``cp.async.wait_group N``: every group but the ``pending`` most recent is complete."""
    pending: int
    instruction: Instruction


@dataclass(frozen=True)
class CopyArrive:
    """``cp.async.mbarrier.arrive``: the mbarrier at ``barrier`` tracks every copy the thread issued before it."""
    barrier: Region
    instruction: Instruction


@dataclass(frozen=True)
class BarrierWait:
    """A wait on the mbarrier at ``barrier`` that surely completes: the copies it tracks are complete."""
    barrier: Region
    instruction: Instruction


Copy = Union[CopyCommit, CopyWait, CopyArrive, BarrierWait]
Event = Union[Access, Fence, Copy]


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


_OPEN = -1  # a copy in flight and in no group yet
_MAX_AGE = 16  # ages are counted exactly up to here (see _copy)


@dataclass(frozen=True)
class _Pending:
    """A generic access not yet ordered with the async proxy. Pending accesses of the same kind to the same
    region are one entry (the first one on the path is shown).

    A copy in flight (see the module's rules) has an ``age``: ``_OPEN`` until a commit puts it in a group,
    then the number of groups committed after its own, up to ``_copy``'s cap; ``tracked``: the mbarriers
    whose waits complete it; ``followed``: a fence has followed it (it is checked again once it is made).
    An access that is made has age None."""
    kind: AccessKind
    region: Region
    cta_fenced: bool
    access: Access = field(compare=False)
    age: int | None = None
    tracked: int = 0  # a bit per tracking mbarrier (see _barrier_bits)
    followed: bool = False

    def made(self) -> "_Pending":
        return _Pending(self.kind, self.region, False, self.access)

    def moved(self, age: int | None, tracked: int, followed: bool, cta_fenced: bool) -> "_Pending":
        return _Pending(self.kind, self.region, cta_fenced, self.access, age, tracked, followed)


_State = frozenset  # of _Pending


def _hazard_kind(generic: AccessKind, async_kind: AccessKind) -> str | None:
    if async_kind is AccessKind.ASYNC_READ:
        return "RAW" if generic is AccessKind.GENERIC_WRITE else None
    return "WAW" if generic is AccessKind.GENERIC_WRITE else "WAR"


def _fence(state: _State, scope: Scope, cluster_async: bool) -> _State:
    """A fence orders the accesses that are made; a copy in flight is marked as followed by it (or by a
    CTA fence where the kernel has cluster-scope async accesses), to be ordered again once it is made."""
    whole = scope is Scope.CLUSTER or not cluster_async  # no cluster-scope async access: a CTA fence is enough
    if whole and all(p.age is None for p in state):
        return frozenset()
    result = set()
    for p in state:
        if p.age is None:
            if not whole:
                result.add(p.moved(None, (), False, True))
        elif whole:
            result.add(p if p.followed else p.moved(p.age, p.tracked, True, p.cta_fenced))
        else:
            result.add(p if p.cta_fenced else p.moved(p.age, p.tracked, p.followed, True))
    return frozenset(result)


def _copy(state: _State, event: Copy, cap: int) -> _State:
    """The copies in flight after a commit, a wait or an arrive. Ages stop at ``cap`` (one more than the
    largest ``N`` of the function's waits, at most ``_MAX_AGE + 1``), so the states stay few over loops;
    below the cap an age is exact, at the cap it says "at least": a wait of an ``N`` at the cap or above
    completes nothing it cannot be sure of (such copies complete at a later, smaller wait)."""
    changed = {}  # only the entries an event changes are rebuilt (and hashed again)
    for p in state:
        if p.age is None:
            continue
        if isinstance(event, CopyCommit):
            age = min(p.age + 1, cap)
            if age != p.age:
                changed[p] = p.moved(age, p.tracked, p.followed, p.cta_fenced)
        elif isinstance(event, CopyWait):
            if event.pending < cap and p.age >= event.pending:
                changed[p] = p.made()
        elif isinstance(event, _Arrive):
            if not p.tracked & event.bit:
                changed[p] = p.moved(p.age, p.tracked | event.bit, p.followed, p.cta_fenced)
        elif p.tracked & event.mask:  # _Wait: a wait on a barrier that may be one tracking the copy completes it
            changed[p] = p.made()
    if not changed:
        return state
    return (state - frozenset(changed)) | frozenset(changed.values())


@dataclass(frozen=True)
class _Arrive:
    """A ``CopyArrive`` with its barrier as a bit (``_barrier_bits``)."""
    bit: int
    instruction: Instruction


@dataclass(frozen=True)
class _Wait:
    """A ``BarrierWait`` with the bits of every arrive barrier it may be (``_barrier_bits``)."""
    mask: int
    instruction: Instruction


def _barrier_bits(events: list[list[Event]]) -> list[list[Event]]:
    """Arrives and waits with their barriers as bit masks: one bit per distinct arrive barrier, and a wait's mask
    has the bit of every arrive barrier that may be its own, so completing a copy is one ``&``, not a scan of
    its barriers (many mbarriers made that cubic)."""
    bits: dict = {}
    for block_events in events:
        for event in block_events:
            if isinstance(event, CopyArrive) and event.barrier not in bits:
                bits[event.barrier] = 1 << len(bits)
    masks: dict = {}

    def mask(barrier) -> int:
        if barrier not in masks:
            masks[barrier] = sum(bit for region, bit in bits.items() if region.overlap(barrier) is not Overlap.NO)
        return masks[barrier]

    return [[_Arrive(bits[e.barrier], e.instruction) if isinstance(e, CopyArrive) else
             _Wait(mask(e.barrier), e.instruction) if isinstance(e, BarrierWait) else e for e in block_events]
            for block_events in events]


def _run(state: _State, events: Sequence[Event], hazards: list[Hazard] | None, cluster_async: bool,
         cap: int) -> _State:
    """Apply a block's events. The fence a hazard calls for is applied after the whole instruction,
    so every operand of one instruction (wgmma A and B) is checked against the same state."""
    deferred: Scope | None = None
    for index, event in enumerate(events):
        if isinstance(event, Fence):
            state = _fence(state, event.scope, cluster_async)
        elif not isinstance(event, Access):
            state = _copy(state, event, cap)
        elif not event.kind.is_async:
            age = _OPEN if event.in_flight else None
            state = state | {_Pending(event.kind, event.region, False, event, age)}
        elif _check(state, event, hazards):
            deferred = Scope.CLUSTER if Scope.CLUSTER in (deferred, event.scope) else Scope.CTA
        following = events[index + 1] if index + 1 < len(events) else None
        if deferred is not None and (following is None or following.instruction != event.instruction):
            state, deferred = _fence(state, deferred, cluster_async), None
    return state


def _check(state: _State, event: Access, hazards: list[Hazard] | None) -> bool:
    found = False
    for pending in state:
        if pending.followed or pending.cta_fenced and event.scope is Scope.CTA:
            continue
        kind = _hazard_kind(pending.kind, event.kind)
        if kind is None:
            continue
        overlap = pending.region.overlap(event.region)
        if overlap is Overlap.NO:
            continue
        found = True
        if hazards is not None:
            hazards.append(Hazard(kind, pending.access, event, overlap is Overlap.YES, pending.cta_fenced))
    return found


def _relevant(blocks: Sequence[Block]) -> tuple[list[list[Event]], bool]:
    """The events that can take part in a hazard, per block, and whether any async access has cluster scope.

    A generic write is kept only if its region may overlap some async access, a generic read only if it may
    overlap some async write: the others can never be reported, so the analysis need not carry them.
    """
    asyncs = [e for b in blocks for e in b.events if isinstance(e, Access) and e.kind.is_async]
    if not asyncs:
        return [[] for _ in blocks], False
    writes = [e.region for e in asyncs if e.kind is AccessKind.ASYNC_WRITE]
    every = [e.region for e in asyncs]
    seen: dict = {}

    def keep(event: Event) -> bool:
        if not isinstance(event, Access) or event.kind.is_async:
            return True
        key = (event.kind, event.region)
        if key not in seen:
            targets = every if event.kind is AccessKind.GENERIC_WRITE else writes
            seen[key] = any(event.region.overlap(r) is not Overlap.NO for r in targets)
        return seen[key]

    cluster_async = any(e.scope is Scope.CLUSTER for e in asyncs)
    return [[e for e in b.events if keep(e)] for b in blocks], cluster_async


STATS = {"block_runs": 0}  # blocks run by find_hazards' fixed point, summed over calls (tests bound the work)


def _reverse_post_order(blocks: Sequence[Block], entry: int) -> dict[int, int]:
    """Block -> its position in a reverse post-order of the blocks reachable from ``entry`` (iterative DFS)."""
    post: list[int] = []
    visited = {entry}
    stack = [(entry, iter(blocks[entry].successors))]
    while stack:
        node, successors = stack[-1]
        for successor in successors:
            if successor not in visited:
                visited.add(successor)
                stack.append((successor, iter(blocks[successor].successors)))
                break
        else:
            stack.pop()
            post.append(node)
    return {index: position for position, index in enumerate(reversed(post))}


def find_hazards(blocks: Sequence[Block], entry: int = 0) -> list[Hazard]:
    """Run the may-analysis from ``blocks[entry]`` to a fixed point and return every hazard once."""
    events, cluster_async = _relevant(blocks)
    if not any(isinstance(e, Access) for block_events in events for e in block_events):
        return []
    events = _barrier_bits(events)
    cap = 1 + min(_MAX_AGE, max((e.pending for block_events in events for e in block_events
                                 if isinstance(e, CopyWait)), default=0))
    order = _reverse_post_order(blocks, entry)
    states: dict[int, _State] = {entry: frozenset()}
    # blocks in reverse post-order (a heap of RPO positions): every block runs after the blocks before it on
    # forward paths, so a chain or a tree of forward branches settles in one pass, and a loop is iterated as
    # a whole before what follows it (a LIFO worklist ran a chain of N predicated branches O(N^2) times)
    queue, queued = [order[entry]], {entry}
    position_of = {position: index for index, position in order.items()}
    while queue:
        index = position_of[heapq.heappop(queue)]
        queued.discard(index)
        STATS["block_runs"] += 1
        state = _run(states[index], events[index], None, cluster_async, cap)
        for successor in blocks[index].successors:
            old = states.get(successor)
            new = state if old is None else old | state
            if new != old:
                states[successor] = new
                if successor not in queued:
                    queued.add(successor)
                    heapq.heappush(queue, order[successor])
    hazards: list[Hazard] = []
    for index in sorted(states):
        _run(states[index], events[index], hazards, cluster_async, cap)
    unique: dict[tuple, Hazard] = {}
    for hazard in hazards:
        key = (hazard.kind, hazard.generic.instruction, hazard.async_access.instruction)
        previous = unique.get(key)
        if previous is None or (hazard.certain and not previous.certain):
            unique[key] = hazard
    return list(unique.values())
